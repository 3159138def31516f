"""Looking after a remote: its log, its verification and its retention (`remote_log`,
`remote_fsck`, `remote_gc`: the local store's own are `snapstore.ops.fsck` and `ops.gc`).

gc takes no lock, so it works in two phases a grace period apart (restic's
prune needs an exclusive lock; this does not):

1. A run drops the turns older than ``keep_days`` and records them, with the
   packs that hold nothing reachable and are older than the grace period, in
   a new ``gc/<digest>`` record. From then on pushes treat blobs in a condemned
   pack as absent (they upload them again) and never push a dropped turn.
2. A later run, once the condemnation is older than the grace period (longer
   than any push takes), writes one index for every pack that stays, deletes
   the indexes it replaces, and deletes the condemned packs that are still
   unreachable.

A push that deduplicated against a pack before it was condemned finishes
within the grace period, so its turns make the blobs reachable again before
the pack could go.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from ...core import blobs
from ...core.errors import StoreCorrupt
from ...ops.session_base import base_changes
from ..format import layout
from ..format.catalog import Catalog
from ..transport.errors import (
    MissingBucket,
    RemoteDenied,
    RemoteError,
    RemoteUnavailable,
    RemoteUnreachable,
)
from .pull import pack_ends, read_pack

DAY = 86400.0
#: How old an unreferenced pack must be before gc condemns it, and a condemnation before
#: it deletes: far longer than any push.
DEFAULT_GRACE = DAY
#: A chunked value is its header and one (digest, size) pair per chunk (docs/format.md §3).
_CHUNKED_HEAD = len(blobs.encode_chunked(0, []))
_CHUNKED = bytes([blobs.CHUNKED])


@dataclass
class LogEntry:
    session: str
    origin: str
    turn: str
    prompt: str
    created: float
    files: int
    state: str

    def to_json(self) -> dict[str, Any]:
        return {
            "session": self.session,
            "origin": self.origin,
            "turn": self.turn,
            "prompt": self.prompt,
            "created": self.created,
            "files": self.files,
            "state": self.state,
        }


def remote_log(catalog: Catalog) -> list[LogEntry]:
    """The remote's sessions and turns, newest first."""
    if not catalog.open(create=False):
        return []
    sessions = catalog.sessions()
    dropped = catalog.tombstones().turns
    wanted = [(s, t) for s in sessions.values() for t in s.turns if t not in dropped]
    records = dict(
        zip([t for _, t in wanted], catalog.map(catalog.turn, [t for _, t in wanted]), strict=True)
    )
    entries = [
        LogEntry(
            s.name,
            s.origin,
            t,
            records[t]["prompt"],
            records[t]["created"],
            len({c["path"] for c in records[t]["changes"]}),
            s.turns[t],
        )
        for s, t in wanted
    ]
    return sorted(entries, key=lambda e: (e.created, e.turn), reverse=True)


@dataclass
class RemoteFsck:
    ok: bool = True
    packs: int = 0
    blobs: int = 0
    turns: int = 0
    states: int = 0
    corrupt: list[dict[str, str]] = field(default_factory=list)
    dangling: list[dict[str, str]] = field(default_factory=list)
    unreferenced: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "packs": self.packs,
            "blobs": self.blobs,
            "turns": self.turns,
            "states": self.states,
            "corrupt": self.corrupt,
            "dangling": self.dangling,
            "unreferenced": self.unreferenced,
        }

    def bad(self, kind: str, key: str, reason: str) -> None:
        getattr(self, kind).append({"key": key, "reason": reason})
        self.ok = False


def _try(report: RemoteFsck, key: str, fn: Any) -> Any:
    try:
        return fn()
    except RemoteError as exc:
        if isinstance(exc, (RemoteUnreachable, RemoteDenied, MissingBucket, RemoteUnavailable)):
            raise  # the remote cannot be checked at all
        report.bad("corrupt", key, str(exc))
        return None


def remote_fsck(catalog: Catalog) -> RemoteFsck:
    """Verify every object of the remote and every reference between them."""
    report = RemoteFsck()
    if not catalog.open(create=False):
        return report
    states = []
    for info in catalog.listing(layout.STATES, fresh=True):
        state = _try(report, info.key, lambda key=info.key: catalog.state(key))
        report.states += 1
        if state is not None and layout.parse_state_key(info.key) is not None:
            states.append(state)
    newest: dict[str, dict[str, Any]] = {}
    for state in states:
        if state["seq"] > newest.get(state["writer"], {"seq": -1})["seq"]:
            newest[state["writer"]] = state
    sessions = catalog.sessions(list(newest.values()))
    tombstones = catalog.tombstones()
    turn_ids = sorted(catalog.turn_ids())
    records = {}
    for turn_id, record in zip(
        turn_ids,
        catalog.map(lambda t: _try(report, layout.turn_key(t), lambda: catalog.turn(t)), turn_ids),
        strict=True,
    ):
        report.turns += 1
        if record is not None:
            records[turn_id] = record
    index: dict[str, layout.BlobRef] = {}
    indexed_packs: set[str] = set()
    for key in catalog.index_keys():
        part = _try(report, key, lambda key=key: catalog.index(key))
        for blob_id, ref in (part or {}).items():
            index.setdefault(blob_id, ref)
            indexed_packs.add(ref.pack)
    packs = {layout.leaf(info.key): info.size for info in catalog.listing(layout.PACKS, fresh=True)}
    contents: dict[str, bytes] = {}
    values: dict[str, bytes] = {}
    for pack in sorted(packs):
        report.packs += 1
        data = _try(
            report, layout.pack_key(pack), lambda pack=pack: catalog.pack(pack, packs[pack])
        )
        if data is None:
            continue
        entries = _try(
            report,
            layout.pack_key(pack),
            lambda data=data, pack=pack: layout.pack_entries(
                data, catalog.url, layout.pack_key(pack)
            ),
        )
        for blob_id, offset, length in entries or []:
            values[blob_id] = data[offset : offset + length]
        if pack not in indexed_packs:
            report.unreferenced += 1
    chunked: dict[str, list[str]] = {}
    for blob_id in sorted(values):
        if values[blob_id][:1] != _CHUNKED:
            _verify_blob(report, blob_id, values, contents)
        elif (chunks := _verify_chunked(report, blob_id, values, contents)) is not None:
            chunked[blob_id] = chunks
    report.blobs = len(contents) + len(chunked)
    for blob_id, chunks in sorted(chunked.items()):
        for chunk in chunks:
            if blob_id in index and chunk not in index:
                report.bad("dangling", f"blob {blob_id}", f"its chunk {chunk[:12]} is in no index")
    for blob_id, ref in index.items():
        if ref.pack not in packs:
            report.bad(
                "dangling",
                layout.index_key("*"),
                f"blob {blob_id[:12]} is indexed in pack {ref.pack[:12]}, which is missing",
            )
    for session in sessions.values():
        for turn_id in session.turns:
            if (
                turn_id not in records
                and turn_id not in tombstones.turns
                and turn_id not in turn_ids
            ):
                report.bad(
                    "dangling",
                    layout.turn_key(turn_id),
                    f"session {session.name} lists turn {turn_id}, which is missing",
                )
        for path, before, after in base_changes(session.base):
            for version in (before, after):
                if version is not None and version.digest not in index:
                    report.bad(
                        "dangling",
                        f"base of {session.name}",
                        f"{path} needs blob {version.digest[:12]}, in no index",
                    )
    for turn_id, record in records.items():
        for change in record["changes"]:
            for version in (change["before"], change["after"]):
                if version is not None and version[0] not in index:
                    report.bad(
                        "dangling",
                        layout.turn_key(turn_id),
                        f"{change['path']} needs blob {version[0][:12]}, in no index",
                    )
    return report


def _verify_blob(
    report: RemoteFsck, blob_id: str, values: dict[str, bytes], contents: dict[str, bytes]
) -> bytes | None:
    """Decode one blob of a pack, its bases first, and check it against its id."""
    chain: list[str] = []
    current: str | None = blob_id
    while current is not None and current not in contents:
        if current not in values:
            report.bad(
                "dangling",
                f"blob {chain[-1] if chain else blob_id}",
                f"its delta base {current[:12]} is in no pack",
            )
            return None
        chain.append(current)
        try:
            header = blobs.parse_header(values[current], bytes.fromhex(current))
        except StoreCorrupt as exc:
            report.bad("corrupt", f"blob {current}", str(exc))
            return None
        if header.encoding == blobs.CHUNKED:  # a delta's base is never chunked
            report.bad("corrupt", f"blob {blob_id}", f"its delta base {current[:12]} is chunked")
            return None
        current = header.base.hex() if header.base is not None else None
        if len(chain) > 10_000:
            report.bad("corrupt", f"blob {blob_id}", "its delta chain loops")
            return None
    for item in reversed(chain):
        key = bytes.fromhex(item)
        header = blobs.parse_header(values[item], key)
        base = contents.get(header.base.hex()) if header.base is not None else None
        try:
            contents[item] = blobs.decode_payload(values[item], header, key, base)
        except StoreCorrupt as exc:
            report.bad("corrupt", f"blob {item}", str(exc))
            return None
    return contents[blob_id]


def _verify_chunked(
    report: RemoteFsck, blob_id: str, values: dict[str, bytes], contents: dict[str, bytes]
) -> list[str] | None:
    """Check a chunked blob by its chunks: each in a pack and sound, of the size listed,
    and the whole hashing to its id. Its chunks' ids; None if it is reported."""
    key = bytes.fromhex(blob_id)
    try:
        refs = blobs.chunk_refs(values[blob_id], blobs.parse_header(values[blob_id], key), key)
    except StoreCorrupt as exc:
        report.bad("corrupt", f"blob {blob_id}", str(exc))
        return None
    whole = blobs.hasher()
    for chunk, size in refs:
        if chunk.hex() not in values:
            report.bad("dangling", f"blob {blob_id}", f"its chunk {chunk.hex()[:12]} is in no pack")
            return None
        if values[chunk.hex()][:1] == _CHUNKED:
            report.bad("corrupt", f"blob {blob_id}", f"its chunk {chunk.hex()[:12]} is chunked")
            return None
        data = _verify_blob(report, chunk.hex(), values, contents)
        if data is None:
            return None  # the chunk's fault, reported
        if len(data) != size:
            report.bad(
                "corrupt", f"blob {blob_id}", f"its chunk {chunk.hex()[:12]} is not {size} bytes"
            )
            return None
        whole.update(data)
    if whole.digest() != key:
        report.bad("corrupt", f"blob {blob_id}", "its chunks do not make its digest")
        return None
    return [chunk.hex() for chunk, _ in refs]


@dataclass
class RemoteGc:
    removed_turns: int = 0
    removed_bytes: int = 0
    removed_packs: int = 0
    condemned_packs: int = 0
    removed_objects: int = 0
    kept_turns: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "removed_turns": self.removed_turns,
            "removed_bytes": self.removed_bytes,
            "removed_packs": self.removed_packs,
            "condemned_packs": self.condemned_packs,
            "removed_objects": self.removed_objects,
            "kept_turns": self.kept_turns,
        }


def remote_gc(
    catalog: Catalog,
    keep_days: float | None,
    *,
    grace: float = DEFAULT_GRACE,
    now: float | None = None,
) -> RemoteGc:
    """Drop turns older than ``keep_days`` (None: none) and reclaim what nothing needs."""
    result = RemoteGc()
    if not catalog.open(create=False):
        return result
    now = time.time() if now is None else now
    tombstones = catalog.tombstones()
    newest = catalog.newest_state_keys()
    sessions = catalog.sessions()
    turn_ids = sorted(catalog.turn_ids() - tombstones.turns)
    records = dict(zip(turn_ids, catalog.map(catalog.turn, turn_ids), strict=True))
    cutoff = None if keep_days is None else now - keep_days * DAY
    dropped = sorted(t for t, r in records.items() if cutoff is not None and r["created"] < cutoff)
    kept = {t: r for t, r in records.items() if t not in dropped}
    result.kept_turns = len(kept)

    index: dict[str, layout.BlobRef] = {}
    for key in catalog.index_keys():
        for blob_id, ref in catalog.index(key).items():
            index.setdefault(blob_id, ref)
    reachable = _reachable(catalog, kept.values(), sessions.values(), index)
    pack_info = {layout.leaf(i.key): i for i in catalog.listing(layout.PACKS, fresh=True)}
    live_packs = {index[b].pack for b in reachable if b in index}
    dead = [p for p in pack_info if p not in live_packs]
    deletable = [p for p in dead if p in tombstones.packs and tombstones.packs[p] <= now - grace]
    condemn = [
        p for p in dead if p not in tombstones.packs and pack_info[p].modified <= now - grace
    ]

    if dropped or condemn:
        record = layout.seal(
            {"version": layout.RECORD, "time": now, "turns": dropped, "packs": sorted(condemn)}
        )
        catalog.create(layout.gc_key(blobs.digest_hex(record)), record)
    for turn_id in dropped:
        catalog.delete(layout.turn_key(turn_id))
        result.removed_objects += 1
    result.removed_turns = len(dropped)
    result.condemned_packs = len(condemn)

    if deletable:
        gone = set(deletable)
        old_indexes = [
            i for i in catalog.listing(layout.INDEXES, fresh=True) if i.modified <= now - grace
        ]
        keep = {b: r for b, r in index.items() if r.pack not in gone}
        if keep:
            data = layout.build_index(keep)
            catalog.create(layout.index_key(blobs.digest_hex(data)), data)
        new_key = layout.index_key(blobs.digest_hex(layout.build_index(keep))) if keep else ""
        for info in old_indexes:
            if info.key != new_key:
                catalog.delete(info.key)
                result.removed_bytes += info.size
                result.removed_objects += 1
        for pack in deletable:
            catalog.delete(layout.pack_key(pack))
            result.removed_bytes += pack_info[pack].size
            result.removed_packs += 1
            result.removed_objects += 1
    for writer, (seq, _) in newest.items():
        for info in catalog.listing(f"{layout.STATES}/{writer}", fresh=True):
            parsed = layout.parse_state_key(info.key)
            if parsed is not None and parsed[1] < seq and info.modified <= now - grace:
                catalog.delete(info.key)
                result.removed_bytes += info.size
                result.removed_objects += 1
    return result


def _reachable(
    catalog: Catalog, turns: Any, sessions: Any, index: dict[str, layout.BlobRef]
) -> set[str]:
    """Blobs the kept turns and the sessions' bases name, with their delta bases and the
    chunks of the chunked ones (and those chunks' delta bases)."""
    named: list[str] = []
    for record in turns:
        for change in record["changes"]:
            named.extend(v[0] for v in (change["before"], change["after"]) if v is not None)
    for session in sessions:
        for _, before, after in base_changes(session.base):
            named.extend(v.digest for v in (before, after) if v is not None)
    reachable = _with_bases(named, index)
    chunks = [c for refs in _chunk_lists(catalog, index, reachable).values() for c in refs]
    return reachable | _with_bases(chunks, index)


def _chunk_lists(
    catalog: Catalog, index: dict[str, layout.BlobRef], blob_ids: set[str]
) -> dict[str, list[str]]:
    """The chunks listed by each chunked blob among ``blob_ids``. The index does not say
    which blobs are chunked, so the values whose length could be a chunk list are read
    (small ranges of their packs); a malformed list lists nothing (fsck reports it)."""
    maybe: dict[str, list[str]] = {}
    for blob_id in blob_ids:
        ref = index.get(blob_id)
        size = None if ref is None else ref.length - _CHUNKED_HEAD
        if ref is not None and size and size % blobs.CHUNK_REF.size == 0:
            maybe.setdefault(ref.pack, []).append(blob_id)
    ends = pack_ends(index)
    found: dict[str, list[str]] = {}
    read = catalog.map(lambda p: read_pack(catalog, p, maybe[p], index, ends[p]), sorted(maybe))
    for values in read:
        for blob_id, value in values.items():
            if value[:1] != _CHUNKED:
                continue
            key = bytes.fromhex(blob_id)
            try:
                refs = blobs.chunk_refs(value, blobs.parse_header(value, key), key)
            except StoreCorrupt:
                continue
            found[blob_id] = [chunk.hex() for chunk, _ in refs]
    return found


def _with_bases(todo: list[str], index: dict[str, layout.BlobRef]) -> set[str]:
    """``todo`` with the delta bases each needs, as far as the index says."""
    seen: set[str] = set()
    while todo:
        blob_id = todo.pop()
        if blob_id in seen:
            continue
        seen.add(blob_id)
        ref = index.get(blob_id)
        if ref is not None and ref.base is not None:
            todo.append(ref.base)
    return seen
