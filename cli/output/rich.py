"""Rendering for people: tables, results and diffs with rich.

Colour appears only on a terminal, and never when ``NO_COLOR`` is set (rich
honours both). Everything meant to be read by a program goes through ``--json``
instead.

Text from the store or the disk (file names, prompts, session and tool names,
reasons) passes through :func:`~snapstore_cli.output.plain.printable` before it reaches a
terminal (``text`` holds it, without rich, for the fast paths). JSON keeps the raw
strings.
"""

from __future__ import annotations

import datetime as dt
import errno
import os
import time
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table
from rich.text import Text

from snapstore.core.records import OPEN, REWOUND

from .plain import paint as paint_segments
from .plain import printable

if TYPE_CHECKING:
    from snapstore.ops.history import FileStat, RewindPoint


#: The width of a console that is not a terminal: wide enough that no line is ever wrapped.
UNWRAPPED = 1 << 16


class _Console(Console):
    """rich's console, but a reader that goes away is the command frame's to end (quietly,
    exit 0: ``operations.runner``), not rich's (exit 1)."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError(errno.EPIPE, "the reader went away")


def console(stderr: bool = False) -> Console:
    """A console that prints text as it is: paths and prompts are never read as markup. Off a
    terminal (a pipe, a file, a CI log) nothing is wrapped, whatever ``COLUMNS`` says: a line
    of output stays one line, for grep and for programs that read it."""
    out = _Console(
        stderr=stderr,
        highlight=False,
        markup=False,
        soft_wrap=False,
        no_color="NO_COLOR" in os.environ,
    )
    if not out.is_terminal:
        out.soft_wrap = True
        out.width = UNWRAPPED
    return out


def relative_time(ts: float, now: float | None = None) -> str:
    """'just now', '5 min ago', '3 h ago', '2 days ago' (then the date)."""
    delta = max(0.0, (time.time() if now is None else now) - ts)
    if delta < 45:
        return "just now"
    if delta < 3600:
        return f"{round(delta / 60)} min ago"
    if delta < 86400:
        return f"{round(delta / 3600)} h ago"
    if delta < 7 * 86400:
        days = round(delta / 86400)
        return f"{days} day{'s' if days > 1 else ''} ago"
    return dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d")


def first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line or "(no prompt)"


def stats_text(added: int, removed: int, files: int | None = None) -> Text:
    text = Text()
    if files is not None:
        text.append(f"{files} file{'s' if files != 1 else ''} ")
    text.append(f"+{added}", style="green")
    text.append(" ")
    text.append(f"-{removed}", style="red")
    return text


def points_table(
    points: list[RewindPoint],
    now: float | None = None,
    width: int | None = None,
    colour: bool = False,
) -> str:
    """The numbered list of rewind points, newest first, as aligned columns of text.

    Plain text with ANSI colours (when ``colour``), not a rich Table: a session
    of a thousand turns is written in milliseconds instead of most of a second.
    The prompt takes what is left of ``width``, cut with an ellipsis.
    """

    def paint(text: str, style: str) -> str:
        return paint_segments(((text, style),), colour)

    rows = []
    for point in points:
        turn = point.turn
        count = len(point.files)
        rows.append(
            (
                str(point.n) if point.n is not None else "-",
                turn.id[:8],
                relative_time(turn.created, now),
                printable(first_line(turn.prompt)),
                turn.state,
                f"{count} file{'s' if count != 1 else ''}",
                f"+{point.added}",
                f"-{point.removed}",
            )
        )
    header = ("#", "turn", "when", "prompt", "state", "changes")
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(5)]
    fixed = sum(widths) - widths[3] + 5 + max(len(f"{r[5]} {r[6]} {r[7]}") for r in rows)
    widths[3] = max(10, min(widths[3], (width or 120) - fixed))
    lines = [
        paint(
            f"{header[0]:>{widths[0]}} {header[1]:<{widths[1]}} {header[2]:<{widths[2]}} "
            f"{header[3]:<{widths[3]}} {header[4]:<{widths[4]}} {header[5]}",
            "bold",
        )
    ]
    colours = {REWOUND: "yellow", OPEN: "cyan"}
    for n, turn_id, when, prompt, state, files, added, removed in rows:
        if len(prompt) > widths[3]:
            prompt = prompt[: widths[3] - 1] + "…"
        lines.append(
            f"{n:>{widths[0]}} {paint(f'{turn_id:<{widths[1]}}', 'dim')} "
            f"{when:<{widths[2]}} {prompt:<{widths[3]}} "
            f"{paint(f'{state:<{widths[4]}}', colours.get(state, ''))} {files} "
            f"{paint(added, 'green')} {paint(removed, 'red')}"
        )
    return "\n".join(lines) + "\n"


def file_table(files: list[FileStat]) -> Table:
    table = Table(box=None, pad_edge=False, show_edge=False, show_header=False)
    table.add_column("status", no_wrap=True)
    table.add_column("path", overflow="fold")
    table.add_column("lines", no_wrap=True)
    table.add_column("by", no_wrap=True, style="dim")
    colours = {"added": "green", "deleted": "red", "modified": "yellow"}
    for stat in files:
        lines = Text("binary", style="dim") if stat.binary else stats_text(stat.added, stat.removed)
        table.add_row(
            Text(stat.status, style=colours.get(stat.status, "")),
            printable(stat.path),
            lines,
            printable(stat.tool or stat.source),
        )
    return table
