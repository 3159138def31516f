"""The conversation part of a rewind for Gemini CLI and Qwen Code, in-process, on transcripts
shaped as Gemini CLI 0.61.0 and Qwen Code 0.24.4 write them (tests/e2e/test_conversation_more.py
runs the real CLIs). Their hooks carry no message id: the turn is the first user message with
the prompt's text at or after the begin hook's own time."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from snapstore import Store
from snapstore.adapters import apply, parse
from snapstore.adapters.gemini_cli import AGENT as GEMINI
from snapstore.conversation import gemini_cli, qwen_code
from snapstore.core.errors import AgentRunning, ConversationRefused

from ..support import read
from ..support.transcripts import chat_session_of, live_of, posing_as, transcript_in, wait_exec

AGENTS = ["gemini-cli", "qwen-code"]
MODULE = {"gemini-cli": gemini_cli, "qwen-code": qwen_code}


@pytest.fixture
def homes(tmp_path: Path) -> dict[str, str]:
    found = {agent: str(tmp_path / agent) for agent in AGENTS}
    for home in found.values():
        os.makedirs(home)
    return found


def test_the_begin_hook_keeps_its_own_time(store: Store, tmp_path: Path) -> None:
    payload = {
        "hook_event_name": "BeforeAgent",
        "session_id": "sid",
        "cwd": store.root,
        "prompt": "next",
        "timestamp": "2026-12-01T10:00:00.000Z",
        "transcript_path": str(tmp_path / "chat.jsonl"),
    }
    turn = apply(store, parse(GEMINI, payload)).turn
    recorded = store.resolve_turn(turn, "gemini-cli/sid")
    assert recorded.prompt_time == "2026-12-01T10:00:00.000Z" and recorded.message_id is None


@pytest.mark.parametrize("agent", AGENTS)
def test_rewind_appends_the_agents_own_record_and_undo_cuts_it(
    store: Store, tmp_path: Path, homes: dict[str, str], agent: str
) -> None:
    transcript = transcript_in(homes, agent)
    session = chat_session_of(store, agent, transcript)
    whole = transcript.read_bytes()
    chat = store.rewind(2, session, homes=homes).conversation
    assert chat is not None and (chat["status"], chat["how"]) == ("rewound", "appended")
    assert chat["resume_command"] == f"{'gemini' if agent == 'gemini-cli' else 'qwen'} --resume sid"
    record = json.loads(transcript.read_bytes()[len(whole) :])
    if agent == "gemini-cli":
        assert record == {"$rewindTo": "m1"}
    else:
        assert (record["type"], record["subtype"], record["parentUuid"]) == (
            "system",
            "rewind",
            "a0",
        )
    mod = MODULE[agent]
    kept = "m0" if agent == "gemini-cli" else "u0"
    assert live_of(mod, transcript).live() == [kept]
    assert read(Path(store.root), "notes.txt") == b"version 0\n"
    store.undo(homes=homes)
    assert transcript.read_bytes() == whole
    assert read(Path(store.root), "notes.txt") == b"version 2\n"


@pytest.mark.parametrize("agent", AGENTS)
def test_equal_prompts_are_told_apart_by_the_hooks_time(
    store: Store, tmp_path: Path, homes: dict[str, str], agent: str
) -> None:
    """The first and the third turn have the same prompt: rewinding the third (the newest:
    rewind point 1) keeps the first two."""
    transcript = transcript_in(homes, agent)
    session = chat_session_of(store, agent, transcript, ("again", "other", "again"))
    store.rewind(1, session, homes=homes)
    kept = ["m0", "m1"] if agent == "gemini-cli" else ["u0", "u1"]
    assert live_of(MODULE[agent], transcript).live() == kept


@pytest.mark.parametrize("agent", AGENTS)
def test_a_compression_after_the_turn_refuses_before_any_change(
    store: Store, tmp_path: Path, homes: dict[str, str], agent: str
) -> None:
    transcript = transcript_in(homes, agent)
    session = chat_session_of(store, agent, transcript)
    if agent == "gemini-cli":  # a checkpoint with a summary in place of the history
        summary = {"id": "sum", "type": "user", "content": [{"text": "summary"}]}
        compression = {"$set": {"messages": [summary]}}
    else:
        compression = {"uuid": "c", "parentUuid": "a2", "type": "system"}
        compression["subtype"] = "chat_compression"
    with open(transcript, "a") as f:
        f.write(json.dumps(compression) + "\n")
    whole = transcript.read_bytes()
    with pytest.raises(ConversationRefused, match="compacted the conversation after turn 2"):
        store.rewind(2, session, homes=homes)
    assert transcript.read_bytes() == whole
    assert read(Path(store.root), "notes.txt") == b"version 2\n"


def test_a_prompt_whose_message_is_not_after_the_hooks_time_is_refused(
    store: Store, tmp_path: Path, homes: dict[str, str]
) -> None:
    """The Qwen Code message of turn 2 is stamped before its hook: it maps to nothing."""
    transcript = transcript_in(homes, "qwen-code")
    session = chat_session_of(store, "qwen-code", transcript)
    text = transcript.read_text().replace("10:00:10.050Z", "09:59:59.000Z")
    transcript.write_text(text)
    with pytest.raises(ConversationRefused, match="turn 2's message is not in Qwen Code"):
        store.rewind(2, session, homes=homes)
    assert transcript.read_text() == text


def test_an_untested_qwen_release_and_an_unknown_gemini_format_leave_the_chat(
    store: Store, tmp_path: Path, homes: dict[str, str]
) -> None:
    qwen = transcript_in(homes, "qwen-code")
    session = chat_session_of(store, "qwen-code", qwen)
    qwen.write_text(qwen.read_text().replace('"0.24.4"', '"0.30.0"'))
    chat = store.rewind(2, session, homes=homes, dry_run=True).conversation
    assert chat is not None and chat["status"] == "unsupported"
    assert "Qwen Code 0.30.0 is not a release snapstore was tested with (0.24.4)" in chat["note"]
    gemini = transcript_in(homes, "gemini-cli")
    session = chat_session_of(store, "gemini-cli", gemini)
    lines = gemini.read_text().splitlines(keepends=True)
    gemini.write_text("".join(lines[1:]))  # no session metadata first: another format
    chat = store.rewind(2, session, homes=homes, dry_run=True).conversation
    assert chat is not None and chat["status"] == "unsupported"
    assert "Gemini CLI unknown is not a release" in chat["note"]


def test_qwen_codes_registry_refuses_while_its_process_lives(
    store: Store, tmp_path: Path, homes: dict[str, str]
) -> None:
    """``~/.qwen/sessions/<pid>.json`` (what ``qwen sessions ps`` lists) names the session:
    refused while that pid lives, nothing changed; once it is gone, the entry no longer counts."""
    transcript = transcript_in(homes, "qwen-code")
    session = chat_session_of(store, "qwen-code", transcript)
    whole = transcript.read_bytes()
    registry = Path(homes["qwen-code"]) / "sessions"
    registry.mkdir()
    entry = registry / "1.json"
    with posing_as(tmp_path, "qwen") as qwen:
        entry.write_text(json.dumps({"pid": qwen.pid, "sessionId": "sid"}))
        with pytest.raises(AgentRunning, match=r"exit qwen first, or use --mode code"):
            store.rewind(2, session, homes=homes)
        assert transcript.read_bytes() == whole
        assert read(Path(store.root), "notes.txt") == b"version 2\n"
    chat = store.rewind(2, session, homes=homes).conversation
    assert chat is not None and chat["status"] == "rewound"


def test_a_gemini_process_in_the_sessions_project_refuses_while_it_lives(
    store: Store, tmp_path: Path, homes: dict[str, str]
) -> None:
    """Gemini CLI keeps no registry: a process running ``gemini`` whose working folder is the
    project holding the session's chat refuses the rewind; once it exits, nothing does."""
    chats = Path(homes["gemini-cli"]) / "tmp" / "ws" / "chats"
    chats.mkdir(parents=True)
    (chats.parent / ".project_root").write_text(store.root)
    transcript = chats / "session-2026-12-01T10-00-sid.jsonl"
    session = chat_session_of(store, "gemini-cli", transcript)
    gemini = tmp_path / "bin" / "gemini"  # `sleep` under gemini's name, as argv[0]
    gemini.parent.mkdir()
    gemini.symlink_to("/bin/sleep")
    running = subprocess.Popen([str(gemini), "60"], cwd=store.root)
    wait_exec(running.pid, gemini)
    try:
        with pytest.raises(AgentRunning, match=rf"pid {running.pid} in .*exit gemini first"):
            store.rewind(2, session, homes=homes)
    finally:
        running.kill()
        running.wait()
    assert read(Path(store.root), "notes.txt") == b"version 2\n"
    chat = store.rewind(2, session, homes=homes).conversation
    assert chat is not None and chat["status"] == "rewound"
