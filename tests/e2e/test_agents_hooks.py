"""The real agent CLIs, installed from npm, driven by a scripted model on loopback: what they send
their hooks through a three-turn session with a hand edit between turns, and the same session
recorded by the real `snapstore hook AGENT` that `snapstore hook install AGENT` wrote, then
rewound (exact bytes, and a merge that keeps the hand edit) and undone.

Each CLI installs once into a cache outside the repository (tests/support/agents/install.py;
the first run downloads about 2 GB for all of them). Nothing but loopback is reached: every
connect() the CLI and its children make is traced, and every proxy variable points at a dead
end that records what asked for it. Deselect these tests with `-k "not agents"` on a machine
without the npm registry.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from snapstore import Store
from snapstore.ops.watchlink import watcher_info

from ..support import snapstore, snapstore_bin, wait_until
from ..support.agents.drivers import DRIVERS, Opencode, recorder_command
from ..support.agents.egress import off_loopback
from ..support.agents.events import Seen, describe
from ..support.agents.fake_model import Edit, Patch, Shell, Turn, Write
from ..support.agents.install import InstallError, install
from ..support.agents.session import Session, read_log

AGENTS = ["claude-code", "gemini-cli", "codex", "qwen-code", "copilot", "opencode", "cline"]

NOTES = "alpha\nbeta\n"
SCRIPT = [
    Turn("Create notes.txt with two lines", (Write("notes.txt", NOTES),), "Created."),
    Turn("Change beta to gamma in notes.txt", (Edit("notes.txt", "beta", "gamma"),), "Edited."),
    Turn(
        "Append a line to other.txt from the shell",
        (Shell("printf 'added by shell\\n' >> other.txt"),),
        "Appended.",
    ),
]

# the tool each agent used for the write, the edit and the shell command
TOOLS = {
    "claude-code": ("Write", "Edit", "Bash"),
    "gemini-cli": ("write_file", "replace", "run_shell_command"),
    "codex": ("apply_patch", "apply_patch", "Bash"),
    "qwen-code": ("write_file", "edit", "run_shell_command"),
    "copilot": ("create", "edit", "bash"),
    "opencode": ("write", "edit", "bash"),
    "cline": ("editor", "editor", "run_commands"),
}
# Cline's headless mode cannot continue a session (`--id` needs the TUI): a task per prompt,
# whose TaskStart carries no prompt, and which Cline does not wait for: a tool's PreToolUse
# can come first
ONE_TASK_PER_PROMPT = {"cline"}
# Cline 3.0.65 sends telemetry with no opt-out found; it honours HTTPS_PROXY, so the dead-end
# proxy stops it before it leaves the machine
BLOCKED = {"cline": {"CONNECT otel.cline.bot:443 HTTP/1.1", "CONNECT data.cline.bot:443 HTTP/1.1"}}


@pytest.fixture
def session(request: pytest.FixtureRequest, tmp_path: Path):
    agent = request.param
    installed(agent)
    if shutil.which("strace") is None:
        pytest.fail(
            "strace is not installed (apt-get install strace): it proves that nothing "
            "left loopback",
            pytrace=False,
        )
    with Session(agent, tmp_path, SCRIPT, strace=True) as s:
        yield s


def installed(agent: str) -> None:
    try:
        install(DRIVERS[agent].pin or agent)
    except InstallError as e:
        pytest.fail(f"could not install the {agent} CLI: {e}", pytrace=False)


def expected(agent: str) -> list[tuple[str, str, tuple[str, ...]]]:
    write, edit, shell = TOOLS[agent]
    out = []
    for tool, paths in ((write, ("notes.txt",)), (edit, ("notes.txt",)), (shell, ())):
        out += [("begin", "", ()), ("pre", tool, paths), ("post", tool, paths), ("end", "", ())]
    return out


def significant(seen: list[Seen]) -> list[Seen]:
    """Turn begins and ends, and the write, edit and shell tools: no reads, no session events,
    no continuation prompts."""
    return [
        s
        for s in seen
        if s.kind in ("begin", "end") or (s.kind in ("pre", "post") and s.category != "read")
    ]


@pytest.mark.long(15)
@pytest.mark.parametrize("session", AGENTS, indirect=True)
def test_a_real_cli_sends_its_hooks_every_write_edit_and_shell_call(session: Session) -> None:
    s, agent = session, session.agent
    log = s.base / "hooks.jsonl"
    config = s.driver.install_hooks(s, recorder_command(log, s.driver.allow_stdout))
    assert config.is_relative_to(s.workspace)  # project scope
    (s.workspace / "other.txt").write_text("original\n")

    for i, turn in enumerate(SCRIPT):
        if i == 1:  # the user edits by hand between turns
            (s.workspace / "notes.txt").write_text(NOTES + "hand\n")
        run = s.run(turn.prompt)
        assert run.code == 0 and not run.timed_out, run.brief()

    assert (s.workspace / "notes.txt").read_text() == "alpha\ngamma\nhand\n"
    assert (s.workspace / "other.txt").read_text() == "original\nadded by shell\n"

    seen = [describe(agent, r, str(s.workspace)) for r in read_log(log)]
    got = [(x.kind, x.tool, x.paths) for x in significant(seen)]
    want = expected(agent)
    if agent in ONE_TASK_PER_PROMPT:
        got, want = ([x for x in lst if x[0] != "begin"] for lst in (got, want))
        assert sum(x.kind == "begin" for x in seen) == len(SCRIPT)
    assert got == want, "\n".join(map(str, seen))
    shell = [x for x in seen if x.category == "shell"]
    assert all("other.txt" in x.command for x in shell) and len(shell) == 2
    sessions = {x.session for x in seen if x.kind in ("begin", "pre", "post")}
    assert "" not in sessions
    if agent in ONE_TASK_PER_PROMPT:
        assert len(sessions) == 3
    else:
        assert len(sessions) == 1, "turns 2 and 3 continue the session"
        prompts = [x.prompt for x in seen if x.kind == "begin"]
        assert [p.strip('"') for p in prompts] == [t.prompt for t in SCRIPT]
    assert s.connects(), "strace saw the CLI connect to the fake model"
    assert off_loopback(s.connects()) == [], "nothing may leave loopback"
    assert set(s.proxy.requests) <= BLOCKED.get(agent, set()), s.proxy.requests
    assert len(s.model.requests) >= 6  # a tool call and an answer per turn at least


PERSONAL = [
    (agent, scope) for agent in AGENTS for scope in DRIVERS[agent].scopes if scope != "project"
]


@pytest.mark.parametrize(("agent", "scope"), PERSONAL, ids=[f"{a}-{s}" for a, s in PERSONAL])
def test_hooks_in_a_personal_scope_run_too(agent: str, scope: str, tmp_path: Path) -> None:
    """Machine-specific hook commands belong in a scope nobody commits: a local settings file
    where the agent has one, else the user's own config. The hooks there must fire as well."""
    installed(agent)
    with Session(agent, tmp_path, SCRIPT[:1]) as s:
        log = s.base / "hooks.jsonl"
        config = s.driver.install_hooks(s, recorder_command(log, s.driver.allow_stdout), scope)
        assert not config.is_relative_to(s.workspace / s.driver.scopes["project"])
        run = s.run(SCRIPT[0].prompt)
        assert run.code == 0 and not run.timed_out, run.brief()
        assert (s.workspace / "notes.txt").read_text() == NOTES
        seen = [describe(agent, r, str(s.workspace)) for r in read_log(log)]
        write = TOOLS[agent][0]
        got = [(x.kind, x.tool, x.paths) for x in significant(seen) if x.kind in ("pre", "post")]
        assert got == [("pre", write, ("notes.txt",)), ("post", write, ("notes.txt",))], seen


PATCH = (
    "*** Begin Patch\n*** Add File: new.txt\n+hello\n*** Update File: old.txt\n"
    "*** Move to: moved.txt\n@@\n-old\n+changed\n*** Delete File: gone.txt\n*** End Patch\n"
)


@pytest.mark.parametrize("agent", ["codex", "opencode-gpt"])
def test_one_apply_patch_names_every_file_it_adds_moves_and_deletes(
    agent: str, tmp_path: Path
) -> None:
    installed(agent)
    turn = Turn("Tidy the files", (Patch(PATCH),), "Tidied.")
    with Session(agent, tmp_path, [turn]) as s:
        (s.workspace / "old.txt").write_text("old\n")
        (s.workspace / "gone.txt").write_text("bye\n")
        log = s.base / "hooks.jsonl"
        s.driver.install_hooks(s, recorder_command(log, s.driver.allow_stdout))
        run = s.run(turn.prompt)
        assert run.code == 0 and not run.timed_out, run.brief()
        assert sorted(p.name for p in s.workspace.iterdir() if not p.name.startswith(".")) == [
            "moved.txt",
            "new.txt",
        ]
        assert (s.workspace / "moved.txt").read_text() == "changed\n"
        seen = [describe(agent, r, str(s.workspace)) for r in read_log(log)]
        paths = ("new.txt", "old.txt", "moved.txt", "gone.txt")
        got = [(x.kind, x.tool, x.paths) for x in seen if x.kind in ("pre", "post")]
        assert got == [("pre", "apply_patch", paths), ("post", "apply_patch", paths)], seen


def test_copilot_runs_claude_code_hooks_with_its_own_tool_arguments(tmp_path: Path) -> None:
    """Copilot CLI reads .claude/settings.json and settings.local.json too (changelog 1.0.12):
    a `snapstore hook claude-code` installed there also runs under Copilot, once per file, with
    Claude's event and tool names but Copilot's arguments (`path`, not `file_path`), and env
    COPILOT_CLI=1 as the only sign of who called."""
    installed("copilot")
    turn = Turn("Write and run", (Write("notes.txt", NOTES), Shell("true")), "Done.")
    with Session("copilot", tmp_path, [turn]) as s:
        log = s.base / "hooks.jsonl"
        DRIVERS["claude-code"]().install_hooks(s, recorder_command(log), "project")
        run = s.run(turn.prompt)
        assert run.code == 0, run.brief()
        pre = [r for r in read_log(log) if r["event"] == "PreToolUse"]
        assert [r["payload"]["hook_event_name"] for r in pre] == ["PreToolUse"] * 2
        assert [r["payload"]["tool_name"] for r in pre] == ["Write", "Bash"]
        assert pre[0]["payload"]["tool_input"] == {
            "path": str(s.workspace / "notes.txt"),
            "file_text": NOTES,
        }
        assert all(r["env"].get("COPILOT_CLI") == "1" for r in pre)


# -- the same sessions, recorded by snapstore ----------------------------------------------------


def snap(s: Session, *args: str) -> subprocess.CompletedProcess:
    """`snapstore` in the workspace, with the agent's own environment (its home)."""
    return snapstore(s.workspace, *args, env=s.env())


def install_snapstore(s: Session, *args: str) -> dict:
    """`snapstore hook install AGENT` as a user types it, in the workspace."""
    done = snap(s, "--json", "hook", "install", s.driver.pin or s.agent, *args)
    assert done.returncode == 0, done.stderr
    if s.agent.startswith("opencode"):  # opencode npm-installs its plugin API first (offline:
        Opencode._deps_installed(s.workspace / ".opencode")  # a minute of retries)
    return json.loads(done.stdout)


def sessions_of(s: Session) -> list[str]:
    with Store.open(s.workspace) as store, store.repo.read() as v:
        return sorted(r.name for r in v.sessions())


def notes(s: Session) -> bytes:
    return (s.workspace / "notes.txt").read_bytes()


@pytest.fixture
def on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """This snapstore on PATH, as an installed one is: project-scope hooks call `snapstore`."""
    monkeypatch.setenv(
        "PATH", os.path.dirname(snapstore_bin()[0]) + os.pathsep + os.environ.get("PATH", "")
    )


@pytest.mark.long(30)
@pytest.mark.parametrize("session", AGENTS, indirect=True)
def test_a_real_cli_session_is_recorded_then_rewound_merged_and_undone(
    session: Session, on_path: None
) -> None:
    s, agent = session, session.agent
    installed_to = install_snapstore(s)
    assert Path(installed_to["file"]).is_relative_to(s.workspace)
    (s.workspace / "other.txt").write_text("original\n")

    for i, turn in enumerate(SCRIPT):
        if i == 2:
            # the exact rewind of the edit, and its undo, with the session still going
            edit = snap(s, "--json", "rewind", "1", "--yes", "--session", edit_session(s))
            assert edit.returncode == 0, edit.stderr
            assert notes(s) == NOTES.encode()
            assert snap(s, "undo").returncode == 0
            assert notes(s) == b"alpha\ngamma\n"
            # then the user edits the file by hand, after the agent's edit (a line apart:
            # git too would call changes to adjacent lines a conflict)
            (s.workspace / "notes.txt").write_text("hand\nalpha\ngamma\n")
        run = s.run(turn.prompt)
        assert run.code == 0 and not run.timed_out, run.brief()
        assert "Invalid configuration" not in run.stderr  # what the install wrote is valid
    assert (s.workspace / "other.txt").read_text() == "original\nadded by shell\n"
    assert off_loopback(s.connects()) == [], "nothing may leave loopback"
    assert set(s.proxy.requests) <= BLOCKED.get(agent, set()), s.proxy.requests
    assert not (s.workspace / ".snapstore" / "hook.log").exists(), (
        s.workspace / ".snapstore" / "hook.log"
    ).read_text()

    edit = TOOLS[agent][1]
    if agent in ONE_TASK_PER_PROMPT:  # a session per task, the shell-only one included
        names = sessions_of(s)
        assert len(names) == 3 and all(n.startswith("cline/") for n in names), names
        logs = [json.loads(snap(s, "--json", "log", "--session", n).stdout) for n in names]
        assert [[p["files"] for p in log] for log in logs] == [[1], [1], [1]]
    else:
        assert sessions_of(s) == [f"{agent}/{session_id(s)}"]
        log = json.loads(snap(s, "--json", "log", "--session", edit_session(s)).stdout)
        assert [p["prompt"].strip('"') for p in log] == [t.prompt for t in reversed(SCRIPT)]
        assert [p["files"] for p in log] == [1, 1, 1]  # the shell turn's too (scan mode)
    show = json.loads(
        snap(
            s,
            "--json",
            "show",
            "1" if agent in ONE_TASK_PER_PROMPT else "2",
            "--session",
            edit_session(s),
        ).stdout
    )
    assert [(c["path"], c["status"], c["tool"]) for c in show["changes"]] == [
        ("notes.txt", "modified", edit)
    ]

    # take back the edit (and the shell turn after it): a merge keeps the hand edit
    back = snap(
        s,
        "--json",
        "rewind",
        "1" if agent in ONE_TASK_PER_PROMPT else "2",
        "--yes",
        "--session",
        edit_session(s),
    )
    assert back.returncode == 0, back.stderr
    assert notes(s) == b"hand\nalpha\nbeta\n"
    assert [m if isinstance(m, str) else m["path"] for m in json.loads(back.stdout)["merged"]] == [
        "notes.txt"
    ]
    # the shell turn after the edit is taken back too, exactly (Cline's is another session)
    shell = "original\nadded by shell\n" if agent in ONE_TASK_PER_PROMPT else "original\n"
    assert (s.workspace / "other.txt").read_text() == shell
    undo = snap(s, "undo")
    assert undo.returncode == 0, undo.stderr
    assert notes(s) == b"hand\nalpha\ngamma\n"
    assert (s.workspace / "other.txt").read_text() == "original\nadded by shell\n"
    doctor = json.loads(snap(s, "--json", "doctor").stdout)
    assert [(r["agent"], r["sessions"] > 0) for r in doctor["hooks"]] == [
        (s.driver.pin or agent, True)
    ]


def session_id(s: Session) -> str:
    """The agent's own id for the session, from what snapstore recorded."""
    names = sessions_of(s)
    return names[-1].split("/", 1)[1] if names else ""


def edit_session(s: Session) -> str:
    """The snapstore session that holds the agent's edit (Cline: the second task's)."""
    names = sessions_of(s)
    if s.agent not in ONE_TASK_PER_PROMPT:
        return names[0]
    with Store.open(s.workspace) as store:
        for name in names:
            points = store.rewind_points(name)
            if any(c.before is not None for p in points for c in store.changes(p.turn.id)):
                return name
    raise AssertionError(f"no session edited notes.txt: {names}")


@pytest.mark.parametrize("agent", ["codex", "opencode-gpt"])
def test_one_apply_patch_is_recorded_whole_and_rewound_whole(
    agent: str, tmp_path: Path, on_path: None
) -> None:
    """An add, a move and a delete in one apply_patch call: every path is captured, both ends
    of the move, and one rewind brings back the tree from before the patch."""
    installed(agent)
    turn = Turn("Tidy the files", (Patch(PATCH),), "Tidied.")
    with Session(agent, tmp_path, [turn]) as s:
        (s.workspace / "old.txt").write_text("old\n")
        (s.workspace / "gone.txt").write_text("bye\n")
        install_snapstore(s)
        run = s.run(turn.prompt)
        assert run.code == 0 and not run.timed_out, run.brief()
        show = json.loads(snap(s, "--json", "show", "1").stdout)
        assert sorted((c["path"], c["status"], c["tool"]) for c in show["changes"]) == [
            ("gone.txt", "deleted", "apply_patch"),
            ("moved.txt", "added", "apply_patch"),
            ("new.txt", "added", "apply_patch"),
            ("old.txt", "deleted", "apply_patch"),
        ]
        assert snap(s, "rewind", "1", "--yes").returncode == 0
        files = {p.name: p.read_text() for p in s.workspace.iterdir() if p.is_file()}
        assert files == {"old.txt": "old\n", "gone.txt": "bye\n"}
        assert snap(s, "undo").returncode == 0
        files = {p.name: p.read_text() for p in s.workspace.iterdir() if p.is_file()}
        assert files == {"new.txt": "hello\n", "moved.txt": "changed\n"}


@pytest.mark.parametrize("copilot_too", [False, True], ids=["claude-only", "both"])
def test_copilot_running_claude_code_hooks_records_each_write_once(
    tmp_path: Path, copilot_too: bool, on_path: None
) -> None:
    """Copilot CLI runs `snapstore hook claude-code` from .claude/settings.local.json, with its
    own tool arguments: that records the write, under Copilot's session name. With Copilot's
    own hooks installed as well, they record it, and Claude Code's stand aside: once."""
    installed("copilot")
    turn = Turn("Write and run", (Write("notes.txt", NOTES), Shell("true")), "Done.")
    with Session("copilot", tmp_path, [turn]) as s:
        done = snap(s, "hook", "install", "claude-code")
        assert done.returncode == 0, done.stderr
        if copilot_too:
            install_snapstore(s)
        run = s.run(turn.prompt)
        assert run.code == 0, run.brief()
        assert notes(s) == NOTES.encode()
        names = sessions_of(s)
        assert len(names) == 1 and names[0].startswith("copilot/"), names
        show = json.loads(snap(s, "--json", "show", "1", "--session", names[0]).stdout)
        assert [(c["path"], c["status"], c["tool"]) for c in show["changes"]] == [
            ("notes.txt", "added", "create" if copilot_too else "Write")
        ]
        assert snap(s, "rewind", "1", "--yes", "--session", names[0]).returncode == 0
        assert not (s.workspace / "notes.txt").exists()


def test_a_snapstore_installed_in_a_folder_with_a_space_records(tmp_path: Path) -> None:
    """The hook command names snapstore by a path with a space; unquoted, every hook failed
    with exit 127 and the agent carried on. Quoted, it records."""
    installed("claude-code")
    folder = tmp_path / "my tools"
    folder.mkdir()
    exe = folder / "snapstore"
    shutil.copy2(snapstore_bin()[0], exe)  # the console script: its shebang names the venv
    with Session("claude-code", tmp_path / "session", SCRIPT[:1]) as s:
        done = subprocess.run(
            [str(exe), "--json", "hook", "install", "claude-code"],
            cwd=s.workspace,
            env=s.env(),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["command"] == f"'{exe}' hook claude-code"
        run = s.run(SCRIPT[0].prompt)
        assert run.code == 0, run.brief()
        log = json.loads(snap(s, "--json", "log").stdout)
        assert [(p["prompt"], p["files"]) for p in log] == [(SCRIPT[0].prompt, 1)]


def test_a_user_wide_hook_does_nothing_where_there_is_no_store(tmp_path: Path) -> None:
    """Hooks in the user's own config run in every project: where there is no store they do
    nothing (no store is created); where there is one, they record."""
    installed("codex")
    turns = [
        Turn("Create notes.txt", (Write("notes.txt", NOTES),), "Created."),
        Turn("Change beta to gamma", (Edit("notes.txt", "beta", "gamma"),), "Edited."),
    ]
    with Session("codex", tmp_path, turns) as s:
        where = install_snapstore(s, "--scope", "user")
        assert where["file"] == str(s.home / ".codex" / "hooks.json")
        assert where["command"].endswith("hook codex --no-create")
        run = s.run(turns[0].prompt)
        assert run.code == 0, run.brief()
        assert notes(s) == NOTES.encode()
        assert not (s.workspace / ".snapstore").exists()
        assert snap(s, "init").returncode == 0
        run = s.run(turns[1].prompt)
        assert run.code == 0, run.brief()
        log = json.loads(snap(s, "--json", "log").stdout)
        assert [(p["prompt"], p["files"]) for p in log] == [(turns[1].prompt, 1)]


@pytest.mark.parametrize("daemon", ["up", "down"])
def test_a_real_shell_only_turn_is_rewound_exactly_with_the_daemon_up_or_down(
    tmp_path: Path, on_path: None, daemon: str
) -> None:
    """Claude Code's Bash edits one file and removes another, with the default install:
    the turn records both and a rewind puts back their exact bytes, whether the workspace's
    daemon answers the scans (its watcher) or is down (the hooks walk the tree)."""
    installed("claude-code")
    command = "sed -i 's/alpha/beta/' data.txt && rm old.txt"
    script = [Turn("Update data.txt and drop old.txt", (Shell(command),), "Done.")]
    with Session("claude-code", tmp_path, script) as s:
        (s.workspace / "data.txt").write_text("alpha\ngamma\n")
        (s.workspace / "old.txt").write_bytes(b"removed by the shell\n")
        install_snapstore(s)
        if daemon == "up":  # up before the first call, so that every scan asks it
            assert snap(s, "serve", "--detach").returncode == 0
            wait_until(lambda: (watcher_info(str(s.workspace / ".snapstore")) or {}).get("sync"))
        else:
            s.extra_env["SNAPSTORE_DAEMON"] = "off"
        before = {p.name: p.read_bytes() for p in s.workspace.glob("*.txt")}
        run = s.run(script[0].prompt)
        assert run.code == 0 and not run.timed_out, run.brief()
        assert not (s.workspace / "old.txt").exists()
        assert (s.workspace / "data.txt").read_text() == "beta\ngamma\n"
        shown = json.loads(snap(s, "--json", "show", "1", "--session", sessions_of(s)[0]).stdout)
        changes = {(c["path"], c["status"], c["source"]) for c in shown["changes"]}
        source = "watch" if daemon == "up" else "scan"
        assert changes == {("data.txt", "modified", source), ("old.txt", "deleted", source)}
        back = snap(s, "rewind", "1", "--yes", "--session", sessions_of(s)[0])
        assert back.returncode == 0, back.stderr
        assert {p.name: p.read_bytes() for p in s.workspace.glob("*.txt")} == before
