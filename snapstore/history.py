"""Reading history: the session's branch, rewind points, one turn's stats, status.

Every figure here comes from the store, never from the disk: the lines added
and removed by a turn are counted between the blobs it recorded.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .blobs import parse_header
from .errors import BadInput, UnknownTurn
from .merge import is_binary, line_stats
from .records import AGENT, OPEN, Change, Turn, Version
from .repo import Repo, View

#: An argument of at most this many digits is a number from ``log``, not an id prefix.
MAX_NUMBER_DIGITS = 6


@dataclass
class FileStat:
    """One path changed by a turn: how, and by how many lines."""

    path: str
    status: str  # added | modified | deleted | mode | link
    added: int
    removed: int
    tool: str
    source: str
    binary: bool = False
    before: Version | None = None
    after: Version | None = None


@dataclass
class RewindPoint:
    """A turn one can rewind to, with the stats ``log`` shows."""

    n: int | None  # its number on the current branch; None for a rewound turn
    turn: Turn
    files: list[FileStat] = field(default_factory=list)

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

    @property
    def dedup_ratio(self) -> float:
        return self.logical_bytes / self.stored_bytes if self.stored_bytes else 1.0


def branch(v: View, session: str) -> list[Turn]:
    """The session's current branch, from the head back to its first turn."""
    turns = []
    turn_id = v.head(session)
    seen = set()
    while turn_id is not None and turn_id not in seen:
        seen.add(turn_id)
        turn = v.turn(turn_id)
        turns.append(turn)
        turn_id = turn.parent
    return turns


def last_undoable(v: View, session: str) -> Turn | None:
    """The rewind a plain ``undo`` takes back: the newest applied one not yet undone."""
    record = v.session(session)
    op_id = record.last_rewind if record else None
    while op_id is not None:
        turn = v.turn(op_id)
        assert turn.op is not None
        if turn.op.undoes is None and turn.op.undone_by is None and turn.op.status == "applied":
            return turn
        op_id = turn.op.prev_rewind
    return None


def latest_session(repo: Repo) -> str | None:
    """The session whose newest agent turn is the most recent in the store."""
    newest: Turn | None = None
    with repo.read() as v:
        for turn in v.turns():
            if turn.kind == AGENT and (newest is None or turn.seq > newest.seq):
                newest = turn
    return newest.session if newest else None


def session_turns(v: View, session: str) -> list[Turn]:
    """Every agent turn of a session, newest first, rewound branches included."""
    turns = [t for t in v.turns() if t.session == session and t.kind == AGENT]
    return sorted(turns, key=lambda t: t.seq, reverse=True)


def file_stats(v: View, changes: list[Change]) -> list[FileStat]:
    """Per-path stats of a list of changes: first ``before`` against last ``after``."""
    first: dict[str, Change] = {}
    last: dict[str, Change] = {}
    tools: dict[str, dict[str, None]] = {}
    for change in changes:
        first.setdefault(change.path, change)
        last[change.path] = change
        tools.setdefault(change.path, {})[change.tool] = None
    stats = []
    for path, opening in first.items():
        closing = last[path]
        before = opening.before
        after = closing.after if closing.done else before
        stat = _stat(v, path, before, after, closing)
        if stat is not None:
            stat.tool = ", ".join(t for t in tools[path] if t)
            stats.append(stat)
    return stats


def _stat(v: View, path: str, before: Version | None, after: Version | None,
          change: Change) -> FileStat | None:
    if before is None and after is None:
        return None
    status = "added" if before is None else "deleted" if after is None else "modified"
    if before is not None and after is not None and before.digest == after.digest:
        if before.mode == after.mode and before.kind == after.kind:
            return None
        status = "mode"
    old = v.content(before) if before and before.kind == "file" else None
    new = v.content(after) if after and after.kind == "file" else None
    old_data = old.data if old else b""
    new_data = new.data if new else b""
    binary = is_binary(old_data) or is_binary(new_data)
    added, removed = (0, 0) if binary else line_stats(old_data, new_data)
    if "link" in (getattr(before, "kind", None), getattr(after, "kind", None)):
        status = "link" if status == "modified" else status
    return FileStat(path, status, added, removed, change.tool, change.source, binary,
                    before, after)


def turn_stats(v: View, turn: Turn) -> list[FileStat]:
    return file_stats(v, v.changes(turn.id))


def rewind_points(repo: Repo, session: str, all_branches: bool = False) -> list[RewindPoint]:
    """Rewind points newest first; numbered 1..N along the current branch."""
    with repo.read() as v:
        v.require_session(session)
        on_branch = [t for t in branch(v, session) if t.kind == AGENT]
        numbers = {t.id: n for n, t in enumerate(on_branch, start=1)}
        turns = session_turns(v, session) if all_branches else on_branch
        return [RewindPoint(numbers.get(t.id), t, turn_stats(v, t)) for t in turns]


def resolve_turn(v: View, ref: str | int, session: str) -> Turn:
    """A turn from a number on the current branch, or an id or unique id prefix."""
    text = str(ref).strip()
    if not text:
        raise BadInput("empty turn reference")
    v.require_session(session)
    if text.isdigit() and len(text) <= MAX_NUMBER_DIGITS:
        points = [t for t in branch(v, session) if t.kind == AGENT]
        n = int(text)
        if not 1 <= n <= len(points):
            raise UnknownTurn(f"no rewind point {n} in session {session!r} "
                              f"(it has {len(points)})", ref=text, session=session,
                              count=len(points))
        return points[n - 1]
    matches = [t for t in v.turns() if t.id.startswith(text)]
    in_session = [t for t in matches if t.session == session]
    matches = in_session or matches
    if not matches:
        raise UnknownTurn(f"unknown turn {text!r}", ref=text, session=session)
    if len(matches) > 1:
        raise BadInput(f"turn prefix {text!r} is ambiguous: "
                       + ", ".join(sorted(t.id for t in matches)[:5]))
    return matches[0]


def show(repo: Repo, ref: str | int, session: str) -> TurnDetail:
    with repo.read() as v:
        turn = resolve_turn(v, ref, session)
        return TurnDetail(turn, turn_stats(v, turn))


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
        unattributed = [Unattributed(t.id, list(t.unattributed or ()),
                                     [c.path for c in v.changes(t.id)], t.created)
                        for t in sorted(shared, key=lambda t: t.seq)]
        record = v.session(session)
        open_turn = record.open_turn if record else None
        if open_turn and v.turn(open_turn).state != OPEN:
            open_turn = None
        sizes = {}
        stored = 0
        for key, value in v.blob_values():
            sizes[key] = parse_header(value, key).size
            stored += len(value)
        logical = 0
        for change in v.all_changes():
            for version in (change.before, change.after):
                if version is not None:
                    logical += sizes.get(version.key, 0)
        head = v.head(session)
    return StoreStatus(repo.root, repo.store_dir, sessions, turns, open_turn, head,
                       len(sizes), stored, logical, repo.data_bytes(), unattributed)
