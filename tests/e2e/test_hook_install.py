"""`snapstore hook install AGENT`: each agent's own config format, in the right scope, keeping
what is there, idempotent, and with a command that starts wherever snapstore is installed (a
folder with a space in its name included)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from snapstore.adapters import jsonc
from snapstore.adapters.install import hook_commands, shell_hooked

from ..support import hermetic_env, snapstore, snapstore_bin

FIXTURES = Path(__file__).parents[1] / "fixtures" / "agents"
AGENTS = sorted(p.stem for p in FIXTURES.glob("*.json"))
#: Where each agent reads hooks, per scope (~ is the home folder), as its docs say.
WHERE = {
    "claude-code": {
        "local": ".claude/settings.local.json",
        "project": ".claude/settings.json",
        "user": "~/.claude/settings.json",
    },
    "gemini-cli": {"project": ".gemini/settings.json", "user": "~/.gemini/settings.json"},
    "codex": {"project": ".codex/hooks.json", "user": "~/.codex/hooks.json"},
    "qwen-code": {"project": ".qwen/settings.json", "user": "~/.qwen/settings.json"},
    "copilot": {
        "local": ".github/copilot/settings.local.json",
        "project": ".github/hooks/snapstore.json",
        "user": "~/.copilot/hooks/snapstore.json",
    },
    "opencode": {
        "project": ".opencode/plugin/snapstore.js",
        "user": "~/.config/opencode/plugin/snapstore.js",
    },
    "cline": {"project": ".clinerules/hooks", "user": "~/.cline/hooks"},
    "cursor": {"project": ".cursor/hooks.json", "user": "~/.cursor/hooks.json"},
    "windsurf": {"project": ".windsurf/hooks.json", "user": "~/.codeium/windsurf/hooks.json"},
    "auggie": {
        "local": ".augment/settings.local.json",
        "project": ".augment/settings.json",
        "user": "~/.augment/settings.json",
    },
}
#: A hook of the user's own, in each agent's format, that an install must keep.
THEIRS = {
    "claude": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "my-linter"}]}]
    },
    "copilot": {"preToolUse": [{"type": "command", "bash": "my-linter", "timeoutSec": 5}]},
    "cursor": {"afterFileEdit": [{"command": "./hooks/format.sh"}]},
    "windsurf": {"post_write_code": [{"command": "my-linter", "show_output": True}]},
}
STYLE = {"copilot": "copilot", "cursor": "cursor", "windsurf": "windsurf"}


def run(
    root: Path, *args: str, exe: list[str] | None = None, **env: str
) -> subprocess.CompletedProcess:
    """`snapstore ARGS` with a home of its own; as the process ``exe`` when given (a copy
    of the console script elsewhere: the command that `hook install` writes names it)."""
    environ = hermetic_env(HOME=str(root.parent / "home"), **env)
    if exe is None:
        return snapstore(root, *args, env=environ)
    if "PATH" in env and not os.path.isabs(exe[0]):
        exe = [shutil.which(exe[0]) or exe[0], *exe[1:]]
    return subprocess.run(
        [*exe, *args], cwd=root, capture_output=True, text=True, env=environ, timeout=60
    )


def install(root: Path, agent: str, *args: str, exe: list[str] | None = None) -> dict:
    done = run(root, "--json", "hook", "install", agent, *args, exe=exe)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def default_scope(agent: str) -> str:
    return "local" if "local" in WHERE[agent] else "project"


def where(root: Path, agent: str, scope: str) -> Path:
    rel = WHERE[agent][scope]
    return root.parent / "home" / rel[2:] if rel.startswith("~/") else root / rel


def snapshot(path: Path) -> dict[str, bytes]:
    files = sorted(path.iterdir()) if path.is_dir() else [path]
    return {f.name: f.read_bytes() for f in files}


@pytest.mark.parametrize("agent", AGENTS)
def test_install_keeps_what_is_there_and_is_idempotent(root: Path, agent: str) -> None:
    scope = default_scope(agent)
    path = where(root, agent, scope)
    path.parent.mkdir(parents=True)
    if agent == "cline":  # a hook of the user's own, for an event snapstore does not use
        path.mkdir()
        (path / "PreCompact").write_text("#!/bin/sh\nmy-linter\n")
        theirs = {"PreCompact": b"#!/bin/sh\nmy-linter\n"}
    elif agent == "opencode":  # another plugin next to snapstore's
        (path.parent / "other.js").write_text("export const Other = async () => ({});\n")
    else:
        existing = {"model": "keep-me", "hooks": THEIRS[STYLE.get(agent, "claude")]}
        path.write_text(json.dumps(existing))
    first = install(root, agent)
    assert first["file"] == str(path) and first["scope"] == scope and first["added"]
    if agent == "cline":
        assert {k: v for k, v in snapshot(path).items() if k in theirs} == theirs
        assert os.access(path / "PreToolUse", os.X_OK)
    elif agent == "opencode":
        assert (path.parent / "other.js").exists()
    else:
        merged = json.loads(path.read_text())
        assert merged["model"] == "keep-me"
        commands = json.dumps(merged["hooks"])
        assert "my-linter" in commands or "format.sh" in commands
    assert len(hook_commands(str(path), agent)) >= 1
    before = snapshot(path)
    again = install(root, agent)
    assert again["added"] == [] and snapshot(path) == before


@pytest.mark.parametrize("agent", AGENTS)
def test_each_scope_is_the_agents_own_file(root: Path, agent: str) -> None:
    for scope in ("local", "project", "user"):
        if scope not in WHERE[agent]:
            done = run(root, "hook", "install", agent, "--scope", scope)
            assert done.returncode == 2 and f"has no {scope} settings" in done.stderr
            continue
        got = install(root, agent, "--scope", scope)
        assert got["file"] == str(where(root, agent, scope))
        if scope == "project":  # shared: snapstore from PATH, on every teammate's machine
            assert got["command"].endswith(f"snapstore hook {agent}")
        else:  # this machine's snapstore; in the user's own settings, no store is created
            assert os.path.isabs(got["command"].split()[0].strip("'"))
            assert got["command"].endswith(" --no-create") is (scope == "user")


@pytest.mark.parametrize("agent", ["claude-code", "copilot", "auggie"])
def test_a_personal_settings_file_stays_out_of_git(root: Path, agent: str) -> None:
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    got = install(root, agent)
    rel = WHERE[agent]["local"]
    assert got["file"] == str(root / rel) and got["scope"] == "local"
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert rel not in status
    human = run(root, "hook", "install", agent)
    assert "personal settings for this project" in human.stdout and rel in human.stdout


@pytest.fixture
def spaced(tmp_path: Path) -> list[str]:
    """This snapstore, installed in a folder whose name holds a space."""
    folder = tmp_path / "my tools"
    folder.mkdir()
    exe = folder / "snapstore"
    shutil.copy2(snapstore_bin()[0], exe)
    return [str(exe)]


@pytest.mark.parametrize("agent", AGENTS)
def test_the_installed_command_starts_from_a_folder_with_a_space(
    root: Path, agent: str, spaced: list[str]
) -> None:
    """Each hook command the installer wrote, run as the agent runs it (through the shell,
    Cline's executable, opencode's argv), records the agent's first prompt."""
    assert run(root, "init").returncode == 0
    scope = "local" if "local" in WHERE[agent] else "user"
    path = where(root, agent, scope)
    install(root, agent, "--scope", scope, exe=spaced)
    assert (
        f"'{spaced[0]}'" in "".join(v.decode() for v in snapshot(path).values())
        or f'"{spaced[0]}"' in path.read_text()
    )  # opencode: an argv array, no shell
    data = json.loads((FIXTURES / f"{agent}.json").read_text().replace("__CWD__", str(root)))
    event, payload = next(
        (e, p)
        for e, p in data["steps"]
        if (e or p.get("hook_event_name") or p.get("agent_action_name"))
        in (
            "UserPromptSubmit",
            "BeforeAgent",
            "userPromptSubmitted",
            "chat.message",
            "beforeSubmitPrompt",
            "pre_user_prompt",
            "PromptSubmit",
        )
    )
    if agent == "cline":
        argv = [str(path / "UserPromptSubmit")]
    elif agent == "opencode":
        argv = [*json.loads(path.read_text().split("const COMMAND = ")[1].split(";")[0]), event]
    else:
        commands = hook_commands(str(path), agent)
        command = next(c for c in commands if agent != "copilot" or c.endswith(event))
        argv = ["/bin/sh", "-c", command]
    done = subprocess.run(
        argv,
        cwd=root,
        input=json.dumps(payload).encode(),
        capture_output=True,
        env=hermetic_env(HOME=str(root.parent / "home")),
        timeout=60,
    )
    assert done.returncode == 0 and done.stderr == b"", done.stderr
    log = json.loads(run(root, "--json", "log").stdout)
    assert [p["prompt"] for p in log] == [
        "Make the greeting friendlier" if agent == "cline" else "Add src/new.py"
    ]


def test_an_old_unquoted_install_is_replaced_not_repeated(root: Path, spaced: list[str]) -> None:
    """Older releases wrote the path unquoted. Installing again replaces
    snapstore's own entries in place and keeps everyone else's."""
    settings = root / ".claude" / "settings.local.json"
    settings.parent.mkdir()
    broken = f"{spaced[0]} hook claude-code"
    settings.write_text(
        json.dumps(
            {
                "hooks": {
                    "Stop": [
                        {"hooks": [{"type": "command", "command": broken}]},
                        {"hooks": [{"type": "command", "command": "say done"}]},
                    ]
                }
            }
        )
    )
    got = install(root, "claude-code", exe=spaced)
    stop = json.loads(settings.read_text())["hooks"]["Stop"]
    assert [h["command"] for e in stop for h in e["hooks"]] == [got["command"], "say done"]
    assert got["command"] == f"'{spaced[0]}' hook claude-code"
    assert "Stop" in got["added"]


def test_claude_code_keeps_multiedit_for_releases_before_2(root: Path) -> None:
    settings = root / WHERE["claude-code"]["local"]
    install(root, "claude-code")
    matchers = [e.get("matcher") for e in json.loads(settings.read_text())["hooks"]["PreToolUse"]]
    assert matchers == ["Write|Edit|MultiEdit|NotebookEdit|Bash"]


def fake_gemini(tmp_path: Path, version: str) -> str:
    """A `gemini` on PATH that answers `--version` as that release does."""
    folder = tmp_path / f"gemini-{version}"
    folder.mkdir()
    (folder / "gemini").write_text(f"#!/bin/sh\necho {version}\n")
    (folder / "gemini").chmod(0o755)
    return f"{folder}{os.pathsep}{os.environ.get('PATH', '')}"


@pytest.mark.parametrize(
    ("version", "switched"),
    [
        ("0.61.0", {}),
        ("0.26.0", {}),
        ("0.25.0", {"tools": {"enableHooks": True}, "enabled": True}),
        ("0.24.5", {"tools": {"enableHooks": True}, "enabled": True}),
        ("0.22.4", {"tools": {"enableHooks": True}}),
    ],
)
def test_an_old_gemini_cli_gets_the_switch_it_needs_and_a_new_one_none(
    root: Path, tmp_path: Path, version: str, switched: dict
) -> None:
    """Gemini CLI's switch for hooks, measured with each release: 0.25 needs
    "hooks": {"enabled": true}, 0.24 that and "tools": {"enableHooks": true}, 0.20 to 0.22 the
    latter only (they refuse to start with the former); 0.26 to 0.61 print "Invalid
    configuration" at every start when "hooks.enabled" is there."""
    settings = root / WHERE["gemini-cli"]["project"]
    done = run(root, "--json", "hook", "install", "gemini-cli", PATH=fake_gemini(tmp_path, version))
    assert done.returncode == 0, done.stderr
    written = json.loads(settings.read_text())
    assert written.get("tools") == switched.get("tools")
    assert written["hooks"].get("enabled") is switched.get("enabled")
    notes = json.loads(done.stdout)["notes"]
    assert any("trusted folder" in n and "--skip-trust" in n for n in notes)
    assert any(version in n for n in notes)


def test_a_switch_the_user_set_stands(root: Path, tmp_path: Path) -> None:
    settings = root / WHERE["gemini-cli"]["project"]
    settings.parent.mkdir()
    settings.write_text(json.dumps({"tools": {"sandbox": True}, "hooks": {"enabled": False}}))
    assert (
        run(root, "hook", "install", "gemini-cli", PATH=fake_gemini(tmp_path, "0.24.5")).returncode
        == 0
    )
    written = json.loads(settings.read_text())
    assert written["hooks"]["enabled"] is False
    assert written["tools"] == {"sandbox": True, "enableHooks": True}


def test_without_a_gemini_to_ask_the_switch_is_left_out_and_said(
    root: Path, tmp_path: Path
) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    done = run(root, "--json", "hook", "install", "gemini-cli", PATH=str(empty))
    assert done.returncode == 0, done.stderr
    assert "enabled" not in json.loads((root / WHERE["gemini-cli"]["project"]).read_text())["hooks"]
    assert any("did not answer" in n for n in json.loads(done.stdout)["notes"])


#: What hooking the shell adds to each agent's hooks: its shell tool.
SHELL = {
    "claude-code": "Bash",
    "gemini-cli": "run_shell_command",
    "codex": "Bash",
    "qwen-code": "run_shell_command",
    "copilot": "edit|bash",
    "opencode": '"bash"',
    "cline": None,
    "cursor": "Shell",
    "windsurf": "pre_run_command",
    "auggie": "launch-process",
}


@pytest.mark.parametrize("agent", AGENTS)
def test_the_shell_tool_is_hooked_by_default_and_no_shell_leaves_it_out(
    root: Path, agent: str
) -> None:
    path = where(root, agent, default_scope(agent))
    plain = install(root, agent, "--no-shell")
    files_only = snapshot(path)
    assert (plain["shell"], plain["track_shell"]) == (False, False)
    assert "the shell" in plain["not_covered"] and "--no-shell" in plain["not_covered"]
    assert not (root / ".snapstore" / "config").exists()  # --no-shell leaves the store be
    again = install(root, agent)
    assert (again["shell"], again["track_shell"]) == (True, True)
    assert "the shell" in again["covers"] and "the shell" not in again["not_covered"]
    assert "track_shell = true" in (root / ".snapstore" / "config").read_text()
    assert shell_hooked(str(path), agent)
    if SHELL[agent] is None:  # Cline: every tool reaches the same PreToolUse executable
        assert again["added"] == [] and snapshot(path) == files_only
        return
    assert not shell_hooked(str(path.with_name(path.name + ".none")), agent)
    text = "".join(v.decode() for v in snapshot(path).values())
    assert SHELL[agent] in text
    assert SHELL[agent] not in "".join(v.decode() for v in files_only.values())
    assert again["added"]
    if path.suffix == ".json":  # replaced where they stood, not added twice
        hooks = json.loads(path.read_text())["hooks"]
        assert all(len(v) == 1 for k, v in hooks.items() if isinstance(v, list))
    assert install(root, agent, "--no-shell")["added"]  # and back: the opt-out takes it out
    assert not shell_hooked(str(path), agent)


def test_install_says_what_is_covered_and_records_the_baseline(root: Path) -> None:
    (root / "a.txt").write_text("a\n")
    done = run(root, "hook", "install", "claude-code")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # results on stdout, as git prints them
    assert "baseline recorded: 1 file(s) stored" in done.stdout
    assert (
        "  Covers: file tools (Write, Edit, MultiEdit, NotebookEdit) and the shell (Bash); "
        "not covered: paths a .gitignore or .snapstoreignore ignores, and files over the "
        "size cap (skipped and reported by each scan).\n"
    ) in done.stdout
    again = run(root, "hook", "install", "claude-code")  # already in scan mode: no new scan
    assert again.returncode == 0 and "baseline" not in again.stdout
    off = run(root, "hook", "install", "gemini-cli", "--no-shell")
    assert off.returncode == 0, off.stderr
    assert (
        "  Covers: file tools (write_file, replace); not covered: the shell "
        "(run_shell_command): what its commands change (install without --no-shell).\n"
    ) in off.stdout


def test_a_user_wide_install_leaves_a_folder_without_a_store_alone(root: Path) -> None:
    got = install(root, "cursor", "--scope", "user")
    assert (got["shell"], got["track_shell"]) == (True, False)
    assert "once the workspace's store is in scan mode" in got["covers"]
    assert not (root / ".snapstore").exists()


def test_install_refuses_a_broken_settings_file(root: Path) -> None:
    settings = root / ".claude" / "settings.local.json"
    settings.parent.mkdir()
    settings.write_text("{ not json")
    result = run(root, "hook", "install", "claude-code")
    assert result.returncode == 2 and "not valid JSON" in result.stderr
    assert settings.read_text() == "{ not json"


def test_cline_will_not_overwrite_a_hook_of_the_users(root: Path) -> None:
    hooks = root / ".clinerules" / "hooks"
    hooks.mkdir(parents=True)
    (hooks / "PreToolUse").write_text("#!/bin/sh\nmy-linter\n")
    result = run(root, "hook", "install", "cline")
    assert result.returncode == 2 and "PreToolUse" in result.stderr
    assert sorted(p.name for p in hooks.iterdir()) == ["PreToolUse"]  # nothing half-written


#: Settings with each kind of comment Gemini CLI and Qwen Code allow, and a `//` in a string.
COMMENTED = """{
  // the theme I like
  "ui": {"theme": "GitHub", "link": "https://example.com//x"}, /* block */
  "tools": {
    "sandbox": true // on for now
  } // end of tools
}
"""
#: The comments that must survive an install, word for word.
COMMENTS = ["// the theme I like", "/* block */", "// on for now", "// end of tools"]


@pytest.mark.parametrize("agent", ["gemini-cli", "qwen-code"])
def test_settings_with_comments_are_read_and_keep_their_comments(
    root: Path, tmp_path: Path, agent: str
) -> None:
    """These agents read settings.json as JSON with comments: the install reads it, adds its
    hooks, and every comment stays; the same settings without comments get the same hooks."""
    settings = where(root, agent, "project")
    settings.parent.mkdir(parents=True)
    settings.write_text(COMMENTED)
    path = fake_gemini(tmp_path, "0.24.5")  # an old release: tools.enableHooks is added too
    done = run(root, "--json", "hook", "install", agent, PATH=path)
    assert done.returncode == 0, done.stderr
    text = settings.read_text()
    assert all(comment in text for comment in COMMENTS), text
    plain = root.parent / "plain"
    (plain / settings.relative_to(root)).parent.mkdir(parents=True)
    (plain / settings.relative_to(root)).write_text(jsonc.blank(COMMENTED))
    assert run(plain, "hook", "install", agent, PATH=path).returncode == 0
    expected = json.loads((plain / settings.relative_to(root)).read_text())
    assert json.loads(jsonc.blank(text)) == expected
    assert hook_commands(str(settings), agent)  # doctor reads them too
    again = run(root, "--json", "hook", "install", agent, PATH=path)
    assert again.returncode == 0 and json.loads(again.stdout)["added"] == []
    assert settings.read_text() == text


def test_a_comment_in_a_value_the_install_rewrites_is_refused(root: Path) -> None:
    """Never dropped silently: one line saying what to do, and the file as it was."""
    settings = where(root, "gemini-cli", "project")
    settings.parent.mkdir(parents=True)
    before = '{"hooks": {"BeforeTool": [\n  // mine\n  {"hooks": []}\n]}}\n'
    settings.write_text(before)
    done = run(root, "hook", "install", "gemini-cli")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (
        f'snapstore: {settings}: the comments inside "BeforeTool" would be lost when snapstore '
        "rewrites it; nothing changed: move them out of it and run this again\n"
    )
    assert settings.read_text() == before


def test_claude_code_settings_with_comments_are_refused_as_claude_code_does(root: Path) -> None:
    """Claude Code rejects a settings.json with comments ("Invalid or malformed JSON"): so
    does the install, rather than write hooks that agent would never read."""
    settings = where(root, "claude-code", "local")
    settings.parent.mkdir(parents=True)
    settings.write_text(COMMENTED)
    done = run(root, "hook", "install", "claude-code")
    assert done.returncode == 2
    assert done.stderr.startswith(f"snapstore: {settings} is not valid JSON")
    assert settings.read_text() == COMMENTED
