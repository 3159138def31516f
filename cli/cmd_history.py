"""Commands that read history: log, show, diff."""

from __future__ import annotations

import os

import click

from snapstore.history import FileStat, RewindPoint

from .app import common_options, complete_turn, emit, options
from .render import console, diff_text, file_table, first_line, iso, points_table, stats_text


def points_json(points: list[RewindPoint]) -> list[dict[str, object]]:
    return [{"n": p.n, "turn": p.turn.id, "session": p.turn.session, "prompt": p.turn.prompt,
             "created": iso(p.turn.created), "state": p.turn.state, "files": len(p.files),
             "added": p.added, "removed": p.removed} for p in points]


@click.command()
@click.option("--all", "all_branches", is_flag=True, help="Include rewound branches, marked.")
@common_options
def log(all_branches: bool) -> None:
    """List rewind points, newest first, numbered for `snapstore rewind N`."""
    opts = options()
    with opts.open_store() as store:
        session = opts.session_for(store)
        points = store.rewind_points(session, all_branches)
        now = store.clock()
    data = points_json(points)

    def human() -> None:
        if not points:
            console(stderr=True).print(f"no turns yet in session {session}")
            return
        console().print(points_table(points, now))
    emit(data, human)


def _change_json(stat: FileStat) -> dict[str, object]:
    return {"path": stat.path, "status": stat.status, "added": stat.added,
            "removed": stat.removed, "tool": stat.tool, "source": stat.source}


@click.command()
@click.argument("turn", shell_complete=complete_turn)
@common_options
def show(turn: str) -> None:
    """Show one turn and the files it changed."""
    opts = options()
    with opts.open_store() as store:
        detail = store.show(turn, opts.session_for(store))
    t = detail.turn
    data = {"turn": t.id, "session": t.session, "prompt": t.prompt, "created": iso(t.created),
            "state": t.state, "parent": t.parent, "message_id": t.message_id,
            "changes": [_change_json(f) for f in detail.files]}

    def human() -> None:
        out = console()
        out.print(f"turn {t.id}  [{t.state}]  {iso(t.created)}  session {t.session}",
                  style="bold")
        out.print(first_line(t.prompt))
        added = sum(f.added for f in detail.files)
        removed = sum(f.removed for f in detail.files)
        out.print(stats_text(added, removed, len(detail.files)))
        if detail.files:
            out.print(file_table(detail.files))
    emit(data, human)


@click.command()
@click.argument("turn", shell_complete=complete_turn)
@click.argument("paths", nargs=-1)
@common_options
def diff(turn: str, paths: tuple[str, ...]) -> None:
    """Show a turn's changes as a unified diff (optionally only PATHS)."""
    opts = options()
    wanted = [os.path.join(os.getcwd(), p) for p in paths] or None
    with opts.open_store() as store:
        lines = store.diff(turn, opts.session_for(store), wanted)
    console().print(diff_text(lines), end="")
