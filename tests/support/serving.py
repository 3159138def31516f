"""`snapstore serve` as a test's child process, for the moves a command line hands it.

It runs in the foreground (its log is its stderr, kept in a file), dies with the test
process, and is stopped by pid. Three knobs that only a test's daemon has, set in the child
before the console script runs: a fault point at which it kills itself with SIGKILL (as
tests/support/crash_child.py's children do), one at which it waits until the test lets it go
on (:meth:`Serving.paused`, :meth:`Serving.release`), and another snapstore version to report.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from .reaper import die_with_parent

REPO = Path(__file__).resolve().parents[2]

_CHILD = """
import sys
sys.path.insert(0, sys.argv[1])
fault, record, version, pause = sys.argv[2:6]
if fault:
    from tests.support.crash_child import install_fault
    install_fault(fault, record)
if pause:
    import os, time
    from snapstore.core import faults
    def wait(point):
        if point == pause and not os.path.exists(record + ".release"):
            open(record + ".paused", "w").close()
            while not os.path.exists(record + ".release"):
                time.sleep(0.01)
    faults.install(wait)
if version:
    import snapstore
    snapstore.__version__ = version
sys.argv = ["snapstore", *sys.argv[6:]]
from snapstore_cli.launch import main
main()
"""


class Serving:
    """A running daemon of ``ws``, in the environment ``env``: its pid and port once it is up."""

    def __init__(
        self,
        ws: Path,
        env: Mapping[str, str],
        fault: str = "",
        version: str = "",
        pause: str = "",
    ):
        from snapstore_cli.doors.daemon import info

        from . import wait_until

        self.ws = ws
        self.store = str(ws / ".snapstore")
        self.log_path = ws.parent / f"serve-{ws.name}.log"
        self.faults = ws.parent / f"faults-{ws.name}"
        knobs = (version, pause, "serve")
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", _CHILD, str(REPO), fault, str(self.faults), *knobs],
                cwd=ws,
                env=dict(env),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
                preexec_fn=die_with_parent(),
            )
        self.pid = self.proc.pid

        def up() -> bool:
            assert self.proc.poll() is None, self.log()
            return (info(self.store) or {}).get("pid") == self.pid

        wait_until(up, timeout=30)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def moves(self) -> list[str]:
        """The moves it made or refused, one log line each."""
        return [line.split(" ", 1)[1] for line in self.log().splitlines() if " move: " in line]

    def killed_at(self) -> str | None:
        """The fault point it killed itself at, if it did."""
        return self.faults.read_text().strip() if self.faults.exists() else None

    def paused(self) -> bool:
        """Whether it waits at the pause point (in the middle of a move)."""
        return Path(f"{self.faults}.paused").exists()

    def release(self) -> None:
        """Let it go on from the pause point (and pass it from now on)."""
        Path(f"{self.faults}.release").touch()

    def stop(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGTERM)
        self.proc.wait(timeout=30)

    def __enter__(self) -> Serving:
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()
