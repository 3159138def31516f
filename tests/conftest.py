"""Fixtures for every test: temp workspaces, a store with a fixed clock, the real CLI.

Helpers that are not fixtures live in tests/support. Unit tests (tests/unit)
drive the library in-process; end-to-end tests (tests/e2e) drive the ``snapstore`` command
(in this process where a separate one adds nothing, see tests/support/runner.py) and real
agent programs.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from snapstore import Store

from .support import CliResult, Clock, hermetic_env, snapstore
from .support.fuzz import COUNTS, Sentinel

if TYPE_CHECKING:
    from snapstore.remote import ObjectStore


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--slow", action="store_true", help="run the long variants too")


def pytest_configure(config: pytest.Config) -> None:
    from . import support

    support.SLOW = bool(config.getoption("--slow"))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests marked ``long`` first, the longest first, so that no worker starts a long
    one near the end while the others idle: ``./dev test`` hands the tests out with
    pytest-xdist's ``worksteal`` (an idle worker takes half of another's queue), and a test
    already begun cannot be taken. The rest keep their order."""

    def seconds(item: pytest.Item) -> float:
        marker = item.get_closest_marker("long")
        return marker.args[0] if marker is not None else 0

    items.sort(key=seconds, reverse=True)


@pytest.fixture
def slow(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--slow"))


@pytest.fixture
def root(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws.resolve()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store(root: Path, clock: Clock) -> Iterator[Store]:
    with Store.init(root, clock=clock) as s:
        yield s


@pytest.fixture
def scratch_store(root: Path, clock: Clock) -> Iterator[Store]:
    """A store that syncs nothing (``durable=False``): for property tests that commit
    thousands of times and whose meaning does not depend on durability."""
    with Store.init(root, clock=clock, durable=False) as s:
        yield s


@pytest.fixture
def cli(root: Path, request: pytest.FixtureRequest):
    """Run `snapstore` in the workspace, hermetically: in this process, or as a real process
    for a test marked ``process`` (tests/support/runner.py)."""
    process = request.node.get_closest_marker("process") is not None

    def run(
        *args: str | bytes,
        cwd: Path | None = None,
        input: str | None = None,
        env: dict[str, str] | None = None,
    ) -> CliResult:
        done = snapstore(
            cwd or root, *args, env=hermetic_env(**(env or {})), input=input, process=process
        )
        return CliResult(done.returncode, done.stdout, done.stderr)

    return run


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A 3 MiB tmpfs, unmounted afterwards."""
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


@pytest.fixture
def sentinel(tmp_path: Path, root: Path) -> Iterator[Sentinel]:
    """A tree outside the workspace that the test must never touch (checked at the end)."""
    guard = Sentinel(tmp_path, root)
    yield guard
    guard.check()
    guard.watcher.close()


@pytest.fixture(scope="session", autouse=True)
def _state_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The user's state folder, where snapstore records the settings files it wrote (its
    trust records): a temporary one for the run, so that no test writes into the home
    folder, and every command the tests start (hermetic_env copies it) agrees."""
    before = os.environ.get("XDG_STATE_HOME")
    os.environ["XDG_STATE_HOME"] = str(tmp_path_factory.mktemp("state"))
    yield
    if before is None:
        os.environ.pop("XDG_STATE_HOME")
    else:
        os.environ["XDG_STATE_HOME"] = before


@pytest.fixture(scope="session", autouse=True)
def _report_fuzz_counts() -> Iterator[None]:
    yield
    if COUNTS:
        print(f"\nfuzz cases tried: {sum(COUNTS.values())} {COUNTS}")


@pytest.fixture(scope="session")
def seaweed(tmp_path_factory: pytest.TempPathFactory):
    """A real S3 server (SeaweedFS) on loopback for the whole session (tests/support/seaweed.py)."""
    from .support.seaweed import start_seaweed

    with start_seaweed(tmp_path_factory.mktemp("seaweed")) as server:
        yield server


@pytest.fixture(params=["s3", "file"])
def remote(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ObjectStore]:
    """An empty remote: a fresh prefix of the session's SeaweedFS bucket, or a folder."""
    from snapstore.remote import open_object_store  # only here: no test loads it unasked

    if request.param == "s3":
        from .support.seaweed import BUCKET, FAST_RETRY

        server = request.getfixturevalue("seaweed")
        store = open_object_store(
            f"s3://{BUCKET}/t-{uuid.uuid4().hex[:12]}",
            endpoint_url=server.endpoint,
            credentials=server.credentials,
            retry=FAST_RETRY,
        )
    else:
        (tmp_path / "remote").mkdir()
        store = open_object_store((tmp_path / "remote").as_uri())
    with store:
        yield store
