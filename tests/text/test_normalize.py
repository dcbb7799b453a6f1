"""Normalization parity with the reference (`@oh-my-pi/snapcompact` 18.2.11 on Bun 1.4.5).

The golden files in tests/golden/normalize/ hold the reference's own answers (regenerate with
make_golden.py there); the documented examples below come from the upstream test suite as listed
in the digest §(k).
"""

from __future__ import annotations

import hashlib
import json

import pytest
from locations import GOLDEN

from snapcompact.core import DIM_OFF, DIM_ON, NEWLINE_GLYPH, is_wide
from snapcompact.text import (
    STOPWORDS,
    Renderability,
    cjk_heavy,
    dim_stopwords,
    normalize,
    scan_renderability,
    strip_ansi,
    wrap,
)

GOLDEN = GOLDEN / "normalize"
FONTS = ("5x8", "6x12", "8x13", "8x8", "silver")
CASES = json.loads((GOLDEN / "cases.json").read_text())
CODESPACE = json.loads((GOLDEN / "codespace.json").read_text())


def _mismatches(pairs):
    return [
        (ascii(args)[:200], ascii(got)[:200], ascii(want)[:200])
        for args, got, want in pairs
        if got != want
    ]


# ---------------------------------------------------------------------------------------------
# Reference parity
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("font", FONTS)
def test_normalize_matches_reference(font):
    pairs = [
        (case["text"], normalize(case["text"], font), case["outputs"][case["fonts"][font][0]])
        for case in CASES["normalize"]
    ]
    assert _mismatches(pairs) == []


@pytest.mark.parametrize("font", FONTS)
def test_scan_renderability_matches_reference(font):
    pairs = []
    for case in CASES["normalize"]:
        _, ratio, safe = case["fonts"][font]
        scan = scan_renderability(case["text"], font)
        pairs.append((case["text"], (scan.ratio, scan.safe), (ratio, safe)))
    assert _mismatches(pairs) == []


def _codespace_chunk(lo: int, size: int) -> str:
    # Same construction as oracle.js: every code point between DIM_ON separators, then U+E000.
    return (
        DIM_ON + "".join(chr(cp) + DIM_ON for cp in range(lo, min(lo + size, 0x110000))) + "\ue000"
    )


def test_every_code_point_matches_reference_in_every_font():
    """All 1,114,112 code points (surrogates included), each decided in isolation, per font."""
    size = CODESPACE["chunk"]
    bad = []
    for i in range(len(CODESPACE["fonts"]["5x8"])):
        text = _codespace_chunk(i * size, size)
        for font in FONTS:
            digest, ratio = CODESPACE["fonts"][font][i]
            out = normalize(text, font)
            got_ratio = scan_renderability(text, font).ratio
            if hashlib.sha256(out.encode("utf-8")).hexdigest() != digest or got_ratio != ratio:
                bad.append((font, hex(i * size), got_ratio, ratio))
    assert bad == []


def test_strip_ansi_matches_bun():
    assert _mismatches((text, strip_ansi(text), want) for text, want in CASES["strip_ansi"]) == []


def test_dim_stopwords_matches_reference():
    assert (
        _mismatches((text, dim_stopwords(text), want) for text, want in CASES["dim_stopwords"])
        == []
    )


def test_wrap_matches_reference():
    pairs = ((tuple(case[:3]), wrap(*case[:3]), case[3]) for case in CASES["wrap"])
    assert _mismatches(pairs) == []


def test_silver_choice_rule_matches_reference_resolve_shape_for_text():
    """resolveShapeForText on an auto shape: silver iff unsafe-but-silver-safe or CJK-heavy."""
    default_font = CASES["resolve"]["default_font"]
    pairs = []
    for text, want in CASES["resolve"]["cases"]:
        if not scan_renderability(text, default_font).safe:
            got = "silver" if scan_renderability(text, "silver").safe else default_font
        elif cjk_heavy(text) and scan_renderability(text, "silver").safe:
            got = "silver"
        else:
            got = default_font
        pairs.append((text, got, want))
    assert _mismatches(pairs) == []


# ---------------------------------------------------------------------------------------------
# Documented upstream examples (digest §k)
# ---------------------------------------------------------------------------------------------


def test_scan_renderability_documented_cases():
    code = "def main():\n    return compute(x, y) + 1  # done\n"
    assert scan_renderability(code, "8x13") == Renderability(
        ratio=0.0, safe=True, graphic=42, fallback=0
    )
    assert scan_renderability("café résumé naïve", "8x13").ratio == 0
    cjk_code = "const 名前 = 'こんにちは';  // 你好世界"
    assert scan_renderability(cjk_code, "8x13").safe
    pua = scan_renderability("\ue000" * 10, "8x13")
    assert (pua.ratio, pua.safe, pua.fallback) == (1.0, False, 10)
    noisy = f"\x1b[31m\ue000\x1b[0m   \t\n {DIM_ON}ab{DIM_OFF} cdefghijklmnopqrs"
    assert (
        scan_renderability(noisy, "8x13").ratio
        == scan_renderability("\ue000 abcdefghijklmnopqrs", "8x13").ratio
    )


@pytest.mark.parametrize("font", FONTS)
@pytest.mark.parametrize(
    "text, expected",
    [
        ("a \t b   c", "a b c"),
        ("x \u2192 y \u2713 \u201cquoted\u201d \u2014 em\u2026", 'x -> y v "quoted" - em...'),
        ("caf\u00e9 gr\u00f6\u00dfe", "caf\u00e9 gr\u00f6\u00dfe"),
        ("box \u2502\u2500\u250c emoji \U0001f39e", "box |-+ emoji"),
        ("a\n\n\tb   c\r\nd", f"a{NEWLINE_GLYPH}b c{NEWLINE_GLYPH}d"),
        ("\n\nbody\n", "body"),
        (" \t\n\r\n  ", ""),
        (
            f"a\x1b[31mb\x1b[0mc\x00d\x07e\u200bf\ufeff\u0301{DIM_ON}g{DIM_OFF}",
            f"abcdef{DIM_ON}g{DIM_OFF}",
        ),
        (
            "\u3053\u3093\u306b\u3061\u306f \uc548\ub155\ud558\uc138\uc694",
            "\u3053\u3093\u306b\u3061\u306f \uc548\ub155\ud558\uc138\uc694",
        ),
        (
            "\u2705 pass \u26a0\ufe0f warn \u274c fail \U0001f604",
            "[OK] pass [WARN] warn [FAIL] fail",
        ),
        ("\u2717 \u2718", "x x"),
        ("x\u2075", "x5"),
        ("\uff28\uff25\uff2c\uff2c\uff2f", "HELLO"),
        ("\ufb01le", "file"),
        ("\u2460\u2461", "12"),
        ("\u216b", "XII"),
        ("\u2153", "1/3"),
        ("\U0001d407\U0001d41e\U0001d425\U0001d425\U0001d428", "Hello"),
        ("\u2122 \u2039q\u203a \u2032 \u2033 \u21d0 \u2191", "TM <q> ' \" <= ^"),
        ("emoji \U0001f39e \ue000", "emoji ?"),
    ],
)
def test_normalize_documented_examples(font, text, expected):
    assert normalize(text, font) == expected


def test_cjk_heavy_text_prefers_silver_and_survives_normalization():
    text = "这是一个测试。我们需要足够多的中文字符来触发规则。"
    for font in ("8x13", "silver"):
        assert scan_renderability(text, font).safe
        assert normalize(text, font) == text
    assert cjk_heavy(text)
    assert not cjk_heavy("function add(a, b) { return a + b; }\n" * 20)


def test_unrenderable_even_with_silver():
    scan = scan_renderability("\U00031350" * 12, "silver")
    assert (scan.ratio, scan.safe) == (1.0, False)


def test_dim_stopwords_documented_cases():
    assert dim_stopwords("the cat sat on a mat") == (
        f"{DIM_ON}the{DIM_OFF} cat sat {DIM_ON}on{DIM_OFF} {DIM_ON}a{DIM_OFF} mat"
    )
    assert dim_stopwords("The END") == f"{DIM_ON}The{DIM_OFF} END"
    assert dim_stopwords("theory") == "theory"
    spans = f"x {DIM_ON}the dim{DIM_OFF} y {DIM_ON}and open"
    assert dim_stopwords(spans) == f"x {DIM_ON}the dim{DIM_OFF} y {DIM_ON}and open"
    text = "it is the best of all, and so on"
    assert dim_stopwords(text).replace(DIM_ON, "").replace(DIM_OFF, "") == text
    assert len(STOPWORDS) == 70


def test_wrap_documented_cases():
    assert wrap("aa bb cc dd", 5) == ["aa bb", "cc dd"]
    assert wrap("aa bb cc", 4) == ["aa", "bb", "cc"]
    assert wrap("  lead\n\ttrail  ", 20) == ["lead trail"]
    assert wrap("abcdefghij", 4) == ["abcd", "efgh", "ij"]
    # The current line is flushed before a hard split; the remainder seeds the next line.
    assert wrap("ab abcdefghij c", 4) == ["ab", "abcd", "efgh", "ij c"]
    assert wrap("", 8) == []
    # Wide glyphs take two cells only when asked; dim toggles take none.
    assert wrap("你好世界", 4, True) == ["你好", "世界"]
    assert wrap("你好世界", 4) == ["你好世界"]
    assert wrap(f"{DIM_ON}the{DIM_OFF} cat", 7) == [f"{DIM_ON}the{DIM_OFF} cat"]


# ---------------------------------------------------------------------------------------------
# JavaScript string semantics and input checking
# ---------------------------------------------------------------------------------------------


def test_surrogate_code_points_behave_like_utf16():
    pair = "\ud83d\udd25"  # two code points in Python, one (🔥) in a JavaScript string
    assert normalize(pair) == "[HOT]"
    assert normalize(f"a\ud83d{DIM_ON}\udd25b") == f"a{DIM_ON}b"
    assert normalize("a\ud800b\udfffc") == "abc"


def test_is_wide_ranges():
    assert is_wide(0x4F60) and is_wide(0xAC00) and is_wide(0x3041) and is_wide(0x20000)
    assert (
        not is_wide(ord("a"))
        and not is_wide(0x303F)
        and not is_wide(0xD7A4)
        and not is_wide(0xFF61)
    )


@pytest.mark.parametrize(
    "call",
    [
        lambda: normalize("x", "9x9"),
        lambda: scan_renderability("x", "comic-sans"),
        lambda: normalize(b"bytes"),
        lambda: wrap("x", 0),
        lambda: dim_stopwords(None),
    ],
)
def test_bad_input_is_a_value_error(call):
    with pytest.raises(ValueError):
        call()
