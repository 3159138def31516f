"""Path safety and atomic writes: nothing outside the root is ever read or written."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from snapstore import BadInput, UnsafePath
from snapstore.core.fsio import Entry, Workspace
from snapstore.core.records import fingerprint


@pytest.fixture
def ws(root: Path) -> Workspace:
    return Workspace(root, str(root / ".snapstore"))


def test_relative_and_absolute_paths_normalise(ws: Workspace, root: Path) -> None:
    assert ws.relpath("a/b.txt") == "a/b.txt"
    assert ws.relpath("./a//c/../b.txt") == "a/b.txt"
    assert ws.relpath(str(root / "a" / "b.txt")) == "a/b.txt"


@pytest.mark.parametrize("path", ["../outside.txt", "a/../../x", "/etc/passwd", ".", ""])
def test_paths_outside_the_root_are_refused(ws: Workspace, path: str) -> None:
    with pytest.raises(UnsafePath):
        ws.relpath(path)


def test_nul_byte_is_refused(ws: Workspace) -> None:
    with pytest.raises(UnsafePath, match="NUL"):
        ws.relpath("a\0b")


def test_the_store_itself_is_refused(ws: Workspace) -> None:
    with pytest.raises(UnsafePath, match="store"):
        ws.relpath(".snapstore/db/data.mdb")


def test_symlinked_parent_leaving_the_root_is_refused(
    ws: Workspace, root: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "escape").symlink_to(outside)
    with pytest.raises(UnsafePath, match="symlink"):
        ws.relpath("escape/secret.txt")


def test_symlinked_parent_inside_the_root_is_canonicalised(ws: Workspace, root: Path) -> None:
    (root / "real").mkdir()
    (root / "alias").symlink_to(root / "real")
    assert ws.relpath("alias/f.txt") == "real/f.txt"


def test_leaf_symlink_is_read_as_a_link_never_followed(
    ws: Workspace, root: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "secret"
    secret.write_text("do not read")
    (root / "link").symlink_to(secret)
    entry = ws.read(ws.relpath("link"))
    assert entry is not None and entry.kind == "link"
    assert entry.data == os.fsencode(str(secret))


def test_write_replaces_a_symlink_instead_of_following_it(
    ws: Workspace, root: Path, tmp_path: Path
) -> None:
    target = tmp_path / "victim"
    target.write_text("original")
    (root / "f").symlink_to(target)
    ws.write("f", Entry("file", b"new", 0o644))
    assert target.read_text() == "original"
    assert not (root / "f").is_symlink() and (root / "f").read_bytes() == b"new"


def test_parent_swapped_for_a_symlink_after_the_check_is_refused(
    ws: Workspace, root: Path, tmp_path: Path
) -> None:
    (root / "d").mkdir()
    rel = ws.relpath("d/f.txt")  # checked while d is a real folder
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "d").rmdir()
    (root / "d").symlink_to(outside)  # swapped before use (TOCTOU)
    with pytest.raises(UnsafePath):
        ws.write(rel, Entry("file", b"x", 0o644))
    with pytest.raises(UnsafePath):
        ws.read(rel)
    assert list(outside.iterdir()) == []


def test_write_is_atomic_and_keeps_mode(ws: Workspace, root: Path) -> None:
    ws.write("deep/er/f.sh", Entry("file", b"#!/bin/sh\n", 0o755))
    path = root / "deep" / "er" / "f.sh"
    assert path.read_bytes() == b"#!/bin/sh\n"
    assert path.stat().st_mode & 0o777 == 0o755
    assert [p.name for p in path.parent.iterdir()] == ["f.sh"]  # no temp file left


def test_delete_and_remove_empty_parents(ws: Workspace, root: Path) -> None:
    ws.write("a/b/c.txt", Entry("file", b"x", 0o644))
    (root / "a" / "keep.txt").write_text("keep")
    ws.write("a/b/c.txt", None)
    assert ws.remove_empty_parents("a/b/c.txt", 2) == ["a/b"]
    assert (root / "a" / "keep.txt").exists() and not (root / "a" / "b").exists()


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_folders_held_for_many_paths_follow_what_the_block_removes_and_makes(
    ws: Workspace, root: Path
) -> None:
    """Inside ``holding_folders`` each folder is opened once; one the workspace removes is
    forgotten, so a later write below it makes it again (rather than writing into the removed
    folder), and every folder is closed once the block ends."""
    before = _open_fds()
    with ws.holding_folders():
        ws.write("a/b/c.txt", Entry("file", b"x", 0o644))
        ws.write("a/b/d.txt", Entry("file", b"y", 0o644))
        assert ws.read("a/b/c.txt") == Entry("file", b"x", 0o644, ws.lstat("a/b/c.txt"))
        ws.write("a/b/c.txt", None)
        ws.write("a/b/d.txt", None)
        assert ws.remove_empty_parents("a/b/c.txt", 2, durable=False) == ["a/b", "a"]
        assert not (root / "a").exists()
        ws.write("a/b/e.txt", Entry("file", b"z", 0o600))
        ws.flush(["a/b/e.txt", "a/b", "a"])
    assert (root / "a" / "b" / "e.txt").read_bytes() == b"z"
    assert _open_fds() == before


def test_a_held_folder_moved_and_swapped_for_a_symlink_gets_nothing(
    ws: Workspace, root: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "a").mkdir()
    before = _open_fds()
    with ws.holding_folders():
        ws.write("a/one.txt", Entry("file", b"1", 0o644))
        (root / "a").rename(root / "gone")
        (root / "a").symlink_to(outside)
        with pytest.raises(UnsafePath, match="moved"):  # the folder it holds is elsewhere now
            ws.write("a/two.txt", Entry("file", b"2", 0o644))
        with pytest.raises(UnsafePath, match="symlink"):  # a new walk meets the link: refused
            ws.write("a/sub/three.txt", Entry("file", b"3", 0o644))
    with pytest.raises(UnsafePath):  # outside the block too
        ws.write("a/four.txt", Entry("file", b"4", 0o644))
    assert list(outside.iterdir()) == []
    assert sorted(p.name for p in (root / "gone").iterdir()) == ["one.txt"]
    assert _open_fds() == before  # the moved folder's descriptor closed with the block


def test_reading_a_folder_or_fifo_is_bad_input(ws: Workspace, root: Path) -> None:
    (root / "dir").mkdir()
    os.mkfifo(root / "pipe")
    with pytest.raises(BadInput, match="folder"):
        ws.read("dir")
    with pytest.raises(BadInput, match="regular"):
        ws.read("pipe")


def test_missing_parents_counts_new_folders(ws: Workspace, root: Path) -> None:
    (root / "a").mkdir()
    assert ws.missing_parents("a/b/c/f.txt") == 2
    assert ws.missing_parents("a/f.txt") == 0
    assert ws.missing_parents("f.txt") == 0


def test_holds_says_whether_a_path_still_holds_what_was_read(ws: Workspace, root: Path) -> None:
    """Capture, scan and rewind commit only what the path still holds: a rewrite, a removal
    or a file where nothing was all show; a folder counts as nothing, as when it was read."""
    (root / "a.txt").write_text("one\n")
    read = ws.read("a.txt")
    assert read is not None and read.stat is not None
    seen = fingerprint(read.stat)
    assert ws.holds("a.txt", seen)
    (root / "a.txt").write_text("two, longer\n")
    assert not ws.holds("a.txt", seen)
    os.unlink(root / "a.txt")
    assert not ws.holds("a.txt", seen)
    assert ws.holds("a.txt", None)
    (root / "a.txt").mkdir()
    assert ws.holds("a.txt", None)
    assert not ws.holds("b.txt", seen) and ws.holds("b.txt", None)
    (root / "b.txt").write_text("new\n")
    assert not ws.holds("b.txt", None)
    (root / "real").mkdir()
    (root / "real" / "c.txt").write_text("c\n")
    (root / "link").symlink_to(root / "real")
    assert not ws.holds("link/c.txt", None)  # never read through a symlinked folder
