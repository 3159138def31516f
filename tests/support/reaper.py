"""Processes the tests start die with the test run, however it ends: a CI time-out, Ctrl-C twice,
SIGKILL of pytest.

Two ways, for two kinds of process (Linux):

- a child of the test process dies with it: :func:`die_with_parent` is its ``preexec_fn``,
  which asks the kernel for SIGKILL when its parent goes (``PR_SET_PDEATHSIG``). SeaweedFS,
  the watch daemon and the agent CLIs start so;
- a daemon that detaches (``snapstore serve --detach``, a serve that a hook starts, Cline's
  hub) has no parent to follow: :func:`watch_folder` names the folder it works in, and the
  run's reaper kills every process whose working folder or command line lies there. The
  reaper is this file run as a program, started on first use in a session of its own; it
  waits for the end of the pipe the test process holds, which closes when that process
  ends, for whatever reason.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

PR_SET_PDEATHSIG = 1
_reaper: subprocess.Popen[bytes] | None = None


def die_with_parent() -> Callable[[], None]:
    """A ``preexec_fn``: the child gets SIGKILL when the process that started it ends (and
    ends at once if that process is already gone)."""
    libc = ctypes.CDLL(None, use_errno=True)  # loaded here: the child only calls it
    parent = os.getpid()

    def arm() -> None:
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:  # it died between the fork and the prctl
            os._exit(1)

    return arm


def watch_folder(folder: Path | str) -> None:
    """When the test run ends, kill every process still working in ``folder``."""
    global _reaper
    if _reaper is None or _reaper.poll() is not None:
        _reaper = subprocess.Popen(
            [sys.executable, __file__],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # Ctrl-C on the run's group must not stop it first
        )
    assert _reaper.stdin is not None
    _reaper.stdin.write(os.fsencode(folder) + b"\n")
    _reaper.stdin.flush()


def processes_in(folder: Path | str) -> list[tuple[int, str]]:
    """(pid, command line) of every other process whose working folder or command line lies in
    ``folder``: a test's unique temporary folder holds only that test's processes."""
    mark, found = str(folder), []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            cwd = os.readlink(proc / "cwd")
        except OSError:
            continue
        if mark in cmdline or cwd == mark or cwd.startswith(mark + os.sep):
            found.append((int(proc.name), cmdline))
    return found


def kill_in(folder: Path | str) -> None:
    """SIGKILL every process :func:`processes_in` finds."""
    for pid, _ in processes_in(folder):
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            continue


def _main() -> None:
    """The reaper: read folders until the test process's end of the pipe closes, then kill
    what still works in them."""
    folders = [os.fsdecode(line.rstrip(b"\n")) for line in sys.stdin.buffer]
    for folder in dict.fromkeys(folders):
        kill_in(folder)


if __name__ == "__main__":
    _main()
