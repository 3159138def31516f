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

from typing import Any

from .files import Opened
from .jsonl import Chat as Base
from .jsonl import branch, dumps, listed, obj, records, release, string
from .liveness import registered

NAME = "claude-code"
TITLE = "Claude Code"
COMMAND = "claude"
OWN = "/rewind in Claude Code"
TESTED = ((2, 1, 197), (2, 1, 332))
#: Where a transcript lies in the agent's folder: ``projects/<project>/<session>.jsonl``.
LAYOUT = (2, "projects")
#: What a live Claude Code's command holds (its native binary, or ``node …/claude-code``).
WORDS = ("claude",)
#: Message records: they chain, and the newest is the leaf a resume walks back from.
MESSAGES = ("user", "assistant", "attachment", "system")


def resume_command(session_id: str) -> str:
    return f"claude --resume {session_id}"


def running(session_id: str, folders: list[str], transcript: str | None) -> str:
    """A live Claude Code on the session: ``sessions/<pid>.json`` in its folder names it with
    a pid that is still the process that wrote it."""
    return registered(folders, session_id, WORDS)


def _is_prompt(record: dict[str, Any]) -> bool:
    """A prompt the user typed: not a tool result, not meta, not a compaction summary."""
    if record.get("type") != "user" or not string(record.get("promptId")):
        return False
    if record.get("isMeta") or record.get("isCompactSummary") or record.get("isSidechain"):
        return False
    content = obj(record.get("message")).get("content")
    if isinstance(content, list):
        return not any(isinstance(p, dict) and p.get("type") == "tool_result" for p in content)
    return isinstance(content, str)


def _text(record: dict[str, Any]) -> str:
    content = obj(record.get("message")).get("content")
    if isinstance(content, str):
        return content
    return "".join(
        p["text"]
        for p in listed(content)
        if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
    )


class Chat(Base):
    """The message tree as ids and links (each message's parent, kind and offset), its leaf,
    and where the turn's prompt is."""

    def __init__(self, key: str, size: int, prompt: str, when: str):
        super().__init__(key, size, prompt, when)
        self.parents: dict[str, str | None] = {}
        self.kinds: dict[str, tuple[str, str | None, int]] = {}  # type, promptId, offset
        self.leaf: str | None = None
        self.opened: Opened | None = None  # the file, to read the anchor's prompt again
        self.target_uuid = ""
        self.queued_from = -1  # the offset of the queue records just before this one
        self.cut = 0  # a fork ends here: before the prompt, and the queue records with it

    def feed(self, record: dict[str, Any], at: int) -> None:
        kind = record.get("type")
        found = release(record.get("version"))
        if found is not None:
            self.version = found
        if kind == "queue-operation":
            self.queued_from = at if self.queued_from < 0 else self.queued_from
            return
        queued, self.queued_from = self.queued_from, -1
        if kind == "last-prompt":
            leaf = string(record.get("leafUuid"))
            self.leaf = leaf or self.leaf
            return
        uuid = string(record.get("uuid"))
        if kind not in MESSAGES or not uuid:
            return
        prompt = _is_prompt(record)
        prompt_id = string(record.get("promptId")) if prompt else None
        self.parents[uuid] = string(record.get("parentUuid"))
        self.kinds[uuid] = (str(kind), prompt_id, at)
        if not record.get("isSidechain"):
            self.leaf = uuid
        if self.target is None and prompt_id == self.key and at >= self.size:
            self.target, self.target_at, self.target_uuid = prompt_id, at, uuid
            self.cut = queued if queued >= 0 else at
        elif self.target is not None and kind == "system":
            self.compaction |= record.get("subtype") == "compact_boundary"

    def _chain(self) -> list[str]:
        return branch(self.parents, self.leaf)

    def live(self) -> list[str]:
        """The prompts a resumed session holds, as their ``promptId``s, oldest first."""
        return [p for p in (self.kinds[u][1] for u in self._chain()) if p is not None]

    def rewind_record(self, session_id: str) -> str:
        """The ``last-prompt`` record Claude Code's own /rewind appends: the leaf is the
        anchor, the nearest user or assistant message before the turn's prompt."""
        chain = self._chain()
        at = next(i for i, u in enumerate(chain) if self.kinds[u][1] == self.target)
        before = chain[:at][::-1]
        anchor = next(u for u in before if self.kinds[u][0] in ("user", "assistant"))
        last = next(u for u in before if self.kinds[u][1] is not None)
        record = {
            "type": "last-prompt",
            "lastPrompt": self._text_at(self.kinds[last][2]),
            "leafUuid": anchor,
            "explicit": True,
            "rewound": True,
            "cutUuid": chain[at],
            "sessionId": session_id,
        }
        return dumps(record)

    def _text_at(self, offset: int) -> str:
        """The text of the prompt recorded at ``offset``, read again (never kept)."""
        assert self.opened is not None
        for _, record in records(self.opened, offset, self.opened.size):
            return _text(record)
        return ""

    def fork_cut(self) -> tuple[int, str]:
        """Where a fork ends (before the prompt, and the queue records that hold its text),
        and the old session id its lines replace ("": each record's ``sessionId`` is set)."""
        return self.cut, ""


def fork_line(record: dict[str, Any], old: str, new: str) -> str:
    """A record of the fork: as it was, under the new session id (what ``--fork-session``
    does, cut at a turn). It does not depend on ``last-prompt`` semantics: the way for
    releases not tested with the appended record."""
    return dumps({**record, "sessionId": new} if "sessionId" in record else record)
