"""An agent's JSONL transcript read as untrusted records: one line at a time, each field taken
only when it has the type the agent writes.

A record is fed to the agent's :class:`Chat` (its module's model of the agent's loader) as it
is read, and never kept: the model keeps only what it needs (the ids and links of the
messages, their offsets), so a transcript's size costs time, not memory. A field of the wrong
type (an id that is a list, a parent that is a number) reads as absent: the record is then no
message the model counts, as the agent's own loader does not find it either.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from .files import Opened, refuse


def records(opened: Opened, start: int = 0, end: int | None = None) -> Iterator[tuple[int, dict]]:
    """Each JSON object of the transcript between two offsets, with its offset. A line that is
    no JSON object (a write cut short) is skipped, as the agents' own loaders skip it."""
    for at, line in opened.lines(start, end):
        try:
            record = json.loads(line)
        except ValueError:
            continue
        except RecursionError:  # the agents' JSON parsers nest deeper: it cannot be modelled
            raise refuse(opened.path, f"has a record nested too deeply at byte {at}") from None
        if isinstance(record, dict):
            yield at, record


def dumps(record: Mapping[str, Any]) -> str:
    """One record as a JSONL line, as the agents write them (compact, UTF-8 kept)."""
    return json.dumps(record, separators=(",", ":"), ensure_ascii=False) + "\n"


def obj(value: Any) -> dict[str, Any]:
    """A field that must be an object ({} when it is anything else)."""
    return value if isinstance(value, dict) else {}


def string(value: Any) -> str | None:
    """A field that must be a string, such as an id (None when it is anything else)."""
    return value if isinstance(value, str) else None


def listed(value: Any) -> list[Any]:
    """A field that must be a list ([] when it is anything else)."""
    return value if isinstance(value, list) else []


def release(text: Any) -> tuple[int, ...] | None:
    """A version string such as ``2.1.332`` as numbers (None when it is none)."""
    if not isinstance(text, str):
        return None
    try:
        return tuple(int(part) for part in text.split("-")[0].split("."))
    except ValueError:
        return None


def instant(text: Any) -> float | None:
    """An ISO 8601 time such as ``2026-12-01T16:16:11.655Z`` as seconds (None: none)."""
    if not isinstance(text, str):
        return None
    from datetime import datetime  # (uuid and datetime cost a rewind a few ms to load)

    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def iso(seconds: float) -> str:
    """``seconds`` since the epoch as the ISO 8601 time :func:`instant` reads: a turn's own
    time, for an agent whose begin hook stamped none."""
    from datetime import datetime, timezone

    return datetime.fromtimestamp(seconds, timezone.utc).isoformat()


def stamp(seconds: float) -> str:
    """A record's time as the agents stamp theirs (``2026-12-01T16:16:11.655Z``)."""
    import time

    whole = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
    return f"{whole}.{int(seconds % 1 * 1000):03d}Z"


def branch(parents: Mapping[str, str | None], leaf: str | None) -> list[str]:
    """The ids from ``leaf`` back along their parents, oldest first (Claude Code and Qwen Code
    link a transcript's messages so); a cycle, or a missing parent, ends it."""
    chain: list[str] = []
    seen: set[str] = set()
    while leaf is not None and leaf in parents and leaf not in seen:
        seen.add(leaf)
        chain.append(leaf)
        leaf = parents[leaf]
    return chain[::-1]


class Chat:
    """A model of how the agent loads its transcript, fed one record at a time.

    ``key`` is the turn's key from the agent's hooks ("" when they carry none), ``size`` the
    transcript's size at the turn's begin hook (the turn's message lies after it), and
    ``prompt`` and ``when`` the turn's text and the begin hook's time: for agents whose hooks
    carry no key, the turn's message is the first user message after ``size`` with the
    prompt's text stamped at or after ``when``. Once fed, ``target`` is the id of that message
    (the id :meth:`live` lists it by) and :meth:`compacted` says whether the agent compacted
    the history after it.
    """

    def __init__(self, key: str, size: int, prompt: str, when: str):
        self.key = key
        self.size = size
        self.prompt = prompt
        self.since = instant(when)
        self.target: str | None = None
        self.target_at = -1  # the target's offset
        self.compaction = False  # a compaction record came after the target
        self.version: tuple[int, ...] | None = None

    def feed(self, record: dict[str, Any], at: int) -> None:
        raise NotImplementedError

    def compacted(self) -> bool:
        """Whether the agent compacted the history after the turn's message: a rewind to
        before it would bring the whole old history back."""
        return self.compaction

    def live(self) -> list[str]:
        """The user messages a resumed session holds, oldest first, by their ids."""
        raise NotImplementedError

    def rewind_record(self, session_id: str) -> str:
        """The agent's own rewind record, taking the history back to before the target."""
        raise NotImplementedError

    def locate(self, message_id: str | None, text: str, stamped: Any, at: int) -> None:
        """Take a user message as the turn's when it is the first after the begin hook's
        offset with the prompt's text, stamped at or after the hook's time (an equal prompt
        earlier is another turn: the time tells them apart)."""
        if self.target is not None or self.key or message_id is None or at < self.size:
            return
        if text != self.prompt or self.since is None:
            return
        when = instant(stamped)
        if when is not None and when >= self.since:
            self.target, self.target_at = message_id, at
