"""Commands that list what happened in the store: sessions and the operation log.

Both print aligned columns, one line per item, never wrapped (``output.plain.columns``); on a
terminal they fit its width, real session names too (``claude-code/<uuid>``, 48 characters,
shortened to the start of the id, as turns are: ``--session`` takes such a prefix).
"""

from __future__ import annotations

import click

from snapstore.adapters import agent_of
from snapstore.core.records import APPLIED, FAILED, PLANNED, Status
from snapstore.ops.gitshow import operation_lines, way_back
from snapstore.ops.history import Operation, SessionInfo

from ....operations.daemons import orphan_line, orphans
from ....output.plain import columns, iso, printable, say, short, terminal_width
from ....settings.environment import agent_homes
from ....settings.options import resolve_session
from ..app import common_options, emit, options

#: What ``ops`` says after an operation's action, by its status.
_NOTES: dict[Status, str] = {
    APPLIED: "",
    PLANNED: " (unfinished)",
    FAILED: " (failed: nothing moved)",
}


def session_json(info: SessionInfo) -> dict[str, object]:
    return {
        "session": info.name,
        "agent": agent_of(info.name),
        "agent_session": info.agent_session if agent_of(info.name) else "",
        "created": iso(info.created),
        "last_activity": iso(info.last_activity),
        "turns": info.turns,
        "all_turns": info.all_turns,
        "head": info.head,
        "head_n": info.head_n,
        "open_turn": info.open_turn,
        "running": info.running,
    }


@click.command()
@common_options
def sessions() -> None:
    """List the sessions, the most recently active first: agent, turns, head, running."""
    with options().open_store() as store:
        listed = store.sessions(homes=agent_homes())
        now = store.clock()
    for orphan in orphans():  # a person's note, beside the JSON too
        say(f"snapstore: note: {printable(orphan_line(orphan), quote=False)}")

    def human() -> None:
        from ....output.rich import relative_time

        if not listed:
            say("no sessions yet: this store has recorded nothing")
            return
        rows = [
            (
                printable(s.name),
                f"{s.turns}" + (f" ({s.all_turns} in all)" if s.all_turns != s.turns else ""),
                relative_time(s.last_activity, now),
                short(s.head, s.head_n),
                short(s.open_turn),
                "yes" if s.running else "no",
            )
            for s in listed
        ]
        header = ("session", "turns", "last active", "head", "open turn", "running")
        click.echo(columns(header, rows, terminal_width(), squeeze=0), nl=False)

    emit([session_json(s) for s in listed], human)


def operation_json(op: Operation) -> dict[str, object]:
    return {
        "id": op.id,
        "action": op.action,
        "session": op.session,
        "time": iso(op.time),
        "target": op.target,
        "target_n": op.target_n,
        "mode": op.mode,
        "status": op.status,
        "files": op.files,
        "conflicts": op.conflicts,
        "errors": op.errors,
        "new_head": op.new_head,
        "undoes": op.undoes,
        "undone_by": op.undone_by,
        "redoes": op.redoes,
        "redone_by": op.redone_by,
        "git": op.git,
    }


def _taken_back(op: Operation) -> str:
    """Which operation took ``op`` back: the undo of a rewind, the redo of an undo."""
    by = op.undone_by or op.redone_by
    return by[:8] if by else "-"


@click.command()
@common_options
def ops() -> None:
    """List every rewind, switch, undo and redo, newest first (with --session: that session's)."""
    opts = options()
    with opts.open_store() as store:
        named = opts.session and resolve_session(store, opts.session)
        listed = store.operations(named)
        now = store.clock()

    def human() -> None:
        from ....output.rich import relative_time

        if not listed:
            say("no rewind, switch or undo yet")
            return
        rows = [
            (
                op.id[:8],
                relative_time(op.time, now),
                op.action + (" (redo)" if op.redoes else "") + _NOTES[op.status],
                short(op.target),
                str(len(op.files)),
                str(len(op.conflicts) + len(op.errors)),
                _taken_back(op),
                printable(op.session),
            )
            for op in listed
        ]
        header = ("op", "when", "action", "target", "files", "left", "undone by", "session")
        click.echo(columns(header, rows, terminal_width(), squeeze=7), nl=False)
        for op in listed:  # what each did to the repository
            for _, text in operation_lines(op.git, way_back(op.action, op.new_head == op.id)):
                click.echo(f"{op.id[:8]}  git: {printable(text, quote=False)}")

    emit([operation_json(op) for op in listed], human)
