"""Reading history: the session's branch, rewind points, one turn's stats, status.

Every figure here comes from the store, never from the disk: the lines added
and removed by a turn are counted between the blobs it recorded.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

from ..core.errors import SnapstoreError
from ..core.records import (
    AGENT,
    BRANCH_KINDS,
    FILE,
    LINK,
    OPEN,
    REWIND,
    UNDO,
    Action,
    Change,
    Mode,
    Source,
    Status,
    Turn,
    Version,
)
from ..core.repo import Repo, Tx
from ..core.view import View
from ..text.diff import is_binary, line_stats, split_lines
from .branches import ancestors, branch, leftover, number, resolve_turn

#: How a turn changed a path: its content, only its mode, or a symlink.
FileStatus = Literal["added", "modified", "deleted", "mode", "link"]


@dataclass
class FileStat:
    """One path changed by a turn: how, and by how many lines."""

    path: str
    status: FileStatus
    added: int
    removed: int
    tool: str
    source: Source
    binary: bool = False
    before: Version | None = None
    after: Version | None = None


@dataclass
class InsideMove:
    """A rewind or undo the agent made from inside a turn (``snapstore mcp``), as ``log`` and
    ``show`` tell it: "turn 7 took back turns 5-6 at the agent's request"."""

    id: str  # the operation
    action: Action  # rewind, or undo (of an earlier one)
    turns: list[Turn]  # the earlier turns it took back (an undo: those it put back), oldest first
    numbers: list[int | None]  # their numbers on the session's branch now
    own: bool  # it took back only the turn's own changes made before it (its target was it)
    undoes: str | None = None  # an undo: the operation it took back


@dataclass
class RewindPoint:
    """A turn one can rewind to, with the stats ``log`` shows."""

    n: int | None  # its number on the current branch; None for a rewound turn
    turn: Turn
    files: list[FileStat] = field(default_factory=list)
    inside: list[InsideMove] = field(default_factory=list)  # moves made from inside it
    git: list[str] = field(default_factory=list)  # what it did to the repository, in words

    @property
    def added(self) -> int:
        return sum(f.added for f in self.files)

    @property
    def removed(self) -> int:
        return sum(f.removed for f in self.files)


@dataclass
class TurnDetail:
    """One turn and what it changed."""

    turn: Turn
    files: list[FileStat]
    n: int | None = None  # its number on its session's current branch; None off it
    inside: list[InsideMove] = field(default_factory=list)  # moves made from inside it
    git: list[str] = field(default_factory=list)  # what it did to the repository, in words


@dataclass
class Unattributed:
    """Changes a scan saw while the shell calls of several sessions ran at once (or one
    whose end never came): recorded in a ``user`` turn, given to none of them."""

    turn: str
    sessions: list[str]
    paths: list[str]
    created: float


@dataclass
class StoreStatus:
    """What a store holds, for ``snapstore status``."""

    root: str
    store: str
    sessions: int
    turns: int
    open_turn: str | None
    head: str | None
    blobs: int
    stored_bytes: int
    logical_bytes: int
    disk_bytes: int
    unattributed: list[Unattributed] = field(default_factory=list)  # oldest first
    #: what the session's last operation left (see :func:`leftover`): its id, its action,
    #: and the paths with their reasons; None when nothing is left to finish
    left: dict[str, Any] | None = None
    #: files the turns of the session's branch changed that were never captured (scan
    #: mode): turn, path, reason; a rewind cannot restore them
    uncaptured: list[dict[str, str]] = field(default_factory=list)

    @property
    def dedup_ratio(self) -> float:
        return self.logical_bytes / self.stored_bytes if self.stored_bytes else 1.0


def latest_session(repo: Repo) -> str | None:
    """The session whose newest agent turn is the most recent in the store."""
    newest: Turn | None = None
    with repo.read() as v:
        for turn in v.turns():
            if turn.kind in BRANCH_KINDS and (newest is None or turn.seq > newest.seq):
                newest = turn
    return newest.session if newest else None


def session_turns(v: View, session: str) -> list[Turn]:
    """Every agent turn of a session, newest first, rewound branches included."""
    turns = [t for t in v.turns() if t.session == session and t.kind in BRANCH_KINDS]
    return sorted(turns, key=lambda t: t.seq, reverse=True)


class NetChange(NamedTuple):
    """What a list of changes did to one path: its first ``before``, its last ``after``."""

    path: str
    before: Version | None
    after: Version | None
    last: Change
    tools: str


def net_changes(changes: list[Change]) -> list[NetChange]:
    """Per path, in the order first seen: first ``before`` against last recorded ``after``."""
    first: dict[str, Change] = {}
    last: dict[str, Change] = {}
    tools: dict[str, dict[str, None]] = {}
    for change in changes:
        first.setdefault(change.path, change)
        last[change.path] = change
        tools.setdefault(change.path, {})[change.tool] = None
    return [
        NetChange(
            path,
            opening.before,
            last[path].after if last[path].done else opening.before,
            last[path],
            ", ".join(t for t in tools[path] if t),
        )
        for path, opening in first.items()
    ]


class LineCounter:
    """Lines added and removed between two versions of a file.

    A count is read from the store (``counts``, keyed by the two digests) when it
    was made before, else made once by a diff and gathered in ``fresh`` for
    :func:`keep_counts`. Reading history therefore never diffs the same pair twice.
    """

    def __init__(self, v: View):
        self.v = v
        self.fresh: dict[bytes, tuple[int, int, bool]] = {}

    def __call__(self, before: Version | None, after: Version | None) -> tuple[int, int, bool]:
        old = before if before is not None and before.kind == FILE else None
        new = after if after is not None and after.kind == FILE else None
        key = old.key + new.key if old is not None and new is not None else None
        found = None if key is None else self.fresh.get(key) or self.v.line_counts(key)
        if found is None and any(x is not None and self.v.chunks(x.key) for x in (old, new)):
            found = (0, 0, True)  # a big file counts as binary: it is never read whole
        if found is None:
            old_data = self.v.blob(old.key) if old is not None else b""
            new_data = self.v.blob(new.key) if new is not None else b""
            binary = is_binary(old_data) or is_binary(new_data)
            if binary:
                found = (0, 0, True)
            elif old is None or new is None:  # added or deleted whole: no diff to make
                found = (len(split_lines(new_data)), len(split_lines(old_data)), False)
            else:
                found = (*line_stats(old_data, new_data), False)
            if key is not None:
                self.fresh[key] = found
        return found


def keep_counts(repo: Repo, counter: LineCounter) -> None:
    """Keep the counts made while reading, when the store can take them without a wait."""
    if not counter.fresh:
        return

    def put(tx: Tx) -> None:
        for key, (added, removed, binary) in counter.fresh.items():
            tx.put_line_counts(key, added, removed, binary)

    with contextlib.suppress(SnapstoreError):  # a busy, read-only or full store: next time
        repo.write_if_free(put)


def file_stats(v: View, changes: list[Change], count: LineCounter | None = None) -> list[FileStat]:
    """Per-path stats of a list of changes: first ``before`` against last ``after``."""
    count = count or LineCounter(v)
    stats = []
    for net in net_changes(changes):
        before, after = net.before, net.after
        if before is None and after is None:
            continue
        status: FileStatus = (
            "added" if before is None else "deleted" if after is None else "modified"
        )
        if before is not None and after is not None and before.digest == after.digest:
            if before.mode == after.mode and before.kind == after.kind:
                continue
            status = "mode"
        added, removed, binary = count(before, after)
        if LINK in (getattr(before, "kind", None), getattr(after, "kind", None)):
            status = "link" if status == "modified" else status
        stats.append(
            FileStat(
                net.path, status, added, removed, net.tools, net.last.source, binary, before, after
            )
        )
    return stats


def rewind_points(
    repo: Repo, session: str, all_branches: bool = False, git_dir: str | None = None
) -> list[RewindPoint]:
    """Rewind points newest first; numbered 1..N along the current branch, each with what
    it did to the repository (``git_dir``: the agent's ``GIT_DIR``, if any)."""
    with repo.read() as v:
        v.require_session(session)
        on_branch = [t for t in branch(v, session) if t.kind in BRANCH_KINDS]
        numbers = {t.id: n for n, t in enumerate(on_branch, start=1)}
        turns = session_turns(v, session) if all_branches else on_branch
        count = LineCounter(v)
        points = [
            RewindPoint(
                numbers.get(t.id),
                t,
                file_stats(v, v.changes(t.id), count),
                inside_moves(v, t, numbers),
                _git_words(repo, v, t, git_dir),
            )
            for t in turns
        ]
    keep_counts(repo, count)
    return points


def _git_words(repo: Repo, v: View, turn: Turn, git_dir: str | None) -> list[str]:
    """What the turn did to the repository, in words (git's own module only when it did)."""
    moves = v.git_moves(turn.id)
    if not moves:
        return []
    from .gitshow import describe

    return describe(repo, v, moves, git_dir)


def show(repo: Repo, ref: str | int, session: str, git_dir: str | None = None) -> TurnDetail:
    with repo.read() as v:
        turn = resolve_turn(v, ref, session)
        count = LineCounter(v)
        on_branch = [t for t in branch(v, turn.session) if t.kind in BRANCH_KINDS]
        numbers = {t.id: n for n, t in enumerate(on_branch, start=1)}
        detail = TurnDetail(
            turn,
            file_stats(v, v.changes(turn.id), count),
            number(v, turn),
            inside_moves(v, turn, numbers),
            _operation_words(turn) or _git_words(repo, v, turn, git_dir),
        )
    keep_counts(repo, count)
    return detail


def _operation_words(turn: Turn) -> list[str]:
    """What an operation did to the repository, as ``ops`` says it: each ref with where it
    went and the ref that keeps where it was, and the command that moves them back."""
    op = turn.op
    git = op.result.get("git") if op is not None else None
    if op is None or not git:
        return []
    from .gitshow import operation_lines, way_back

    return [text for _, text in operation_lines(git, way_back(op.action, op.new_head == turn.id))]


def inside_moves(v: View, turn: Turn, numbers: dict[str, int]) -> list[InsideMove]:
    """The rewinds and undos made from inside ``turn``, each with the turns it took back (an
    undo: those its rewind took back, which it put back), numbered as ``log`` numbers them."""
    moves = []
    for op_id in turn.rewinds:
        record = v.find_turn(op_id)
        op = record.op if record is not None else None
        if op is None:
            continue  # dropped by gc: nothing left to tell
        taken = op
        if op.action == UNDO and op.undoes is not None:
            undone = v.find_turn(op.undoes)
            taken = undone.op if undone is not None and undone.op is not None else op
        back: list[Turn] = []
        if taken.action == REWIND and taken.target is not None:
            for t in ancestors(v, taken.prev_head):
                back.append(t)
                if t.id == taken.target:
                    break
        earlier = [t for t in reversed(back) if t.id != (taken.within or turn.id)]
        moves.append(
            InsideMove(
                op_id,
                op.action,
                earlier,
                [numbers.get(t.id) for t in earlier],
                not earlier,
                op.undoes if op.action == UNDO else None,
            )
        )
    return moves


def status(repo: Repo, session: str) -> StoreStatus:
    """Counts and sizes, read in one transaction."""
    with repo.read() as v:
        sessions = v.session_count()
        turns = 0
        shared = []
        for turn in v.turns():
            turns += turn.kind == AGENT
            if turn.unattributed:
                shared.append(turn)
        unattributed = [
            Unattributed(t.id, list(t.unattributed), [c.path for c in v.changes(t.id)], t.created)
            for t in sorted(shared, key=lambda t: t.seq)
        ]
        record = v.session(session)
        open_turn = record.open_turn if record else None
        if open_turn and v.turn(open_turn).state != OPEN:
            open_turn = None
        count, stored = v.blob_usage()
        sizes: dict[bytes, int] = {}
        logical = 0
        for change in v.all_changes():
            for version in (change.before, change.after):
                if version is not None:
                    if version.key not in sizes:
                        sizes[version.key] = v.blob_size(version.key)
                    logical += sizes[version.key]
        head = v.head(session)
        left = leftover(v, session)
        uncaptured = [
            {"turn": turn.id, "path": path, "reason": reason}
            for turn in ancestors(v, head)
            for path, reason in turn.skipped or ()
        ]
    return StoreStatus(
        repo.root,
        repo.store_dir,
        sessions,
        turns,
        open_turn,
        head,
        count,
        stored,
        logical,
        repo.data_bytes(),
        unattributed,
        None if left is None else _left(left),
        uncaptured,
    )


def _left(turn: Turn) -> dict[str, Any]:
    op = turn.op
    assert op is not None and op.result is not None
    return {
        "operation": turn.id,
        "action": op.action,
        "paths": op.result["conflicts"] + op.result["errors"],
        "failed": [item["path"] for item in op.result["errors"]],  # the rest: conflicts
        "marked": list(op.result.get("marked", ())),  # conflicts written with markers
    }


@dataclass
class Operation:
    """One rewind, switch or undo, as ``snapstore ops`` lists it (from its record)."""

    id: str
    action: Action
    session: str
    time: float
    target: str | None  # rewind: the first turn taken back; switch: the turn; undo: the op
    target_n: int | None  # the target's number on its session's current branch, now
    mode: Mode
    status: Status  # planned: interrupted, not finished yet
    files: list[str]  # restored, merged, deleted or written with conflict markers
    conflicts: list[str]
    errors: list[str]
    new_head: str | None
    undoes: str | None
    undone_by: str | None
    redoes: str | None  # a redo: the undo it took back
    redone_by: str | None  # an undo: the redo that took it back
    git: dict[str, Any] | None = None  # what it did to the repository (its result's ``git``)


def operations(repo: Repo, session: str | None = None) -> list[Operation]:
    """Every rewind, switch and undo (of ``session``, or of the store), newest first.

    Read from the operations' own records, which keep what each reported and which
    undo took it back; the audit log is not needed (gc may have trimmed it).
    """
    with repo.read() as v:
        if session is not None:
            v.require_session(session)
        records = sorted(
            (t for t in v.turns() if t.op is not None and session in (None, t.session)),
            key=lambda t: t.seq,
            reverse=True,
        )
        numbers: dict[str, dict[str, int]] = {}
        for turn in records:
            if turn.session not in numbers:
                on_branch = [t for t in branch(v, turn.session) if t.kind in BRANCH_KINDS]
                numbers[turn.session] = {t.id: n for n, t in enumerate(on_branch, start=1)}
    listed = []
    for turn in records:
        op = turn.op
        assert op is not None
        result = op.result
        listed.append(
            Operation(
                turn.id,
                op.action,
                turn.session,
                turn.created,
                op.target,
                numbers[turn.session].get(op.target or ""),
                op.mode,
                op.status,
                sorted(
                    {
                        p
                        for key in ("restored", "merged", "deleted", "marked")
                        for p in result.get(key, ())
                    }
                ),
                [item["path"] for item in result.get("conflicts", ())],
                [item["path"] for item in result.get("errors", ())],
                op.new_head,
                op.undoes,
                op.undone_by,
                op.redoes,
                op.redone_by,
                result.get("git"),
            )
        )
    return listed


@dataclass
class SessionInfo:
    """One session, as ``snapstore sessions`` lists it."""

    name: str
    agent: str  # the part of the name before ``/`` (hooks name sessions ``AGENT/ID``), or ''
    agent_session: str  # the agent's own session id: the rest of the name
    created: float
    last_activity: float  # the newest turn's start or end, or an operation's
    turns: int  # agent turns on the current branch
    all_turns: int  # agent turns on every branch, rewound ones included
    head: str | None
    head_n: int | None  # the head's number (1) when it is a rewind point
    open_turn: str | None
    running: bool  # an open turn, or the agent's own registry names a live process on it


def _agent_runs(session: str, homes: Mapping[str, str] | None) -> bool:
    if homes is None:
        return False
    from .. import conversation  # only here: reads of history load no agent's module

    return bool(conversation.running(session, homes))


def sessions(repo: Repo, homes: Mapping[str, str] | None = None) -> list[SessionInfo]:
    """Every session, the most recently active first (ties: by name).

    "Running" is an open turn (the store's own signal: an agent that died in the middle of
    a turn counts until its next prompt closes that turn, or ``end`` does), or, given the
    agents' ``homes`` (as for a conversation rewind), the agent's own registry of running
    sessions naming a process that is alive (snapstore.conversation).
    """
    with repo.read() as v:
        records = list(v.sessions())
        last: dict[str, float] = {}
        total: dict[str, int] = {}
        for turn in v.turns():
            when = max(turn.created, turn.closed or 0.0)
            last[turn.session] = max(last.get(turn.session, 0.0), when)
            total[turn.session] = total.get(turn.session, 0) + (turn.kind in BRANCH_KINDS)
        listed = []
        for record in records:
            on_branch = [t for t in branch(v, record.name) if t.kind in BRANCH_KINDS]
            head = v.head(record.name)
            open_turn = v.open_turn(record.name)
            agent, _, rest = record.name.partition("/")
            listed.append(
                SessionInfo(
                    record.name,
                    agent if rest else "",
                    rest,
                    record.created,
                    max(last.get(record.name, 0.0), record.created),
                    len(on_branch),
                    total.get(record.name, 0),
                    head,
                    1 if on_branch and on_branch[0].id == head else None,
                    None if open_turn is None else open_turn.id,
                    open_turn is not None or _agent_runs(record.name, homes),
                )
            )
    listed.sort(key=lambda s: s.name)
    listed.sort(key=lambda s: s.last_activity, reverse=True)
    return listed
