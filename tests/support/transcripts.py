"""Agent transcripts shaped as Claude Code 2.1.332, Codex 0.171.0, Gemini CLI 0.61.0, Qwen Code
0.24.4, Copilot CLI 1.0.102 and opencode 1.18.33 (its export) write them, reduced to the records
a conversation rewind reads (tests/e2e/test_conversation*.py run the real CLIs)."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
from collections.abc import Iterator, Mapping
from datetime import datetime, timezone
from pathlib import Path
from types import ModuleType
from typing import Any

from snapstore import Store

from . import agent_write

PROMPTS = ("write notes", "change notes", "append to notes")


def claude_turn(
    path: Path, i: int, version: str = "2.1.332", *, sid: str = "sid", text: str | None = None
) -> None:
    """Claude Code's records of turn ``i`` of session ``sid``: its prompt record (``text``, or
    ``PROMPTS[i]``), an answer, a ``last-prompt``."""
    text = PROMPTS[i] if text is None else text
    prompt = {
        "type": "user",
        "uuid": f"u{i}",
        "parentUuid": f"a{i - 1}" if i else None,
        "promptId": f"p{i}",
        "message": {"role": "user", "content": text},
        "version": version,
        "sessionId": sid,
    }
    answer = {
        "type": "assistant",
        "uuid": f"a{i}",
        "parentUuid": f"u{i}",
        "message": {"content": [{"type": "text", "text": f"done {i}"}]},
    }
    leaf = {"type": "last-prompt", "lastPrompt": text, "leafUuid": f"a{i}"}
    _append(path, [prompt, answer, leaf])


def codex_turn(path: Path, i: int, version: str = "0.171.0", steered: int = 0) -> None:
    """Codex's records of turn ``i`` (after ``session_meta`` for the first): ``task_started``,
    ``turn_context`` and the completed ``UserMessage`` item of its prompt (and of each of
    ``steered`` more messages the user steered it with), each with the next ordinal."""
    started = {"type": "task_started", "turn_attribution": {"turn_id": f"t{i}"}}
    records = [
        {"type": "event_msg", "payload": started},
        {"type": "turn_context", "payload": {"turn_id": f"t{i}"}},
    ]
    for n in range(1 + steered):
        item = {"type": "UserMessage", "id": f"m{i}" + "s" * n}
        completed = {"type": "item_completed", "turn_id": f"t{i}", "item": item}
        records.append({"type": "event_msg", "payload": completed})
    if i == 0:
        records.insert(0, {"type": "session_meta", "payload": {"cli_version": version}})
    before = len(path.read_text().splitlines()) if path.exists() else 0
    _append(path, [{"ordinal": before + n, **r} for n, r in enumerate(records)])


def hook_time(i: int) -> str:
    """The begin hook's own time of turn ``i`` (the agent's message follows 50 ms later)."""
    return f"2026-12-01T10:00:{10 * i:02d}.000Z"


def _stamp(i: int) -> str:
    return f"2026-12-01T10:00:{10 * i:02d}.050Z"


def gemini_turn(path: Path, i: int, prompt: str) -> None:
    """Gemini CLI's records of turn ``i``: as at each start, the session metadata and a
    ``$set.messages`` checkpoint of the whole history so far, then the prompt and the answer."""
    history = [r for r in _records(path) if isinstance(r.get("id"), str)]
    meta = {"sessionId": "sid", "projectHash": "h", "startTime": _stamp(i), "kind": "main"}
    context = {"id": "ctx", "type": "user", "content": [{"text": "<session_context>\nhi"}]}
    user = {"id": f"m{i}", "timestamp": _stamp(i), "type": "user", "content": [{"text": prompt}]}
    answer = {"id": f"g{i}", "timestamp": _stamp(i), "type": "gemini", "content": f"done {i}"}
    checkpoint = {"$set": {"messages": [context, *[r for r in history if r["id"] != "ctx"]]}}
    _append(path, [meta, checkpoint, user, answer, {"$set": {"lastUpdated": _stamp(i)}}])


def qwen_turn(path: Path, i: int, prompt: str, version: str = "0.24.4") -> None:
    """Qwen Code's records of turn ``i``: the prompt, a system record, the answer, chained."""
    before = _records(path)
    parent = before[-1]["uuid"] if before else None
    common = {"sessionId": "sid", "timestamp": _stamp(i), "version": version}
    records = [
        {"uuid": f"u{i}", "parentUuid": parent, "type": "user", **common},
        {"uuid": f"s{i}", "parentUuid": f"u{i}", "type": "system", "subtype": "ui_telemetry"},
        {"uuid": f"a{i}", "parentUuid": f"s{i}", "type": "assistant", **common},
    ]
    records[0]["message"] = {"role": "user", "parts": [{"text": prompt}]}
    records[2]["message"] = {"role": "model", "parts": [{"text": f"done {i}"}]}
    _append(path, records)


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def chat_session_of(
    store: Store, agent: str, transcript: Path, prompts: tuple[str, ...] = PROMPTS
) -> str:
    """A Gemini CLI or Qwen Code session, one turn per prompt, each writing notes.txt: their
    hooks carry no message id, so each begin keeps the prompt and the hook's own time."""
    session = f"{agent}/sid"
    writer = {"gemini-cli": gemini_turn, "qwen-code": qwen_turn}[agent]
    for i, prompt in enumerate(prompts):
        store.begin_turn(session, prompt, transcript=str(transcript), prompt_time=hook_time(i))
        writer(transcript, i, prompt)
        agent_write(store, "notes.txt", f"version {i}\n", session=session)
        store.end_turn(session)
    return session


def copilot_turn(path: Path, i: int, at: float, prompt: str | None = None) -> None:
    """Copilot CLI's events of turn ``i`` at the time ``at`` (after ``session.start`` for the
    first): its ``user.message``, an answer, the turn's end, each after the one before."""
    stamp = datetime.fromtimestamp(at + 0.001, timezone.utc).isoformat().replace("+00:00", "Z")
    kinds = [
        ("user.message", {"content": PROMPTS[i] if prompt is None else prompt}),
        ("assistant.message", {"content": f"done {i}"}),
        ("assistant.turn_end", {}),
    ]
    if i == 0:
        kinds.insert(0, ("session.start", {"sessionId": "sid", "copilotVersion": "1.0.102"}))
    before = len(path.read_text().splitlines()) if path.exists() else 0
    events = [
        {
            "type": kind,
            "data": data,
            "id": f"e{before + n}",
            "parentId": f"e{before + n - 1}" if before + n else None,
            "timestamp": stamp,
        }
        for n, (kind, data) in enumerate(kinds)
    ]
    _append(path, events)


def opencode_export(turns: int, version: str = "1.18.33") -> dict:
    """An ``opencode export`` of a session of ``turns`` turns: each a user message and an
    answer pointing to it by ``parentID``, each with one part; ids with a 12-hex time part."""
    sid = "ses_dcd996fdaffeGmxPCJK5VRh4HU"
    messages = []
    for i in range(turns):
        for n, (role, text) in enumerate((("user", PROMPTS[i]), ("assistant", f"done {i}"))):
            mid = f"msg_23266909c{2 * i + n:03x}pv6OYPM789Pcgc"
            info = {"id": mid, "sessionID": sid, "role": role}
            if role == "assistant":
                info["parentID"] = messages[-1]["info"]["id"]
            part = {
                "type": "text",
                "text": text,
                "id": f"prt_2326690b3{2 * i + n:03x}lomWWJffdYexI2",
            }
            messages.append({"info": info, "parts": [{**part, "sessionID": sid, "messageID": mid}]})
    return {"info": {"id": sid, "title": "notes", "version": version}, "messages": messages}


def _append(path: Path, records: list[dict]) -> None:
    with open(path, "a") as f:
        f.writelines(json.dumps(r) + "\n" for r in records)


#: Where each agent keeps session ``sid``'s transcript in its folder (as its layout has it).
LAYOUTS = {
    "claude-code": "projects/-ws/sid.jsonl",
    "codex": "sessions/2026/12/01/rollout-2026-12-01T10-00-00-sid.jsonl",
    "gemini-cli": "tmp/ws/chats/session-2026-12-01T10-00-sid.jsonl",
    "qwen-code": "projects/-ws/chats/sid.jsonl",
    "copilot": "session-state/sid/events.jsonl",
}


def transcript_in(homes: Mapping[str, str], agent: str) -> Path:
    """The path of session ``sid``'s transcript in the agent's folder (its folders made)."""
    path = Path(homes[agent]) / LAYOUTS[agent]
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def pose(folder: Path, command: str, cwd: str | None = None) -> subprocess.Popen:
    """A live process, in a session of its own, whose command is ``command`` (``sleep``
    under that name, as argv[0]): what the running check takes for the agent."""
    program = folder / "bin" / command
    program.parent.mkdir(parents=True, exist_ok=True)
    if not program.exists():
        program.symlink_to("/bin/sleep")
    child = subprocess.Popen([str(program), "300"], cwd=cwd, start_new_session=True)
    wait_exec(child.pid, program)
    return child


@contextlib.contextmanager
def posing_as(folder: Path, command: str, cwd: str | None = None) -> Iterator[subprocess.Popen]:
    """:func:`pose`, killed at the end of the block."""
    child = pose(folder, command, cwd)
    try:
        yield child
    finally:
        child.kill()
        child.wait()


def wait_exec(pid: int, program: Path) -> None:
    """Wait until the child's command line is the program's: Popen can return while the
    kernel is still setting up the exec'd image."""
    import psutil

    for _ in range(500):
        with contextlib.suppress(psutil.Error):
            if psutil.Process(pid).cmdline()[:1] == [str(program)]:
                return
        time.sleep(0.01)
    raise AssertionError(f"{program} never started")


def written_before(path: Path, seconds: float = 3600) -> None:
    """Date a sign (a registry entry, a lock) back: written before any process started now."""
    then = time.time() - seconds
    os.utime(path, (then, then))


def claude_transcript(path: Path, turns: int) -> None:
    """A Claude Code transcript of ``turns`` turns."""
    for i in range(turns):
        claude_turn(path, i)


def session_of(
    store: Store, agent: str, transcript: Path, turns: int = 3, version: str | None = None
) -> str:
    """An agent's session of ``turns`` turns, each writing notes.txt, recorded with the agent's
    key and its transcript as the begin hook records them; the agent's records of each turn
    go to the transcript after its begin (Claude Code, Codex and Copilot CLI, whose hooks carry
    no key; other agents write none)."""
    session = f"{agent}/sid"
    key = "p" if agent == "claude-code" else "t"
    writer = {"claude-code": claude_turn, "codex": codex_turn}.get(agent)
    for i in range(turns):
        if agent == "copilot":  # its hooks carry no key: the prompt and the time map the turn
            begun = store.begin_turn(session, PROMPTS[i], None, transcript=str(transcript))
            copilot_turn(transcript, i, begun.created)
        else:
            store.begin_turn(session, PROMPTS[i], f"{key}{i}", transcript=str(transcript))
        if writer is not None:
            writer(transcript, i, *([version] if version else []))
        agent_write(store, "notes.txt", f"version {i}\n", session=session)
        store.end_turn(session)
    return session


def live_of(module: ModuleType, path: Path, prompt: str = "", when: str = "") -> Any:
    """The agent's model of ``path`` as the agent loads it (``.live()``: its live history;
    ``.target``: the message of the turn with ``prompt`` at or after ``when``)."""
    chat = module.Chat("", 0, prompt, when)
    with open(path, "rb") as f:
        for at, line in enumerate(f):
            with contextlib.suppress(ValueError):
                record = json.loads(line)
                if isinstance(record, dict):
                    chat.feed(record, at)
    return chat
