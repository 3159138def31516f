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

from . import instant, pid_alive, release

NAME = "copilot"
TITLE = "Copilot CLI"
COMMAND = "copilot"
OWN = "/rewind in Copilot CLI"
TESTED = ((1, 0, 102), (1, 0, 102))
#: Copilot has no rewind record: every rewind is a fork, in every release.
FORK_ALWAYS = True
#: Events that compact the history the model is sent.
COMPACTIONS = ("session.compaction_start", "session.compaction_complete")


def resume_command(session_id: str) -> str:
    return f"copilot --resume {session_id}"


def running(session_id: str, home: str) -> str:
    """A live Copilot on the session: its in-use lock ``inuse.<pid>.lock`` in the session's
    folder, whose pid is alive (the file outlives a killed process: the pid decides)."""
    folder = os.path.join(home, "session-state", session_id)
    try:
        names = os.listdir(folder)
    except OSError:
        return ""
    for name in names:
        head, _, tail = name.partition(".")
        pid = tail.removesuffix(".lock")
        if head == "inuse" and tail.endswith(".lock") and pid.isdigit() and pid_alive(int(pid)):
            return f"pid {pid}"
    return ""


def version(records: list[dict[str, Any]]) -> tuple[int, ...] | None:
    """The newest release that started or resumed the session."""
    for record in reversed(records):
        if record.get("type") in ("session.start", "session.resume"):
            found = release((record.get("data") or {}).get("copilotVersion"))
            if found is not None:
                return found
    return None


def _prompts(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in records if r.get("type") == "user.message" and r.get("id")]


def locate(records: list[dict[str, Any]], prompt: str, when: str) -> str | None:
    """The id of the first ``user.message`` whose text is ``prompt``, stamped at or after
    ``when`` (an equal prompt earlier is another turn; equal prompts are never counted)."""
    since = instant(when)
    if since is None:
        return None
    for record in _prompts(records):
        stamp = instant(record.get("timestamp"))
        content = (record.get("data") or {}).get("content")
        if content == prompt and stamp is not None and stamp >= since:
            return record["id"]
    return None


def mentions(records: list[dict[str, Any]], key: str) -> bool:
    return any(r["id"] == key for r in _prompts(records))


def live(records: list[dict[str, Any]]) -> list[str]:
    """The prompts a resumed session holds, as their event ids, oldest first: the log is
    replayed whole."""
    return [r["id"] for r in _prompts(records)]


def compacted_after(records: list[dict[str, Any]], key: str) -> bool:
    ids = [r.get("id") for r in records]
    at = ids.index(key) if key in ids else len(records)
    return any(r.get("type") in COMPACTIONS for r in records[at + 1 :])


def fork_path(transcript: str, session_id: str) -> str:
    """The fork's log: ``events.jsonl`` in a new folder next to the session's own."""
    state = os.path.dirname(os.path.dirname(transcript))
    return os.path.join(state, session_id, "events.jsonl")


def fork(records: list[dict[str, Any]], key: str, session_id: str) -> str:
    """The fork's log: the events before the turn's ``user.message``, the session's id
    replaced by the new one wherever an event holds it."""
    ids = [r.get("id") for r in records]
    kept = records[: ids.index(key)]
    old = next(
        ((r.get("data") or {}).get("sessionId") for r in kept if r.get("type") == "session.start"),
        None,
    )
    lines = [json.dumps(r, separators=(",", ":"), ensure_ascii=False) for r in kept]
    if isinstance(old, str) and old:
        lines = [line.replace(old, session_id) for line in lines]
    return "".join(line + "\n" for line in lines)


def fork_files(source: str, transcript: str) -> dict[str, bytes]:
    """The files a fork's folder needs besides its log: the session's ``workspace.yaml``
    (its working folder), with the old id replaced by the new one."""
    old = os.path.basename(os.path.dirname(source))
    new = os.path.basename(os.path.dirname(transcript))
    try:
        with open(os.path.join(os.path.dirname(source), "workspace.yaml"), "rb") as f:
            raw = f.read()
    except OSError:
        return {}
    path = os.path.join(os.path.dirname(transcript), "workspace.yaml")
    return {path: raw.replace(old.encode(), new.encode())}
