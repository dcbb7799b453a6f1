"""The coding agent's own system prompt, kept as data: the non-message part a replay counts.

Why: every threshold, frame cap and projection of the agent's maintenance adds the request's
non-message tokens (``computeNonMessageTokens``: the system prompt and tool definitions). A
stand-in of the same length is not the same count: 7,273 characters of ``"s"`` are 3,637
claude-v3 tokens, the agent's real 7,273-character prompt 1,991, and that 1,646-token excess
alone turned five of thirteen real-session step cases away from the agent's decisions (wrong
method, a frame cap of 1 instead of 2, an extra compaction; issue 45 item 3). So a replay counts
the agent's own text, or a file the user names.

Source: ``agent_system_prompt.txt`` beside this module is the ``system`` field of the Anthropic
request that ``omp`` (npm ``@oh-my-pi/pi-coding-agent`` 18.3.4, MIT License, copyright Mario
Zechner, Can Bölük and Stencil Labs, Inc.) sent for a resumed session in the configuration the
step replay mirrors (``--no-tools --no-extensions --no-skills --no-rules --no-lsp``), captured
by ``../shared/tools/upstream-agent run`` (the first prompt request of
``scripts/make_parity_family.py``'s case ``piv1a-200k``, Linux x64). It is production's text,
not this project's prose. The one line that varies with the configuration, ``- Model:
<provider>/<model>`` (the agent's ``prompts/system/project-prompt.md``), is the placeholder
``@@MODEL@@``; the workstation lines (OS and kernel release, architecture) are the capture
machine's.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

from snapcompact.compaction import ModelInfo

__all__ = ["AGENT_PROMPT", "AGENT_PROMPT_VERSION", "AgentPrompt", "agent_system_prompt",
           "read_system_prompt", "system_prompt_for"]

#: The coding agent release the prompt was captured from.
AGENT_PROMPT_VERSION = "18.3.4"
_MODEL_SLOT = "@@MODEL@@"


@dataclass(frozen=True)
class AgentPrompt:
    """Stands for "the agent's own system prompt for the model replayed" where a replay takes
    its prompt (the default of :func:`~.stepwise.replay_like_upstream_steps`)."""

    def text(self, model: ModelInfo) -> str:
        """The agent's prompt for ``model``."""
        return agent_system_prompt(model.id, model.provider or "anthropic")


#: The agent's own prompt, resolved for the model replayed.
AGENT_PROMPT = AgentPrompt()


@cache
def _template() -> str:
    return (resources.files("snapcompact.agent") / "agent_system_prompt.txt").read_text(
        encoding="utf-8")


def agent_system_prompt(model_id: str, provider: str = "anthropic") -> str:
    """The system prompt the agent 18.3.4 sends for ``provider/model_id`` with no tools."""
    if not model_id:
        raise ValueError("model id must be a non-empty string")
    return _template().replace(_MODEL_SLOT, f"{provider}/{model_id}")


def read_system_prompt(path: str | Path) -> str:
    """A system prompt file's text (UTF-8, kept byte for byte: every character counts)."""
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"system prompt file {p} does not exist")
    return p.read_bytes().decode("utf-8")


def system_prompt_for(path: str | Path | None, model: ModelInfo) -> tuple[str, str]:
    """(text, where it came from) of the system prompt a replay counts: the file at ``path``,
    else the agent's own for ``model``."""
    if path is not None:
        return read_system_prompt(path), str(path)
    return AGENT_PROMPT.text(model), f"coding agent {AGENT_PROMPT_VERSION}'s own (no tools)"
