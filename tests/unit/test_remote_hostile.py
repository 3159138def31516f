"""A remote is someone else's disk: whatever its objects hold, a pull writes nothing outside
the workspace, applies no setuid bit, and refuses a malformed object naming it.

Each test pushes a real turn, then changes the remote behind the pusher's back the way
anyone who can write there could: a record is decoded, changed and sealed again (the
seal is only a hash), or an object is replaced by a link, a FIFO or a lying index. Over
S3 (SeaweedFS) and a folder remote alike.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import blake3
import pytest
import zstandard

from snapstore import Store
from snapstore.core import faults
from snapstore.core.blobs import MAX_WHOLE, digest_hex
from snapstore.core.errors import StoreLocked, UnsafePath
from snapstore.core.fsio import Workspace, check_relpath
from snapstore.core.records import FILE, Entry
from snapstore.remote import ObjectStore, RemoteError, open_object_store
from snapstore.remote.format import layout
from snapstore.remote.sync import pull as pull_module

from ..support import agent_turn
from ..support.bombs import BOMB, GROWTH_BOUND, lying_value, measured, zero_frame
from ..support.fuzz import Sentinel

BAD_PATHS = [
    "../victim.rc",
    "a/../../x",
    "x/y/../../../x",
    "../outside/secret.txt",
    "/etc/passwd",
    "",
    ".",
    "a//b",
    "./a",
    "a/",
    "a/\0b",
    ".git/hooks/pre-commit",
    "src/.git/config",
    ".snapstore/data.mdb",
    "sub/.snapstore/lock",
]


def pushed(tmp_path: Path, remote: ObjectStore, edits: dict[str, Any] | None = None) -> str:
    """A turn pushed from a store of its own; its id."""
    (tmp_path / "a").mkdir()
    with Store.init(tmp_path / "a") as a:
        turn = agent_turn(a, "one", edits or {"app.py": "print('hi')\n"})
        a.push(remote)
    return turn


def reseal(remote: ObjectStore, key: str, change: Callable[[Any], Any]) -> None:
    """Change a sealed record and seal it again, as anyone who can write there can."""
    record = layout.unseal(remote.get(key), remote.url, key)
    remote.put(key, layout.seal(change(record)))


def sealed_raw(json_text: bytes) -> bytes:
    payload = zstandard.ZstdCompressor().compress(json_text)
    return blake3.blake3(payload).digest() + payload


def state_key(remote: ObjectStore) -> str:
    (info,) = list(remote.list(layout.STATES))
    return info.key


def refused(store: Store, remote: ObjectStore, key: str) -> RemoteError:
    """Pull fails naming ``key``, and nothing of the remote reached the store."""
    with pytest.raises(RemoteError) as caught:
        store.pull(remote)
    assert caught.value.key == key, caught.value
    assert "\n" not in str(caught.value)
    with store.repo.read() as v:
        assert list(v.turns()) == [] and list(v.blob_values()) == []
    return caught.value


def set_path(path: str) -> Callable[[Any], Any]:
    def change(record: dict[str, Any]) -> dict[str, Any]:
        record["changes"][0]["path"] = path
        return record

    return change


@pytest.mark.parametrize("bad", BAD_PATHS)
def test_a_turn_naming_an_unsafe_path_is_refused_at_pull(
    tmp_path: Path, root: Path, sentinel: Sentinel, remote: ObjectStore, bad: str
) -> None:
    turn = pushed(tmp_path, remote)
    key = layout.turn_key(turn)
    reseal(remote, key, set_path(bad))
    with Store.init(root) as b:
        err = refused(b, remote, key)
        assert "changes[0].path" in str(err)


@pytest.mark.parametrize("bad", ["../victim.rc", "a/../../x", "/tmp/x", ".git/config", ""])
def test_a_session_base_naming_an_unsafe_path_is_refused_at_pull(
    tmp_path: Path, root: Path, sentinel: Sentinel, remote: ObjectStore, bad: str
) -> None:
    pushed(tmp_path, remote)
    key = state_key(remote)
    digest = blake3.blake3(b"owned\n").hexdigest()

    def change(state: dict[str, Any]) -> dict[str, Any]:
        state["sessions"][0]["base"] = {
            "commit": None,
            "changes": [[bad, None, [digest, 0o644, FILE]]],
            "skipped": [],
        }
        return state

    reseal(remote, key, change)
    with Store.init(root) as b:
        err = refused(b, remote, key)
        assert "base.changes[0][0]" in str(err)


def test_setuid_and_setgid_bits_from_a_remote_are_never_applied(
    tmp_path: Path, root: Path, remote: ObjectStore
) -> None:
    turn = pushed(tmp_path, remote, {"tool.sh": "#!/bin/sh\n"})
    key = layout.turn_key(turn)

    def change(record: dict[str, Any]) -> dict[str, Any]:
        record["changes"][0]["after"][1] = 0o6777
        return record

    reseal(remote, key, change)
    with Store.init(root) as b:
        b.pull(remote)
        (after,) = [c.after for c in b.changes(turn)]
        assert after is not None and after.mode == 0o777  # cut where it came in
        b.switch(turn, force=True)
        assert stat.S_IMODE(os.lstat(root / "tool.sh").st_mode) == 0o777


def _huge_seq(record: dict[str, Any]) -> Any:
    record["changes"][0]["seq"] = 10**30
    return record


def _bad_digest(record: dict[str, Any]) -> Any:
    record["changes"][0]["after"][0] = "zz"
    return record


def _mode_out_of_range(record: dict[str, Any]) -> Any:
    record["changes"][0]["after"][1] = -1
    return record


def _no_changes(record: dict[str, Any]) -> Any:
    del record["changes"]
    return record


def _string_time(record: dict[str, Any]) -> Any:
    record["created"] = "yesterday"
    return record


def _parent_key(record: dict[str, Any]) -> Any:
    record["parent"] = "../../x"
    return record


@pytest.mark.parametrize(
    "change",
    [
        lambda r: [r],
        lambda r: {**r, "changes": {"0": r["changes"][0]}},
        lambda r: {**r, "prompt": 7},
        _huge_seq,
        _bad_digest,
        _mode_out_of_range,
        _no_changes,
        _string_time,
        _parent_key,
    ],
    ids=[
        "list",
        "changes-object",
        "prompt-int",
        "huge-int",
        "digest",
        "mode",
        "missing",
        "time",
        "parent",
    ],
)
def test_a_turn_record_of_the_wrong_shape_is_a_remote_error_naming_it(
    tmp_path: Path, root: Path, remote: ObjectStore, change: Callable[[Any], Any]
) -> None:
    turn = pushed(tmp_path, remote)
    key = layout.turn_key(turn)
    reseal(remote, key, change)
    with Store.init(root) as b:
        refused(b, remote, key)


@pytest.mark.parametrize(
    "raw", [b"[" * 100_000, b'{"version": 1, "seq": 1' + b"0" * 5000 + b"}", b"\xff\xfe"]
)
def test_a_state_that_does_not_decode_is_a_remote_error_naming_it(
    tmp_path: Path, root: Path, remote: ObjectStore, raw: bytes
) -> None:
    pushed(tmp_path, remote)
    key = state_key(remote)
    remote.put(key, sealed_raw(raw))
    with Store.init(root) as b:
        refused(b, remote, key)


@pytest.mark.parametrize(
    "change",
    [
        lambda s: {**s, "sessions": "all"},
        lambda s: {**s, "writer": ["x"]},
        lambda s: {**s, "sessions": [{**s["sessions"][0], "turns": [["../x", "closed"]]}]},
        lambda s: {**s, "sessions": [{**s["sessions"][0], "created": float("nan")}]},
        lambda s: {**s, "sessions": [{**s["sessions"][0], "name": "x\x1b]0;owned\x07"}]},
    ],
    ids=["sessions", "writer", "turn-id", "nan", "control-chars"],
)
def test_a_state_of_the_wrong_shape_is_a_remote_error_naming_it(
    tmp_path: Path, root: Path, remote: ObjectStore, change: Callable[[Any], Any]
) -> None:
    pushed(tmp_path, remote)
    key = state_key(remote)
    reseal(remote, key, change)
    with Store.init(root) as b:
        refused(b, remote, key)


def lying_index(remote: ObjectStore, change: Callable[[list[Any]], None]) -> str:
    """Replace the remote's index with one whose blob entries ``change`` alters."""
    (info,) = list(remote.list(layout.INDEXES))
    index = json.loads(zstandard.ZstdDecompressor().decompress(remote.get(info.key)))
    for entry in index["blobs"]:
        change(entry)
    data = zstandard.ZstdCompressor().compress(layout.canonical(index))
    key = layout.index_key(digest_hex(data))
    remote.delete(info.key)
    remote.put(key, data)
    return key


@pytest.mark.parametrize(
    "change",
    [
        lambda e: e.__setitem__(2, e[2] + 10_000_000),  # past the pack's end
        lambda e: e.__setitem__(3, e[3] + 10_000_000),  # longer than the pack
        lambda e: e.__setitem__(3, 10**40),  # a huge int
        lambda e: e.__setitem__(1, 5),  # a pack the index does not list
        lambda e: e.__setitem__(3, "12"),
    ],
    ids=["offset", "length", "huge", "pack-number", "string"],
)
def test_an_index_that_lies_about_offsets_or_sizes_is_a_remote_error(
    tmp_path: Path, root: Path, remote: ObjectStore, change: Callable[[list[Any]], None]
) -> None:
    pushed(tmp_path, remote, {"big.txt": os.urandom(4096).hex()})
    index_key = lying_index(remote, change)
    (pack,) = [i.key for i in remote.list(layout.PACKS)]
    with Store.init(root) as b:
        with pytest.raises(RemoteError) as caught:
            b.pull(remote)
        assert caught.value.key in (index_key, pack), caught.value
        with b.repo.read() as v:
            assert list(v.turns()) == [] and list(v.blob_values()) == []


def test_an_oversized_config_is_refused_unread(
    tmp_path: Path, root: Path, remote: ObjectStore
) -> None:
    pushed(tmp_path, remote)
    remote.put(layout.CONFIG, layout.config_bytes() + b" " * (layout.MAX_CONFIG + 1))
    with Store.init(root) as b:
        err = refused(b, remote, layout.CONFIG)
        assert "more than the" in str(err)


def test_a_record_that_inflates_past_the_limit_is_refused(
    tmp_path: Path, root: Path, remote: ObjectStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    turn = pushed(tmp_path, remote)
    key = layout.turn_key(turn)
    reseal(remote, key, lambda r: {**r, "prompt": "a" * 2_000_000})  # a few KiB on the remote
    monkeypatch.setattr(layout, "MAX_DECODED", 1_000_000)  # a zstd bomb, scaled down
    with Store.init(root) as b:
        err = refused(b, remote, key)
        assert "decodes to more than" in str(err)


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "link-out", "folder-link"])
def test_special_files_on_a_folder_remote_are_refused_never_read(
    tmp_path: Path, root: Path, sentinel: Sentinel, kind: str
) -> None:
    folder = tmp_path / "remote"
    folder.mkdir()
    with open_object_store(folder.as_uri()) as remote:
        turn = pushed(tmp_path, remote)
        key = layout.turn_key(turn)
        target = folder / key
        if kind == "folder-link":
            moved = tmp_path / "elsewhere"
            os.rename(folder / layout.TURNS, moved)
            (folder / layout.TURNS).symlink_to(moved)
        else:
            target.unlink()
            if kind == "fifo":
                os.mkfifo(target)
            elif kind == "dev-zero":
                target.symlink_to("/dev/zero")
            else:
                target.symlink_to(sentinel.path / "secret.txt")
        with Store.init(root) as b:
            err = refused(b, remote, key)
            assert "not a regular file" in str(err)


def test_names_no_writer_makes_in_a_folder_remote_are_not_objects(
    tmp_path: Path, root: Path
) -> None:
    folder = tmp_path / "remote"
    folder.mkdir()
    with open_object_store(folder.as_uri()) as remote:
        turn = pushed(tmp_path, remote)
        for name in ("indexes/not ours", "gc/a b", "turns/x y"):
            (folder / name).parent.mkdir(exist_ok=True)
            (folder / name).write_bytes(b"junk")
        with Store.init(root) as b:
            assert b.pull(remote).turns == 1
            assert [c.path for c in b.changes(turn)] == ["app.py"]


def test_a_config_linked_to_dev_zero_is_refused(tmp_path: Path, root: Path) -> None:
    folder = tmp_path / "remote"
    folder.mkdir()
    with open_object_store(folder.as_uri()) as remote:
        pushed(tmp_path, remote)
        (folder / layout.CONFIG).unlink()
        (folder / layout.CONFIG).symlink_to("/dev/zero")
        with Store.init(root) as b:
            refused(b, remote, layout.CONFIG)


@pytest.mark.parametrize("bad", BAD_PATHS)
def test_one_path_checker_refuses_every_unsafe_shape(bad: str) -> None:
    with pytest.raises(UnsafePath):
        check_relpath(bad)
    assert check_relpath("src/app.py") == "src/app.py"
    assert check_relpath("a..b/.hidden/x..") == "a..b/.hidden/x.."


@pytest.mark.parametrize("bad", ["../victim.rc", "a/../../x", "x/y/../../../x", "./a", "a//b"])
def test_the_filesystem_layer_refuses_dot_dot_itself(
    root: Path, sentinel: Sentinel, bad: str
) -> None:
    ws = Workspace(root)
    with pytest.raises(UnsafePath):
        ws.write(bad, Entry(FILE, b"owned\n", 0o644))
    with pytest.raises(UnsafePath):
        ws.read(bad)


def test_the_filesystem_layer_applies_only_permission_bits(root: Path) -> None:
    Workspace(root).write("tool.sh", Entry(FILE, b"#!/bin/sh\n", 0o6755))
    assert stat.S_IMODE(os.lstat(root / "tool.sh").st_mode) == 0o755


def test_a_pull_killed_between_packs_is_completed_by_the_next(
    tmp_path: Path, root: Path, remote: ObjectStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(layout, "PACK_TARGET", 1)  # one pack per blob
    base = os.urandom(3000).hex()
    turns = []
    (tmp_path / "a").mkdir()
    with Store.init(tmp_path / "a") as a:
        for n in range(4):  # each version a delta on the one before
            turns.append(agent_turn(a, f"t{n}", {"f.txt": base + f"edit {n}\n" * (n + 1)}))
        a.push(remote)
    assert len(list(remote.list(layout.PACKS))) >= 4

    class Killed(Exception):
        pass

    def stop(name: str) -> None:
        if name == "pull.pack":
            raise Killed

    with Store.init(root) as b:
        faults.install(stop)
        try:
            with pytest.raises(Killed):
                b.pull(remote)
        finally:
            faults.install(None)
        with b.repo.read() as v:
            assert list(v.turns()) == []  # never a turn without its blobs
            assert len(list(v.blob_values())) >= 1  # the first pack was committed
        done = b.pull(remote)
        assert done.turns == 4
        with b.repo.read() as v:
            for turn in turns:
                for change in v.changes(turn):
                    assert change.after is not None and v.content(change.after) is not None
        assert b.fsck().ok


def test_a_gc_during_a_pull_never_leaves_a_turn_without_its_blobs(
    tmp_path: Path, root: Path, remote: ObjectStore
) -> None:
    turn = pushed(tmp_path, remote)
    with Store.init(root) as b:

        def sweep(name: str) -> None:
            if name == "pull.fetched":  # the blobs are stored, no turn names them yet
                b.gc(compact=False)

        faults.install(sweep)
        try:
            with pytest.raises(StoreLocked):
                b.pull(remote)
        finally:
            faults.install(None)
        with b.repo.read() as v:
            assert list(v.turns()) == [] and list(v.blob_values()) == []
        assert b.pull(remote).turns == 1
        with b.repo.read() as v:
            (change,) = v.changes(turn)
            content = None if change.after is None else v.content(change.after)
            assert content is not None and content.data == b"print('hi')\n"


def test_deltas_whose_base_is_in_a_later_pack_wait_for_it(
    tmp_path: Path, root: Path, remote: ObjectStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(layout, "PACK_TARGET", 1)
    base = os.urandom(3000).hex()
    (tmp_path / "a").mkdir()
    with Store.init(tmp_path / "a") as a:
        for n in range(5):
            agent_turn(a, f"t{n}", {"f.txt": base + f"edit {n}\n" * (n + 1)})
        a.push(remote)
        with a.repo.read() as v:
            expected = {k.hex(): v.blob(k) for k, _ in v.blob_values()}
    order = pull_module._pack_order
    monkeypatch.setattr(pull_module, "_pack_order", lambda *args: order(*args)[::-1])
    with Store.init(root) as b:
        assert b.pull(remote).turns == 5
        with b.repo.read() as v:
            assert {k.hex(): v.blob(k) for k, _ in v.blob_values()} == expected
        assert b.fsck().ok


def bombed(remote: ObjectStore, blob_id: str, value: bytes) -> str:
    """Repack the remote with ``value`` under ``blob_id`` (every other blob as it was), as
    anyone who can write there can; the new pack's key."""
    (info,) = list(remote.list(layout.INDEXES))
    index = layout.read_index(remote.get(info.key), remote.url, info.key)
    values = []
    for other, ref in sorted(index.items()):
        pack = remote.get(layout.pack_key(ref.pack))
        values.append(
            (other, value if other == blob_id else pack[ref.offset : ref.offset + ref.length])
        )
    data, entries = layout.build_pack(values)
    pack = digest_hex(data)
    for old in {ref.pack for ref in index.values()}:
        remote.delete(layout.pack_key(old))
    remote.put(layout.pack_key(pack), data)
    refs = {b: layout.BlobRef(pack, offset, length, None) for b, offset, length in entries}
    new_index = layout.build_index(refs)
    remote.delete(info.key)
    remote.put(layout.index_key(digest_hex(new_index)), new_index)
    return layout.pack_key(pack)


PULL_IN_CHILD = """
from snapstore import Store
from snapstore.remote import RemoteError, S3Credentials, open_object_store
options = {}
if ARGS["endpoint"]:
    from tests.support.seaweed import FAST_RETRY
    options = dict(
        endpoint_url=ARGS["endpoint"], credentials=S3Credentials(*ARGS["keys"]), retry=FAST_RETRY
    )
with open_object_store(ARGS["url"], **options) as remote, Store.init(ARGS["root"]) as store:
    try:
        store.pull(remote)
    except RemoteError as exc:
        OUT["key"], OUT["error"] = exc.key, str(exc)
    with store.repo.read() as v:
        OUT["stored"] = [len(list(v.turns())), len(list(v.blob_values()))]
"""


@pytest.mark.parametrize(
    ("stated", "says"),
    [(BOMB, True), (12, True), (MAX_WHOLE, False)],
    ids=["says-768MiB", "says-12-bytes", "at-the-cap-frame-says-nothing"],
)
def test_a_decompression_bomb_on_a_remote_is_refused_and_allocates_little(
    tmp_path: Path,
    root: Path,
    remote: ObjectStore,
    request: pytest.FixtureRequest,
    stated: int,
    says: bool,
) -> None:
    """The report: a 25 KiB object made ``pull`` allocate 768 MiB. The pushed file's blob is
    replaced by a zstd frame of 768 MiB of zeros (24 KiB, saying its size or not) under a
    header that states ``stated``;
    the pull, in a process of its own, refuses it naming the pack, stores nothing, and
    grows by far less than the bomb."""
    pushed(tmp_path, remote)
    pack = bombed(remote, digest_hex(b"print('hi')\n"), lying_value(stated, zero_frame(says=says)))
    assert len(remote.get(pack)) < 64 * 1024
    endpoint, keys = None, None
    if remote.url.startswith("s3://"):
        server = request.getfixturevalue("seaweed")
        endpoint = server.endpoint
        keys = [server.credentials.access_key_id, server.credentials.secret_access_key]
    out = measured(PULL_IN_CHILD, url=remote.url, root=str(root), endpoint=endpoint, keys=keys)
    assert out.get("key") == pack, out
    assert "does not match its digest (blob " in out["error"], out
    assert "\n" not in out["error"], out
    assert out["stored"] == [0, 0], out
    assert out["peak"] - out["before"] < GROWTH_BOUND, out
