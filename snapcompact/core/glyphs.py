"""Control code points with a meaning inside snapcompact text.

The serializer marks tool output with DIM_ON/DIM_OFF (zero-width, printed as nothing); the
normalizer turns every newline run into the full-block glyph, which the renderer paints as a
solid black cell so a reader still sees where lines broke after whitespace is collapsed.
"""

DIM_ON = "\x0e"
DIM_OFF = "\x0f"
NEWLINE_GLYPH = "\u2588"

#: East Asian wide / fullwidth ranges (inclusive): two cells in bitmap shapes, one in Silver.
WIDE_RANGES: tuple[tuple[int, int], ...] = (
    (0x1100, 0x115F), (0x2E80, 0x2EFF), (0x2F00, 0x2FDF), (0x3000, 0x303E), (0x3041, 0x33FF),
    (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xA000, 0xA4CF), (0xAC00, 0xD7A3), (0xF900, 0xFAFF),
    (0xFE30, 0xFE4F), (0xFF00, 0xFF60), (0xFFE0, 0xFFE6), (0x20000, 0x2FFFD), (0x30000, 0x3FFFD),
)


def is_wide(cp: int) -> bool:
    """True when code point ``cp`` takes two cells in a bitmap (non-Silver) shape."""
    if cp < 0x1100:
        return False
    return any(lo <= cp <= hi for lo, hi in WIDE_RANGES)
