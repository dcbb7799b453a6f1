"""Offline stand-ins: what a pass records for a method that needs a model it was not given.

Why a room: a replay runs without the summarizer, the live chat or the provider's compact
endpoint that production would call, and the agent's order (``compaction.methodOrder``,
``compaction-methods.ts:44``) puts such methods first. Production would run them here; a
replay cannot, so the pass records the method as ``offline`` with that reason and hands over to
the next method, the way a rejected method hands over (``session-maintenance.ts:4142-4780``).
The context then differs from production's, and the pass's report says so.
"""

from __future__ import annotations

from snapcompact.agent.maintenance_view import MaintenanceView
from snapcompact.agent.methods import LLM_METHODS
from snapcompact.agent.rounds import MethodAttempt
from snapcompact.compaction import summary_complete

__all__ = ["can_run_offline", "offline_attempt"]


def can_run_offline(view: MaintenanceView, method: str) -> bool:
    """Whether ``method`` can run with what the maintenance was given: any method without a
    language model; remote with an endpoint or OpenAI's compact function; handoff with a
    summarizer or the live chat and its system prompt; soft with a summarizer."""
    pipeline = view.pipeline
    if method not in LLM_METHODS:
        return True
    if method == "remote":
        return bool(view.settings.compaction.remote_endpoint) or (
            pipeline.responses_compact is not None)
    if method == "handoff":
        return pipeline.complete is not None or (
            pipeline.chat is not None and pipeline.system_prompt is not None)
    return summary_complete(pipeline) is not None


def offline_attempt(method: str) -> MethodAttempt:
    """The attempt a pass records for a method it could not run offline."""
    return MethodAttempt(method, "offline", f"{method} needs a language model this run was not "
                         "given; production would run it here")
