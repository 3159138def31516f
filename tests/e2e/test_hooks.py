"""Agent hooks end to end: `snapstore hook ...` fed documented payloads on its stdin (in the
test's process: the real agents' tests and tests/e2e/test_startup.py run it as a process)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from ..support import hermetic_env, run_snapstore, snapstore, snapstore_bin

FIXTURES = Path(__file__).parents[1] / "fixtures"


def payload(agent: str, name: str, root: Path, **changes: object) -> dict:
    text = (FIXTURES / agent / f"{name}.json").read_text()
    data = json.loads(
        text.replace("__CWD__", str(root)).replace("__TRANSCRIPT__", str(root / "t.jsonl"))
    )
    data.update(changes)
    return data


def hook(agent: str, event: dict | str | bytes, root: Path, **env: str):
    raw = event if isinstance(event, (str, bytes)) else json.dumps(event)
    return run_snapstore(
        ["hook", agent],
        cwd=root,
        env=hermetic_env(**env),
        input=raw.encode() if isinstance(raw, str) else raw,
        text=False,
    )


def apply_tool(event: dict) -> None:
    """Do what the agent's file tool does, between PreToolUse and PostToolUse."""
    tool = event["tool_name"]
    args = event["tool_input"]
    path = Path(args.get("file_path") or args["notebook_path"])
    if not path.is_absolute():
        path = Path(event["cwd"]) / path
    if tool in ("Write", "write_file"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(args["content"])
    elif tool in ("Edit", "replace"):
        text = path.read_text()
        assert args["old_string"] in text
        path.write_text(text.replace(args["old_string"], args["new_string"], 1))
    elif tool == "MultiEdit":
        text = path.read_text()
        for edit in args["edits"]:
            text = text.replace(edit["old_string"], edit["new_string"], 1)
        path.write_text(text)


def ok(result, stdout: bytes = b"") -> None:
    assert result.returncode == 0, result.stderr
    assert result.stdout == stdout, result.stdout
    assert result.stderr == b"", result.stderr


def test_claude_code_session_then_rewind(root: Path) -> None:
    agent = "claude-code"
    assert snapstore(root, "init").returncode == 0
    ok(hook(agent, payload(agent, "session-start", root), root))
    ok(hook(agent, payload(agent, "user-prompt-submit", root), root))
    for name in ("pre-tool-use-write", "post-tool-use-write"):
        event = payload(agent, name, root)
        ok(hook(agent, event, root))
        if name.startswith("pre"):
            apply_tool(event)
    ok(hook(agent, payload(agent, "pre-tool-use-bash", root), root))  # not a file tool
    ok(hook(agent, payload(agent, "stop", root), root))
    first = (root / "src" / "app.py").read_text()

    ok(hook(agent, payload(agent, "user-prompt-submit", root, prompt="Add type hints"), root))
    for name in ("pre-tool-use-edit", "post-tool-use-edit", "pre-tool-use-multiedit"):
        event = payload(agent, name, root)
        ok(hook(agent, event, root))
        if name.startswith("pre"):
            apply_tool(event)
    ok(hook(agent, payload(agent, "post-tool-use-edit", root, tool_name="MultiEdit"), root))
    ok(hook(agent, payload(agent, "stop", root), root))
    ok(hook(agent, payload(agent, "session-end", root), root))
    assert (root / "src" / "app.py").read_text() != first

    session = "claude-code/" + payload(agent, "stop", root)["session_id"]
    log = json.loads(snapstore(root, "--json", "log", "--session", session).stdout)
    assert [(p["n"], p["prompt"], p["files"]) for p in log] == [
        (1, "Add type hints", 1),
        (2, payload(agent, "user-prompt-submit", root)["prompt"], 1),
    ]
    rewind = snapstore(root, "--json", "rewind", "1", "--yes")  # most recent session: this one
    assert rewind.returncode == 0, rewind.stderr
    assert (root / "src" / "app.py").read_text() == first
    assert json.loads(rewind.stdout)["user_text"] == "Add type hints"
    # the session it picked is named in the JSON; the only one needs no note on stderr
    assert json.loads(rewind.stdout)["session"] == session
    assert "the most recent" not in rewind.stderr


def test_gemini_cli_session_then_rewind(root: Path) -> None:
    agent = "gemini-cli"
    assert snapstore(root, "init").returncode == 0
    ok(hook(agent, payload(agent, "session-start", root), root), b"{}")
    ok(hook(agent, payload(agent, "before-agent", root), root), b"{}")
    for name in (
        "before-tool-write-file",
        "after-tool-write-file",
        "before-tool-shell",
        "before-tool-replace",
        "after-tool-replace",
    ):
        event = payload(agent, name, root)
        ok(hook(agent, event, root), b"{}")
        if name.startswith("before-tool-") and name != "before-tool-shell":
            apply_tool(event)
    ok(hook(agent, payload(agent, "after-agent", root), root), b"{}")
    ok(hook(agent, payload(agent, "session-end", root), root), b"{}")
    session = "gemini-cli/" + payload(agent, "after-agent", root)["session_id"]
    show = json.loads(snapstore(root, "--json", "show", "1", "--session", session).stdout)
    assert [(c["path"], c["status"], c["tool"]) for c in show["changes"]] == [
        ("src/app.py", "added", "write_file, replace")
    ]
    assert snapstore(root, "rewind", "1", "--yes", "--session", session).returncode == 0
    assert not (root / "src").exists()


def test_relative_gemini_paths_resolve_against_cwd(root: Path) -> None:
    agent = "gemini-cli"
    snapstore(root, "init")
    ok(hook(agent, payload(agent, "before-agent", root), root), b"{}")
    event = payload(agent, "before-tool-write-file-relative", root)
    ok(hook(agent, event, root), b"{}")
    apply_tool(event)
    ok(hook(agent, payload(agent, "after-agent", root), root), b"{}")
    points = json.loads(snapstore(root, "--json", "log").stdout)
    assert points[0]["files"] == 1


def test_a_hook_creates_the_store_when_there_is_none(root: Path) -> None:
    (root / ".git").mkdir()  # the project root, as git marks it
    sub = root / "pkg"
    sub.mkdir()
    ok(hook("claude-code", payload("claude-code", "user-prompt-submit", sub), sub))
    assert (root / ".snapstore" / "db" / "data.mdb").exists()


@pytest.mark.parametrize("agent,silent", [("claude-code", b""), ("gemini-cli", b"{}")])
@pytest.mark.parametrize(
    "raw,message",
    [
        ("this is not json", "not JSON"),
        ("[1, 2]", "not a JSON object"),
        ('{"hook_event_name": "PreToolUse"}', "session_id"),
        (
            '{"hook_event_name": "UserPromptSubmit", "session_id": "s", "cwd": "relative/dir"}',
            "absolute",
        ),
    ],
)
def test_bad_input_exits_0_with_one_clear_line(
    root: Path, agent: str, silent: bytes, raw: str, message: str
) -> None:
    snapstore(root, "init")
    if agent == "gemini-cli":
        raw = raw.replace("UserPromptSubmit", "BeforeAgent").replace("PreToolUse", "BeforeTool")
    result = hook(agent, raw, root)
    assert result.returncode == 0 and result.stdout == silent
    lines = result.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("snapstore: ") and message in lines[0]
    assert json.loads(snapstore(root, "--json", "status").stdout)["turns"] == 0
    strict = hook(agent, raw, root, SNAPSTORE_STRICT="1")
    assert strict.returncode == 2 and b"Traceback" not in strict.stderr


def test_paths_outside_the_root_are_not_recorded(root: Path, tmp_path: Path) -> None:
    agent = "claude-code"
    snapstore(root, "init")
    ok(hook(agent, payload(agent, "user-prompt-submit", root), root))
    outside = tmp_path / "outside.txt"
    outside.write_text("precious")
    event = payload(agent, "pre-tool-use-write", root)
    event["tool_input"]["file_path"] = str(outside)
    result = hook(agent, event, root)
    assert result.returncode == 0 and result.stdout == b""
    assert b"outside the workspace" in result.stderr
    assert "outside the workspace" in (root / ".snapstore" / "hook.log").read_text()
    assert hook(agent, event, root, SNAPSTORE_STRICT="1").returncode == 2
    ok(hook(agent, payload(agent, "stop", root), root))
    log = json.loads(snapstore(root, "--json", "log").stdout)
    assert log[0]["files"] == 0 and outside.read_text() == "precious"


def test_unknown_events_and_tools_do_nothing(root: Path) -> None:
    snapstore(root, "init")
    ok(hook("claude-code", {"hook_event_name": "Notification", "message": "hi"}, root))
    ok(hook("gemini-cli", {"hook_event_name": "BeforeModel"}, root), b"{}")
    assert json.loads(snapstore(root, "--json", "status").stdout)["sessions"] == 0


def test_no_store_is_created_in_the_home_folder(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    event = payload("claude-code", "user-prompt-submit", home)
    result = hook("claude-code", event, home, HOME=str(home))
    assert result.returncode == 0 and b"too broad" in result.stderr
    assert not (home / ".snapstore").exists()


@pytest.mark.parametrize(
    "agent,shell_tool", [("claude-code", "Bash"), ("gemini-cli", "run_shell_command")]
)
def test_install_in_scan_mode_hooks_the_shell_tool(root: Path, agent: str, shell_tool: str) -> None:
    """Installed with --no-shell, the hooks take the shell tool (and the store scan mode)
    when installed again without it."""
    assert snapstore(root, "init", "--no-track-shell").returncode == 0
    first = snapstore(root, "--json", "hook", "install", agent, "--no-shell")
    assert first.returncode == 0, first.stderr
    settings = Path(json.loads(first.stdout)["file"])
    assert settings.is_relative_to(root)

    def matchers() -> set[str]:
        hooks = json.loads(settings.read_text())["hooks"]
        return {e.get("matcher", "") for entries in hooks.values() for e in entries}

    assert not any(shell_tool in m for m in matchers())
    again = snapstore(root, "--json", "hook", "install", agent)
    assert again.returncode == 0, again.stderr
    assert {"PreToolUse" if agent == "claude-code" else "BeforeTool"} <= set(
        json.loads(again.stdout)["added"]
    )
    assert any(shell_tool in m for m in matchers())
    assert json.loads(again.stdout)["track_shell"] is True
    hooks = json.loads(settings.read_text())["hooks"]
    pre = hooks["PreToolUse" if agent == "claude-code" else "BeforeTool"]
    assert len(pre) == 1  # replaced, not added twice
    if agent == "claude-code":
        assert {"PostToolUseFailure", "PermissionDenied"} <= set(hooks)
    assert json.loads(snapstore(root, "--json", "hook", "install", agent).stdout)["added"] == []


def test_a_shell_tool_event_without_scan_mode_does_nothing(root: Path) -> None:
    ok(hook("claude-code", payload("claude-code", "pre-tool-use-bash", root), root))
    assert not (root / ".snapstore").exists()  # no store is made for it
    assert snapstore(root, "init", "--no-track-shell").returncode == 0
    ok(hook("claude-code", payload("claude-code", "pre-tool-use-bash", root), root))
    assert json.loads(snapstore(root, "--json", "status").stdout)["sessions"] == 0


def _codex(root: Path, event: str, **fields: object) -> dict:
    """A Codex CLI event of the recorded shape (tests/fixtures/agents/codex.json)."""
    return {
        "session_id": "s1",
        "turn_id": "t1",
        "cwd": str(root),
        "hook_event_name": event,
        "model": "gpt-5.5",
        **fields,
    }


def test_one_bad_path_in_a_patch_never_leaves_the_others_unprotected(
    root: Path, tmp_path: Path
) -> None:
    """An apply_patch naming app.py and ../outside.txt captures app.py, says what it could
    not capture (stderr, hook.log), and the rewind takes the agent's edit back; strict
    mode refuses the call once app.py is captured."""
    snapstore(root, "init")
    (root / "app.py").write_text("v1\n")
    patch = (
        "*** Begin Patch\n*** Update File: app.py\n@@\n-v1\n+v2\n"
        "*** Add File: ../outside.txt\n+x\n*** End Patch\n"
    )
    call = {"tool_name": "apply_patch", "tool_input": {"command": patch}, "tool_use_id": "c1"}
    ok(hook("codex", _codex(root, "UserPromptSubmit", prompt="edit"), root))
    pre = hook("codex", _codex(root, "PreToolUse", **call), root)
    assert pre.returncode == 0 and pre.stdout == b""
    assert b"outside.txt" in pre.stderr and b"outside the workspace" in pre.stderr
    assert "outside.txt" in (root / ".snapstore" / "hook.log").read_text()
    (root / "app.py").write_text("v2\n")
    assert hook("codex", _codex(root, "PostToolUse", **call), root).returncode == 0
    ok(hook("codex", _codex(root, "Stop"), root))
    rewound = snapstore(root, "--session", "codex/s1", "--json", "rewind", "1", "--yes")
    assert rewound.returncode == 0 and json.loads(rewound.stdout)["restored"] == ["app.py"]
    assert (root / "app.py").read_text() == "v1\n"

    ok(hook("codex", _codex(root, "UserPromptSubmit", prompt="again", turn_id="t2"), root))
    strict = hook("codex", _codex(root, "PreToolUse", **call), root, SNAPSTORE_STRICT="1")
    assert strict.returncode == 2 and b"outside the workspace" in strict.stderr
    (root / "app.py").write_text("v3\n")  # the agent went ahead anyway
    hook("codex", _codex(root, "PostToolUse", **call), root)
    ok(hook("codex", _codex(root, "Stop", turn_id="t2"), root))
    assert snapstore(root, "--session", "codex/s1", "rewind", "1", "--yes").returncode == 0
    assert (root / "app.py").read_text() == "v1\n"  # app.py was captured before the refusal


#: Each agent's events around a shell-only turn: prompt, the shell call's two hooks, turn end,
#: as the real CLIs sent them (tests/fixtures/AGENT/*-rm.json).
SHELL_TURN = {
    "claude-code": ("user-prompt-submit", "pre-tool-use-bash-rm", "post-tool-use-bash-rm", "stop"),
    "gemini-cli": ("before-agent", "before-tool-shell-rm", "after-tool-shell-rm", "after-agent"),
}
SILENT = {"claude-code": b"", "gemini-cli": b"{}"}


def shell_only_turn(root: Path, agent: str, **env: str) -> None:
    """One turn whose only change is the agent's shell command: `sed -i` and `rm`, run
    between its pre and post hooks, as the agent's shell tool runs it."""
    prompt, pre, post, end = SHELL_TURN[agent]
    session = payload(agent, prompt, root)["session_id"]
    for name in (prompt, pre, post, end):
        event = payload(agent, name, root, session_id=session)
        event.pop("prompt_id", None)  # the recorded turn's prompt id is another prompt's
        ok(hook(agent, event, root, **env), SILENT[agent])
        if name == pre:
            subprocess.run(["sh", "-c", event["tool_input"]["command"]], cwd=root, check=True)


def workspace_files(root: Path) -> dict[str, bytes]:
    """The workspace's files and their bytes, the store and the agents' settings left out."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.relative_to(root).parts[0] not in (".snapstore", ".claude", ".gemini")
    }


@pytest.mark.parametrize("agent", sorted(SHELL_TURN))
def test_a_shell_only_turn_rewinds_exactly_with_the_default_install(root: Path, agent: str) -> None:
    (root / "data.txt").write_text("alpha\ngamma\nalpha two\n")
    (root / "old.txt").write_text("this file is removed by the agent's shell command\n")
    installed = snapstore(root, "hook", "install", agent)
    assert installed.returncode == 0, installed.stderr
    before = workspace_files(root)
    shell_only_turn(root, agent)
    assert not (root / "old.txt").exists()
    assert (root / "data.txt").read_text() == "beta\ngamma\nbeta two\n"
    log = json.loads(snapstore(root, "--json", "log").stdout)
    assert [p["files"] for p in log] == [2]
    rewind = snapstore(root, "--json", "rewind", "1", "--yes")
    assert rewind.returncode == 0, rewind.stderr
    assert workspace_files(root) == before


def _teammate_clone(tmp_path: Path, root: Path, agent: str) -> Path:
    """A teammate's clone: the project-scope hooks someone committed, and no store."""
    shared = tmp_path / "shared"
    shared.mkdir()
    installed = snapstore(shared, "hook", "install", agent, "--scope", "project")
    assert installed.returncode == 0, installed.stderr
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    for folder in (".claude", ".gemini"):
        if (shared / folder).is_dir():
            subprocess.run(["cp", "-r", str(shared / folder), str(root)], check=True)
    (root / "data.txt").write_text("alpha\ngamma\nalpha two\n")
    (root / "old.txt").write_text("this file is removed by the agent's shell command\n")
    assert not (root / ".snapstore").exists()
    return root


@pytest.mark.parametrize("agent", sorted(SHELL_TURN))
def test_a_store_a_hook_creates_covers_the_shell(tmp_path: Path, root: Path, agent: str) -> None:
    """The first hook event of a clone that never ran `init` makes the store as init does:
    scan mode and the baseline, and .snapstore kept out of git. A shell-only turn (`sed -i`,
    `rm`) is then recorded (it was "0 files"), rewinds exactly, and doctor says the shell is
    covered."""
    _teammate_clone(tmp_path, root, agent)

    def files() -> dict[str, bytes]:
        return {k: v for k, v in workspace_files(root).items() if not k.startswith(".git/")}

    before = files()
    shell_only_turn(root, agent)
    log = json.loads(snapstore(root, "--json", "log").stdout)
    assert [p["files"] for p in log] == [2]
    assert "/.snapstore/" in (root / ".git" / "info" / "exclude").read_text()
    home = tmp_path / "home"  # the teammate's: snapstore on PATH, the folder trusted
    (home / ".gemini").mkdir(parents=True)
    (home / ".gemini" / "trustedFolders.json").write_text(json.dumps({str(root): "TRUST_FOLDER"}))
    path = os.pathsep.join([os.path.dirname(snapstore_bin()[0]), os.environ["PATH"]])
    checked = snapstore(root, "--json", "doctor", env=hermetic_env(HOME=str(home), PATH=path))
    assert checked.returncode == 0, checked.stdout
    doctor = json.loads(checked.stdout)
    assert [(h["scope"], h["shell"], h["problems"]) for h in doctor["hooks"]] == [
        ("project", True, [])
    ]
    rewind = snapstore(root, "--json", "rewind", "1", "--yes")
    assert rewind.returncode == 0, rewind.stderr
    assert files() == before


def test_a_hook_says_in_one_line_why_its_store_does_not_cover_the_shell(
    tmp_path: Path, root: Path
) -> None:
    """When the settings cannot be trusted (no state folder to write), the store still
    records the file tools; the hook says why the shell is not covered, once, in one line,
    and doctor counts it as a problem: those shell commands' changes would be lost."""
    _teammate_clone(tmp_path, root, "claude-code")
    blocked = tmp_path / "state"
    blocked.write_text("a file, not a folder\n")
    first = hook(
        "claude-code",
        payload("claude-code", "user-prompt-submit", root),
        root,
        XDG_STATE_HOME=str(blocked),
    )
    assert first.returncode == 0 and first.stdout == b""
    lines = first.stderr.decode().splitlines()
    assert len(lines) == 1 and "scan mode is off" in lines[0], lines
    doctor = snapstore(root, "--json", "doctor", env=hermetic_env(XDG_STATE_HOME=str(blocked)))
    assert doctor.returncode == 1
    [report] = json.loads(doctor.stdout)["hooks"]
    assert any("the store is not in scan mode" in p for p in report["problems"])


def test_undo_after_the_agent_was_resumed_names_the_way_out(tmp_path: Path, root: Path) -> None:
    """What the issue met, through the hook command: Claude Code's turns recorded by its hooks,
    a rewind of the files and the chat, then `claude --resume` and a new prompt. `undo` must
    not cut the chat the agent wrote to since: it refuses in one line that names the command
    that still puts the files back, and that command does, leaving the chat alone."""
    from ..support.transcripts import PROMPTS, claude_turn

    home = tmp_path / "claude-home"
    home.mkdir()
    env = {"CLAUDE_CONFIG_DIR": str(home)}
    transcript = home / "projects" / "p" / "t.jsonl"  # in Claude Code's own layout
    transcript.parent.mkdir(parents=True)
    assert snapstore(root, "init").returncode == 0
    sid = payload("claude-code", "user-prompt-submit", root)["session_id"]
    notes = root / "notes.txt"
    for i, prompt in enumerate(PROMPTS):
        ok(
            hook(
                "claude-code",
                payload(
                    "claude-code",
                    "user-prompt-submit",
                    root,
                    prompt=prompt,
                    prompt_id=f"p{i}",
                    transcript_path=str(transcript),
                ),
                root,
                **env,
            )
        )
        claude_turn(transcript, i)  # what Claude Code writes for the prompt
        tool = {"file_path": str(notes), "content": f"version {i}\n"}
        ok(
            hook(
                "claude-code",
                payload("claude-code", "pre-tool-use-write", root, tool_input=tool),
                root,
                **env,
            )
        )
        notes.write_text(f"version {i}\n")
        ok(
            hook(
                "claude-code",
                payload("claude-code", "post-tool-use-write", root, tool_input=tool),
                root,
                **env,
            )
        )
        ok(hook("claude-code", payload("claude-code", "stop", root), root, **env))
    cli_env = hermetic_env(**env)
    rewound = snapstore(root, "--json", "rewind", "2", "--yes", env=cli_env)
    assert rewound.returncode == 0, rewound.stderr
    assert json.loads(rewound.stdout)["conversation"]["status"] == "rewound"
    assert notes.read_text() == "version 0\n"

    # `claude --resume`, and a prompt: the hooks record a turn, Claude Code its records
    ok(
        hook(
            "claude-code",
            payload(
                "claude-code",
                "user-prompt-submit",
                root,
                prompt="again",
                prompt_id="p9",
                transcript_path=str(transcript),
            ),
            root,
            **env,
        )
    )
    with open(transcript, "a") as f:
        record = {"type": "user", "uuid": "u9", "parentUuid": "a0", "promptId": "p9"}
        f.write(json.dumps({**record, "message": {"content": "again"}, "sessionId": sid}) + "\n")
    ok(hook("claude-code", payload("claude-code", "stop", root), root, **env))
    chat = transcript.read_bytes()

    refused = snapstore(root, "undo", env=cli_env)
    assert refused.returncode == 3 and refused.stdout == ""
    [line] = refused.stderr.splitlines()
    assert line.startswith("snapstore: Claude Code wrote to the conversation since the rewind")
    assert line.endswith(
        "(`snapstore undo --mode code` puts the files back and leaves the chat as it is)"
    )
    assert notes.read_text() == "version 0\n" and transcript.read_bytes() == chat

    files = snapstore(root, "undo", "--mode", "code", env=cli_env)
    assert files.returncode == 0, files.stderr
    assert notes.read_text() == "version 2\n"
    assert transcript.read_bytes() == chat  # the resumed chat is the user's: left alone
