"""A reference model of what snapstore must do, for the state-machine test.

The model keeps its own picture of the workspace, of every session's turns and
branches, and of every rewind, switch and undo, in a small domain where the
right answer is easy to compute exactly:

- a text file is a row of **slots**, each a line ``s<i>=<token>`` followed by
  two filler lines of its own, so that edits to different slots never touch and
  a three-way merge decides slot by slot; every edit writes a token never used
  before, so equal content means the same edit;
- a binary file and a symlink are whole values (never merged);
- modes are merged apart from content, as snapstore does.

Its fold is the fold of docs/design.md ("Rewind", "Switch") restated for slots;
the test compares the real workspace and the real branches with it after every
step. Nothing here imports snapstore's planner: the model is the specification.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass, field
from typing import NamedTuple

SLOTS = 4
#: The bytes around a binary file's token: 3 KiB that every version shares, so that where
#: binary files are chunked (a test shrinks the big-file size) most chunks are shared.
BIN_PAD = random.Random(0).randbytes(1536)


class State(NamedTuple):
    """What a path holds: ``kind`` text (slots), bin (one token) or link (a target)."""

    kind: str
    value: tuple[str, ...] | str
    mode: int = 0o644

    def same_content(self, other: State | None) -> bool:
        return other is not None and (self.kind, self.value) == (other.kind, other.value)

    def render(self) -> tuple[str, bytes, int]:
        """What ``tests.support.snapshot`` shows for this state."""
        if self.kind == "link":
            return "link", str(self.value).encode(), 0
        if self.kind == "bin":
            return "file", b"\0BIN " + BIN_PAD + str(self.value).encode() + BIN_PAD, self.mode
        lines = []
        for n, token in enumerate(self.value):
            lines += [f"s{n}={token}\n", f"~{n}a\n", f"~{n}b\n"]
        return "file", "".join(lines).encode(), self.mode


def same(a: State | None, b: State | None) -> bool:
    return (a is None and b is None) or (a is not None and a.same_content(b))


def identical(a: State | None, b: State | None) -> bool:
    """Same content and the same mode."""
    return same(a, b) and (a is None or a.mode == b.mode)  # type: ignore[union-attr]


class Conflict(Exception):
    """The fold of one path stops; the path is left as it is and reported."""


def merge_mode(base: int | None, ours: int | None, theirs: int | None) -> int | None:
    """Permission bits, three-way: the user's change to the mode stays."""
    if theirs is None or ours is None or base is None or ours == base:
        return theirs
    return ours


def step(cur: State | None, src: State | None, dst: State | None, gone: list[bool]) -> State | None:
    """One step of the fold: from ``src`` to ``dst``, starting from ``cur``.

    ``gone`` carries, from step to step of one path, whether a step found the path
    already absent where it would have removed it: someone deleted what the agent wrote,
    and the path then does not come back from an older step.
    """
    ours_mode = None if cur is None else cur.mode
    if cur is None and same(cur, src) and dst is not None and gone[0]:
        raise Conflict("deleted after the agent wrote it")
    if cur is None and same(cur, dst) and src is not None:
        gone[0] = True
    if same(cur, src) or same(cur, dst):
        content = dst if same(cur, src) else cur
        if content is None:
            return None
        mode = merge_mode(
            None if src is None else src.mode, ours_mode, None if dst is None else dst.mode
        )
        return content._replace(mode=content.mode if mode is None else mode)
    if cur is None:
        raise Conflict("deleted after the agent wrote it")
    if any(s is not None and s.kind != "text" for s in (cur, src, dst)):
        raise Conflict("not mergeable")
    if src is None or dst is None:
        raise Conflict("created or deleted on one side, changed on the other")
    slots = []
    for base, ours, theirs in zip(src.value, cur.value, dst.value, strict=True):
        if ours in (base, theirs):
            slots.append(theirs)
        elif theirs == base:
            slots.append(ours)
        else:
            raise Conflict("the same slot changed on both sides")
    mode = merge_mode(src.mode, cur.mode, dst.mode)
    return State("text", tuple(slots), cur.mode if mode is None else mode)


class Change(NamedTuple):
    path: str
    before: State | None
    after: State | None


@dataclass
class Turn:
    id: str
    session: str
    parent: str | None
    kind: str = "agent"  # agent | revert
    state: str = "open"  # open | closed | rewound
    implicit: bool = False
    #: Per path, the turn's changes in order: writes that follow on each other are one
    #: change; a write after someone else changed the path starts a new one.
    changes: dict[str, list[Change]] = field(default_factory=dict)


@dataclass
class Operation:
    """A rewind, switch or undo: what it wrote (before, after) and how it moved the head."""

    id: str
    session: str
    action: str
    prev_head: str | None
    new_head: str | None
    reverted: list[str]
    forward: list[str]
    writes: dict[str, list[Change]]
    undoable: bool = True


@dataclass
class Outcome:
    """What an operation should do: per path the result, the paths left in conflict, and
    the paths it cannot write because a file and a folder would share a name (errors)."""

    results: dict[str, State | None]
    conflicts: set[str]
    errors: set[str] = field(default_factory=set)


class Model:
    """The workspace, the sessions and the operations, as they must be."""

    def __init__(self) -> None:
        self.files: dict[str, State] = {}
        self.turns: dict[str, Turn] = {}
        self.heads: dict[str, str | None] = {}
        self.open: dict[str, str] = {}  # session -> its open turn
        self.ops: list[Operation] = []
        self.tokens = itertools.count()

    def token(self, who: str) -> str:
        return f"{who}{next(self.tokens)}"

    # -- capture --------------------------------------------------------------------

    def begin(self, turn_id: str, session: str, implicit: bool = False) -> None:
        self.turns[turn_id] = Turn(turn_id, session, self.heads.get(session), implicit=implicit)
        self.heads[session] = turn_id
        self.open[session] = turn_id

    def end(self, session: str) -> None:
        self.turns[self.open.pop(session)].state = "closed"

    def record(self, session: str, path: str, before: State | None, after: State | None) -> None:
        """An agent's write in the session's open turn."""
        changes = self.turns[self.open[session]].changes.setdefault(path, [])
        if changes and identical(changes[-1].after, before):
            before = changes.pop().before  # it follows on the turn's last write of the path
        if not identical(before, after):
            changes.append(Change(path, before, after))
        if not changes:
            del self.turns[self.open[session]].changes[path]
        self.set(path, after)

    def set(self, path: str, state: State | None) -> None:
        if state is None:
            self.files.pop(path, None)
        else:
            self.files[path] = state

    # -- history --------------------------------------------------------------------

    def chain(self, turn_id: str | None) -> list[Turn]:
        """A turn and its ancestors, newest first."""
        found = []
        while turn_id is not None:
            turn = self.turns[turn_id]
            found.append(turn)
            turn_id = turn.parent
        return found

    def branch(self, session: str) -> list[str]:
        """The rewind points of the session's current branch, newest first."""
        return [t.id for t in self.chain(self.heads.get(session))]

    def fold(self, steps: dict[str, list[tuple[Change, bool]]]) -> Outcome:
        results: dict[str, State | None] = {}
        conflicts: set[str] = set()
        for path, path_steps in steps.items():
            cur = self.files.get(path)
            gone = [False]
            try:
                for change, forward in path_steps:
                    src, dst = (
                        (change.before, change.after) if forward else (change.after, change.before)
                    )
                    cur = step(cur, src, dst, gone)
            except Conflict:
                conflicts.add(path)
                continue
            results[path] = cur
        return self._structure(Outcome(results, conflicts))

    def _structure(self, outcome: Outcome) -> Outcome:
        """A file cannot come back where a folder still holds something, nor below a file
        that stays: such a path is left as it is and reported as an error."""
        while True:
            final = {**self.files, **outcome.results}
            present = {p for p, state in final.items() if state is not None}
            blocked = {
                p
                for p, state in outcome.results.items()
                if state is not None
                and (
                    any(q.startswith(p + "/") for q in present)
                    or any(p.startswith(q + "/") for q in present)
                )
            }
            if not blocked:
                return outcome
            for path in blocked:
                del outcome.results[path]
                outcome.errors.add(path)

    @staticmethod
    def steps(back: list[Turn], forward: list[Turn] = ()) -> dict[str, list[tuple[Change, bool]]]:
        """Per path: ``back`` (newest first) undone, then ``forward`` (oldest first) redone."""
        grouped: dict[str, list[tuple[Change, bool]]] = {}
        for turn in back:
            for path, changes in turn.changes.items():
                grouped.setdefault(path, []).extend((c, False) for c in reversed(changes))
        for turn in forward:
            for path, changes in turn.changes.items():
                grouped.setdefault(path, []).extend((c, True) for c in changes)
        return grouped

    def apply(
        self,
        op_id: str,
        session: str,
        action: str,
        outcome: Outcome,
        prev_head: str | None,
        new_head: str | None,
        reverted: list[str],
        forward: list[str],
    ) -> Operation:
        """Carry out an operation's outcome and remember it for undo."""
        writes = {}
        for path, result in outcome.results.items():
            before = self.files.get(path)
            if not identical(before, result):
                writes[path] = [Change(path, before, result)]
                self.set(path, result)
        self.heads[session] = new_head
        for turn_id in reverted:
            self.turns[turn_id].state = "rewound"
        for turn_id in forward:
            self.turns[turn_id].state = "closed"
        op = Operation(op_id, session, action, prev_head, new_head, reverted, forward, writes)
        self.ops.append(op)
        return op

    def plan_rewind(self, session: str, target: str) -> tuple[list[Turn], Outcome]:
        branch = self.chain(self.heads[session])
        back = branch[: [t.id for t in branch].index(target) + 1]
        return back, self.fold(self.steps(back))

    def plan_switch(self, target: str) -> tuple[list[Turn], list[Turn], Outcome]:
        session = self.turns[target].session
        here, there = self.chain(self.heads.get(session)), self.chain(target)
        here_ids, there_ids = [t.id for t in here], [t.id for t in there]
        fork = next((t for t in there_ids if t in here_ids), None)
        back = here[: here_ids.index(fork) if fork else len(here)]
        forward = there[: there_ids.index(fork) if fork else len(there)][::-1]
        return back, forward, self.fold(self.steps(back, forward))

    def last_undoable(self) -> Operation | None:
        candidates = [op for op in self.ops if op.undoable and op.action != "undo"]
        return candidates[-1] if candidates else None

    def plan_undo(self, op: Operation) -> Outcome:
        carrier = Turn("", op.session, None, changes=op.writes)
        return self.fold(self.steps([carrier]))

    def undo(self, op: Operation, undo_id: str, outcome: Outcome, new_head: str | None) -> None:
        """Apply an undo's outcome: the head goes back when nothing happened since, else the
        undo becomes a turn of its own (``new_head``) on top."""
        op.undoable = False
        head = self.heads.get(op.session)
        if head == op.new_head:
            done = self.apply(
                undo_id, op.session, "undo", outcome, head, op.prev_head, op.forward, op.reverted
            )
        else:
            done = self.apply(undo_id, op.session, "undo", outcome, head, new_head, [], [])
            assert new_head is not None
            self.turns[new_head] = Turn(
                new_head, op.session, head, kind="revert", state="closed", changes=dict(done.writes)
            )
        done.undoable = False

    def tree(self) -> dict[str, tuple[str, bytes, int]]:
        return {path: state.render() for path, state in self.files.items()}
