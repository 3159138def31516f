"""A reference model of what snapstore must do, for the state-machine test.

The model keeps its own picture of the workspace (its files and its folders), of every
session's turns and branches, and of every rewind, switch, undo, finish and redo, in a
small domain where the right answer is easy to compute exactly:

- a text file is a row of **slots**, each a line ``s<i>=<token>`` followed by
  two filler lines of its own, so that edits to different slots never touch and
  a three-way merge decides slot by slot; every edit writes a token never used
  before, so equal content means the same edit;
- a text file that is not slots (conflict markers, or what a merge of them gives) is
  **raw** bytes, merged by ``git merge-file`` (the reference snapstore's merge is
  tested against, docs/merge.md), which also lays out the markers;
- a binary file and a symlink are whole values (never merged);
- modes are merged apart from content, as snapstore does;
- a folder is there or not; an operation removes, once the files are done, the folders
  that the writes it takes back brought and that it left empty, and the folders that
  the turns it takes back made (scan mode) when they are empty.

Its fold is the fold of docs/design.md ("Rewind", "Switch") restated for slots;
the test compares the real workspace and the real branches with it after every
step. Nothing here imports snapstore: the model is the specification.
"""

from __future__ import annotations

import atexit
import functools
import itertools
import os
import random
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from typing import NamedTuple

SLOTS = 4
#: The bytes around a binary file's token: 3 KiB that every version shares, so that where
#: binary files are chunked (a test shrinks the big-file size) most chunks are shared.
BIN_PAD = random.Random(0).randbytes(1536)
#: Conflict markers' labels: ours, base, theirs (docs/merge.md).
LABELS = ("current", "agent", "before")
SKIP, MARKERS, THEIRS = "skip", "markers", "theirs"


class State(NamedTuple):
    """What a path holds: ``kind`` text (slots), raw (a text file's bytes that are not
    slots), bin (one token) or link (a target)."""

    kind: str
    value: tuple[str, ...] | str | bytes
    mode: int = 0o644

    def same_content(self, other: State | None) -> bool:
        return other is not None and (self.kind, self.value) == (other.kind, other.value)

    def render(self) -> tuple[str, bytes, int]:
        """What ``tests.support.snapshot`` shows for this state."""
        if self.kind == "link":
            return "link", str(self.value).encode(), 0
        if self.kind == "bin":
            return "file", b"\0BIN " + BIN_PAD + str(self.value).encode() + BIN_PAD, self.mode
        if self.kind == "raw":
            assert isinstance(self.value, bytes)
            return "file", self.value, self.mode
        lines = []
        for n, token in enumerate(self.value):
            lines += [f"s{n}={token}\n", f"~{n}a\n", f"~{n}b\n"]
        return "file", "".join(lines).encode(), self.mode


def text_state(data: bytes, mode: int) -> State:
    """A text file's state from its bytes: slots when they are slot lines, else raw."""
    lines = data.split(b"\n")
    if lines[-1] == b"" and len(lines) == 3 * SLOTS + 1:
        tokens = []
        for n in range(SLOTS):
            slot, a, b = lines[3 * n : 3 * n + 3]
            if not slot.startswith(b"s%d=" % n) or (a, b) != (b"~%da" % n, b"~%db" % n):
                break
            tokens.append(slot[len(b"s%d=" % n) :].decode())
        else:
            if all(tokens):
                return State("text", tuple(tokens), mode)
    return State("raw", data, mode)


def data(state: State | None) -> bytes:
    """A merge side's bytes (an absent side is empty)."""
    return b"" if state is None else state.render()[1]


def same(a: State | None, b: State | None) -> bool:
    return (a is None and b is None) or (a is not None and a.same_content(b))


def identical(a: State | None, b: State | None) -> bool:
    """Same content and the same mode."""
    return same(a, b) and (a is None or a.mode == b.mode)  # type: ignore[union-attr]


_GIT_DIR: list[str] = []


@functools.lru_cache(maxsize=4096)
def git_merge(base: bytes, ours: bytes, theirs: bytes) -> tuple[bool, bytes]:
    """``git merge-file -p --diff3 ours base theirs``: whether it is clean, and its result
    (with diff3 conflict markers where it is not)."""
    if not _GIT_DIR:
        shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
        _GIT_DIR.append(tempfile.mkdtemp(dir=shm, prefix="snapstore-model-"))
        atexit.register(shutil.rmtree, _GIT_DIR[0], True)
    names = []
    for name, content in (("ours", ours), ("base", base), ("theirs", theirs)):
        names.append(os.path.join(_GIT_DIR[0], name))
        with open(names[-1], "wb") as handle:
            handle.write(content)
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "LC_ALL": "C"}
    labels = [arg for label in LABELS for arg in ("-L", label)]
    proc = subprocess.run(
        ["git", "merge-file", "-p", "--diff3", *labels, *names],
        env=env,
        capture_output=True,
        check=False,
    )
    assert 0 <= proc.returncode < 128, proc.stderr
    return proc.returncode == 0, proc.stdout


class Conflict(Exception):
    """The fold of one path stops; the path is left as it is and reported. ``sides`` (src,
    cur, dst) when it is a text merge that conflicts: then markers can be written."""

    def __init__(self, reason: str, sides: tuple[State | None, State, State | None] | None = None):
        super().__init__(reason)
        self.sides = sides


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
    if any(s is not None and s.kind not in ("text", "raw") for s in (cur, src, dst)):
        raise Conflict("not mergeable")
    sides = (src, cur, dst)
    if src is None or dst is None:
        raise Conflict("created or deleted on one side, changed on the other", sides)
    mode = merge_mode(src.mode, cur.mode, dst.mode)
    mode = cur.mode if mode is None else mode
    if "raw" in (src.kind, cur.kind, dst.kind):
        clean, merged = git_merge(data(src), data(cur), data(dst))
        if not clean:
            raise Conflict("the lines changed on both sides", sides)
        return text_state(merged, mode)
    slots = []
    for base, ours, theirs in zip(src.value, cur.value, dst.value, strict=True):
        if ours in (base, theirs):
            slots.append(theirs)
        elif theirs == base:
            slots.append(ours)
        else:
            raise Conflict("the same slot changed on both sides", sides)
    return State("text", tuple(slots), mode)


def markers(sides: tuple[State | None, State, State | None] | None) -> State | None:
    """What a conflicting text merge writes with ``--on-conflict markers`` (None for a
    conflict that is no text merge)."""
    if sides is None:
        return None
    src, cur, dst = sides
    clean, merged = git_merge(data(src), data(cur), data(dst))
    assert not clean, sides  # the slot rule and git agree on every conflict
    return text_state(merged, cur.mode)


class Change(NamedTuple):
    path: str
    before: State | None
    after: State | None
    #: the parent folders that were not there when the write began: the ones it brought
    mkdirs: int = 0


#: One step of a fold: a change taken back (``forward`` false) or put back.
Steps = dict[str, list[tuple[Change, bool]]]


@dataclass
class Turn:
    id: str
    session: str
    parent: str | None
    kind: str = "agent"  # agent | revert
    state: str = "open"  # open | closed | rewound
    implicit: bool = False
    #: Per path, the turn's runs of writes in order: writes that follow on each other are
    #: one run (from its first ``before`` to its last ``after``, with the first's
    #: ``mkdirs``); a write after someone else changed the path starts a new one. A run
    #: that ends where it began changes nothing, but a write that follows on it still
    #: continues it.
    changes: dict[str, list[Change]] = field(default_factory=dict)
    #: scan mode: the folders that came during its shell calls
    folders: list[str] = field(default_factory=list)


@dataclass
class Operation:
    """A rewind, switch, undo, finish or redo: what it wrote (before, after), how it moved
    the head, what it left, and the folders it made and removed."""

    session: str
    action: str  # rewind | switch | undo | finish (a redo has the action it redoes)
    mode: str  # both | code (a finish, and an undo of one: the head stays)
    prev_head: str | None
    new_head: str | None
    #: the steps of the operation at the root of its ``finishes`` chain (its own, for
    #: any other): what a finish of what it left folds again
    steps: Steps
    reverted: list[str] = field(default_factory=list)
    forward: list[str] = field(default_factory=list)
    target: str | None = None  # rewind: the first turn taken back; switch: the turn
    id: str = ""  # the store's, once it ran
    writes: dict[str, list[Change]] = field(default_factory=dict)  # once it ran
    left: set[str] = field(default_factory=set)  # conflicts and errors, once it ran
    marked: set[str] = field(default_factory=set)  # of those, the ones given markers
    undoes: Operation | None = None
    finishes: Operation | None = None
    on_branch: bool = False  # an undo that became a turn of its own
    undoable: bool = True  # applied and not undone (never for an undo)
    redoable: bool = False  # an undo, applied and not redone
    folders_created: list[str] = field(default_factory=list)
    folders_removed: list[str] = field(default_factory=list)
    #: once it ran: how many folders that the writes it took back brought it removed, and
    #: whether it kept one because it holds something (for the test's statistics)
    emptied: int = 0
    kept_full: bool = False


@dataclass
class Outcome:
    """What an operation should do: per path the result, the paths left in conflict (and
    of those, the ones written with markers), the paths it cannot write because a file
    and a folder would share a name (errors), and per path that ends absent the parent
    folders its fold took back the creation of (``rmdirs``)."""

    results: dict[str, State | None]
    conflicts: set[str]
    errors: set[str] = field(default_factory=set)
    marked: set[str] = field(default_factory=set)
    rmdirs: dict[str, int] = field(default_factory=dict)

    @property
    def left(self) -> set[str]:
        return self.conflicts | self.errors


def depth(path: str) -> int:
    return path.count("/")


class Model:
    """The workspace, the sessions and the operations, as they must be."""

    def __init__(self) -> None:
        self.files: dict[str, State] = {}
        self.dirs: set[str] = set()
        #: the folders the last full scan saw (None before the first: it is the baseline)
        self.scanned: set[str] | None = None
        self.turns: dict[str, Turn] = {}
        self.heads: dict[str, str | None] = {}
        self.open: dict[str, str] = {}  # session -> its open turn
        self.ops: list[Operation] = []
        self.last_op: dict[str, Operation] = {}  # session -> its last operation
        self.tokens = itertools.count()

    def token(self, who: str) -> str:
        return f"{who}{next(self.tokens)}"

    # -- the file system ------------------------------------------------------------

    def set(self, path: str, state: State | None) -> None:
        """A path now holds ``state``: a file replaces the empty folder at its path and
        brings its parent folders; a deletion leaves the folders."""
        if state is None:
            self.files.pop(path, None)
            return
        self.files[path] = state
        self.dirs = {d for d in self.dirs if d != path and not d.startswith(path + "/")}
        parts = path.split("/")
        self.dirs.update("/".join(parts[:n]) for n in range(1, len(parts)))

    def holds_anything(self, folder: str) -> bool:
        prefix = folder + "/"
        return any(p.startswith(prefix) for p in self.files) or any(
            d.startswith(prefix) for d in self.dirs
        )

    def missing_parents(self, path: str) -> int:
        """How many parent folders of ``path`` are not there (a write would bring them)."""
        parts = path.split("/")[:-1]
        for level in range(len(parts), 0, -1):
            if "/".join(parts[:level]) in self.dirs:
                return len(parts) - level
        return len(parts)

    def remove_empty_parents(self, path: str, count: int) -> tuple[int, bool]:
        """Remove up to ``count`` parent folders of ``path``, deepest first, while empty;
        how many it removed, and whether one it came to holds something (it stays)."""
        parts = path.split("/")[:-1]
        removed = 0
        for level in range(len(parts), max(len(parts) - count, 0), -1):
            folder = "/".join(parts[:level])
            if folder in self.files or (folder in self.dirs and self.holds_anything(folder)):
                return removed, True
            removed += folder in self.dirs
            self.dirs.discard(folder)
        return removed, False

    def make_folder(self, folder: str) -> bool:
        """Make ``folder`` and its parents; whether it was made (never where a file is)."""
        parts = folder.split("/")
        prefixes = ["/".join(parts[:n]) for n in range(1, len(parts) + 1)]
        if folder in self.dirs or any(p in self.files for p in prefixes):
            return False
        self.dirs.update(prefixes)
        return True

    def remove_folder(self, folder: str) -> bool:
        """Remove ``folder`` if it is there and empty; whether it was removed."""
        if folder not in self.dirs or self.holds_anything(folder):
            return False
        self.dirs.discard(folder)
        return True

    def scan(self) -> list[str]:
        """A full scan: the folders that came since the one before (none at the first)."""
        came = [] if self.scanned is None else sorted(self.dirs - self.scanned)
        self.scanned = set(self.dirs)
        return came

    # -- capture --------------------------------------------------------------------

    def begin(self, turn_id: str, session: str, implicit: bool = False) -> None:
        self.turns[turn_id] = Turn(turn_id, session, self.heads.get(session), implicit=implicit)
        self.heads[session] = turn_id
        self.open[session] = turn_id

    def end(self, session: str) -> None:
        self.turns[self.open.pop(session)].state = "closed"

    def record(
        self, session: str, path: str, before: State | None, after: State | None, mkdirs: int = 0
    ) -> None:
        """An agent's write in the session's open turn; ``mkdirs``: the parent folders it
        brought."""
        changes = self.turns[self.open[session]].changes.setdefault(path, [])
        if changes and identical(changes[-1].after, before):
            before, mkdirs = changes[-1].before, changes.pop().mkdirs  # it follows on
        changes.append(Change(path, before, after, mkdirs if before is None else 0))
        self.set(path, after)

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

    def fold(self, steps: Steps, policy: str = SKIP) -> Outcome:
        outcome = Outcome({}, set())
        for path, path_steps in steps.items():
            cur = self.files.get(path)
            gone = [False]
            rmdirs = 0
            try:
                for change, forward in path_steps:
                    src, dst = (
                        (change.before, change.after) if forward else (change.after, change.before)
                    )
                    try:
                        new = step(cur, src, dst, gone)
                    except Conflict:
                        if policy != THEIRS:
                            raise
                        new = dst  # forced, with its own mode
                    if new is None and cur is not None and not forward:
                        rmdirs = max(rmdirs, change.mkdirs)
                    cur = new
            except Conflict as conflict:
                outcome.conflicts.add(path)
                marked = None if policy != MARKERS else markers(conflict.sides)
                if marked is not None and not identical(marked, self.files.get(path)):
                    outcome.results[path] = marked  # else it holds them already
                    outcome.marked.add(path)
                continue
            outcome.results[path] = cur
            if cur is None and rmdirs:
                outcome.rmdirs[path] = rmdirs
        return self._structure(outcome)

    def _structure(self, outcome: Outcome) -> Outcome:
        """A file cannot come back where a folder still holds something, nor below a file
        that stays: such a write is left as it is and reported as an error (a path that
        already holds its result is written by no one, and stays)."""
        while True:
            final = {**self.files, **outcome.results}
            present = {p for p, state in final.items() if state is not None}
            blocked = {
                p
                for p, state in outcome.results.items()
                if state is not None
                and not identical(state, self.files.get(p))
                and (
                    any(q.startswith(p + "/") for q in present)
                    or any(p.startswith(q + "/") for q in present)
                )
            }
            if not blocked:
                return outcome
            for path in blocked:
                del outcome.results[path]
                outcome.conflicts.discard(path)
                outcome.marked.discard(path)
                outcome.errors.add(path)

    @staticmethod
    def steps(back: list[Turn], forward: list[Turn] = ()) -> Steps:
        """Per path: ``back`` (newest first) undone, then ``forward`` (oldest first) redone;
        runs that change nothing are no steps."""
        grouped: Steps = {}
        for turns, ahead in ((back, False), (forward, True)):
            for turn in turns:
                for path, changes in turn.changes.items():
                    runs = [(c, ahead) for c in changes if not identical(c.before, c.after)]
                    grouped.setdefault(path, []).extend(runs if ahead else runs[::-1])
        return grouped

    def writes(self, outcome: Outcome) -> dict[str, list[Change]]:
        """What carrying out ``outcome`` writes: per path, what it held and what it gets,
        with the parent folders the write brings (its undo takes them back)."""
        writes = {}
        for path, result in outcome.results.items():
            before = self.files.get(path)
            if not identical(before, result):
                mkdirs = self.missing_parents(path) if before is None else 0
                writes[path] = [Change(path, before, result, mkdirs if result is not None else 0)]
        return writes

    def apply(
        self,
        op: Operation,
        outcome: Outcome,
        make: list[str] | tuple[str, ...] = (),
        remove: list[str] | tuple[str, ...] = (),
    ) -> Operation:
        """Carry out an operation's outcome and remember it: the files, then the folders the
        writes it took back brought and that are empty now, then the folders of the turns it
        put back (``make``, shallowest first) and took back (``remove``, deepest first)."""
        op.writes = self.writes(outcome)
        op.left, op.marked = outcome.left, set(outcome.marked)
        for path, (change,) in op.writes.items():
            self.set(path, change.after)
        for path in sorted(outcome.rmdirs, key=lambda p: (-depth(p), p)):
            removed, kept = self.remove_empty_parents(path, outcome.rmdirs[path])
            op.emptied, op.kept_full = op.emptied + removed, op.kept_full or kept
        shallowest = sorted(set(make), key=lambda f: (depth(f), f))
        op.folders_created = [f for f in shallowest if self.make_folder(f)]
        deepest = sorted(set(remove), key=lambda f: (-depth(f), f))
        op.folders_removed = [f for f in deepest if self.remove_folder(f)]
        if op.mode != "code":
            self.heads[op.session] = op.new_head
            for turn_id in op.reverted:
                self.turns[turn_id].state = "rewound"
            for turn_id in op.forward:
                self.turns[turn_id].state = "closed"
        self.ops.append(op)
        self.last_op[op.session] = op
        return op

    # -- operations -----------------------------------------------------------------

    def plan_rewind(
        self, session: str, target: str, policy: str = SKIP
    ) -> tuple[Operation, Outcome]:
        branch = self.chain(self.heads[session])
        back = branch[: [t.id for t in branch].index(target) + 1]
        steps = self.steps(back)
        op = Operation(
            session,
            "rewind",
            "both",
            branch[0].id,
            self.turns[target].parent,
            steps,
            reverted=[t.id for t in back],
            target=target,
        )
        return op, self.fold(steps, policy)

    def rewind(self, op: Operation, outcome: Outcome) -> Operation:
        back = [self.turns[t] for t in op.reverted]
        return self.apply(op, outcome, remove=[f for t in back for f in t.folders])

    def plan_switch(self, target: str, policy: str = SKIP) -> tuple[Operation, Outcome]:
        session = self.turns[target].session
        here, there = self.chain(self.heads.get(session)), self.chain(target)
        here_ids, there_ids = [t.id for t in here], [t.id for t in there]
        fork = next((t for t in there_ids if t in here_ids), None)
        back = here[: here_ids.index(fork) if fork else len(here)]
        forward = there[: there_ids.index(fork) if fork else len(there)][::-1]
        steps = self.steps(back, forward)
        op = Operation(
            session,
            "switch",
            "both",
            self.heads.get(session),
            target,
            steps,
            reverted=[t.id for t in back],
            forward=[t.id for t in forward],
            target=target,
        )
        return op, self.fold(steps, policy)

    def switch(self, op: Operation, outcome: Outcome) -> Operation:
        back, forward = ([self.turns[t] for t in ids] for ids in (op.reverted, op.forward))
        return self.apply(
            op,
            outcome,
            make=[f for t in forward for f in t.folders],
            remove=[f for t in back for f in t.folders],
        )

    def plan_undo(self, done: Operation, policy: str = SKIP) -> tuple[Operation, Outcome]:
        """Take back ``done``: its writes folded back from now. The head goes back when
        nothing happened since; else the undo becomes a turn of its own on top (its id is
        the store's, set by :meth:`undo`); an operation that never moved the head moves
        none."""
        carrier = Turn("", done.session, None, changes=done.writes)
        steps = self.steps([carrier])
        head = self.heads.get(done.session)
        if done.mode == "code":
            op = Operation(done.session, "undo", "code", head, head, steps)
        elif head == done.new_head:
            op = Operation(
                done.session,
                "undo",
                done.mode,
                head,
                done.prev_head,
                steps,
                reverted=list(done.forward),
                forward=list(done.reverted),
            )
        else:
            op = Operation(done.session, "undo", "both", head, None, steps, on_branch=True)
        op.undoes = done
        return op, self.fold(steps, policy)

    def undo(self, op: Operation, outcome: Outcome) -> Operation:
        """Apply an undo's outcome (``op.new_head`` is the turn of its own, if it is one)."""
        assert op.undoes is not None
        op.undoable, op.redoable, op.undoes.undoable = False, True, False
        done = self.apply(
            op, outcome, make=op.undoes.folders_removed, remove=op.undoes.folders_created
        )
        if op.on_branch:
            assert op.new_head is not None
            self.turns[op.new_head] = Turn(
                op.new_head,
                op.session,
                op.prev_head,
                kind="revert",
                state="closed",
                changes=dict(done.writes),
            )
        return done

    def leftover(self, session: str) -> Operation | None:
        """What ``finish`` retries: the session's last operation, while it is not undone
        and the head is where it left it, if it left paths."""
        op = self.last_op.get(session)
        if op is None or op.left == set() or self.heads.get(session) != op.new_head:
            return None
        return None if op.undoes is None and not op.undoable else op

    def plan_finish(
        self, left: Operation, policy: str, paths: set[str] | None = None
    ) -> tuple[Operation, Outcome]:
        """Fold again, with ``policy``, the steps of the paths ``left`` left (or of
        ``paths`` of them), from now; the steps are those of the operation at the root of
        the ``finishes`` chain."""
        retry = left.left if paths is None else paths
        steps = {p: s for p, s in left.steps.items() if p in retry}
        head = self.heads.get(left.session)
        op = Operation(left.session, "finish", "code", head, head, left.steps, finishes=left)
        return op, self.fold(steps, policy)

    def plan_redo(self, undo: Operation, policy: str) -> tuple[Operation, Outcome]:
        """Do again what ``undo`` took back, planned from now (the caller checks first that
        the undo can be redone: not a turn of its own, and the head where it left it)."""
        done = undo.undoes
        assert done is not None
        if done.action == "switch":
            assert done.target is not None
            return self.plan_switch(done.target, policy)
        if done.action == "finish":
            assert done.finishes is not None
            return self.plan_finish(done.finishes, policy)
        assert done.target is not None
        return self.plan_rewind(done.session, done.target, policy)

    def redo(self, undo: Operation, op: Operation, outcome: Outcome) -> Operation:
        undo.redoable = False
        if op.action == "switch":
            return self.switch(op, outcome)
        if op.action == "finish":
            return self.apply(op, outcome)
        return self.rewind(op, outcome)

    def tree(self) -> dict[str, tuple[str, bytes, int]]:
        """What ``tests.support.snapshot(root, dirs=True)`` shows: files, and empty folders."""
        tree = {path: state.render() for path, state in self.files.items()}
        for folder in self.dirs:
            if not self.holds_anything(folder):
                tree[folder + "/"] = ("dir", b"", 0)
        return tree
