"""A rewind the agent makes from inside its own open turn (``snapstore mcp``'s rewind_files):
files only, recorded as changes of that turn, so that rewinding the turn takes it back like any
edit the agent made; an undo of it from inside is recorded the same way, one from outside
becomes a turn of its own on top. Another session's turns and shell calls are never touched."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from snapstore import Store
from snapstore.core.errors import BadInput, NotFound, ShellRunning
from snapstore.core.records import CODE, REVERT, REWIND

from ..support import Clock, agent_turn, agent_write, read, write

S = "claude-code/one"


def three_turns(store: Store, session: str = S) -> dict[str, bytes | None]:
    """Turn 1 creates a.txt, turn 2 edits it and creates b.txt, turn 3 edits b.txt; the tree
    after turn 3."""
    agent_turn(store, "make a", {"a.txt": "a1\n"}, session)
    agent_turn(store, "edit a, make b", {"a.txt": "a2\n", "b.txt": "b1\n"}, session)
    agent_turn(store, "edit b", {"b.txt": "b2\n"}, session)
    return tree(Path(store.root))


def tree(root: Path) -> dict[str, bytes | None]:
    return {name: read(root, name) for name in ("a.txt", "b.txt", "c.txt")}


def test_a_rewind_from_inside_is_a_change_of_the_open_turn(store: Store, root: Path) -> None:
    after_3 = three_turns(store)
    fourth = store.begin_turn(S, "take back turns 2 and 3")
    second = store.rewind_points(S)[2].turn  # 1 is the open fourth turn
    assert second.prompt == "edit a, make b"

    result = store.rewind(second.id, S, mode=CODE, inside=True)

    assert tree(root) == {"a.txt": b"a1\n", "b.txt": None, "c.txt": None}
    assert sorted(result.restored) == ["a.txt"] and result.deleted == ["b.txt"]
    assert store.open_turn(S).id == fourth.id  # the turn goes on, the head stays
    changes = store.changes(fourth.id)
    assert [(c.path, c.source, c.done) for c in changes] == [
        ("a.txt", REWIND, True),
        ("b.txt", REWIND, True),
    ] or [(c.path, c.source, c.done) for c in changes] == [
        ("b.txt", REWIND, True),
        ("a.txt", REWIND, True),
    ]
    points = store.rewind_points(S)
    assert points[0].turn.id == fourth.id
    [move] = points[0].inside
    assert move.action == "rewind" and move.id == result.undo_id and not move.own
    assert [t.prompt for t in move.turns] == ["edit a, make b", "edit b"]
    assert move.numbers == [3, 2]
    assert store.show(1, S).inside == points[0].inside

    # the agent writes on after its rewind, in the same turn
    agent_write(store, "c.txt", "c1\n", session=S)
    store.end_turn(S)
    # the user takes the fourth turn back: the tree after turn 3, exactly
    back = store.rewind(1, S)
    assert back.ok and tree(root) == after_3


def test_the_turn_taken_back_whole_gives_the_tree_before_each_turn(
    store: Store, root: Path
) -> None:
    """The undo invariant through a rewind from inside: rewinding to the n-th point gives the
    tree from just before it, for every n."""
    before = {1: tree(root)}
    agent_turn(store, "make a", {"a.txt": "a1\n"}, S)
    before[2] = tree(root)
    agent_turn(store, "edit a", {"a.txt": "a2\n", "b.txt": "b1\n"}, S)
    before[3] = tree(root)
    store.begin_turn(S, "inside")
    agent_write(store, "a.txt", "a3\n", session=S)  # its own edit, then the take-back
    store.rewind(2, S, mode=CODE, inside=True)  # number 2: the second turn
    assert tree(root) == before[2]
    store.end_turn(S)
    for n, turn_n in ((1, 3), (2, 2), (3, 1)):  # number n on the branch is turn turn_n
        undo_me = store.rewind(n, S)
        assert undo_me.ok and tree(root) == before[turn_n], n
        assert store.undo().ok


def test_inside_needs_an_open_turn_and_takes_files_only(store: Store, root: Path) -> None:
    three_turns(store)
    with pytest.raises(NotFound, match="no open turn"):
        store.rewind(2, S, mode=CODE, inside=True)
    store.begin_turn(S, "four")
    with pytest.raises(BadInput, match="files only"):
        store.rewind(2, S, inside=True)


def test_another_sessions_shell_call_refuses_it_and_changes_nothing(
    store: Store, root: Path
) -> None:
    after_3 = three_turns(store)
    store.begin_turn(S, "four")
    store.begin_turn("codex/other", "its own work")
    store.shell_begin("codex/other", "call-1")
    with pytest.raises(ShellRunning, match="codex/other"):
        store.rewind(2, S, mode=CODE, inside=True)
    assert tree(root) == after_3 and store.changes(store.open_turn(S).id) == []
    store.shell_end("codex/other", "call-1")
    assert store.rewind(2, S, mode=CODE, inside=True).ok  # once it ended


def test_a_path_a_tool_call_of_the_turn_is_writing_is_left_alone(store: Store, root: Path) -> None:
    three_turns(store)
    fourth = store.begin_turn(S, "four")
    store.pre_write(["b.txt"], "Write", S)  # a parallel call of this turn, in flight
    result = store.rewind(3, S, mode=CODE, inside=True)
    assert read(root, "a.txt") == b"a1\n" and read(root, "b.txt") == b"b2\n"
    assert [c["path"] for c in result.conflicts] == ["b.txt"]
    assert "tool call of this turn" in result.conflicts[0]["reason"]
    assert [c.path for c in store.changes(fourth.id) if c.source == REWIND] == ["a.txt"]


def test_undo_from_inside_is_recorded_in_the_open_turn_too(store: Store, root: Path) -> None:
    after_3 = three_turns(store)
    fourth = store.begin_turn(S, "four")
    done = store.rewind(3, S, mode=CODE, inside=True)
    undone = store.undo(None, S, inside=True)
    assert undone.target == done.undo_id and tree(root) == after_3
    assert [m.action for m in store.rewind_points(S)[0].inside] == ["rewind", "undo"]
    with pytest.raises(NotFound, match="from inside"):
        store.undo(None, S, inside=True)  # the one it made is undone: nothing left
    store.end_turn(S)
    with pytest.raises(BadInput, match="changes of turn"):
        store.redo(undone.undo_id, S)  # its writes are the turn's: rewind the turn instead
    assert store.rewind(1, S).ok and tree(root) == after_3  # the turn's net change is none
    assert store.changes(fourth.id)


def test_undo_from_inside_takes_only_what_was_made_from_inside(store: Store) -> None:
    three_turns(store)
    code = store.rewind(1, S, mode=CODE)  # the user's own, from outside
    store.begin_turn(S, "four")
    with pytest.raises(NotFound, match="from inside"):
        store.undo(None, S, inside=True)
    with pytest.raises(BadInput, match="not made from inside"):
        store.undo(code.undo_id, S, inside=True)


def test_outside_undo_of_it_is_a_turn_on_top(store: Store, root: Path) -> None:
    after_3 = three_turns(store)
    store.begin_turn(S, "four")
    store.rewind(3, S, mode=CODE, inside=True)
    after_4 = tree(root)
    store.end_turn(S)
    undone = store.undo()
    assert undone.ok and tree(root) == after_3
    head = store.rewind_points(S)[0].turn
    assert head.kind == REVERT and undone.new_head == head.id
    assert store.rewind(1, S).ok and tree(root) == after_4  # the revert, taken back
    assert store.status(S).left is None


def test_another_sessions_turns_are_never_taken_back(store: Store, root: Path) -> None:
    agent_turn(store, "mine", {"a.txt": "a1\n"}, S)
    agent_turn(store, "theirs", {"b.txt": "theirs\n"}, "codex/other")
    store.begin_turn(S, "two")
    store.rewind(1 + 1, S, mode=CODE, inside=True)  # 1 is the open turn; 2 is "mine"
    assert read(root, "a.txt") is None and read(root, "b.txt") == b"theirs\n"


CHILD = """
import os, signal, sys
from snapstore import Store
from snapstore.core import faults
def kill(name):
    if name == sys.argv[2]:
        os.kill(os.getpid(), signal.SIGKILL)
faults.install(kill)
with Store.open(sys.argv[1]) as store:
    store.rewind(3, "claude-code/one", mode="code", inside=True)
"""


@pytest.mark.parametrize(
    "point", ["journal.journaled", "journal.wrote_path", "journal.before_finish"]
)
def test_a_kill_during_it_is_finished_by_resume_and_recorded_once(
    root: Path, clock: Clock, point: str
) -> None:
    with Store.init(root, clock=clock) as store:
        after_3 = three_turns(store)
        fourth = store.begin_turn(S, "four")
    done = subprocess.run([sys.executable, "-c", CHILD, str(root), point], check=False)
    assert done.returncode == -signal.SIGKILL
    with Store.open(root, clock=clock) as store:
        assert store.unfinished_operations()
        [resumed] = store.resume()
        assert tree(root) == {"a.txt": b"a1\n", "b.txt": None, "c.txt": None}
        written = [c.path for c in store.changes(fourth.id) if c.source == REWIND]
        assert sorted(written) == ["a.txt", "b.txt"]
        assert store.open_turn(S).rewinds == (resumed.undo_id,)
        store.end_turn(S)
        assert store.rewind(1, S).ok and tree(root) == after_3
    assert not [p for p in os.listdir(root) if p.endswith(".tmp")]
    write(root, "unused.txt", "")  # the workspace is still writable


def test_the_open_turn_can_take_back_its_own_changes(store: Store, root: Path) -> None:
    after_3 = three_turns(store)
    store.begin_turn(S, "oops")
    agent_write(store, "a.txt", "wrong\n", session=S)
    agent_write(store, "c.txt", "stray\n", session=S)
    result = store.rewind(1, S, mode=CODE, inside=True)  # 1: the turn in progress
    assert result.ok and tree(root) == after_3
    [move] = store.rewind_points(S)[0].inside
    assert move.own and move.turns == []
    store.end_turn(S)
    assert store.rewind_points(S)[0].files == []  # its net change is none
    assert store.rewind(1, S).ok and tree(root) == after_3
