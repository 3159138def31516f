"""The object-store transport, the same behaviour on a real S3 server and on a folder.

Every test here runs twice: against SeaweedFS (the session's ``seaweed`` fixture,
a real S3 server on loopback) and against a ``file://`` folder.
"""

from __future__ import annotations

import multiprocessing
import os
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from snapstore_cli.operations.failures import exit_code

from snapstore.core.blobs import digest_hex
from snapstore.remote import (
    CorruptObject,
    MissingBucket,
    ObjectMissing,
    ObjectStore,
    RemoteError,
    open_object_store,
)
from snapstore.remote.format.verify import verified

from ..support.seaweed import BUCKET, FAST_RETRY


@dataclass
class Remote:
    """A fresh, empty remote, and how another process opens the same one."""

    kind: str
    store: ObjectStore
    url: str
    options: dict[str, Any]
    folder: Path | None = None  # the file:// remote's folder, to damage it behind its back

    def reopen(self) -> ObjectStore:
        return open_object_store(self.url, **self.options)


@pytest.fixture(params=["s3", "file"])
def remote(request: pytest.FixtureRequest, tmp_path: Path):
    if request.param == "s3":
        server = request.getfixturevalue("seaweed")
        url = f"s3://{BUCKET}/t-{uuid.uuid4().hex[:12]}"
        options = {
            "endpoint_url": server.endpoint,
            "credentials": server.credentials,
            "retry": FAST_RETRY,
        }
        folder = None
    else:
        folder = tmp_path / "remote"
        folder.mkdir()
        url, options = folder.as_uri(), {}
    with open_object_store(url, **options) as store:
        yield Remote(request.param, store, url, options, folder)


def test_round_trip_and_overwrite(remote: Remote):
    store = remote.store
    data = os.urandom(100_000)
    store.put("packs/ab/one", data)
    assert store.get("packs/ab/one") == data
    info = store.head("packs/ab/one")
    assert info is not None and info.key == "packs/ab/one" and info.size == len(data)
    assert store.exists("packs/ab/one")
    store.put("packs/ab/one", b"replaced")
    assert store.get("packs/ab/one") == b"replaced"
    store.put("empty", b"")
    assert store.get("empty") == b""


def test_large_object_in_one_piece(remote: Remote):
    """A 24 MiB pack goes up as one request and comes back byte for byte."""
    data = os.urandom(24 << 20)
    assert remote.store.put_if_absent("packs/big", data)
    assert remote.store.get("packs/big") == data


def test_ranged_reads(remote: Remote):
    store = remote.store
    data = bytes(range(256)) * 40
    store.put("pack", data)
    assert store.get_range("pack", 0, 10) == data[:10]
    assert store.get_range("pack", 1000, 1500) == data[1000:1500]
    assert store.get_range("pack", len(data) - 7, len(data)) == data[-7:]
    assert store.get_range("pack", 5, 5) == b""
    with pytest.raises(RemoteError, match="shorter than the range"):
        store.get_range("pack", len(data) - 4, len(data) + 4)
    with pytest.raises(ValueError):
        store.get_range("pack", 9, 3)
    with pytest.raises(ObjectMissing):
        store.get_range("nope", 0, 4)


def test_missing_objects(remote: Remote):
    store = remote.store
    with pytest.raises(ObjectMissing) as caught:
        store.get("packs/none")
    err = caught.value
    assert exit_code(err) == 6 and err.key == "packs/none" and err.remote == store.url
    assert "\n" not in str(err) and "packs/none" in str(err)
    assert store.head("packs/none") is None and not store.exists("packs/none")
    store.delete("packs/none")  # deleting what is not there is fine
    store.put("packs/x", b"1")
    store.delete("packs/x")
    assert not store.exists("packs/x")
    with pytest.raises(ObjectMissing):
        store.get("packs/x")


def test_put_if_absent_never_overwrites(remote: Remote):
    store = remote.store
    assert store.put_if_absent("config", b"version 1") is True
    assert store.put_if_absent("config", b"version 2") is False
    assert store.get("config") == b"version 1"
    # The same bytes again (a retried request, or identical content): the key holds them.
    assert store.put_if_absent("config", b"version 1") is True
    assert store.put_if_absent("config", b"version 1 but longer") is False
    assert store.get("config") == b"version 1"


def _keys(listing) -> list[str]:
    return sorted(info.key for info in listing)


def test_listing_by_folder(remote: Remote):
    store = remote.store
    keys = ["a/b", "a/bc", "a-c", "ab", "a/b2/c", "data/00/x", "data/ff/y"]
    for key in keys:
        store.put(key, key.encode())
    everything = list(store.list())
    assert _keys(everything) == sorted(keys)
    assert all(i.size == len(i.key) for i in everything)
    assert _keys(store.list("a")) == ["a/b", "a/b2/c", "a/bc"]
    assert _keys(store.list("a/")) == ["a/b", "a/b2/c", "a/bc"]
    assert _keys(store.list("data/ff")) == ["data/ff/y"]
    assert list(store.list("nothing-here")) == []


def test_listing_many_keys_pages_through_all(remote: Remote):
    """More keys than one S3 listing page (1000) holds: every one comes back, once."""
    store = remote.store
    keys = [f"data/{i % 7}/{i:05d}" for i in range(2345)]
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda k: store.put(k, k[-5:].encode()), keys))
    listed = [info.key for info in store.list("data")]
    assert sorted(listed) == sorted(keys)  # each exactly once

    assert sum(info.size for info in store.list("data/3")) == 5 * len(
        [k for k in keys if k.startswith("data/3/")]
    )


def test_check_reports_conditional_writes(remote: Remote):
    caps = remote.store.check()
    assert caps.conditional_writes is True
    assert list(remote.store.list()) == []  # the probe cleans up after itself


def test_invalid_keys_are_refused_before_any_request(remote: Remote):
    for key in [
        "",
        "/abs",
        "a//b",
        "../up",
        "a/../b",
        "a/./b",
        ".hidden",
        "a/.tmp-x",
        "sp ace",
        "back\\slash",
        "ü",
        "a:b",
        "a%2fb",
        "x" * 901,
    ]:
        with pytest.raises(ValueError):
            remote.store.put(key, b"x")
        with pytest.raises(ValueError):
            remote.store.get(key)
    with pytest.raises(ValueError):
        list(remote.store.list("../x"))


def test_corrupted_object_is_detected(remote: Remote):
    store = remote.store
    data = os.urandom(5000)
    key = f"packs/{digest_hex(data)}"
    store.put(key, data)
    assert verified(store, key, store.get(key), digest_hex(data)) == data
    damaged = bytearray(data)
    damaged[1234] ^= 0x40
    if remote.folder is not None:  # flip a bit on the disk, behind the store's back
        (remote.folder / key).write_bytes(bytes(damaged))
    else:  # what a faulty server or a tampering writer would hand back
        store.put(key, bytes(damaged))
    with pytest.raises(CorruptObject) as caught:
        verified(store, key, store.get(key), digest_hex(data))
    err = caught.value
    assert err.key == key and err.expected == digest_hex(data)
    assert err.actual == digest_hex(bytes(damaged)) and exit_code(err) == 6
    assert "does not match its digest" in str(err) and "\n" not in str(err)


def _race(remote: Remote, rounds: int, index: int, barrier: Any, results: Any) -> None:
    """One of the racing processes: on each round, try to create the same key first."""
    store = remote.reopen()
    won = []
    for r in range(rounds):
        barrier.wait(timeout=60)
        won.append(store.put_if_absent(f"race/{r}", f"writer {index} round {r}".encode()))
    results.put((index, won))


def test_eight_processes_race_for_one_key(remote: Remote):
    """8 processes create the same key at once, 5 times: exactly one wins each time, and
    the object holds the winner's bytes."""
    ctx = multiprocessing.get_context("spawn")  # an S3 client must not cross a fork
    rounds, n = 5, 8
    barrier, results = ctx.Barrier(n), ctx.Queue()
    spec = Remote(remote.kind, None, remote.url, remote.options)  # type: ignore[arg-type]
    procs = [ctx.Process(target=_race, args=(spec, rounds, i, barrier, results)) for i in range(n)]
    for p in procs:
        p.start()
    outcome = dict(results.get(timeout=120) for _ in procs)
    for p in procs:
        p.join(timeout=30)
        assert p.exitcode == 0
    for r in range(rounds):
        winners = [i for i in range(n) if outcome[i][r]]
        assert len(winners) == 1, f"round {r}: winners {winners}"
        assert remote.store.get(f"race/{r}") == f"writer {winners[0]} round {r}".encode()


def test_missing_bucket_or_folder(remote: Remote, tmp_path: Path):
    if remote.kind == "s3":
        url = f"s3://no-such-bucket-{uuid.uuid4().hex[:8]}/prefix"
        store = open_object_store(url, **remote.options)
    else:
        store = open_object_store((tmp_path / "not-there").as_uri())
    with store:
        for call in (
            lambda: store.get("k"),
            lambda: store.put("k", b"x"),
            lambda: store.put_if_absent("k", b"x"),
            lambda: list(store.list()),
            store.check,
        ):
            with pytest.raises(MissingBucket) as caught:
                call()
            assert exit_code(caught.value) == 6 and caught.value.remote == store.url
            assert "does not exist" in str(caught.value)
    if remote.kind == "file":
        assert not (tmp_path / "not-there").exists()  # a typo never creates a folder
