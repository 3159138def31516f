"""Scan mode: what shell commands change is recorded, attributed, skipped, and rewound."""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path

import pytest

from snapstore import Store, UnsafePath
from snapstore.core.records import FILE, USER, Entry, unscanned_fingerprint, version_of
from snapstore.ops import scan, scanrecord

from ..support import SHELL_TOOL, agent_write, changes_of, make_tree, read, shell, snapshot, write


def index_keys(store: Store) -> set[str]:
    with store.repo.read() as v:
        return {os.fsdecode(k) for k in v.index_entries()}


def test_the_first_scan_records_a_baseline_with_every_blob(store: Store, root: Path) -> None:
    make_tree(root)
    result = store.scan()
    assert result.baseline and result.count == 0 and result.turn is None
    assert index_keys(store) == {"src/a.txt", "src/b.txt", "src/c.txt", "run.sh", "bin.dat", "link"}
    with store.repo.read() as v:
        assert not list(v.turns())
        for rel in index_keys(store):  # every file can come back
            entry = store.ws.read(rel)
            assert v.blob(v.path_digest(rel)) == entry.data


def test_a_first_scan_of_many_files_compresses_in_threads_and_keeps_every_byte(
    store: Store, root: Path
) -> None:
    """Past ``PARALLEL_FRAMES`` files a batch is compressed by threads, each its share: every
    file still gets its own frame (an empty one, duplicates, incompressible bytes among them),
    and a rewind of a shell ``rm -r`` of all of them brings back every byte."""
    rng = random.Random(7)
    files = {f"many/{i:03}.txt": f"line {i}\n".encode() * rng.randrange(1, 400) for i in range(150)}
    files.update(
        {"many/empty": b"", "many/same-1": b"twice\n" * 50, "many/same-2": b"twice\n" * 50}
    )
    files["many/noise.bin"] = rng.randbytes(5000)
    for rel, data in files.items():
        write(root, rel, data)
    assert len(files) >= 2 * scanrecord.PARALLEL_FRAMES
    result = store.scan()
    assert result.baseline and result.read == len(files)
    with store.repo.read() as v:
        assert all(v.blob(v.path_digest(rel)) == data for rel, data in files.items())
    store.begin_turn("s", "clean up", scan=True)
    store.shell_begin("s", "call-1")
    shutil.rmtree(root / "many")
    store.shell_end("s", "call-1")
    store.end_turn("s", scan=True)
    assert store.rewind(1, "s").ok
    assert {rel: read(root, rel) for rel in files} == files


def test_a_kept_scan_state_is_decoded_again_once_a_scan_changed_it(
    store: Store, root: Path
) -> None:
    """The watcher keeps the decoded scan state between its scans (``ScanMemo``). A full
    scan that saw a new folder changes the state: a later scan with the same memo must know
    the folder was there, so that rewinding a file the agent made in it keeps the folder."""
    make_tree(root)
    memo = scan.ScanMemo()
    scan.scan(store.repo, memo=memo)
    (root / "kept").mkdir()  # the user's, empty
    scan.scan(store.repo, None, ["src/a.txt"], memo=memo)  # the memo holds a state without it
    scan.scan(store.repo, memo=memo)  # a full scan: the folder joins the state
    store.begin_turn("s", "add a file", scan=True)
    store.shell_begin("s", "call-1")
    write(root, "kept/new.txt", "new\n")
    assert scan.scan(store.repo, "s", ["kept/new.txt"], memo=memo).count == 1
    store.shell_end("s", "call-1")
    store.end_turn("s", scan=True)
    assert store.rewind(1, "s").ok
    assert (root / "kept").is_dir() and not (root / "kept" / "new.txt").exists()


def test_shell_changes_in_a_turn_are_rewound_byte_for_byte(store: Store, root: Path) -> None:
    make_tree(root)
    store.scan()
    before = snapshot(root, dirs=True)
    turn = store.begin_turn("s", "refactor with the shell", scan=True)
    store.shell_begin("s", "call-1")
    shell(root, SHELL_TOOL)
    store.shell_end("s", "call-1")
    store.end_turn("s", scan=True)
    recorded = changes_of(store, turn.id)
    assert set(recorded) == {"src/a.txt", "src/b.txt", "src/c.txt", "src/renamed.txt", "run.sh"} | {
        f"gen/deep/g{i}.txt" for i in range(1, 51)
    }
    assert set(recorded.values()) == {"scan"}
    result = store.rewind(1, "s")
    assert result.ok, result
    assert snapshot(root, dirs=True) == before  # the generator's folders are gone too
    assert store.scan().count == 0  # the rewind's writes are not seen as new changes


def test_a_folder_that_was_there_before_the_shell_call_stays_when_its_file_is_rewound(
    store: Store, root: Path
) -> None:
    """A shell call writes a file into an empty folder that was already there (the
    user's): rewinding the call deletes the file and keeps the folder, which the call did
    not bring; the folders it did bring go."""
    make_tree(root)
    (root / "empty").mkdir()
    store.scan()
    before = snapshot(root, dirs=True)
    store.begin_turn("s", "write into empty/", scan=True)
    store.shell_begin("s", "call-1")
    shell(
        root,
        "echo made > empty/made.txt && mkdir -p empty/new/deep && echo x > empty/new/deep/x.txt",
    )
    store.shell_end("s", "call-1")
    store.end_turn("s", scan=True)
    result = store.rewind(1, "s")
    assert result.ok and sorted(result.deleted) == ["empty/made.txt", "empty/new/deep/x.txt"]
    assert snapshot(root, dirs=True) == before  # empty/ stays; empty/new/deep goes


def test_a_user_edit_between_turns_is_the_users_and_survives(store: Store, root: Path) -> None:
    make_tree(root)
    store.scan()
    turn = store.begin_turn("s", "edit", scan=True)
    store.shell_begin("s")
    shell(root, "sed -i 's/one/ONE/' src/a.txt")
    store.shell_end("s")
    store.end_turn("s", scan=True)
    write(root, "src/a.txt", "ONE\ntwo\nthree\nmine\n")  # the user, between turns
    write(root, "notes.txt", "my notes\n")
    user = store.scan("s")
    assert user.user and sorted(user.changed + user.added) == ["notes.txt", "src/a.txt"]
    with store.repo.read() as v:
        record = v.turn(user.turn)
        assert record.kind == USER and record.parent is None
        assert v.head("s") == turn.id  # not on the branch
    assert [p.turn.id for p in store.rewind_points("s")] == [turn.id]
    result = store.rewind(1, "s")
    assert result.merged == ["src/a.txt"]
    assert read(root, "src/a.txt") == b"one\ntwo\nthree\nmine\n"
    assert read(root, "notes.txt") == b"my notes\n"


def test_a_hooks_write_is_recorded_once(store: Store, root: Path) -> None:
    make_tree(root)
    store.scan()
    turn = store.begin_turn("s", "edit", scan=True)
    agent_write(store, "src/a.txt", "by the agent\n", session="s")
    store.pre_write(["src/b.txt"], "Write", "s")  # a write still in progress
    write(root, "src/b.txt", "half written\n")
    assert store.scan("s").count == 0  # the hook owns both paths
    store.post_write(["src/b.txt"], "s")
    store.end_turn("s", scan=True)
    assert changes_of(store, turn.id) == {"src/a.txt": "hook", "src/b.txt": "hook"}


def test_skip_rules_and_reports(store: Store, root: Path, tmp_path: Path) -> None:
    tree = {
        ".gitignore": "*.log\nbuild/\n",
        "app.log": "ignored",
        "build/out.o": "ignored by git, re-included by .snapstoreignore",
        "sub/.gitignore": "*.tmp\n!keep.log\n",
        "sub/x.tmp": "ignored below sub",
        "sub/keep.log": "re-included by the nested file",
        "top.tmp": "the nested rule does not reach up",
        ".snapstoreignore": "secrets/\n!build/\n",
        "secrets/key": "never captured",
        ".git/config": "[core]\n",
        "vendor/lib/.git/HEAD": "ref: refs/heads/main\n",
        "vendor/lib/code.c": "int x;\n",
        "big.bin": b"x" * 2048,
    }
    for rel, data in tree.items():
        write(root, rel, data)
    outside = tmp_path / "outside"
    write(outside, "private.txt", "not in the workspace")
    os.symlink(outside, root / "out")
    os.mkfifo(root / "pipe")
    result = scan.scan(store.repo, max_file_size=1024)
    assert index_keys(store) == {
        ".gitignore",
        "sub/.gitignore",
        "sub/keep.log",
        "top.tmp",
        ".snapstoreignore",
        "build/out.o",
        "vendor/lib/code.c",
        "out",
    }
    skipped = {item["path"]: item["reason"] for item in result.skipped}
    assert "size cap" in skipped["big.bin"] and "regular file" in skipped["pipe"]
    assert not any(k.startswith(".snapstore/") for k in index_keys(store))
    with store.repo.read() as v:  # the symlink is a link, never followed
        assert v.blob(v.path_digest("out")) == os.fsencode(outside)
    assert read(root, "vendor/lib/.git/HEAD") == b"ref: refs/heads/main\n"  # left alone


def test_a_changed_ignore_file_hides_and_reveals(store: Store, root: Path) -> None:
    write(root, "a.tmp", "scratch\n")
    write(root, "b.txt", "kept\n")
    store.scan()
    assert index_keys(store) == {"a.tmp", "b.txt"}
    write(root, ".gitignore", "*.tmp\n")
    hidden = store.scan()
    assert hidden.added == [".gitignore"] and hidden.deleted == []  # forgotten, not deleted
    assert "a.tmp" not in index_keys(store)
    (root / ".gitignore").unlink()
    revealed = store.scan()
    assert revealed.deleted == [".gitignore"] and revealed.added == []  # a.tmp never changed
    assert "a.tmp" in index_keys(store)


def test_unchanged_files_are_not_read_again(store: Store, root: Path, monkeypatch) -> None:
    monkeypatch.setattr(scan, "RACY_NS", 0)  # nothing counts as just written
    make_tree(root)
    store.scan()
    assert store.scan().read == 0
    write(root, "src/b.txt", "changed\n")
    result = store.scan()
    assert result.read == 1 and result.changed == ["src/b.txt"]


def test_a_scan_of_some_paths_sees_only_them(store: Store, root: Path) -> None:
    make_tree(root)
    write(root, "dir/x.txt", "x\n")
    write(root, "dir/sub/y.txt", "y\n")
    store.scan()
    write(root, "src/a.txt", "elsewhere\n")
    shell(root, "rm -r dir")
    result = store.scan(paths=["dir"])
    assert sorted(result.deleted) == ["dir/sub/y.txt", "dir/x.txt"] and not result.full
    assert store.scan().changed == ["src/a.txt"]


def test_snapstore_temp_files_and_a_store_being_created_are_never_captured(store, root) -> None:
    from snapstore.ops.scan import scan

    scan(store.repo)
    (root / ".snapstore-0123456789ab.tmp").write_text("half-written by a rewind")
    (root / "sub").mkdir()
    (root / "sub" / ".snapstore-ba9876543210.tmp").write_text("another")
    (root / ".snapstore.new-4242").mkdir()
    (root / ".snapstore.new-4242" / "data.mdb").write_text("a store being created")
    (root / "real.txt").write_text("user file")
    result = scan(store.repo)
    assert result.added == ["real.txt"]


def test_another_store_nested_in_the_workspace_is_never_captured(store: Store, root: Path) -> None:
    """An inner workspace's store (``.snapstore`` at any depth, or one being created) is
    another project's history: no scan records it, no path may name it."""
    write(root, "a.txt", "a\n")
    (root / "inner" / "deep").mkdir(parents=True)
    with Store.init(root / "inner" / "deep"):
        pass
    write(root, "inner/.snapstore.new-123/db/data.mdb", "being created\n")
    write(root, "inner/deep/notes.txt", "the inner workspace's own file\n")
    first = store.scan()
    assert not any(".snapstore" in k for k in index_keys(store)), index_keys(store)
    assert "inner/deep/notes.txt" in index_keys(store)
    with Store.open(root / "inner" / "deep") as inner:  # the inner store works meanwhile
        inner.begin_turn("s", "inner turn")
        inner.pre_write(["notes.txt"])
        write(root, "inner/deep/notes.txt", "changed in the inner workspace\n")
        inner.post_write(["notes.txt"])
        inner.end_turn("s")
    result = store.scan()
    assert result.changed == ["inner/deep/notes.txt"] and first.baseline
    for path in (
        "inner/deep/.snapstore/db/data.mdb",
        "inner/.snapstore.new-123/db/data.mdb",
        "x/.snapstore",
        str(root / "inner/deep/.snapstore/write.lock"),
    ):
        with pytest.raises(UnsafePath, match="inside the store"):
            store.ws.relpath(path)
        with pytest.raises(UnsafePath):
            store.pre_write([path])


def test_a_scan_forgets_what_it_indexed_inside_a_nested_store(store: Store, root: Path) -> None:
    """Index entries that an older snapstore recorded inside a nested store are dropped,
    not recorded as deleted."""
    write(root, "a.txt", "a\n")
    store.scan()
    version = version_of(Entry(FILE, b"old\n"))
    store.repo.write(
        lambda tx: tx.put_index(
            "inner/.snapstore/db/data.mdb", unscanned_fingerprint(version) + version.key
        )
    )
    write(root, "inner/.snapstore/db/data.mdb", "the inner store's bytes\n")
    result = store.scan()
    assert result.count == 0
    assert index_keys(store) == {"a.txt"}


def test_a_rewind_never_writes_into_a_nested_store(store: Store, root: Path) -> None:
    """A change recorded inside a nested store (by a snapstore from before the rule) is
    left alone by a rewind, and reported."""
    inner = "inner/.snapstore/db/data.mdb"
    write(root, "a.txt", "a\n")
    turn = store.begin_turn("s", "p")
    agent_write(store, "a.txt", "A\n", session="s")
    store.end_turn("s")
    (change,) = store.changes(turn.id)
    store.repo.write(lambda tx: tx.put_change(change._replace(seq=1, path=inner)))
    write(root, inner, "A\n")  # what that change recorded as its after
    result = store.rewind(1, "s")
    assert result.restored == ["a.txt"] and [e["path"] for e in result.errors] == [inner]
    assert "inside a snapstore store" in result.errors[0]["reason"]
    assert read(root, inner) == b"A\n" and read(root, "a.txt") == b"a\n"


def test_a_path_gone_before_the_baseline_is_new_when_it_comes_back(
    store: Store, root: Path
) -> None:
    """The store knew a file (an agent wrote it) that was deleted before scan mode began:
    a shell call that creates it again made a new file, and its rewind deletes it rather
    than bringing back the old bytes the user had already deleted."""
    agent_write(store, "t.txt", "the agent's first version\n")
    store.end_turn("default")
    (root / "t.txt").unlink()  # the user, before any scan
    store.shell_begin("default", "call-1")  # the first scan: the baseline
    write(root, "t.txt", "made by a shell command\n")
    store.shell_end("default", "call-1")
    store.end_turn("default")
    assert changes_of(store, store.rewind_points()[0].turn.id) == {"t.txt": "scan"}
    store.rewind(1)
    assert read(root, "t.txt") is None


@pytest.mark.parametrize("scoped", [False, True], ids=["full", "scoped"])
def test_what_the_walk_does_not_meet_is_checked_as_gone(
    store: Store, root: Path, scoped: bool
) -> None:
    """The walk reads the index a folder at a time, so what it does not meet is found
    apart: a file a folder replaced, the entries below a folder a file replaced, a folder
    deleted deep down, a folder ignored now, a folder that cannot be listed. Each ends as
    a reading of the whole index would leave it, in a full scan and a scoped one."""
    for rel in ("f", "d/one.txt", "d/deep/two.txt", "gone/a/b/c.txt", "gone/top.txt"):
        write(root, rel, f"{rel}\n")
    write(root, "hid/h.txt", "hidden soon\n")
    write(root, "keep/k.txt", "kept\n")
    write(root, "locked/l.txt", "unreadable soon\n")
    store.scan()
    shell(root, "rm -r f d gone && mkdir f && echo in > f/y.txt && echo now > d")
    result = store.scan(paths=["f", "d", "gone"] if scoped else None)
    assert sorted(result.deleted) == [
        "d/deep/two.txt",
        "d/one.txt",
        "f",
        "gone/a/b/c.txt",
        "gone/top.txt",
    ]
    assert sorted(result.added) == ["d", "f/y.txt"]
    write(root, ".gitignore", "hid/\n")
    (root / "locked").chmod(0o300)  # can be entered, not listed
    try:
        result = store.scan(paths=[".gitignore", "hid", "locked"] if scoped else None)
        assert result.added == [".gitignore"] and result.deleted == []
        assert index_keys(store) == {
            ".gitignore",
            "d",
            "f/y.txt",
            "keep/k.txt",
            "locked/l.txt",  # unlisted: not gone
        }
    finally:
        (root / "locked").chmod(0o700)
