"""ANSI escape stripping exactly as ``Bun.stripANSI`` does it.

Why exact: terminal output is the bulk of coding-agent history; which bytes of an escape sequence
survive decides the printed characters and so the page breaks of every frame after it.
"""

from __future__ import annotations

import re

# ---------------------------------------------------------------------------------------------
# ANSI escape stripping (Bun.stripANSI)
# ---------------------------------------------------------------------------------------------

# Characters that may start an escape sequence (plus C1 ST, which Bun's scanner also stops at and
# then leaves literal because it starts nothing).
_ESCAPE_START = re.compile("[\x1b\x90\x98\x9b\x9c\x9d\x9e\x9f]")
# A CSI ends at its final byte (0x40-0x7E) or is aborted by ESC, CAN, SUB or C1 ST.
_CSI_END = re.compile("[\x40-\x7e\x1b\x18\x1a\x9c]")
# OSC payload ends at BEL or ST (C1 ST, or ESC \\); other strings only at ST; CAN/SUB abort both.
_OSC_END = re.compile("[\x07\x9c\x1b\x18\x1a]")
_STRING_END = re.compile("[\x9c\x1b\x18\x1a]")

(_GROUND, _GOT_ESC, _SKIP_ONE, _CSI, _OSC, _OSC_GOT_ESC, _STRING, _STRING_GOT_ESC) = range(8)


def _consume_escapes(text: str, start: int) -> int:
    """End of the chain of escape sequences starting at ``start`` (``start`` itself: none).

    A negative result ``-j`` means the chain ended by swallowing only the high surrogate of the
    astral character at ``j - 1``: its low surrogate is kept, then text resumes at ``j``.

    Mirrors the VT500-style state machine of ``Bun.stripANSI`` (Bun 1.4): ``ESC [`` / C1 CSI up to
    a final byte; ``ESC ]`` / C1 OSC up to BEL or ST; ``ESC P X ^ _`` / C1 DCS SOS PM APC up to ST;
    ``ESC`` + intermediate (0x20-0x2F) + one more character; ``ESC`` + a final byte (0x30-0x7E).
    ESC inside a sequence aborts it and starts a new one; CAN, SUB and C1 ST abort to ground and
    are swallowed; an unterminated sequence runs to the end of the text.  ESC followed by anything
    else (a control, non-ASCII) removes just the ESC.
    """
    end = len(text)
    state = _GROUND
    i = start
    while i < end:
        c = text[i]
        if state == _GROUND:
            if c == "\x1b":
                state = _GOT_ESC
            elif c == "\x9b":
                state = _CSI
            elif c == "\x9d":
                state = _OSC
            elif c in "\x90\x98\x9e\x9f":
                state = _STRING
            else:
                return i
            i += 1
            continue
        if state == _OSC_GOT_ESC or state == _STRING_GOT_ESC:
            if c == "\\":
                state = _GROUND
                i += 1
                continue
            state = _GOT_ESC  # the ESC aborted the string and introduces a new sequence
        if state == _GOT_ESC:
            if c == "\x1b":
                pass
            elif c == "[":
                state = _CSI
            elif c == "]":
                state = _OSC
            elif c in "PX^_":
                state = _STRING
            elif c in "\x18\x1a\x9c" or "\x30" <= c <= "\x7e":
                state = _GROUND
            elif "\x20" <= c <= "\x2f":
                state = _SKIP_ONE
            else:
                return i
        elif state == _SKIP_ONE:
            if c > "\uffff":
                # Bun skips one UTF-16 unit: the high surrogate goes, the low one stays as text
                # and ends the chain.
                return -(i + 1)
            state = _GOT_ESC if c == "\x1b" else _GROUND
        else:  # _CSI, _OSC, _STRING: jump to the byte that ends or aborts the payload
            pattern = _CSI_END if state == _CSI else _OSC_END if state == _OSC else _STRING_END
            found = pattern.search(text, i)
            if found is None:
                return end
            i = found.start()
            if text[i] == "\x1b":
                state = (
                    _GOT_ESC
                    if state == _CSI
                    else _OSC_GOT_ESC
                    if state == _OSC
                    else _STRING_GOT_ESC
                )
            else:
                state = _GROUND
        i += 1
    return end


def strip_ansi(text: str) -> str:
    """Remove ANSI escape sequences as ``Bun.stripANSI`` does (text without any is unchanged)."""
    found = _ESCAPE_START.search(text)
    if found is None:
        return text
    pieces: list[str] = []
    pos = 0
    while found is not None:
        at = found.start()
        pieces.append(text[pos:at])
        after = _consume_escapes(text, at)
        if after == at:
            pieces.append(text[at])
            pos = at + 1
        elif after < 0:
            pos = -after
            pieces.append(chr(0xDC00 + ((ord(text[pos - 1]) - 0x10000) & 0x3FF)))
        else:
            pos = after
        found = _ESCAPE_START.search(text, pos)
    pieces.append(text[pos:])
    return "".join(pieces)
