"""Every agent's hook events, as the agents sent them (tests/fixtures/agents: recorded from the
real CLIs; from their docs for Cursor and Windsurf, and from its package for Auggie), fed to
`snapstore hook AGENT` (in the test's process, tests/support/runner.py): two turns recorded,
rewound exactly, undone, and rewound around a hand edit (a merge); bad input never blocks;
strict mode blocks the agent's own way."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from ..support import hermetic_env, run_snapstore, snapstore

FIXTURES = Path(__file__).parents[1] / "fixtures" / "agents"
AGENTS = sorted(p.stem for p in FIXTURES.glob("*.json"))
P1, P2 = "Add src/new.py", "Make the greeting friendlier"
APP = 'GREETING = "hello"\n\n\ndef main():\n    print(GREETING)\n'
NEW = "def new():\n    return 'v1'\n"
#: app.py as the agent's edit leaves it: its first line changed, the rest kept.
EDITED = APP.replace('"hello"', '"hello, agent"')
#: Where each agent puts its session id (a dotted key), independently of the adapters.
SESSION = {
    "claude-code": "session_id",
    "gemini-cli": "session_id",
    "codex": "session_id",
    "qwen-code": "session_id",
    "copilot": "sessionId",
    "opencode": "input.sessionID",
    "cline": "taskId",
    "cursor": "conversation_id",
    "windsurf": "trajectory_id",
    "auggie": "conversation_id",
}
#: The events before a tool runs, and the write tool each agent used.
PRE = {"PreToolUse", "BeforeTool", "preToolUse", "tool.execute.before", "pre_write_code"}
WRITE_TOOL = {
    "claude-code": "Write",
    "gemini-cli": "write_file",
    "codex": "apply_patch",
    "qwen-code": "write_file",
    "copilot": "create",
    "opencode": "write",
    "cline": "editor",
    "cursor": "Write",
    "windsurf": "write_code",
    "auggie": "save-file",
}
#: What a hook prints on success, when it is not nothing.
SILENT = {"gemini-cli": b"{}", "cursor": b"{}"}
REPLIES = {("cursor", "beforeSubmitPrompt"): b'{"continue": true}'}


def steps(agent: str, root: Path) -> list[tuple[str | None, dict]]:
    text = (FIXTURES / f"{agent}.json").read_text()
    data = json.loads(text.replace("__CWD__", str(root)).replace("__HOME__", str(root.parent)))
    return [(event, payload) for event, payload in data["steps"]]


def hook(
    agent: str, event: str | None, payload: dict | str, root: Path, *args: str, **env: str
) -> subprocess.CompletedProcess:
    raw = payload if isinstance(payload, str) else json.dumps(payload)
    return run_snapstore(
        ["hook", agent, *([event] if event else []), *args],
        cwd=root,
        env=hermetic_env(**env),
        input=raw.encode(),
        text=False,
    )


def event_of(event: str | None, payload: dict) -> str:
    return event or payload.get("hook_event_name") or payload.get("agent_action_name") or ""


def dig(data: dict, key: str) -> object:
    for part in key.split("."):
        data = data.get(part) if isinstance(data, dict) else None
    return data


def play(agent: str, root: Path) -> list[str]:
    """Send every step, doing what each write tool does between its before and after; the
    snapstore sessions the steps name."""
    sessions = []
    for event, payload in steps(agent, root):
        name = event_of(event, payload)
        done = hook(agent, event, payload, root)
        want = REPLIES.get((agent, name), SILENT.get(agent, b""))
        assert (done.returncode, done.stdout, done.stderr) == (0, want, b""), (name, done)
        text = json.dumps(payload)
        if name in PRE and "src/new.py" in text and not (root / "src" / "new.py").exists():
            (root / "src").mkdir(exist_ok=True)
            (root / "src" / "new.py").write_text(NEW)
        elif name in PRE and "hello, agent" in text and (root / "app.py").read_text() == APP:
            (root / "app.py").write_text(EDITED)
        session = dig(payload, SESSION[agent])
        if isinstance(session, str) and f"{agent}/{session}" not in sessions:
            sessions.append(f"{agent}/{session}")
    return sessions


@pytest.mark.parametrize("agent", AGENTS)
def test_two_turns_of_each_agent_are_recorded_rewound_and_undone(root: Path, agent: str) -> None:
    (root / "app.py").write_text(APP)
    assert snapstore(root, "init").returncode == 0
    sessions = play(agent, root)
    assert (root / "app.py").read_text() == EDITED
    logs = {
        s: json.loads(snapstore(root, "--json", "log", "--session", s).stdout) for s in sessions
    }
    if agent == "cline":  # a task per prompt; the headless first task had no prompt event
        assert [[(p["prompt"], p["files"]) for p in log] for log in logs.values()] == [
            [("", 1)],
            [(P2, 1)],
        ]
        edit_session = sessions[1]
        edit_turn, write_turn = ("1", sessions[1]), ("1", sessions[0])
    else:
        assert len(sessions) == 1
        assert [(p["prompt"], p["files"]) for p in logs[sessions[0]]] == [(P2, 1), (P1, 1)]
        edit_session = sessions[0]
        edit_turn, write_turn = ("1", sessions[0]), ("2", sessions[0])
    show = json.loads(
        snapstore(root, "--json", "show", write_turn[0], "--session", write_turn[1]).stdout
    )
    assert [(c["path"], c["status"], c["tool"]) for c in show["changes"]] == [
        ("src/new.py", "added", WRITE_TOOL[agent])
    ]

    rewind = snapstore(root, "rewind", edit_turn[0], "--yes", "--session", edit_session)
    assert rewind.returncode == 0, rewind.stderr
    assert (root / "app.py").read_text() == APP and (root / "src" / "new.py").read_text() == NEW
    assert snapstore(root, "undo").returncode == 0
    assert (root / "app.py").read_text() == EDITED
    with (root / "app.py").open("a") as handle:  # the user's own line, after the agent's turn
        handle.write("\nmain()\n")
    rewind = snapstore(root, "--json", "rewind", edit_turn[0], "--yes", "--session", edit_session)
    assert rewind.returncode == 0, rewind.stderr
    assert json.loads(rewind.stdout)["merged"] == ["app.py"]
    assert (root / "app.py").read_text() == APP + "\nmain()\n"  # the agent's edit out, theirs in
    assert snapstore(root, "undo").returncode == 0  # the agent's edit back, the user's kept
    assert (root / "app.py").read_text() == EDITED + "\nmain()\n"
    rewind = snapstore(root, "rewind", write_turn[0], "--yes", "--session", write_turn[1])
    assert rewind.returncode == 0, rewind.stderr
    assert not (root / "src" / "new.py").exists()


@pytest.mark.parametrize("agent", AGENTS)
@pytest.mark.parametrize(
    "raw,message",
    [
        ("this is not json", "not JSON"),
        ("[1, 2]", "not a JSON object"),
        ("{}", "session id"),  # with the event on the command line; else nothing to do
    ],
)
def test_bad_input_never_blocks_but_strict_mode_does(
    root: Path, agent: str, raw: str, message: str
) -> None:
    assert snapstore(root, "init").returncode == 0
    event = next(e for e, _ in steps(agent, root))
    done = hook(agent, event, raw, root)
    assert done.returncode == 0 and done.stdout == SILENT.get(agent, b"")
    if raw == "{}" and event is None:  # the payload names no event: not one of snapstore's
        assert done.stderr == b""
        return
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("snapstore: ") and message in lines[0]
    assert message in (root / ".snapstore" / "hook.log").read_text()
    strict = hook(agent, event, raw, root, SNAPSTORE_STRICT="1")
    assert strict.returncode == 2 and b"Traceback" not in strict.stderr
    if agent == "cline":  # Cline ignores exit codes: this is how a hook cancels a tool call
        answer = json.loads(strict.stdout)
        assert answer["cancel"] is True and message in answer["errorMessage"]


@pytest.mark.parametrize("agent", AGENTS)
def test_a_tool_call_that_names_no_file_is_reported_not_blocked(root: Path, agent: str) -> None:
    assert snapstore(root, "init").returncode == 0
    event, payload = next(
        (e, p)
        for e, p in steps(agent, root)
        if event_of(e, p) in PRE and "src/new.py" in json.dumps(p)
    )
    text = json.dumps(payload)
    for key in ('"file_path": ', '"path": ', '"filePath": '):
        text = text.replace(key, '"elsewhere": ')
    text = text.replace("*** Add File:", "*** Nothing:")
    done = hook(agent, event, text, root)
    assert done.returncode == 0 and done.stdout == SILENT.get(agent, b"")
    assert len(done.stderr.decode().splitlines()) == 1, done.stderr


def test_a_user_wide_hook_does_nothing_without_a_store(tmp_path: Path) -> None:
    """`--no-create` (what `--scope user` installs write): no store here, nothing happens;
    without it, the first hook creates the store at the project's root."""
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    for args, created in (((("--no-create",)), False), ((), True)):
        event, payload = steps("codex", project)[1]
        done = hook("codex", event, payload, project, *args)
        assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
        assert (project / ".snapstore").exists() is created
    assert snapstore(project, "init").returncode == 0
    event, payload = steps("codex", project)[6]  # a second prompt: recorded with --no-create
    assert hook("codex", event, payload, project, "--no-create").returncode == 0
    log = json.loads(snapstore(project, "--json", "log").stdout)
    assert [p["prompt"] for p in log] == [P2, P1]


def test_copilot_running_claude_code_hooks_records_for_copilot_once(root: Path) -> None:
    """Copilot CLI runs .claude/settings*.json hooks (COPILOT_CLI=1), with Claude's event and
    tool names and its own arguments: recorded as the Copilot session. Once Copilot's own
    snapstore hooks are installed, those record, and Claude Code's stand aside."""
    assert snapstore(root, "init").returncode == 0
    sid = "e4500134-20dd-413a-a302-885aa4c4b999"
    event = {
        "hook_event_name": "PreToolUse",
        "session_id": sid,
        "cwd": str(root),
        "tool_name": "Write",
        "tool_input": {"path": str(root / "notes.txt"), "file_text": "alpha\n"},
    }
    env = {"COPILOT_CLI": "1", "COPILOT_PROJECT_DIR": str(root), "HOME": str(root.parent)}
    assert hook("claude-code", None, event, root, **env).returncode == 0
    (root / "notes.txt").write_text("alpha\n")
    post = {**event, "hook_event_name": "PostToolUse"}
    assert hook("claude-code", None, post, root, **env).returncode == 0
    show = json.loads(snapstore(root, "--json", "show", "1", "--session", f"copilot/{sid}").stdout)
    assert [(c["path"], c["status"]) for c in show["changes"]] == [("notes.txt", "added")]

    assert snapstore(root, "hook", "install", "copilot").returncode == 0
    other = {**event, "tool_input": {"path": str(root / "other.txt"), "file_text": "x"}}
    assert hook("claude-code", None, other, root, **env).returncode == 0
    show = json.loads(snapstore(root, "--json", "show", "1", "--session", f"copilot/{sid}").stdout)
    assert [c["path"] for c in show["changes"]] == ["notes.txt"]  # nothing from Claude's hook
    assert json.loads(snapstore(root, "--json", "status").stdout)["sessions"] == 1
