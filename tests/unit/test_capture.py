"""The capture protocol: turns, pre-write, post-write, implicit turns, the API helpers."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from snapstore import BadInput, NotFound, RunActive, Store, UnsafePath, tracked
from snapstore.core.blobs import BIG
from snapstore.core.records import AGENT, CLOSED, OPEN

from ..support import agent_write, read, write


def _changes(store: Store, turn_id: str):
    return store.changes(turn_id)


def _turn(store: Store, turn_id: str):
    with store.repo.read() as v:
        return v.turn(turn_id)


def test_a_turn_records_before_and_after(store: Store, root: Path) -> None:
    write(root, "f.txt", "one\n")
    turn = store.begin_turn("default", "change f", message_id="m1")
    agent_write(store, "f.txt", "two\n", tool="Edit")
    agent_write(store, "new/g.txt", "fresh\n")
    store.end_turn("default")
    (f, g) = _changes(store, turn.id)
    assert (f.path, f.tool, f.source, f.done) == ("f.txt", "Edit", "hook", True)
    assert f.before is not None and f.after is not None and f.before.digest != f.after.digest
    assert g.before is None and g.after is not None and g.mkdirs == 1
    record = _turn(store, turn.id)
    assert (record.state, record.prompt, record.message_id, record.kind) == (
        CLOSED,
        "change f",
        "m1",
        AGENT,
    )


def test_begin_is_refused_while_a_turn_is_open(store: Store) -> None:
    store.begin_turn("default", "first")
    with pytest.raises(RunActive):
        store.begin_turn("default", "second")
    store.begin_turn("other-session", "independent")  # sessions are separate


def test_pre_write_without_a_turn_opens_an_implicit_one(store: Store, root: Path) -> None:
    write(root, "f.txt", "x")
    result = store.pre_write(["f.txt"], "Write")
    turn = _turn(store, result.turn)
    assert turn.implicit and turn.state == OPEN
    nxt = store.begin_turn("default", "next prompt")  # closes the implicit turn
    assert _turn(store, result.turn).state == CLOSED
    assert nxt.parent == result.turn


def test_turns_chain_through_parent(store: Store) -> None:
    first = store.begin_turn("default", "1")
    store.end_turn("default")
    second = store.begin_turn("default", "2")
    assert second.parent == first.id and first.parent is None


def test_one_open_change_per_path_per_turn(store: Store, root: Path) -> None:
    write(root, "f.txt", "v1")
    turn = store.begin_turn("default", "p")
    store.pre_write(["f.txt"])
    write(root, "f.txt", "v2")
    store.pre_write(["f.txt"])  # a second hook call before the first post-write
    store.post_write(["f.txt"])
    store.end_turn("default")
    (change,) = _changes(store, turn.id)
    with store.repo.read() as v:
        assert v.content(change.before).data == b"v1"
        assert v.content(change.after).data == b"v2"


def test_a_write_that_changes_nothing_is_dropped(store: Store, root: Path) -> None:
    write(root, "f.txt", "same")
    turn = store.begin_turn("default", "p")
    agent_write(store, "f.txt", "same")
    store.end_turn("default")
    assert _changes(store, turn.id) == []


def test_end_turn_records_missing_afters(store: Store, root: Path) -> None:
    turn = store.begin_turn("default", "p")
    store.pre_write(["f.txt"])
    write(root, "f.txt", "written without a post-write")
    store.end_turn("default")
    (change,) = _changes(store, turn.id)
    assert change.done and change.before is None and change.after is not None


def test_post_write_of_a_path_the_store_never_saw_is_skipped(store: Store, root: Path) -> None:
    """Without a pre-write and without any recorded version, the bytes before are unknown."""
    store.begin_turn("default", "p")
    write(root, "f.txt", "x")
    result = store.post_write(["f.txt"])
    assert result.paths == [] and result.skipped[0][0] == "f.txt"
    assert "no earlier version" in result.skipped[0][1]


def test_post_write_without_pre_write_opens_an_implicit_turn(store: Store, root: Path) -> None:
    write(root, "f.txt", "v1")
    turn = store.begin_turn("default", "p")
    agent_write(store, "f.txt", "v2")
    store.end_turn("default")
    write(root, "f.txt", "v3")  # the agent's pre-write for this never reached the store
    result = store.post_write(["f.txt"], tool="Write")
    assert result.paths == ["f.txt"] and result.turn != turn.id
    implicit = _turn(store, result.turn)
    assert implicit.implicit and implicit.parent == turn.id
    (change,) = _changes(store, result.turn)
    with store.repo.read() as v:
        assert (v.content(change.before).data, v.content(change.after).data) == (b"v2", b"v3")
    assert change.tool == "Write"


def test_end_without_open_turn_is_not_found(store: Store) -> None:
    with pytest.raises(NotFound):
        store.end_turn("default")


def test_same_bytes_are_stored_once(store: Store, root: Path) -> None:
    payload = b"shared content\n" * 500
    for name in ("a.txt", "b.txt", "c.txt"):
        write(root, name, payload)
    store.pre_write(["a.txt"])
    before = store.status().stored_bytes
    store.pre_write(["b.txt", "c.txt"])
    assert store.status().stored_bytes == before
    assert store.status().blobs == 1


def test_one_line_edit_to_a_file_just_under_the_big_size_adds_under_2_kib(
    store: Store, root: Path
) -> None:
    from .test_blobs import _text

    big = _text(BIG - 64 * 1024, seed=7)  # a delta against the last version
    write(root, "big.txt", big)
    store.begin_turn("default", "p")
    store.pre_write(["big.txt"])
    lines = big.splitlines(keepends=True)
    lines[1000] = b"a single edited line\n"
    write(root, "big.txt", b"".join(lines))
    before = store.status().stored_bytes
    store.post_write(["big.txt"])
    assert store.status().stored_bytes - before < 2048


def test_writing_context_manager_records_even_when_the_block_raises(
    store: Store, root: Path
) -> None:
    store.begin_turn("default", "p")
    with pytest.raises(RuntimeError), store.writing(["f.txt"], tool="write_file") as captured:
        write(root, "f.txt", "partial")
        raise RuntimeError("tool crashed after writing")
    (change,) = _changes(store, captured.turn)
    assert change.done and change.tool == "write_file"


def test_tracked_decorator_captures_the_named_parameter(store: Store, root: Path) -> None:
    @tracked(store, "path")
    def write_file(path: str, content: str) -> None:
        write(root, path, content)

    @tracked(store, lambda edits: [e[0] for e in edits], tool="multi")
    def edit_files(edits: list[tuple[str, str]]) -> None:
        for path, content in edits:
            write(root, path, content)

    turn = store.begin_turn("default", "p")
    write_file("a.py", "print(1)\n")
    edit_files([("b.py", "b\n"), ("c.py", "c\n")])
    store.end_turn("default")
    changes = _changes(store, turn.id)
    assert [(c.path, c.tool) for c in changes] == [
        ("a.py", "write_file"),
        ("b.py", "multi"),
        ("c.py", "multi"),
    ]
    assert all(c.done and c.after is not None for c in changes)
    assert read(root, "a.py") == b"print(1)\n"


def test_one_bad_path_never_leaves_the_others_unprotected(store: Store, root: Path) -> None:
    """A call naming a good file, a path outside the workspace and a FIFO captures the good
    one, and says why the others were not."""
    write(root, "app.py", "v1\n")
    os.mkfifo(root / "pipe")
    store.begin_turn("default", "patch")
    result = store.pre_write([root / "app.py", root / "../outside.txt", root / "pipe"])
    assert result.paths == ["app.py"]
    assert [path for path, _ in result.skipped] == [str(root / "../outside.txt"), "pipe"]
    assert "outside the workspace" in result.skipped[0][1]
    assert "not a regular file" in result.skipped[1][1]
    assert [type(e) for e in result.refused] == [UnsafePath, BadInput]
    write(root, "app.py", "v2\n")
    post = store.post_write([root / "app.py", root / "pipe"])
    assert post.paths == ["app.py"] and [p for p, _ in post.skipped] == ["pipe"]
    store.end_turn("default")
    assert store.rewind(1, "default").ok
    assert read(root, "app.py") == b"v1\n"


def test_a_call_with_no_capturable_path_fails_as_before(store: Store, root: Path) -> None:
    with pytest.raises(UnsafePath):
        store.pre_write([root / "../outside.txt"])
    assert store.open_turn("default") is None  # nothing was begun for it
