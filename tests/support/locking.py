"""The store's write lock held by another process, as a concurrent writer holds it."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from . import hermetic_env

REPO = Path(__file__).resolve().parents[2]

#: Holds the write lock across two commits (``probe`` events, steps 1 and 2), waiting for a
#: line on stdin between them.
_SCOPE = """
import sys
from snapstore.core.repo import Repo
repo = Repo(None, store_dir=sys.argv[1])
with repo.lock() as w:
    w.write(lambda tx: tx.event("probe", who="scope", step=1))
    print("inside", flush=True)
    sys.stdin.readline()
    w.write(lambda tx: tx.event("probe", who="scope", step=2))
repo.close()
"""


@contextmanager
def lock_held_elsewhere(store_dir: str) -> Iterator[Callable[[], None]]:
    """Inside the block, another process holds the write lock in one locked scope, its
    first commit made; calling what the block gets (or leaving the block) lets it make its
    second commit and end the scope."""
    scope = subprocess.Popen(
        [sys.executable, "-c", _SCOPE, store_dir],
        cwd=REPO,
        env=hermetic_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert scope.stdin is not None and scope.stdout is not None
    stdin = scope.stdin

    def release() -> None:
        if not stdin.closed:
            stdin.write(b"go\n")
            stdin.close()

    try:
        assert scope.stdout.readline() == b"inside\n"
        yield release
    finally:
        release()
        assert scope.wait(timeout=60) == 0
        scope.stdout.close()
