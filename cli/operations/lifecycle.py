"""The workspace daemon's life, as the hooks see it: started at a session's start, told
of each session's end, never waited for.

In scan mode a hook scans before and after each shell call; with the daemon's
watcher those scans cost what changed, without it they walk the tree (the same
result, slower). So the hooks start the daemon (``snapstore serve``) when a
session starts or a prompt comes and none runs, and the daemon exits when the
last session has ended or nothing has happened for a while.

At most one daemon per store, whatever races: a hook takes ``<store>/serve.lock``
(the daemon's own lock) without waiting, and only the one that gets it starts the
daemon, handing it the locked file. A hook that finds it taken does nothing: a
daemon runs, or is starting. The hook never waits for the daemon.

Each live session is a file in ``<store>/sessions.d/``: made (or touched) at the
session's start and at each prompt, removed at its end. The daemon reads that
folder to know when the last one has gone. A command hook's prompt also writes into the
file which process runs the session (the agent: the hook's nearest ancestor that is not a
shell), so that ``snapstore mcp``, which the same agent spawns, can tell its session from
another's in the same workspace (docs/integrations/mcp.md). This module is on the hook
path: no subprocess until a daemon is to start, no threads.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import sys

from snapstore.core.db import FILE_MODE, append_private
from snapstore.core.errors import BadInput

LOCK_FILE = "serve.lock"
LOG_FILE = "serve.log"
SESSIONS_DIR = "sessions.d"


def _session_file(store_dir: str, session: str) -> str:
    """The session's file: its name in hex (any character is safe; ids are short)."""
    return os.path.join(store_dir, SESSIONS_DIR, session.encode().hex()[:240])


#: What runs a hook or an MCP server between it and the agent, and so is not the agent.
SHELLS = frozenset(
    {
        "sh",
        "bash",
        "dash",
        "zsh",
        "ksh",
        "mksh",
        "fish",
        "busybox",
        "env",
        "timeout",
        "nice",
        "nohup",
        "stdbuf",
        "flock",
    }
)
#: A process: its pid and its start time (clock ticks since boot), which a reused pid lacks.
Process = tuple[int, int]


def _stat(pid: int) -> tuple[str, int, int] | None:
    """A process's name, parent and start time, from /proc (None where there is none)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            raw = handle.read()
    except OSError:
        return None
    name, _, rest = raw[raw.find(b"(") + 1 :].rpartition(b")")
    fields = rest.split()
    try:
        return name.decode(errors="replace"), int(fields[1]), int(fields[19])
    except (IndexError, ValueError):
        return None


def alive(process: Process) -> bool:
    """Whether that very process still runs (the pid, started at that time)."""
    found = _stat(process[0])
    return found is not None and found[2] == process[1]


def agent_process(pid: int | None = None) -> Process | None:
    """The agent that started this process (or ``pid``): its nearest ancestor that is not a
    shell or a launcher. None off Linux, or past a few wrappers."""
    current = os.getppid() if pid is None else pid
    for _ in range(6):
        found = _stat(current)
        if found is None:
            return None
        name, parent, started = found
        if name not in SHELLS:
            return current, started
        if parent <= 1:
            return None
        current = parent
    return None


def session_started(store_dir: str, session: str, agent: Process | None = None) -> None:
    """Mark the session live (its start or a prompt: the file's time is its last sign); with
    ``agent``, also name the process that runs it (one small write: a reader that meets it
    half-written finds no process, never a wrong one)."""
    path = _session_file(store_dir, session)
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        if agent is None:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, FILE_MODE))
        else:
            data = json.dumps({"session": session, "agent": list(agent)}).encode()
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, FILE_MODE)
            try:
                os.write(fd, data)
            finally:
                os.close(fd)
        os.utime(path)
    except OSError:
        pass  # the daemon then lives by its idle time alone


def sessions_run_by(store_dir: str, agent: Process) -> list[str]:
    """The live sessions whose last prompt came from a hook of the process ``agent``."""
    folder = os.path.join(store_dir, SESSIONS_DIR)
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    found = []
    for name in sorted(names):
        try:
            with open(os.path.join(folder, name), "rb") as handle:
                record = json.loads(handle.read(4096) or b"null")
        except (OSError, ValueError):
            continue
        if (
            isinstance(record, dict)
            and isinstance(record.get("session"), str)
            and record.get("agent") == list(agent)
            and _session_file(store_dir, record["session"]).endswith(name)
        ):
            found.append(record["session"])
    return found


def session_ended(store_dir: str, session: str) -> None:
    """The session is gone: when it was the last, the daemon exits."""
    with contextlib.suppress(OSError):
        os.unlink(_session_file(store_dir, session))


def live_sessions(store_dir: str) -> list[float]:
    """The live sessions' last signs of life (mtimes)."""
    folder = os.path.join(store_dir, SESSIONS_DIR)
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return []
    found = []
    for entry in entries:
        try:
            found.append(entry.stat().st_mtime)
        except OSError:
            continue
    return found


def start_daemon(store_dir: str, root: str) -> bool:
    """Start the workspace's daemon detached, unless one runs or is starting, or
    ``SNAPSTORE_DAEMON=off`` says not to; True when this call started it. Returns at once:
    the daemon takes over the lock taken here."""
    wanted = os.environ.get("SNAPSTORE_DAEMON", "")
    if wanted not in ("", "auto", "off"):
        raise BadInput(f"SNAPSTORE_DAEMON takes auto or off, not {wanted!r}")
    if wanted == "off":
        return False
    path = os.path.join(store_dir, LOCK_FILE)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
    except OSError:
        return False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        import subprocess  # only when a daemon starts: not on every hook's path

        with append_private(os.path.join(store_dir, LOG_FILE)) as log:
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "snapstore_cli",
                    "--root",
                    root,
                    "serve",
                    "--lock-fd",
                    str(fd),
                ],
                cwd=root,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                pass_fds=(fd,),
                start_new_session=True,
            )
        return True
    except OSError:
        return False
    finally:
        os.close(fd)  # the daemon holds the same lock through its copy
