"""The coding agent's session maintenance: what production sends after it compacts.

``@oh-my-pi/pi-coding-agent`` 18.3.4 decides which compaction method runs (an ordered list
with fallbacks), how many frames snapcompact may draw (a cap sized from the window), whether a
result is accepted (payload, reduction and window guards) and what happens when a pass leaves
no headroom (the recovery band and its rescues). :class:`SessionMaintenance` does the same
over a :class:`~snapcompact.compaction.CompactionPipeline`; :func:`replay_agent_session`
drives it over a recorded session check point by check point; :func:`replay_like_upstream_steps`
grows a session step by step as the ``upstream-agent --steps`` oracle does (parity checks).
Every constant and rule cites the upstream source where it lives.

Rooms (one job each):

* :mod:`.maintenance`: :class:`SessionMaintenance`, the orchestrator: the three check points,
  each ending in a pass; it composes the view and hands it to the rooms below;
* :mod:`.maintenance_view`: what the rooms read (stored context, threshold, window budget,
  method order, the cut), made once per change, and the passes' record (rounds, notices);
  :mod:`.counting`: counted as the agent counts;
* :mod:`.check_points`: each check point's count and the auto-continue rule;
  :mod:`.usage_anchor`: the provider-anchored pre-prompt count; :mod:`.turn_prunes`: the
  prunes after every turn;
* :mod:`.methods`: the method order and which methods are usable; :mod:`.method_loop`: one
  pass over them (``runAutoCompaction``); :mod:`.method_attempts`: each method's try;
  :mod:`.offline`: the stand-in for a method that needs a model this run was not given;
* :mod:`.snapcompact_path`: snapcompact's scan, draw and guards; :mod:`.probe`: the
  renderability probe's memory; :mod:`.frame_budget`: a pass's frame cap (window, payload);
  :mod:`.frame_cap`: its formulas; :mod:`.frame_charge`, :mod:`.frame_shapes`: a frame's
  charge and shape; :mod:`.guards`: the payload, reduction and window guards;
* :mod:`.recovery`: the recovery band after a commit and the dead-end rescues;
* :mod:`.pass_report`: the record a pass leaves; :mod:`.rounds`: those records as data;
* :mod:`.replay`, :mod:`.stepwise`: drivers over a recorded session; :mod:`.turn_requests`:
  the requests a replay's agent sends for its replies after a compaction (a session's bill);
  :mod:`.inspect`, :mod:`.inspect_steps`: the ``compact`` command's reports;
  :mod:`.system_prompt`: the agent's own system prompt, kept as data, that both count by default.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from snapcompact.core import lazy_exports

if TYPE_CHECKING:
    from snapcompact.agent.check_points import is_terminal_text_answer
    from snapcompact.agent.counting import context_tokens_of_usage, production_estimator
    from snapcompact.agent.frame_cap import (
        SUMMARY_TEMPLATE_TOKENS,
        FrameCap,
        cap_reserve_tokens,
        frames_within_payload,
        hard_frame_cap,
        rescue_max_frames,
        snapcompact_max_frames,
    )
    from snapcompact.agent.frame_charge import (
        frame_tokens_for,
    )
    from snapcompact.agent.frame_shapes import frame_shape_name, frames_by_shape
    from snapcompact.agent.guards import snapcompact_rejection
    from snapcompact.agent.inspect import CompactRequest, compact_session_file
    from snapcompact.agent.inspect_steps import StepsRequest, compact_session_steps, step_line
    from snapcompact.agent.maintenance import SessionMaintenance
    from snapcompact.agent.methods import (
        COMPACTION_METHODS,
        DEFAULT_METHOD_ORDER,
        LLM_METHODS,
        is_method_usable,
        resolve_method_order,
    )
    from snapcompact.agent.recovery import COMPACTION_RECOVERY_BAND
    from snapcompact.agent.replay import (
        AGENT_STRATEGIES,
        AgentReplay,
        agent_settings,
        replay_agent_session,
    )
    from snapcompact.agent.rounds import MaintenanceRound, MethodAttempt
    from snapcompact.agent.stepwise import (
        StepPlan,
        StepReport,
        StepwiseReplay,
        plan_upstream_steps,
        replay_like_upstream_steps,
    )
    from snapcompact.agent.system_prompt import AGENT_PROMPT, agent_system_prompt

_WHERE: dict[str, str] = {
    "CompactRequest": "inspect",
    "compact_session_file": "inspect",
    "StepsRequest": "inspect_steps",
    "compact_session_steps": "inspect_steps",
    "step_line": "inspect_steps",
    "AGENT_STRATEGIES": "replay",
    "AgentReplay": "replay",
    "agent_settings": "replay",
    "cap_reserve_tokens": "frame_cap",
    "frame_tokens_for": "frame_charge",
    "frames_within_payload": "frame_cap",
    "COMPACTION_METHODS": "methods",
    "COMPACTION_RECOVERY_BAND": "recovery",
    "context_tokens_of_usage": "counting",
    "DEFAULT_METHOD_ORDER": "methods",
    "LLM_METHODS": "methods",
    "frame_shape_name": "frame_shapes",
    "FrameCap": "frame_cap",
    "frames_by_shape": "frame_shapes",
    "hard_frame_cap": "frame_cap",
    "is_method_usable": "methods",
    "is_terminal_text_answer": "check_points",
    "MaintenanceRound": "rounds",
    "MethodAttempt": "rounds",
    "production_estimator": "counting",
    "replay_agent_session": "replay",
    "rescue_max_frames": "frame_cap",
    "resolve_method_order": "methods",
    "SessionMaintenance": "maintenance",
    "snapcompact_max_frames": "frame_cap",
    "snapcompact_rejection": "guards",
    "SUMMARY_TEMPLATE_TOKENS": "frame_cap",
    "StepPlan": "stepwise",
    "StepReport": "stepwise",
    "StepwiseReplay": "stepwise",
    "plan_upstream_steps": "stepwise",
    "replay_like_upstream_steps": "stepwise",
    "AGENT_PROMPT": "system_prompt",
    "agent_system_prompt": "system_prompt",
}

__all__ = [
    "AGENT_PROMPT",
    "agent_system_prompt",
    "StepsRequest",
    "compact_session_steps",
    "step_line",
    "AGENT_STRATEGIES",
    "AgentReplay",
    "COMPACTION_METHODS",
    "COMPACTION_RECOVERY_BAND",
    "CompactRequest",
    "DEFAULT_METHOD_ORDER",
    "LLM_METHODS",
    "FrameCap",
    "MaintenanceRound",
    "MethodAttempt",
    "SUMMARY_TEMPLATE_TOKENS",
    "SessionMaintenance",
    "StepPlan",
    "StepReport",
    "StepwiseReplay",
    "agent_settings",
    "cap_reserve_tokens",
    "compact_session_file",
    "context_tokens_of_usage",
    "frame_shape_name",
    "frame_tokens_for",
    "frames_by_shape",
    "frames_within_payload",
    "hard_frame_cap",
    "is_method_usable",
    "is_terminal_text_answer",
    "plan_upstream_steps",
    "production_estimator",
    "replay_agent_session",
    "replay_like_upstream_steps",
    "rescue_max_frames",
    "resolve_method_order",
    "snapcompact_max_frames",
    "snapcompact_rejection",
]

__getattr__, __dir__ = lazy_exports(__name__, _WHERE, __all__)
