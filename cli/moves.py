"""``rewind TURN``, ``undo`` and ``redo`` without Click or rich: the bodies both front ends run.

A rewind is what a person waits for when an agent went wrong, and a program (an agent's
wrapper, a script) starts it as a process, so the process is what counts: docs/benchmarks.md
measures ``rewind 50 --yes`` against ``git reset --hard``. The Click commands
(``commands.rewind``) call these functions, and so does the fast path (``fast``) when the
command line holds only what it reads exactly as Click would; the picker, the confirmation
prompt, ``--path``, ``--resume`` and ``--finish`` stay Click's. Output is plain text
(``output.results``) or one JSON document, byte for byte the same on both paths.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from snapstore import DEFAULT_SESSION, NotFound
from snapstore.core.records import BOTH, SKIP, Mode, Policy

from . import runner
from .settings import Options, agent_homes

if TYPE_CHECKING:
    from snapstore import Store
    from snapstore.ops.plan import RewindResult


def start_hint() -> str:
    """How to start recording, for a store that has no turns yet."""
    from snapstore.adapters import AGENT_NAMES

    return (
        "install your agent's hooks in this project: `snapstore hook install AGENT`, AGENT "
        "one of " + ", ".join(AGENT_NAMES)
    )


def is_new(store: Store, session: str) -> bool:
    """Whether ``session`` has no record because the store has recorded no turn at all."""
    return not store.has_session(session) and store.latest_session() is None


def require_turns(store: Store, session: str, nothing: str) -> None:
    """Refuse a command that acts on a turn in a store that has none yet (exit 4, not found:
    there is nothing to act on), saying ``nothing`` and how to start."""
    if is_new(store, session):
        raise NotFound(
            f"{nothing}: this store has no turns yet; to record them, {start_hint()}",
            session=session,
        )


def emit(opts: Options, data: Any, human: Callable[[], None]) -> None:
    """Print ``data`` as one JSON document on stdout with ``--json``, else call ``human``."""
    if opts.json:
        sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")
    else:
        human()


def report(
    opts: Options,
    result: RewindResult,
    verb: str,
    on_conflict: Policy = SKIP,
    turn: str | None = None,
) -> None:
    """Print the result; exit 1 when it left (or, dry, would leave) anything undone."""
    from .output import results

    data = result.to_json()
    finish = None
    if result.left and not result.dry_run:
        finish = data["finish"] = results.finish_command(result.session, on_conflict)

    def human() -> None:
        if result.dry_run:
            from snapstore.ops.diffs import entry_diff

            for plan in result.plans:
                if plan.writes:
                    results.diff(plan.path, entry_diff(plan.path, plan.current_entry, plan.content))
        results.summary(result, verb, turn=turn, finish=finish)

    emit(opts, data, human)
    if not result.ok:
        sys.exit(1)


def rewind(
    opts: Options,
    store: Store,
    turn: str,
    *,
    mode: Mode = BOTH,
    on_conflict: Policy = SKIP,
    paths: tuple[str, ...] = (),
    dry_run: bool = False,
    force: bool = False,
    git: bool = True,
) -> RewindResult:
    """Rewind ``turn`` (a number from `snapstore log`, or an id) of the command's session;
    the repository too, unless ``git`` is false (``--no-git``)."""
    session = opts.session_for(store)
    require_turns(store, session, "nothing to rewind")
    return store.rewind(
        turn,
        session,
        mode=mode,
        on_conflict=on_conflict,
        paths=[os.path.join(os.getcwd(), p) for p in paths] or None,
        dry_run=dry_run,
        force=force,
        homes=agent_homes(),
        git=git,
    )


def rewind_turn(
    opts: Options,
    turn: str,
    mode: Mode,
    on_conflict: Policy,
    dry_run: bool,
    force: bool,
    git: bool = True,
) -> None:
    """``snapstore rewind TURN --yes`` (or without a terminal to ask on): rewind and report."""
    with runner.open_for_write(opts) as store:
        result = rewind(
            opts,
            store,
            turn,
            mode=mode,
            on_conflict=on_conflict,
            dry_run=dry_run,
            force=force,
            git=git,
        )
    report(opts, result, "rewound", on_conflict, turn)


def undo_or_redo(
    opts: Options,
    verb: Literal["undo", "redo"],
    ref: str | None,
    on_conflict: Policy,
    dry_run: bool,
    git: bool = True,
) -> None:
    """Take back (or do again) the newest operation, of --session if given, or ``ref``: an
    operation id from `snapstore ops`, or a unique prefix of one (the refs it moved too,
    unless ``git`` is false)."""
    with runner.open_for_write(opts) as store:
        require_turns(store, opts.session or DEFAULT_SESSION, f"nothing to {verb}")
        if ref is not None:
            ref = store.resolve_operation(ref)
        act = store.undo if verb == "undo" else store.redo
        result = act(
            ref,
            opts.session,
            on_conflict=on_conflict,
            dry_run=dry_run,
            homes=agent_homes(),
            git=git,
        )
    if opts.session is None:  # the store chose: say which (stderr, beside any JSON)
        sys.stderr.write(f"snapstore: {verb}ing {result.target} of session {result.session}\n")
    report(opts, result, f"{verb}ne", on_conflict)
