"""SessionMaintenance composes its view instead of inheriting it (issue 38 item 1).

The rule guarded: the orchestrator a caller sees is small (at most 15 names: the check points
and a few read-through attributes), the figures live on one
:class:`~snapcompact.agent.maintenance_view.MaintenanceView`, and a pass is handed that view,
never the orchestrator (so no room can reach back into the check points). Re-basing the class
on the view, or handing a room ``self``, fails here.
"""

from __future__ import annotations

import pytest

import snapcompact.agent.maintenance as maintenance_module
from snapcompact.agent import SessionMaintenance
from snapcompact.agent.maintenance_view import MaintenanceView
from snapcompact.compaction import DEFAULT_SETTINGS, ModelInfo, Session

MODEL = ModelInfo("small-model", 40_000, provider="anthropic", api="anthropic-messages")
#: The issue's bar for the class that remains: it orchestrates, with at most 15 methods.
MAX_NAMES = 15
CHECK_POINTS = ("append", "before_prompt", "mid_turn", "end_turn")


def _public_and_private_names() -> list[str]:
    return [n for n in dir(SessionMaintenance) if not n.startswith("__")]


def test_the_orchestrator_is_not_a_view_and_stays_small():
    assert not issubclass(SessionMaintenance, MaintenanceView)
    names = _public_and_private_names()
    assert len(names) <= MAX_NAMES, names
    assert set(CHECK_POINTS) <= set(names)
    # The figures are the view's: not copied onto the orchestrator.
    for figure in ("threshold", "window_budget", "stored_tokens", "method_order", "estimator"):
        assert figure not in names


def test_what_a_caller_reads_is_the_views_own_objects():
    maint = SessionMaintenance(Session(), MODEL, settings=DEFAULT_SETTINGS)
    view = maint.view
    assert isinstance(view, MaintenanceView)
    assert maint.session is view.session is view.pipeline.session
    assert maint.pipeline is view.pipeline
    assert maint.model is view.model is MODEL
    assert maint.rounds is view.rounds
    assert maint.notices is view.notices


class _SpyPass:
    """Stands in for :class:`~snapcompact.agent.method_loop.MaintenancePass`: records what it
    was handed and runs nothing."""

    made: list[tuple[object, object, object]] = []

    def __init__(self, view: object, probe: object, request: object) -> None:
        self.made.append((view, probe, request))

    def run(self) -> str:
        return "ran"


def test_a_pass_is_handed_the_view_and_the_same_probe(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(maintenance_module, "MaintenancePass", _SpyPass)
    _SpyPass.made.clear()
    maint = SessionMaintenance(Session(), MODEL, settings=DEFAULT_SETTINGS)
    over = [{"role": "user", "content": "x " * 200_000}]  # far over the 23,616 threshold
    assert maint.before_prompt(over) == "ran"
    assert maint.before_prompt(over) == "ran"
    (view1, probe1, request1), (view2, probe2, _) = _SpyPass.made
    assert view1 is view2 is maint.view
    assert probe1 is probe2  # the renderability probe's memory is kept across passes
    assert request1.check == "pre_prompt"  # type: ignore[attr-defined]
