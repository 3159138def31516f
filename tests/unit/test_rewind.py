"""Rewind: exact restores, merges that keep user edits, conflicts, modes, the turn DAG, undo."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from snapstore import BadInput, NotFound, RunActive, Store

from ..support import agent_turn, agent_write, read, snapshot, write
from ..support.rawdb import raw_put, raw_values

BASE = "".join(f"line {i}\n" for i in range(1, 21))


def _edit(text: str, line: int, new: str) -> str:
    lines = text.splitlines(keepends=True)
    lines[line - 1] = new
    return "".join(lines)


def test_exact_restore_of_modified_created_and_deleted_files(store: Store, root: Path) -> None:
    write(root, "mod.txt", "original\n")
    write(root, "gone.txt", "keep me\n")
    before = snapshot(root, dirs=True)
    turn = agent_turn(
        store, "edit", {"mod.txt": "agent\n", "new/dir/made.txt": "new\n", "gone.txt": None}
    )
    result = store.rewind(turn)
    assert snapshot(root, dirs=True) == before
    assert sorted(result.restored) == ["gone.txt", "mod.txt"]
    assert result.deleted == ["new/dir/made.txt"]
    assert not (root / "new").exists()  # folders the agent created and the rewind emptied
    assert result.ok and result.undo_id and result.user_text == "edit"


def test_user_edit_in_another_region_survives(store: Store, root: Path) -> None:
    write(root, "f.txt", BASE)
    turn = agent_turn(store, "agent edits line 3", {"f.txt": _edit(BASE, 3, "AGENT\n")})
    write(root, "f.txt", _edit(_edit(BASE, 3, "AGENT\n"), 15, "USER\n"))
    result = store.rewind(turn)
    assert read(root, "f.txt").decode() == _edit(BASE, 15, "USER\n")
    assert result.merged == ["f.txt"] and result.ok


@pytest.mark.parametrize("policy", ["skip", "markers", "theirs"])
def test_overlapping_user_edit_is_a_conflict(store: Store, root: Path, policy: str) -> None:
    write(root, "f.txt", BASE)
    turn = agent_turn(store, "agent edits line 3", {"f.txt": _edit(BASE, 3, "AGENT\n")})
    user = _edit(BASE, 3, "USER\n")
    write(root, "f.txt", user)
    result = store.rewind(turn, on_conflict=policy)
    content = read(root, "f.txt").decode()
    if policy == "skip":
        assert content == user
        assert [c["path"] for c in result.conflicts] == ["f.txt"]
    elif policy == "markers":
        assert "<<<<<<<" in content and "USER" in content and "line 3" in content
        assert [c["path"] for c in result.conflicts] == ["f.txt"]
    else:
        assert content == BASE and result.restored == ["f.txt"]


def test_markers_written_into_a_folder_gone_since_are_undone_with_the_folder(
    store: Store, root: Path
) -> None:
    """A rewind brings back a file whose folder is gone since (the user removed it once the
    agent had deleted the file) and writes it with conflict markers: its undo deletes the
    file and removes the folder the rewind brought with it."""
    write(root, "docs/f.txt", BASE)
    turn = agent_turn(store, "agent edits line 3", {"docs/f.txt": _edit(BASE, 3, "AGENT\n")})
    write(root, "docs/f.txt", _edit(BASE, 3, "USER\n"))
    agent_turn(store, "agent deletes it", {"docs/f.txt": None})
    (root / "docs").rmdir()
    before = snapshot(root, dirs=True)
    result = store.rewind(turn, on_conflict="markers")
    assert result.marked == ["docs/f.txt"] and b"<<<<<<<" in read(root, "docs/f.txt")
    assert store.undo().deleted == ["docs/f.txt"]
    assert snapshot(root, dirs=True) == before  # docs/ is gone again


def test_markers_that_the_file_already_holds_are_not_written_again(
    store: Store, root: Path
) -> None:
    """The fold ends in a conflict whose markers are exactly what the file holds already:
    the path is left in conflict as it is, neither written nor reported as marked."""
    agent = _edit(BASE, 3, "AGENT\n")
    write(root, "f.txt", BASE)
    first = agent_turn(store, "agent edits line 3", {"f.txt": agent})
    mine = _edit(BASE, 3, "USER\n")
    write(root, "f.txt", mine)
    marked = store.rewind(first, on_conflict="markers", dry_run=True).plans[0].content.data
    agent_turn(store, "agent writes those markers", {"f.txt": marked})
    stat = os.stat(root / "f.txt")
    result = store.rewind(first, on_conflict="markers")  # takes both turns back
    assert [c["path"] for c in result.conflicts] == ["f.txt"]
    assert result.marked == [] and result.changed == []
    assert read(root, "f.txt") == marked and os.stat(root / "f.txt").st_ino == stat.st_ino


def test_user_edits_between_agent_turns_are_kept(store: Store, root: Path) -> None:
    write(root, "f.txt", BASE)
    t1 = agent_turn(store, "turn 1", {"other.txt": "x\n"})
    agent_turn(store, "turn 2", {"other.txt": "y\n"})
    t3 = agent_turn(store, "turn 3", {"f.txt": _edit(BASE, 2, "AGENT3\n")})
    user = _edit(_edit(BASE, 2, "AGENT3\n"), 10, "USER\n")
    write(root, "f.txt", user)
    agent_turn(store, "turn 4", {"z.txt": "z\n"})
    agent_turn(store, "turn 5", {"f.txt": _edit(user, 18, "AGENT5\n")})
    result = store.rewind(t3)
    assert read(root, "f.txt").decode() == _edit(BASE, 10, "USER\n")
    assert read(root, "z.txt") is None and read(root, "other.txt") == b"y\n"
    assert len(result.turns_reverted) == 3 and t1 not in result.turns_reverted


def test_binary_files_are_never_merged(store: Store, root: Path) -> None:
    write(root, "b.bin", b"\0\1\2" * 100)
    turn = agent_turn(store, "p", {"b.bin": b"\0\x09\x09" * 100})
    write(root, "b.bin", b"\0user" * 100)
    result = store.rewind(turn)
    assert read(root, "b.bin") == b"\0user" * 100
    assert "binary" in result.conflicts[0]["reason"]


def test_agent_created_file_edited_by_user_is_kept_unless_merge_empties_it(
    store: Store, root: Path
) -> None:
    turn = agent_turn(store, "p", {"new.txt": "agent line\n"})
    write(root, "new.txt", "agent line\nuser line\n")
    result = store.rewind(turn)
    assert read(root, "new.txt") == b"agent line\nuser line\n"  # the merge conflicts: kept
    assert [c["path"] for c in result.conflicts] == ["new.txt"]


def test_missing_file_the_agent_wrote_is_a_conflict(store: Store, root: Path) -> None:
    write(root, "f.txt", "v1\n")
    turn = agent_turn(store, "p", {"f.txt": "v2\n"})
    (root / "f.txt").unlink()
    result = store.rewind(turn)
    assert read(root, "f.txt") is None
    assert "deleted" in result.conflicts[0]["reason"]


def test_file_modes_and_symlinks_are_restored(store: Store, root: Path) -> None:
    write(root, "run.sh", "#!/bin/sh\necho hi\n")
    os.chmod(root / "run.sh", 0o755)
    os.symlink("run.sh", root / "link")
    before = snapshot(root)
    store.begin_turn("default", "p")
    store.pre_write(["run.sh", "link"])
    os.chmod(root / "run.sh", 0o644)
    write(root, "run.sh", "#!/bin/sh\necho changed\n")
    os.unlink(root / "link")
    os.symlink("elsewhere", root / "link")
    store.post_write(["run.sh", "link"])
    store.end_turn("default")
    store.rewind(1)
    assert snapshot(root) == before


def test_conversation_mode_moves_the_head_without_touching_files(store: Store, root: Path) -> None:
    t1 = agent_turn(store, "1", {"a.txt": "a\n"})
    agent_turn(store, "2", {"a.txt": "b\n"})
    result = store.rewind(1, mode="conversation")
    assert read(root, "a.txt") == b"b\n"
    assert result.new_head == t1 and [p.turn.id for p in store.rewind_points()] == [t1]


def test_code_mode_restores_files_and_keeps_the_head(store: Store, root: Path) -> None:
    agent_turn(store, "1", {"a.txt": "a\n"})
    t2 = agent_turn(store, "2", {"a.txt": "b\n"})
    result = store.rewind(1, mode="code")
    assert read(root, "a.txt") == b"a\n"
    assert result.new_head == t2 and store.rewind_points()[0].turn.state == "closed"


def test_path_filter_takes_back_only_those_files(store: Store, root: Path) -> None:
    t1 = agent_turn(store, "1", {"a.txt": "a\n", "b.txt": "b\n"})
    result = store.rewind(t1, paths=["a.txt"])
    assert read(root, "a.txt") is None and read(root, "b.txt") == b"b\n"
    assert result.new_head == t1  # code only: the head stays


def test_rewind_starts_a_new_branch_and_keeps_the_old(store: Store, root: Path) -> None:
    t1 = agent_turn(store, "1", {"a.txt": "1\n"})
    t2 = agent_turn(store, "2", {"a.txt": "2\n"})
    store.rewind(t2)
    t3 = agent_turn(store, "3", {"a.txt": "3\n"})
    points = store.rewind_points()
    assert [p.turn.id for p in points] == [t3, t1]
    everything = {p.turn.id: p for p in store.rewind_points(all_branches=True)}
    assert everything[t2].turn.state == "rewound" and everything[t2].n is None
    with pytest.raises(BadInput, match="not on the current branch"):
        store.rewind(t2)


def test_rewind_is_refused_while_a_turn_is_open_unless_forced(store: Store, root: Path) -> None:
    agent_turn(store, "1", {"a.txt": "1\n"})
    store.begin_turn("default", "2")
    agent_write(store, "a.txt", "2\n")
    with pytest.raises(RunActive):
        store.rewind(1)
    assert read(root, "a.txt") == b"2\n"
    result = store.rewind(2, force=True)
    assert read(root, "a.txt") is None and len(result.turns_reverted) == 2


def test_dry_run_writes_nothing_and_plans_the_same(store: Store, root: Path) -> None:
    write(root, "f.txt", BASE)
    turn = agent_turn(store, "p", {"f.txt": _edit(BASE, 1, "X\n"), "g.txt": "g\n"})
    before = snapshot(root)
    events = len(store.events())
    plan = store.rewind(turn, dry_run=True)
    assert snapshot(root) == before and len(store.events()) == events
    assert plan.dry_run and plan.undo_id is None
    real = store.rewind(turn)
    assert (plan.restored, plan.deleted) == (real.restored, real.deleted)


def test_unknown_turn_is_not_found(store: Store) -> None:
    agent_turn(store, "1", {"a.txt": "1\n"})
    with pytest.raises(NotFound):
        store.rewind("ffffffffffff")
    with pytest.raises(NotFound):
        store.rewind(7)


def test_corrupted_blob_is_refused_for_that_file_only(store: Store, root: Path) -> None:
    write(root, "a.txt", "original a\n" * 50)
    write(root, "b.txt", "original b\n" * 50)
    turn = agent_turn(store, "p", {"a.txt": "agent a\n", "b.txt": "agent b\n"})
    (change_a, _) = store.changes(turn)
    key = change_a.before.key
    value = bytearray(raw_values(store)[key])
    value[-3] ^= 0xFF
    raw_put(store, key, bytes(value))
    result = store.rewind(turn)
    assert read(root, "a.txt") == b"agent a\n"  # never written with bad bytes
    assert read(root, "b.txt") == b"original b\n" * 50
    assert [e["path"] for e in result.errors] == ["a.txt"]
    assert "blob" in result.errors[0]["reason"]


def test_undo_takes_the_rewind_back(store: Store, root: Path) -> None:
    write(root, "f.txt", BASE)
    agent_turn(store, "1", {"f.txt": _edit(BASE, 1, "A\n"), "n.txt": "n\n"})
    t2 = agent_turn(store, "2", {"f.txt": _edit(_edit(BASE, 1, "A\n"), 20, "B\n")})
    after_agent = snapshot(root)
    store.rewind(2)
    assert read(root, "f.txt").decode() == BASE
    result = store.undo()
    assert snapshot(root) == after_agent
    assert result.new_head == t2 and [p.n for p in store.rewind_points()] == [1, 2]
    with pytest.raises(NotFound):
        store.undo()


def test_undo_keeps_an_edit_made_after_the_rewind(store: Store, root: Path) -> None:
    write(root, "f.txt", BASE)
    agent_turn(store, "1", {"f.txt": _edit(BASE, 2, "AGENT\n")})
    store.rewind(1)
    write(root, "f.txt", _edit(BASE, 19, "LATER\n"))
    store.undo()
    assert read(root, "f.txt").decode() == _edit(_edit(BASE, 2, "AGENT\n"), 19, "LATER\n")


def test_rewind_never_touches_another_session(store: Store, root: Path) -> None:
    agent_turn(store, "a1", {"a.txt": "from A\n"}, session="A")
    agent_turn(store, "b1", {"b.txt": "from B\n"}, session="B")
    store.rewind(1, "A")
    assert read(root, "a.txt") is None and read(root, "b.txt") == b"from B\n"


def test_what_a_switch_left_is_finished_and_superseded_by_a_new_turn(
    store: Store, root: Path
) -> None:
    """A switch forward that conflicts leaves the path; finish puts the turn's edit back with
    markers, a code-only operation that keeps the head; a new turn supersedes what is left."""
    write(root, "f.txt", BASE)
    first = agent_turn(store, "one", {"f.txt": _edit(BASE, 3, "agent\n")})
    store.rewind(first)
    write(root, "f.txt", _edit(BASE, 3, "mine\n"))
    switched = store.switch(first, "default")
    assert [c["path"] for c in switched.left] == ["f.txt"] and switched.new_head == first
    left = store.status().left
    assert left is not None and left["action"] == "switch"
    with pytest.raises(BadInput):
        store.finish(on_conflict="nosuch")
    marked = store.finish(on_conflict="markers")
    assert marked.marked == ["f.txt"] and marked.changed == ["f.txt"]
    assert marked.new_head == first and store.status().head == first
    assert b"<<<<<<<" in read(root, "f.txt")
    assert store.status().left["action"] == "finish"
    agent_turn(store, "two", {"g.txt": "g\n"})  # the head moved on: nothing is left
    assert store.status().left is None
    with pytest.raises(NotFound, match="nothing left to finish"):
        store.finish(on_conflict="theirs")
