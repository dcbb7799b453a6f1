"""Shake against the agent core (pi-agent-core 18.2.11 ``collectShakeRegions``/``applyShakeRegions``).

The reference's answers on the 240 sessions of ``tests/shake_corpus.py`` were recorded by
``scripts/record_shake_goldens.py`` (bun) into ``tests/golden/compaction/shake.json.gz``. Per
session and configuration: every region (entry, kind, block, UTF-16 offsets, tokens, label, text
length, a digest of a block's text) must be identical; under the aggressive preset the rewritten
contents (digest of their JSON), the ``prunedAt`` stamps and the tokens freed must be too.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from functools import cache
from typing import Any

import pytest
from locations import GOLDEN
from shake_corpus import SHAKE_SEEDS, shake_session

from snapcompact.compaction import (
    CustomMessageEntry,
    Entry,
    MessageEntry,
    entry_from_json,
)
from snapcompact.compaction.shake import (
    AGGRESSIVE_SHAKE_CONFIG,
    DEFAULT_SHAKE_CONFIG,
    RESCUE_SHAKE_CONFIG,
    ShakeConfig,
    ShakeRegion,
    collect_shake_regions,
    latest_compaction_boundary,
    scan_block_ranges,
)
from snapcompact.compaction.shake_write import (
    ShakeApplied,
    apply_shake_regions,
    format_shake_summary,
    shake_artifact_text,
    shake_placeholder,
)
from snapcompact.compaction.tokens import js_json, utf16_len

GOLDEN = GOLDEN / "compaction" / "shake.json.gz"
PRESETS = {"default": DEFAULT_SHAKE_CONFIG, "aggressive": AGGRESSIVE_SHAKE_CONFIG, "rescue": RESCUE_SHAKE_CONFIG}


@cache
def golden() -> dict[str, Any]:
    return json.loads(gzip.decompress(GOLDEN.read_bytes()))


@cache
def branch(seed: int) -> tuple[Entry, ...]:
    return tuple(entry_from_json(raw, f"seed {seed}") for raw in shake_session(seed))


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def config_for(spec: dict[str, Any], path: tuple[Entry, ...]) -> ShakeConfig:
    base = PRESETS[spec["preset"]]
    return ShakeConfig(**{**base.__dict__,
                          "keep_boundary_id": latest_compaction_boundary(path) if spec["boundary"] else None,
                          "fence_min_tokens": spec.get("fenceMinTokens", base.fence_min_tokens),
                          "protect_tokens": spec.get("protectTokens", base.protect_tokens)})


def row(region: ShakeRegion, path: tuple[Entry, ...]) -> list[Any]:
    """A region as the golden writes it (offsets converted to UTF-16 units)."""
    out: list[Any] = [region.entry_id, region.tokens, region.label, utf16_len(region.original_text)]
    if region.kind == "block":
        entry = next(e for e in path if e.id == region.entry_id)
        content = entry.content if isinstance(entry, CustomMessageEntry) else entry.message["content"]
        text = content if region.block_index == -1 else content[region.block_index]["text"]
        out += [_sha(region.original_text), region.block_index, utf16_len(text[:region.start]),
                utf16_len(text[:region.end])]
    return out


def _content(entry: Entry) -> Any:
    return entry.content if isinstance(entry, CustomMessageEntry) else entry.message["content"]


def test_regions_identical_to_the_agent_core():
    configs = golden()["meta"]["configs"]
    mismatches = []
    counts = dict.fromkeys(configs, 0)
    for seed in SHAKE_SEEDS:
        path = branch(seed)
        for name, spec in configs.items():
            ours = [row(r, path) for r in collect_shake_regions(path, config_for(spec, path))]
            ref = golden()["sessions"][str(seed)][name]["regions"]
            counts[name] += len(ref)
            if ours != ref:
                mismatches.append((seed, name))
    print(f"shake regions: {len(SHAKE_SEEDS) * len(configs) - len(mismatches)}/{len(SHAKE_SEEDS) * len(configs)} "
          f"session x config identical; reference regions per config {counts}")
    assert mismatches == []


def test_applied_shake_identical_to_the_agent_core():
    meta = golden()["meta"]
    spec = meta["configs"][meta["apply"]]
    for seed in SHAKE_SEEDS:
        path = branch(seed)
        regions = collect_shake_regions(path, config_for(spec, path))
        applied = apply_shake_regions(path, regions, [shake_placeholder(r, i, meta["artifact"])
                                                      for i, r in enumerate(regions)], now_ms=1)
        ref = golden()["sessions"][str(seed)][meta["apply"]]
        changed = []
        for entry in path:
            new = applied.replacements.get(entry.id)
            if new is not None and js_json(_content(new)) != js_json(_content(entry)):
                changed.append([entry.id, _sha(js_json(_content(new))),
                                isinstance(new, MessageEntry) and "prunedAt" in new.message])
        assert changed == ref["changed"], seed
        assert applied.tokens_freed == ref["tokensFreed"], seed


def test_the_corpus_exercises_every_rule():
    """Guard against a vacuous pass: both kinds, every block form, gates and protections occur."""
    sessions = golden()["sessions"].values()
    blocks = [r for s in sessions for r in s["aggressive"]["regions"] if len(r) > 4]
    assert len(blocks) >= 500 and any(r[5] == -1 for r in blocks) and any(r[5] > 0 for r in blocks)
    assert {r[2] for r in blocks} >= {"user", "developer", "assistant", "note"}
    assert sum(1 for s in sessions if not s["default"]["regions"]) >= 20  # below minSavings
    # The default preset at the boundary finds fewer regions than without it, the rescue preset more.
    total = {name: sum(len(s[name]["regions"]) for s in sessions) for name in golden()["meta"]["configs"]}
    assert total["default"] < total["default-no-boundary"] and total["aggressive"] < total["rescue"]
    texts = [t for seed in SHAKE_SEEDS[:60] for e in branch(seed) if isinstance(e, MessageEntry)
             for t in ([e.message.get("content")] if isinstance(e.message.get("content"), str) else
                       [b.get("text", "") for b in e.message.get("content") or () if isinstance(b, dict)])]
    joined = "\n".join(texts)
    assert "~~~" in joined and '<br class="x"/>' in joined and "</other>" in joined and "\n <" in joined


@pytest.mark.parametrize(("text", "expected"), [
    # A fence, from its opening line to its closing line (not the newline after it).
    ("a\n```py\nx\n```\nb", ["```py\nx\n```"]),
    # Tildes and indented fences count; an unterminated fence yields nothing.
    ("  ~~~\nx\n  ~~~", ["  ~~~\nx\n  ~~~"]),
    ("```\nnever closed", []),
    # A top-level element; nested elements are inside it (outermost kept).
    ("<doc a=\"1\">\n<item>\nx\n</item>\n</doc>", ["<doc a=\"1\">\n<item>\nx\n</item>\n</doc>"]),
    # An indented opening tag, an uppercase tag or a mismatched closing is not an element.
    (" <doc>\nx\n</doc>", []),
    ("<Doc>\nx\n</Doc>", []),
    ("<doc>\nx\n</other>", []),
    # XML is not looked for inside a fence; a closing tag may be indented.
    ("```\n<doc>\n</doc>\n```", ["```\n<doc>\n</doc>\n```"]),
    ("<doc>\nx\n   </doc>", ["<doc>\nx\n   </doc>"]),
    # Inline tags on one line are not elements; trailing text after a closing tag is not a close.
    ("<b>bold</b>", []),
    ("<doc>\nx\n</doc> tail", []),
])
def test_block_ranges_documented_forms(text, expected):
    assert [text[s:e] for s, e in scan_block_ranges(text)] == expected


def test_placeholders_and_artifact_follow_the_coding_agent():
    region = ShakeRegion("toolResult", "e1", 812, "body", "read")
    assert shake_placeholder(region, 0) == "[shaken ~812 tokens]"
    assert shake_placeholder(region, 2, "7") == "[shaken ~812 tokens \u2014 recover: artifact://7 (region 3)]"
    block = ShakeRegion("block", "e2", 400, "```\nx\n```", "assistant", 1, 3, 12)
    assert shake_artifact_text([region, block]) == (
        "### region 1 (read, ~812 tok)\n\nbody\n\n### region 2 (assistant, ~400 tok)\n\n```\nx\n```\n")
    assert format_shake_summary(ShakeApplied({}, 2, 1, 900)) == "Shook 2 tool results + 1 block (~900 tokens freed)."
    assert format_shake_summary(ShakeApplied({}, 1, 0, 5)) == "Shook 1 tool result (~5 tokens freed)."
    assert format_shake_summary(ShakeApplied({}, 0, 0, 0)) == "Nothing to shake."


def test_bad_config_is_one_clear_error():
    with pytest.raises(ValueError, match="shake protect_tokens must be a non-negative integer"):
        ShakeConfig(protect_tokens=-1)
    with pytest.raises(ValueError, match="2 shake regions but 1 replacements"):
        apply_shake_regions([], [ShakeRegion("toolResult", "a", 1, "x", "t")] * 2, ["p"], now_ms=0)
