"""A rewind never writes outside the root, even when a folder is moved away while it runs.

A rewind holds the folders it walks to open (``Workspace.holding_folders``), and a held
descriptor follows its folder wherever it is renamed. Each test moves a folder out of the
workspace at the fault point just before one kind of change (a rename that writes a file
or restores a mode, an unlink, a folder made, a folder removed), in the rewind's own
process, and checks that nothing lands where the folder went, that every path the rewind
could no longer write comes back as an error, and that the operation's record is right:
its undo, once the folder is back, gives the tree from before the rewind.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from snapstore import Store, UnsafePath
from snapstore.core import faults, folders
from snapstore.core.fsio import TEMP_NAME, Workspace
from snapstore.core.records import FILE, Entry

from ..support import agent_write, snapshot, write

FILES = 40
COUNT = 600
POINTS = ("fsio.before_rename", "fsio.before_unlink", "fsio.before_mkdir", "fsio.before_rmdir")


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """Where the folder goes: beside the workspace, never inside it."""
    place = tmp_path / "outside"
    place.mkdir()
    return place


@pytest.fixture(autouse=True, params=["/proc", "no /proc"])
def kernel_paths(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """Each test twice: where the kernel names a descriptor's folder (one readlink settles
    it), and without /proc (each level is asked)."""
    if request.param == "no /proc":
        monkeypatch.setattr(folders, "FD_PATHS", str(tmp_path / "no-proc/self/fd"))


def without_temp(tree: dict[str, tuple[str, bytes, int]]) -> dict[str, tuple[str, bytes, int]]:
    """``tree`` without the temp file of the write in progress (its refusal removes it)."""
    return {k: v for k, v in tree.items() if not TEMP_NAME.fullmatch(k.rpartition("/")[2])}


@pytest.fixture
def mover(root: Path, outside: Path) -> Iterator[Callable[[str, str], dict[str, object]]]:
    """``arm(point, folder)``: at the first time the rewind reaches ``point``, ``folder``
    is renamed out of the workspace; the dict returned then holds what was there at that
    moment (``seen``)."""
    state: dict[str, object] = {}

    def arm(point: str, folder: str) -> dict[str, object]:
        def handler(name: str) -> None:
            if name == point and "seen" not in state:
                os.rename(root / folder, outside / folder)
                state["seen"] = without_temp(snapshot(outside, dirs=True))

        faults.install(handler)
        return state

    yield arm
    faults.install(None)


def agent_session(store: Store, root: Path) -> dict[str, tuple[str, bytes, int]]:
    """A tree under ``sub/`` and one turn that touches it in every way a rewind undoes:
    edits, a deletion (with its folder), new files (one in a new folder), a mode change;
    and a file at the root. The tree from before the turn."""
    for n in range(FILES):
        write(root, f"sub/f{n:02d}.txt", f"version one of {n}\n")
    write(root, "sub/gone/old.txt", "deleted with its folder\n")
    write(root, "sub/tool.sh", "#!/bin/sh\n")
    write(root, "top.txt", "top one\n")
    before = snapshot(root, dirs=True)
    store.begin_turn("default", "change everything under sub")
    for n in range(FILES):
        agent_write(store, f"sub/f{n:02d}.txt", f"version two of {n}\n")
    agent_write(store, "sub/gone/old.txt", None)
    os.rmdir(root / "sub/gone")
    agent_write(store, "sub/made/new.txt", "created in a new folder\n")
    agent_write(store, "sub/added.txt", "created\n")
    store.pre_write(["sub/tool.sh"], "Bash")
    os.chmod(root / "sub/tool.sh", 0o755)
    store.post_write(["sub/tool.sh"])
    agent_write(store, "top.txt", "top two\n")
    store.end_turn("default")
    return before


@pytest.mark.parametrize("point", POINTS)
def test_a_folder_moved_out_mid_rewind_gets_nothing_and_its_paths_are_errors(
    store: Store,
    root: Path,
    outside: Path,
    mover: Callable[[str, str], dict[str, object]],
    point: str,
) -> None:
    before = agent_session(store, root)
    after_turn = snapshot(root, dirs=True)
    moved = mover(point, "sub")
    result = store.rewind(1)
    faults.install(None)
    assert "seen" in moved, f"the rewind never reached {point}"
    # Nothing landed where the folder went, nor was anything taken from it.
    assert snapshot(outside, dirs=True) == moved["seen"]
    # Every path under sub/ that the rewind had still to change is an error saying why; the
    # ones it had changed before the move are rewound in the moved copy; the root's file is.
    failed = {e["path"]: e["reason"] for e in result.errors}
    assert all(path.startswith("sub/") for path in failed), failed
    if point == "fsio.before_rmdir":  # the last step: only the emptied folder was left to go
        assert not failed and (outside / "sub/made").is_dir()
    else:
        assert failed
    assert all("moved" in reason or "changed" in reason for reason in failed.values()), failed
    now = {f"sub/{rel}": entry for rel, entry in snapshot(outside / "sub", dirs=True).items()}
    for rel in [r for r in {*before, *after_turn} if r.startswith("sub/") and not r.endswith("/")]:
        if rel in failed:
            assert now.get(rel) == after_turn.get(rel), rel  # left as the agent left it
        else:
            assert now.get(rel) == before.get(rel), rel  # rewound before the move
    assert set(result.restored) | set(result.deleted) >= {"top.txt"} and not failed.keys() & {
        *result.restored,
        *result.deleted,
    }
    assert (root / "top.txt").read_text() == "top one\n"
    assert not (root / "sub").exists()  # the rewind made no new sub/ in its place
    assert store.fsck().ok
    # The record is right: with the folder back, undo gives the tree the rewind started
    # from, and the rewind, run again, the tree from before the turn.
    os.rename(outside / "sub", root / "sub")
    undone = store.undo()
    assert undone.ok, undone
    assert snapshot(root, dirs=True) == after_turn
    again = store.rewind(1)
    assert again.ok, again
    assert snapshot(root, dirs=True) == before


def test_a_deeper_folder_moved_out_leaves_its_siblings_written(
    store: Store, root: Path, outside: Path, mover: Callable[[str, str], dict[str, object]]
) -> None:
    """Only the moved folder's paths fail; the walk finds the rest where they are."""
    for folder in ("a", "b"):
        for n in range(5):
            write(root, f"{folder}/f{n}.txt", "one\n")
    before = snapshot(root)
    store.begin_turn("default", "edit both")
    for folder in ("a", "b"):
        for n in range(5):
            agent_write(store, f"{folder}/f{n}.txt", "two\n")
    store.end_turn("default")
    moved = mover("fsio.before_rename", "a")
    result = store.rewind(1)
    faults.install(None)
    assert snapshot(outside) == moved["seen"]
    assert sorted(e["path"] for e in result.errors) == [f"a/f{n}.txt" for n in range(5)]
    assert sorted(result.restored) == [f"b/f{n}.txt" for n in range(5)]
    assert {k: v for k, v in snapshot(root).items() if k.startswith("b/")} == {
        k: v for k, v in before.items() if k.startswith("b/")
    }


def test_a_moved_folders_place_gets_nothing_until_the_operation_ends(
    root: Path, outside: Path
) -> None:
    """A folder found moved is left alone, with every path below its old place, for the
    rest of the block (one operation's writes), even when another folder takes its name;
    the next operation walks to the new one."""
    ws = Workspace(root, str(root / ".snapstore"))
    (root / "d").mkdir()
    with ws.holding_folders():
        ws.write("d/one.txt", Entry(FILE, b"1", 0o644))
        os.rename(root / "d", outside / "d")
        (root / "d").mkdir()
        for rel in ("d/two.txt", "d/three.txt", "d/new/four.txt"):
            with pytest.raises(UnsafePath, match="the folder d moved"):
                ws.write(rel, Entry(FILE, b"2", 0o644))
        ws.write("other.txt", Entry(FILE, b"3", 0o644))
    ws.write("d/five.txt", Entry(FILE, b"5", 0o644))
    assert sorted(os.listdir(outside / "d")) == ["one.txt"]
    assert sorted(os.listdir(root / "d")) == ["five.txt"]
    assert (root / "other.txt").read_bytes() == b"3"


@pytest.mark.parametrize("held", [True, False])
@pytest.mark.parametrize(
    "change",
    ["write", "delete", "make_folder", "remove_folder", "remove_empty_tree", "temp_files"],
)
def test_every_change_in_a_moved_folder_is_refused_held_or_not(
    root: Path, outside: Path, held: bool, change: str
) -> None:
    """Workspace level: each kind of change, with the folder moved at its fault point."""
    ws = Workspace(root, str(root / ".snapstore"))
    write(root, "d/e/f.txt", "f\n")
    write(root, "d/e/.snapstore-0123456789ab.tmp", "a write cut short\n")
    (root / "d/e/empty").mkdir()
    actions: dict[str, tuple[str, Callable[[], object]]] = {
        "write": ("fsio.before_rename", lambda: ws.write("d/e/g.txt", Entry(FILE, b"g", 0o644))),
        "delete": ("fsio.before_unlink", lambda: ws.write("d/e/f.txt", None)),
        "make_folder": ("fsio.before_mkdir", lambda: ws.make_folder("d/e/new/deeper")),
        "remove_folder": ("fsio.before_rmdir", lambda: ws.remove_folder("d/e/empty")),
        "remove_empty_tree": ("fsio.before_rmdir", lambda: ws.remove_empty_tree("d/e/empty")),
        "temp_files": ("fsio.before_unlink", lambda: ws.remove_temp_files("d/e/f.txt")),
    }
    point, action = actions[change]
    seen: list[dict[str, tuple[str, bytes, int]]] = []

    def handler(name: str) -> None:
        if name == point and not seen:
            os.rename(root / "d", outside / "d")
            seen.append(without_temp(snapshot(outside, dirs=True)))

    faults.install(handler)
    try:
        with ws.holding_folders() if held else _nothing():
            ws.lstat("d/e/f.txt")  # the folders are walked (and, held, kept) first
            with pytest.raises(UnsafePath, match="moved"):
                action()
    finally:
        faults.install(None)
    assert seen, "the fault point was never reached"
    assert without_temp(snapshot(outside, dirs=True)) == seen[0]
    assert (outside / "d/e/f.txt").read_text() == "f\n"
    assert (outside / "d/e/.snapstore-0123456789ab.tmp").exists()
    assert (outside / "d/e/empty").is_dir()
    assert not (outside / "d/e/g.txt").exists() and not (outside / "d/e/new").exists()
    assert [p.name for p in (outside / "d/e").iterdir() if p.name.endswith(".tmp")] == [
        ".snapstore-0123456789ab.tmp"
    ]
    assert not (root / "d").exists()


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def test_the_reported_case_a_folder_renamed_away_mid_rewind_gets_none_of_its_files(
    store: Store, root: Path, outside: Path, mover: Callable[[str, str], dict[str, object]]
) -> None:
    """The report: a folder renamed away during the write phase of a 3,000-file rewind got
    about 2,900 of its files at its new place. Now it gets none (at 600 files here)."""
    for n in range(COUNT):
        write(root, f"big/f{n:04d}.txt", f"{n}\n")
    store.begin_turn("default", "edit all")
    store.pre_write([f"big/f{n:04d}.txt" for n in range(COUNT)], "Bash")
    for n in range(COUNT):
        write(root, f"big/f{n:04d}.txt", f"{n} edited\n")
    store.post_write([f"big/f{n:04d}.txt" for n in range(COUNT)])
    store.end_turn("default")
    hits, moved_at = [0], 100

    def handler(name: str) -> None:
        if name == "fsio.before_rename":
            hits[0] += 1
            if hits[0] == moved_at:
                os.rename(root / "big", outside / "big")

    faults.install(handler)
    try:
        result = store.rewind(1)
    finally:
        faults.install(None)
    edited = sum(1 for p in (outside / "big").iterdir() if p.read_text().endswith("edited\n"))
    assert edited == COUNT - (moved_at - 1)  # the 99 written before the move, then nothing
    assert len(result.errors) == COUNT - (moved_at - 1)
    shutil.rmtree(outside / "big")
