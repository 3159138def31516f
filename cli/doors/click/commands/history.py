"""Commands that read history: log, show, diff, cat.

rich draws the tables of ``log`` and ``show`` for people, so it loads only there:
``--json`` and ``diff`` print without it.
"""

from __future__ import annotations

import base64
import contextlib
import os
import sys

import click

from snapstore import BadInput, Store
from snapstore.core.records import Big, Entry
from snapstore.ops.diffs import FileDiff
from snapstore.ops.history import FileStat

from ....operations.moves import is_new, require_turns
from ....operations.reads import inside_json, inside_words, points_json, skipped_json
from ....output import results
from ....output.plain import iso, printable, reason
from ..app import common_options, complete_turn, emit, options, print_start


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
        from ....output.rich import console, points_table

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
                for move in p.inside:
                    out.print(f"turn {p.n or p.turn.id[:8]} {inside_words(move)}")
                if p.git:
                    out.print(
                        f"turn {p.turn.id[:8]}, git: {printable('; '.join(p.git), quote=False)}"
                    )
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
        "n": detail.n,
        "session": t.session,
        "prompt": t.prompt,
        "created": iso(t.created),
        "state": t.state,
        "parent": t.parent,
        "message_id": t.message_id,
        "changes": [_change_json(f) for f in detail.files],
        "skipped": skipped_json(t),
        **({"inside": [inside_json(m) for m in detail.inside]} if detail.inside else {}),
        "git": detail.git,
        "git_note": t.git_note or None,
    }

    def human() -> None:
        from ....output.rich import console, file_table, first_line, stats_text

        out = console()
        number = f"{detail.n} " if detail.n is not None else ""
        out.print(f"turn {number}{t.id}  [{t.state}]  {iso(t.created)}", style="bold")
        out.print(f"session {printable(t.session)}")  # its own line: 48 characters for an agent's
        out.print(printable(first_line(t.prompt)))
        added = sum(f.added for f in detail.files)
        removed = sum(f.removed for f in detail.files)
        out.print(stats_text(added, removed, len(detail.files)))
        for move in detail.inside:
            out.print(f"turn {detail.n or t.id[:8]} {inside_words(move)}")
        if detail.files:
            out.print(file_table(detail.files))
        for said in detail.git:
            out.print(f"  git  {printable(said, quote=False)}")
        if t.git_note:
            out.print(f"  git not recorded: {printable(t.git_note, quote=False)}", style="yellow")
        for item in skipped_json(t):
            out.print(
                f"  not captured  {printable(item['path'])}: "
                f"{reason(item['reason'])}; no rewind can restore it",
                style="yellow",
            )

    emit(data, human)


def _files_json(files: list[FileDiff]) -> list[dict[str, object]]:
    return [
        {
            **_change_json(stat),
            "binary": stat.binary,
            "diff": "".join(line + "\n" for line in lines),
        }
        for stat, lines in files
    ]


@click.command()
@click.argument("turn", metavar="TURN|A..B", shell_complete=complete_turn)
@click.argument("paths", nargs=-1)
@click.option("--worktree", is_flag=True, help="From the state right after TURN to the files now.")
@common_options
def diff(turn: str, paths: tuple[str, ...], worktree: bool) -> None:
    """Show a turn's changes as a unified diff (optionally only PATHS).

    A..B: the net change from the state right after turn A to the state right after
    turn B, on one branch or two. --worktree: from the state right after TURN to the
    files now, whoever edited them, for every file its session recorded (or PATHS).
    """
    opts = options()
    wanted = [os.path.join(os.getcwd(), p) for p in paths] or None
    start, dots, end = turn.partition("..")
    if dots and not (start.strip() and end.strip()):
        raise BadInput(f"a range is two turns, A..B, not {turn!r}")
    if dots and worktree:
        raise BadInput("--worktree takes one turn, not a range")
    with opts.open_store() as store:
        session = opts.session_for(store)
        require_turns(store, session, f"no turn {turn} to diff")
        if dots:
            found = store.range_diff(start, end, session, wanted)
            files = found.files
            data: dict[str, object] = {
                "from": found.start.id,
                "to": found.end.id,
                "session": session,
                "turns": [t.id for t in found.turns],
                "files": _files_json(files),
            }
        else:
            if worktree:
                t, files = store.worktree_diff(turn, session, wanted)
            else:
                t, files = store.diffs(turn, session, wanted)
            data = {"turn": t.id, "session": t.session, "files": _files_json(files)}
            if worktree:
                data["worktree"] = True

    def human() -> None:
        for stat, lines in files:
            results.diff(stat.path, lines)

    emit(data, human)


@click.command()
@click.argument("turn", shell_complete=complete_turn)
@click.argument("path")
@click.option("--before", is_flag=True, help="The file as TURN found it, before its writes.")
@common_options
def cat(turn: str, path: str, before: bool) -> None:
    """Print a file as TURN left it (--before: as TURN found it), its exact bytes.

    A file TURN did not change is printed as the latest turn before it on its branch
    left it; a symlink prints its target.
    """
    opts = options()
    with opts.open_store() as store:
        session = opts.session_for(store)
        require_turns(store, session, f"no turn {turn} to read")
        turn_id = store.resolve_turn(turn, session).id
        rel = store.ws.relpath(os.path.join(os.getcwd(), path))
        entry = store.cat(turn_id, rel, session, before=before)
        _print_entry(store, entry, turn_id, rel, before, opts.json)


def _print_entry(
    store: Store, entry: Entry, turn_id: str, rel: str, before: bool, as_json: bool
) -> None:
    """``cat``'s output: the exact bytes (a big file's streamed chunk by chunk), or JSON."""
    data, big = (b"", entry.data) if isinstance(entry.data, Big) else (entry.data, None)
    if as_json:
        text: str | None = None
        if big is None:
            with contextlib.suppress(UnicodeDecodeError):
                text = data.decode()
        emit(
            {
                "turn": turn_id,
                "path": rel,
                "before": before,
                "kind": entry.kind,
                "mode": entry.mode,
                "size": big.size if big else len(data),
                "text": text,  # a big file's bytes are never put in JSON: print them plain
                "base64": None if big else base64.b64encode(data).decode(),
            },
            lambda: None,
        )
        return
    for piece in store.pieces(big.key) if big else (data,):
        sys.stdout.buffer.write(piece)
    sys.stdout.flush()
