"""JavaScript text semantics the reference runs on, for every stage that must match it.

Why here: the reference is TypeScript, so its whitespace class (``\\s``), string lengths (UTF-16
code units), ``slice`` and number formatting decide where text is trimmed, cut and printed.
Normalization, data-URL elision and serialization all need the same definitions; they live on
the lowest floor so that none of those modules has to import another for them.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal

#: ECMAScript ``\\s`` (WhiteSpace + LineTerminator), also what ``String.prototype.trim`` removes.
#: Unlike Python's ``\\s`` it excludes U+001C-001F and U+0085.
JS_WHITESPACE = (
    "\t\n\x0b\x0c\r \xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)
#: A regex character class matching one JavaScript whitespace character.
JS_WS = "[" + re.escape(JS_WHITESPACE) + "]"

_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


def utf16_len(text: str) -> int:
    """``text.length`` in JavaScript: astral characters count two code units."""
    if text.isascii():  # answered without a scan: one unit per character
        return len(text)
    return len(text) + len(_ASTRAL.findall(text))


def _to_integer_or_infinity(x: float) -> float:
    if math.isnan(x):
        return 0
    if math.isinf(x):
        return x
    return math.trunc(x)


def js_slice(text: str, start: float, end: float | None = None) -> str:
    """``String.prototype.slice`` over UTF-16 code units."""
    has_astral = not text.isascii() and _ASTRAL.search(text) is not None
    length = utf16_len(text) if has_astral else len(text)

    def clamp(pos: float) -> int:
        pos = _to_integer_or_infinity(pos)
        if pos < 0:
            return int(max(length + pos, 0))
        return int(min(pos, length))

    lo = clamp(start)
    hi = length if end is None else clamp(end)
    if lo >= hi:
        return ""
    if not has_astral:
        return text[lo:hi]
    units = text.encode("utf-16-le", "surrogatepass")
    return units[2 * lo : 2 * hi].decode("utf-16-le", "surrogatepass")


def js_round(x: float) -> float:
    """``Math.round``: nearest integer, halves towards +infinity."""
    if math.isnan(x) or math.isinf(x):
        return x
    floor = math.floor(x)
    return floor + 1 if x - floor >= 0.5 else floor


def js_number_to_string(x: float) -> str:
    """``Number.prototype.toString()`` (shortest round-trip digits, JS exponent rules)."""
    if isinstance(x, bool):
        raise ValueError("a boolean is not a number here")
    if isinstance(x, int):
        try:
            x = float(x)
        except OverflowError:
            x = math.inf if x > 0 else -math.inf
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "0"
    sign = "-" if x < 0 else ""
    _, digit_tuple, exponent = Decimal(repr(abs(x))).as_tuple()
    digits = "".join(map(str, digit_tuple)).rstrip("0")
    assert isinstance(exponent, int)
    exponent += len(digit_tuple) - len(digits)
    k = len(digits)
    n = exponent + k  # the value is 0.digits * 10**n
    if k <= n <= 21:
        body = digits + "0" * (n - k)
    elif 0 < n <= 21:
        body = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        body = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        mantissa = digits if k == 1 else digits[0] + "." + digits[1:]
        body = f"{mantissa}e{'+' if e >= 0 else '-'}{abs(e)}"
    return sign + body
