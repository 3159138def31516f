"""Shared fixtures: temp workspaces, a store with a fixed clock, and the real CLI."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from snapstore import Store

from .trees import snapshot

__all__ = ["snapshot"]  # re-exported: tests import it from here

FIXED_NOW = 1_767_225_600.0  # 2026-01-01T00:00:00Z


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--slow", action="store_true", help="run the long variants too")


@pytest.fixture
def slow(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--slow"))


@pytest.fixture
def root(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws.resolve()


class Clock:
    """A fixed clock that tests can move forward."""

    def __init__(self, now: float = FIXED_NOW):
        self.now = now

    def __call__(self) -> float:
        return self.now

    def tick(self, seconds: float = 60.0) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store(root: Path, clock: Clock):
    with Store.init(root, clock=clock) as s:
        yield s


def write(root: Path, rel: str, data: bytes | str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)


def read(root: Path, rel: str) -> bytes | None:
    path = root / rel
    return path.read_bytes() if path.exists() or path.is_symlink() else None


def agent_write(store: Store, rel: str, data: bytes | str | None, tool: str = "Write",
                session: str = "default") -> None:
    """What an agent's tool layer does: capture, write (or delete), record."""
    root = Path(store.root)
    store.pre_write([rel], tool, session)
    if data is None:
        (root / rel).unlink()
    else:
        write(root, rel, data)
    store.post_write([rel], session)


def agent_turn(store: Store, prompt: str, edits: dict[str, bytes | str | None],
               session: str = "default") -> str:
    turn = store.begin_turn(session, prompt)
    for rel, data in edits.items():
        agent_write(store, rel, data, session=session)
    store.end_turn(session)
    return turn.id


@dataclass
class CliResult:
    code: int
    stdout: str
    stderr: str

    @property
    def json(self):
        return json.loads(self.stdout)


def snapstore_bin() -> list[str]:
    exe = shutil.which("snapstore", path=os.path.dirname(sys.executable))
    return [exe] if exe else [sys.executable, "-m", "snapstore_cli"]


def hermetic_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SNAPSTORE_")}
    env.update({"SNAPSTORE_NOW": str(FIXED_NOW), "NO_COLOR": "1", "COLUMNS": "120",
                "TERM": "dumb"})
    env.update(extra)
    return env


@pytest.fixture
def cli(root: Path):
    """Run the real `snapstore` command in the workspace, hermetically."""

    def run(*args: str, cwd: Path | None = None, input: str | None = None,
            env: dict[str, str] | None = None) -> CliResult:
        proc = subprocess.run([*snapstore_bin(), *args], cwd=cwd or root, input=input,
                              capture_output=True, text=True, env=hermetic_env(**(env or {})),
                              timeout=120)
        return CliResult(proc.returncode, proc.stdout, proc.stderr)

    return run


@pytest.fixture(scope="session")
def seaweed(tmp_path_factory: pytest.TempPathFactory):
    """A real S3 server (SeaweedFS) on loopback for the whole session; see tests/seaweed.py."""
    from .seaweed import start_seaweed

    with start_seaweed(tmp_path_factory.mktemp("seaweed")) as server:
        yield server
