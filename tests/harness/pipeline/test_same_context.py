"""Arms that send the same bytes are one measurement: detected at planning, asked once, labelled.

The smoke experiment at 512 px under the foveated policy draws its single frame in the dense
companion 8on16-bw whatever shape the arm asks for (the archive's middle), so 11on16-bw and
8on22-bw send byte-identical contexts: the case of issue 35.
"""

from __future__ import annotations

import json

from hydra_compose import compose_eval
from mock_runs import Counting, rows_of

from evals.items.datasets import load_dataset
from evals.pipeline.plan import context_warnings
from evals.pipeline.run import run_config
from evals.replay.contexts import Context, build_context
from evals.spec.arms import ArmSpec
from evals.spec.run_spec import RunSpec
from evals.store.sent_index import SentIndex

ARMS = ["experiment=smoke", "model=mock", "progress=false", "strategies=[snapcompact]",
        "policies=[foveated]", "dataset.params.depths=[0.1,0.9]"]


def test_identical_contexts_are_asked_once_and_labelled(tmp_path, capsys):
    calls = Counting()
    run_config(compose_eval([f"results_dir={tmp_path}", *ARMS, "shapes=[11on16-bw,8on22-bw]"]),
               tmp_path / "run", base_dir=tmp_path, completion_fn=calls)
    out = capsys.readouterr().out
    rows = rows_of(tmp_path / "run")
    first = [r for r in rows if r.shape_requested == "11on16-bw"]
    second = [r for r in rows if r.shape_requested == "8on22-bw"]
    assert len(first) == len(second) == 2
    assert {r.sent_hash for r in first} == {r.sent_hash for r in second}
    assert all(r.same_context_as is None for r in first)
    assert {r.same_context_as for r in second} == {"snapcompact/foveated/11on16-bw@512"}
    assert calls.calls == 2  # two questions, one context: the second arm came from the cache
    assert "same context as snapcompact/foveated/11on16-bw@512" in out
    # neither arm drew a frame in the shape it names: both are flagged, and rows say what was
    # drawn, not what was asked
    assert "no frame drawn in 11on16-bw (drawn: 1 x 8on16-bw)" in out
    assert "no frame drawn in 8on22-bw (drawn: 1 x 8on16-bw)" in out
    assert {r.shape for r in rows} == {"8on16-bw"}
    assert {r.shape_asked_drawn for r in rows} == {False}


def test_a_later_job_of_the_sweep_finds_the_earlier_one(tmp_path, capsys):
    for shape in ("11on16-bw", "8on22-bw"):  # two jobs of a multirun: one process each
        run_config(compose_eval([f"results_dir={tmp_path}", *ARMS, f"shapes=[{shape}]"]),
                   tmp_path / f"shape={shape}", base_dir=tmp_path, completion_fn=Counting())
    second = rows_of(tmp_path / "shape=8on22-bw")
    assert {r.same_context_as for r in second} == {
        "snapcompact/foveated/11on16-bw@512 (run shape=11on16-bw)"}
    assert "same context as snapcompact/foveated/11on16-bw@512 (run shape=11on16-bw)" in \
        capsys.readouterr().out


def test_sent_index_first_writer_wins(tmp_path):
    a = SentIndex(tmp_path, "run-a")
    b = SentIndex(tmp_path, "run-b")
    assert a.first("ab" * 32, "arm-1") is None  # first: recorded
    assert a.first("ab" * 32, "arm-1") is None  # the same arm of the same run again: itself
    assert b.first("ab" * 32, "arm-2") == "arm-1 (run run-a)"
    assert json.loads((tmp_path / "ab" / f"{'ab' * 32}.json").read_text()) == {
        "arm": "arm-1", "run": "run-a"}
    dry = SentIndex(tmp_path, "run-c", read_only=True)
    assert dry.first("cd" * 32, "arm-3") is None
    assert not (tmp_path / "cd").exists()  # a dry run writes nothing
    assert a.first("", "arm-1") is None


def _context(arm: ArmSpec, **facts) -> Context:
    return Context(arm=arm, shape="text", frame_size=0, messages=(), tools=(), frame_hashes=(),
                   frame_px=(), seen_px=(), image_tokens=(), bill_rules=(),
                   text_tokens_without_question=0, text_token_method="estimate:bytes4",
                   compactions=0, frames_evicted=0, text_tail_chars=0, compaction_cost_tokens=0,
                   discarded_round=(), context_hash="", replay_warnings=(), **facts)


def test_only_an_arm_whose_frames_are_all_in_another_shape_is_warned():
    # shape_asked_drawn: True (a frame in the asked shape), False (frames, none in it), None
    # (no frames, or a text arm): only False says "no frame drawn".
    truncate = _context(ArmSpec("truncate"))
    assert truncate.shape_asked_drawn is None and context_warnings(truncate) == []
    assert context_warnings(_context(ArmSpec("truncate"), shape_asked_drawn=True)) == []
    (warning,) = context_warnings(_context(ArmSpec("truncate"), shape_asked="11on16-bw",
                                           shape_asked_drawn=False,
                                           frames_by_shape={"8on16-bw": 2}))
    assert warning.startswith("no frame drawn in 11on16-bw (drawn: 2 x 8on16-bw)")


def test_a_snapcompact_arm_that_drew_no_frame_is_said_to_miss_its_shape(tmp_path):
    # The smoke session (~30k tokens) at a 200k window never compacts: the arm asked for
    # 11on16-bw and drew no frame at all, so its recall does not measure 11on16-bw (issue 44
    # item 3: "no frame drawn" whenever an arm draws no frame in its shape, zero frames included)
    spec = RunSpec.from_config(compose_eval([f"results_dir={tmp_path}", *ARMS,
                                             "shapes=[11on16-bw]", "context_window=200000"]),
                               base_dir=tmp_path)
    item = load_dataset("agent_session", target_tokens=30000, depths=(0.1, 0.9))[0]
    (arm,) = [a for a in spec.arms() if a.is_snapcompact]
    context = build_context(item, arm, spec, frames=None, contexts=None)
    assert (context.compactions, context.frame_hashes) == (0, ())
    assert context.shape_asked == "11on16-bw" and context.shape_asked_drawn is False
    (warning,) = context_warnings(context)
    assert warning.startswith("no frame drawn in 11on16-bw")
