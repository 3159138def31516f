"""Numbers and sizes as people type them, read and printed the same way by every front end:
the options (``doors.click.params``), the environment (``environment``) and the settings file
(``config``). Each says in one line which option, variable or key it read, and what it takes.
"""

from __future__ import annotations

import re

from snapstore import BadInput

_INF = float("inf")  # not math's: the hook path does not load math


_UNITS = {
    "": 1,
    "b": 1,
    "k": 1024,
    "kb": 1024,
    "kib": 1024,
    "m": 1024**2,
    "mb": 1024**2,
    "mib": 1024**2,
    "g": 1024**3,
    "gb": 1024**3,
    "gib": 1024**3,
}


def parse_size(text: str, name: str = "a size") -> int:
    """'10MiB', '512k', '2G' or a plain number of bytes; ``name`` is what the error names (the
    option, the variable or the settings file's key)."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text)
    if not match or match.group(2).lower() not in _UNITS:
        raise BadInput(f"{name} takes a size such as 500MiB, 2GiB or 4096 (bytes), not {text!r}")
    return int(float(match.group(1)) * _UNITS[match.group(2).lower()])


def parse_number(
    text: str, name: str, takes: str, *, whole: bool = False, low: float = 0, high: float = _INF
) -> float:
    """A finite number from ``low`` to ``high`` (a whole one with ``whole``); else one line
    naming ``name`` and saying what it ``takes`` ("a number of days"), never Python's words
    about floats."""
    try:
        value = int(text) if whole else float(text)
    except ValueError:
        value = _INF  # refused below
    if not low <= value <= high or value == _INF:  # a NaN fails the comparison
        bound = f"{low:g} or more" if high == _INF else f"from {low:g} to {high:g}"
        raise BadInput(f"{name} takes {takes}, {bound}, not {text!r}")
    return value


#: A limit as the library states it, in bytes: "larger than the size cap (1073741824 bytes)".
_BYTES = re.compile(r"\((\d+) bytes\)")


def readable_sizes(text: str) -> str:
    """``text`` (a reason, an error) with each size the library gives in bytes written as
    people read it: "larger than the size cap (1.0 GiB)"."""
    return _BYTES.sub(lambda m: f"({format_size(int(m.group(1)))})", text)


def format_size(n: int) -> str:
    """A size for people: '512 B', '16.0 KiB', '12.3 MiB', '2.0 GiB'."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")
