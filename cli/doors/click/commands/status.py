"""The status command: what the store holds."""

from __future__ import annotations

from dataclasses import asdict

import click

from ....operations.outcome import by_hand, finish_command
from ....output.plain import printable, reason
from ....settings.config import Config
from ....settings.values import format_size
from ..app import common_options, emit, options


@click.command()
@common_options
def status() -> None:
    """Show what the store holds and its size, the sessions, and the session's head."""
    opts = options()
    with opts.open_store() as store:
        session = opts.session_for(store)
        st = store.status(session)
        read_only = store.repo.read_only
        scan_mode = Config.load(store.store_dir).track_shell
        from ....operations.checks import hook_reports

        hooks = [
            f"{r['agent']}: {problem}"
            for r in hook_reports(store, st.root)
            for problem in r["problems"]
        ]
    finish, conflicts = None, []
    if st.left:
        failed = st.left["failed"]
        conflicts = [p for p in st.left["paths"] if p["path"] not in failed]
        finish = finish_command(session, conflicts, failed, st.left["marked"])
    data = {
        "root": st.root,
        "store": st.store,
        "sessions": st.sessions,
        "turns": st.turns,
        "open_turn": st.open_turn,
        "head": st.head,
        "blobs": st.blobs,
        "stored_bytes": st.stored_bytes,
        "logical_bytes": st.logical_bytes,
        "dedup_ratio": round(st.dedup_ratio, 3),
        "disk_bytes": st.disk_bytes,
        "read_only": read_only,
        "hook_problems": hooks,
        "unattributed": [asdict(item) for item in st.unattributed],
        "left": st.left and {**st.left, "finish": finish},
        "uncaptured": st.uncaptured,
    }

    def human() -> None:
        from rich.text import Text

        from ....output.rich import console

        out = console()
        out.print(f"workspace  {printable(st.root)}")
        out.print(f"store      {printable(st.store)}")
        if read_only:
            out.print(f"read-only  {printable(read_only, quote=False)}", style="yellow")
        out.print(
            f"size       {format_size(st.disk_bytes)} on disk; {format_size(st.stored_bytes)} "
            f"in {st.blobs} blob(s), compressed and deduplicated"
        )
        out.print(
            f"captured   {format_size(st.logical_bytes)} of file versions, by {st.turns} "
            f"turn(s) in {st.sessions} session(s)"
        )
        if scan_mode:  # why more may be stored than the turns captured
            out.print("baseline   stored too (scan mode): the workspace as the first scan found it")
        out.print(f"session    {printable(session)}")
        out.print(f"head       {st.head or '-'}, open turn {st.open_turn or '-'}")
        if st.unattributed:
            count = sum(len(item.paths) for item in st.unattributed)
            out.print(
                f"unattributed {count} change(s) seen while shell calls of several "
                "sessions ran at once (or one whose end never came): kept as yours, "
                "no rewind takes them back",
                style="yellow",
            )
            for item in st.unattributed:
                for path in item.paths:
                    sessions = ", ".join(printable(name) for name in item.sessions)
                    out.print(Text(f"  {printable(path)}  (turn {item.turn}; {sessions})"))
        if st.left:
            out.print(
                f"left       {len(st.left['paths'])} path(s) by {st.left['action']} "
                f"{st.left['operation']}",
                style="yellow",
            )
            if finish:
                out.print(Text(f"  finish with: {finish}"))
            else:
                out.print(Text(f"  for you: {by_hand(conflicts, st.left['marked'])}"))
            for left in st.left["paths"]:
                out.print(Text(f"  {printable(left['path'])}: {reason(left['reason'])}"))
        if st.uncaptured:
            out.print(
                f"uncaptured {len(st.uncaptured)} file(s) changed on this branch were never "
                "captured: no rewind can restore them",
                style="yellow",
            )
            for file in st.uncaptured:
                out.print(
                    Text(
                        f"  {printable(file['path'])}: {reason(file['reason'])}"
                        f"  (turn {file['turn']})"
                    )
                )
        if hooks:
            out.print(f"hooks      {len(hooks)} problem(s): see `snapstore doctor`")

    emit(data, human)
