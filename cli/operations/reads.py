"""Reading a session's history for a door: its rewind points, a turn's diff, a file as a turn
left it, each bounded in size.

``log --json`` and ``snapstore mcp``'s list_turns give the same points (:func:`points_json`);
the MCP door asks for the rest here rather than of the Store, so that a door reads as it moves:
through the operation layer. What comes back is data (and text already cut to the size asked
for, saying so); each door words it for its own reader.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, NamedTuple

from snapstore.core.records import Big, Turn

from ..output.plain import iso

if TYPE_CHECKING:
    from snapstore import Store
    from snapstore.ops.diffs import FileDiff
    from snapstore.ops.history import InsideMove, RewindPoint


def points_json(points: list[RewindPoint]) -> list[dict[str, object]]:
    """Rewind points as ``log --json`` gives them."""
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
            "skipped": skipped_json(p.turn),
            "git": p.git,
            **({"inside": [inside_json(m) for m in p.inside]} if p.inside else {}),
        }
        for p in points
    ]


def skipped_json(turn: Turn) -> list[dict[str, str]]:
    """The files the turn changed that were never captured (scan mode), and why."""
    return [{"path": path, "reason": reason} for path, reason in turn.skipped or ()]


def inside_json(move: InsideMove) -> dict[str, Any]:
    """A move the agent made from inside a turn, as JSON: the operation, what it took back,
    and the sentence ``log`` and ``show`` print."""
    return {
        "operation": move.id,
        "action": move.action,
        "turns": [t.id for t in move.turns],
        "numbers": move.numbers,
        "undoes": move.undoes,
        "text": inside_words(move),
    }


def _numbers(numbers: Iterable[int | None]) -> str:
    """Turn numbers as a reader says them: "turn 3", "turns 2-3" (with an en dash)."""
    known = sorted(n for n in numbers if n is not None)
    if not known:
        return "turns no longer on the branch"
    if len(known) == 1:
        return f"turn {known[0]}"
    if known == list(range(known[0], known[-1] + 1)):
        return f"turns {known[0]}{DASH}{known[-1]}"
    return "turns " + ", ".join(map(str, known))


def inside_words(move: InsideMove) -> str:
    """ "took back turns 2-3 at the agent's request", numbered as ``log`` numbers them now."""
    what = "its own changes before it" if move.own else _numbers(move.numbers)
    if move.action == "undo":
        return f"put back what it had taken back ({what}) at the agent's request"
    return f"took back {what} at the agent's request"


#: Between the first and the last number of a run of turns, as print has it.
DASH = "\u2013"


class Cut(NamedTuple):
    """Text cut to a size: the text, and how many characters of it were left out."""

    text: str
    left_out: int

    @classmethod
    def of(cls, text: str, limit: int) -> Cut:
        if len(text) <= limit:
            return cls(text, 0)
        return cls(text[:limit], len(text) - limit)


def diff_text(files: list[FileDiff]) -> str:
    """Files' unified diffs as one text, as ``snapstore diff`` prints them without colour."""
    return "".join(
        line if line.endswith("\n") else line + "\n" for _, lines in files for line in lines
    )


class Diff(NamedTuple):
    """A turn's diff, or a range's, with the turns it spans and its stats."""

    turns: list[Turn]  # the turn, or the turns from A (exclusive) to B
    files: list[FileDiff]
    text: Cut


def turn_diff(store: Store, session: str, spec: str, paths: list[str] | None, limit: int) -> Diff:
    """``spec`` is a turn (a number or an id) or a range ``A..B`` of ``session``; its diff cut
    to ``limit`` characters."""
    start, dots, end = spec.partition("..")
    if dots:
        first, last = own_turn(store, session, start), own_turn(store, session, end)
        found = store.range_diff(first.id, last.id, session, paths)
        return Diff(found.turns, found.files, Cut.of(diff_text(found.files), limit))
    turn, files = store.diffs(own_turn(store, session, spec).id, session, paths)
    return Diff([turn], files, Cut.of(diff_text(files), limit))


def own_turn(store: Store, session: str, ref: str) -> Turn:
    """A turn of ``session`` from a number or an id; an id of another session's turn is
    refused as unknown, as a door confined to its session must refuse it."""
    turn = store.resolve_turn(ref.strip(), session)
    if turn.session != session:
        from snapstore.core.errors import UnknownTurn

        raise UnknownTurn(f"no turn {ref.strip()!r} in this session", ref=ref, session=session)
    return turn


class FileAt(NamedTuple):
    """A file as a turn left it (or found it): text cut to a size, or why there is none."""

    turn: Turn
    path: str
    kind: str  # file or link
    mode: int
    size: int
    binary: bool
    text: Cut | None  # None for a binary or big file


def file_at(store: Store, session: str, ref: str, rel: str, before: bool, limit: int) -> FileAt:
    """``rel`` (a workspace path) as turn ``ref`` of ``session`` left it, or found it."""
    turn = own_turn(store, session, ref)
    entry = store.cat(turn.id, rel, session, before=before)
    if isinstance(entry.data, Big):
        return FileAt(turn, rel, entry.kind, entry.mode, entry.data.size, True, None)
    from snapstore.text.diff import is_binary

    binary = is_binary(entry.data)
    text = None
    if not binary:
        try:
            text = Cut.of(entry.data.decode("utf-8"), limit)
        except UnicodeDecodeError:
            binary = True
    return FileAt(turn, rel, entry.kind, entry.mode, len(entry.data), binary, text)
