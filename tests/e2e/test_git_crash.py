"""kill -9 at every fault point of a rewind's git half, then ``snapstore rewind --resume``.

The agent's turn checked out a new branch, committed on it and stashed the user's edit on
top of an older stash. Its rewind moves a branch (deleted), HEAD (back to main), the index,
the stash and its list, besides the files. A child process runs the rewind and is killed
with SIGKILL at the N-th pass of a fault point; then:

- each part of the repository is either as the rewind found it or as it leaves it (HEAD,
  every ref, the index, the stash list), never a third state, and no lock file of git's is
  left that is not snapstore's own (which the resume takes over);
- ``snapstore rewind --resume`` finishes the rewind: the repository, and the files, are
  exactly as an uninterrupted rewind leaves them.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from snapstore import Store

from ..support import hermetic_env, snapstore_bin
from ..support.gitrepo import env, git, init, sh, state

SESSION = "claude-code/c"
SCRIPT = "git checkout -q -b topic && echo a >> a.txt && git commit -qm agent a.txt && git stash -q"
#: (fault point, how many times a rewind of this turn passes it)
POINTS = [
    ("journal.journaled", 1),
    ("journal.wrote_path", 1),
    ("journal.git", 1),
    ("git.refs_moved", 1),
    ("git.before_rename", 2),  # HEAD, the index
    ("git.head_moved", 1),
    ("git.refs_deleted", 1),
    ("git.stash_list_written", 1),
    ("git.file_written", 1),
    ("journal.before_finish", 1),
]
_CHILD = """
import os, signal, sys
from snapstore import Store
from snapstore.core import faults
root, point, hit = sys.argv[1], sys.argv[2], int(sys.argv[3])
seen = 0
def handler(name):
    global seen
    if name == point:
        seen += 1
        if seen == hit:
            os.kill(os.getpid(), signal.SIGKILL)
faults.install(handler)
with Store.open(root) as store:
    store.rewind(1, "claude-code/c")
"""


def _parts(root: Path) -> dict[str, object]:
    """Each part of the repository that moves on its own."""
    found = state(root)
    return {
        "branch": found["branch"],
        "head": found["head"],
        "index": found["index"],
        "stash": found["stash"],
        **{ref.split()[0]: ref for ref in found["refs"]},  # type: ignore[union-attr]
    }


def _turn(root: Path) -> None:
    init(root)
    sh(root, "echo older >> b.txt && git stash -q")  # the user's own stash
    (root / "notes.txt").write_text("notes\nuser edit\n")  # and uncommitted work
    with Store.init(root) as store:
        store.exclude_from_git()
        store.scan()
        store.begin_turn(SESSION, "branch, commit, stash", scan=True, close_open=True)
        store.shell_begin(SESSION, "c1")
        sh(root, SCRIPT)
        store.shell_end(SESSION, "c1")
        store.end_turn(SESSION, scan=True)


def _locks(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in (root / ".git").rglob("*.lock"))


@pytest.mark.parametrize(
    ("point", "hit"), [(p, n) for p, count in POINTS for n in range(1, count + 1)]
)
def test_a_rewind_killed_in_its_git_half_is_finished_by_resume(
    tmp_path: Path, point: str, hit: int
) -> None:
    reference = tmp_path / "reference"
    reference.mkdir()
    _turn(reference)
    with Store.open(reference) as store:
        assert store.rewind(1, SESSION).ok
    expected = state(reference)

    root = tmp_path / "ws"
    root.mkdir()
    _turn(root)
    before = _parts(root)
    child = subprocess.run(
        [sys.executable, "-c", _CHILD, str(root), point, str(hit)],
        env={**env(), **hermetic_env()},
        capture_output=True,
        text=True,
    )
    assert child.returncode == -9, child.stderr  # killed where asked
    now = _parts(root)
    after = _parts(reference)
    for name in before.keys() | after.keys():
        assert now.get(name) in (before.get(name), after.get(name)), name
    for lock in _locks(root):  # only snapstore's own, which the resume takes over
        assert lock in (".git/HEAD.lock", ".git/index.lock", ".git/refs/stash.lock"), lock

    resumed = subprocess.run(
        [*snapstore_bin(), "rewind", "--resume", "--json"],
        cwd=root,
        env=hermetic_env(),
        capture_output=True,
        text=True,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert state(root) == expected
    assert _locks(root) == []
    assert git(root, "stash", "list", "--format=%gs").count("\n") == 0  # the user's one stash
