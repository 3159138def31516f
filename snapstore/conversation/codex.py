"""Codex CLI's rollout: JSONL records ``{timestamp, ordinal, type, payload}``.

A resume rebuilds the history turn by turn; an ``event_msg`` ``thread_rolled_back``
``{num_turns: K}`` drops the newest K turns, which is what Codex's own rollback appends.
Every record needs the next ``ordinal`` (without it the thread cannot be resumed). A turn's
records carry its ``turn_id``, the UserPromptSubmit hook's ``turn_id``. Proved with 0.171.0
(docs/integrations/codex.md).
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from typing import Any

from . import pid_alive, release

NAME = "codex"
TITLE = "Codex"
COMMAND = "codex"
OWN = "Esc Esc (backtrack) in Codex"
TESTED = ((0, 171, 0), (0, 171, 0))


def resume_command(session_id: str) -> str:
    return f"codex resume {session_id}"


def running(session_id: str, home: str) -> str:
    """A live Codex writing the thread: a lock in ``CODEX_HOME/thread-writer-locks/`` named
    after it that a process holds, or whose recorded pid is alive. Codex 0.171 holds an
    exclusive ``flock`` on ``<thread id>.lock`` while it runs and removes the file at exit."""
    folder = os.path.join(home, "thread-writer-locks")
    try:
        names = [n for n in os.listdir(folder) if session_id in n]
    except OSError:
        return ""
    for name in names:
        path = os.path.join(folder, name)
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            continue
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return f"its writer lock {path} is held"
            fcntl.flock(fd, fcntl.LOCK_UN)
            pid = _pid(os.pread(fd, 4096, 0))
            if pid_alive(pid):
                return f"pid {pid} holds {path}"
        finally:
            os.close(fd)
    return ""


def _pid(raw: bytes) -> int | None:
    """The pid a lock file records: a number, or a JSON object's ``pid``."""
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    if isinstance(value, dict):
        value = value.get("pid")
    return value if isinstance(value, int) else None


def version(records: list[dict[str, Any]]) -> tuple[int, ...] | None:
    """The newest ``session_meta``'s ``cli_version``: the release that last opened the thread."""
    for record in reversed(records):
        if record.get("type") == "session_meta":
            return release((record.get("payload") or {}).get("cli_version"))
    return None


def _turn_id(record: dict[str, Any]) -> str | None:
    payload = record.get("payload") or {}
    if record.get("type") == "turn_context":
        return payload.get("turn_id")
    if record.get("type") == "event_msg" and payload.get("type") == "task_started":
        return (payload.get("turn_attribution") or {}).get("turn_id")
    return None


def mentions(records: list[dict[str, Any]], key: str) -> bool:
    """Whether the turn has records here: its start, or its items (written after the begin
    hook, which comes once ``task_started`` is written)."""
    return any(
        _turn_id(r) == key or (r.get("payload") or {}).get("turn_id") == key for r in records
    )


def live(records: list[dict[str, Any]]) -> list[str]:
    """The turns a resume rebuilds, oldest first: each turn id in file order, less the
    newest ``num_turns`` at each rollback."""
    turns: list[str] = []
    for record in records:
        payload = record.get("payload") or {}
        if record.get("type") == "event_msg" and payload.get("type") == "thread_rolled_back":
            count = payload.get("num_turns")
            if isinstance(count, int) and count > 0:
                del turns[max(0, len(turns) - count) :]
            continue
        turn = _turn_id(record)
        if isinstance(turn, str) and turn and turn not in turns:
            turns.append(turn)
    return turns


def compacted_after(records: list[dict[str, Any]], key: str) -> bool:
    """Whether a ``compacted`` record (or a compaction event) comes after the turn began."""
    at = next((i for i, r in enumerate(records) if _turn_id(r) == key), len(records))
    return any(
        r.get("type") == "compacted"
        or (
            r.get("type") == "event_msg"
            and (r.get("payload") or {}).get("type") == "context_compacted"
        )
        for r in records[at:]
    )


def rewind_record(records: list[dict[str, Any]], key: str, session_id: str) -> str:
    """``thread_rolled_back`` dropping the turn and every later one, with the next ordinal."""
    turns = live(records)
    ordinals = [r["ordinal"] for r in records if isinstance(r.get("ordinal"), int)]
    now = time.time()
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1000):03d}Z"
    record = {
        "timestamp": stamp,
        "ordinal": max(ordinals, default=0) + 1,
        "type": "event_msg",
        "payload": {"type": "thread_rolled_back", "num_turns": len(turns) - turns.index(key)},
    }
    return json.dumps(record, separators=(",", ":")) + "\n"
