"""What a move did: the one result value every door renders, and its JSON (docs/cli.md).

The library's :class:`~snapstore.ops.plan.RewindResult` keeps conflicts and failed writes
apart (its journal stores them so). A door's user asks a simpler question first: which paths
were not put back? So ``errors`` here lists every one of them, conflicts included, each with
its ``reason`` and its ``kind`` (``conflict`` or ``failed``); ``conflicts`` keeps the detail.
The same value is printed for people, sent as ``--json``, framed for the page's socket and
worded for a model; nothing a door shows is computed anywhere else.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any

from snapstore.core.records import DEFAULT_SESSION

if TYPE_CHECKING:
    from snapstore.ops.plan import RewindResult

    from .requests import Move

#: The verb that names each move's result for people ("rewound: 3 file(s) changed").
VERBS = {
    "rewind": "rewound",
    "switch": "switched",
    "undo": "undone",
    "redo": "redone",
    "finish": "finished",
    "resume": "resumed",
}


#: What ``snapstore.ops.plan`` says of a conflict in a text file that both sides changed: the
#: one kind that conflict markers can take (a binary, big, deleted or linked file cannot).
MARKABLE = "conflicting region"


def finish_command(
    session: str, conflicts: list[dict[str, str]], failed: list[str], marked: list[str]
) -> str | None:
    """The one command that finishes what a move left without losing an edit of the user's,
    or None when what is left is for the user's hands: ``markers`` for the text conflicts not
    marked yet (the file then holds both sides), a plain retry for failed writes. Never
    ``theirs``, which overwrites the user's edit; never markers for a file that cannot take
    them, nor again for one that has them."""
    texts = [c for c in conflicts if MARKABLE in c["reason"] and c["path"] not in marked]
    if texts:
        how = " --on-conflict markers"
    elif failed:
        how = ""
    else:
        return None
    where = "" if session == DEFAULT_SESSION else f" --session {shlex.quote(session)}"
    return f"snapstore{where} rewind --finish{how}"


def by_hand(conflicts: list[dict[str, str]], marked: list[str]) -> str:
    """What a person is told of the conflicts that no command finishes safely."""
    rest = [c["path"] for c in conflicts if c["path"] not in marked]
    said = [f"the conflict markers are in {', '.join(marked)}: edit them"] if marked else []
    if rest:
        said.append(f"{', '.join(rest)}: keep yours, or take the other side by hand")
    return "; ".join(said)


class Outcome:
    """A move's result (or, for ``resume``, the results of the moves it finished), what the
    layer noticed on the way (``notes``: the session it chose, an interrupted move it
    finished first), and the command that finishes what it left."""

    __slots__ = ("by_hand", "finish", "move", "notes", "result", "resumed")

    def __init__(
        self,
        move: Move,
        result: RewindResult | None,
        notes: list[str] | None = None,
        resumed: list[RewindResult] | None = None,
    ):
        self.move = move
        self.result = result
        self.notes = notes or []
        self.resumed = resumed or []
        self.finish: str | None = None
        self.by_hand = ""  # what is left that no command finishes without losing an edit
        if result is not None and result.left and not result.dry_run:
            failed = [e["path"] for e in result.errors]
            self.finish = finish_command(result.session, result.conflicts, failed, result.marked)
            if self.finish is None:
                self.by_hand = by_hand(result.conflicts, result.marked)

    @property
    def verb(self) -> str:
        return VERBS[self.move.action]

    @property
    def ok(self) -> bool:
        """Whether every path was put back (or, dry, would be): exit 0, else 1."""
        results = self.resumed if self.result is None else [self.result]
        return all(r.ok for r in results)

    @property
    def turn(self) -> str:
        """The target as the user named it (a number stays a number), for the lines."""
        result = self.result
        return self.move.shown or self.move.target or (result.target if result else "") or ""

    @property
    def prompt(self) -> str | None:
        """The prompt handed back to edit and send again: the target turn's, for a rewind that
        took turns back (whatever the agent, with a transcript or none); else None."""
        result = self.result
        if self.move.action != "rewind" or result is None or not result.turns_reverted:
            return None
        return result.user_text or None

    def to_json(self) -> Any:
        """The JSON every door gives: a move's document, or a list for ``resume``."""
        if self.result is None:
            return [public(r) for r in self.resumed]
        data = public(self.result)
        if self.finish is not None:
            data["finish"] = self.finish
        return data


def public(result: RewindResult) -> dict[str, Any]:
    """A result's JSON as doors give it: ``errors`` holds every path not put back."""
    data = result.to_json()
    data["errors"] = [
        {"path": c["path"], "reason": c["reason"], "kind": "conflict"} for c in result.conflicts
    ] + [{**e, "kind": "failed"} for e in result.errors]
    return data
