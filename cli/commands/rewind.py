"""Commands that move between turns: rewind, switch, undo and redo.

What they print is plain text (``results``): with ``--yes`` or ``--json`` they load
no rich; only the picker and its table do.
"""

from __future__ import annotations

import sys
from typing import Literal

import click

from snapstore.core.records import BOTH, MODES, POLICIES, SKIP, SWITCH, Mode, Policy
from snapstore.ops.plan import RewindResult

from .. import moves
from ..app import (
    common_options,
    complete_operation,
    complete_turn,
    complete_undo,
    emit,
    open_for_write,
    options,
    print_start,
)
from ..output import results
from ..output.plain import say


def _interactive() -> bool:
    return sys.stdin.isatty() and sys.stdout.isatty() and not options().json


def _report(
    result: RewindResult, verb: str, on_conflict: Policy = SKIP, turn: str | None = None
) -> None:
    """Print the result; exit 1 when it left (or, dry, would leave) anything undone."""
    moves.report(options(), result, verb, on_conflict, turn)


@click.command()
@click.argument("turn", required=False, shell_complete=complete_turn)
@click.option(
    "--mode",
    type=click.Choice(MODES),
    default=BOTH,
    show_default=True,
    help="Take back files and conversation, only code, or only the conversation.",
)
@click.option(
    "--on-conflict",
    type=click.Choice(POLICIES),
    default=SKIP,
    show_default=True,
    help="skip: leave the file alone; markers: write conflict markers; "
    "theirs: force the version from before the turn.",
)
@click.option(
    "--path",
    "paths",
    multiple=True,
    metavar="P",
    help="Take back only this file (repeatable); the head stays.",
)
@click.option("--dry-run", is_flag=True, help="Show what would change; write nothing.")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@click.option("--force", is_flag=True, help="Rewind even while a turn is open (it is ended).")
@click.option("--resume", is_flag=True, help="Finish a rewind that was interrupted.")
@click.option(
    "--no-git", "no_git", is_flag=True, help="Leave the repository's HEAD, refs and index alone."
)
@click.option(
    "--finish",
    "finish",
    is_flag=True,
    help="Retry what the last rewind, switch or undo left in conflict or failed to write, "
    "with --on-conflict (see `snapstore status`).",
)
@common_options
def rewind(
    turn: str | None,
    mode: Mode,
    on_conflict: Policy,
    paths: tuple[str, ...],
    dry_run: bool,
    yes: bool,
    force: bool,
    resume: bool,
    finish: bool,
    no_git: bool,
) -> None:
    """Take back TURN and everything after it on the current branch.

    TURN is a number from `snapstore log` (1 is the newest) or a turn id.
    Without TURN, list the rewind points.
    """
    opts = options()
    if resume:
        with opts.open_store() as store:
            done = store.resume()

        def human() -> None:
            for r in done:
                results.summary(r, "resumed")
            if not done:
                say("no interrupted rewind to resume")

        emit([r.to_json() for r in done], human)
        return
    if finish:
        if turn is not None or paths or mode != BOTH:
            raise click.UsageError("--finish takes no TURN, --path or --mode")
        with open_for_write() as store:
            session = opts.session_for(store)
            result = store.finish(session, on_conflict=on_conflict, dry_run=dry_run)
        _report(result, "finished", on_conflict)
        return
    shown = turn  # the turn as the user knows it, for the conversation's lines
    with open_for_write() as store:
        session = opts.session_for(store)
        if turn is None and moves.is_new(store, session):  # the list of rewind points is empty
            emit([], lambda: print_start("Nothing to rewind: this store has no turns yet."))
            return
        if turn is None:
            moves.require_turns(store, session, "nothing to rewind")
            from ..picker import choose

            turn, choice = choose(store, session, mode, _interactive(), force)
            if turn is None:
                return
            if choice == SWITCH:  # a turn taken back earlier: the picker confirmed the switch
                result = store.switch(turn, on_conflict=on_conflict, force=force, git=not no_git)
                _report(result, "switched", on_conflict)
                return
            mode = choice
            yes = yes or _interactive()  # the picker has confirmed already
            shown = next(
                (str(p.n) for p in store.rewind_points(session) if p.turn.id == turn), turn
            )
        if not (yes or dry_run) and _interactive():
            preview = moves.rewind(
                opts,
                store,
                turn,
                mode=mode,
                on_conflict=on_conflict,
                paths=paths,
                dry_run=True,
                force=force,
                git=not no_git,
            )
            results.summary(preview, "rewind", turn=shown)
            click.confirm("Rewind?", abort=True)
        result = moves.rewind(
            opts,
            store,
            turn,
            mode=mode,
            on_conflict=on_conflict,
            paths=paths,
            dry_run=dry_run,
            force=force,
            git=not no_git,
        )
    _report(result, "rewound", on_conflict, shown)


@click.command()
@click.argument("turn", shell_complete=complete_turn)
@click.option(
    "--on-conflict",
    type=click.Choice(POLICIES),
    default=SKIP,
    show_default=True,
    help="skip: leave the file alone; markers: write conflict markers; "
    "theirs: force the turn's version.",
)
@click.option("--dry-run", is_flag=True, help="Show what would change; write nothing.")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@click.option("--force", is_flag=True, help="Switch even while a turn is open (it is ended).")
@click.option(
    "--no-git", "no_git", is_flag=True, help="Leave the repository's HEAD, refs and index alone."
)
@common_options
def switch(
    turn: str, on_conflict: Policy, dry_run: bool, yes: bool, force: bool, no_git: bool
) -> None:
    """Make the workspace what it was right after TURN: back, forward, or on another branch.

    TURN is a number from `snapstore log` or the id of any turn, rewound ones included
    (`snapstore log --all`); an id needs no --session. Undo it with `snapstore undo`.
    """
    opts = options()
    with open_for_write() as store:
        session = opts.session  # an id names its own session; a number needs one
        if session is None and turn.strip().isdigit():
            session = opts.session_for(store)
        if not (yes or dry_run) and _interactive():
            preview = store.switch(
                turn, session, on_conflict=on_conflict, dry_run=True, force=force, git=not no_git
            )
            results.summary(preview, "switch")
            click.confirm("Switch?", abort=True)
        result = store.switch(
            turn, session, on_conflict=on_conflict, dry_run=dry_run, force=force, git=not no_git
        )
    _report(result, "switched", on_conflict)


@click.command()
@click.argument("rewind_id", required=False, shell_complete=complete_operation)
@click.option("--on-conflict", type=click.Choice(POLICIES), default=SKIP, show_default=True)
@click.option("--dry-run", is_flag=True, help="Show what would change; write nothing.")
@click.option("--no-git", "no_git", is_flag=True, help="Leave the repository's refs alone.")
@common_options
def undo(rewind_id: str | None, on_conflict: Policy, dry_run: bool, no_git: bool) -> None:
    """Take back the last rewind or switch in the store (or REWIND_ID), whatever its session.

    With --session, the last one of that session. When turns came after it, the undo
    becomes a turn of its own on top of them, which `snapstore rewind` can take back.
    REWIND_ID is an id from `snapstore ops`, or a unique prefix of one.
    """
    _undo_or_redo("undo", rewind_id, on_conflict, dry_run, no_git)


@click.command()
@click.argument("undo_id", required=False, shell_complete=complete_undo)
@click.option("--on-conflict", type=click.Choice(POLICIES), default=SKIP, show_default=True)
@click.option("--dry-run", is_flag=True, help="Show what would change; write nothing.")
@click.option("--no-git", "no_git", is_flag=True, help="Leave the repository's refs alone.")
@common_options
def redo(undo_id: str | None, on_conflict: Policy, dry_run: bool, no_git: bool) -> None:
    """Take back the last undo in the store (or UNDO_ID): do its rewind or switch again.

    With --session, the last undo of that session. The files are merged as for a rewind,
    and `snapstore undo` takes the redo back. Refused once turns came after the undo.
    UNDO_ID is an id from `snapstore ops`, or a unique prefix of one.
    """
    _undo_or_redo("redo", undo_id, on_conflict, dry_run, no_git)


def _undo_or_redo(
    verb: Literal["undo", "redo"], ref: str | None, on_conflict: Policy, dry_run: bool, no_git: bool
) -> None:
    moves.undo_or_redo(options(), verb, ref, on_conflict, dry_run, git=not no_git)
