"""What a move did: the one result value every door renders, and its JSON (docs/cli.md).

The library's :class:`~snapstore.ops.result.RewindResult` keeps conflicts and failed writes
apart (its journal stores them so). A door's user asks a simpler question first: which paths
were not put back? So ``errors`` here lists every one of them, conflicts included, each with
its ``reason`` and its ``kind`` (``conflict`` or ``failed``); ``conflicts`` keeps the detail.
The same value is printed for people, sent as ``--json``, framed for the page's socket and
worded for a model; nothing a door shows is computed anywhere else. ``snapstore serve`` sends
it back to the command line that handed it a move (:meth:`Outcome.to_wire`), which rebuilds
it (:meth:`Outcome.from_wire`) and prints it as if it had made the move itself.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any

from snapstore.core.records import DEFAULT_SESSION

if TYPE_CHECKING:
    from snapstore.ops.result import RewindResult

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

    __slots__ = ("_sent", "by_hand", "finish", "move", "notes", "result", "resumed")

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
        #: a dry run's count of files it would write, and its diffs, as another process sent
        self._sent: tuple[int, list[tuple[str, list[str]]]] | None = None

    @classmethod
    def from_wire(cls, move: Move, data: Any) -> Outcome:
        """The outcome of ``move`` from what :meth:`to_wire` sent; a document that is not one
        is refused (ValueError)."""
        from snapstore.ops.result import RewindResult

        try:
            result, resumed, notes, writes, diffs = (
                data["result"],
                data["resumed"],
                data["notes"],
                data["writes"],
                data["diffs"],
            )
            outcome = cls(
                move,
                None if result is None else RewindResult.from_json(result),
                [str(note) for note in notes],
                [RewindResult.from_json(r) for r in resumed],
            )
            sent = [(str(path), [str(line) for line in lines]) for path, lines in diffs]
            outcome._sent = (int(writes), sent)
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not an outcome: {exc}") from None
        return outcome

    def to_wire(self, diffs: bool = False) -> dict[str, Any]:
        """What a door in another process needs to print this outcome as this one would: the
        results as the library gives them, the notes, how many files a dry run would write,
        and (``diffs``: ``--diff``) what they would become."""
        return {
            "result": None if self.result is None else self.result.to_json(),
            "resumed": [r.to_json() for r in self.resumed],
            "notes": self.notes,
            "writes": self.writes(),
            "diffs": self.diffs() if diffs else [],
        }

    def writes(self) -> int:
        """How many files a dry run would write; none for a move."""
        if self._sent is not None:
            return self._sent[0]
        result = self.result
        if result is None or not result.dry_run:
            return 0
        return sum(1 for plan in result.plans if plan.writes)

    def diffs(self) -> list[tuple[str, list[str]]]:
        """A dry run's diffs, one (path, lines) per path it would write; none for a move."""
        if self._sent is not None:
            return self._sent[1]
        result = self.result
        if result is None or not result.dry_run:
            return []
        from snapstore.ops.diffs import entry_diff

        return [
            (plan.path, entry_diff(plan.path, plan.current_entry, plan.content))
            for plan in result.plans
            if plan.writes
        ]

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

    def git_lines(self) -> list[tuple[str, str]]:
        """What the move did (dry: would do) to the repository, as ``(kind, text)`` lines in
        the command line's words (``snapstore.ops.gitshow.operation_lines``): HEAD, each ref
        and the ref that keeps where it was, the index, what was left alone and why, and the
        command that moves the refs back."""
        result = self.result
        if result is None or result.git is None:
            return []
        from snapstore.ops.gitshow import operation_lines, way_back

        on_branch = result.new_head is not None and result.new_head == result.undo_id
        undone = self.move.action == "undo"
        return operation_lines(result.git, way_back("undo" if undone else "rewind", on_branch))

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
