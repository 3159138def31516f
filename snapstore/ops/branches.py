"""Finding turns: a session's branch, a turn from its number or id, the operation an undo
or a redo takes back.

What rewind, switch, undo and redo need to name their target, apart from the reports of
``history`` (rewind points with their stats, status, operations, sessions): a rewind loads
this and not those.
"""

from __future__ import annotations

from ..core.errors import BadInput, UnknownOperation, UnknownTurn
from ..core.records import APPLIED, BRANCH_KINDS, REWIND, UNDO, Turn
from ..core.view import View

#: An argument of at most this many digits is a number from ``log``, not an id prefix.
MAX_NUMBER_DIGITS = 6


def ancestors(v: View, turn_id: str | None) -> list[Turn]:
    """A turn and its ancestors, newest first (a cycle in damaged records ends the walk)."""
    turns = []
    seen = set()
    while turn_id is not None and turn_id not in seen:
        seen.add(turn_id)
        turn = v.turn(turn_id)
        turns.append(turn)
        turn_id = turn.parent
    return turns


def branch(v: View, session: str) -> list[Turn]:
    """The session's current branch, from the head back to its first turn."""
    return ancestors(v, v.head(session))


def undoable(turn: Turn) -> bool:
    """Whether ``turn`` is a rewind or switch that was applied and not undone."""
    op = turn.op
    return (
        turn.kind == REWIND
        and op is not None
        and op.undoes is None
        and op.undone_by is None
        and op.status == APPLIED
    )


def redoable(turn: Turn) -> bool:
    """Whether ``turn`` is an undo that was applied and not redone."""
    op = turn.op
    return (
        op is not None
        and op.action == UNDO
        and op.undoes is not None
        and op.redone_by is None
        and op.status == APPLIED
    )


def last_redoable(v: View, session: str | None = None) -> Turn | None:
    """What a plain ``redo`` takes back: the newest undo, applied and not redone, in the
    whole store (or in ``session``)."""
    found = [t for t in v.turns() if redoable(t) and session in (None, t.session)]
    return max(found, key=lambda t: t.seq, default=None)


def leftover(v: View, session: str) -> Turn | None:
    """The session's last rewind, switch, undo or finish, when it left paths in conflict
    or failed, and nothing superseded it: it is not undone and the head is where it left
    it. ``finish`` retries those paths (``RewindOp.result``: ``conflicts`` and ``errors``)."""
    record = v.session(session)
    turn = v.find_turn(record.last_rewind) if record and record.last_rewind else None
    if turn is None or turn.op is None:
        return None
    op, result = turn.op, turn.op.result or {}
    if op.status != APPLIED or op.undone_by is not None or v.head(session) != op.new_head:
        return None
    if op.within is not None:  # its writes are a turn's changes: rewind that turn instead
        return None
    return turn if result.get("conflicts") or result.get("errors") else None


def last_undoable(v: View, session: str | None = None, made_inside: bool = False) -> Turn | None:
    """What a plain ``undo`` takes back: the newest rewind or switch, applied and not
    undone, in the whole store (or in ``session``); ``made_inside``: the newest made from
    inside one of the session's turns (``RewindOp.within``)."""
    newest = None
    for turn in v.turns():
        if (
            undoable(turn)
            and (session is None or turn.session == session)
            and (not made_inside or (turn.op is not None and turn.op.within is not None))
            and (newest is None or turn.seq > newest.seq)
        ):
            newest = turn
    return newest


def refuse_unchanged(turn: Turn, wanted: set[str], changed: set[str], which: str) -> None:
    """A path named for a turn (``diff TURN PATH``, ``rewind --path``) that ``which`` turns
    never changed is a mistake said, not an empty answer: BadInput naming them."""
    missing = sorted(wanted - changed)
    if missing:
        raise BadInput(f"{which} never changed {', '.join(missing)}", turn=turn.id, path=missing[0])


def number(v: View, turn: Turn) -> int | None:
    """A turn's number on its session's current branch (1 is the head); None off it."""
    on_branch = [t.id for t in branch(v, turn.session) if t.kind in BRANCH_KINDS]
    return on_branch.index(turn.id) + 1 if turn.id in on_branch else None


def resolve_turn(v: View, ref: str | int, session: str | None) -> Turn:
    """A turn from a number on ``session``'s current branch, or from an id or unique id
    prefix of a turn of any session (those of ``session`` first)."""
    text = str(ref).strip()
    if not text:
        raise BadInput("empty turn reference")
    if text.isdigit() and len(text) <= MAX_NUMBER_DIGITS:
        if session is None:
            raise BadInput(f"turn number {text} needs a session", ref=text)
        v.require_session(session)
        points = [t for t in branch(v, session) if t.kind in BRANCH_KINDS]
        n = int(text)
        if not 1 <= n <= len(points):
            raise UnknownTurn(
                f"no rewind point {n} in session {session!r} (it has {len(points)})",
                ref=text,
                session=session,
                count=len(points),
            )
        return points[n - 1]
    matches = [t for t in v.turns() if t.id.startswith(text)]
    matches = [t for t in matches if t.session == session] or matches
    if not matches:
        raise UnknownTurn(f"unknown turn {text!r}", ref=text, session=session)
    if len(matches) > 1:
        raise BadInput(
            f"turn prefix {text!r} is ambiguous: " + ", ".join(sorted(t.id for t in matches)[:5]),
            ref=text,
        )
    return matches[0]


def resolve_operation(v: View, ref: str) -> Turn:
    """A rewind, switch or undo record from its id or a unique prefix of it."""
    text = ref.strip()
    if not text:
        raise BadInput("empty operation reference")
    matches = sorted(t.id for t in v.turns() if t.op is not None and t.id.startswith(text))
    if not matches:
        raise UnknownOperation(f"unknown operation {text!r}", ref=text)
    if len(matches) > 1:
        raise BadInput(
            f"operation prefix {text!r} is ambiguous: " + ", ".join(matches[:5]), ref=text
        )
    return v.turn(matches[0])
