"""Helpers shared by the unit and end-to-end tests (fixtures live in tests/conftest.py).

Kept free of pytest so that the crash tests' child process can import it.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from snapstore import Store

from .runner import FIXED_NOW, hermetic_env, run_snapstore, snapstore, snapstore_bin
from .trees import snapshot

__all__ = [
    "FIXED_NOW",
    "SHELL_TOOL",
    "CliResult",
    "Clock",
    "agent_turn",
    "agent_write",
    "changes_of",
    "claude_event",
    "hermetic_env",
    "make_tree",
    "read",
    "run_snapstore",
    "shell",
    "snapshot",
    "snapstore",
    "snapstore_bin",
    "wait_until",
    "write",
]

CLAUDE_FIXTURES = Path(__file__).parents[1] / "fixtures" / "claude-code"
#: Whether pytest runs with ``--slow`` (set by tests/conftest.py before any test module is
#: imported, so that hypothesis settings can scale with it).
SLOW = False


class Clock:
    """A fixed clock that tests can move forward."""

    def __init__(self, now: float = FIXED_NOW):
        self.now = now

    def __call__(self) -> float:
        return self.now

    def tick(self, seconds: float = 60.0) -> None:
        self.now += seconds


def write(root: Path, rel: str, data: bytes | str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)


def read(root: Path, rel: str) -> bytes | None:
    path = root / rel
    return path.read_bytes() if path.exists() or path.is_symlink() else None


#: What an agent's shell tool might run on :func:`make_tree`: edit, delete, rename, chmod, generate.
SHELL_TOOL = """
sed -i 's/two/TWO/' src/a.txt
rm src/b.txt
mv src/c.txt src/renamed.txt
chmod +x run.sh
mkdir -p gen/deep
for i in $(seq 1 50); do printf 'generated %s\\n' "$i" > gen/deep/g$i.txt; done
"""


def random_bytes(size: int, seed: int) -> bytes:
    """Incompressible bytes, the same for the same seed: a big file's worst case."""
    return random.Random(seed).randbytes(size)


def edited_in_the_middle(data: bytes, seed: int) -> bytes:
    """``data`` with 1 KiB overwritten and 100 bytes inserted, both in the middle: an edit
    of a big file that chunks cut by content keep to one or two chunks."""
    rng = random.Random(seed)
    at = len(data) // 2
    out = bytearray(data)
    out[at : at + 1024] = rng.randbytes(1024)
    out[at + 5000 : at + 5000] = rng.randbytes(100)
    return bytes(out)


def make_tree(root: Path) -> None:
    """A small workspace: text files in a folder, an executable, a binary and a symlink."""
    write(root, "src/a.txt", "one\ntwo\nthree\n")
    write(root, "src/b.txt", "bee\n")
    write(root, "src/c.txt", "sea\n")
    write(root, "run.sh", "#!/bin/sh\necho run\n")
    write(root, "bin.dat", bytes(range(256)) * 4)
    os.symlink("src/a.txt", root / "link")


def shell(root: Path, script: str) -> None:
    """Run a shell script in ``root``, as an agent's shell tool would."""
    subprocess.run(["sh", "-ec", script], cwd=root, check=True)


def agent_write(
    store: Store, rel: str, data: bytes | str | None, tool: str = "Write", session: str = "default"
) -> None:
    """What an agent's tool layer does: capture, write (or delete), record."""
    root = Path(store.root)
    store.pre_write([rel], tool, session)
    if data is None:
        (root / rel).unlink()
    else:
        write(root, rel, data)
    store.post_write([rel], session)


def agent_turn(
    store: Store, prompt: str, edits: dict[str, bytes | str | None], session: str = "default"
) -> str:
    turn = store.begin_turn(session, prompt)
    for rel, data in edits.items():
        agent_write(store, rel, data, session=session)
    store.end_turn(session)
    return turn.id


def changes_of(store: Store, turn: str) -> dict[str, str]:
    """Each path a turn changed, with the source that recorded it (hook, scan, watch)."""
    return {c.path: c.source for c in store.changes(turn)}


def claude_event(root: Path, name: str, rel: str = "src/app.py", **fields: object) -> bytes:
    """A recorded Claude Code hook payload (tests/fixtures/claude-code/NAME.json) for a
    workspace at ``root``, its file ``rel``, with ``fields`` changed."""
    raw = (CLAUDE_FIXTURES / f"{name}.json").read_text()
    raw = raw.replace("__CWD__/src/app.py", f"__CWD__/{rel}")
    data = json.loads(
        raw.replace("__CWD__", str(root)).replace("__TRANSCRIPT__", str(root / "t.jsonl"))
    )
    data.update(fields)
    return json.dumps(data).encode()


def wait_until(condition: Callable[[], object], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


@dataclass
class CliResult:
    code: int
    stdout: str
    stderr: str

    @property
    def json(self):
        return json.loads(self.stdout)
