"""Qwen Code's transcript: JSONL records chained by ``uuid``/``parentUuid``.

A resume walks back from the leaf, the newest conversation record (system records included,
artifact ones not). Its own /rewind appends a ``system`` record of subtype ``rewind`` whose
``parentUuid`` is the parent of the turn's prompt record, so the prompt and all after it
drop off the branch; snapstore appends the same record. The hooks carry no id found in the
file: the turn is the first user record whose text is the prompt, stamped at or after the
UserPromptSubmit hook's ``timestamp``. Proved with 0.24.4 (docs/integrations/qwen-code.md).
"""

from __future__ import annotations

import json
import os
import time
import uuid
from typing import Any

from . import branch, instant, newest_release, registered

NAME = "qwen-code"
TITLE = "Qwen Code"
COMMAND = "qwen"
OWN = "/rewind in Qwen Code"
TESTED = ((0, 24, 4), (0, 24, 4))
MESSAGES = ("user", "assistant", "tool_result", "system")
#: System records that are not part of the conversation: never the leaf.
OUTSIDE = (
    "session_artifact_event",
    "session_artifact_snapshot",
    "session_sources_snapshot",
    "managed_session_header_v1",
    "managed_session_event_v1",
    "managed_session_commit_v1",
)


def resume_command(session_id: str) -> str:
    return f"qwen --resume {session_id}"


def running(session_id: str, home: str) -> str:
    """A live Qwen Code on the session: its registry of running sessions (what ``qwen
    sessions ps`` lists), ``HOME/sessions/<pid>.json``, names it with a pid that is alive."""
    return registered(os.path.join(home, "sessions"), session_id)


version = newest_release  # the transcript's records carry the release that wrote them


def _text(record: dict[str, Any]) -> str:
    parts = (record.get("message") or {}).get("parts")
    return "".join(
        p["text"] for p in parts or () if isinstance(p, dict) and isinstance(p.get("text"), str)
    )


def _is_prompt(record: dict[str, Any]) -> bool:
    return record.get("type") == "user" and bool(_text(record).strip())


def _chain(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The live branch, oldest first: from the leaf back along ``parentUuid``."""
    by_uuid: dict[str, dict[str, Any]] = {}
    leaf = None
    for record in records:
        if record.get("type") in MESSAGES and isinstance(record.get("uuid"), str):
            by_uuid[record["uuid"]] = record
            if record.get("subtype") not in OUTSIDE:
                leaf = record["uuid"]
    return branch(by_uuid, leaf)


def live(records: list[dict[str, Any]]) -> list[str]:
    """The prompts a resumed session holds, as their ``uuid``s, oldest first."""
    return [r["uuid"] for r in _chain(records) if _is_prompt(r)]


def locate(records: list[dict[str, Any]], prompt: str, when: str) -> str | None:
    """The uuid of the first user record with the prompt's text stamped at or after
    ``when`` (equal prompts are never counted: the time tells them apart)."""
    start = instant(when)
    if start is None:
        return None
    for record in records:
        stamp = instant(record.get("timestamp"))
        if _is_prompt(record) and _text(record) == prompt and stamp is not None and stamp >= start:
            return record.get("uuid")
    return None


def mentions(records: list[dict[str, Any]], key: str) -> bool:
    return any(r.get("uuid") == key and _is_prompt(r) for r in records)


def compacted_after(records: list[dict[str, Any]], key: str) -> bool:
    """Whether a ``chat_compression`` record comes after the turn's prompt record."""
    at = next((i for i, r in enumerate(records) if r.get("uuid") == key), len(records))
    return any(
        r.get("type") == "system" and r.get("subtype") == "chat_compression"
        for r in records[at + 1 :]
    )


def rewind_record(records: list[dict[str, Any]], key: str, session_id: str) -> str:
    """The ``system`` ``rewind`` record Qwen Code's own /rewind appends: its parent is the
    parent of the turn's prompt, so the branch ends just before it."""
    chain = _chain(records)
    at = next(i for i, r in enumerate(chain) if r.get("uuid") == key)
    prompt = chain[at]
    now = time.time()
    record = {
        "uuid": str(uuid.uuid4()),
        "parentUuid": prompt.get("parentUuid"),
        "sessionId": session_id,
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now))
        + f".{int(now % 1 * 1000):03d}Z",
        "type": "system",
        "cwd": prompt.get("cwd"),
        "version": prompt.get("version"),
        "subtype": "rewind",
        "systemPayload": {"truncatedCount": len(chain) - at},
    }
    return json.dumps(record, separators=(",", ":"), ensure_ascii=False) + "\n"
