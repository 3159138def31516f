"""The one door to the moves: rewind, switch, undo, redo, finish and resume.

Every front end hands a :class:`~.requests.Move` to :func:`run` (with the store it holds) or
:func:`perform` (which opens it), and renders the :class:`~.outcome.Outcome` it gets back: the
Click commands, the fast path (``rewind TURN``, ``undo``, ``redo`` without Click), the picker,
the page's socket and ``snapstore mcp``. What a move needs from outside (each agent's home,
for the conversation half and its running check) comes from the :class:`~.context.Context`,
resolved once; which session a move is of, the turn an id names, and the notes a person is
told are decided here, so the same request gives the same answer through every door
(tests/e2e/test_doors.py runs one table of scenarios through each).

Light to load: the fast path imports it for ``rewind 50 --yes``, measured as a process
against ``git reset --hard`` (docs/benchmarks.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from snapstore import DEFAULT_SESSION, NotFound
from snapstore.core import faults
from snapstore.core.errors import UnknownOperation, UnknownTurn
from snapstore.ops.branches import MAX_NUMBER_DIGITS

from ..settings.options import choose_session, resolve_session
from . import runner
from .outcome import Outcome
from .requests import Move, check

if TYPE_CHECKING:
    from snapstore import Store
    from snapstore.ops.result import RewindResult

    from .context import Context


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


def perform(ctx: Context, move: Move) -> Outcome:
    """Open the store and :func:`run` the move (a command line's way)."""
    with ctx.open() as store:
        return run(store, ctx, move)


def run(store: Store, ctx: Context, move: Move) -> Outcome:
    """Make the move on ``store``; its outcome. A move first finishes any move a crash cut
    short (and notes it), as every command that writes does."""
    check(move)
    if move.action == "resume":
        return Outcome(move, None, resumed=store.resume())
    if move.session is not None:  # a prefix, as a table shows it, names its session
        move = move._replace(session=resolve_session(store, move.session))
    notes = runner.resume(store)
    result, note = _act(store, ctx, move)
    if note is not None:
        notes.append(note)
    return Outcome(move, result, notes)


def _act(store: Store, ctx: Context, move: Move) -> tuple[RewindResult, str | None]:
    """The move's result, and a note of the session the layer chose, if it chose one."""
    action, policy = move.action, move.on_conflict
    if action in ("undo", "redo"):
        require_turns(store, move.session or DEFAULT_SESSION, f"nothing to {action}")
        ref = None if move.target is None else _operation_of(store, move)
        if action == "undo":
            result = store.undo(
                ref,
                move.session,
                on_conflict=policy,
                dry_run=move.dry_run,
                homes=ctx.homes,
                mode=move.mode,
                inside=move.inside,
                git=move.git,
            )
            what = result.target
        else:
            what = _redone(store, ref, move.session)
            result = store.redo(
                ref,
                move.session,
                on_conflict=policy,
                dry_run=move.dry_run,
                homes=ctx.homes,
                git=move.git,
            )
        chose = move.session is None  # the store's newest: say which
        return result, f"{action}ing {what} of session {result.session}" if chose else None
    target = move.target or ""
    session, note = _session_of(store, move, target)
    if action == "finish":
        return store.finish(session, on_conflict=policy, dry_run=move.dry_run), note
    require_turns(store, session, f"nothing to {action}")
    expect = counted_from(store, move, session)
    faults.point("moves.counted")  # the target read, the library's write lock not taken yet
    if action == "switch":
        result = store.switch(
            target,
            session,
            on_conflict=policy,
            dry_run=move.dry_run,
            force=move.force,
            git=move.git,
            expect_head=expect,
        )
        return result, note
    result = store.rewind(
        target,
        session,
        mode=move.mode,
        on_conflict=policy,
        paths=list(move.paths) or None,
        dry_run=move.dry_run,
        force=move.force,
        homes=ctx.homes,
        inside=move.inside,
        git=move.git,
        expect_head=expect,
    )
    return result, note


def _redone(store: Store, ref: str | None, session: str | None) -> str:
    """What a redo does again, named as ``undo`` names what it takes back (an operation of
    ``ops``): the operation the undo took back, and the undo."""
    from snapstore.ops.branches import last_redoable, resolve_operation

    with store.repo.read() as v:
        undo = resolve_operation(v, ref) if ref is not None else last_redoable(v, session)
    if undo is None or undo.op is None:
        return "nothing"  # the redo refuses, and says why
    return f"{undo.op.undoes} (undone by {undo.id})"


def is_number(target: str | None) -> bool:
    """Whether a move's target is a turn number from ``log`` (counted from the head), not an
    id (as the library reads it: up to six digits)."""
    text = (target or "").strip()
    return text.isdigit() and len(text) <= MAX_NUMBER_DIGITS


def head_of(store: Store, session: str) -> str | None:
    """The session's head now: what a turn number counts from."""
    with store.repo.read() as v:
        return v.head(session)


def counted_from(store: Store, move: Move, session: str) -> str | None:
    """The head a rewind's or switch's turn number counts from: the one the door saw (the
    picker's list, the confirmation's plan), else the head now, read before the write lock;
    the library refuses the move once the head is another under the lock. None for an id."""
    if not is_number(move.target):
        return None
    return move.expect_head or head_of(store, session)


def as_seen(store: Store, move: Move) -> Move:
    """The move with the head its turn number counts from read now: a door that shows the
    plan and asks first (a confirmation, the picker's list) calls it before showing it, so
    that a head that moved while the user read is refused rather than followed."""
    if move.action not in ("rewind", "switch") or move.expect_head or not is_number(move.target):
        return move
    session, _ = _session_of(store, move, move.target or "")
    return move._replace(expect_head=head_of(store, session))


def _session_of(store: Store, move: Move, target: str) -> tuple[str, str | None]:
    """The session a rewind, switch or finish is of: the one named; for a turn id, the turn's
    own (refused when the user named another); else the one ``log`` would show."""
    if move.action != "finish" and not target.strip().isdigit() and store.latest_session():
        turn = store.resolve_turn(target, move.session or DEFAULT_SESSION)
        if move.session is not None and turn.session != move.session:
            raise UnknownTurn(
                f"turn {turn.id} is of session {turn.session}, not {move.session}",
                ref=target,
                session=move.session,
            )
        return turn.session, None
    return choose_session(store, move.session)


def _operation_of(store: Store, move: Move) -> str:
    """The operation an undo or redo names (an id or a unique prefix), refused when the user
    named a session it is not of."""
    assert move.target is not None
    op_id = store.resolve_operation(move.target)
    if move.session is not None:
        owner = store.resolve_turn(op_id, move.session).session
        if owner != move.session:
            raise UnknownOperation(
                f"operation {op_id} is of session {owner}, not {move.session}", ref=move.target
            )
    return op_id
