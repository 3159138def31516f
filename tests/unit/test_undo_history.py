"""Switch and undo keep history whole: no turn whose edits are in the workspace drops off
the branch, and rewinding to any turn of the branch gives the tree from before it."""

from __future__ import annotations

from pathlib import Path

import pytest

from snapstore import BadInput, NotFound, Store
from snapstore.core.records import REVERT, REWOUND
from snapstore.ops.gc import GcPolicy

from ..support import Clock, agent_turn, read, snapshot, write


def _branch(store: Store, session: str = "default") -> list[str]:
    return [p.turn.id for p in store.rewind_points(session)]


def _state(store: Store, turn_id: str) -> str:
    with store.repo.read() as v:
        return v.turn(turn_id).state


LINES = [f"line {n}\n" for n in range(30)]


def _edited(text: str, at: int, name: str) -> str:
    lines = text.splitlines(keepends=True)
    lines[at] = f"{name} was here\n"
    return "".join(lines)


@pytest.fixture
def three(store: Store, root: Path) -> tuple[list[str], list[dict]]:
    """Turns A, B, C each editing its own line of f.txt (far apart, so merges are clean)
    and adding a file; the trees before each, and after the last."""
    write(root, "f.txt", "".join(LINES))
    trees, ids = [], []
    for at, name in ((2, "a"), (14, "b"), (26, "c")):
        trees.append(snapshot(root))
        text = _edited(read(root, "f.txt").decode(), at, name)
        ids.append(agent_turn(store, name, {"f.txt": text, f"{name}.txt": f"{name}\n"}))
    trees.append(snapshot(root))
    return ids, trees


def test_switch_goes_back_forward_and_to_another_branch(store: Store, root: Path, three) -> None:
    (a, b, c), trees = three
    back = store.switch(a, "default")  # back: right after A
    assert snapshot(root) == trees[1] and back.new_head == a and _branch(store) == [a]
    assert _state(store, b) == REWOUND and _state(store, c) == REWOUND
    forward = store.switch(c)  # forward (redo), by id, with no session
    assert forward.session == "default" and forward.new_head == c
    assert snapshot(root) == trees[3] and _branch(store) == [c, b, a]
    assert _state(store, b) != REWOUND
    store.rewind(b)  # back to after A, then a new branch
    d = agent_turn(store, "d", {"d.txt": "d\n"})
    after_d = snapshot(root)
    assert _branch(store) == [d, a]
    store.switch(c)  # across: back to the fork (A), then forward along B, C
    assert snapshot(root) == trees[3] and _branch(store) == [c, b, a]
    assert _state(store, d) == REWOUND
    store.undo()  # the switch, taken back: the other branch again
    assert snapshot(root) == after_d and _branch(store) == [d, a]


def test_switch_keeps_a_users_edit_and_dry_run_writes_nothing(
    store: Store, root: Path, three
) -> None:
    (a, _, c), trees = three
    store.switch(a)
    write(root, "f.txt", "mine\n" + read(root, "f.txt").decode())
    before = snapshot(root)
    dry = store.switch(c, dry_run=True)
    assert dry.dry_run and dry.merged == ["f.txt"] and snapshot(root) == before
    assert _branch(store) == [a]
    done = store.switch(c)
    assert done.merged == ["f.txt"]
    # the redo puts B's and C's lines back and keeps the user's
    assert read(root, "f.txt").decode() == "mine\n" + trees[3]["f.txt"][1].decode()


def test_undo_after_new_turns_becomes_a_turn_on_top(store: Store, root: Path, three) -> None:
    """A rewind, then a new turn, then undo of the rewind: the new turn stays on the branch."""
    (a, b, c), trees = three
    store.rewind(b)
    d = agent_turn(store, "d", {"d.txt": "d\n"})
    undone = store.undo()
    assert undone.new_head not in (c, d)
    with store.repo.read() as v:
        revert = v.turn(undone.new_head)
    assert revert.kind == REVERT and revert.parent == d
    assert _branch(store) == [revert.id, d, a]
    assert read(root, "d.txt") == b"d\n" and read(root, "c.txt") == b"c\n"
    assert read(root, "f.txt") == trees[3]["f.txt"][1]
    store.rewind(2)  # the new turn still rewinds by number: back to before d
    assert snapshot(root) == trees[1] and _branch(store) == [a]


def test_undo_of_an_older_rewind_then_the_newer_one_leaves_a_true_branch(
    store: Store, root: Path, three
) -> None:
    (a, b, c), trees = three
    older = store.rewind(c).undo_id  # head B
    newer = store.rewind(b).undo_id  # head A
    first = store.undo(older)  # by id, though the newer rewind moved the head since
    second = store.undo()  # the newer rewind
    assert (first.target, second.target) == (older, newer)
    assert first.ok and second.ok
    assert snapshot(root) == trees[3]  # A, B and C are all back
    branch = _branch(store)
    assert branch[-1] == a and len(branch) == 3  # A, then the two undos on top
    with store.repo.read() as v:
        assert {v.turn(t).kind for t in branch[:2]} == {REVERT}
    for n in range(len(branch), 0, -1):  # every point on it rewinds to the tree before it
        store.rewind(n, dry_run=True)
    store.rewind(3)
    assert snapshot(root) == trees[0]


def test_a_plain_undo_takes_the_newest_rewind_in_the_store(
    store: Store, root: Path, clock: Clock
) -> None:
    write(root, "x.txt", "x0\n")
    agent_turn(store, "x", {"x.txt": "x1\n"}, session="claude-code/one")
    clock.tick()
    agent_turn(store, "y", {"y.txt": "y1\n"}, session="claude-code/two")
    store.rewind(1, "claude-code/one")
    clock.tick()
    store.rewind(1, "claude-code/two")
    result = store.undo()
    assert result.session == "claude-code/two" and read(root, "y.txt") == b"y1\n"
    assert read(root, "x.txt") == b"x0\n"
    assert store.undo().session == "claude-code/one" and read(root, "x.txt") == b"x1\n"
    with pytest.raises(NotFound, match="no rewind or switch to undo"):
        store.undo()


def test_an_undo_is_not_undone_by_id_and_a_turn_is_not_a_rewind(store: Store, three) -> None:
    (a, _, _), _ = three
    done = store.rewind(a)
    undo = store.undo()
    with pytest.raises(BadInput, match="already undone"):
        store.undo(done.undo_id)
    with pytest.raises(BadInput, match="not a rewind"):
        store.undo(undo.undo_id)
    with pytest.raises(BadInput, match="not a rewind"):
        store.undo(a)


def test_undo_walks_back_and_redo_goes_forward_again(store: Store, root: Path, three) -> None:
    (a, b, c), trees = three
    first = store.rewind(c).undo_id  # after B
    second = store.rewind(b).undo_id  # after A
    assert snapshot(root) == trees[1]
    back1 = store.undo()  # the second rewind
    assert back1.target == second and snapshot(root) == trees[2]
    back2 = store.undo()  # then the one before it
    assert back2.target == first and snapshot(root) == trees[3]
    assert _branch(store) == [c, b, a]
    again1 = store.redo()  # the newest undo: the first rewind again
    assert again1.target == c and snapshot(root) == trees[2] and _branch(store) == [b, a]
    again2 = store.redo()
    assert again2.target == b and snapshot(root) == trees[1] and _branch(store) == [a]
    with store.repo.read() as v:
        assert v.turn(again1.undo_id).op.redoes == back2.undo_id
        assert v.turn(back2.undo_id).op.redone_by == again1.undo_id
        assert v.turn(back1.undo_id).op.redone_by == again2.undo_id
    with pytest.raises(NotFound, match="nothing to redo"):
        store.redo()
    store.undo()  # a redo is an operation like any other: undo takes it back
    assert snapshot(root) == trees[2]
    assert store.redo().ok and snapshot(root) == trees[1]


def test_redo_is_refused_once_the_head_moved(store: Store, root: Path, three) -> None:
    (_, b, _), _ = three
    store.rewind(b)
    store.undo()
    agent_turn(store, "d", {"d.txt": "d\n"})
    before = snapshot(root)
    with pytest.raises(BadInput, match="moved on since that undo"):
        store.redo()
    assert snapshot(root) == before


def test_redo_by_id_merges_a_users_edit_and_reports_a_conflict(
    store: Store, root: Path, three
) -> None:
    (a, b, _), trees = three
    store.rewind(b)
    undo = store.undo().undo_id
    with pytest.raises(BadInput, match="not an undo"):
        store.redo(store.operations()[-1].id)
    write(root, "f.txt", "mine\n" + read(root, "f.txt").decode())  # far from B's and C's lines
    merged = store.redo(undo[:6], dry_run=True)
    assert merged.dry_run and read(root, "f.txt").startswith(b"mine\n")
    done = store.redo(undo)
    assert done.merged == ["f.txt"] and done.ok
    assert read(root, "f.txt").decode() == "mine\n" + trees[1]["f.txt"][1].decode()
    with pytest.raises(BadInput, match="already redone"):
        store.redo(undo)
    store.undo()
    write(root, "f.txt", "all mine\n")  # the user rewrote every line: B's edit clashes
    clash = store.redo(on_conflict="skip")
    assert [c["path"] for c in clash.conflicts] == ["f.txt"] and not clash.ok
    assert read(root, "f.txt") == b"all mine\n" and _branch(store) == [a]


def test_redo_of_a_finish_retries_the_same_paths(store: Store, root: Path) -> None:
    write(root, "f.txt", "".join(LINES))
    first = agent_turn(store, "one", {"f.txt": _edited("".join(LINES), 3, "agent")})
    store.rewind(first)
    mine = _edited("".join(LINES), 3, "mine")
    write(root, "f.txt", mine)
    store.switch(first, "default")  # conflicts: left as it is
    assert store.finish(on_conflict="markers").marked == ["f.txt"]
    marked = read(root, "f.txt")
    assert b"<<<<<<<" in marked
    store.undo()
    assert read(root, "f.txt").decode() == mine
    again = store.redo(on_conflict="markers")
    assert again.marked == ["f.txt"] and read(root, "f.txt") == marked
    with store.repo.read() as v:
        assert v.turn(again.undo_id).op.action == "finish"


def test_redo_after_gc_dropped_what_it_needs_is_refused(store: Store, root: Path, three) -> None:
    (_, b, _), _ = three
    store.rewind(b)
    store.undo()
    store.gc(GcPolicy(keep_days=None, keep_turns=1))  # B goes; the undo's record stays
    before = snapshot(root)
    with pytest.raises(NotFound, match=f"can no longer be redone: gc dropped {b}"):
        store.redo()
    assert snapshot(root) == before
