"""Dataset registry: `load_dataset(name, **params) -> list[QAItem]`.

Why a registry of plain functions: Hydra's dataset group becomes `name` plus keyword params,
and every loader validates its own params, so a typo in a config fails before any frame is
rendered. Loaders (all deterministic by `seed` on one interpreter):

- "squad":       SQuAD v1.1 paragraphs packed to target_tokens (`datasets`, hub or data_file=)
- "needles":     facts at chosen depths in stdlib docstring prose, up to 200k tokens
- "tool_output": cat -n / grep -n / find output over stdlib sources, structure questions
- "tiny":        two ~300-token needle items over fixed prose, identical on every machine
- "agent_session": generated coding-agent sessions (user, tool calls, tool output) of 20k-200k
                 tokens with facts at chosen depths (returns session items)
- "session":     a user's own session file plus a JSONL questions file (a session item)
- "session-file": a user's own session file with probe questions drawn from its tool output

Text items are packed into conversations by ``evals.items.sessions.as_session`` before replay.

Lengths are estimates at CHARS_PER_TOKEN (4) characters per token.

Modules besides the loaders of the same names (``squad``, ``needles``, ``tool_output``, ``tiny``,
``agent_session``): ``common`` (the token estimate, parameter checks, packing),
``stdlib_corpus`` (the standard library's text every machine has), ``user_session``
(``session``) and ``session_probes`` (``session-file``), ``session_probe_kinds`` (its probes
by kind, from distinct lines, without trivial values), ``probe_plants`` (the gist and
never-stated probes beside a generated session's facts, ``probes=[...]``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

from evals.items.datasets.agent_session import load_agent_session
from evals.items.datasets.common import CHARS_PER_TOKEN, MAX_TARGET_TOKENS, estimate_tokens
from evals.items.datasets.needles import load_needles
from evals.items.datasets.session_probes import load_session_file
from evals.items.datasets.squad import SquadUnavailable, load_squad
from evals.items.datasets.tiny import load_tiny
from evals.items.datasets.tool_output import load_tool_output
from evals.items.datasets.user_session import load_user_session
from evals.items.qa_items import QAItem, Question
from evals.items.sessions import SessionItem

LOADERS: dict[str, Callable[..., list[QAItem] | list[SessionItem]]] = {
    "agent_session": load_agent_session,
    "session": load_user_session,
    "session-file": load_session_file,
    "squad": load_squad,
    "needles": load_needles,
    "tool_output": load_tool_output,
    "tiny": load_tiny,
}


def dataset_names() -> tuple[str, ...]:
    return tuple(LOADERS)


def dataset_params(name: str) -> dict[str, object]:
    """The keyword params a dataset accepts, with their defaults."""
    loader = _loader(name)
    return {p.name: p.default for p in inspect.signature(loader).parameters.values()}


def _loader(name: str) -> Callable[..., list[QAItem] | list[SessionItem]]:
    try:
        return LOADERS[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown dataset {name!r}; choose from {sorted(LOADERS)}") from None


def load_dataset(name: str, **params: object) -> list[QAItem] | list[SessionItem]:
    """Load dataset `name`; unknown or ill-typed params raise ValueError naming them."""
    loader = _loader(name)
    allowed = inspect.signature(loader).parameters
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        raise ValueError(
            f"dataset {name!r} got unknown params {unknown}; it accepts {sorted(allowed)}"
        )
    return loader(**params)


__all__ = [
    "CHARS_PER_TOKEN",
    "LOADERS",
    "MAX_TARGET_TOKENS",
    "QAItem",
    "Question",
    "SquadUnavailable",
    "dataset_names",
    "dataset_params",
    "estimate_tokens",
    "load_dataset",
]
