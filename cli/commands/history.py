"""Commands that read history: log, show, diff.

rich draws the tables of ``log`` and ``show`` for people, so it loads only there:
``--json`` and ``diff`` print without it.
"""

from __future__ import annotations

import os

import click

from snapstore.core.records import Turn
from snapstore.ops.history import FileStat, RewindPoint

from ..app import common_options, complete_turn, emit, is_new, options, print_start, require_turns
from ..output import results
from ..output.plain import iso, printable


def points_json(points: list[RewindPoint]) -> list[dict[str, object]]:
    return [
        {
            "n": p.n,
            "turn": p.turn.id,
            "session": p.turn.session,
            "prompt": p.turn.prompt,
            "created": iso(p.turn.created),
            "state": p.turn.state,
            "files": len(p.files),
            "added": p.added,
            "removed": p.removed,
            "skipped": _skipped_json(p.turn),
        }
        for p in points
    ]


def _skipped_json(turn: Turn) -> list[dict[str, str]]:
    """The files the turn changed that were never captured (scan mode), and why."""
    return [{"path": path, "reason": reason} for path, reason in turn.skipped or ()]


@click.command()
@click.option("--all", "all_branches", is_flag=True, help="Include rewound branches, marked.")
@common_options
def log(all_branches: bool) -> None:
    """List rewind points, newest first, numbered for `snapstore rewind N`."""
    opts = options()
    with opts.open_store() as store:
        session = opts.session_for(store)
        new = is_new(store, session)
        points = [] if new else store.rewind_points(session, all_branches)
        now = store.clock()
    data = points_json(points)

    def human() -> None:
        from ..output.rich import console, points_table

        if new:
            print_start("No turns yet: this store has recorded nothing.")
        elif not points:
            console(stderr=True).print(
                f"no rewind points on the current branch of session "
                f"{printable(session)} (see `snapstore log --all`)"
            )
        else:
            out = console()
            out.file.write(points_table(points, now, out.width, out.color_system is not None))
            for p in points:
                if p.turn.skipped:
                    out.print(
                        f"turn {p.turn.id[:8]}: {len(p.turn.skipped)} file(s) never captured, "
                        f"no rewind can restore them (see `snapstore show {p.turn.id[:8]}`)",
                        style="yellow",
                    )

    emit(data, human)


def _change_json(stat: FileStat) -> dict[str, object]:
    return {
        "path": stat.path,
        "status": stat.status,
        "added": stat.added,
        "removed": stat.removed,
        "tool": stat.tool,
        "source": stat.source,
    }


@click.command()
@click.argument("turn", shell_complete=complete_turn)
@common_options
def show(turn: str) -> None:
    """Show one turn and the files it changed."""
    opts = options()
    with opts.open_store() as store:
        session = opts.session_for(store)
        require_turns(store, session, f"no turn {turn} to show")
        detail = store.show(turn, session)
    t = detail.turn
    data = {
        "turn": t.id,
        "session": t.session,
        "prompt": t.prompt,
        "created": iso(t.created),
        "state": t.state,
        "parent": t.parent,
        "message_id": t.message_id,
        "changes": [_change_json(f) for f in detail.files],
        "skipped": _skipped_json(t),
    }

    def human() -> None:
        from ..output.rich import console, file_table, first_line, stats_text

        out = console()
        out.print(
            f"turn {t.id}  [{t.state}]  {iso(t.created)}  session {printable(t.session)}",
            style="bold",
        )
        out.print(printable(first_line(t.prompt)))
        added = sum(f.added for f in detail.files)
        removed = sum(f.removed for f in detail.files)
        out.print(stats_text(added, removed, len(detail.files)))
        if detail.files:
            out.print(file_table(detail.files))
        for item in _skipped_json(t):
            out.print(
                f"  not captured  {printable(item['path'])}: "
                f"{printable(item['reason'], quote=False)}; no rewind can restore it",
                style="yellow",
            )

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
        session = opts.session_for(store)
        require_turns(store, session, f"no turn {turn} to diff")
        t, files = store.diffs(turn, session, wanted)
    data = {
        "turn": t.id,
        "session": t.session,
        "files": [
            {
                **_change_json(stat),
                "binary": stat.binary,
                "diff": "".join(line + "\n" for line in lines),
            }
            for stat, lines in files
        ],
    }

    def human() -> None:
        for stat, lines in files:
            results.diff(stat.path, lines)

    emit(data, human)
