"""Issue 38's rule for bills: one library room computes them, everyone else calls it.

A bill (tokens a provider charges for an image, a request, a cached prefix, the turns after a
compaction, a compaction's own calls) is a formula that every table compares strategies by; two
copies drift. So each name ``snapcompact.billing`` exports is defined there and nowhere else in
the library or the harness: a second ``bill_request`` (or ``cache_uses``, ``next_turns_units``
...) anywhere fails here.
"""

from __future__ import annotations

import ast

from locations import REPO

import snapcompact.billing

ROOM = REPO / "snapcompact" / "billing"


def _definitions_outside_the_room() -> dict[str, str]:
    found: dict[str, str] = {}
    for package in ("snapcompact", "evals"):
        for path in sorted((REPO / package).rglob("*.py")):
            if ROOM in path.parents:
                continue
            tree = ast.parse(path.read_text())
            for node in ast.walk(tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    found.setdefault(node.name, str(path.relative_to(REPO)))
                elif isinstance(node, ast.Assign):
                    for target in node.targets:
                        if isinstance(target, ast.Name):
                            found.setdefault(target.id, str(path.relative_to(REPO)))
    return found


def test_every_bill_is_defined_in_the_billing_room_only():
    elsewhere = _definitions_outside_the_room()
    twins = {name: elsewhere[name] for name in snapcompact.billing.__all__ if name in elsewhere}
    assert twins == {}


def test_the_room_exports_a_bill_for_each_kind_the_issue_names():
    # image, request, cached prefix, the next K turns, a compaction's calls
    for name in ("bill_image", "bill_request", "cache_uses", "stable_prefix_of",
                 "next_turns_units", "bill_calls"):
        assert callable(getattr(snapcompact.billing, name)), name
