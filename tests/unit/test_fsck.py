"""fsck: every flipped byte that matters is found, references are checked, repair says what
it lost, and a rewind never writes bytes that fail verification."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import zstandard

from snapstore import Store
from snapstore.core import blobs
from snapstore.core.records import Change, loads

from ..support import Clock, agent_turn, read, write
from ..support.histories import build_history
from ..support.rawdb import raw_put, raw_values

_values = raw_values


_put = raw_put


def _independent_decode(values: dict[bytes, bytes], key: bytes) -> bytes | None:
    """Decode a blob without snapstore's verification: the test's own ground truth."""
    try:
        value = values[key]
        header = blobs.parse_header(value, key)
        payload = value[header.header_size :]
        if header.encoding == blobs.RAW:
            return payload
        if header.encoding == blobs.ZSTD:
            return zstandard.ZstdDecompressor().decompress(payload, max_output_size=1 << 26)
        base = _independent_decode(values, header.base)
        if base is None:
            return None
        dictionary = zstandard.ZstdCompressionDict(base, dict_type=zstandard.DICT_TYPE_RAWCONTENT)
        return zstandard.ZstdDecompressor(dict_data=dictionary, max_window_size=1 << 27).decompress(
            payload, max_output_size=1 << 26
        )
    except Exception:
        return None


def test_a_healthy_store_passes(store: Store) -> None:
    build_history(store, turns=4)
    report = store.fsck()
    assert report.ok and report.blobs_checked == len(_values(store)) > 10
    assert report.corrupt == report.dangling == []


def test_fsck_finds_every_flipped_byte_that_changes_a_blob(root: Path, clock: Clock) -> None:
    """Random single-byte flips in stored values, written straight into LMDB."""
    with Store.init(root, clock=clock) as store:
        build_history(store, turns=8)
        original = _values(store)
        with store.repo.read() as v:
            content = {k: v.blob(k) for k in original}
        encodings = {v[0] for v in original.values()}
        assert encodings == {blobs.RAW, blobs.ZSTD, blobs.DELTA}
        rng = random.Random(6)
        cases = detected = harmless = 0
        for _ in range(400):
            key = rng.choice(sorted(original))
            value = bytearray(original[key])
            value[rng.randrange(len(value))] ^= rng.randrange(1, 256)
            _put(store, key, bytes(value))
            report = store.fsck()
            cases += 1
            if key.hex() in {c["key"] for c in report.corrupt}:
                detected += 1
                assert not report.ok
            else:  # fsck saw nothing: the flip must leave the blob's meaning intact
                changed = {**original, key: bytes(value)}
                assert _independent_decode(changed, key) == content[key], "undetected damage"
                with store.repo.read() as v:
                    assert v.blob(key) == content[key]
                harmless += 1
            _put(store, key, original[key])
        assert store.fsck().ok
    print(
        f"\ncorruption cases: {cases} flips, {detected} detected by fsck, {harmless} landed in "
        "bits the decoder ignores (the blob still yields its verified content)"
    )
    assert detected >= 0.95 * cases


def test_a_flip_in_a_delta_base_is_reported_for_every_blob_resting_on_it(store: Store) -> None:
    build_history(store, turns=6)
    values = _values(store)
    base = next(blobs.parse_header(v, k).base for k, v in values.items() if v[0] == blobs.DELTA)
    damaged = bytearray(values[base])
    damaged[-1] ^= 0xFF
    _put(store, base, bytes(damaged))
    dependents = {
        k
        for k, v in values.items()
        if v[0] == blobs.DELTA and blobs.parse_header(v, k).base == base
    }
    corrupt = {c["key"] for c in store.fsck().corrupt}
    assert base.hex() in corrupt and {k.hex() for k in dependents} <= corrupt


@pytest.mark.parametrize("seed", range(12))
def test_a_rewind_never_writes_corrupt_bytes(root: Path, clock: Clock, seed: int) -> None:
    """Damage the 'before' blobs of some files; the rewind reports them and restores the rest."""
    rng = random.Random(seed)
    files = {f"f{n}.txt": "".join(f"original {n}.{i}\n" for i in range(50 + n)) for n in range(6)}
    for rel, data in files.items():
        write(root, rel, data)
    with Store.init(root, clock=clock) as store:
        agent_turn(store, "p", {rel: f"agent {rel}\n" for rel in files})
        befores = {c.path: c.before.key for c in store.changes(store.rewind_points()[0].turn.id)}
        damaged = set(rng.sample(sorted(files), rng.randint(1, 3)))
        values = _values(store)
        for rel in damaged:
            key = befores[rel]
            while True:  # a flip that really damages it (a few land in bits zstd ignores)
                value = bytearray(values[key])
                value[rng.randrange(len(value))] ^= rng.randrange(1, 256)
                if _independent_decode({key: bytes(value)}, key) != files[rel].encode():
                    break
            _put(store, key, bytes(value))
        result = store.rewind(1)
        assert {e["path"] for e in result.errors} == damaged
        for rel, data in files.items():
            assert read(root, rel) == (
                f"agent {rel}\n".encode() if rel in damaged else data.encode()
            )
        assert not store.fsck().ok


def _first(store: Store, db: str, cls: type) -> tuple[bytes, object]:
    key, raw = next(iter(raw_values(store, db).items()))
    return key, loads(cls, raw)


def test_missing_blob_is_dangling_and_repair_drops_the_change(store: Store, root: Path) -> None:
    first = agent_turn(store, "one", {"a.txt": "a1\n", "b.txt": "b1\n"})
    agent_turn(store, "two", {"a.txt": "a2\n", "b.txt": "b2\n"})
    change = store.changes(first)[0]
    assert change.path == "a.txt"
    _put(store, bytes.fromhex(change.after.digest), None)
    report = store.fsck()
    assert not report.ok
    assert {(d["kind"], d["missing"]) for d in report.dangling} >= {("change", change.after.digest)}
    repaired = store.fsck(repair=True)
    lost = [line for line in repaired.repaired if "a.txt" in line]
    assert len(lost) == 2 and first in lost[0] + lost[1]
    assert store.fsck().ok
    store.rewind(2)  # the rest still rewinds: back to before turn one
    assert read(root, "b.txt") is None
    assert read(root, "a.txt") == b"a2\n"  # both changes that needed a1 were dropped


def test_dangling_parent_head_and_session_links_are_found_and_cleared(store: Store) -> None:
    ids = [agent_turn(store, f"t{n}", {"a.txt": f"{n}\n"}) for n in range(3)]
    _put(store, ids[0].encode(), None, "turns")  # the first turn's record is lost
    report = store.fsck()
    kinds = {(d["kind"], d["missing"]) for d in report.dangling}
    assert ("turn", ids[0]) in kinds and ("change", ids[0]) in kinds
    repaired = store.fsck(repair=True)
    assert any(f"its parent {ids[0]}" in line for line in repaired.repaired)
    assert store.fsck().ok
    assert [p.turn.id for p in store.rewind_points()] == [ids[2], ids[1]]

    _put(store, ids[2].encode(), None, "turns")  # now the head itself
    report = store.fsck()
    assert ("head", ids[2]) in {(d["kind"], d["missing"]) for d in report.dangling}
    store.fsck(repair=True)
    assert store.fsck().ok


def test_a_malformed_record_is_corrupt_and_repair_drops_it(store: Store) -> None:
    agent_turn(store, "t", {"a.txt": "a\n"})
    _put(store, b"zzzzzzzzzzzz", b'{"id": "zzzzzzzzzzzz", "what": 1}', "turns")
    report = store.fsck()
    assert [(c["kind"], c["key"]) for c in report.corrupt] == [("turn", "zzzzzzzzzzzz")]
    assert any("malformed turn" in line for line in store.fsck(repair=True).repaired)
    assert store.fsck().ok


def test_an_interrupted_rewind_is_not_a_problem(store: Store) -> None:
    agent_turn(store, "t", {"a.txt": "a\n"})
    store.repo.write(lambda tx: tx.set_unfinished(store.rewind_points()[0].turn.id, True))
    report = store.fsck()
    assert report.ok and report.pending


def test_a_malformed_change_is_corrupt(store: Store) -> None:
    agent_turn(store, "t", {"a.txt": "a\n"})
    key, change = _first(store, "changes", Change)
    assert isinstance(change, Change)
    _put(store, key, b"not json", "changes")
    assert [c["kind"] for c in store.fsck().corrupt] == ["change"]
