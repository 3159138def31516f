"""Gemini CLI's chat: JSONL records replayed by message ``id``.

A message record seen again updates the one with its id in place; ``{"$set": {"messages":
[...]}}`` replaces the whole history (Gemini writes one at every start, and after
compression); ``{"$rewindTo": id}`` drops that message and everything after it, which is what
its own /rewind appends. An id the replay does not know clears the whole history, so the
target is always checked against the replay first. The hooks carry no message id: the turn is
the first user message whose text is the prompt, stamped at or after the BeforeAgent hook's
``timestamp``. Gemini CLI 0.61.0 writes no release into the chat, so the gate is the format:
a first line of session metadata (``sessionId``, ``projectHash``, ``kind``), the chat format
whose loader was proved to honour ``$rewindTo`` (docs/integrations/gemini-cli.md).
"""

from __future__ import annotations

import glob
import os
from typing import Any

from . import files
from .jsonl import Chat as Base
from .jsonl import dumps, listed
from .liveness import processes

NAME = "gemini-cli"
TITLE = "Gemini CLI"
COMMAND = "gemini"
OWN = "/rewind in Gemini CLI"
#: Its hooks carry no message id: the turn's message is found by its prompt and time.
KEYLESS = True
TESTED = ((0, 61, 0), (0, 61, 0))
#: Where a chat lies in the agent's folder: ``tmp/<project>/chats/session-….jsonl``.
LAYOUT = (3, "tmp")
#: The programs a live Gemini CLI runs as (``node …/gemini`` or ``…/bundle/gemini.js``).
WORDS = ("gemini", "gemini.js")
#: What a user message starting so is to the loader: no prompt (commands, injected context).
IGNORED = ("/", "?", "<session_context>", "<hook_context>")


def resume_command(session_id: str) -> str:
    return f"gemini --resume {session_id}"


def running(session_id: str, folders: list[str], transcript: str | None) -> str:
    """A live Gemini CLI in the session's project. Gemini CLI keeps no registry of running
    sessions, so the process list stands for one: a process running ``gemini`` whose
    working folder is the project (``tmp/<project>/.project_root``) that holds the
    session's chat (the transcript's, or any chat of the session in the agent's folders)."""
    if transcript is not None:
        projects = [os.path.dirname(os.path.dirname(transcript))]
    else:
        pattern = f"session-*-{glob.escape(session_id[:8])}*.jsonl"
        projects = [
            os.path.dirname(chats)
            for folder in folders
            for chats in glob.glob(os.path.join(glob.escape(folder), "tmp", "*", "chats"))
            if glob.glob(os.path.join(glob.escape(chats), pattern))
        ]
    roots = set()
    for project in projects:
        marker = os.path.join(project, ".project_root")
        if os.path.lexists(marker):
            text = files.read_small(marker, folders).decode("utf-8", "replace").strip()
            roots.add(os.path.realpath(text))
    for pid, cwd in processes(WORDS) if roots else ():
        if cwd in roots:
            return f"pid {pid} in {cwd}"
    return ""


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "".join(
        p["text"] for p in listed(content) if isinstance(p, dict) and isinstance(p.get("text"), str)
    )


def _is_prompt(message: dict[str, Any]) -> bool:
    """A prompt the user typed: a user message with text that the loader resumes."""
    text = _text(message).strip()
    return message.get("type") == "user" and bool(text) and not text.startswith(IGNORED)


class Chat(Base):
    """The replay (``loadConversationRecord``): each message id in order, and whether it is a
    prompt; the target's fate (a checkpoint without it is a compaction, a ``$rewindTo``
    the user's own rewind)."""

    def __init__(self, key: str, size: int, prompt: str, when: str):
        super().__init__(key, size, prompt, when)
        self.messages: dict[str, bool] = {}  # id -> a prompt
        self.first = True
        self.rewound = False  # a $rewindTo after the target

    def feed(self, record: dict[str, Any], at: int) -> None:
        if self.first:  # the chat format proved: session metadata first
            self.first = False
            known = all(
                isinstance(record.get(k), str) for k in ("sessionId", "projectHash", "kind")
            )
            self.version = TESTED[1] if known else None
        target = record.get("$rewindTo")
        if isinstance(target, str):
            if target in self.messages:
                ids = list(self.messages)
                for gone in ids[ids.index(target) :]:
                    del self.messages[gone]
            else:
                self.messages.clear()
            self.rewound |= self.target is not None
        elif isinstance(record.get("id"), str):
            self.messages[record["id"]] = _is_prompt(record)
            if record.get("type") == "user" and _is_prompt(record):
                self.locate(record["id"], _text(record), record.get("timestamp"), at)
        elif isinstance(record.get("$set"), dict) or "projectHash" in record:
            update = record.get("$set")
            messages = (update if isinstance(update, dict) and update else record).get("messages")
            if isinstance(messages, list):
                if "$set" in record:
                    self.messages.clear()
                for message in messages:
                    if isinstance(message, dict) and isinstance(message.get("id"), str):
                        self.messages[message["id"]] = _is_prompt(message)

    def compacted(self) -> bool:
        """Whether the history lost the turn's message other than by a rewind: a checkpoint
        (compression, masking) replaced the history without it. Gemini writes a checkpoint
        at every start too, with the whole history: only the replay's end tells."""
        return self.target is not None and self.target not in self.messages and not self.rewound

    def live(self) -> list[str]:
        return [key for key, prompt in self.messages.items() if prompt]

    def rewind_record(self, session_id: str) -> str:
        """``{"$rewindTo": id}``: what Gemini CLI's own /rewind appends."""
        return dumps({"$rewindTo": self.target})
