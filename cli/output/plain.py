"""Text for people without rich: what the fast paths (hooks, capture commands) print.

Text from the store or the disk (file names, prompts, session and tool names,
reasons) passes through :func:`printable` before it reaches a terminal, so that a
name cannot clear the screen, forge a line or reorder what follows it. JSON keeps
the raw strings. ``rich`` re-exports it for the rich side.
"""

from __future__ import annotations

import functools
import json
import os
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any, TextIO

#: What a terminal acts on instead of showing: C0 and C1 controls and DEL, the line and
#: paragraph separators, the bidirectional controls that reorder what follows them
#: ("Trojan source"), and lone surrogates (a name's bytes that are not UTF-8). Every one of
#: them is outside ``str.isprintable``, which answers first for most text.
UNSAFE = "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]"
_NAMED = {"\a": "\\a", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\v": "\\v", "\f": "\\f", "\r": "\\r"}


@functools.cache
def unsafe() -> re.Pattern[str]:
    """:data:`UNSAFE`, compiled when first needed: compiling it costs about 1.5 ms, a
    twentieth of a hook's whole start-up."""
    return re.compile(UNSAFE)


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    # os.fsdecode keeps an undecodable byte b as the surrogate U+DC00 + b: show the byte.
    data = (
        bytes([code - 0xDC00])
        if 0xDC80 <= code <= 0xDCFF
        else char.encode("utf-8", "surrogatepass")
    )
    return "".join(f"\\{byte:03o}" for byte in data)


def reason(text: str) -> str:
    """A reason from the store (why a path was skipped, left or not captured) for people:
    :func:`printable`, with its sizes as people read them (``settings.values``)."""
    from ..settings.values import readable_sizes

    return printable(readable_sizes(text), quote=False)


def printable(text: str, quote: bool = True) -> str:
    """``text`` safe to show on a terminal.

    Text whose every character shows is returned as it is. Otherwise each character a
    terminal would act on becomes a C escape (``\\n``, ``\\t``, ``\\033`` for ESC, the
    octal UTF-8 bytes of a bidi control, the octal byte of an undecodable one), and the
    whole is quoted the way git's ``core.quotePath`` quotes a path, with ``\\`` and ``"``
    escaped too, so it reads back unambiguously: ``"bad\\033[2Jname\\n.txt"``. With
    ``quote=False`` (a sentence that holds a name) only the escapes are made, as ``ls -b``
    makes them.
    """
    if text.isprintable() or not unsafe().search(text):
        return text
    if not quote:
        return unsafe().sub(_escape, text)
    return '"' + unsafe().sub(_escape, text.replace("\\", "\\\\").replace('"', '\\"')) + '"'


#: ANSI codes for the styles the plain output uses (rich's names).
_STYLES = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "cyan": "36"}
Segment = tuple[str, str]  # (text, style): style is "" or space-separated names of _STYLES


def colour(stream: TextIO) -> bool:
    """Whether to style text on ``stream``: a terminal, and no ``NO_COLOR`` (as rich does)."""
    return "NO_COLOR" not in os.environ and stream.isatty()


def paint(segments: list[Segment] | tuple[Segment, ...], styled: bool) -> str:
    """The segments as one string, each styled with ANSI codes when ``styled``."""
    if not styled:
        return "".join(text for text, _ in segments)
    out = []
    for text, style in segments:
        if style and text:
            codes = ";".join(_STYLES[name] for name in style.split())
            out.append(f"\x1b[{codes}m{text}\x1b[0m")
        else:
            out.append(text)
    return "".join(out)


def reader_gone(exc: BaseException) -> bool:
    """Whether ``exc`` is the reader of stdout (or of stderr) going away, as ``| head`` does:
    a closed pipe. Then each stream whose reader is gone is pointed at the null device, so
    that nothing more reaches it and the flush at exit succeeds; the command ends quietly,
    as git does (docs/cli.md, "Output for people")."""
    if not isinstance(exc, BrokenPipeError):
        return False
    import select  # only here: the hook path never pays for it

    gone = []
    for fd in (1, 2):
        try:
            poller = select.poll()
            poller.register(fd, select.POLLOUT)
            events = poller.poll(0)
        except (OSError, ValueError):  # a closed descriptor
            continue
        if any(mask & (select.POLLERR | select.POLLHUP) for _, mask in events):
            gone.append(fd)
    if not gone:
        return False
    null = os.open(os.devnull, os.O_WRONLY)
    for fd in gone:
        os.dup2(null, fd)
    os.close(null)
    return True


def say(text: str, style: str = "", stream: TextIO | None = None) -> None:
    """Print one line for people, on stderr unless ``stream`` says otherwise (a note, a
    warning, progress); styled only on a terminal without NO_COLOR."""
    out = stream or sys.stderr
    out.write(paint(((text, style),), colour(out)) + "\n")


def tell(text: str, style: str = "") -> None:
    """Print one line of a command's result on stdout, as git does (docs/cli.md: results on
    stdout, notes and progress on stderr), so that ``snapstore fsck > report.txt`` holds it."""
    say(text, style, sys.stdout)


def iso(ts: float | None) -> str | None:
    """A time stamp in ISO 8601, UTC, to the second (what ``--json`` prints)."""
    if ts is None:
        return None
    import datetime as dt  # not at start-up: only the commands that print times need it

    return dt.datetime.fromtimestamp(ts, dt.timezone.utc).isoformat(timespec="seconds")


def terminal_width(stream: TextIO | None = None) -> int | None:
    """The width of the terminal ``stream`` (stdout) is, or None when it is none: output that
    goes to a pipe or a file is never cut to a width (docs/cli.md, "Output for people")."""
    out = stream or sys.stdout
    try:
        if not out.isatty():
            return None
    except ValueError:  # a closed stream
        return None
    import shutil  # only for a terminal

    return shutil.get_terminal_size().columns


#: The fewest characters of an agent's session id a table keeps (``claude-code/7c1e``).
MIN_ID = 4


#: The characters of an agent's session id a table keeps when the whole does not fit, as a
#: turn's id is shown by its first 8 (a uuid's first group).
SHORT_ID = 8


def fit_session(name: str, room: int) -> str:
    """A session name in at most ``room`` characters, when it can be: an agent's session
    (``claude-code/<uuid>``, 48 characters) keeps its agent and the start of its id, 8
    characters (fewer when there is no room, never fewer than :data:`MIN_ID`), as a turn keeps
    the start of its id (``--session`` takes such a prefix); another name its start."""
    if len(name) <= room:
        return name
    agent, slash, rest = name.partition("/")
    if not slash or not rest:
        return name[: max(room, MIN_ID)]
    keep = max(min(room - len(agent) - 1, SHORT_ID), MIN_ID)
    return f"{agent}/{rest[:keep].rstrip('-')}"


def columns(
    header: tuple[str, ...],
    rows: Sequence[tuple[str, ...]],
    width: int | None = None,
    squeeze: int | None = None,
) -> str:
    """Rows as left-aligned columns under ``header``, two spaces apart, one line each (never
    wrapped: a line stays one line for grep). Given the terminal's ``width``, the session
    names of column ``squeeze`` are shortened (:func:`fit_session`) so that the rows fit it."""
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    if width is not None and squeeze is not None:
        room = width - (sum(widths) - widths[squeeze]) - 2 * (len(header) - 1)
        if widths[squeeze] > room:
            rows = [
                tuple(fit_session(c, room) if i == squeeze else c for i, c in enumerate(row))
                for row in rows
            ]
            widths[squeeze] = max(len(row[squeeze]) for row in [header, *rows])
    return "".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        + "\n"
        for row in [header, *rows]
    )


def short(turn_id: str | None, n: int | None = None) -> str:
    """A turn as people see it: its number on the branch, if it has one, and its short id."""
    if turn_id is None:
        return "-"
    return f"{n} {turn_id[:8]}" if n is not None else turn_id[:8]


def emit(as_json: bool, data: Any, human: Callable[[], None]) -> None:
    """Print ``data`` as one JSON document on stdout with ``--json``, else call ``human``."""
    if as_json:
        sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")
    else:
        human()
