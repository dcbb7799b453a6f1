"""The seed behaviours issue 11 listed as missing: one test (or more) per row, LLM mocked.

Rows: overflow with nothing to compact, ``snapcompact.maxFrameDataBytes``, settings at the
documented user and project paths, a legacy frames-only archive.
"""

from __future__ import annotations

import json
import re
import warnings

from compaction_synth import FakeLLM, Turns

from snapcompact.archive import PRESERVE_KEY, get_preserved_archive
from snapcompact.compaction import (
    DEFAULT_SETTINGS,
    CompactionEntry,
    CompactionPipeline,
    ModelInfo,
    Session,
    discover_settings,
    merge_settings,
    settings_paths,
)

CLAUDE = ModelInfo("claude-sonnet-4-5", 40_000, provider="anthropic", api="anthropic-messages")


def _settings(strategy: str = "context-full", **snap):
    return merge_settings(DEFAULT_SETTINGS, {
        "compaction": {"strategy": strategy, "reserveTokens": 4000, "keepRecentTokens": 3000},
        "snapcompact": {"frameSize": 384, **snap}})


def _fill(p: CompactionPipeline, seed: int, turns: int) -> None:
    t = Turns(seed, result_words=(200, 600))
    for turn in range(turns):
        p.session.append_message({"role": "user", "content": f"turn {turn}: go on"})
        calls = [t.call()]
        p.session.append_message(t.assistant(calls))
        for call in calls:
            p.session.append_message(t.result(call))
        p.session.append_message(t.assistant([]))


def test_overflow_with_nothing_to_compact_fails_without_a_retry():
    p = CompactionPipeline(Session(), CLAUDE, settings=_settings(), complete=FakeLLM())
    p.session.append_message({"role": "user", "content": "word " * 60_000})  # one turn, far over the window
    error = {"role": "assistant", "content": [], "stopReason": "error", "model": CLAUDE.id,
             "errorMessage": "prompt is too long: 75000 tokens > 40000 maximum", "timestamp": 0}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outcome = p.after_turn(error)
    assert outcome.will_retry is False, "a retry would send the same oversized context again"
    assert outcome.entry is None and outcome.skipped == "nothing to compact"
    assert outcome.error.startswith("Context overflow recovery failed: nothing to compact")
    assert any("Context overflow recovery failed" in str(w.message) for w in caught)
    assert [e.message["role"] for e in p.session.get_branch()] == ["user"]  # the error is not recorded


def _frames_in(messages) -> tuple[int, str]:
    from snapcompact.archive import ImageBlock, TextBlock

    first = messages[0]
    images = sum(isinstance(b, ImageBlock) for b in first.content)
    text = "".join(b.text for b in first.content if isinstance(b, TextBlock))
    return images, text


def test_max_frame_data_bytes_setting_caps_reattached_frames():
    # pinned frames are all full pages, so a budget of the largest frame fits exactly one
    p = CompactionPipeline(Session(), CLAUDE, settings=_settings("snapcompact", policy="pinned"),
                           complete=FakeLLM())
    _fill(p, 3, 40)
    outcome = p.compact()
    assert outcome.strategy == "snapcompact"
    archive = get_preserved_archive(outcome.entry.preserve_data)
    assert archive is not None and len(archive.frames) >= 2
    images, _ = _frames_in(p.llm_messages())
    assert images == len(archive.frames)  # 3 MB default: every small frame fits
    one_frame = max(len(f.data) for f in archive.frames)
    for limit, expected in ((0, 0), (one_frame, 1)):
        capped = CompactionPipeline(p.session, CLAUDE, settings=_settings(
            "snapcompact", policy="pinned", maxFrameDataBytes=limit))
        images, text = _frames_in(capped.llm_messages())
        assert images == expected
        assert "could not be included" in text  # the omitted frames are announced, not silently lost
        # The pipeline's own estimate counts what is sent: fewer frames, fewer tokens.
        assert capped.estimate_tokens() < p.estimate_tokens()


def test_settings_found_at_the_user_and_project_paths(tmp_path):
    home, project = tmp_path / "home", tmp_path / "project"
    (home / ".omp" / "agent").mkdir(parents=True)
    (project / ".omp").mkdir(parents=True)
    (home / ".omp" / "agent" / "config.yml").write_text(
        "theme: dark\ncompaction:\n  strategy: snapcompact\n  keepRecentTokens: 30000\n  supersedeReads: true\n")
    (project / ".omp" / "settings.json").write_text(json.dumps({"compaction": {"keepRecentTokens": 12000},
                                                                "snapcompact": {"maxFrameDataBytes": 1000}}))
    assert settings_paths(project, home=home, env={}) == [home / ".omp" / "agent" / "config.yml",
                                                          project / ".omp" / "settings.json"]
    settings, notes = discover_settings(project, home=home, env={})
    assert settings.compaction.strategy == "snapcompact"  # user file
    assert settings.compaction.keep_recent_tokens == 12000  # project file wins
    assert settings.snapcompact.max_frame_data_bytes == 1000
    assert notes == ((f"{home / '.omp' / 'agent' / 'config.yml'}: compaction.supersedeReads is not a setting "
                      "this library uses (ignored)"),)
    # PI_CODING_AGENT_DIR moves the user directory; nothing there means defaults plus the project.
    settings, _ = discover_settings(project, home=home, env={"PI_CODING_AGENT_DIR": str(tmp_path / "none")})
    assert settings.compaction.strategy == "context-full" and settings.compaction.keep_recent_tokens == 12000
    (project / ".omp" / "settings.json").write_text(json.dumps({"compaction": {"keepRecentTokens": 0}}))
    try:
        discover_settings(project, home=home, env={})
    except ValueError as exc:
        assert "settings.json" in str(exc) and "compaction.keepRecentTokens must be >= 1" in str(exc)
    else:
        raise AssertionError("a bad value in a discovered file must fail")


def test_legacy_frames_only_archive_carries_its_summary_with_a_notice():
    p = CompactionPipeline(Session(), CLAUDE, settings=_settings("snapcompact", policy="foveated"),
                           complete=FakeLLM())
    _fill(p, 5, 30)
    first = p.compact().entry
    archive = get_preserved_archive(first.preserve_data)
    assert archive is not None and archive.frames
    # Rewrite the entry as a legacy archive: frames, no source text.
    legacy = {PRESERVE_KEY: {"frames": [f.to_json() for f in archive.frames], "totalChars": archive.total_chars,
                             "truncatedChars": 0}}
    branch = p.session.get_branch()
    index = next(i for i, e in enumerate(branch) if isinstance(e, CompactionEntry))
    session = Session()
    for entry in branch[:index]:
        session.append(entry)
    session.append_compaction("LEGACY-SUMMARY earlier work on the parser", first.first_kept_entry_id,
                              first.tokens_before, preserve_data=legacy)
    p2 = CompactionPipeline(session, CLAUDE, settings=_settings("snapcompact", policy="foveated"))
    _fill(p2, 6, 30)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outcome = p2.compact()
    assert outcome.strategy == "snapcompact"
    assert any("without source text (a legacy archive)" in w for w in outcome.warnings)
    assert any("legacy archive" in str(w.message) for w in caught)
    new = get_preserved_archive(outcome.entry.preserve_data)
    source = "".join(t or "" for t in (new.text, new.text_head))
    assert "[Summary of earlier history]" in source and "LEGACY-SUMMARY" in source


# --------------------------------------------------------------------------- session command


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
    assert lines.count(DIVIDER) == 1 and len(lines) == len(p.transcript().messages)
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


class _ShortAware(FakeLLM):
    """FakeLLM whose short-summary reply is fixed (two lines), or raises when ``fail`` is set."""

    def __init__(self, fail: bool = False) -> None:
        super().__init__()
        self.fail = fail

    def __call__(self, system_prompt: str, prompt: str, *, max_tokens: int) -> str:
        reply = super().__call__(system_prompt, prompt, max_tokens=max_tokens)
        if self.calls[-1]["kind"] != "short":
            return reply
        if self.fail:
            raise RuntimeError("boom")
        return "I fixed the parser\n  and the cache "


def test_short_summary_on_context_full_entries():
    llm = _ShortAware()
    p = CompactionPipeline(Session(), CLAUDE, settings=_settings(), complete=llm)
    _fill(p, 9, 12)
    outcome = p.compact()
    short = [c for c in llm.calls if c["kind"] == "short"]
    assert len(short) == 1
    call = short[0]
    # The agent's output cap: min(512, floor(20 % of the reserve)) = min(512, 800).
    assert call["max_tokens"] == 512
    # The new summary as context, the short-summary instruction last.
    assert "<previous-summary>\n## Goal\nsummary #1" in call["prompt"]
    assert call["prompt"].rstrip().endswith("no punctuation at the end.")
    # The conversation is the kept part: the last turn is in it, the first is not.
    assert "turn 11: go on" in call["prompt"] and "turn 0: go on" not in call["prompt"]
    assert outcome.entry.short_summary == "I fixed the parser and the cache"
    # A failing short summary costs only the line.
    failing = CompactionPipeline(Session(), CLAUDE, settings=_settings(), complete=_ShortAware(fail=True))
    _fill(failing, 9, 12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = failing.compact()
    assert out.entry is not None and out.entry.short_summary is None
    assert "short summary failed: boom" in out.warnings


# --------------------------------------------------------------------------- context promotion

SMALL = ModelInfo("small-model", 40_000, provider="anthropic", api="anthropic-messages", promotion_target="big-model")
BIG = ModelInfo("big-model", 200_000, provider="anthropic", api="anthropic-messages")


def test_overflow_promotes_to_the_larger_model_and_retries_without_compacting():
    p = CompactionPipeline(Session(), SMALL, settings=_settings(), complete=FakeLLM(), models=[SMALL, BIG])
    _fill(p, 12, 20)
    entries = len(p.session.entries)
    error = {"role": "assistant", "content": [], "stopReason": "error", "model": SMALL.id,
             "errorMessage": "prompt is too long: 45000 tokens > 40000 maximum", "timestamp": 0}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outcome = p.after_turn(error)
    assert outcome.strategy == "promotion" and outcome.promoted_to == "big-model" and outcome.will_retry
    assert outcome.entry is None and len(p.session.entries) == entries  # nothing written, error dropped
    assert p.model is BIG and p.threshold() == 200_000 - 30_000
    # Incomplete output promotes too; a model without a target then compacts as before.
    p2 = CompactionPipeline(Session(), SMALL, settings=_settings(), complete=FakeLLM(), models=[SMALL, BIG])
    _fill(p2, 12, 20)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = p2.after_turn({"role": "assistant", "content": [{"type": "text", "text": "cut"}],
                             "stopReason": "length", "model": SMALL.id, "timestamp": 0})
        assert out.promoted_to == "big-model"
        out = p2.after_turn({"role": "assistant", "content": [], "stopReason": "length", "model": BIG.id,
                             "timestamp": 0})
    assert out.promoted_to is None and out.entry is not None and out.reason == "incomplete"


def test_threshold_promotes_before_compacting_unless_disabled_or_not_larger():
    def over_threshold(pipeline):
        outcome = None
        t = Turns(13, result_words=(300, 500))
        for turn in range(200):
            pipeline.session.append_message({"role": "user", "content": f"turn {turn}"})
            calls = [t.call()]
            pipeline.session.append_message(t.assistant(calls))
            for call in calls:
                pipeline.session.append_message(t.result(call))
            outcome = pipeline.after_turn({**t.assistant([]), "model": pipeline.model.id})
            if outcome is not None and (outcome.entry is not None or outcome.promoted_to):
                return outcome
        raise AssertionError("never crossed the threshold")

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = CompactionPipeline(Session(), SMALL, settings=_settings(), complete=FakeLLM(), models=[SMALL, BIG])
        outcome = over_threshold(p)
        assert outcome.reason == "threshold" and outcome.promoted_to == "big-model" and outcome.entry is None
        assert not any(isinstance(e, CompactionEntry) for e in p.session.entries)
        off = merge_settings(_settings(), {"compaction": {"contextPromotion": False}})
        p = CompactionPipeline(Session(), SMALL, settings=off, complete=FakeLLM(), models=[SMALL, BIG])
        assert over_threshold(p).entry is not None and p.model is SMALL
        same = ModelInfo("big-model", 30_000)  # configured target, but not a larger window
        p = CompactionPipeline(Session(), SMALL, settings=_settings(), complete=FakeLLM(), models=[SMALL, same])
        assert over_threshold(p).entry is not None and p.model is SMALL


# --------------------------------------------------------------------------- auto-continue, pre-prompt


def _until_compaction(p: CompactionPipeline, seed: int):
    t = Turns(seed, result_words=(300, 500))
    for turn in range(200):
        p.session.append_message({"role": "user", "content": f"turn {turn}"})
        calls = [t.call()]
        p.session.append_message(t.assistant(calls))
        for call in calls:
            p.session.append_message(t.result(call))
        outcome = p.after_turn(t.assistant([]))
        if outcome is not None and outcome.entry is not None:
            return outcome
    raise AssertionError("never compacted")


def test_auto_continue_prompt_is_injected_after_threshold_maintenance():
    from snapcompact.compaction import prompt

    p = CompactionPipeline(Session(), CLAUDE, settings=_settings(), complete=FakeLLM())
    outcome = _until_compaction(p, 14)
    last = p.session.get_branch()[-1]
    assert outcome.auto_continue_prompt == prompt("auto-continue")
    assert last.message == {"role": "developer", "attribution": "agent", "timestamp": last.message["timestamp"],
                            "content": [{"type": "text", "text": prompt("auto-continue")}]}
    assert p.llm_messages()[-1].role == "developer"
    off = CompactionPipeline(Session(), CLAUDE, complete=FakeLLM(),
                             settings=merge_settings(_settings(), {"compaction": {"autoContinue": False}}))
    outcome = _until_compaction(off, 14)
    assert outcome.auto_continue_prompt is None
    assert off.session.get_branch()[-1].type == "compaction"


def test_pre_prompt_check_runs_maintenance_inline_handoff_included(tmp_path):
    for strategy in ("context-full", "handoff"):
        p = CompactionPipeline(Session(tmp_path / f"{strategy}.jsonl", fsync=False), CLAUDE,
                               settings=_settings(strategy), complete=FakeLLM())
        _fill(p, 15, 4)
        assert p.before_prompt() is None  # under the threshold: nothing to do
        _fill(p, 15, 70)  # appended without after_turn: over the threshold now
        assert p.estimate_tokens() > p.threshold()
        old_session = p.session
        outcome = p.before_prompt()
        assert outcome.reason == "threshold" and outcome.strategy == strategy
        assert outcome.auto_continue_prompt is None  # the user's prompt is the next turn
        if strategy == "handoff":
            assert outcome.handoff_session is p.session and p.session is not old_session
            assert p.session.entries[0].custom_type == "handoff"
        else:
            assert outcome.entry is not None and p.estimate_tokens() < p.threshold()


# --------------------------------------------------------------------------- remote summarization


class _Loopback:
    """A local HTTP server standing in for compaction.remoteEndpoint (records every request)."""

    def __init__(self, reply):
        import http.server
        import threading

        self.requests: list[tuple[str, dict]] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                outer.requests.append((self.path, body))
                status, payload = reply(self.path, body)
                data = json.dumps(payload).encode() if not isinstance(payload, bytes) else payload
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def test_remote_endpoint_does_the_summary_calls():
    def reply(path, body):
        if "twelve words" in body.get("prompt", "") or "twelve words" in json.dumps(body.get("messages")):
            return 200, {"summary": "remote short line"} if path == "/compact" else {
                "choices": [{"message": {"content": [{"type": "text", "text": "chat short"}]}}]}
        if path == "/compact":
            return 200, {"summary": "## Goal\nremote summary", "extra": 1}
        if path == "/v1/chat/completions":
            return 200, {"choices": [{"message": {"content": "## Goal\nchat summary"}}]}
        return 503, {"error": "down"}

    server = _Loopback(reply)
    try:
        local = FakeLLM()
        remote = merge_settings(_settings(), {"compaction": {"remoteEndpoint": f"{server.url}/compact"}})
        p = CompactionPipeline(Session(), CLAUDE, settings=remote, complete=local)
        _fill(p, 16, 12)
        outcome = p.compact()
        assert local.calls == []  # nothing went to the local model
        assert outcome.entry.summary.startswith("## Goal\nremote summary")
        assert outcome.entry.short_summary == "remote short line"
        path, body = server.requests[0]
        assert path == "/compact" and set(body) == {"systemPrompt", "prompt", "maxTokens"}
        assert body["prompt"].startswith("<conversation>\n") and body["maxTokens"] == 3200
        # remoteEnabled false: the local model again.
        sent = len(server.requests)
        p.settings = merge_settings(remote, {"compaction": {"remoteEnabled": False}})
        _fill(p, 17, 12)
        p.compact()
        assert local.calls and len(server.requests) == sent
        # A chat-completions endpoint gets a chat body.
        chat = merge_settings(_settings(), {"compaction": {"remoteEndpoint": f"{server.url}/v1/chat/completions"}})
        p = CompactionPipeline(Session(), CLAUDE, settings=chat, complete=FakeLLM())
        _fill(p, 16, 12)
        out = p.compact()
        assert out.entry.summary.startswith("## Goal\nchat summary") and out.entry.short_summary == "chat short"
        _, body = server.requests[sent]
        assert body["model"] == CLAUDE.id and body["stream"] is False and body["messages"][0]["role"] == "system"
        # A failing endpoint fails the compaction with one line that does not leak the query string.
        down = merge_settings(_settings(), {"compaction": {"remoteEndpoint": f"{server.url}/down?key=SECRETVALUE"}})
        p = CompactionPipeline(Session(), CLAUDE, settings=down, complete=FakeLLM())
        _fill(p, 16, 12)
        try:
            p.compact()
        except ValueError as exc:
            assert "remote compaction failed (503" in str(exc) and "SECRETVALUE" not in str(exc)
        else:
            raise AssertionError("a failing endpoint must fail the compaction")
    finally:
        server.close()


# --------------------------------------------------------------------------- live handoff

TOOLS = [{"type": "function", "function": {"name": "read", "parameters": {"type": "object"}}}]


def test_handoff_reuses_the_live_system_prompt_tools_and_history(tmp_path):
    from snapcompact.compaction import prompt, to_wire_json

    requests = []

    def chat(system_prompt, messages, *, tools, tool_choice, max_tokens):
        requests.append({"system": system_prompt, "messages": messages, "tools": tools,
                         "tool_choice": tool_choice, "max_tokens": max_tokens})
        return {"text": "  # Handoff\nwhere we are  "}

    summarizer = FakeLLM()
    p = CompactionPipeline(Session(tmp_path / "h.jsonl", fsync=False), CLAUDE, settings=_settings("handoff"),
                           complete=summarizer, chat=chat, system_prompt=["You are the agent.", "Rules."],
                           tools=TOOLS)
    _fill(p, 18, 6)
    history = [to_wire_json(m) for m in p.context().messages]
    outcome = p.handoff("mind the parser")
    assert summarizer.calls == []  # no transcript under the summarizer prompt
    (request,) = requests
    assert request["system"] == ["You are the agent.", "Rules."] and request["tools"] == TOOLS
    assert request["tool_choice"] == "none" and request["max_tokens"] == 3200
    assert request["messages"][:-1] == history  # the real history, as the agent sent it
    assert request["messages"][-1] == {"role": "user", "attribution": "agent", "content": [
        {"type": "text", "text": prompt("handoff-document") + "\n\nAdditional focus requested by the user: "
         "mind the parser"}]}
    assert outcome.handoff_session.entries[0].content == "# Handoff\nwhere we are"
    # Without the live parts the document comes from a serialized transcript, as before.
    p2 = CompactionPipeline(Session(), CLAUDE, settings=_settings("handoff"), complete=summarizer)
    _fill(p2, 18, 6)
    p2.handoff()
    assert summarizer.calls[-1]["kind"] == "handoff" and "<conversation>" in summarizer.calls[-1]["prompt"]


def test_litellm_chat_sends_the_live_request_offline():
    from snapcompact.compaction import litellm_chat, summarizer_chat_messages

    wire = [{"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "text", "text": "reading"},
                                              {"type": "toolCall", "id": "c1", "name": "read",
                                               "arguments": {"path": "a.py"}}]},
            {"role": "toolResult", "toolCallId": "c1", "toolName": "read",
             "content": [{"type": "text", "text": "x = 1"}]},
            {"role": "developer", "content": [{"type": "text", "text": "note"}]}]
    assert summarizer_chat_messages(["S1", "S2"], wire) == [
        {"role": "system", "content": "S1\n\nS2"},
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {"role": "assistant", "content": "reading", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "read", "arguments": '{"path": "a.py"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "x = 1"},
        {"role": "system", "content": [{"type": "text", "text": "note"}]}]
    chat = litellm_chat("gpt-4o-mini", mock_response="the handoff document")
    reply = chat("S", wire, tools=TOOLS, tool_choice="none", max_tokens=100)
    assert reply["text"] == "the handoff document"


# --------------------------------------------------------------------------- abort, events, candidates


def test_abort_compaction_cancels_and_auto_runs_emit_start_and_end():
    holder = {}

    def complete(system_prompt, prompt, *, max_tokens):
        holder["p"].abort_compaction()  # the user aborts while the summary call is in flight
        return "## Goal\nlate"

    p = CompactionPipeline(Session(), CLAUDE, settings=_settings(), complete=complete)
    holder["p"] = p
    events = []
    p.listeners.append(events.append)
    _fill(p, 19, 12)
    before = list(p.session.entries)
    outcome = p.compact(reason="threshold")
    assert outcome.cancelled and outcome.skipped == "aborted" and outcome.entry is None
    assert p.session.entries == before  # nothing written
    assert [e["type"] for e in events] == ["auto_compaction_start", "auto_compaction_end"]
    assert events[0]["reason"] == "threshold" and events[1]["aborted"] is True
    manual = p.compact()  # aborted too, and no events for a manual run
    assert manual.skipped == "aborted" and len(events) == 2


def test_manual_compaction_aborts_a_running_one():
    import threading

    started, release = threading.Event(), threading.Event()
    calls = []

    def complete(system_prompt, prompt, *, max_tokens):
        calls.append(threading.current_thread().name)
        if threading.current_thread().name == "auto":
            started.set()
            release.wait(10)
        return FakeLLM()(system_prompt, prompt, max_tokens=max_tokens)

    p = CompactionPipeline(Session(), CLAUDE, settings=_settings(), complete=complete)
    _fill(p, 20, 12)
    results = {}
    auto = threading.Thread(target=lambda: results.update(auto=p.compact(reason="threshold")), name="auto")
    auto.start()
    assert started.wait(10)
    manual = threading.Thread(target=lambda: results.update(manual=p.compact()), name="manual")
    manual.start()
    while not p.abort_signal.aborted:  # the manual request aborts the running one ...
        threading.Event().wait(0.01)
    release.set()  # ... which stops after its call in flight
    auto.join(10), manual.join(10)
    assert results["auto"].skipped == "aborted" and results["auto"].entry is None
    assert results["manual"].entry is not None
    assert sum(isinstance(e, CompactionEntry) for e in p.session.entries) == 1
    assert calls.count("auto") == 1


def test_escape_cancels_a_branch_summary():
    holder = {}

    def complete(system_prompt, prompt, *, max_tokens):
        holder["p"].abort_compaction()
        return "summary"

    p = CompactionPipeline(Session(), CLAUDE, settings=_settings(), complete=complete)
    holder["p"] = p
    _fill(p, 21, 3)
    target = p.session.get_branch()[3].id
    leaf, count = p.session.leaf_id, len(p.session.entries)
    nav = p.navigate_tree(target, summarize=True)
    assert nav.cancelled and nav.aborted and nav.new_leaf_id == leaf
    assert p.session.leaf_id == leaf and len(p.session.entries) == count


def test_model_candidates_with_transient_retries():
    from snapcompact.compaction import TransientError, with_candidates

    log, sleeps = [], []

    def flaky(name, failures, retry_after=None):
        state = {"left": failures}

        def complete(system_prompt, prompt, *, max_tokens):
            log.append(name)
            if state["left"]:
                state["left"] -= 1
                raise TransientError("overloaded", retry_after)
            return f"from {name}"
        return complete

    # Backoff from retry.baseDelayMs 500 (coding agent session/settings.ts:687).
    call = with_candidates([flaky("a", 2), flaky("b", 0)], sleep=sleeps.append)
    assert call("s", "p", max_tokens=1) == "from a" and log == ["a", "a", "a"] and sleeps == [0.5, 1.0]
    log.clear(), sleeps.clear()
    call = with_candidates([flaky("a", 1, retry_after=120), flaky("b", 0)], sleep=sleeps.append)
    assert call("s", "p", max_tokens=1) == "from b" and log == ["a", "b"] and sleeps == []  # long wait: next
    log.clear()
    call = with_candidates([flaky("a", 5), flaky("b", 5)], sleep=sleeps.append, retries=1)
    try:
        call("s", "p", max_tokens=1)
    except TransientError:
        assert log == ["a", "a", "b", "b"]
    else:
        raise AssertionError("every candidate failed: the last failure is raised")

    def broken(system_prompt, prompt, *, max_tokens):
        raise ValueError("bad request")

    # A failure that is not retried goes to the next model (session-maintenance.ts:4908-4915).
    log.clear()
    assert with_candidates([broken, flaky("b", 0)])("s", "p", max_tokens=1) == "from b" and log == ["b"]
    # The pipeline takes a list of completion functions as candidates.
    p = CompactionPipeline(Session(), CLAUDE, settings=_settings(),
                           complete=[flaky("x", 1, retry_after=0), FakeLLM()])
    _fill(p, 22, 12)
    assert p.compact().entry is not None and log[-1] == "x"


def test_handoff_file_names_do_not_grow_with_each_generation(tmp_path):
    p = CompactionPipeline(Session(tmp_path / "work.jsonl", fsync=False), CLAUDE, settings=_settings("handoff"),
                           complete=FakeLLM())
    names = []
    for generation in range(30):
        _fill(p, 30 + generation, 2)
        names.append(p.handoff().handoff_session.path.name)
    assert all(re.fullmatch(r"work\.handoff-[0-9a-f]{8}\.jsonl", n) for n in names), names[-1]
    assert len(set(names)) == 30
