"""Push: upload a store's sessions, their turns and the blobs they need to a remote.

A turn is pushed as what it recorded: its changes (paths, before and after
versions) and the blobs they name, never a tree. The write order makes every
interruption harmless (docs/format.md §9):

1. packs of the blobs the remote lacks (per the union of its indexes, whoever
   uploaded them);
2. the index of those packs;
3. the turn records, oldest first;
4. the writer's new state: each session's base, head and turn states.

Until step 4 nothing new is reachable from a state, so a push killed at any
moment leaves only objects that the next push reuses (the turns, found by
listing) or that ``remote gc`` reclaims (packs nothing names). Every object is
created with a create-only put and keyed so two machines never write the same
key: packs and indexes by their digest, turns by their id, states by the
writer's store id and a sequence number.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ...core import blobs, faults
from ...core.db import FILE_MODE
from ...core.errors import StoreLocked
from ...core.records import AGENT, OPEN, Change, Session, Turn, version_to_json
from ...core.repo import Repo
from ...core.view import View
from ...ops.session_base import base_keys
from ..format import layout
from ..format.catalog import Catalog

LOCK_FILE = "push.lock"


@dataclass
class SyncResult:
    """What a push or a pull moved."""

    remote: str
    sessions: list[str] = field(default_factory=list)
    turns: int = 0
    blobs: int = 0
    bytes: int = 0
    requests: int = 0
    warnings: list[str] = field(default_factory=list)
    bases: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "remote": self.remote,
            "sessions": self.sessions,
            "turns": self.turns,
            "blobs": self.blobs,
            "bytes": self.bytes,
            "requests": self.requests,
            "warnings": self.warnings,
            "bases": self.bases,
        }


def identity(store_id: str, session: Session) -> tuple[str, str]:
    """Who a session is on every remote: the store it began in, and its name there."""
    if session.origin:
        return session.origin["store"], session.origin["name"]
    return store_id, session.name


def base_turn_id(origin: str, name: str) -> str:
    """The id of the turn a pull makes for a session's uncommitted base (the same everywhere)."""
    digest = blobs.digest_hex(f"base:{origin}:{name}".encode())
    return digest[:11] + "b" if digest[:12].isdigit() else digest[:12]


def turn_record(origin: str, name: str, turn: Turn, changes: list[Change]) -> dict[str, Any]:
    """A turn as the remote keeps it: what never changes once it is closed."""
    return {
        "version": layout.RECORD,
        "id": turn.id,
        "session": {"origin": origin, "name": name},
        "kind": turn.kind,
        "parent": turn.parent,
        "prompt": turn.prompt,
        "message_id": turn.message_id,
        "created": turn.created,
        "closed": turn.closed,
        "implicit": turn.implicit,
        "changes": [
            {
                "seq": c.seq,
                "path": c.path,
                "before": version_to_json(c.before),
                "after": version_to_json(c.after),
                "done": c.done,
                "tool": c.tool,
                "source": c.source,
                "time": c.time,
                "mkdirs": c.mkdirs,
            }
            for c in changes
        ],
    }


class _Local:
    """One session as this store holds it, ready to push."""

    def __init__(self, v: View, store_id: str, session: Session):
        self.origin, self.name = identity(store_id, session)
        self.local_name = session.name
        self.session = session
        synthetic = base_turn_id(self.origin, self.name)
        turns = [
            t
            for t in v.turns()
            if t.session == session.name
            and t.kind == AGENT
            and t.state != OPEN
            and t.id != synthetic
        ]
        self.turns = sorted(turns, key=lambda t: (t.created, t.seq))
        self.changes = {t.id: v.changes(t.id) for t in self.turns}
        head = v.head(session.name)
        self.head = None if head == synthetic else head

    def state(self, pushed: set[str]) -> dict[str, Any]:
        return {
            "origin": self.origin,
            "name": self.name,
            "created": self.session.created,
            "base": self.session.base,
            "head": self.head if self.head in pushed else None,
            "turns": [[t.id, t.state] for t in self.turns if t.id in pushed],
        }

    def blob_keys(self, turns: Iterable[Turn]) -> set[bytes]:
        keys = base_keys(self.session.base)
        for turn in turns:
            for change in self.changes[turn.id]:
                keys.update(v.key for v in (change.before, change.after) if v is not None)
        return keys


class _PushLock:
    """One push at a time per store (an automatic push may start while one runs)."""

    def __init__(self, store_dir: str, timeout: float):
        self.path = os.path.join(store_dir, LOCK_FILE)
        self.timeout = timeout
        self.fd = -1

    def __enter__(self) -> _PushLock:
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return self
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(self.fd)
                    raise StoreLocked(
                        "another push from this store is running", path=self.path
                    ) from None
                time.sleep(0.05)

    def __exit__(self, *exc: object) -> None:
        os.close(self.fd)


def push(
    repo: Repo, catalog: Catalog, sessions: list[str] | None = None, *, lock_timeout: float = 600.0
) -> SyncResult:
    """Upload ``sessions`` (None: every session) and the blobs they need that the remote
    lacks; returns what went up."""
    result = SyncResult(catalog.url)
    with _PushLock(repo.store_dir, lock_timeout):
        catalog.open(create=True)
        with repo.read() as v:
            me = v.store_id()
            chosen = (
                [v.require_session(s) for s in sessions]
                if sessions is not None
                else list(v.sessions())
            )
            local = [_Local(v, me, s) for s in chosen]
        tombstones = catalog.tombstones()
        on_remote = catalog.turn_ids() - tombstones.turns
        own = catalog.newest_state_keys(me).get(me)
        previous = catalog.state(own[1]) if own else None
        mine = {(s["origin"], s["name"]): s for s in (previous or {}).get("sessions", [])}

        # A pulled session goes up only when this store added turns to it.
        local = [
            s
            for s in local
            if s.origin == me
            or (s.origin, s.name) in mine
            or any(t.id not in on_remote for t in s.turns)
        ]
        new = [
            (s, t)
            for s in local
            for t in s.turns
            if t.id not in on_remote and t.id not in tombstones.turns
        ]
        wanted: set[bytes] = set()
        for session in local:
            wanted |= session.blob_keys(t for s, t in new if s is session)
        with repo.read() as v:
            wanted |= _chunks_of(v, wanted)
        index = catalog.blob_index(tombstones.packs)
        missing = sorted(k for k in wanted if k.hex() not in index)
        if missing and catalog.version < layout.VERSION:
            with repo.read() as v:
                if any(v.chunks(key) is not None for key in missing if v.has_blob(key)):
                    catalog.raise_version()  # before anything lists a chunk
        result.blobs, result.bytes = _upload_blobs(repo, catalog, missing, index)

        for session, turn in sorted(new, key=lambda item: (item[1].created, item[1].seq)):
            record = turn_record(session.origin, session.name, turn, session.changes[turn.id])
            data = layout.seal(record)
            if not catalog.create(layout.turn_key(turn.id), data):
                raise catalog.error(
                    f"turn {turn.id} is already there with other content "
                    "(a turn id reused by another store)",
                    layout.turn_key(turn.id),
                )
            result.bytes += len(data)
            faults.point("push.turn")
        result.turns = len(new)

        pushed = on_remote | {t.id for _, t in new}
        for session in local:
            mine[(session.origin, session.name)] = session.state(pushed)
        sessions_now = [mine[k] for k in sorted(mine)]
        if previous is None or sessions_now != previous["sessions"]:
            seq = (own[0] if own else 0) + 1
            state = {
                "version": layout.RECORD,
                "writer": me,
                "seq": seq,
                "time": repo.clock(),
                "sessions": sessions_now,
            }
            data = layout.seal(state)
            if not catalog.create(layout.state_key(me, seq), data):
                raise catalog.error(
                    "another push from this store wrote the same state number; push again",
                    layout.state_key(me, seq),
                )
            result.bytes += len(data)
            faults.point("push.state")
        result.sessions = [s.local_name for s in local]
    result.requests = catalog.total_requests()
    return result


def _chunks_of(v: View, keys: set[bytes]) -> set[bytes]:
    """The chunks of the chunked blobs among ``keys``: no change names them, but a pull
    needs them (each is checked against its digest when it goes up)."""
    found: set[bytes] = set()
    for key in keys:
        if v.has_blob(key):  # one only the remote has is the remote's to keep whole
            found.update(chunk for chunk, _ in v.chunks(key) or ())
    return found


def _upload_blobs(
    repo: Repo, catalog: Catalog, keys: list[bytes], index: dict[str, layout.BlobRef]
) -> tuple[int, int]:
    """Pack and upload the blobs in ``keys``, then their index; returns (blobs, bytes)."""
    if not keys:
        return 0, 0
    going = {k.hex() for k in keys}
    refs: dict[str, layout.BlobRef] = {}
    sent = 0
    batch: list[tuple[str, bytes]] = []
    bases: dict[str, str | None] = {}
    size = 0

    def flush() -> None:
        nonlocal batch, size, sent
        data, entries = layout.build_pack(batch)
        batch, size = [], 0  # the pack holds the values now: never both during the upload
        digest = catalog.new_pack(data)
        for blob_id, offset, length in entries:
            refs[blob_id] = layout.BlobRef(digest, offset, length, bases[blob_id])
        sent += len(data)
        faults.point("push.pack")

    with repo.read() as v:
        for key in keys:
            value = v.blob_value(key)
            assert value is not None
            header = blobs.parse_header(value, key)
            base = header.base.hex() if header.base is not None else None
            if header.encoding == blobs.CHUNKED:
                for _ in v.pieces(key):  # a big file is verified a chunk at a time
                    pass
            else:
                data = v.blob(key)  # verified: a damaged local blob never goes up
                if base is not None and base not in going and base not in index:
                    value, base = blobs.encode(data), None  # its base is not on the remote
            bases[key.hex()] = base
            batch.append((key.hex(), bytes(value)))
            size += len(value)
            if size >= layout.PACK_TARGET:
                flush()
    if batch:
        flush()
    data = layout.build_index(refs)
    digest = blobs.digest_hex(data)
    catalog.create(layout.index_key(digest), data)
    sent += len(data)
    faults.point("push.index")
    return len(keys), sent
