"""The baseline's groups (snapstore.core.baseline): many referenced files per record, read
as if each had its own three records.

A state machine writes groups and per-file records at random through the record layer
(``put_groups``, ``set_path_digest``, ``forget_path``, ``put_index``, ``delete_index``,
several in one commit, reads in between), against a model that keeps every file's
records of its own, as schema 6 did. After each step every read of the record layer
(``path_digest``, ``index_entry``, ``git_ref``, ``index_folder``, ``index_below``,
``indexed_below``, ``index_entries``) gives what the model gives, the groups' ranges never
meet, and no grouped file has a record of its own. Groups are made a few files each, so
that a folder spans several. Runs 60 examples of 20 steps, also with every commit run
twice.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from snapstore.core import baseline, blobs
from snapstore.core.errors import StoreCorrupt
from snapstore.core.records import FINGERPRINT, Version, unscanned_fingerprint
from snapstore.core.repo import Repo, Tx

from ..support.retried import commits_run_twice

FOLDERS = ["", "a/", "a/b/", "a/b/c/", "a-b/", "a0/", "b/"]
PATHS = sorted(f"{folder}{name}".encode() for folder in FOLDERS for name in ("a", "f", "g0"))
DIGEST = st.binary(min_size=32, max_size=32)
FINGERPRINTS = st.builds(
    lambda size, times, ino, mode: FINGERPRINT.pack(size, times, times, ino, mode),
    st.integers(0, 2**40),
    st.integers(0, 2**62),
    st.integers(0, 2**63),
    st.sampled_from([0o100644, 0o100755]),
)
WRITE = st.one_of(
    st.tuples(st.just("set"), st.sampled_from(PATHS), st.none() | DIGEST),
    st.tuples(st.just("forget"), st.sampled_from(PATHS), st.none()),
    st.tuples(st.just("index"), st.sampled_from(PATHS), FINGERPRINTS.map(lambda f: f + bytes(32))),
    st.tuples(st.just("unindex"), st.sampled_from(PATHS), st.none()),
)


class Model:
    """Every file's records as its own, as schema 6 kept them."""

    def __init__(self) -> None:
        self.paths: dict[bytes, bytes] = {}
        self.index: dict[bytes, bytes] = {}
        self.refs: dict[bytes, tuple[str, int]] = {}
        self.grouped: set[bytes] = set()  # what the store should hold in groups

    def group(self, path: bytes, fp: bytes, oid: bytes) -> None:
        key = blobs.reference_key(oid.hex())
        self.paths[path], self.index[path] = key, fp + key
        self.refs[key] = (oid.hex(), baseline.size_of(fp))
        self.grouped.add(path)

    def write(self, op: str, path: bytes, value: bytes | None) -> None:
        self.grouped.discard(path)
        if op == "set" and value is None:
            self.paths.pop(path, None)
        elif op == "set":
            assert value is not None
            self.paths[path] = value
            if path in self.index:
                self.index[path] = unscanned_fingerprint(Version(value.hex())) + value
        elif op == "forget":
            self.paths.pop(path, None)
        elif op == "index":
            assert value is not None
            self.index[path] = value
        else:
            self.index.pop(path, None)


def _apply(tx: Tx, op: str, path: bytes, value: bytes | None) -> None:
    rel = os.fsdecode(path)
    if op == "set":
        tx.set_path_digest(rel, None if value is None else Version(value.hex()))
    elif op == "forget":
        tx.forget_path(rel)
    elif op == "index":
        assert value is not None
        tx.put_index(rel, value)
    else:
        tx.delete_index(rel)


class Groups(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.model = Model()

    @initialize(oid_size=st.sampled_from([20, 32]))  # SHA-1 or SHA-256: one per repository
    def open(self, oid_size: int) -> None:
        self.oid_size = oid_size
        root = TMP.path / f"ws{next(TMP.count)}"
        root.mkdir()
        self.repo = Repo(root, create=True, durable=False)

    def teardown(self) -> None:
        if hasattr(self, "repo"):
            self.repo.close()

    @rule(data=st.data())
    def record_a_baseline(self, data: st.DataObject) -> None:
        """Files with no record of their own, in groups: a range may meet earlier groups'."""
        free = [p for p in PATHS if p in self.model.grouped or p not in self.model.paths]
        free = [p for p in free if p in self.model.grouped or p not in self.model.index]
        chosen = sorted(data.draw(st.sets(st.sampled_from(free), max_size=12)) if free else [])
        fps = [data.draw(FINGERPRINTS) for _ in chosen]
        # an object id is its content's: one size for each (two files may share one)
        kinds = [data.draw(st.integers(0, 1)) for _ in chosen]
        oids = [
            blobs.reference_key(f"{baseline.size_of(fp)}/{kind}")[: self.oid_size]
            for fp, kind in zip(fps, kinds, strict=True)
        ]
        self.repo.write(lambda tx: tx.put_groups(chosen, fps, oids))
        for path, fp, oid in zip(chosen, fps, oids, strict=True):
            self.model.group(path, fp, oid)

    @rule(writes=st.lists(WRITE, min_size=1, max_size=6))
    def write_in_one_commit(self, writes: list[tuple[str, bytes, bytes | None]]) -> None:
        """Writes to files, grouped or not, each read back inside the commit."""
        shadow = Model()
        shadow.paths, shadow.index = dict(self.model.paths), dict(self.model.index)
        expected = []  # each path as the model has it after each write
        for op, path, value in writes:
            shadow.write(op, path, value)
            expected.append((shadow.paths.get(path), shadow.index.get(path)))

        def commit(tx: Tx) -> None:
            for (op, path, value), (digest, entry) in zip(writes, expected, strict=True):
                _apply(tx, op, path, value)
                assert tx.path_digest(os.fsdecode(path)) == digest
                assert tx.index_entry(path) == entry

        self.repo.write(commit)
        for op, path, value in writes:
            self.model.write(op, path, value)

    @invariant()
    def reads_are_the_models(self) -> None:
        if not hasattr(self, "repo"):
            return
        m = self.model
        with self.repo.read() as v:
            for path in PATHS:
                rel = os.fsdecode(path)
                assert v.path_digest(rel) == m.paths.get(path)
                assert v.index_entry(path) == m.index.get(path)
                if path in m.paths:
                    assert v.git_ref(m.paths[path], rel) == m.refs.get(m.paths[path])
            assert v.index_entries() == m.index
            for folder in FOLDERS:
                files, subfolders = v.index_folder(folder.encode())
                inside = {k: x for k, x in m.index.items() if k.startswith(folder.encode())}
                direct = {k: x for k, x in inside.items() if _child(k, folder) is None}
                # a grouped file's value is its fingerprint alone: a walk compares only that
                short = {
                    k: x[: FINGERPRINT.size] if k in m.grouped else x for k, x in direct.items()
                }
                assert files == short
                below = {_child(k, folder) for k in inside} - {None}
                assert sorted(subfolders) == sorted(below)
                assert len(subfolders) == len(set(subfolders))
                if folder:
                    name = folder[:-1]
                    expect = sorted((k, x) for k, x in m.index.items() if _in(k, name))
                    assert list(v.index_below(name.encode())) == expect
                    assert v.indexed_below(name) == bool(expect)

    @invariant()
    def groups_hold_only_what_has_no_record_of_its_own(self) -> None:
        if not hasattr(self, "repo"):
            return
        with self.repo.read() as v:
            last = b""
            grouped = set()
            for key, group in v.groups():
                assert not isinstance(group, StoreCorrupt)
                assert group.paths and key == group.paths[0] > last
                last = group.paths[-1]
                grouped.update(group.paths)
            assert grouped == self.model.grouped
            assert not any(v.has_own(path) for path in grouped)


def _child(key: bytes, folder: str) -> bytes | None:
    """The subfolder of ``folder`` that ``key`` lies in (None: directly in it)."""
    rest = key[len(folder) :]
    return rest.split(b"/", 1)[0] if b"/" in rest else None


def _in(key: bytes, folder: str) -> bool:
    return key.startswith(folder.encode() + b"/")


class _Tmp:
    path: Path

    def __init__(self) -> None:
        self.count = iter(range(10**9))


TMP = _Tmp()
SETTINGS = settings(
    max_examples=60,
    stateful_step_count=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.fixture
def small_groups(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Groups of two or three of these files, so that a folder spans several."""
    monkeypatch.setattr(baseline, "TARGET", 190)
    monkeypatch.setattr(baseline, "FIRST", 3)
    TMP.path = tmp_path


@pytest.mark.usefixtures("small_groups")
def test_groups_read_as_records_of_their_own() -> None:
    Groups.TestCase.settings = SETTINGS
    Groups.TestCase().runTest()


@pytest.mark.usefixtures("small_groups")
def test_the_same_with_every_commit_run_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    commits_run_twice(monkeypatch)
    Groups.TestCase.settings = SETTINGS
    Groups.TestCase().runTest()


def test_a_group_round_trips_and_fills_a_page(tmp_path: Path) -> None:
    """Sorted paths of a real tree's shape: each group decodes to what went in, none is
    over its target unless it holds one file, and together they are about 45 bytes a file
    (three records a file took about 370)."""
    paths = sorted(f"src/pkg{i // 20}/module_{i}.py".encode() for i in range(5000))
    fps = [
        FINGERPRINT.pack(1000 + i, 1_700_000_000 * 10**9 + i, 0, 4_000_000 + i, 0o100644)
        for i in range(len(paths))
    ]
    oids = [blobs.reference_key(str(i))[:20] for i in range(len(paths))]
    found = baseline.split(paths, fps, oids)
    back: list[bytes] = []
    for key, value in found:
        group = baseline.decode(key, value)
        assert len(value) <= baseline.TARGET or len(group.paths) == 1
        start = len(back)
        assert group.fingerprints == fps[start : start + len(group.paths)]
        assert group.oids == oids[start : start + len(group.paths)]
        back.extend(group.paths)
    assert back == paths
    assert sum(len(v) for _, v in found) / len(paths) < 60


@pytest.mark.parametrize(
    "damage",
    ["truncated", "no frame", "oid size", "empty", "out of order", "wrong key", "trailing"],
)
def test_a_damaged_group_is_corrupt(damage: str) -> None:
    paths = [b"a/x", b"a/y", b"b"]
    fps = [FINGERPRINT.pack(i, i, i, i, 0o100644) for i in range(3)]
    oids = [bytes([i]) * 20 for i in range(3)]
    value, key = baseline.encode(paths, fps, oids), b"a/x"
    import zstandard

    payload = zstandard.ZstdDecompressor().decompress(value[5:])
    frame = zstandard.ZstdCompressor().compress
    if damage == "truncated":
        value = value[: len(value) // 2]
    elif damage == "no frame":
        value = value[:5] + b"not zstd"
    elif damage == "oid size":
        value = struct.pack(">BI", 21, 3) + value[5:]
    elif damage == "empty":
        value = struct.pack(">BI", 20, 0) + value[5:]
    elif damage == "out of order":
        value = baseline.encode([b"a/y", b"a/x", b"b"], fps, oids)
        key = b"a/y"
    elif damage == "wrong key":
        key = b"a"
    else:
        value = value[:5] + frame(payload + b"x")
    with pytest.raises(StoreCorrupt, match="baseline group"):
        baseline.decode(key, value)
