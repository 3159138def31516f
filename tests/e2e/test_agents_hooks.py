"""The real agent CLIs, installed from npm, driven by a scripted model on loopback: what they send
their hooks through a three-turn session with a hand edit between turns.

Each CLI installs once into a cache outside the repository (tests/support/agents/install.py;
the first run downloads about 2 GB for all of them). Nothing but loopback is reached: every
connect() the CLI and its children make is traced, and every proxy variable points at a dead
end that records what asked for it. Deselect these tests with `-k "not agents"` on a machine
without the npm registry.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ..support.agents.drivers import DRIVERS, recorder_command
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
    Turn("Append a line to other.txt from the shell",
         (Shell("printf 'added by shell\\n' >> other.txt"),), "Appended."),
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
        pytest.fail("strace is not installed (apt-get install strace): it proves that nothing "
                    "left loopback", pytrace=False)
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
    return [s for s in seen if s.kind in ("begin", "end")
            or (s.kind in ("pre", "post") and s.category != "read")]


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


PERSONAL = [(agent, scope) for agent in AGENTS for scope in DRIVERS[agent].scopes
            if scope != "project"]


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


PATCH = ("*** Begin Patch\n*** Add File: new.txt\n+hello\n*** Update File: old.txt\n"
         "*** Move to: moved.txt\n@@\n-old\n+changed\n*** Delete File: gone.txt\n*** End Patch\n")


@pytest.mark.parametrize("agent", ["codex", "opencode-gpt"])
def test_one_apply_patch_names_every_file_it_adds_moves_and_deletes(agent: str,
                                                                     tmp_path: Path) -> None:
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
            "moved.txt", "new.txt"]
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
        assert pre[0]["payload"]["tool_input"] == {"path": str(s.workspace / "notes.txt"),
                                                   "file_text": NOTES}
        assert all(r["env"].get("COPILOT_CLI") == "1" for r in pre)
