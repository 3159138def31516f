"""A store that cannot be written, end to end: read commands work, write commands refuse with
one line and exit 3, and nothing is written.

Root ignores file modes, so the store is made read-only two ways that hold for root too: a
user without rights (the command runs as ``nobody`` through ``setpriv``, from a copy it can
read wherever the clone lives, ``support.readable``; as anyone else, the modes alone do it) and
a read-only bind mount, made in a private mount namespace (``unshare -m``) that disappears with
the command.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

from ..support import CliResult, hermetic_env, read, readable, snapshot, write

READS = [
    ["log"],
    ["log", "--all"],
    ["show", "1"],
    ["diff", "1"],
    ["--json", "status"],
    ["fsck"],
    ["--json", "fsck"],
    ["rewind"],
]
WRITES = [
    ["init"],
    ["begin", "--prompt", "p"],
    ["end"],
    ["pre-write", "a.txt"],
    ["rewind", "1", "--yes"],
    ["rewind", "1", "--dry-run"],
    ["undo"],
    ["gc"],
    ["scan"],
    ["fsck", "--repair"],
]
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
Runner = Callable[..., CliResult]


class As(NamedTuple):
    """Who runs the command: the interpreter, behind what runs it as that user, and the
    environment it needs."""

    python: list[str]
    env: dict[str, str]


OWNER = As([sys.executable], {})


@pytest.fixture(scope="module")
def nobody() -> Iterator[As]:
    """As root: ``nobody``, from a copy of the package it can read wherever the clone lives.
    As anyone else the store's modes alone refuse: that user, with the test's interpreter."""
    if os.geteuid() != 0:
        yield OWNER
        return
    base = Path(tempfile.mkdtemp(prefix="snapstore-nobody-"))
    base.chmod(0o755)
    try:
        command, env = readable.make(base / "lib")
        yield As([*NOBODY, command[0]], env)
    finally:
        shutil.rmtree(base)


def _run(who: As, root: Path, *args: str, env: dict[str, str] | None = None) -> CliResult:
    proc = subprocess.run(
        [*who.python, "-m", "snapstore_cli", *args],
        cwd=root,
        capture_output=True,
        text=True,
        env=hermetic_env(**who.env, **(env or {})),
        timeout=120,
    )
    return CliResult(proc.returncode, proc.stdout, proc.stderr)


@pytest.fixture
def shared_root() -> Iterator[Path]:
    """A workspace that another user can reach (pytest's own temp folders are private)."""
    base = Path(tempfile.mkdtemp(prefix="snapstore-ro-"))
    base.chmod(0o755)
    ws = base / "ws"
    ws.mkdir()
    try:
        yield ws.resolve()
    finally:
        for folder, _, _ in os.walk(base):
            os.chmod(folder, 0o755)
        shutil.rmtree(base)


def _history(root: Path) -> None:
    """Two agent turns and a rewind, through the real command, as the store's owner."""
    for prompt, data in (("first", "one\n"), ("second", "two\n")):
        assert _run(OWNER, root, "begin", "--prompt", prompt).code == 0
        assert _run(OWNER, root, "pre-write", "a.txt").code == 0
        write(root, "a.txt", data)
        assert _run(OWNER, root, "post-write", "a.txt").code == 0
        assert _run(OWNER, root, "end").code == 0


def _store_state(root: Path) -> dict[str, tuple[bytes, int]]:
    found = {}
    for path in sorted((root / ".snapstore").rglob("*")):
        if path.is_file():
            found[str(path)] = (path.read_bytes(), path.stat().st_mtime_ns)
    return found


def _freeze(root: Path) -> None:
    """The store's folders 0o555 and its files 0o444."""
    for folder, _, files in os.walk(root / ".snapstore"):
        for name in files:
            os.chmod(os.path.join(folder, name), 0o444)
        os.chmod(folder, 0o555)


def _check(root: Path, run: Runner, reason: str) -> None:
    """Read commands give what they give on a writable store; writes refuse, writing nothing."""
    expected = {tuple(args): _run(OWNER, root, *args) for args in READS}
    _freeze(root)
    store, workspace = _store_state(root), snapshot(root)
    for args in READS:
        result, want = run(*args), expected[tuple(args)]
        assert result.code == 0, (args, result.stderr)
        if args == ["--json", "status"]:
            got, wanted = result.json, want.json
            assert got.pop("read_only") == reason and wanted.pop("read_only") is None
            assert got == wanted
        else:
            assert (result.stdout, result.stderr) == (want.stdout, want.stderr), args
    for args in WRITES:
        result = run(*args)
        assert result.code == 3, (args, result.code, result.stderr)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("snapstore: "), (args, result.stderr)
        assert "read-only" in lines[0] and reason in lines[0], (args, lines)
        assert "internal error" not in result.stderr
    assert _store_state(root) == store and snapshot(root) == workspace
    assert "read-only " + reason in " ".join(run("status").stdout.split())


def test_a_store_without_write_permission(shared_root: Path, nobody: As) -> None:
    root = shared_root
    assert _run(OWNER, root, "init").code == 0
    write(root, "a.txt", "zero\n")
    _history(root)
    _check(root, lambda *args: _run(nobody, root, *args), "permission denied")


def test_a_read_only_mount(root: Path) -> None:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("a read-only bind mount needs root and unshare(1)")
    assert _run(OWNER, root, "init").code == 0
    write(root, "a.txt", "zero\n")
    _history(root)
    script = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"'
    mount = ["unshare", "-m", "--propagation", "private", "sh", "-c", script, str(root)]
    mounted = As([*mount, sys.executable], {})
    probe = _run(mounted, root, "--version")
    assert probe.code == 0, probe.stderr
    _check(root, lambda *args: _run(mounted, root, *args), "read-only file system")
    assert read(root, "a.txt") == b"two\n"


HOLD = """
import sys
from snapstore import Store
store = Store.open(sys.argv[1])
print(store.repo.read_only, len(store.rewind_points()), flush=True)
sys.stdin.readline()
store.close()
"""


def test_a_read_only_reader_keeps_writers_out_while_it_reads(shared_root: Path, nobody: As) -> None:
    """Opened without LMDB's lock file, a reader is safe only because no writer commits while
    it has the store open: a writer (here root, whom modes do not stop) waits for it."""
    if os.geteuid() != 0:
        pytest.skip("needs a writer with more rights than the reader: run as root")
    root = shared_root
    assert _run(OWNER, root, "init").code == 0
    write(root, "a.txt", "zero\n")
    _history(root)
    store = root / ".snapstore"  # private (0700) as made: opened up for the reader
    for path in (store, *store.rglob("*")):
        os.chmod(path, 0o555 if path.is_dir() else 0o444)
    reader = subprocess.Popen(
        [*nobody.python, "-c", HOLD, str(root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=hermetic_env(**nobody.env),
    )
    assert reader.stdout is not None
    try:
        assert reader.stdout.readline().split() == ["permission", "denied", "2"]
        blocked = _run(OWNER, root, "--lock-timeout", "0.3", "begin", "--prompt", "third")
        assert blocked.code == 3 and "busy" in blocked.stderr, blocked.stderr
    finally:
        reader.communicate("done\n", timeout=60)
    assert reader.returncode == 0
    assert _run(OWNER, root, "begin", "--prompt", "third").code == 0


def test_creating_a_store_where_one_cannot_be_written(shared_root: Path, nobody: As) -> None:
    """init, and an agent's hook that would create the store, in a folder the user cannot
    write: one line; init exits 3, the hook lets the agent go on."""
    root = shared_root
    write(root, "a.txt", "zero\n")
    os.chmod(root, 0o555)
    result = _run(nobody, root, "init")
    assert result.code == 3, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot create the store" in lines[0], lines
    assert "permission denied" in lines[0] and "internal error" not in lines[0]
    event = json.dumps(
        {
            "session_id": "s1",
            "cwd": str(root),
            "prompt": "p",
            "hook_event_name": "UserPromptSubmit",
            "transcript_path": str(root / "t.jsonl"),
        }
    )
    proc = subprocess.run(
        [*nobody.python, "-m", "snapstore_cli", "hook", "claude-code"],
        cwd=root,
        input=event,
        capture_output=True,
        text=True,
        env=hermetic_env(**nobody.env),
        timeout=120,
    )
    assert proc.returncode == 0 and proc.stderr.count("\n") == 1, proc.stderr
    assert "cannot create the store" in proc.stderr
    assert sorted(p.name for p in root.iterdir()) == ["a.txt"]
