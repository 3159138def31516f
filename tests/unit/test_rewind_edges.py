"""Rewinds across structural swaps, users' mode changes, hard links, and other sessions'
writes in flight: each ends right, or in a clear refusal."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from snapstore import Store

from ..support import agent_turn, read, snapshot, write


def _swap(
    store: Store,
    root: Path,
    removals: list[str],
    additions: dict[str, str | None],
    links: dict[str, str] | None = None,
) -> str:
    """An agent turn that takes paths away, then puts others (files, links) in their place,
    one tool call each, as an agent's file tools do."""
    turn = store.begin_turn("default", "restructure")
    for rel in removals:
        store.pre_write([rel], "Delete")
        target = root / rel
        if target.is_dir() and not target.is_symlink():
            target.rmdir()
        else:
            target.unlink()
        store.post_write([rel])
    for rel, data in additions.items():
        store.pre_write([rel], "Write")
        write(root, rel, data)
        store.post_write([rel])
    for rel, target in (links or {}).items():
        store.pre_write([rel], "Write")
        os.symlink(target, root / rel)
        store.post_write([rel])
    store.end_turn()
    return turn.id


@pytest.mark.parametrize(
    "case", ["file->folder", "folder->file", "link->file", "file->link", "link->folder"]
)
def test_a_structural_swap_rewinds_and_its_undo_restores_the_agents_structure(
    store: Store, root: Path, case: str
) -> None:
    write(root, "keep.txt", "untouched\n")
    if case == "file->folder":
        write(root, "config", "[base]\nx = 1\n")
        before = snapshot(root, dirs=True)
        turn = _swap(store, root, ["config"], {"config/base.ini": "[base]\nx = 2\n"})
    elif case == "folder->file":
        write(root, "lib/a.py", "a\n")
        write(root, "lib/sub/b.py", "b\n")
        before = snapshot(root, dirs=True)
        turn = _swap(
            store, root, ["lib/a.py", "lib/sub/b.py", "lib/sub", "lib"], {"lib": "one file\n"}
        )
    elif case == "link->file":
        write(root, "real.txt", "real\n")
        os.symlink("real.txt", root / "alias")
        before = snapshot(root, dirs=True)
        turn = _swap(store, root, ["alias"], {"alias": "a file now\n"})
    elif case == "file->link":
        write(root, "alias", "a file\n")
        write(root, "real.txt", "real\n")
        before = snapshot(root, dirs=True)
        turn = _swap(store, root, ["alias"], {}, {"alias": "real.txt"})
    else:  # a link to a folder becomes a real folder
        write(root, "elsewhere/x.txt", "x\n")
        os.symlink("elsewhere", root / "lib")
        before = snapshot(root, dirs=True)
        turn = _swap(store, root, ["lib"], {"lib/x.txt": "copied\n"})
    after = snapshot(root, dirs=True)
    result = store.rewind(turn)
    assert result.ok, (result.conflicts, result.errors)
    assert snapshot(root, dirs=True) == before
    store.undo()
    assert snapshot(root, dirs=True) == after


def test_a_folder_the_user_filled_is_never_emptied_by_a_rewind(store: Store, root: Path) -> None:
    write(root, "config", "[base]\n")
    turn = _swap(store, root, ["config"], {"config/base.ini": "[base]\nx = 2\n"})
    write(root, "config/mine.txt", "the user's own file\n")
    result = store.rewind(turn)
    assert [e["path"] for e in result.errors] == ["config"]
    assert read(root, "config/mine.txt") == b"the user's own file\n"  # nothing of it lost


def test_a_users_mode_change_survives_the_rewind_of_a_content_change(
    store: Store, root: Path
) -> None:
    write(root, "run.sh", "#!/bin/sh\necho one\n")
    turn = agent_turn(store, "edit", {"run.sh": "#!/bin/sh\necho two\n"})
    os.chmod(root / "run.sh", 0o755)  # the user
    result = store.rewind(turn)
    assert result.ok
    assert read(root, "run.sh") == b"#!/bin/sh\necho one\n"
    assert os.stat(root / "run.sh").st_mode & 0o777 == 0o755


def test_an_agents_mode_change_is_taken_back_and_a_users_edit_kept(
    store: Store, root: Path
) -> None:
    write(root, "tool.py", "print(1)\n" * 5)
    store.begin_turn("default", "make it executable")
    store.pre_write(["tool.py"])
    os.chmod(root / "tool.py", 0o755)
    store.post_write(["tool.py"])
    store.end_turn()
    write(root, "tool.py", "# mine\n" + "print(1)\n" * 5)  # the user edits the content
    os.chmod(root / "tool.py", 0o755)
    store.rewind(1)
    assert read(root, "tool.py") == b"# mine\n" + b"print(1)\n" * 5
    assert os.stat(root / "tool.py").st_mode & 0o777 == 0o644


def test_a_hard_linked_file_is_rewound_and_the_split_reported(store: Store, root: Path) -> None:
    write(root, "a.txt", "one\n")
    turn = agent_turn(store, "edit", {"a.txt": "two\n"})
    os.link(root / "a.txt", root / "b.txt")
    result = store.rewind(turn)
    assert read(root, "a.txt") == b"one\n" and read(root, "b.txt") == b"two\n"
    assert [w["path"] for w in result.warnings] == ["a.txt"]
    assert "2 hard links" in result.warnings[0]["reason"]


def test_another_sessions_write_in_flight_is_left_alone_and_named(store: Store, root: Path) -> None:
    write(root, "f.txt", "v0\n")
    a_turn = agent_turn(store, "a edits", {"f.txt": "v1\n"}, session="a")
    store.begin_turn("b", "b edits")
    store.pre_write(["f.txt"], "Edit", "b")  # b's tool call has started
    result = store.rewind(a_turn, "a")
    assert [c["path"] for c in result.conflicts] == ["f.txt"]
    assert "session 'b' is writing it" in result.conflicts[0]["reason"]
    assert read(root, "f.txt") == b"v1\n"
    write(root, "f.txt", "v2\n")  # b's write lands
    store.post_write(["f.txt"], "b")
    store.end_turn("b")
    store.rewind(1, "b")  # b's rewind gives back what b found: a's edit, never taken out
    assert read(root, "f.txt") == b"v1\n"
    store.undo(result.undo_id)  # a's rewind again, now that b is done: undo it, redo it
    assert store.rewind(1, "a").ok
    assert read(root, "f.txt") == b"v0\n"


def test_two_writes_of_one_switch_that_clash_refuse_each_other(store: Store, root: Path) -> None:
    """Found by the state machine. Switching b back onto a turn that wrote ``cfg/x.txt``
    would also bring back the file ``cfg`` (session a's, deleted by b's later turn): a
    file and a folder of one name. Neither write wins by the order of paths: both are
    refused, named, and the tree is left as it was."""

    def swap(session: str, old: str, new: str, data: str) -> str:
        turn = store.begin_turn(session, f"{old} becomes {new}")
        store.pre_write([old], "Delete", session)
        (root / old).unlink()
        if old == "cfg/x.txt":
            (root / "cfg").rmdir()
        store.post_write([old], session)
        store.pre_write([new], "Write", session)
        write(root, new, data)
        store.post_write([new], session)
        store.end_turn(session)
        return turn.id

    first = agent_turn(store, "make cfg/x.txt", {"cfg/x.txt": "x one\n"}, session="b")
    swap("a", "cfg/x.txt", "cfg", "a's cfg\n")
    assert store.rewind(first, "b").ok  # cfg/x.txt is already gone: nothing to do
    swap("b", "cfg", "cfg/x.txt", "x two\n")
    before = snapshot(root, dirs=True)
    result = store.switch(first)
    assert sorted(e["path"] for e in result.errors) == ["cfg", "cfg/x.txt"]
    assert not result.restored and not result.ok
    assert snapshot(root, dirs=True) == before
