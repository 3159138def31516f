"""Whether the process a sign names is still the agent that left it.

An agent leaves a sign while it runs a session: an entry in its registry of running sessions,
a lock file, each naming a pid. The sign outlives a killed process, and the pid may then be
reused by any other process, so a pid counts only while the same process is alive: one that
started before the sign was last written (an agent writes its sign while it runs), whose
command names the agent where the system shows it. psutil gives both on Linux, macOS and
Windows alike; it is imported here, by a rewind's running check alone, never on a hook's path.
When neither can be learnt, :class:`Undecided` says why, and the rewind refuses the chat.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

from . import files

#: Seconds a process's start may lie after its sign's time and still be the one that wrote
#: it: the two clocks are read differently (the system's boot time is kept to the second).
SLACK = 2.0


class Undecided(Exception):
    """Whether a sign's process is the agent cannot be told (the reason is the message)."""


def alive(pid: Any, since: float, words: Sequence[str]) -> bool:
    """Whether ``pid`` is a live process that can have written a sign at ``since`` (it had
    started by then) and whose command holds one of ``words`` (when the system shows it)."""
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    try:
        import psutil
    except ImportError:
        raise Undecided(f"pid {pid} is named, and psutil is not installed to look at it") from None
    try:
        proc = psutil.Process(pid)
        with proc.oneshot():
            if proc.status() == psutil.STATUS_ZOMBIE:
                return False
            started = proc.create_time()
            command = _command(proc, psutil.AccessDenied)
    except psutil.NoSuchProcess:  # zombies included
        return False
    except psutil.AccessDenied:
        raise Undecided(f"pid {pid} is named, and this user may not look at it") from None
    if started > since + SLACK:
        return False  # it started after the sign was written: the pid was reused
    return command is None or any(word in command for word in words)


def _command(proc: Any, denied: type[Exception]) -> str | None:
    """The process's name, executable and arguments, lower case (None: none can be read)."""
    parts: list[str] = []
    for read in (proc.name, proc.exe, proc.cmdline):
        try:
            value = read()
        except denied:
            continue
        parts += value if isinstance(value, list) else [value]
    text = " ".join(part for part in parts if part).lower()
    return text or None


def registered(folders: Sequence[str], session_id: str, words: Sequence[str]) -> str:
    """Which live process a registry of running sessions names on the session: a folder
    ``sessions/`` in one of the agent's ``folders``, of ``<pid>….json`` entries ``{"pid",
    "sessionId"}`` (Claude Code, Qwen Code); "" for none. An entry that is no regular file is
    refused (it could block a read); one that is no JSON object is no entry."""
    for folder in folders:
        registry = os.path.join(folder, "sessions")
        for name in sorted(files.listdir(registry)):
            if not name.endswith(".json"):
                continue
            with files.open_regular(os.path.join(registry, name), folders, files.SMALL_CAP) as f:
                raw, written = f.read(f.size, 0), f.mtime
            try:
                entry = json.loads(raw)
            except (ValueError, RecursionError):
                continue
            if not isinstance(entry, dict) or entry.get("sessionId") != session_id:
                continue
            if alive(entry.get("pid"), written, words):
                return f"pid {entry['pid']}"
    return ""


def processes(words: Sequence[str]) -> list[tuple[int, str]]:
    """Every process whose program is one of ``words`` (``node …/gemini`` as much as
    ``gemini``), with its working folder, real path resolved (processes this user may not
    look at are left out)."""
    import psutil

    found = []
    for proc in psutil.process_iter(["cmdline", "cwd"]):
        argv, cwd = proc.info["cmdline"] or [], proc.info["cwd"]
        names = [os.path.basename(arg) for arg in argv[:2] if isinstance(arg, str)]
        if cwd and any(name in words for name in names):
            found.append((proc.pid, os.path.realpath(cwd)))
    return found
