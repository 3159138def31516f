"""One behaviour through every door: a table of scenarios, each run through each front end.

Every door (the Click application, the fast path, the fast path through the workspace's daemon,
the interactive picker, the page's socket, the Python API and ``snapstore mcp``) hands a move
to the operation layer (``snapstore_cli.operations``) and renders its outcome; this table proves
that the same request gives the same answer through each. For every scenario and every door, a
fresh workspace is built the same way, the move is made, and then compared with every other
door's: the files on disk, the agent's transcript, the operation log and the reply's fields
(ids and folders written as the workspace's own, so that stores built apart compare). Each
scenario also says what that answer must be, so that the doors cannot agree on a wrong one. A
new door joins by adding one entry to :data:`DOORS`.

The MCP door is the agent's own, from inside its open turn: its rewind is of the files alone
and is recorded as a change of that turn. It answers the file scenarios as every door does
(the same files, and the same restored, merged, deleted, conflicts and errors in its reply,
read back from its words); the conversation scenarios do not apply to it, and
:data:`MCP_OWN` says how it answers them instead.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from snapstore_cli.operations.outcome import public

from snapstore import SnapstoreError, Store

from ..support import agent_turn, agent_write, hermetic_env, read, run_snapstore, write
from ..support.serving import Serving
from ..support.transcripts import PROMPTS, pose, session_of
from ..support.trees import snapshot
from ..support.ui import ask, open_socket, running_ui

CLAUDE = "claude-code/sid"


class Built(NamedTuple):
    """A scenario's workspace, ready for the move: the folder, the agents' homes (and their
    environment variables), the session and the transcript (or None)."""

    ws: Path
    homes: dict[str, str]
    env: dict[str, str]
    session: str
    transcript: Path | None


class Request(NamedTuple):
    """The move every door is asked for."""

    action: str  # rewind, undo, switch, redo or finish (`rewind --finish`)
    turn: str | None = None  # a number from `snapstore log`
    mode: str = "both"
    on_conflict: str = "skip"
    #: the turn named by its id instead: the store's N-th recorded (1 the first), as
    #: `snapstore log --all` shows it, for a switch to a turn taken back earlier
    recorded: int | None = None


def _target(b: Built, request: Request) -> str | None:
    """The turn the request names, as a door's user gives it: its number, or its id."""
    if request.recorded is None:
        return request.turn
    with Store.open(b.ws) as store, store.repo.read() as v:
        return sorted(v.turns(), key=lambda t: t.seq)[request.recorded - 1].id


class Reply(NamedTuple):
    """A door's answer: the outcome's fields (or ``{"error": code}``) and, for the doors that
    are command lines, the exit code."""

    data: dict[str, Any]
    exit: int | None = None


# -- the scenarios ------------------------------------------------------------------------


def _plain(b: Built, store: Store) -> None:
    for i in range(3):
        agent_turn(store, PROMPTS[i], {"notes.txt": f"version {i}\n"}, session=b.session)


def _merge(b: Built, store: Store) -> None:
    base = "".join(f"line {i}\n" for i in range(20))
    agent_turn(store, "make the file", {"app.txt": base}, session=b.session)
    agent_turn(store, "edit the top", {"app.txt": base.replace("line 1\n", "agent\n")}, b.session)
    write(b.ws, "app.txt", read(b.ws, "app.txt").replace(b"line 18\n", b"mine\n"))  # the user's


def _conflict(b: Built, store: Store) -> None:
    agent_turn(store, "make the file", {"app.txt": "a\nb\nc\n"}, session=b.session)
    agent_turn(store, "edit b", {"app.txt": "a\nagent\nc\n", "other.txt": "x\n"}, b.session)
    write(b.ws, "app.txt", "a\nmine\nc\n")  # the user edited the agent's line


def _partial(b: Built, store: Store) -> None:
    agent_turn(store, "make them", {"gone.txt": "keep me\n", "kept.txt": "1\n"}, b.session)
    agent_turn(store, "delete one", {"gone.txt": None, "kept.txt": "2\n"}, b.session)
    write(b.ws, "gone.txt/mine.txt", "the user's folder now\n")  # where the file must come back


def _claude(b: Built, store: Store) -> None:
    assert b.transcript is not None
    session_of(store, "claude-code", b.transcript)


def _running(b: Built, store: Store) -> None:
    _claude(b, store)
    live = pose(b.ws.parent, "claude")  # a live process that the running check takes for Claude
    _LIVE.append(live)
    registry = Path(b.homes["claude-code"]) / "sessions"
    registry.mkdir()
    (registry / f"{live.pid}.json").write_text(json.dumps({"pid": live.pid, "sessionId": "sid"}))


def _compacted(b: Built, store: Store) -> None:
    _claude(b, store)
    assert b.transcript is not None
    with open(b.transcript, "a") as f:
        f.write(json.dumps({"type": "system", "subtype": "compact_boundary", "uuid": "c"}) + "\n")


def _wrote_since(b: Built, store: Store) -> None:
    _claude(b, store)
    store.rewind(2, b.session, homes=b.homes)
    assert b.transcript is not None
    resumed = {"type": "user", "uuid": "u9", "parentUuid": "a0", "promptId": "p9"}
    with open(b.transcript, "a") as f:  # the user resumed Claude Code and sent a prompt
        f.write(json.dumps({**resumed, "message": {"content": "again"}}) + "\n")


def _no_transcript(b: Built, store: Store) -> None:
    for i in range(3):
        store.begin_turn(b.session, PROMPTS[i], f"p{i}")  # a hook that gave no transcript
        agent_write(store, "notes.txt", f"version {i}\n", session=b.session)
        store.end_turn(b.session)


def _rewound(b: Built, store: Store) -> None:
    _plain(b, store)
    store.rewind(2, b.session)  # the head is the first turn; the two after it taken back


def _undone(b: Built, store: Store) -> None:
    _claude(b, store)
    store.rewind(2, b.session, homes=b.homes)  # the files and the chat go back
    store.undo(None, b.session, homes=b.homes)  # and come forward again


def _left_in_conflict(b: Built, store: Store) -> None:
    _conflict(b, store)
    store.rewind(1, b.session)  # other.txt goes back; app.txt is left, in conflict


class Scenario(NamedTuple):
    build: Callable[[Built, Store], None]
    session: str
    request: Request
    expect: Callable[[Built, Reply], None]
    transcript: bool = False


def _expect_plain(b: Built, r: Reply) -> None:
    assert r.data["restored"] == ["notes.txt"] and r.data["errors"] == []
    assert r.data["user_text"] == PROMPTS[1]  # the prompt comes back: no transcript needed
    assert read(b.ws, "notes.txt") == b"version 0\n"


def _expect_merge(b: Built, r: Reply) -> None:
    assert r.data["merged"] == ["app.txt"] and r.data["errors"] == []
    assert read(b.ws, "app.txt") == b"".join(
        b"mine\n" if i == 18 else f"line {i}\n".encode() for i in range(20)
    )


def _expect_conflict(b: Built, r: Reply) -> None:
    assert r.data["restored"] == ["other.txt"] or r.data["deleted"] == ["other.txt"]
    assert [c["path"] for c in r.data["conflicts"]] == ["app.txt"]
    assert [(e["path"], e["kind"]) for e in r.data["errors"]] == [("app.txt", "conflict")]
    assert read(b.ws, "app.txt") == b"a\nmine\nc\n"  # left alone
    assert r.exit in (1, None)


def _expect_partial(b: Built, r: Reply) -> None:
    assert r.data["restored"] == ["kept.txt"]
    assert [(e["path"], e["kind"]) for e in r.data["errors"]] == [("gone.txt", "failed")]
    assert read(b.ws, "gone.txt/mine.txt") == b"the user's folder now\n"
    assert r.exit in (1, None)


def _expect_claude(b: Built, r: Reply) -> None:
    assert r.data["conversation"]["status"] == "rewound"
    assert r.data["user_text"] == PROMPTS[1]
    assert read(b.ws, "notes.txt") == b"version 0\n"


def _refused(code: str) -> Callable[[Built, Reply], None]:
    def expect(b: Built, r: Reply) -> None:
        assert r.data == {"error": code}
        assert r.exit in (3, None)
        assert read(b.ws, "notes.txt") == b"version 2\n"  # nothing changed

    return expect


def _expect_undo_refused(b: Built, r: Reply) -> None:
    assert r.data == {"error": "conversation_refused"}
    assert read(b.ws, "notes.txt") == b"version 0\n"  # the rewind stays


def _expect_undo_code(b: Built, r: Reply) -> None:
    assert r.data["conversation"] is None and r.data["restored"] == ["notes.txt"]
    assert read(b.ws, "notes.txt") == b"version 2\n"


def _expect_no_transcript(b: Built, r: Reply) -> None:
    assert r.data["user_text"] == PROMPTS[1] and r.data["restored"] == ["notes.txt"]
    assert r.data["conversation"]["status"] != "rewound"


def _expect_switch(b: Built, r: Reply) -> None:
    assert r.data["restored"] == ["notes.txt"] and r.data["errors"] == []
    assert read(b.ws, "notes.txt") == b"version 2\n"  # right after the old head, again
    assert r.exit in (0, None)


def _expect_redo(b: Built, r: Reply) -> None:
    assert r.data["restored"] == ["notes.txt"] and r.data["errors"] == []
    assert r.data["conversation"]["status"] == "rewound"  # the chat goes back again too
    assert read(b.ws, "notes.txt") == b"version 0\n"
    assert r.exit in (0, None)


def _expect_markers(b: Built, r: Reply) -> None:
    assert r.data["marked"] == ["app.txt"] and r.data["restored"] == []
    assert [(e["path"], e["kind"]) for e in r.data["errors"]] == [("app.txt", "conflict")]
    text = read(b.ws, "app.txt")
    assert text is not None and text.startswith(b"a\n<<<<<<<") and b"mine\n" in text
    assert r.exit in (1, None)  # a marked file is still left, to resolve


def _expect_theirs(b: Built, r: Reply) -> None:
    assert r.data["restored"] == ["app.txt"] and r.data["errors"] == []
    assert read(b.ws, "app.txt") == b"a\nb\nc\n"  # the version from before the turn
    assert r.exit in (0, None)


#: The session of the file scenarios: an agent's, so that the MCP door's agent can own it.
AGENT = "claude-code/mcp"
SCENARIOS = {
    "plain rewind": Scenario(_plain, AGENT, Request("rewind", "2"), _expect_plain),
    "merge": Scenario(_merge, AGENT, Request("rewind", "1"), _expect_merge),
    "conflict": Scenario(_conflict, AGENT, Request("rewind", "1"), _expect_conflict),
    "partial failure": Scenario(_partial, AGENT, Request("rewind", "1"), _expect_partial),
    "conversation": Scenario(_claude, CLAUDE, Request("rewind", "2"), _expect_claude, True),
    "running agent": Scenario(
        _running, CLAUDE, Request("rewind", "2"), _refused("run_active"), True
    ),
    "compaction": Scenario(
        _compacted, CLAUDE, Request("rewind", "2"), _refused("conversation_refused"), True
    ),
    "undo after the agent wrote": Scenario(
        _wrote_since, CLAUDE, Request("undo"), _expect_undo_refused, True
    ),
    "undo of the files alone": Scenario(
        _wrote_since, CLAUDE, Request("undo", mode="code"), _expect_undo_code, True
    ),
    "no transcript": Scenario(
        _no_transcript, CLAUDE, Request("rewind", "2"), _expect_no_transcript
    ),
    "switch back to the old head": Scenario(
        _rewound, AGENT, Request("switch", recorded=3), _expect_switch
    ),
    "redo after an undo": Scenario(_undone, CLAUDE, Request("redo"), _expect_redo, True),
    "finish with markers": Scenario(
        _left_in_conflict, AGENT, Request("finish", on_conflict="markers"), _expect_markers
    ),
    "finish with theirs": Scenario(
        _left_in_conflict, AGENT, Request("finish", on_conflict="theirs"), _expect_theirs
    ),
}
_LIVE: list[subprocess.Popen[bytes]] = []


@pytest.fixture(autouse=True)
def _stop_live_processes() -> Iterator[None]:
    yield
    while _LIVE:
        live = _LIVE.pop()
        live.kill()
        live.wait()


# -- the doors ------------------------------------------------------------------------------


def _args(b: Built, request: Request) -> list[str]:
    args = ["--json", "--session", b.session]
    target = _target(b, request)
    if request.action == "finish":
        args += ["rewind", "--finish"]
    else:
        args.append(request.action)
    if target is not None:
        args += [target, "--yes"]
    if request.mode != "both":
        args += ["--mode", request.mode]
    if request.on_conflict != "skip":
        args += ["--on-conflict", request.on_conflict]
    return args


def _command_line(b: Built, request: Request, click: bool) -> Reply:
    done = run_snapstore(_args(b, request), cwd=b.ws, env=b.env, click=click)
    data = json.loads(done.stdout)
    if "error" in data:
        assert done.stderr.startswith("snapstore: "), done.stderr
        return Reply({"error": data["error"]["code"]}, done.returncode)
    return Reply(data, done.returncode)


def click_door(b: Built, request: Request, _mp: pytest.MonkeyPatch) -> Reply:
    return _command_line(b, request, click=True)


def fast_door(b: Built, request: Request, _mp: pytest.MonkeyPatch) -> Reply:
    """The console script's own parse: ``rewind TURN``, ``undo`` and ``redo`` run without
    Click; ``switch`` and ``rewind --finish`` it hands to the Click application, by design
    (cli/doors/fast.py), so through this door they are what a user's shell gets."""
    return _command_line(b, request, click=False)


def daemon_door(b: Built, request: Request, _mp: pytest.MonkeyPatch) -> Reply:
    """The fast path's command line while `snapstore serve` runs for the workspace: the move
    is the daemon's (its log says it made it), the output this process's."""
    with Serving(b.ws, b.env) as daemon:
        reply = _command_line(b, request, click=False)
        assert [line.split()[1] for line in daemon.moves()] == [request.action], daemon.log()
    return reply


def picker_door(b: Built, request: Request, mp: pytest.MonkeyPatch) -> Reply:
    """`snapstore rewind` with no TURN on a terminal: the first menu chooses the turn (the
    oldest at the top, turn 1 just above "Stay at current position"; a turn taken back
    earlier, ↻, above them, by its short id), the second the mode asked for (the picker
    offers only what it can do; "Do nothing" is last), or, for a turn taken back earlier,
    "Switch to it"."""
    from snapstore_cli.doors import picker
    from snapstore_cli.doors.click.commands import rewind
    from snapstore_cli.output import results

    assert request.action in ("rewind", "switch"), "not the picker's: see NOT_OFFERED"
    target = _target(b, request)
    assert target is not None
    offered: list[list[Any]] = []  # each mode menu's (mode, label, note) choices
    titles: list[str] = []  # what each menu said above its choices

    def mode_choices(*args: Any) -> list[Any]:
        offered.append(real_choices(*args))
        return offered[-1]

    def menu(title: Any, items: Any, details: object = None, start: int = 0) -> int | None:
        rows = items(200)
        titles.append("\n".join(title(200)))
        if len(titles) == 1:
            assert rows[start].strip() == picker.STAY  # the default changes nothing
            if request.action == "switch":
                [row] = [i for i, row in enumerate(rows) if f"↻  {target[:8]}" in row]
                return row
            return len(rows) - 1 - int(target)
        if request.action == "switch":
            assert rows == ["Switch to it", picker.DO_NOTHING] and start == 1, rows
            return 0
        assert rows[start] == picker.DO_NOTHING
        modes = [mode for mode, _label, _note in offered[-1]]
        return modes.index(request.mode) if request.mode in modes else start

    reported: list[Any] = []

    def report(outcome: Any, as_json: bool, diffs: bool = False) -> int:
        reported.append(outcome.to_json())
        return real_report(outcome, as_json, diffs)

    real_report, real_choices = results.report, picker.mode_choices
    mp.setattr(picker, "menu", menu)
    mp.setattr(picker, "mode_choices", mode_choices)
    mp.setattr(rewind, "_interactive", lambda: True)
    mp.setattr(results, "report", report)
    done = run_snapstore(["--session", b.session, "rewind"], cwd=b.ws, env=b.env, click=True)
    if not reported:  # the mode asked for was not offered: what the confirmation said instead
        assert "The chat cannot go back: " in titles[-1], titles
        code = "run_active" if "exit claude first" in titles[-1] else "conversation_refused"
        return Reply({"error": code}, 3)
    return Reply(reported[0], done.returncode)


def socket_door(b: Built, request: Request, _mp: pytest.MonkeyPatch) -> Reply:
    """The page's WebSocket, through a real `snapstore ui` with the same environment."""
    frame: dict[str, Any] = {"action": request.action, "session_id": b.session}
    target = _target(b, request)
    if target is not None:  # a number from the head, or an id
        frame["turn"] = int(target) if request.recorded is None else target
    if request.action in ("rewind", "undo"):
        frame["mode"] = request.mode
    frame["on_conflict"] = request.on_conflict
    extra = {k: v for k, v in b.env.items() if k not in hermetic_env()}
    with running_ui(b.ws, **extra) as ui, open_socket(ui) as ws:
        answer = ask(ws, frame)
    data = dict(answer["data"])
    if answer["type"] == "error":
        return Reply({"error": data["code"]})
    data.pop("request_id")
    data["session"] = data.pop("session_id")
    data["undo_id"] = data.pop("operation_id")
    data["new_head"] = data.pop("new_head_id")
    assert data.pop("restored_paths") == sorted(data["restored"] + data["merged"] + data["deleted"])
    said = data.pop("git_lines")  # the page's words for `git` (tests/e2e/test_ui_api.py)
    assert said == [] or data["git"] is not None, said
    for item in data["errors"]:  # the page's sentence for each path left (the facts compare)
        said = item.pop("message")
        assert said.startswith(item["path"] + " ") and said.endswith("."), said
    return Reply(data)


def python_door(b: Built, request: Request, _mp: pytest.MonkeyPatch) -> Reply:
    """The library itself (it reads no environment: the homes are passed)."""
    target = _target(b, request)
    policy: Any = request.on_conflict
    with Store.open(b.ws) as store:
        try:
            if request.action == "rewind":
                assert target is not None
                result = store.rewind(
                    int(target),
                    b.session,
                    mode=request.mode,  # type: ignore[arg-type]
                    on_conflict=policy,
                    homes=b.homes,
                )
            elif request.action == "switch":
                assert target is not None
                result = store.switch(target, b.session, on_conflict=policy)
            elif request.action == "redo":
                result = store.redo(None, b.session, on_conflict=policy, homes=b.homes)
            elif request.action == "finish":
                result = store.finish(b.session, on_conflict=policy)
            else:
                result = store.undo(
                    None,
                    b.session,
                    on_conflict=policy,
                    homes=b.homes,
                    mode=request.mode,  # type: ignore[arg-type]
                )
        except SnapstoreError as exc:
            return Reply({"error": exc.code})
    return Reply(public(result))


#: The reply's fields the MCP door gives, as its words name them.
WORDS = {
    "Restored exactly: ": "restored",
    "Merged (later edits by others kept): ": "merged",
    "Deleted (they did not exist then): ": "deleted",
}


def _from_words(text: str) -> dict[str, Any]:
    """The fields of a rewind_files reply, read back from the words the model gets."""
    data: dict[str, Any] = {"restored": [], "merged": [], "deleted": [], "conflicts": []}
    data["errors"], data["user_text"] = [], ""
    for line in text.splitlines():
        for lead, key in WORDS.items():
            if line.startswith(lead):
                data[key] = line[len(lead) : -1].split(", ")
        if line.startswith("Left as it is (conflict): "):
            path = line[len("Left as it is (conflict): ") :].split(": ", 1)[0]
            data["conflicts"].append({"path": path})
            data["errors"].append({"path": path, "kind": "conflict"})
        if line.startswith("Not written: "):
            data["errors"].append(
                {"path": line[len("Not written: ") :].split(": ", 1)[0], "kind": "failed"}
            )
        if line.startswith("That turn's prompt: "):
            data["user_text"] = line[len("That turn's prompt: ") :]
    return data


def mcp_door(b: Built, request: Request, _mp: pytest.MonkeyPatch) -> Reply:
    """``snapstore mcp``, started by a stand-in agent whose real hooks opened its turn: the
    rewind is asked from inside that turn (the turn named by id, as list_turns gives it), and
    the turn ends after it."""
    from .test_mcp import agent as run_agent

    assert request.action in ("rewind", "undo"), "not MCP's: see NOT_OFFERED"
    steps: list[dict[str, Any]] = [{"hook": "UserPromptSubmit", "prompt": "take it back"}]
    if request.action == "rewind":
        assert request.turn is not None
        with Store.open(b.ws) as store:
            turn = store.rewind_points(b.session)[int(request.turn) - 1].turn.id
        steps.append({"tool": "rewind_files", "args": {"turn": turn}})
    else:
        steps.append({"tool": "undo_last"})
    agent_id = b.session.split("/", 1)[1]
    env = {k: v for k, v in b.env.items() if k.startswith(("HOME", "CLAUDE", "CODEX", "XDG"))}
    report = run_agent(b.ws, [*steps, {"hook": "Stop"}], session=agent_id, env=env)
    [call] = report["calls"]
    if call["error"]:
        return Reply({"error": call["text"]})
    return Reply({**_from_words(call["text"]), "text": call["text"]})


Door = Callable[[Built, Request, pytest.MonkeyPatch], Reply]
DOORS: dict[str, Door] = {
    "click": click_door,
    "fast path": fast_door,
    "daemon": daemon_door,
    "picker": picker_door,
    "socket": socket_door,
    "python": python_door,
    "mcp": mcp_door,
}
#: The moves a door does not offer, by design, and why: the scenarios that ask for one run
#: through every other door.
NOT_OFFERED: dict[str, dict[str, str]] = {
    "picker": {
        "undo": "the picker chooses a turn (`rewind` with no TURN): `undo` is its own command",
        "redo": "the picker chooses a turn (`rewind` with no TURN): `redo` is its own command",
        "finish": "`rewind --finish` names no turn to choose, so it never opens the picker",
    },
    "mcp": {
        action: "the agent's door offers rewind_files and undo_last alone: from inside its "
        "open turn the operation layer takes only a files-only rewind or undo (requests.check)"
        for action in ("switch", "redo", "finish")
    },
}
#: The doors that give part of a move's fields (the MCP door: files only, from inside a turn).
PARTIAL = {"mcp": ("restored", "merged", "deleted", "conflicts", "errors", "user_text")}


def _mcp_files_only(b: Built, r: Reply, before: bytes | None) -> None:
    """From inside, the conversation is never edited (the agent is running it): the files go
    back, the transcript stays as it was, and the reply says so."""
    assert r.data["restored"] == ["notes.txt"] and read(b.ws, "notes.txt") == b"version 0\n"
    assert "Your conversation is not changed" in r.data["text"]
    assert b.transcript is None or b.transcript.read_bytes() == before


def _mcp_nothing_to_undo(b: Built, r: Reply, before: bytes | None) -> None:
    """undo_last takes back only a rewind made from inside: none was."""
    assert "no rewind made from inside its turns to undo" in r.data["error"]
    assert read(b.ws, "notes.txt") == b"version 0\n" and (
        b.transcript is None or b.transcript.read_bytes() == before
    )


#: How the MCP door answers the scenarios that are not its own (the conversation half).
MCP_OWN: dict[str, Callable[[Built, Reply, bytes | None], None]] = {
    "conversation": _mcp_files_only,
    "running agent": _mcp_files_only,
    "compaction": _mcp_files_only,
    "no transcript": _mcp_files_only,
    "undo after the agent wrote": _mcp_nothing_to_undo,
    "undo of the files alone": _mcp_nothing_to_undo,
}


# -- running and comparing -------------------------------------------------------------------


def _build(tmp: Path, scenario: Scenario) -> Built:
    ws = tmp / "ws"
    ws.mkdir(parents=True)
    homes = {a: str(tmp / "homes" / a) for a in ("claude-code", "codex", "gemini-cli", "qwen-code")}
    homes.update(copilot=str(tmp / "homes" / "copilot"), opencode=str(tmp / "homes" / "opencode"))
    for home in homes.values():
        os.makedirs(home)
    env = hermetic_env(
        HOME=str(tmp / "homes"),
        CLAUDE_CONFIG_DIR=homes["claude-code"],
        CODEX_HOME=homes["codex"],
        COPILOT_HOME=homes["copilot"],
        XDG_DATA_HOME=str(tmp / "homes"),
    )
    transcript = Path(homes["claude-code"]) / "t.jsonl" if scenario.transcript else None
    built = Built(ws.resolve(), homes, env, scenario.session, transcript)
    from ..support import Clock

    with Store.init(built.ws, clock=Clock()) as store:
        scenario.build(built, store)
    return built


def _state(b: Built) -> dict[str, Any]:
    """What the move left: files, transcript (its records, less the agent's own time
    stamps), and the operation log."""
    records = []
    if b.transcript is not None:
        for line in b.transcript.read_text().splitlines():
            record = json.loads(line)
            record.pop("timestamp", None)
            records.append(record)
    with Store.open(b.ws) as store:
        ops = [
            (op.action, op.session, op.target, op.files, op.conflicts, op.errors, op.status)
            for op in store.operations()
        ]
    return {"files": snapshot(b.ws), "transcript": records, "ops": ops}


def _same_across_stores(b: Built, value: Any) -> Any:
    """``value`` with the store's turn ids as their sequence numbers, and the workspace's
    folders named, so that workspaces built apart compare."""
    with Store.open(b.ws) as store, store.repo.read() as v:
        ids = {t.id: f"turn#{t.seq}" for t in v.turns()}
    text = json.dumps(value, sort_keys=True, default=list)
    for turn_id, name in ids.items():
        text = text.replace(turn_id, name)
    return json.loads(text.replace(str(b.ws.parent), "<tmp>"))


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_every_door_gives_the_same_answer(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scenario = SCENARIOS[name]
    seen: dict[str, tuple[Any, Any, int | None]] = {}
    for door, make in DOORS.items():
        if scenario.request.action in NOT_OFFERED.get(door, {}):
            continue  # declared, with its reason, above
        built = _build(tmp_path / door.replace(" ", "-"), scenario)
        before = built.transcript.read_bytes() if built.transcript else None
        reply = make(built, scenario.request, monkeypatch)
        monkeypatch.undo()
        if door == "mcp" and name in MCP_OWN:
            MCP_OWN[name](built, reply, before)
            continue
        scenario.expect(built, reply)
        data = {k: v for k, v in reply.data.items() if k not in ("finish", "text")}
        seen[door] = (
            _same_across_stores(built, data),
            _same_across_stores(built, _state(built)),
            reply.exit,
        )
    first, (data, state, _code) = next(iter(seen.items()))
    for door, (other_data, other_state, _other) in seen.items():
        if door in PARTIAL:  # its fields, and the files and the operation log it leaves
            keys = PARTIAL[door]
            mine = {k: _fields(v) for k, v in data.items() if k in keys}
            assert {k: _fields(v) for k, v in other_data.items()} == mine, door
            assert other_state["files"] == state["files"], f"{door} leaves otherwise"
            assert other_state["ops"] == state["ops"], f"{door} logs otherwise"
            continue
        assert other_data == data, f"{door} answers otherwise than {first}"
        assert other_state == state, f"{door} leaves otherwise than {first}"
    codes = {door: code for door, (_d, _s, code) in seen.items() if code is not None}
    assert len(set(codes.values())) == 1, codes


def test_a_door_that_does_not_offer_a_move_says_why() -> None:
    """Each move a door leaves out is declared with its reason, and still runs through at
    least three doors; MCP's reason holds: the operation layer refuses those moves from
    inside a turn, and the server registers no tool for them."""
    from snapstore_cli.operations.requests import Move, check

    from snapstore import BadInput

    for door, moves in NOT_OFFERED.items():
        assert door in DOORS and all(moves.values()), door
    for name, scenario in SCENARIOS.items():
        doors = [d for d in DOORS if scenario.request.action not in NOT_OFFERED.get(d, {})]
        assert len(doors) >= 3, name
    for action in NOT_OFFERED["mcp"]:
        target = "1" if action == "switch" else None
        with pytest.raises(BadInput):
            check(Move(action, target, AGENT, mode="code", inside=True))  # type: ignore[arg-type]
    server = (Path(__file__).parents[2] / "cli" / "doors" / "mcp" / "server.py").read_text()
    assert "def undo_last(" in server
    assert not any(f"def {action}" in server for action in NOT_OFFERED["mcp"])


def _fields(value: Any) -> Any:
    """A field as the MCP door's words can carry it: paths (and kinds), no reasons."""
    if isinstance(value, list):
        return [
            {k: v for k, v in item.items() if k in ("path", "kind")}
            if isinstance(item, dict)
            else item
            for item in value
        ]
    return value


def test_no_door_makes_a_move_on_the_store_itself() -> None:
    """Only the operation layer calls the Store's moves: a door that did would drift."""
    import ast

    doors = Path(__file__).parents[2] / "cli" / "doors"
    moves = {"rewind", "switch", "undo", "redo", "finish", "resume"}
    calls = []
    for path in doors.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in moves
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "store"
            ):
                calls.append(f"{path.relative_to(doors)}:{node.lineno} store.{node.func.attr}")
    assert calls == []
