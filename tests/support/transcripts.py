"""Agent transcripts shaped as Claude Code 2.1.332 and Codex 0.171.0 write them, reduced to the
records a conversation rewind reads (tests/e2e/test_conversation.py runs the real CLIs)."""

from __future__ import annotations

import json
from pathlib import Path

from snapstore import Store

from . import agent_write

PROMPTS = ("write notes", "change notes", "append to notes")


def claude_transcript(path: Path, turns: int, version: str = "2.1.332") -> None:
    """A Claude Code transcript: per turn a prompt record, an answer, a ``last-prompt``."""
    lines, parent = [], None
    for i in range(turns):
        lines.append(
            {
                "type": "user",
                "uuid": f"u{i}",
                "parentUuid": parent,
                "promptId": f"p{i}",
                "message": {"role": "user", "content": PROMPTS[i]},
                "version": version,
                "sessionId": "sid",
            }
        )
        answer = {"type": "text", "text": f"done {i}"}
        lines.append(
            {
                "type": "assistant",
                "uuid": f"a{i}",
                "parentUuid": f"u{i}",
                "message": {"content": [answer]},
            }
        )
        lines.append({"type": "last-prompt", "lastPrompt": PROMPTS[i], "leafUuid": f"a{i}"})
        parent = f"a{i}"
    with open(path, "a") as f:
        f.writelines(json.dumps(r) + "\n" for r in lines)


def codex_rollout(path: Path, turns: int, version: str = "0.171.0") -> None:
    """A Codex rollout: ``session_meta``, then per turn ``task_started`` and ``turn_context``."""
    lines = [{"ordinal": 0, "type": "session_meta", "payload": {"cli_version": version}}]
    for i in range(turns):
        started = {"type": "task_started", "turn_attribution": {"turn_id": f"t{i}"}}
        lines.append({"type": "event_msg", "payload": started})
        lines.append({"type": "turn_context", "payload": {"turn_id": f"t{i}"}})
    for n, record in enumerate(lines):
        record["ordinal"] = n
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))


def session_of(store: Store, agent: str, transcript: Path, turns: int = 3) -> str:
    """An agent's session of ``turns`` turns, each writing notes.txt, recorded with the agent's
    key and its transcript (as the begin hook records them)."""
    session = f"{agent}/sid"
    key = "p" if agent == "claude-code" else "t"
    for i in range(turns):
        store.begin_turn(session, PROMPTS[i], f"{key}{i}", transcript=str(transcript))
        agent_write(store, "notes.txt", f"version {i}\n", session=session)
        store.end_turn(session)
    return session
