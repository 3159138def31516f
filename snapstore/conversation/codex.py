"""Codex CLI's rollout: JSONL records ``{timestamp, ordinal, type, payload}``.

A resume rebuilds the history from the rollout; an ``event_msg`` ``thread_rolled_back``
``{num_turns: K}`` drops the newest K *user messages* (Codex's
``user_message_positions_in_rollout``), which is what Codex's own rollback appends. A turn
holds more than one when the user steered it (a second message while it ran), so the count
is of the messages each completed ``UserMessage`` item records, not of turns. Every record
needs the next ``ordinal`` (without it the thread cannot be resumed). A turn's records carry
its ``turn_id``, the UserPromptSubmit hook's ``turn_id``; a steering message fires that hook
again with the same ``turn_id``, so the turn's message is its first after the hook's offset.
Proved with 0.171.0 (docs/integrations/codex.md).
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from typing import Any

from . import files
from .jsonl import Chat as Base
from .jsonl import dumps, obj, release, stamp, string
from .liveness import alive

NAME = "codex"
TITLE = "Codex"
COMMAND = "codex"
OWN = "Esc Esc (backtrack) in Codex"
TESTED = ((0, 171, 0), (0, 171, 0))
#: Where a rollout lies in the agent's folder: ``sessions/YYYY/MM/DD/rollout-….jsonl``.
LAYOUT = (4, "sessions")
WORDS = ("codex",)


def resume_command(session_id: str) -> str:
    return f"codex resume {session_id}"


def running(session_id: str, folders: list[str], transcript: str | None) -> str:
    """A live Codex writing the thread: a lock in ``thread-writer-locks/`` named after it that
    a process holds, or whose recorded pid is still the process that wrote it. Codex 0.171
    holds an exclusive ``flock`` on ``<thread id>.lock`` while it runs and removes the file at
    exit. A lock that is no regular file is refused, never waited on."""
    for folder in folders:
        locks = os.path.join(folder, "thread-writer-locks")
        for name in sorted(n for n in files.listdir(locks) if session_id in n):
            path = os.path.join(locks, name)
            with files.open_regular(path, folders, files.SMALL_CAP) as f:
                try:
                    fcntl.flock(f.fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                except BlockingIOError:
                    return f"its writer lock {path} is held"
                fcntl.flock(f.fd, fcntl.LOCK_UN)
                pid = _pid(f.read(f.size, 0))
                if alive(pid, f.mtime, WORDS):
                    return f"pid {pid} holds {path}"
    return ""


def _pid(raw: bytes) -> int | None:
    """The pid a lock file records: a number, or a JSON object's ``pid``."""
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if isinstance(value, dict):
        value = value.get("pid")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class Chat(Base):
    """The user messages a resume rebuilds (each ``UserMessage`` item's id, less the newest
    ``num_turns`` at each rollback), the newest ordinal and release."""

    def __init__(self, key: str, size: int, prompt: str, when: str):
        super().__init__(key, size, prompt, when)
        self.messages: list[str] = []
        self.ordinal = 0
        self.turn: str | None = None  # the turn the records belong to now

    def feed(self, record: dict[str, Any], at: int) -> None:
        ordinal = record.get("ordinal")
        if isinstance(ordinal, int) and not isinstance(ordinal, bool):
            self.ordinal = max(self.ordinal, ordinal)
        kind, payload = record.get("type"), obj(record.get("payload"))
        event = payload.get("type") if kind == "event_msg" else None
        if kind == "session_meta":
            self.version = release(payload.get("cli_version"))
        elif kind == "turn_context":
            self.turn = string(payload.get("turn_id")) or self.turn
        elif event == "task_started":
            self.turn = string(obj(payload.get("turn_attribution")).get("turn_id")) or self.turn
        elif event == "thread_rolled_back":
            count = payload.get("num_turns")
            if isinstance(count, int) and not isinstance(count, bool) and count > 0:
                del self.messages[max(0, len(self.messages) - count) :]
        elif event == "item_completed" and obj(payload.get("item")).get("type") == "UserMessage":
            self._message(payload, at)
        elif self.target is not None and (kind == "compacted" or event == "context_compacted"):
            self.compaction = True

    def _message(self, payload: dict[str, Any], at: int) -> None:
        # every message counts, as Codex counts it; one without an id is named by its offset
        item_id = string(obj(payload.get("item")).get("id")) or f"@{at}"
        turn = string(payload.get("turn_id")) or self.turn
        self.messages.append(item_id)
        if self.target is None and turn == self.key and at >= self.size:
            self.target, self.target_at = item_id, at

    def live(self) -> list[str]:
        return list(self.messages)

    def rewind_record(self, session_id: str) -> str:
        """``thread_rolled_back`` dropping the turn's message and every later one, with the
        next ordinal."""
        assert self.target is not None
        count = len(self.messages) - self.messages.index(self.target)
        record = {
            "timestamp": stamp(time.time()),
            "ordinal": self.ordinal + 1,
            "type": "event_msg",
            "payload": {"type": "thread_rolled_back", "num_turns": count},
        }
        return dumps(record)
