"""Copilot CLI's session: ``session-state/<id>/events.jsonl``, a linear event log.

Every event has ``id``, ``parentId`` (the event before it), ``type``, ``data`` and
``timestamp``; a turn starts with ``user.message {content}``. Copilot's own /rewind deletes
events from the file and has no record to append, so snapstore forks: a new session folder
whose log is the old one cut before the turn's ``user.message``, under a new id, with the
old folder's ``workspace.yaml``; ``copilot --resume <new id>`` resumes it. The hooks carry no
message id: the turn is the first ``user.message`` with the prompt's text at or after the
begin hook's time, after the log's size then. Proved with 1.0.102
(docs/integrations/copilot.md).
"""

from __future__ import annotations

import json
import os
from typing import Any

from . import files
from .jsonl import Chat as Base
from .jsonl import obj, release, string
from .liveness import alive

NAME = "copilot"
TITLE = "Copilot CLI"
COMMAND = "copilot"
OWN = "/rewind in Copilot CLI"
#: Its hooks carry no message id: the turn's message is found by its prompt and time.
KEYLESS = True
TESTED = ((1, 0, 102), (1, 0, 102))
#: Where a log lies in the agent's folder: ``session-state/<session>/events.jsonl``.
LAYOUT = (2, "session-state")
WORDS = ("copilot",)
#: Copilot has no rewind record: every rewind is a fork, in every release.
FORK_ALWAYS = True
#: A fork is a session folder of its own: these files go in it beside the log.
FORK_FILES = ("workspace.yaml",)
#: Events that compact the history the model is sent.
COMPACTIONS = ("session.compaction_start", "session.compaction_complete")


def resume_command(session_id: str) -> str:
    return f"copilot --resume {session_id}"


def running(session_id: str, folders: list[str], transcript: str | None) -> str:
    """A live Copilot on the session: its in-use lock ``inuse.<pid>.lock`` in the session's
    folder, whose pid is still the process that made it (only its name and time are
    read)."""
    for folder in folders:
        state = os.path.join(folder, "session-state", session_id)
        for name in sorted(files.listdir(state)):
            head, _, tail = name.partition(".")
            pid = tail.removesuffix(".lock")
            if head != "inuse" or not tail.endswith(".lock") or not pid.isdigit():
                continue
            try:
                made = os.lstat(os.path.join(state, name)).st_mtime
            except OSError:
                continue
            if alive(int(pid), made, WORDS):
                return f"pid {pid}"
    return ""


class Chat(Base):
    """The ``user.message`` ids (the log is replayed whole), the newest release, and the
    session id the log names."""

    def __init__(self, key: str, size: int, prompt: str, when: str):
        super().__init__(key, size, prompt, when)
        self.prompts: list[str] = []
        self.old_id = ""  # the first session.start's sessionId: a fork replaces it

    def feed(self, record: dict[str, Any], at: int) -> None:
        kind, data = record.get("type"), obj(record.get("data"))
        if kind in ("session.start", "session.resume"):
            self.version = release(data.get("copilotVersion")) or self.version
            if kind == "session.start" and not self.old_id:
                self.old_id = string(data.get("sessionId")) or ""
        elif kind == "user.message" and string(record.get("id")):
            self.prompts.append(record["id"])
            content = data.get("content")
            if isinstance(content, str):
                self.locate(record["id"], content, record.get("timestamp"), at)
        elif self.target is not None and kind in COMPACTIONS:
            self.compaction = True

    def live(self) -> list[str]:
        return list(self.prompts)

    def fork_cut(self) -> tuple[int, str]:
        """A fork ends before the turn's ``user.message``; each line's old session id is
        replaced by the new one."""
        return self.target_at, self.old_id


def fork_line(record: dict[str, Any], old: str, new: str) -> str:
    line = json.dumps(record, separators=(",", ":"), ensure_ascii=False)
    return (line.replace(old, new) if old else line) + "\n"


def fork_path(transcript: str, session_id: str) -> str:
    """The fork's log: ``events.jsonl`` in a new folder next to the session's own."""
    state = os.path.dirname(os.path.dirname(transcript))
    return os.path.join(state, session_id, "events.jsonl")


def fork_files(source: str, transcript: str, folders: list[str]) -> tuple[tuple[str, str], ...]:
    """The files a fork's folder needs besides its log, read at the plan (the apply only
    writes): the session's ``workspace.yaml`` (its working folder), the old id (the
    folder's name) replaced by the new one."""
    old, new = (os.path.basename(os.path.dirname(p)) for p in (source, transcript))
    found = []
    for name in FORK_FILES:
        path = os.path.join(os.path.dirname(source), name)
        if not os.path.lexists(path):
            continue
        try:
            text = files.read_small(path, folders).decode()
        except UnicodeDecodeError:
            raise files.refuse(path, "is not UTF-8 text") from None
        found.append((os.path.join(os.path.dirname(transcript), name), text.replace(old, new)))
    return tuple(found)
