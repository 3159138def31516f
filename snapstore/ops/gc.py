"""Retention: drop old turns, sweep the blobs nothing needs, compact the file.

A gc runs under the write lock in steps, each one durable commit that leaves
a store fsck accepts, so a crash between any two only leaves garbage for the
next gc:

1. **Plan** (read only): the turns to drop. A turn goes when it is older than
   ``keep_days``, or beyond the ``keep_turns`` newest of its session, and, to
   meet ``max_size``, the oldest turns go first. Never dropped: an open turn,
   an interrupted operation, and the last rewind each session can undo with
   the turns that undo needs. A rewind whose undo needs a dropped turn goes
   with it.
2. **Prune** (one commit): the turns, their changes and events go; a kept turn
   whose parent went hangs from the nearest kept ancestor, and heads and
   rewind links move the same way. A session with nothing left goes.
3. **Sweep** (one commit): the live blobs are those a kept change, ``paths``
   (the delta bases and scan baseline) or the scan ``index`` names. A live
   delta whose base is not live is re-encoded against its nearest live
   ancestor, or as a full frame; chain depths are rewritten to match; then
   every other blob is deleted.
4. **Compact**: LMDB never gives pages back to the file system, so the file is
   copied without its free pages and renamed over the old one
   (:meth:`Database.compact`), only when no other process has the store open.

With ``max_size``, steps 1-3 repeat, dropping more of the oldest turns, until
the live data fits or nothing more may go.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ..core import blobs, faults
from ..core.errors import StoreCorrupt
from ..core.records import AGENT, FINGERPRINT, OPEN, REWIND, USER, Change, Turn
from ..core.repo import Locked, Repo, Tx
from ..core.view import View
from ..git.files import blob_keys
from .branches import last_undoable
from .session_base import base_keys

DAY = 86400.0
DEFAULT_KEEP_DAYS = 30
#: LMDB's page header, and a node's header, key and slot in a leaf page (for estimates).
OVERFLOW_HEADER, NODE_OVERHEAD = 16, 48
#: Rounds of prune-and-measure before a quota that cannot be met is reported.
MAX_ROUNDS = 8


@dataclass
class GcPolicy:
    """What to keep. None means no limit of that kind."""

    keep_days: float | None = DEFAULT_KEEP_DAYS
    keep_turns: int | None = None
    max_size: int | None = None


@dataclass
class GcResult:
    """What a gc removed and how big the store is now."""

    removed_turns: list[str] = field(default_factory=list)
    removed_sessions: list[str] = field(default_factory=list)
    removed_blobs: int = 0
    rebased_blobs: int = 0
    freed_bytes: int = 0
    store_bytes: int = 0
    live_bytes: int = 0
    compacted: bool = False
    dry_run: bool = False
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        return {
            "removed_turns": len(self.removed_turns),
            "removed_blobs": self.removed_blobs,
            "freed_bytes": self.freed_bytes,
            "store_bytes": self.store_bytes,
            "removed_sessions": len(self.removed_sessions),
            "rebased_blobs": self.rebased_blobs,
            "live_bytes": self.live_bytes,
            "compacted": self.compacted,
            "dry_run": self.dry_run,
            "notes": self.notes,
        }


def gc(
    repo: Repo,
    policy: GcPolicy,
    *,
    dry_run: bool = False,
    compact: bool = True,
    compact_timeout: float = 2.0,
) -> GcResult:
    """Apply ``policy``; see the module docstring for the steps and what is never dropped."""
    result = GcResult(dry_run=dry_run)
    before = repo.data_bytes()
    with repo.lock() as w:
        graph = _Graph.load(repo)
        drop = graph.by_policy(policy, repo.clock())
        if policy.max_size is not None:
            drop = graph.for_quota(drop, repo.live_bytes() - policy.max_size)
        if dry_run:
            result.removed_turns = sorted(drop)
            result.removed_blobs, result.freed_bytes = graph.sweep_estimate(drop)
            result.store_bytes = before
            result.live_bytes = repo.live_bytes()
            return result
        for _ in range(MAX_ROUNDS):
            _prune(w, graph, drop, result)
            _sweep(w, result)
            result.live_bytes = repo.live_bytes()
            over = result.live_bytes - (policy.max_size or result.live_bytes)
            if over <= 0:
                break
            graph = _Graph.load(repo)
            drop = graph.for_quota(set(), over)
            if not drop:
                result.notes.append(
                    f"the quota of {policy.max_size} bytes cannot be met: the {result.live_bytes} "
                    "live bytes are the open turn, the last undoable rewind and the latest "
                    "version of every file"
                )
                break
        if compact:
            result.compacted = w.compact(compact_timeout)
            if not result.compacted:
                result.notes.append(
                    "compaction skipped: another process has the store open; "
                    "the freed space is reused but the file did not shrink"
                )
    result.store_bytes = repo.data_bytes()
    result.freed_bytes = max(0, before - result.store_bytes)
    return result


@dataclass
class _Graph:
    """Every turn, what protects it, and which blobs each one names."""

    turns: dict[str, Turn]
    protected: set[str]
    refs: dict[str, set[bytes]]  # turn id -> the blobs its changes name
    roots: set[bytes]  # blobs named by paths and index
    sizes: dict[bytes, int]  # blob -> about the bytes it takes in the file
    chunks: dict[bytes, list[bytes]]  # chunked blob -> the chunks it lists

    @classmethod
    def load(cls, repo: Repo, v: View | None = None) -> _Graph:
        """The graph as one snapshot holds it (``v``, else a fresh read)."""
        if v is None:
            with repo.read() as fresh:
                return cls.load(repo, fresh)
        turns = {t.id: t for t in v.turns()}
        protected = {t.id for t in turns.values() if t.state == OPEN}
        for op_id in v.unfinished():
            protected |= _needed_by(turns, op_id, finishing=True)
        for session in {t.session for t in turns.values()}:
            last = last_undoable(v, session)
            if last is not None:
                protected |= _needed_by(turns, last.id, finishing=False)
        refs: dict[str, set[bytes]] = {}
        for change in v.all_changes():
            refs.setdefault(change.turn, set()).update(_digests(change))
        for move in v.all_git_moves():  # a turn's indexes and stash lists
            refs.setdefault(move.turn, set()).update(blob_keys(move.name, move.old, move.new))
        for turn in turns.values():  # what an operation moved, for its undo
            for entry in turn.op.git.get("moves", ()) if turn.op is not None else ():
                keys = blob_keys(entry["name"], entry["before"], entry["after"])
                refs.setdefault(turn.id, set()).update(keys)
        roots = {digest for _, digest in v.path_digests()}
        for name, recorded in v.git_values().items():  # the last index seen: the next move's
            roots.update(blob_keys(name, recorded))
        for record in v.sessions():
            roots.update(base_keys(record.base))
        roots.update(
            value[FINGERPRINT.size :]
            for value in v.index_values()
            if len(value) == FINGERPRINT.size + blobs.DIGEST_SIZE
        )
        page = repo.page_size()
        sizes, chunks = {}, {}
        for key, value in v.blob_values():
            sizes[key] = _footprint(len(value), page)
            if value[0] == blobs.CHUNKED:
                try:
                    listed = blobs.chunk_refs(value, blobs.parse_header(value, key), key)
                except StoreCorrupt:
                    continue  # fsck's to report; its chunks are kept by nothing here
                chunks[key] = [chunk for chunk, _ in listed]
        return cls(turns, protected, refs, roots, sizes, chunks)

    def by_policy(self, policy: GcPolicy, now: float) -> set[str]:
        drop: set[str] = set()
        if policy.keep_days is not None:
            cutoff = now - policy.keep_days * DAY
            drop.update(t.id for t in self.turns.values() if t.created < cutoff)
        if policy.keep_turns is not None:
            drop.update(self._beyond(policy.keep_turns))
        return self._close(drop)

    def _beyond(self, keep: int) -> set[str]:
        """Agent turns past the ``keep`` newest of their session, and user turns older
        than the oldest agent turn kept."""
        by_session: dict[str, list[Turn]] = {}
        for turn in self.turns.values():
            if turn.kind == AGENT:
                by_session.setdefault(turn.session, []).append(turn)
        drop: set[str] = set()
        cutoff: dict[str, float] = {}
        for session, turns in by_session.items():
            turns.sort(key=lambda t: t.seq, reverse=True)
            if len(turns) > keep:
                drop.update(t.id for t in turns[keep:])
                cutoff[session] = turns[keep - 1].created if keep else float("inf")
        drop.update(
            t.id
            for t in self.turns.values()
            if t.kind == USER and t.created < cutoff.get(t.session, float("-inf"))
        )
        return drop

    def for_quota(self, drop: set[str], over: int) -> set[str]:
        """Add the oldest turns until the blobs and records they alone hold exceed ``over``."""
        drop = set(drop)
        if over <= 0:
            return drop
        _, freed = self.sweep_estimate(drop)
        candidates = sorted(
            (t for t in self.turns.values() if t.id not in drop and t.id not in self.protected),
            key=lambda t: (t.created, t.seq),
        )
        for turn in candidates:
            if freed >= over:
                break
            drop = self._close(drop | {turn.id})
            _, freed = self.sweep_estimate(drop)
        return drop

    def _close(self, drop: set[str]) -> set[str]:
        """Never the protected; and a rewind goes when its undo needs a dropped turn."""
        drop = drop - self.protected
        for turn in self.turns.values():
            op = turn.op
            if turn.kind != REWIND or op is None or turn.id in drop or turn.id in self.protected:
                continue
            if (
                op.undoes is None
                and op.undone_by is None
                and (drop.intersection(op.reverted) or op.prev_head in drop)
            ):
                drop.add(turn.id)
        return drop

    def live(self, drop: set[str]) -> set[bytes]:
        """The blobs still named once ``drop`` is gone."""
        live = set(self.roots)
        for turn_id, digests in self.refs.items():
            if turn_id not in drop:
                live.update(digests)
        for key in [k for k in live if k in self.chunks]:  # a big file's chunks live with it
            live.update(self.chunks[key])
        return live

    def sweep_estimate(self, drop: set[str]) -> tuple[int, int]:
        """How many blobs, and about how many bytes, dropping ``drop`` frees."""
        live = self.live(drop)
        dead = [k for k in self.sizes if k not in live]
        return len(dead), sum(self.sizes[k] for k in dead)

    def nearest_kept(self, turn_id: str | None, drop: set[str], link: str = "parent") -> str | None:
        """Follow ``parent`` (or an operation's ``prev_rewind``) past dropped turns."""
        seen = set()
        while turn_id is not None and turn_id in drop and turn_id not in seen:
            seen.add(turn_id)
            turn = self.turns.get(turn_id)
            if turn is None:
                return None
            turn_id = (
                turn.parent if link == "parent" else (turn.op.prev_rewind if turn.op else None)
            )
        return None if turn_id in drop else turn_id


def _needed_by(turns: dict[str, Turn], op_id: str, finishing: bool) -> set[str]:
    """An operation's record and the turns that finishing it (an interrupted one) or
    undoing it (the last one) reads or moves the head to."""
    turn = turns.get(op_id)
    if turn is None or turn.op is None:
        return {op_id}
    op = turn.op
    needed = {op_id, *op.reverted, op.prev_head, op.new_head if finishing else None}
    if finishing and op.undoes is not None:
        needed |= _needed_by(turns, op.undoes, finishing)
    return {t for t in needed if t is not None}


def _footprint(size: int, page: int) -> int:
    """About what a value of ``size`` bytes takes in the file: large ones get whole pages."""
    if size > page // 2:
        return -(-(size + OVERFLOW_HEADER) // page) * page
    return size + NODE_OVERHEAD


def _digests(change: Change) -> Iterable[bytes]:
    for version in (change.before, change.after):
        if version is not None:
            yield version.key


def _prune(w: Locked, graph: _Graph, drop: set[str], result: GcResult) -> None:
    """Step 2: drop the turns with their changes and events; relink what stays."""
    if not drop:
        return

    def commit(tx: Tx) -> list[str]:
        for turn_id in drop:
            tx.delete_turn(turn_id)
        for turn in graph.turns.values():
            if turn.id in drop:
                continue
            parent = graph.nearest_kept(turn.parent, drop)
            prev = graph.nearest_kept(turn.op.prev_rewind, drop, "op") if turn.op else None
            if parent == turn.parent and (turn.op is None or prev == turn.op.prev_rewind):
                continue
            current = tx.turn(turn.id)
            op = None if current.op is None else current.op._replace(prev_rewind=prev)
            tx.put_turn(current._replace(parent=parent, op=op))
        removed = _relink_sessions(tx, graph, drop)
        tx.event("gc", turns=len(drop), sessions=len(removed))
        tx.forget_events(drop)
        faults.point("gc.pruned")
        return removed

    removed = w.write(commit)
    result.removed_turns += sorted(drop)
    result.removed_sessions += removed


def _relink_sessions(tx: Tx, graph: _Graph, drop: set[str]) -> list[str]:
    kept_sessions = {t.session for t in graph.turns.values() if t.id not in drop}
    removed = []
    for session in list(tx.sessions()):
        if session.name not in kept_sessions and session.open_turn is None:
            tx.delete_session(session.name)
            removed.append(session.name)
            continue
        head = tx.head(session.name)
        if head in drop:
            tx.set_head(session.name, graph.nearest_kept(head, drop))
        last = graph.nearest_kept(session.last_rewind, drop, "op")
        if last != session.last_rewind:
            tx.put_session(session._replace(last_rewind=last))
    return removed


def _sweep(w: Locked, result: GcResult) -> None:
    """Step 3: rebase live deltas whose base is dead, fix depths, delete dead blobs.

    The new values are made from a snapshot, before the commit and under the same lock,
    so a chain is always read as it was written; the snapshot is closed before the commit
    begins, since a commit that must grow the map cannot while a read is open (core.db).
    """
    rewrites: dict[bytes, bytes] = {}
    with w.repo.read() as snap:
        graph = _Graph.load(w.repo, snap)
        live = graph.live(set())
        headers = {k: blobs.parse_header(value, k) for k, value in snap.blob_values()}
        deltas = sorted(
            (k for k in live if k in headers and headers[k].base is not None),
            key=lambda k: headers[k].depth,
        )  # bases before what rests on them
        dead = [k for k in headers if k not in live]
        dead_refs = [k for k, _ in snap.git_refs() if k not in live]  # no path names them
        stale_counts = [k for k in snap.counted() if k[:32] not in live or k[32:] not in live]
        current = dict(headers)
        rebased = 0
        for key in deltas:
            value = original = snap.blob_value(key)
            assert value is not None
            if headers[key].base not in live:
                value = snap.encode_against(snap.blob(key), key, _live_ancestor(headers, key, live))
                rebased += 1
            header = blobs.parse_header(value, key)
            if header.base is not None and current[header.base].depth + 1 != header.depth:
                value = blobs.with_depth(value, current[header.base].depth + 1)
                header = blobs.parse_header(value, key)
            if value is not original:
                rewrites[key] = value
            current[key] = header

    def commit(tx: Tx) -> None:
        for key, value in rewrites.items():
            tx.replace_blob_value(key, value)
        faults.point("gc.rebased")
        for key in dead:
            tx.delete_blob(key)
        for key in dead_refs:
            tx.delete_git_ref(key)
        for key in stale_counts:
            tx.forget_line_counts(key)

    w.write(commit)
    result.removed_blobs += len(dead)
    result.rebased_blobs += rebased


def _live_ancestor(
    headers: dict[bytes, blobs.BlobHeader], key: bytes, live: set[bytes]
) -> bytes | None:
    """The nearest blob below ``key`` in its delta chain that stays."""
    base = headers[key].base
    while base is not None and base not in live:
        base = headers[base].base if base in headers else None
    return base
