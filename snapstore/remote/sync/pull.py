"""Pull: bring a remote's sessions, turns and blobs into the local store.

Turn ids stay what they were on the machine that made them. A pulled session
is told apart from a local one of the same name by where it began (its origin
store id): it keeps its name when that is free, else gets ``NAME@<origin>``,
and pulling again maps to the same local session. Its head here is "before its
first turn": the workspace has applied none of it, and ``switch`` applies its
turns forward from the session's base. When the base has uncommitted changes,
a *base turn* (the same id on every machine) holds them, as the first turn's
parent.

Every record is checked where it is read (remote.format.schema): a remote is
someone else's disk, and a path, mode or number in it is never trusted. Blobs
are fetched, verified and committed one pack at a time, so memory holds about a
pack whatever the pull's size; the turns come last, in one commit, once every
blob they need is stored. A pull killed at any moment leaves the store as it
was, or with some of the pull's blobs and none of its turns (the next pull
fetches only the rest), or with the whole pull. The workspace is never touched.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from ...core import blobs, faults
from ...core.errors import StoreCorrupt, StoreLocked
from ...core.records import AGENT, BASE, CLOSED, Change, Session, Turn, version_from_json
from ...core.repo import Repo, Tx
from ...core.view import View
from ...ops.session_base import base_changes, git_commit
from ..format import layout
from ..format.catalog import Catalog, RemoteSession, corrupt
from ..transport.errors import ObjectMissing, RemoteError
from .push import SyncResult, base_turn_id, identity

#: Fetch a whole pack when at least this share of it is wanted, else ranges of it.
WHOLE_PACK = 0.5
#: Ranges closer than this are read as one request.
RANGE_GAP = 256 * 1024
#: Packs fetched or being fetched at once; each is committed before the next is used.
PACKS_AHEAD = 2
#: A pull commits blobs in batches of about this much content (a batch is held twice at its
#: commit: decoded, and as LMDB's dirty pages), so memory stays bounded as a capture's does.
BATCH = 8 * 1024 * 1024
#: A pack read whole may be this much longer than its blobs: its footer.
FOOTER_ALLOWANCE = 1024 * 1024


def local_name_for(
    v: View, store_id: str, session: RemoteSession, taken: set[str]
) -> tuple[str, Session | None]:
    """The local session a remote one maps to: the one pulled before, this store's own,
    else its name if free, else ``NAME@<origin>``."""
    for record in v.sessions():
        if identity(store_id, record) == session.identity:
            return record.name, record
    name = session.name
    if name in taken:
        name = f"{session.name}@{session.origin[:8]}"
    return name, None


def pull(
    repo: Repo,
    catalog: Catalog,
    names: list[str] | None = None,
    progress: Callable[[str], None] | None = None,
) -> SyncResult:
    """Fetch the sessions named ``names`` on the remote (None: all) and whatever they
    need that this store lacks."""
    result = SyncResult(catalog.url)
    if not catalog.open(create=False):
        result.requests = catalog.total_requests()
        return result  # nothing was ever pushed there
    remote_sessions = catalog.sessions()
    tombstones = catalog.tombstones()
    chosen = [s for s in remote_sessions.values() if names is None or s.name in names]
    with repo.read() as v:
        me = v.store_id()
        taken = {s.name for s in v.sessions()}
        plans = []
        for session in sorted(chosen, key=lambda s: (s.created, s.origin, s.name)):
            name, record = local_name_for(v, me, session, taken)
            taken.add(name)
            wanted = [
                t for t in session.turns if t not in tombstones.turns and v.find_turn(t) is None
            ]
            plans.append((session, name, record, wanted))
    records: dict[str, dict[str, Any]] = {}
    ids = [t for _, _, _, wanted in plans for t in wanted]
    if progress:
        progress(f"fetching {len(ids)} turn(s)")
    for fetched in catalog.map(_fetch_turn(catalog), ids):
        if fetched is not None:
            records[fetched["id"]] = fetched
    needed: set[str] = set()
    for session, _, _, _ in plans:
        for _, before, after in base_changes(session.base):
            needed.update(x.digest for x in (before, after) if x is not None)
    for turn_record in records.values():
        for change in turn_record["changes"]:
            needed.update(x[0] for x in (change["before"], change["after"]) if x is not None)
    with repo.read() as v:
        lacking = {d for d in needed if not v.has_blob(bytes.fromhex(d))}
    result.blobs, result.bytes = _fetch_blobs(repo, catalog, lacking, progress)

    faults.point("pull.fetched")

    def commit(tx: Tx) -> None:
        if any(not tx.has_blob(bytes.fromhex(d)) for d in needed):
            raise _swept()  # never a turn without its blobs
        for session, name, record, wanted in plans:
            _import(tx, session, name, record, [records[t] for t in wanted if t in records])
        tx.event(
            "pull",
            remote=catalog.url,
            turns=len(records),
            sessions=[name for _, name, _, _ in plans],
        )
        faults.point("pull.commit")

    repo.write(commit)
    result.turns = len(records)
    result.sessions = [name for _, name, _, _ in plans]
    here = git_commit(repo.root) if plans else None
    for session, name, _, _ in plans:
        commit_id = (session.base or {}).get("commit")
        result.bases.append(
            {
                "session": name,
                "commit": commit_id,
                "workspace": here,
                "uncommitted": len((session.base or {}).get("changes", [])),
            }
        )
        if commit_id and commit_id != here:
            result.warnings.append(
                f"session {name} started from commit {commit_id[:12]}, but this workspace is "
                f"at {here[:12] if here else 'no git commit'}: switching to its turns merges "
                "where files differ"
            )
        elif session.base is None or not commit_id:
            result.warnings.append(
                f"session {name} recorded no git commit: only the files "
                "its turns changed can be rebuilt here"
            )
    result.requests = catalog.total_requests()
    return result


def _fetch_turn(catalog: Catalog) -> Callable[[str], dict[str, Any] | None]:
    def fetch(turn_id: str) -> dict[str, Any] | None:
        try:
            return catalog.turn(turn_id)
        except ObjectMissing:
            return None  # dropped by a remote gc after the state was written

    return fetch


#: A fetched chunked blob: its value and its (chunk digest, size) list.
_Chunked = tuple[bytes, list[tuple[bytes, int]]]


def _fetch_blobs(
    repo: Repo, catalog: Catalog, needed: set[str], progress: Callable[[str], None] | None
) -> tuple[int, int]:
    """Fetch, verify and store every needed blob, with the delta bases and the chunks
    they need that the store lacks; returns (blobs, bytes fetched).

    In rounds: a chunked blob's value is the first news of its chunks, so the chunks
    the store lacks are fetched in a second round (a chunk is never chunked itself:
    there is no third). A chunked blob is stored last, once all its chunks are and its
    whole hashes to its id (``View.pieces``), so no stored blob lists a missing chunk.
    """
    if not needed:
        return 0, 0
    index = catalog.blob_index()
    chunked: dict[str, _Chunked] = {}
    count, size = _fetch_round(repo, catalog, index, needed, chunked, progress)
    chunks: set[str] = set()
    with repo.read() as v:
        for blob_id, (_, refs) in sorted(chunked.items()):
            for chunk in (c.hex() for c, _ in refs):
                if chunk in needed or chunk in chunks or v.has_blob(bytes.fromhex(chunk)):
                    continue
                if chunk not in index:
                    what = f"lists chunk {chunk[:12]}, which is in none of the remote's indexes"
                    raise _bad_blob(catalog, index, blob_id, what)
                chunks.add(chunk)
    more = _fetch_round(repo, catalog, index, chunks, None, progress)
    _store_chunked(repo, catalog, index, chunked)
    return count + more[0], size + more[1]


def _fetch_round(
    repo: Repo,
    catalog: Catalog,
    index: dict[str, layout.BlobRef],
    needed: set[str],
    chunked: dict[str, _Chunked] | None,
    progress: Callable[[str], None] | None,
) -> tuple[int, int]:
    """Fetch, verify and store the ``needed`` blobs and the delta bases they need;
    chunked values go to ``chunked`` unstored (None: they are refused, as chunks).

    One pack at a time, a few read ahead: each pack's blobs are committed before more
    are read, so memory holds about a pack (plus deltas that wait for a base in a later
    pack), whatever the size of the pull.
    """
    if not needed:
        return 0, 0
    want = set(needed)
    todo = list(needed)
    with repo.read() as v:
        while todo:
            blob_id = todo.pop()
            ref = index.get(blob_id)
            if ref is None:
                raise catalog.error(
                    f"blob {blob_id[:12]} is in none of the remote's indexes (run `remote fsck`)"
                )
            if ref.base and ref.base not in want and not v.has_blob(bytes.fromhex(ref.base)):
                want.add(ref.base)
                todo.append(ref.base)
    by_pack: dict[str, list[str]] = {}
    for blob_id in want:
        by_pack.setdefault(index[blob_id].pack, []).append(blob_id)
    if progress:
        progress(f"fetching {len(want)} blob(s) from {len(by_pack)} pack(s)")
    ends = pack_ends(index)
    pending: dict[str, bytes] = {}
    count = size = 0
    for values in _ahead(
        lambda p: read_pack(catalog, p, by_pack[p], index, ends[p]),
        _pack_order(by_pack, index),
    ):
        count += len(values)
        size += sum(len(x) for x in values.values())
        pending.update(values)
        _set_aside(catalog, index, pending, chunked)
        _store_ready(repo, catalog, index, pending)
        faults.point("pull.pack")
    if pending:
        blob_id = min(pending)
        raise catalog.error(
            f"blob {blob_id[:12]} is a delta whose base is in none of the remote's packs",
            layout.pack_key(index[blob_id].pack),
        )
    return count, size


def _set_aside(
    catalog: Catalog,
    index: dict[str, layout.BlobRef],
    pending: dict[str, bytes],
    chunked: dict[str, _Chunked] | None,
) -> None:
    """Move the chunked values out of ``pending`` into ``chunked`` with their chunk lists
    (refused if malformed, or if they came as chunks: ``chunked`` is None)."""
    for blob_id in [b for b, value in pending.items() if value[:1] == bytes([blobs.CHUNKED])]:
        value = pending.pop(blob_id)
        if chunked is None:
            raise _bad_blob(catalog, index, blob_id, "is listed as a chunk but is chunked itself")
        header = _header(catalog, index, blob_id, value)
        try:
            chunked[blob_id] = (value, blobs.chunk_refs(value, header, bytes.fromhex(blob_id)))
        except StoreCorrupt as exc:
            raise _bad_blob(catalog, index, blob_id, f"is refused: {exc}") from None


def _store_chunked(
    repo: Repo, catalog: Catalog, index: dict[str, layout.BlobRef], chunked: dict[str, _Chunked]
) -> None:
    """Store the fetched chunked blobs whose chunks are all stored and make their whole;
    one that does not is the remote's fault, and none of them is stored."""
    if not chunked:
        return
    with repo.read() as v:
        for blob_id, (value, refs) in sorted(chunked.items()):
            for chunk, _ in refs:
                if chunk.hex() in chunked:
                    what = f"lists chunk {chunk.hex()[:12]}, which is chunked itself"
                    raise _bad_blob(catalog, index, blob_id, what)
                if not v.has_blob(chunk):
                    raise _swept()
            try:
                for _ in v.pieces(bytes.fromhex(blob_id), value):  # a chunk at a time
                    pass
            except StoreCorrupt as exc:
                what = f"lists chunks that do not make it ({exc})"
                raise _bad_blob(catalog, index, blob_id, what) from None

    def commit(tx: Tx) -> None:
        for blob_id, (value, refs) in chunked.items():
            if any(not tx.has_blob(chunk) for chunk, _ in refs):
                raise _swept()
            tx.put_blob(bytes.fromhex(blob_id), bytes(value))

    repo.write(commit)


def _swept() -> StoreLocked:
    # no turn names a pull's blobs until its last commit: a gc may sweep them meanwhile
    return StoreLocked("a gc ran during the pull and removed blobs it had fetched")


def _ahead(fn: Callable[[str], dict[str, bytes]], items: list[str]) -> Iterator[dict[str, bytes]]:
    """``fn`` of each item, in order, with at most :data:`PACKS_AHEAD` fetched or being
    fetched beyond the one in use: requests overlap, memory stays bounded."""
    with ThreadPoolExecutor(PACKS_AHEAD) as pool:
        running: deque[Future[dict[str, bytes]]] = deque()
        for item in items:
            running.append(pool.submit(fn, item))
            if len(running) > PACKS_AHEAD - 1:
                yield running.popleft().result()
        while running:
            yield running.popleft().result()


def _pack_order(by_pack: dict[str, list[str]], index: dict[str, layout.BlobRef]) -> list[str]:
    """The packs, each (where the deltas allow) after the packs holding its blobs' bases,
    so few deltas wait in memory for their base."""
    needs = {
        pack: sorted(
            {index[b].pack for b in (index[x].base for x in wanted) if b in index} - {pack}
        )
        for pack, wanted in by_pack.items()
    }
    order: list[str] = []
    seen: set[str] = set()
    for first in sorted(by_pack):
        stack = [(first, iter(needs[first]))]
        seen.add(first)
        while stack:
            pack, deps = stack[-1]
            dep = next((d for d in deps if d not in seen and d in needs), None)
            if dep is None:
                order.append(pack)
                stack.pop()
            else:
                seen.add(dep)
                stack.append((dep, iter(needs[dep])))
    return order


def pack_ends(index: dict[str, layout.BlobRef]) -> dict[str, int]:
    """Where each pack's last indexed blob ends (a pack is read up to there, and its footer)."""
    ends: dict[str, int] = {}
    for ref in index.values():
        ends[ref.pack] = max(ends.get(ref.pack, 0), ref.offset + ref.length)
    return ends


def read_pack(
    catalog: Catalog, pack: str, wanted: list[str], index: dict[str, layout.BlobRef], end: int
) -> dict[str, bytes]:
    """The values of the ``wanted`` blobs of ``pack``: the whole pack (checked against its
    name) when they are much of it, else ranges of it (each value is checked by its reader)."""
    key = layout.pack_key(pack)
    refs = sorted((index[b].offset, index[b].length, b) for b in wanted)
    if sum(length for _, length, _ in refs) >= WHOLE_PACK * end:
        data = catalog.pack(pack, end + FOOTER_ALLOWANCE)
        if end > len(data):
            raise catalog.error(
                f"an index puts blobs up to byte {end} of a pack of {len(data)} bytes", key
            )
        return {b: data[offset : offset + length] for offset, length, b in refs}
    values: dict[str, bytes] = {}
    group: list[tuple[int, int, str]] = []
    stop = 0

    def read() -> None:
        start = group[0][0]
        data = catalog.get_range(key, start, stop)
        for offset, length, b in group:
            values[b] = data[offset - start : offset - start + length]

    for ref in refs:
        if group and ref[0] - stop > RANGE_GAP:
            read()
            group = []
        group.append(ref)
        stop = max(stop, ref[0] + ref[1])
    read()
    return values


def _store_ready(
    repo: Repo, catalog: Catalog, index: dict[str, layout.BlobRef], pending: dict[str, bytes]
) -> None:
    """Decode, verify and store each pending blob whose delta base is at hand (stored, or
    decoded in the same batch), in commits of about :data:`BATCH` bytes of content; what
    still waits for its base stays in ``pending``."""
    while True:
        batch: dict[str, bytes] = {}
        size = 0
        with repo.read() as v:
            for blob_id in _base_first(catalog, index, pending):
                base = _header(catalog, index, blob_id, pending[blob_id]).base
                if base is not None and base.hex() not in batch and not v.has_blob(base):
                    continue  # its base comes with a later pack
                batch[blob_id] = _decode(catalog, index, v, blob_id, pending[blob_id], batch)
                size += len(batch[blob_id])
                if size >= BATCH:
                    break
        if not batch:
            return

        def commit(tx: Tx, batch: dict[str, bytes] = batch) -> None:
            for blob_id, data in batch.items():  # bases first
                _store_blob(tx, blob_id, pending[blob_id], data)

        repo.write(commit)
        for blob_id in batch:
            del pending[blob_id]


def _header(
    catalog: Catalog, index: dict[str, layout.BlobRef], blob_id: str, value: bytes
) -> blobs.BlobHeader:
    try:
        return blobs.parse_header(value, bytes.fromhex(blob_id))
    except StoreCorrupt:
        raise _bad_blob(catalog, index, blob_id, "has a malformed header") from None


def _bad_blob(
    catalog: Catalog, index: dict[str, layout.BlobRef], blob_id: str, what: str
) -> RemoteError:
    """A blob that a pack holds but that is not what its id says: the remote's fault."""
    return catalog.error(f"blob {blob_id[:12]} {what}", layout.pack_key(index[blob_id].pack))


def _base_first(
    catalog: Catalog, index: dict[str, layout.BlobRef], values: dict[str, bytes]
) -> list[str]:
    """Blob ids so that every delta comes after a base in the same batch."""
    order: list[str] = []
    seen: set[str] = set()
    for blob_id in sorted(values):
        chain = []
        current: str | None = blob_id
        while current is not None and current in values and current not in seen:
            chain.append(current)
            seen.add(current)
            header = _header(catalog, index, current, values[current])
            current = header.base.hex() if header.base is not None else None
        order.extend(reversed(chain))
    return order


def _decode(
    catalog: Catalog,
    index: dict[str, layout.BlobRef],
    v: View,
    blob_id: str,
    value: bytes,
    decoded: dict[str, bytes],
) -> bytes:
    """A fetched blob's content, checked against its id (never stored otherwise)."""
    key = bytes.fromhex(blob_id)
    header = _header(catalog, index, blob_id, value)
    try:
        base = None
        if header.base is not None:
            base_id = header.base.hex()
            stored = v.blob_value(header.base)
            if stored is not None and stored[0] == blobs.CHUNKED:
                raise _bad_blob(catalog, index, blob_id, "is a delta on a chunked blob")
            base = decoded[base_id] if base_id in decoded else v.blob(header.base)
        return blobs.decode_payload(value, header, key, base)
    except StoreCorrupt as exc:  # a lying size, a frame that is not its bytes, ...
        pack = layout.pack_key(index[blob_id].pack)
        raise corrupt(
            catalog, pack, blob_id, "(a blob that does not decode to it)", str(exc)
        ) from None


def _store_blob(tx: Tx, blob_id: str, value: bytes, data: bytes) -> None:
    key = bytes.fromhex(blob_id)
    if tx.has_blob(key):
        return
    header = blobs.parse_header(value, key)
    if header.base is not None:
        stored = tx.blob_value(header.base)
        depth = None if stored is None else blobs.parse_header(stored, header.base).depth + 1
        if depth is not None and depth <= blobs.MAX_CHAIN:
            tx.put_blob(key, blobs.with_depth(value, depth))
            return
        value = blobs.encode(data)
    tx.put_blob(key, bytes(value))


def _import(
    tx: Tx, session: RemoteSession, name: str, record: Session | None, turns: list[dict[str, Any]]
) -> None:
    """Add a remote session's new turns to the local session ``name`` (made if new)."""
    me = tx.store_id()
    origin = None if session.origin == me else {"store": session.origin, "name": session.name}
    if record is None:
        record = tx.session(name) or Session(
            name, session.created, base=session.base, origin=origin
        )
    synthetic = base_turn_id(session.origin, session.name)
    if base_changes(session.base) and tx.find_turn(synthetic) is None and origin is not None:
        seq = tx.allocate_seq()
        tx.put_turn(
            Turn(
                synthetic,
                name,
                seq,
                AGENT,
                None,
                f"(base of session {session.name}: uncommitted changes at its start)",
                created=session.created,
                closed=session.created,
                state=CLOSED,
            )
        )
        for n, (path, before, after) in enumerate(base_changes(session.base)):
            tx.put_change(
                Change.recorded(
                    turn=synthetic,
                    seq=n,
                    path=path,
                    before=before,
                    after=after,
                    tool="",
                    source=BASE,
                    time=session.created,
                )
            )
        record = record._replace(turns=record.turns + 1)
    has_base_turn = origin is not None and tx.find_turn(synthetic) is not None
    batch = {data["id"] for data in turns}
    for data in sorted(turns, key=lambda t: (t["created"], t["id"])):
        parent = data["parent"]
        if parent is not None and parent not in batch and tx.find_turn(parent) is None:
            parent = None  # dropped by a gc: the branch starts here
        if parent is None and has_base_turn:
            parent = synthetic
        changes = [
            Change(
                turn=data["id"],
                seq=c["seq"],
                path=c["path"],
                before=version_from_json(c["before"]),
                after=version_from_json(c["after"]),
                done=c["done"],
                tool=c["tool"],
                source=c["source"],
                time=c["time"],
                mkdirs=c["mkdirs"],
            )
            for c in data["changes"]
        ]
        turn = Turn(
            data["id"],
            name,
            tx.allocate_seq(),
            data["kind"],
            parent,
            data["prompt"],
            data["message_id"],
            data["created"],
            data["closed"],
            session.turns.get(data["id"], CLOSED),
            data["implicit"],
            max((c.seq for c in changes), default=-1) + 1,
        )
        tx.put_turn(turn)
        for change in changes:
            tx.put_change(change)
        record = record._replace(turns=record.turns + 1)
    tx.put_session(record)
