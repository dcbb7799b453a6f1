"""Session formats read as the coding agent reads them (hand-made fixtures + the real files).

Expected values come from the agent's loader (@oh-my-pi/pi-coding-agent 18.3.4:
session-migrations.ts, session-loader.ts via parseJsonlLenient, blob-store.ts,
claude-session-store.ts) applied by hand to the fixtures in tests/fixtures/session_formats/, and
from ../shared/real-sessions/SOURCES.md for the real files.
"""

from __future__ import annotations

import json
import warnings
from collections import Counter
from pathlib import Path

import pytest

from snapcompact.compaction import (
    CompactionEntry,
    CustomMessageEntry,
    MessageEntry,
    MetadataEntry,
    load_session_messages,
    read_session_file,
)
from tests.locations import FIXTURES, REPO

HERE = FIXTURES / "session_formats"
REAL = REPO.parent / "shared" / "real-sessions"


def _roles(entries):
    return [e.message["role"] for e in entries if isinstance(e, MessageEntry)]


# ----------------------------------------------------------------------------- pi v1


def test_pi_v1_is_migrated_with_a_parent_chain_and_first_kept_id():
    loaded = read_session_file(HERE / "pi_v1.jsonl")
    s = loaded.session
    assert loaded.format == "pi-v1" and loaded.warnings == ()
    assert s.header.version == 3
    # migrateV1ToV2: every entry gets an id and the previous entry as parent
    assert [e.parent_id for e in s.entries] == [None] + [e.id for e in s.entries[:-1]]
    assert len({e.id for e in s.entries}) == 5
    comp = next(e for e in s.entries if isinstance(e, CompactionEntry))
    # firstKeptEntryIndex 2 indexes the file's records with the header as record 0: the assistant
    assert s.get(comp.first_kept_entry_id).message["role"] == "assistant"
    assert s.source_lines[comp.first_kept_entry_id] == 3
    assert comp.tokens_before == 1234
    # migrateV2ToV3: hookMessage -> custom
    assert _roles(s.entries) == ["user", "assistant", "custom", "user"]


# ----------------------------------------------------------------------------- pi v2


def test_pi_v2_keeps_its_tree_and_is_migrated_to_v3_roles():
    # A v2 file by hand (pi-mono docs/session.md: "Version 2: tree structure with id/parentId
    # linking; Version 3: renamed hookMessage role to custom"): its ids and parents are the
    # file's own (migrateV1ToV2 does not run), and migrateV2ToV3 renames the hook's role.
    loaded = read_session_file(HERE / "pi_v2.jsonl")
    s = loaded.session
    assert loaded.format == "pi-v2" and loaded.warnings == ()
    assert s.header.version == 3
    ids = [f"a100000{k}" for k in range(1, 6)]
    assert [e.id for e in s.entries] == ids
    assert [e.parent_id for e in s.entries] == [None, *ids[:-1]]
    comp = next(e for e in s.entries if isinstance(e, CompactionEntry))
    assert comp.first_kept_entry_id == "a1000002" and comp.tokens_before == 1234
    assert _roles(s.entries) == ["user", "assistant", "custom", "user"]


# ----------------------------------------------------------------------------- pi v3 flaws


def test_pi_flaws_each_get_one_warning_naming_the_line():
    loaded = read_session_file(HERE / "pi_v3_flaws.jsonl")
    s = loaded.session
    assert loaded.format == "pi-v3"
    by_line = Counter(w.split(" ")[1].rstrip(":") for w in loaded.warnings)
    # line 3: two joined records; line 5: bad escape; line 6: parent e4 lost; line 7: blob image
    assert by_line == {"3": 1, "5": 1, "6": 1, "7": 1}
    assert [e.id for e in s.entries] == ["e1", "e2", "e3", "e3b", "e5", "e6"]
    assert s.get("e2").data == {"model": "zai/glm-5.2", "attribution": "agent"}  # GJC extras kept
    # the agent's branch walk stops at the missing parent e4: the branch starts at e5
    assert [e.id for e in s.get_branch()] == ["e5", "e6"]
    assert s.get("e5").parent_id is None


def test_u2028_stays_inside_the_string_and_blob_image_becomes_a_placeholder():
    s = read_session_file(HERE / "pi_v3_flaws.jsonl").session
    content = s.get("e6").message["content"]
    assert content[0]["text"] == "shot\u2028taken"
    assert content[1]["type"] == "text"
    assert "blob:sha256:" + "ab" * 32 in content[1]["text"]
    assert not any(b.get("type") == "image" for b in content)


def test_load_session_messages_warns_and_returns_the_branch():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        messages = load_session_messages(HERE / "pi_v3_flaws.jsonl")
    assert [m["content"] if isinstance(m["content"], str) else m["role"] for m in messages] == \
        ["after the broken line", "toolResult"]
    assert sum("line 5 does not parse" in str(w.message) for w in caught) == 1


def test_a_torn_value_keeps_what_came_before_it_on_the_line(tmp_path):
    header = {"type": "session", "version": 3, "id": "h", "timestamp": "t"}
    entry = {"type": "message", "id": "a", "parentId": None, "timestamp": "t",
             "message": {"role": "user", "content": "kept", "timestamp": 1}}
    f = tmp_path / "s.jsonl"
    f.write_text(json.dumps(header) + "\n" + json.dumps(entry) + ' {"type": "mess\n',
                 encoding="utf-8")
    loaded = read_session_file(f)
    assert [e.id for e in loaded.session.entries] == ["a"]
    assert len(loaded.warnings) == 1 and loaded.warnings[0].startswith("line 2 does not parse")


def test_unknown_format_and_empty_file_are_clear_errors(tmp_path):
    f = tmp_path / "x.jsonl"
    f.write_text('{"hello": 1}\n', encoding="utf-8")
    with pytest.raises(ValueError, match="the first line must be a session header"):
        read_session_file(f)
    f.write_text("\n\n", encoding="utf-8")
    with pytest.raises(ValueError, match="the file is empty"):
        read_session_file(f)


# ----------------------------------------------------------------------------- Claude Code


def test_claude_code_main_chain_as_the_agent_imports_it():
    loaded = read_session_file(HERE / "claude_code.jsonl")
    s = loaded.session
    assert loaded.format == "claude-code"
    # only the torn last line (12) is a warning; the other skipped lines are by rule
    assert len(loaded.warnings) == 1 and loaded.warnings[0].startswith("line 12 does not parse")
    kinds = [e.message["role"] if isinstance(e, MessageEntry) else e.type for e in s.entries]
    # u1, a model_change before a1, a1, r1; sidechain s1, meta m1, attachment, queue-operation
    # and the compact_boundary are not imported; the summary cs1 is a user message; a2
    assert kinds == ["user", "model_change", "assistant", "toolResult", "user", "assistant"]
    a1 = s.entries[2].message
    assert [b["type"] for b in a1["content"]] == ["thinking", "text", "toolCall"]
    assert a1["content"][0]["thinkingSignature"] == "sig"
    assert a1["content"][2] == {"type": "toolCall", "id": "t1", "name": "Bash",
                                "arguments": {"command": "ls"}}
    assert a1["stopReason"] == "toolUse" and a1["usage"]["totalTokens"] == 20
    assert s.entries[1].data == {"model": "anthropic/claude-opus-4-7"}
    r1 = s.entries[3].message
    assert r1["toolName"] == "Bash" and r1["content"] == [{"type": "text", "text": "a.txt\nb.txt"}]
    # the boundary has no parent, so the summary starts the branch the agent resumes from
    branch = s.get_branch()
    assert [e.message["role"] for e in branch] == ["user", "assistant"]
    assert branch[0].message["content"].startswith("This session is being continued")
    assert branch[1].message["content"] == [{"type": "text", "text": "Continuing."}]


# ----------------------------------------------------------------------------- the real files


def _real(name: str) -> Path:
    path = REAL / name
    if not path.is_file():
        pytest.skip(f"{path} is absent (real sessions sit in ../shared/real-sessions)")
    return path


def _census(loaded):
    s = loaded.session
    kinds = Counter(type(e).__name__ for e in s.entries)
    roles = Counter(_roles(s.entries))
    calls = sum(1 for e in s.entries if isinstance(e, MessageEntry)
                and e.message["role"] == "assistant" for b in e.message.get("content") or []
                if isinstance(b, dict) and b.get("type") == "toolCall")
    return kinds, roles, calls


def test_real_pi_v1_before_compaction():
    loaded = read_session_file(_real("pi-mono__before-compaction.jsonl"))
    kinds, roles, calls = _census(loaded)
    assert loaded.format == "pi-v1" and loaded.warnings == ()
    # SOURCES.md: 990 messages (55/484/448/3), 2 compactions, 5 + 5 level/model changes, 454 calls
    assert roles == {"user": 55, "assistant": 484, "toolResult": 448, "bashExecution": 3}
    assert kinds[CompactionEntry.__name__] == 2 and kinds[MetadataEntry.__name__] == 10
    assert calls == 454
    s = loaded.session
    comps = [e for e in s.entries if isinstance(e, CompactionEntry)]
    # firstKeptEntryIndex 293/551 -> records 293/551 -> lines 294/552
    assert [s.source_lines[c.first_kept_entry_id] for c in comps] == [294, 552]
    assert [c.tokens_before for c in comps] == [175004, 185014]


def test_real_pi_v1_joined_line():
    loaded = read_session_file(_real("pi-mono__compact.jsonl"))
    kinds, roles, calls = _census(loaded)
    assert len(loaded.warnings) == 1 and loaded.warnings[0].startswith("line 1013 holds 2 JSON")
    # SOURCES.md: 1013 lines / 1014 records (header included), so 1011 messages once the
    # assistant message joined to the second compaction on line 1013 is read (its per-line tally
    # of 1010 messages / 503 assistant misses that one)
    assert sum(roles.values()) == 1011 and roles["assistant"] == 504
    assert kinds[CompactionEntry.__name__] == 2 and calls == 432


def test_real_pi_v3_kimchi():
    loaded = read_session_file(_real("kimchi-dev__session.jsonl"))
    kinds, roles, calls = _census(loaded)
    assert loaded.format == "pi-v3" and loaded.warnings == ()
    assert roles == {"user": 6, "assistant": 56, "toolResult": 60} and calls == 60
    assert kinds[CustomMessageEntry.__name__] == 12
    assert len(loaded.session.get_branch()) == 147


@pytest.mark.parametrize(("name", "broken", "messages"), [
    ("agent-complex-task__03-raddit-dashboard-pr__session.jsonl", 31, 536),
    ("agent-complex-task__04-awesome-agent-ide__session.jsonl", 44, 143),
])
def test_real_gjc_masked_line(name, broken, messages):
    loaded = read_session_file(_real(name))
    kinds, roles, _ = _census(loaded)
    assert sum(roles.values()) == messages
    assert sum(w.startswith(f"line {broken} does not parse") for w in loaded.warnings) == 1
    # the entry after the masked line names it as parent: the branch starts after it
    assert sum(w.startswith(f"line {broken + 1}: entry") for w in loaded.warnings) == 1
    first = loaded.session.get_branch()[0]
    assert loaded.session.source_lines[first.id] == broken + 1


def test_real_gjc_compaction_and_blob_image():
    loaded = read_session_file(_real("agent-complex-task__03-raddit-dashboard-pr__session.jsonl"))
    comp = [e for e in loaded.session.entries if isinstance(e, CompactionEntry)]
    assert len(comp) == 1 and comp[0].tokens_before == 372054
    assert sum(w.startswith("line 169: 1 image(s) stored as blob") for w in loaded.warnings) == 1


def test_real_claude_code():
    loaded = read_session_file(_real("posthog-impact-dashboard__claude-session.jsonl"))
    _, roles, calls = _census(loaded)
    assert loaded.format == "claude-code" and loaded.warnings == ()
    # SOURCES.md: 312 assistant, 224 user lines (133 of them tool results), 133 tool_use
    assert roles["assistant"] == 312 and roles["toolResult"] == 133
    assert roles["user"] == 224 - 133 and calls == 133
    branch = loaded.session.get_branch()
    assert branch[0].message["content"].startswith("This session is being continued")
