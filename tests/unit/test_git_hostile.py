"""A repository snapstore cannot read safely: the git half is refused, clearly, and the files
still rewind. A ``.git`` that is a symlink out of the workspace, a packed-refs file of 50 MB,
a ref whose name holds bytes git would not write or no UTF-8, an index over the capture
limit: each is said when it is met (the warning), kept with the turn, and named by the
rewind, which moves nothing of git's and touches nothing outside the workspace."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from snapstore import Store

from ..support import Clock, read
from ..support.gitrepo import git, init, sh, state

SESSION = "claude-code/h"


def _symlinked(root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    init(outside)
    os.symlink(outside / ".git", root / ".git")
    for name in ("a.txt", "b.txt", "notes.txt"):
        (root / name).write_bytes((outside / name).read_bytes())


def _big_packed_refs(root: Path, tmp_path: Path) -> None:
    init(root)
    oid = git(root, "rev-parse", "HEAD")
    line = f"{oid} refs/tags/t{{:08d}}\n"
    with open(root / ".git" / "packed-refs", "w") as handle:
        handle.write("# pack-refs with: peeled fully-peeled sorted \n")
        for n in range(50 * 1024 * 1024 // len(line.format(0)) + 1):
            handle.write(line.format(n))


def _odd_ref_name(root: Path, tmp_path: Path) -> None:
    init(root)
    oid = git(root, "rev-parse", "HEAD")
    (root / ".git" / "refs" / "heads" / os.fsdecode(b"bad\xff\x01name")).write_text(oid + "\n")


def _big_index(root: Path, tmp_path: Path) -> None:
    init(root)
    for n in range(300):
        (root / f"f{n:03d}.txt").write_text(f"{n}\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "many files")


CASES: dict[str, tuple[Callable[[Path, Path], None], str]] = {
    "a .git symlinked out": (_symlinked, "is a symlink"),
    "a 50 MB packed-refs": (_big_packed_refs, "packed-refs is"),
    "a ref name with odd bytes": (_odd_ref_name, "git would not write or that is no UTF-8"),
    "an index over the capture limit": (_big_index, "over the capture limit"),
}


@pytest.mark.parametrize("case", CASES)
def test_a_repository_snapstore_cannot_read_safely_refuses_the_git_half_and_the_files_rewind(
    root: Path, tmp_path: Path, clock: Clock, case: str
) -> None:
    make, said = CASES[case]
    make(root, tmp_path)
    warnings: list[str] = []
    limit = 16 * 1024 if case == "an index over the capture limit" else 1 << 30
    with Store.init(root, clock=clock, warn=warnings.append, max_file_size=limit) as store:
        store.scan()
        before = read(root, "a.txt")
        outside = state(tmp_path / "outside") if case == "a .git symlinked out" else None
        store.begin_turn(SESSION, "edit and commit", scan=True, close_open=True)
        store.shell_begin(SESSION, "c1")
        sh(root, "echo agent >> a.txt")
        store.shell_end(SESSION, "c1")
        store.end_turn(SESSION, scan=True)
        assert any(said in w for w in warnings), warnings  # said when met
        [point] = store.rewind_points(SESSION)
        assert said in point.turn.git_note  # kept with the turn

        result = store.rewind(1, SESSION)
        assert read(root, "a.txt") == before and result.restored == ["a.txt"]
        assert result.git is not None and not result.git["ok"] and not result.ok
        assert said in (result.git["refused"] or "") or any(said in n for n in result.git["notes"])
        assert result.git["refs"] == [] and result.git["kept"] == []
        if outside is not None:  # nothing outside the workspace moved
            assert state(tmp_path / "outside") == outside


def test_a_repository_that_became_unreadable_after_the_turn_keeps_its_refs(
    root: Path, clock: Clock
) -> None:
    """The turn's commit was recorded; then packed-refs grew past the limit: the rewind
    moves no ref (it cannot check them), says why, and the files still go back."""
    init(root)
    with Store.init(root, clock=clock) as store:
        store.scan()
        store.begin_turn(SESSION, "commit", scan=True, close_open=True)
        store.shell_begin(SESSION, "c1")
        sh(root, "echo agent >> a.txt && git commit -qam agent")
        store.shell_end(SESSION, "c1")
        store.end_turn(SESSION, scan=True)
        agent = git(root, "rev-parse", "main")
        _big_packed_refs_only(root)
        result = store.rewind(1, SESSION)
        assert result.git is not None and not result.git["ok"] and not result.ok
        assert "packed-refs is" in result.git["refused"]
        assert git(root, "rev-parse", "main") == agent
        assert read(root, "a.txt") == b"a1\na2\n"


def _big_packed_refs_only(root: Path) -> None:
    oid = git(root, "rev-parse", "HEAD")
    with open(root / ".git" / "packed-refs", "w") as handle:
        for n in range(17 * 1024 * 1024 // 60):
            handle.write(f"{oid} refs/tags/t{n:08d}\n")
