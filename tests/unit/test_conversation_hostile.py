"""Transcripts, and the files beside them, as hostile input, for each agent with a transcript
(Claude Code, Codex, Gemini CLI, Qwen Code, Copilot CLI; opencode's export is at the end): a
FIFO, a device, a link out of the agent's folder, a file over its cap, wrong-typed ids. Each
rewind ends, never hangs: the chat is refused in one line (``status: refused``) or the
record skipped, and the files go back as asked. The running check counts a pid only while it
is the agent that wrote the sign, and looks in the folder the transcript's path lies in."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from snapstore import Store
from snapstore.conversation import (
    claude_code,
    codex,
    copilot,
    files,
    gemini_cli,
    opencode,
    qwen_code,
)
from snapstore.core.errors import AgentRunning, ConversationRefused, ConversationUnreadable

from ..support import agent_write, hermetic_env, read, run_snapstore
from ..support.transcripts import (
    chat_session_of,
    live_of,
    opencode_export,
    posing_as,
    session_of,
    transcript_in,
    written_before,
)

AGENTS = ["claude-code", "codex", "gemini-cli", "qwen-code", "copilot"]
MODULES = {
    "claude-code": claude_code,
    "codex": codex,
    "gemini-cli": gemini_cli,
    "qwen-code": qwen_code,
    "copilot": copilot,
}
#: What each agent's live history keeps after a rewind to before turn 2 of three.
KEPT = {
    "claude-code": ["p0"],
    "codex": ["m0"],
    "gemini-cli": ["m0"],
    "qwen-code": ["u0"],
    "copilot": ["e1"],
}
#: Records whose ids and links have the wrong types: no message the agent counts.
JUNK = {
    "claude-code": [
        {"type": "user", "uuid": ["u9"], "parentUuid": 5, "promptId": ["p9"], "message": [1]},
        {"type": "assistant", "uuid": {"a": 1}, "parentUuid": "a2", "message": "x"},
        {"type": "last-prompt", "leafUuid": ["u0"]},
        {"type": "user", "uuid": 7, "promptId": 8, "message": {"content": 9}, "version": 2},
    ],
    "codex": [
        {"ordinal": "x", "type": "event_msg", "payload": [1]},
        {"type": "turn_context", "payload": {"turn_id": ["t1"]}},
        {"type": "event_msg", "payload": {"type": "task_started", "turn_attribution": [1]}},
        {"type": "event_msg", "payload": {"type": "thread_rolled_back", "num_turns": [2]}},
        {"type": ["compacted"], "payload": "x"},
    ],
    "gemini-cli": [
        {"id": ["m9"], "type": "user", "content": 5},
        {"id": 3, "type": "user", "content": [{"text": "change notes"}]},
        {"$set": {"messages": "x"}, "sessionId": 4},
        {"type": "user", "content": [{"text": ["x"]}, 5]},
    ],
    "qwen-code": [
        {"uuid": ["u9"], "parentUuid": "a2", "type": "user", "message": {"parts": "x"}},
        {"uuid": 5, "type": "system", "subtype": "chat_compression"},
        {"type": "user", "message": [1], "timestamp": 5, "version": ["0"]},
    ],
    "copilot": [
        {"type": "user.message", "id": ["e9"], "data": {"content": "change notes"}},
        {"type": "user.message", "id": "e9", "data": [1], "timestamp": 5},
        {"type": "session.resume", "data": {"copilotVersion": ["1"]}},
        {"type": ["session.compaction_complete"], "id": "c"},
    ],
}


@pytest.fixture(autouse=True)
def never_hangs() -> Iterator[None]:
    """A rewind that blocks on a file (a FIFO, a device) fails the test instead of hanging."""

    def hung(*_: object) -> None:
        raise AssertionError("the rewind blocked on a file")

    before = signal.signal(signal.SIGALRM, hung)
    signal.alarm(60)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, before)


@pytest.fixture
def homes(tmp_path: Path) -> dict[str, str]:
    found = {agent: str(tmp_path / agent) for agent in [*AGENTS, "opencode"]}
    for home in found.values():
        os.makedirs(home)
    return found


def recorded(store: Store, homes: dict[str, str], agent: str) -> tuple[str, Path]:
    """A session of three turns of the agent, each writing notes.txt (version 0 to 2), its
    transcript in the agent's folder as the agent lays it out."""
    transcript = transcript_in(homes, agent)
    if agent in ("gemini-cli", "qwen-code"):
        return chat_session_of(store, agent, transcript), transcript
    if agent == "copilot":
        (transcript.parent / "workspace.yaml").write_text("id: sid\ncwd: /w\n")
    return session_of(store, agent, transcript), transcript


def notes(store: Store) -> bytes | None:
    return read(Path(store.root), "notes.txt")


def refused(store: Store, session: str, homes: dict[str, str], why: str) -> dict:
    """Rewind turn 2: the chat is refused with ``why``, and only the chat (in mode
    ``conversation``, the whole rewind is refused, and nothing changes)."""
    with pytest.raises(ConversationRefused, match=why):
        store.rewind(2, session, mode="conversation", homes=homes)
    assert notes(store) == b"version 2\n"
    result = store.rewind(2, session, homes=homes)
    chat = result.conversation
    assert chat is not None and chat["status"] == "refused", chat
    assert why in chat["note"] and chat["note"].count("\n") == 0
    assert notes(store) == b"version 0\n" and not store.unfinished_operations()
    return chat


# -- the transcript itself -----------------------------------------------------------------


@pytest.mark.parametrize("agent", AGENTS)
def test_a_fifo_at_the_transcript_is_never_opened_for_good(
    store: Store, homes: dict[str, str], agent: str
) -> None:
    session, transcript = recorded(store, homes, agent)
    transcript.unlink()
    os.mkfifo(transcript)
    refused(store, session, homes, "is a FIFO, not a regular file")


@pytest.mark.parametrize("agent", AGENTS)
def test_a_link_to_a_device_is_not_read(store: Store, homes: dict[str, str], agent: str) -> None:
    session, transcript = recorded(store, homes, agent)
    transcript.unlink()
    transcript.symlink_to("/dev/zero")
    refused(store, session, homes, "is a symbolic link")


def test_a_device_as_the_transcript_is_not_in_the_agents_folder(
    store: Store, homes: dict[str, str]
) -> None:
    session = session_of(store, "claude-code", Path("/dev/zero"))
    refused(store, session, homes, "/dev/zero is not in the agent's folder")


@pytest.mark.parametrize("agent", AGENTS)
def test_a_transcript_linked_out_of_the_agents_folder_is_left_alone(
    store: Store, tmp_path: Path, homes: dict[str, str], agent: str
) -> None:
    """The transcript as a link to a file elsewhere, then its folder as a link to a folder
    elsewhere: neither is read nor appended to through the link."""
    session, transcript = recorded(store, homes, agent)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / transcript.name).write_bytes(transcript.read_bytes())
    whole = transcript.read_bytes()
    transcript.unlink()
    transcript.symlink_to(outside / transcript.name)
    with pytest.raises(ConversationRefused, match="is a symbolic link"):
        store.rewind(2, session, mode="conversation", homes=homes)
    folder = transcript.parent
    transcript.unlink()
    for name in os.listdir(folder):  # Copilot's workspace.yaml goes along
        os.rename(folder / name, outside / name)
    folder.rmdir()
    folder.symlink_to(outside)
    refused(store, session, homes, "is not in the agent's folder")
    assert (outside / transcript.name).read_bytes() == whole


@pytest.mark.parametrize("agent", AGENTS)
def test_wrong_typed_ids_are_no_messages_and_the_rewind_goes_on(
    store: Store, homes: dict[str, str], agent: str
) -> None:
    session, transcript = recorded(store, homes, agent)
    with open(transcript, "a") as f:
        f.writelines(json.dumps(record) + "\n" for record in JUNK[agent])
    chat = store.rewind(2, session, homes=homes).conversation
    assert chat is not None and chat["status"] == "rewound", chat
    assert live_of(MODULES[agent], Path(chat["transcript"])).live() == KEPT[agent]
    assert notes(store) == b"version 0\n"
    store.undo(homes=homes)
    assert notes(store) == b"version 2\n"


def test_a_record_nested_too_deep_to_model_refuses_the_chat(
    store: Store, homes: dict[str, str]
) -> None:
    session, transcript = recorded(store, homes, "claude-code")
    with open(transcript, "a") as f:
        f.write("[" * 200_000 + "]" * 200_000 + "\n")
    refused(store, session, homes, "has a record nested too deeply")


def test_a_line_over_the_cap_refuses_the_chat(store: Store, homes: dict[str, str]) -> None:
    session, transcript = recorded(store, homes, "codex")
    with open(transcript, "ab") as f:
        f.write(b'{"x":"' + b"y" * files.LINE_CAP + b'"}\n')
    refused(store, session, homes, "has a line over 64 MiB")


def test_a_transcript_over_the_cap_is_not_read(store: Store, homes: dict[str, str]) -> None:
    session, transcript = recorded(store, homes, "gemini-cli")
    os.truncate(transcript, files.TRANSCRIPT_CAP + 1)  # sparse: nothing of it is written
    refused(store, session, homes, "is over 1024 MiB")


# -- the files beside it -------------------------------------------------------------------

#: A file each agent's running check (or fork) reads beside the transcript.
SIDE_FILES = {
    "claude-code": "sessions/1.json",
    "codex": "thread-writer-locks/sid.lock",
    "gemini-cli": "tmp/ws/.project_root",
    "qwen-code": "sessions/1.json",
    "copilot": "session-state/sid/workspace.yaml",
}


@pytest.mark.parametrize("agent", AGENTS)
def test_a_fifo_beside_the_transcript_refuses_the_chat_before_anything_is_journaled(
    store: Store, homes: dict[str, str], agent: str
) -> None:
    """Codex's writer lock, a registry entry, Gemini's ``.project_root``, Copilot's
    ``workspace.yaml``: each is read before the journal, never waited on; the files go back
    and nothing is left for the next command (or hook event) to finish."""
    session, _ = recorded(store, homes, agent)
    side = Path(homes[agent]) / SIDE_FILES[agent]
    side.parent.mkdir(parents=True, exist_ok=True)
    side.unlink(missing_ok=True)
    os.mkfifo(side)
    chat = refused(store, session, homes, "is a FIFO, not a regular file")
    assert chat["note"].startswith(str(side))


# -- the running check ---------------------------------------------------------------------


def sign(homes: dict[str, str], agent: str, pid: int) -> Path:
    """The agent's sign that it runs session ``sid`` as process ``pid``."""
    folder = Path(homes[agent])
    if agent == "codex":  # a lock no process holds, naming its writer
        path = folder / "thread-writer-locks" / "sid.lock"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"pid": pid}))
    elif agent == "copilot":
        path = folder / "session-state" / "sid" / f"inuse.{pid}.lock"
        path.touch()
    else:
        path = folder / "sessions" / f"{pid}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"pid": pid, "sessionId": "sid"}))
    return path


REGISTERED = ["claude-code", "codex", "qwen-code", "copilot"]
COMMANDS = {"claude-code": "claude", "codex": "codex", "qwen-code": "qwen", "copilot": "copilot"}


@pytest.mark.parametrize("agent", REGISTERED)
def test_a_reused_pid_is_not_the_agent(
    store: Store, tmp_path: Path, homes: dict[str, str], agent: str
) -> None:
    """A sign names a live process that is not the agent that wrote it: one that started
    after the sign was written (the pid was reused, whatever its command), or one whose
    command is another program's. Only the agent, started before its sign, refuses."""
    session, _ = recorded(store, homes, agent)
    with posing_as(tmp_path, COMMANDS[agent]) as later:  # the agent's name, started after
        written_before(sign(homes, agent, later.pid))
        assert store.rewind(2, session, homes=homes, dry_run=True).conversation["status"] == (
            "rewound"
        )
    with posing_as(tmp_path, "sleep") as other:  # started before, another program
        sign(homes, agent, other.pid)
        assert store.rewind(2, session, homes=homes, dry_run=True).conversation["status"] == (
            "rewound"
        )
    with posing_as(tmp_path, COMMANDS[agent]) as agent_process:
        sign(homes, agent, agent_process.pid)
        with pytest.raises(AgentRunning, match=rf"pid {agent_process.pid}"):
            store.rewind(2, session, homes=homes)
    assert notes(store) == b"version 2\n"


@pytest.mark.parametrize("agent", REGISTERED)
def test_the_registry_is_found_where_the_transcript_is(
    store: Store, tmp_path: Path, homes: dict[str, str], agent: str
) -> None:
    """The agent ran with a folder of its own (``CLAUDE_CONFIG_DIR`` and the like) that the
    caller's environment does not name: its registry, beside the transcript, still
    refuses while it runs, and the record goes to that transcript once it is gone."""
    theirs = {agent: str(tmp_path / "elsewhere" / agent)}
    os.makedirs(theirs[agent])
    session, _ = recorded(store, theirs, agent)
    with posing_as(tmp_path, COMMANDS[agent]) as running:
        sign(theirs, agent, running.pid)
        with pytest.raises(AgentRunning, match="first, or use --mode code"):
            store.rewind(2, session, homes=homes)  # homes: the caller's, not the agent's
        assert notes(store) == b"version 2\n"
    chat = store.rewind(2, session, homes=homes).conversation
    assert chat is not None and chat["status"] == "rewound", chat
    assert live_of(MODULES[agent], Path(chat["transcript"])).live() == KEPT[agent]


def test_without_psutil_a_named_pid_cannot_be_told_and_the_chat_is_refused(
    store: Store, tmp_path: Path, homes: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    session, _ = recorded(store, homes, "claude-code")
    with posing_as(tmp_path, "claude") as running:
        sign(homes, "claude-code", running.pid)
        monkeypatch.setitem(sys.modules, "psutil", None)  # installed without its dependencies
        with pytest.raises(AgentRunning, match=r"cannot tell whether Claude Code is running"):
            store.rewind(2, session, homes=homes)
        assert notes(store) == b"version 2\n"
        assert store.rewind(2, session, mode="code", homes=homes).conversation is None


# -- Codex counts user messages ------------------------------------------------------------


def steered_codex(store: Store, homes: dict[str, str]) -> tuple[str, Path]:
    """Three Codex turns, the second steered by the user with a second message while it ran:
    Codex's hook gives that message a turn of snapstore's own, with the same ``turn_id``."""
    transcript = transcript_in(homes, "codex")
    session = "codex/sid"
    ordinal = 0

    def write(*records: dict) -> None:
        nonlocal ordinal
        with open(transcript, "a") as f:
            for record in records:
                f.write(json.dumps({"ordinal": ordinal, **record}) + "\n")
                ordinal += 1

    def message(turn: str, item: str) -> dict:
        completed = {"type": "UserMessage", "id": item}
        return {
            "type": "event_msg",
            "payload": {"type": "item_completed", "turn_id": turn, "item": completed},
        }

    write({"type": "session_meta", "payload": {"cli_version": "0.171.0"}})
    for n, (turn, items) in enumerate((("t0", ["m0"]), ("t1", ["m1", "m1s"]), ("t2", ["m2"]))):
        for i, item in enumerate(items):
            store.begin_turn(session, f"prompt {item}", turn, transcript=str(transcript))
            if not i:
                started = {"type": "task_started", "turn_attribution": {"turn_id": turn}}
                write({"type": "event_msg", "payload": started})
                write({"type": "turn_context", "payload": {"turn_id": turn}})
            write(message(turn, item))
            agent_write(store, "notes.txt", f"version {n}{item}\n", session=session)
            store.end_turn(session)
    return session, transcript


def test_codex_rolls_back_user_messages_not_turns(store: Store, homes: dict[str, str]) -> None:
    """A rewind to before the steered turn drops both its messages (and the next turn's);
    a rewind to before the steering message keeps the turn's first one."""
    session, transcript = steered_codex(store, homes)
    whole = transcript.read_bytes()
    store.rewind(3, session, homes=homes)  # turn 2 of 4: t1's first message
    record = json.loads(transcript.read_bytes()[len(whole) :])
    assert record["payload"] == {"type": "thread_rolled_back", "num_turns": 3}
    assert live_of(codex, transcript).live() == ["m0"]
    store.undo(homes=homes)
    store.rewind(2, session, homes=homes)  # the steering message
    record = json.loads(transcript.read_bytes()[len(whole) :])
    assert record["payload"] == {"type": "thread_rolled_back", "num_turns": 2}
    assert live_of(codex, transcript).live() == ["m0", "m1"]


# -- the apply only writes, and never waits ------------------------------------------------


class Crash(Exception):
    pass


def crashed_after_the_journal(store: Store, session: str, homes: dict[str, str]) -> None:
    """A rewind of turn 2 stopped right after its journal commit, its edit not made."""

    def crash(name: str) -> None:
        if name == "journal.journaled":
            raise Crash(name)

    from snapstore.core import faults

    faults.install(crash)
    try:
        with pytest.raises(Crash):
            store.rewind(2, session, homes=homes)
    finally:
        faults.install(None)
    assert store.unfinished_operations()


@pytest.mark.parametrize("agent", ["claude-code", "copilot"])
def test_a_fifo_swapped_in_after_the_journal_does_not_block_the_resume(
    store: Store, homes: dict[str, str], agent: str
) -> None:
    """The transcript (a fork's source) becomes a FIFO between the plan and the apply: the
    resume, which every later command and hook event runs first, opens it without blocking,
    leaves the chat and says so, and writes the files."""
    session, transcript = recorded(store, homes, agent)
    crashed_after_the_journal(store, session, homes)
    transcript.unlink()
    os.mkfifo(transcript)
    [result] = store.resume()
    assert [e["path"] for e in result.errors] == [result.conversation["transcript"]]
    assert "is a FIFO" in result.errors[0]["reason"]
    assert notes(store) == b"version 0\n" and not store.unfinished_operations()
    assert sorted(os.listdir(transcript.parent.parent)) == (
        ["sid"] if agent == "copilot" else ["-ws"]
    )


def test_a_fork_is_made_from_its_source_as_planned_or_not_at_all(
    store: Store, homes: dict[str, str]
) -> None:
    """The source of a fork changes between the plan and the apply: the fork is not written
    (its bytes no longer hash as planned), and no temp file stays."""
    session, log = recorded(store, homes, "copilot")
    crashed_after_the_journal(store, session, homes)
    with open(log, "r+b") as f:  # same size, same inode, other bytes
        f.write(f.read(8).replace(b"{", b" "))
    [result] = store.resume()
    assert "changed since the rewind was planned" in result.errors[0]["reason"]
    assert sorted(os.listdir(log.parent.parent)) == ["sid"]
    assert notes(store) == b"version 0\n"


_KILLED_FORK = textwrap.dedent(
    """
    import json, os, signal, sys
    from snapstore import Store
    from snapstore.core import faults

    passed = []

    def kill(name):
        passed.append(name)
        if name == sys.argv[3] and passed.count(name) == int(sys.argv[4]):  # its n-th pass
            os.kill(os.getpid(), signal.SIGKILL)

    faults.install(kill)
    with Store.open(sys.argv[1]) as store:
        store.rewind(2, "copilot/sid", homes=json.loads(sys.argv[2]))
    """
)


@pytest.mark.parametrize(
    ("point", "n"),
    [("conversation.fork_temp", 1), ("conversation.fork_temp", 2), ("journal.conversed", 1)],
)
def test_a_fork_killed_mid_way_leaves_nothing_undo_cannot_remove(
    store: Store, homes: dict[str, str], point: str, n: int
) -> None:
    """kill -9 while the fork's ``workspace.yaml`` or its log is written (the temp file full,
    not yet renamed), or once the fork is made: the next command finishes the fork, and undo
    removes all of it."""
    _, log = recorded(store, homes, "copilot")
    state = log.parent.parent
    big = [{"type": "tool.output", "id": f"x{i}", "data": {"out": "z" * 4096}} for i in range(1024)]
    with open(log, "r+") as f:  # several MiB of events before the turns
        lines = f.readlines()
        f.seek(0)
        f.writelines([lines[0], *(json.dumps(e) + "\n" for e in big), *lines[1:]])
    root = store.root
    store.close()
    done = subprocess.run(
        [sys.executable, "-c", _KILLED_FORK, root, json.dumps(homes), point, str(n)],
        cwd=Path(__file__).parents[2],
        check=False,
    )
    assert done.returncode == -signal.SIGKILL
    [fork] = [p for p in state.iterdir() if p.name != "sid"]
    if (point, n) == ("conversation.fork_temp", 2):
        assert sorted(p.name for p in fork.iterdir()) == [
            ".events.jsonl.snapstore-fork",
            "workspace.yaml",
        ]
        assert (fork / ".events.jsonl.snapstore-fork").stat().st_size > 4 << 20
    with Store.open(root) as again:
        again.resume()
        assert sorted(p.name for p in fork.iterdir()) == ["events.jsonl", "workspace.yaml"]
        assert live_of(copilot, fork / "events.jsonl").live() == ["e1"]
        again.undo(homes=homes)
    assert sorted(p.name for p in state.iterdir()) == ["sid"]


# -- opencode's export ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "spoil",
    [
        lambda s: s["messages"][0]["info"].update(id=["x"]),
        lambda s: s["messages"][1]["info"].update(parentID={"id": 1}),
        lambda s: s["messages"][2]["parts"].append({"id": 5}),
        lambda s: s["messages"].append("msg"),
        lambda s: s["info"].update(id=None),
        lambda s: s.update(messages={"a": 1}),
    ],
)
def test_an_opencode_export_with_wrong_typed_ids_is_refused(spoil) -> None:
    session = opencode_export(3)
    spoil(session)
    with pytest.raises(ConversationUnreadable, match="so the chat is left as it is"):
        opencode.checked(session, "ses_x")


def test_an_opencode_export_over_the_cap_is_not_read(
    store: Store, tmp_path: Path, homes: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``opencode export`` printing more than the cap (a program standing in for opencode on
    PATH): the chat is refused, the files go back."""
    program = tmp_path / "bin" / "opencode"
    program.parent.mkdir()
    program.write_text(f"#!/bin/sh\nexec /usr/bin/head -c {opencode.EXPORT_CAP + 1} /dev/zero\n")
    program.chmod(0o755)
    monkeypatch.setenv("PATH", str(program.parent))
    session = session_of(store, "opencode", Path(homes["opencode"]) / "opencode.db")
    refused(store, session, homes, "opencode export gave over 64 MiB")


def test_a_hook_event_leaves_an_operation_that_runs_opencode_for_the_next_command(
    store: Store, tmp_path: Path, homes: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An interrupted opencode rewind (its fork to import through opencode, which may take
    minutes): a hook event of another agent in the workspace finishes no such operation, so
    it never waits for opencode (a program standing in for it imports for 300 s); the next
    command does."""
    exported = opencode_export(3)
    (tmp_path / "export.json").write_text(json.dumps(exported))
    calls = tmp_path / "calls"
    program = tmp_path / "bin" / "opencode"
    program.parent.mkdir()
    program.write_text(
        f'#!/bin/sh\necho "$1" >> {calls}\n'
        f'[ "$1" = export ] && exec /bin/cat {tmp_path / "export.json"}\nexec /bin/sleep 300\n'
    )
    program.chmod(0o755)
    monkeypatch.setenv("PATH", f"{program.parent}{os.pathsep}{os.environ['PATH']}")
    session = "opencode/sid"
    users = [m["info"]["id"] for m in exported["messages"] if m["info"]["role"] == "user"]
    for i, key in enumerate(users):
        store.begin_turn(session, f"prompt {i}", key)
        agent_write(store, "notes.txt", f"version {i}\n", session=session)
        store.end_turn(session)
    crashed_after_the_journal(store, session, homes)
    [pending] = store.unfinished_operations()
    assert calls.read_text() == "export\n"
    event = {
        "hook_event_name": "UserPromptSubmit",
        "session_id": "other",
        "cwd": store.root,
        "prompt": "next",
        "prompt_id": "q1",
    }
    hook = run_snapstore(
        ["hook", "claude-code"],
        cwd=store.root,
        env=hermetic_env(PATH=os.environ["PATH"]),
        input=json.dumps(event),
        process=True,
        timeout=60,
    )
    assert hook.returncode == 0, hook.stderr
    assert calls.read_text() == "export\n"  # no import: the hook did not run opencode
    assert store.unfinished_operations() == [pending]
    assert notes(store) == b"version 2\n"
    with store.repo.read() as v:  # the hook recorded its event
        assert [t.prompt for t in v.turns() if t.session == "claude-code/other"] == ["next"]
