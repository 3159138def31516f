"""A test run that is killed (a CI time-out, Ctrl-C twice, SIGKILL of pytest) leaves no server
behind: SeaweedFS dies with the process that started it, and a detached `snapstore serve` is
stopped by the run's reaper (tests/support/reaper.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from ..support import reaper

REPO = Path(__file__).resolve().parents[2]
DEADLINE = 120.0  # seconds: generous, for a loaded machine; nothing here measures time


def _alive(pid: int) -> bool:
    """Running: a zombie (its parent gone, nobody reaping yet) is not."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _poll(found: Callable[[], object], what: str) -> object:
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        value = found()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"still waiting for {what}")


def _kill_run_once(args: list[str], basetemp: Path, find: Callable[[], list[int]]) -> list[int]:
    """Start pytest on ``args``, wait until ``find`` sees the server its run started, SIGKILL
    pytest, and return the server's pids."""
    run = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            f"--basetemp={basetemp}",
            *args,
        ],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        pids = _poll(find, "the run's server")
    finally:
        os.kill(run.pid, signal.SIGKILL)
        run.wait()
    assert isinstance(pids, list)
    return pids


def test_a_killed_run_takes_its_seaweed_server_along(tmp_path: Path) -> None:
    inner = tmp_path / "run"
    weed = _kill_run_once(
        ["tests/e2e/test_remote_cli.py::test_remote_add_list_remove_push_pull_json"],
        inner,
        lambda: [pid for pid, cmd in reaper.processes_in(inner) if " server -dir=" in cmd],
    )
    _poll(lambda: not any(_alive(pid) for pid in weed), f"weed {weed} to end")


#: A test that starts `snapstore serve --detach` as the serve tests do, says its pid, and waits.
INNER = """
import subprocess
import time
from pathlib import Path

from tests.e2e.test_serve import Daemon
from tests.support import hermetic_env, snapstore_bin


def test_hold(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    subprocess.run([*snapstore_bin(), "init"], cwd=ws, env=hermetic_env(), check=True)
    Path(__file__).with_name("serve.pid").write_text(str(Daemon(ws).pid))
    time.sleep(600)
"""


def test_a_killed_run_takes_its_detached_serve_daemon_along(tmp_path: Path) -> None:
    (tmp_path / "test_hold.py").write_text(INNER)
    said = tmp_path / "serve.pid"
    serve = _kill_run_once(
        [str(tmp_path / "test_hold.py")],
        tmp_path / "run",
        lambda: [int(said.read_text())] if said.exists() and said.read_text() else [],
    )
    _poll(lambda: not any(_alive(pid) for pid in serve), f"snapstore serve {serve} to end")
