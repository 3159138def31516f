"""Rendering for people: tables, results and diffs with rich.

Colour appears only on a terminal, and never when ``NO_COLOR`` is set (rich
honours both). Everything meant to be read by a program goes through ``--json``
instead.
"""

from __future__ import annotations

import datetime as dt
import os
import time
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:
    from snapstore.history import FileStat, RewindPoint
    from snapstore.plan import RewindResult


def console(stderr: bool = False) -> Console:
    """A console that prints text as it is: paths and prompts are never read as markup."""
    return Console(stderr=stderr, highlight=False, markup=False, soft_wrap=False,
                   no_color="NO_COLOR" in os.environ)


def iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return dt.datetime.fromtimestamp(ts, dt.timezone.utc).isoformat(timespec="seconds")


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


def points_table(points: list[RewindPoint], now: float | None = None) -> Table:
    """The numbered list of rewind points, newest first."""
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("turn", no_wrap=True, style="dim")
    table.add_column("when", no_wrap=True)
    table.add_column("prompt", ratio=1, no_wrap=True, overflow="ellipsis")
    table.add_column("state", no_wrap=True)
    table.add_column("changes", no_wrap=True)
    for point in points:
        turn = point.turn
        state = Text(turn.state, style="yellow" if turn.state == "rewound" else
                     "cyan" if turn.state == "open" else "")
        table.add_row(str(point.n) if point.n is not None else "-", turn.id[:8],
                      relative_time(turn.created, now), first_line(turn.prompt), state,
                      stats_text(point.added, point.removed, len(point.files)))
    return table


def file_table(files: list[FileStat]) -> Table:
    table = Table(box=None, pad_edge=False, show_edge=False, show_header=False)
    table.add_column("status", no_wrap=True)
    table.add_column("path", overflow="fold")
    table.add_column("lines", no_wrap=True)
    table.add_column("by", no_wrap=True, style="dim")
    colours = {"added": "green", "deleted": "red", "modified": "yellow"}
    for stat in files:
        lines = Text("binary", style="dim") if stat.binary else stats_text(stat.added, stat.removed)
        table.add_row(Text(stat.status, style=colours.get(stat.status, "")), stat.path,
                      lines, stat.tool or stat.source)
    return table


def diff_text(lines: list[str]) -> Text:
    """A unified diff coloured the git way."""
    text = Text()
    for line in lines:
        style = ""
        if line.startswith(("diff --git", "new file", "deleted file", "old mode", "new mode",
                            "index ", "Binary")) or line.startswith(("+++", "---")):
            style = "bold"
        elif line.startswith("@@"):
            style = "cyan"
        elif line.startswith("+"):
            style = "green"
        elif line.startswith("-"):
            style = "red"
        text.append(line.rstrip("\n") + "\n", style=style)
    return text


def result_summary(out: Console, result: RewindResult, verb: str) -> None:
    """What a rewind or undo restored, merged, deleted, left in conflict and failed."""
    prefix = "would be " if result.dry_run else ""
    groups = [("restored", result.restored, "green"), ("merged", result.merged, "cyan"),
              ("deleted", result.deleted, "red")]
    for name, paths, style in groups:
        for path in paths:
            out.print(Text.assemble((f"  {prefix}{name:<9}", style), f" {path}"))
    for item in result.conflicts:
        out.print(Text.assemble(("  conflict ", "bold yellow"), f" {item['path']}: ",
                                (item["reason"], "yellow")))
    for item in result.errors:
        out.print(Text.assemble(("  failed   ", "bold red"), f" {item['path']}: ",
                                (item["reason"], "red")))
    changed = len(result.restored) + len(result.merged) + len(result.deleted)
    if not (changed or result.conflicts or result.errors):
        out.print("  no files to change")
    head = result.new_head[:8] if result.new_head else "(start of the session)"
    if result.dry_run:
        out.print(f"dry run: nothing was written; the head would be {head}")
    else:
        out.print(f"{verb}: {changed} file(s) changed; head is now {head}")
        if result.undo_id and verb == "rewound":
            out.print(f"undo it with: snapstore undo {result.undo_id}", style="dim")
