"""Commands that move between turns: rewind, switch, undo and redo.

Each builds a :class:`~snapstore_cli.operations.requests.Move` and hands it to the operation
layer, as every door does, and prints the outcome: the workspace's daemon makes it when one
runs (``doors.route``), this process otherwise. The picker and the confirmation prompt are
this process's; the move a person confirmed goes to the daemon too. What they print is plain
text (``output.results``): with ``--yes`` or ``--json`` they load no rich; only the picker
and its table do.
"""

from __future__ import annotations

import os
import sys
from typing import Literal

import click

from snapstore.core.records import BOTH, CODE, MODES, POLICIES, SKIP, Mode, Policy

from ....operations import runner
from ....operations.context import Context
from ....operations.moves import as_seen, is_new, perform
from ....operations.outcome import Outcome
from ....operations.requests import Move
from ....output import results
from ... import route
from ..app import (
    common_options,
    complete_operation,
    complete_turn,
    complete_undo,
    emit,
    options,
    print_start,
)


def _interactive() -> bool:
    return sys.stdin.isatty() and sys.stdout.isatty() and not options().json


def _diff_goes_with_dry_run(diffs: bool, dry_run: bool) -> None:
    if diffs and not dry_run:
        raise click.UsageError("--diff goes with --dry-run")


def _perform(request: Move, diffs: bool = False) -> tuple[Outcome, list[str]]:
    """The move's outcome, made by the workspace's daemon when one runs (with a dry run's
    ``diffs``), else here; and the notes of what the daemon did after it (its automatic gc)."""
    opts = options()
    routed = route.perform(opts, request, diffs)
    if routed is not None:
        return routed
    return perform(Context.of(opts), request), []


def _report(outcome: Outcome, after: list[str] | None = None, diffs: bool = False) -> None:
    """Print the outcome (and what came after it); exit 1 when it left (or, dry, would leave)
    anything undone."""
    code = results.report(outcome, options().json, diffs)
    for note in after or ():
        runner.tell(note)
    if code:
        sys.exit(code)


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
@click.option(
    "--diff", "diffs", is_flag=True, help="With --dry-run: each file's diff after the plan."
)
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
    diffs: bool,
    yes: bool,
    force: bool,
    resume: bool,
    finish: bool,
    no_git: bool,
) -> None:
    """Take back TURN and everything after it on the current branch.

    TURN is a number from `snapstore log` (1 is the newest) or a turn id.
    Without TURN: on a terminal, a picker to choose one; elsewhere, the numbered list.
    """
    _diff_goes_with_dry_run(diffs, dry_run)
    opts = options()
    ctx = Context.of(opts)
    absolute = tuple(os.path.join(os.getcwd(), p) for p in paths)
    request = Move(
        "rewind",
        turn,
        opts.session,
        mode,
        on_conflict,
        absolute,
        dry_run=dry_run,
        force=force,
        git=not no_git,
    )
    if resume or finish:
        if resume and finish:
            raise click.UsageError("--resume and --finish do not go together")
        action: Literal["resume", "finish"] = "resume" if resume else "finish"
        extra = turn is not None or paths or mode != BOTH
        if extra:
            raise click.UsageError(f"--{action} takes no TURN, --path or --mode")
        _report(*_perform(request._replace(action=action, target=None)))
        return
    if turn is None:
        with ctx.open() as store:
            session = opts.session_for(store)
            if is_new(store, session):  # the list of rewind points is empty
                emit([], lambda: print_start("Nothing to rewind: this store has no turns yet."))
                return
            from ...picker import choose

            picked = choose(store, ctx, request._replace(session=session), _interactive())
        if picked is not None:
            _report(picked)
        return
    if not (yes or dry_run) and _interactive():
        request = _confirm(ctx, request, "Rewind?")
    _report(*_perform(request, diffs), diffs=diffs)


def _confirm(ctx: Context, request: Move, question: str) -> Move:
    """Show the move's plan and ask; the move as it was shown (a turn number pinned to the
    turn and head it named: what the plan shows is what is confirmed)."""
    with ctx.open() as store:
        request = as_seen(store, request)
    preview = _perform(request._replace(dry_run=True))[0]
    assert preview.result is not None
    if request.action == "rewind":
        results.summary(preview.result, "rewind", turn=preview.turn, prompt=preview.prompt)
    else:
        results.summary(preview.result, request.action)
    click.confirm(question, abort=True)
    return request


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
@click.option(
    "--diff", "diffs", is_flag=True, help="With --dry-run: each file's diff after the plan."
)
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@click.option("--force", is_flag=True, help="Switch even while a turn is open (it is ended).")
@click.option(
    "--no-git", "no_git", is_flag=True, help="Leave the repository's HEAD, refs and index alone."
)
@common_options
def switch(
    turn: str,
    on_conflict: Policy,
    dry_run: bool,
    diffs: bool,
    yes: bool,
    force: bool,
    no_git: bool,
) -> None:
    """Make the workspace what it was right after TURN: back, forward, or on another branch.

    TURN is a number from `snapstore log` or the id of any turn, rewound ones included
    (`snapstore log --all`); an id needs no --session. Undo it with `snapstore undo`.
    """
    _diff_goes_with_dry_run(diffs, dry_run)
    opts = options()
    request = Move(
        "switch", turn, opts.session, on_conflict=on_conflict, force=force, git=not no_git
    )
    if not (yes or dry_run) and _interactive():
        request = _confirm(Context.of(opts), request, "Switch?")
    _report(*_perform(request._replace(dry_run=dry_run), diffs), diffs=diffs)


@click.command()
@click.argument("rewind_id", required=False, shell_complete=complete_operation)
@click.option(
    "--mode",
    type=click.Choice((BOTH, CODE)),
    default=BOTH,
    show_default=True,
    help="Put back files and conversation, or only the files (when the agent wrote to its "
    "chat since the rewind).",
)
@click.option("--on-conflict", type=click.Choice(POLICIES), default=SKIP, show_default=True)
@click.option("--dry-run", is_flag=True, help="Show what would change; write nothing.")
@click.option("--no-git", "no_git", is_flag=True, help="Leave the repository's refs alone.")
@click.option(
    "--diff", "diffs", is_flag=True, help="With --dry-run: each file's diff after the plan."
)
@common_options
def undo(
    rewind_id: str | None,
    mode: Mode,
    on_conflict: Policy,
    dry_run: bool,
    no_git: bool,
    diffs: bool,
) -> None:
    """Take back the last rewind or switch in the store (or REWIND_ID), whatever its session.

    With --session, the last one of that session. When turns came after it, the undo
    becomes a turn of its own on top of them, which `snapstore rewind` can take back.
    REWIND_ID is an id from `snapstore ops`, or a unique prefix of one.
    """
    _undo_or_redo("undo", rewind_id, on_conflict, dry_run, no_git, diffs, mode)


@click.command()
@click.argument("undo_id", required=False, shell_complete=complete_undo)
@click.option("--on-conflict", type=click.Choice(POLICIES), default=SKIP, show_default=True)
@click.option("--dry-run", is_flag=True, help="Show what would change; write nothing.")
@click.option("--no-git", "no_git", is_flag=True, help="Leave the repository's refs alone.")
@click.option(
    "--diff", "diffs", is_flag=True, help="With --dry-run: each file's diff after the plan."
)
@common_options
def redo(
    undo_id: str | None, on_conflict: Policy, dry_run: bool, no_git: bool, diffs: bool
) -> None:
    """Take back the last undo in the store (or UNDO_ID): do its rewind or switch again.

    With --session, the last undo of that session. The files are merged as for a rewind,
    and `snapstore undo` takes the redo back. Refused once turns came after the undo.
    UNDO_ID is an id from `snapstore ops`, or a unique prefix of one.
    """
    _undo_or_redo("redo", undo_id, on_conflict, dry_run, no_git, diffs)


def _undo_or_redo(
    verb: Literal["undo", "redo"],
    ref: str | None,
    on_conflict: Policy,
    dry_run: bool,
    no_git: bool,
    diffs: bool,
    mode: Mode = BOTH,
) -> None:
    _diff_goes_with_dry_run(diffs, dry_run)
    opts = options()
    request = Move(verb, ref, opts.session, mode, on_conflict, dry_run=dry_run, git=not no_git)
    _report(*_perform(request, diffs), diffs=diffs)
