"""The conversation part of a rewind, in-process, on transcripts shaped as Claude Code 2.1.332,
Codex 0.171.0 and Copilot CLI 1.0.102 write them (tests/e2e/test_conversation.py runs the real
CLIs): what maps a turn to the agent's message, and every refusal, each before anything changed."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from snapstore import Store, conversation
from snapstore.adapters import apply, parse
from snapstore.adapters.claude_code import AGENT as CLAUDE
from snapstore.conversation import claude_code, copilot, opencode
from snapstore.core.errors import AgentRunning, ConversationRefused, RunActive
from snapstore.core.records import Turn, loads

from ..support import agent_write, read
from ..support.transcripts import (
    PROMPTS,
    claude_transcript,
    claude_turn,
    copilot_turn,
    live_of,
    opencode_export,
    posing_as,
    session_of,
    transcript_in,
)


@pytest.fixture
def homes(tmp_path: Path) -> dict[str, str]:
    found = {
        agent: str(tmp_path / agent)
        for agent in ("claude-code", "codex", "gemini-cli", "qwen-code", "copilot", "opencode")
    }
    for home in found.values():
        os.makedirs(home)
    return found


def test_the_begin_hook_keeps_the_transcript_and_its_size(store: Store, tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    claude_transcript(transcript, 1)
    payload = {
        "hook_event_name": "UserPromptSubmit",
        "session_id": "sid",
        "cwd": store.root,
        "prompt": "next",
        "prompt_id": "p1",
        "transcript_path": str(transcript),
    }
    turn = apply(store, parse(CLAUDE, payload)).turn
    recorded = store.resolve_turn(turn, "claude-code/sid")
    assert (recorded.message_id, recorded.transcript) == ("p1", str(transcript))
    assert recorded.transcript_size == transcript.stat().st_size > 0


def test_records_written_before_keep_decoding() -> None:
    turn = loads(Turn, b'{"id":"t","session":"s","seq":1}')
    assert turn.transcript is None and turn.transcript_size == 0 and turn.prompt_time == ""


@pytest.mark.parametrize("agent", ["claude-code", "codex"])
def test_rewind_appends_one_record_and_undo_cuts_it(
    store: Store, tmp_path: Path, homes: dict[str, str], agent: str
) -> None:
    transcript = transcript_in(homes, agent)
    session = session_of(store, agent, transcript)
    whole = transcript.read_bytes()
    result = store.rewind(2, session, homes=homes)
    assert result.conversation is not None and result.conversation["status"] == "rewound"
    appended = transcript.read_bytes()[len(whole) :]
    record = json.loads(appended)
    if agent == "claude-code":
        assert record["leafUuid"] == "a0" and record["cutUuid"] == "u1"
        assert record["lastPrompt"] == PROMPTS[0] and record["rewound"] is True
    else:
        assert record["ordinal"] == 10 and record["payload"] == {
            "type": "thread_rolled_back",
            "num_turns": 2,
        }
    assert read(Path(store.root), "notes.txt") == b"version 0\n"
    undone = store.undo(homes=homes)
    assert undone.conversation is not None and undone.conversation["status"] == "rewound"
    assert transcript.read_bytes() == whole
    assert read(Path(store.root), "notes.txt") == b"version 2\n"
    redone = store.redo(homes=homes)  # the same record appended again, the files back
    assert redone.conversation is not None and redone.conversation["status"] == "rewound"
    again = transcript.read_bytes()
    assert again.startswith(whole)
    redone_record = json.loads(again[len(whole) :])
    redone_record.pop("timestamp", None)  # Codex stamps each record with the time now
    record.pop("timestamp", None)
    assert redone_record == record
    assert read(Path(store.root), "notes.txt") == b"version 0\n"
    store.undo(homes=homes)
    assert transcript.read_bytes() == whole


def test_a_live_registry_entry_refuses_and_a_stale_one_does_not(
    store: Store, tmp_path: Path, homes: dict[str, str]
) -> None:
    transcript = transcript_in(homes, "claude-code")
    session = session_of(store, "claude-code", transcript)
    whole = transcript.read_bytes()
    registry = Path(homes["claude-code"]) / "sessions"
    registry.mkdir()
    entry = registry / "1.json"
    with posing_as(tmp_path, "claude") as claude:
        entry.write_text(json.dumps({"pid": claude.pid, "sessionId": "sid"}))
        with pytest.raises(AgentRunning, match=r"exit claude first, or use --mode code") as no:
            store.rewind(2, session, homes=homes)
        assert isinstance(no.value, RunActive) and no.value.code == "run_active"
        assert transcript.read_bytes() == whole
        assert read(Path(store.root), "notes.txt") == b"version 2\n"
        # --mode code never looks at the agent
        chat = store.rewind(2, session, mode="code", dry_run=True, homes=homes).conversation
        assert chat is None
    entry.write_text(json.dumps({"pid": claude.pid, "sessionId": "sid"}))  # it is gone now
    assert store.rewind(2, session, homes=homes).conversation["status"] == "rewound"
    rewound = transcript.read_bytes()
    with posing_as(tmp_path, "claude") as claude:
        entry.write_text(json.dumps({"pid": claude.pid, "sessionId": "sid"}))
        with pytest.raises(AgentRunning) as refused:  # the undo too: it has no files-only way
            store.undo(homes=homes)
        assert str(refused.value).endswith("exit claude first")
        assert transcript.read_bytes() == rewound
        assert read(Path(store.root), "notes.txt") == b"version 0\n"
    entry.unlink()
    store.undo(homes=homes)
    assert transcript.read_bytes() == whole


@pytest.mark.parametrize("agent", ["claude-code", "codex"])
def test_a_compaction_after_the_turn_refuses_before_any_change(
    store: Store, tmp_path: Path, homes: dict[str, str], agent: str
) -> None:
    transcript = transcript_in(homes, agent)
    session = session_of(store, agent, transcript)
    if agent == "claude-code":
        compaction = {
            "type": "system",
            "subtype": "compact_boundary",
            "uuid": "c",
            "parentUuid": None,
        }
    else:
        compaction = {"ordinal": 7, "type": "compacted", "payload": {"replacement_history": []}}
    with open(transcript, "a") as f:
        f.write(json.dumps(compaction) + "\n")
    whole = transcript.read_bytes()
    with pytest.raises(ConversationRefused, match="compacted the conversation after turn 2"):
        store.rewind(2, session, homes=homes)
    assert transcript.read_bytes() == whole
    assert read(Path(store.root), "notes.txt") == b"version 2\n"
    assert not store.unfinished_operations()


def test_an_untested_release_leaves_the_chat_and_says_how_to_rewind_it(
    store: Store, tmp_path: Path, homes: dict[str, str]
) -> None:
    transcript = transcript_in(homes, "codex")
    session = session_of(store, "codex", transcript, version="0.99.0")
    whole = transcript.read_bytes()
    result = store.rewind(2, session, homes=homes)
    assert result.conversation is not None and result.conversation["status"] == "unsupported"
    assert (
        "Codex 0.99.0 is not a release snapstore was tested with (0.171.0)"
        in (result.conversation["note"])
    )
    assert transcript.read_bytes() == whole
    assert read(Path(store.root), "notes.txt") == b"version 0\n"


def test_other_agents_and_the_python_api_leave_the_chat_in_the_agent(
    store: Store, tmp_path: Path, homes: dict[str, str]
) -> None:
    transcript = transcript_in(homes, "claude-code")
    session = session_of(store, "claude-code", transcript)
    whole = transcript.read_bytes()
    chat = store.rewind(2, session).conversation  # no homes: the Python API
    assert chat is not None and chat["status"] == "unsupported"
    assert chat["note"] == "the chat stays in the agent: rewind it with /rewind in Claude Code"
    assert transcript.read_bytes() == whole
    cursor = session_of(store, "cursor", tmp_path / "none.jsonl", turns=1)
    chat = store.rewind(1, cursor, dry_run=True).conversation
    assert chat is not None and chat["note"].endswith("restore a checkpoint in Cursor's chat")
    gone = tmp_path / "gone.jsonl"  # a transcript moved away: the files still go back
    codex = session_of(store, "codex", gone, turns=1)
    gone.unlink()
    chat = store.rewind(1, codex, homes=homes).conversation
    assert chat is not None and chat["status"] == "unsupported"
    assert chat["note"].endswith("gone.jsonl is gone, so the chat stays as it is")
    plain = session_of(store, "plain", tmp_path / "none.jsonl", turns=1)
    assert store.rewind(1, plain, dry_run=True).conversation is None


def test_undo_refuses_once_the_agent_wrote_since(
    store: Store, tmp_path: Path, homes: dict[str, str]
) -> None:
    transcript = transcript_in(homes, "codex")
    session = session_of(store, "codex", transcript)
    store.rewind(2, session, homes=homes)
    with open(transcript, "a") as f:
        f.write('{"ordinal":8,"type":"turn_context","payload":{"turn_id":"t9"}}\n')
    grown = transcript.read_bytes()
    with pytest.raises(ConversationRefused, match="Codex wrote to the conversation since"):
        store.undo(homes=homes)
    assert transcript.read_bytes() == grown
    assert read(Path(store.root), "notes.txt") == b"version 0\n"


def test_a_rewind_already_made_in_the_agent_leaves_the_chat_unchanged(
    store: Store, tmp_path: Path, homes: dict[str, str]
) -> None:
    transcript = transcript_in(homes, "codex")
    session = session_of(store, "codex", transcript)
    with open(transcript, "a") as f:  # the user's own rollback of turns 2 and 3
        f.write(
            '{"ordinal":10,"type":"event_msg","payload":{"type":"thread_rolled_back","num_turns":2}}\n'
        )
    whole = transcript.read_bytes()
    chat = store.rewind(2, session, homes=homes).conversation
    assert chat is not None and chat["status"] == "unchanged"
    assert transcript.read_bytes() == whole


def test_an_untested_claude_release_gets_a_fork_and_undo_drops_it(
    store: Store, tmp_path: Path, homes: dict[str, str]
) -> None:
    transcript = transcript_in(homes, "claude-code")
    session = session_of(store, "claude-code", transcript, version="2.9.0")
    whole = transcript.read_bytes()
    chat = store.rewind(2, session, homes=homes).conversation
    assert chat is not None and (chat["status"], chat["how"]) == ("rewound", "forked")
    new = chat["session_id"]
    assert new != "sid" and chat["resume_command"] == f"claude --resume {new}"
    assert chat["transcript"] == str(transcript.parent / f"{new}.jsonl")
    assert "Claude Code 2.9.0 is not a release snapstore was tested with" in chat["note"]
    assert transcript.read_bytes() == whole
    fork = [json.loads(line) for line in Path(chat["transcript"]).read_text().splitlines()]
    assert [r.get("uuid") for r in fork] == ["u0", "a0", None]
    assert fork[0]["sessionId"] == new
    assert live_of(claude_code, Path(chat["transcript"])).live() == ["p0"]
    assert read(Path(store.root), "notes.txt") == b"version 0\n"
    store.undo(homes=homes)
    assert not Path(chat["transcript"]).exists() and transcript.read_bytes() == whole


def test_a_key_whose_message_came_before_the_turn_began_is_refused(
    store: Store, tmp_path: Path, homes: dict[str, str]
) -> None:
    """The turn's message lies after the transcript's size at its begin hook: a key found only
    before it maps the turn to another message, and nothing is changed."""
    transcript = transcript_in(homes, "claude-code")
    session = session_of(store, "claude-code", transcript)
    store.begin_turn(session, "again", "p1", transcript=str(transcript))  # p1 is turn 2's
    agent_write(store, "notes.txt", "version 3\n", session=session)
    store.end_turn(session)
    whole = transcript.read_bytes()
    with pytest.raises(ConversationRefused, match="where its prompt was recorded"):
        store.rewind(1, session, homes=homes)
    assert transcript.read_bytes() == whole
    assert read(Path(store.root), "notes.txt") == b"version 3\n"


def copilot_log(homes: dict[str, str]) -> Path:
    """Where Copilot CLI keeps session ``sid``'s events (a folder per session)."""
    folder = Path(homes["copilot"]) / "session-state" / "sid"
    folder.mkdir(parents=True)
    (folder / "workspace.yaml").write_text("id: sid\ncwd: /w\n")
    return folder / "events.jsonl"


def test_copilot_forks_a_session_folder_cut_before_the_turn_and_undo_drops_it(
    store: Store, homes: dict[str, str]
) -> None:
    log = copilot_log(homes)
    session = session_of(store, "copilot", log)
    whole = log.read_bytes()
    chat = store.rewind(2, session, homes=homes).conversation
    assert chat is not None and (chat["status"], chat["how"]) == ("rewound", "forked")
    new = chat["session_id"]
    fork = log.parent.parent / new
    assert chat["transcript"] == str(fork / "events.jsonl")
    assert chat["resume_command"] == f"copilot --resume {new}" and chat["note"] == ""
    assert log.read_bytes() == whole
    events = [json.loads(line) for line in (fork / "events.jsonl").read_text().splitlines()]
    assert [e["id"] for e in events] == ["e0", "e1", "e2", "e3"]
    assert events[0]["data"]["sessionId"] == new
    assert live_of(copilot, fork / "events.jsonl").live() == ["e1"]
    assert (fork / "workspace.yaml").read_text() == f"id: {new}\ncwd: /w\n"
    assert read(Path(store.root), "notes.txt") == b"version 0\n"
    store.undo(homes=homes)
    assert not fork.exists() and sorted(os.listdir(log.parent.parent)) == ["sid"]
    assert log.read_bytes() == whole


def test_copilot_maps_the_first_equal_prompt_at_or_after_the_begin_hook(
    store: Store, homes: dict[str, str]
) -> None:
    """The hooks carry no message id: the turn is the first ``user.message`` with its text at
    or after the begin hook's time; an equal prompt before it is another turn."""
    log = copilot_log(homes)
    session = "copilot/sid"
    for i in range(3):
        begun = store.begin_turn(session, "again", None, transcript=str(log))
        copilot_turn(log, i, begun.created, prompt="again")
        agent_write(store, "notes.txt", f"version {i}\n", session=session)
        store.end_turn(session)
    chat = store.rewind(1, session, homes=homes).conversation  # 1: the newest turn
    assert chat is not None and chat["status"] == "rewound", chat["note"]
    fork = Path(chat["transcript"])
    assert live_of(copilot, fork).live() == ["e1", "e4"]  # the third "again" is cut, not the first
    later = conversation.iso(begun.created + 1)
    assert live_of(copilot, fork, "again", later).target is None  # none at or after


def test_copilot_in_use_lock_refuses_while_its_pid_lives(
    store: Store, tmp_path: Path, homes: dict[str, str]
) -> None:
    log = copilot_log(homes)
    session = session_of(store, "copilot", log)
    with posing_as(tmp_path, "copilot") as copilot_cli:
        lock = log.parent / f"inuse.{copilot_cli.pid}.lock"
        lock.touch()
        with pytest.raises(AgentRunning, match=r"exit copilot first, or use --mode code"):
            store.rewind(2, session, homes=homes)
        assert sorted(os.listdir(log.parent.parent)) == ["sid"]
        assert read(Path(store.root), "notes.txt") == b"version 2\n"
    assert store.rewind(2, session, homes=homes).conversation["status"] == "rewound"


def test_copilot_compaction_after_the_turn_refuses(store: Store, homes: dict[str, str]) -> None:
    log = copilot_log(homes)
    session = session_of(store, "copilot", log)
    with open(log, "a") as f:
        f.write(json.dumps({"type": "session.compaction_complete", "id": "c", "data": {}}) + "\n")
    with pytest.raises(ConversationRefused, match="compacted"):
        store.rewind(2, session, homes=homes)
    assert sorted(os.listdir(log.parent.parent)) == ["sid"]
    assert read(Path(store.root), "notes.txt") == b"version 2\n"


def test_opencode_fork_keeps_the_messages_before_the_turn_under_new_ids() -> None:
    """What snapstore gives ``opencode import``: turn 1's messages, every id new (import skips
    ids it has) with its time part kept (the order), ``parentID`` remapped, the title marked."""
    session = opencode_export(3)
    key = session["messages"][2]["info"]["id"]  # turn 2's user message
    fork = opencode.fork(session, key, "2")
    new = fork["info"]["id"]
    assert new != session["info"]["id"] and new[:16] == session["info"]["id"][:16]
    assert fork["info"]["title"] == "notes (rewound before turn 2)"
    old = session["messages"][:2]
    assert [m["info"]["role"] for m in fork["messages"]] == ["user", "assistant"]
    for mine, theirs in zip(fork["messages"], old, strict=True):
        assert mine["info"]["id"] != theirs["info"]["id"]
        assert mine["info"]["id"][:16] == theirs["info"]["id"][:16]
        assert mine["info"]["sessionID"] == new
        [part] = mine["parts"]
        assert part["id"] != theirs["parts"][0]["id"] and part["text"] == theirs["parts"][0]["text"]
        assert (part["sessionID"], part["messageID"]) == (new, mine["info"]["id"])
    assert fork["messages"][1]["info"]["parentID"] == fork["messages"][0]["info"]["id"]
    assert opencode.live(fork) == [fork["messages"][0]["info"]["id"]]
    assert session == opencode_export(3)  # the old session's export is left as it was


def test_opencode_compaction_after_the_turn_is_seen() -> None:
    session = opencode_export(3)
    key = session["messages"][2]["info"]["id"]
    assert not opencode.compacted_after(session, key)
    session["messages"][4]["parts"].append({"type": "compaction", "id": "prt_x"})
    assert opencode.compacted_after(session, key)
    assert not opencode.compacted_after(session, session["messages"][4]["info"]["id"])


def test_an_opencode_that_cannot_run_leaves_the_chat_and_rewinds_the_files(
    store: Store, homes: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    session = session_of(store, "opencode", Path(homes["opencode"]) / "opencode.db")
    chat = store.rewind(2, session, homes=homes).conversation
    assert chat is not None and chat["status"] == "unsupported"
    assert chat["note"] == (
        "cannot run opencode: No such file or directory, so the chat stays as it is; "
        "rewind it with /undo in opencode"
    )
    assert read(Path(store.root), "notes.txt") == b"version 0\n"


def test_a_turn_recorded_without_its_key_leaves_the_chat_of_an_agent_whose_hooks_give_one(
    store: Store, homes: dict[str, str]
) -> None:
    """Claude Code's hooks give each prompt's id: a turn recorded without one (an older
    hook) is not looked for by its prompt's text, and the chat stays."""
    transcript = transcript_in(homes, "claude-code")
    session = "claude-code/sid"
    for i in range(3):
        store.begin_turn(session, PROMPTS[i], None, transcript=str(transcript))
        claude_turn(transcript, i)
        agent_write(store, "notes.txt", f"version {i}\n", session=session)
        store.end_turn(session)
    chat = store.rewind(2, session, homes=homes).conversation
    assert chat is not None and chat["status"] == "unsupported"
    assert "snapstore did not record where this turn is" in chat["note"]
    assert read(Path(store.root), "notes.txt") == b"version 0\n"
