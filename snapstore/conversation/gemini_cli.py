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
import json
import os
from typing import Any

from . import instant

NAME = "gemini-cli"
TITLE = "Gemini CLI"
COMMAND = "gemini"
OWN = "/rewind in Gemini CLI"
TESTED = ((0, 61, 0), (0, 61, 0))
#: What a user message starting so is to the loader: no prompt (commands, injected context).
IGNORED = ("/", "?", "<session_context>", "<hook_context>")


def resume_command(session_id: str) -> str:
    return f"gemini --resume {session_id}"


def running(session_id: str, home: str) -> str:
    """A live Gemini CLI in the session's project. Gemini CLI keeps no registry of running
    sessions, so the process list stands for one: a process running ``gemini`` whose
    working folder is the project (``HOME/tmp/<project>/.project_root``) that holds the
    session's chat. It can only name a process that is alive; without ``/proc`` it finds
    nothing, and snapstore's own open turn is the signal left (the rewind checks it)."""
    roots = set()
    for chats in glob.glob(os.path.join(glob.escape(home), "tmp", "*", "chats")):
        if glob.glob(os.path.join(glob.escape(chats), f"session-*-{session_id[:8]}*.jsonl")):
            try:
                with open(os.path.join(os.path.dirname(chats), ".project_root")) as f:
                    roots.add(os.path.realpath(f.read().strip()))
            except OSError:
                continue
    for pid, cwd in _gemini_processes():
        if cwd in roots:
            return f"pid {pid} in {cwd}"
    return ""


def _gemini_processes() -> list[tuple[int, str]]:
    """Every process running the ``gemini`` command (``node …/gemini`` or
    ``…/bundle/gemini.js``), with its working folder."""
    found = []
    for name in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")[:2]
            cwd = os.readlink(f"/proc/{name}/cwd")
        except OSError:
            continue
        if any(os.path.basename(arg) in (b"gemini", b"gemini.js") for arg in argv):
            found.append((int(name), os.path.realpath(cwd)))
    return found


def version(records: list[dict[str, Any]]) -> tuple[int, ...] | None:
    """The tested release when the chat is in its format (it records no release)."""
    head = records[0] if records else {}
    known = all(isinstance(head.get(k), str) for k in ("sessionId", "projectHash", "kind"))
    return TESTED[1] if known else None


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "".join(
        p["text"] for p in content or () if isinstance(p, dict) and isinstance(p.get("text"), str)
    )


def _is_prompt(message: dict[str, Any]) -> bool:
    """A prompt the user typed: a user message with text that the loader resumes."""
    text = _text(message).strip()
    return message.get("type") == "user" and bool(text) and not text.startswith(IGNORED)


def _replay(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The messages a resume loads, by id, in order (``loadConversationRecord``)."""
    messages: dict[str, dict[str, Any]] = {}
    for record in records:
        target = record.get("$rewindTo")
        if isinstance(target, str):
            if target in messages:
                ids = list(messages)
                for gone in ids[ids.index(target) :]:
                    del messages[gone]
            else:
                messages.clear()
        elif isinstance(record.get("id"), str):
            messages[record["id"]] = record
        elif isinstance(record.get("$set"), dict) or "projectHash" in record:
            listed = (record.get("$set") or record).get("messages")
            if isinstance(listed, list):
                if "$set" in record:
                    messages.clear()
                for message in listed:
                    if isinstance(message, dict) and isinstance(message.get("id"), str):
                        messages[message["id"]] = message
    return messages


def live(records: list[dict[str, Any]]) -> list[str]:
    """The prompts a resumed session holds, as their message ids, oldest first."""
    return [key for key, message in _replay(records).items() if _is_prompt(message)]


def locate(records: list[dict[str, Any]], prompt: str, when: str) -> str | None:
    """The id of the first user message with the prompt's text stamped at or after ``when``
    (equal prompts are never counted: the time tells them apart)."""
    start = instant(when)
    if start is None:
        return None
    for record in records:
        stamp = instant(record.get("timestamp"))
        if (
            isinstance(record.get("id"), str)
            and _is_prompt(record)
            and _text(record) == prompt
            and stamp is not None
            and stamp >= start
        ):
            return record["id"]
    return None


def mentions(records: list[dict[str, Any]], key: str) -> bool:
    return any(r.get("id") == key and r.get("type") == "user" for r in records)


def compacted_after(records: list[dict[str, Any]], key: str) -> bool:
    """Whether the history lost the turn's message other than by a rewind: a checkpoint
    (compression, masking) replaced the history without it. Gemini writes a checkpoint at
    every start too, with the whole history: only the replay's end tells."""
    at = next((i for i, r in enumerate(records) if r.get("id") == key), len(records))
    rewound = any(isinstance(r.get("$rewindTo"), str) for r in records[at + 1 :])
    return key not in _replay(records) and not rewound


def rewind_record(records: list[dict[str, Any]], key: str, session_id: str) -> str:
    """``{"$rewindTo": id}``: what Gemini CLI's own /rewind appends."""
    return json.dumps({"$rewindTo": key}, separators=(",", ":")) + "\n"
