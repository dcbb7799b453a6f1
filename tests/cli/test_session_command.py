"""``snapcompact session``: show, transcript, tree and prune on a session file; bad input is one
line naming the problem.
"""

from __future__ import annotations

import json

from compaction_synth import FakeLLM
from pipeline_rows import CLAUDE
from pipeline_rows import fill_turns as _fill
from pipeline_rows import small_settings as _settings

from snapcompact.compaction import (
    CompactionPipeline,
    Session,
    transcript,
)


def _session_file(tmp_path):
    path = tmp_path / "s.jsonl"
    p = CompactionPipeline(Session(path, fsync=False), CLAUDE, settings=_settings(), complete=FakeLLM())
    _fill(p, 7, 12)
    p.compact()
    fork_at = p.session.leaf_id
    _fill(p, 8, 2)
    abandoned_leaf = p.session.leaf_id
    p.session.branch(fork_at)
    p.session.append_message({"role": "user", "content": "another way"})
    # Two reads of one file: the older is stale for the dry-run prune.
    for n in (1, 2):
        call = {"type": "toolCall", "id": f"r{n}", "name": "read", "arguments": {"path": "src/x.py"}}
        p.session.append_message({"role": "assistant", "content": [call], "stopReason": "toolUse"})
        p.session.append_message({"role": "toolResult", "toolCallId": f"r{n}", "toolName": "read",
                                  "content": [{"type": "text", "text": "x = 1\n" * 400}], "isError": False})
    return path, p, abandoned_leaf


def _run(capsys, *argv):
    from snapcompact.cli import main

    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_session_command_show_transcript_tree_prune(tmp_path, capsys):
    from snapcompact.compaction import DIVIDER

    path, p, abandoned_leaf = _session_file(tmp_path)
    before = path.read_bytes()
    code, out, _ = _run(capsys, "session", str(path), "show")
    shown = json.loads(out)
    assert code == 0 and shown["leafId"] == p.session.leaf_id
    wire = p.llm_messages()
    assert shown["messages"] == len(wire) and shown["context"][0]["message"]["role"] == "user"
    assert shown["context"][0]["message"]["content"][0]["text"].count("summary #1") == 1  # the compaction
    assert shown["estimatedTokens"] == p.estimate_tokens()

    code, out, _ = _run(capsys, "session", str(path), "transcript")
    lines = out.splitlines()
    assert lines.count(DIVIDER) == 1 and len(lines) == len(transcript(p.session).messages)
    last = p.session.leaf_id  # one line per message, cut at 72 characters with an ellipsis
    assert lines[-1] == f"[{last}] toolResult: " + ("x = 1 " * 12)[:71] + "\u2026"

    code, out, _ = _run(capsys, "session", str(path), "tree")
    rows = out.splitlines()
    assert len(rows) == len(p.session.entries)
    marked = {r.split()[1] for r in rows if r.startswith("*")}
    assert marked == {e.id for e in p.session.get_branch()}
    assert any(r.split()[0] == abandoned_leaf for r in rows if not r.startswith("*"))
    assert sum("<- leaf" in r for r in rows) == 1

    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"pruning": {"protectTokens": 0, "minimumSavings": 0}}))
    code, out, _ = _run(capsys, "session", str(path), "prune", "--settings", str(settings))
    report = json.loads(out)
    stale = {b["entryId"] for b in report["thresholdPrune"]["blanked"] if b["reason"] == "superseded"}
    first_read, second_read = (next(e.id for e in p.session.entries
                                    if getattr(e, "message", {}).get("toolCallId") == c) for c in ("r1", "r2"))
    assert first_read in stale and second_read not in stale
    assert {"entryId": first_read, "reason": "superseded",
            "notice": "[Superseded by a newer read of this file]"} in report["stalePass"]["blanked"]
    assert second_read not in {b["entryId"] for b in report["stalePass"]["blanked"]}
    assert path.read_bytes() == before, "the session command never writes"


def test_session_command_bad_input_is_one_line(tmp_path, capsys):
    code, out, err = _run(capsys, "session", str(tmp_path / "missing.jsonl"), "show")
    assert code == 2 and out == "" and err.count("\n") == 1 and "does not exist" in err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type": "message"}\n')
    code, _, err = _run(capsys, "session", str(bad), "tree")
    assert code == 2 and "session header" in err and err.count("\n") == 1
