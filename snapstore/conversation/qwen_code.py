"""Qwen Code's transcript: JSONL records chained by ``uuid``/``parentUuid``.

A resume walks back from the leaf, the newest conversation record (system records included,
artifact ones not). Its own /rewind appends a ``system`` record of subtype ``rewind`` whose
``parentUuid`` is the parent of the turn's prompt record, so the prompt and all after it
drop off the branch; snapstore appends the same record. The hooks carry no id found in the
file: the turn is the first user record whose text is the prompt, stamped at or after the
UserPromptSubmit hook's ``timestamp``. The transcript lies in Qwen Code's runtime folder
(``QWEN_RUNTIME_DIR``, else its home ``QWEN_HOME`` or ``~/.qwen``), its registry of running
sessions in its home. Proved with 0.24.4 (docs/integrations/qwen-code.md).
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from .jsonl import Chat as Base
from .jsonl import branch, dumps, listed, obj, release, stamp, string
from .liveness import registered

NAME = "qwen-code"
TITLE = "Qwen Code"
COMMAND = "qwen"
OWN = "/rewind in Qwen Code"
#: Its hooks carry no message id: the turn's message is found by its prompt and time.
KEYLESS = True
TESTED = ((0, 24, 4), (0, 24, 4))
#: Where a transcript lies in the agent's folder: ``projects/<project>/chats/<session>.jsonl``.
LAYOUT = (3, "projects")
#: What a live Qwen Code's command holds (``node …/qwen-code/cli.js``, or ``qwen``).
WORDS = ("qwen",)
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


def running(session_id: str, folders: list[str], transcript: str | None) -> str:
    """A live Qwen Code on the session: its registry of running sessions (what ``qwen
    sessions ps`` lists), ``sessions/<pid>.json``, names it with a pid that is still the
    process that wrote it."""
    return registered(folders, session_id, WORDS)


def _text(record: dict[str, Any]) -> str:
    parts = obj(record.get("message")).get("parts")
    return "".join(
        p["text"] for p in listed(parts) if isinstance(p, dict) and isinstance(p.get("text"), str)
    )


class Chat(Base):
    """The record tree as ids and links (each record's parent, whether it is a prompt), its
    leaf, and the turn's prompt; what a rewind record copies from the prompt."""

    def __init__(self, key: str, size: int, prompt: str, when: str):
        super().__init__(key, size, prompt, when)
        self.parents: dict[str, str | None] = {}
        self.prompts: set[str] = set()
        self.leaf: str | None = None
        self.copied: dict[str, Any] = {}  # the target's cwd and version

    def feed(self, record: dict[str, Any], at: int) -> None:
        found = release(record.get("version"))
        if found is not None:
            self.version = found
        kind, uid = record.get("type"), string(record.get("uuid"))
        if kind not in MESSAGES or uid is None:
            return
        self.parents[uid] = string(record.get("parentUuid"))
        if record.get("subtype") not in OUTSIDE:
            self.leaf = uid
        text = _text(record) if kind == "user" else ""
        if text.strip():
            self.prompts.add(uid)
            self.locate(uid, text, record.get("timestamp"), at)
            if self.target == uid and not self.copied:
                self.copied = {k: record.get(k) for k in ("cwd", "version")}
        elif self.target is not None and kind == "system":
            self.compaction |= record.get("subtype") == "chat_compression"

    def _chain(self) -> list[str]:
        return branch(self.parents, self.leaf)

    def live(self) -> list[str]:
        """The prompts a resumed session holds, as their ``uuid``s, oldest first."""
        return [u for u in self._chain() if u in self.prompts]

    def rewind_record(self, session_id: str) -> str:
        """The ``system`` ``rewind`` record Qwen Code's own /rewind appends: its parent is the
        parent of the turn's prompt, so the branch ends just before it."""
        chain = self._chain()
        assert self.target is not None
        record = {
            "uuid": str(uuid.uuid4()),
            "parentUuid": self.parents[self.target],
            "sessionId": session_id,
            "timestamp": stamp(time.time()),
            "type": "system",
            "cwd": self.copied["cwd"],
            "version": self.copied["version"],
            "subtype": "rewind",
            "systemPayload": {"truncatedCount": len(chain) - chain.index(self.target)},
        }
        return dumps(record)
