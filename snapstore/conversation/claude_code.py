"""Claude Code's transcript: JSONL records chained by ``uuid``/``parentUuid``.

The session resumes from a leaf: the newest ``last-prompt`` record's ``leafUuid``, or the
newest message written after it. Its own /rewind appends ``last-prompt`` with ``rewound``
and the anchor (the message before the turn's prompt) as the leaf; snapstore appends the
same record. A turn's prompt record carries ``promptId``, the UserPromptSubmit hook's
``prompt_id``. Proved with 2.1.197 and 2.1.332 (docs/integrations/claude-code.md); other
releases get a fork, a new session cut before the turn, which Claude Code resumes as its own
``--fork-session`` makes it.
"""

from __future__ import annotations

import json
import os
from typing import Any

from . import branch, newest_release, registered

NAME = "claude-code"
TITLE = "Claude Code"
COMMAND = "claude"
OWN = "/rewind in Claude Code"
TESTED = ((2, 1, 197), (2, 1, 332))
#: Message records: they chain, and the newest is the leaf a resume walks back from.
MESSAGES = ("user", "assistant", "attachment", "system")


def resume_command(session_id: str) -> str:
    return f"claude --resume {session_id}"


def running(session_id: str, home: str) -> str:
    """A live Claude Code on the session: ``HOME/sessions/<pid>.json`` names it with a pid
    that is alive (the file outlives a killed process: the pid decides)."""
    return registered(os.path.join(home, "sessions"), session_id)


version = newest_release  # the transcript's records carry the release that wrote them


def _is_prompt(record: dict[str, Any]) -> bool:
    """A prompt the user typed: not a tool result, not meta, not a compaction summary."""
    if record.get("type") != "user" or not record.get("promptId"):
        return False
    if record.get("isMeta") or record.get("isCompactSummary") or record.get("isSidechain"):
        return False
    content = (record.get("message") or {}).get("content")
    if isinstance(content, list):
        return not any(isinstance(p, dict) and p.get("type") == "tool_result" for p in content)
    return isinstance(content, str)


def _prompt(records: list[dict[str, Any]], key: str) -> dict[str, Any] | None:
    return next((r for r in records if _is_prompt(r) and r.get("promptId") == key), None)


def mentions(records: list[dict[str, Any]], key: str) -> bool:
    return _prompt(records, key) is not None


def _chain(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The live branch, oldest first: from the leaf back along ``parentUuid``."""
    by_uuid: dict[str, dict[str, Any]] = {}
    leaf = None
    for record in records:
        if record.get("type") == "last-prompt" and record.get("leafUuid"):
            leaf = record["leafUuid"]
        elif record.get("type") in MESSAGES and record.get("uuid"):
            by_uuid[record["uuid"]] = record
            if not record.get("isSidechain"):
                leaf = record["uuid"]
    return branch(by_uuid, leaf)


def live(records: list[dict[str, Any]]) -> list[str]:
    """The prompts a resumed session holds, as their ``promptId``s, oldest first."""
    return [r["promptId"] for r in _chain(records) if _is_prompt(r)]


def compacted_after(records: list[dict[str, Any]], key: str) -> bool:
    """Whether a ``compact_boundary`` comes after the turn's prompt record."""
    prompt = _prompt(records, key)
    at = records.index(prompt) if prompt is not None else len(records)
    return any(
        r.get("type") == "system" and r.get("subtype") == "compact_boundary"
        for r in records[at + 1 :]
    )


def rewind_record(records: list[dict[str, Any]], key: str, session_id: str) -> str:
    """The ``last-prompt`` record Claude Code's own /rewind appends: the leaf is the anchor,
    the nearest user or assistant message before the turn's prompt."""
    chain = _chain(records)
    at = next(i for i, r in enumerate(chain) if _is_prompt(r) and r.get("promptId") == key)
    anchor = next(r for r in reversed(chain[:at]) if r.get("type") in ("user", "assistant"))
    last = next(r for r in reversed(chain[:at]) if _is_prompt(r))
    record = {
        "type": "last-prompt",
        "lastPrompt": _text(last),
        "leafUuid": anchor["uuid"],
        "explicit": True,
        "rewound": True,
        "cutUuid": chain[at]["uuid"],
        "sessionId": session_id,
    }
    return json.dumps(record, separators=(",", ":"), ensure_ascii=False) + "\n"


def fork(records: list[dict[str, Any]], key: str, session_id: str) -> str:
    """A new session's transcript: the records before the turn's prompt, without the queue
    records that hold its text, under the new session id (what ``--fork-session`` does, cut
    at a turn). It does not depend on ``last-prompt`` semantics: the way for releases not
    tested with the appended record."""
    prompt = _prompt(records, key)
    kept = records[: records.index(prompt)] if prompt is not None else []
    while kept and kept[-1].get("type") == "queue-operation":
        kept.pop()
    return "".join(
        json.dumps(
            {**r, "sessionId": session_id} if "sessionId" in r else r,
            separators=(",", ":"),
            ensure_ascii=False,
        )
        + "\n"
        for r in kept
    )


def _text(record: dict[str, Any]) -> str:
    content = (record.get("message") or {}).get("content")
    if isinstance(content, str):
        return content
    return "".join(
        p.get("text", "") for p in content or () if isinstance(p, dict) and p.get("type") == "text"
    )
