"""Control code points with a meaning inside snapcompact text.

The serializer marks tool output with DIM_ON/DIM_OFF (zero-width, printed as nothing); the
normalizer turns every newline run into the full-block glyph, which the renderer paints as a
solid black cell so a reader still sees where lines broke after whitespace is collapsed.
"""

DIM_ON = "\x0e"
DIM_OFF = "\x0f"
NEWLINE_GLYPH = "\u2588"
