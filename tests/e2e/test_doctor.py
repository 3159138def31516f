"""`snapstore doctor`, and the hooks line of `snapstore status`: hooks installed but nothing
captured. Each problem is one a user really meets: a command that cannot
start, a Codex hook never trusted, a Gemini CLI folder never trusted, hooks that fail."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from ..support import hermetic_env, snapstore, snapstore_bin

FIXTURES = Path(__file__).parents[1] / "fixtures" / "agents"


def run(root: Path, *args: str, exe: list[str] | None = None) -> subprocess.CompletedProcess:
    """`snapstore ARGS` with a home of its own; as the process ``exe`` when given."""
    env = hermetic_env(HOME=str(root.parent / "home"))
    if exe is None:
        return snapstore(root, *args, env=env)
    return subprocess.run(
        [*exe, *args], cwd=root, capture_output=True, text=True, env=env, timeout=60
    )


def doctor(root: Path) -> tuple[int, dict]:
    done = run(root, "--json", "doctor")
    return done.returncode, json.loads(done.stdout)


def feed(root: Path, agent: str, upto: int) -> None:
    """The first steps of an agent's recorded session, through the real hook."""
    data = json.loads((FIXTURES / f"{agent}.json").read_text().replace("__CWD__", str(root)))
    for event, payload in data["steps"][:upto]:
        done = subprocess.run(
            [*snapstore_bin(), "hook", agent, *([event] if event else [])],
            cwd=root,
            input=json.dumps(payload).encode(),
            capture_output=True,
            env=hermetic_env(HOME=str(root.parent / "home")),
            timeout=60,
        )
        assert done.returncode == 0, done.stderr


def test_no_hooks_no_problem(root: Path) -> None:
    assert run(root, "init").returncode == 0
    code, report = doctor(root)
    assert (code, report["hooks"], report["ok"]) == (0, [], True)
    assert "snapstore hook install" in run(root, "doctor").stdout


def test_a_hook_that_cannot_start_is_named_and_reinstalling_fixes_it(
    root: Path, tmp_path: Path
) -> None:
    """The command an older release wrote, unquoted, for a snapstore in a folder with a space:
    the shell runs `/.../my` and every hook exits 127."""
    folder = tmp_path / "my tools"
    folder.mkdir()
    exe = folder / "snapstore"
    shutil.copy2(snapstore_bin()[0], exe)
    assert run(root, "init").returncode == 0
    settings = root / ".claude" / "settings.local.json"
    settings.parent.mkdir()
    settings.write_text(
        json.dumps(
            {
                "hooks": {
                    "UserPromptSubmit": [
                        {"hooks": [{"type": "command", "command": f"{exe} hook claude-code"}]}
                    ]
                }
            }
        )
    )
    code, report = doctor(root)
    assert code == 1 and not report["ok"]
    [hook] = report["hooks"]
    assert (hook["agent"], hook["scope"], hook["file"]) == ("claude-code", "local", str(settings))
    assert any(f"{tmp_path / 'my'} is not an executable file" in p for p in hook["problems"])
    assert hook["unrecorded"] and any("install claude-code` again" in a for a in hook["advice"])
    status = json.loads(run(root, "--json", "status").stdout)
    assert any("cannot start" in p for p in status["hook_problems"])
    assert "see `snapstore doctor`" in run(root, "status").stdout

    assert run(root, "hook", "install", "claude-code", exe=[str(exe)]).returncode == 0
    feed(root, "claude-code", 4)  # a prompt and a write, as Claude Code sends them
    code, report = doctor(root)
    assert code == 0 and report["hooks"][0]["problems"] == [] and report["hooks"][0]["sessions"]
    assert json.loads(run(root, "--json", "status").stdout)["hook_problems"] == []


def test_codex_hooks_never_trusted_are_reported_until_they_record(root: Path) -> None:
    """Codex skips an untrusted hook without a word: the doctor says what to trust, where."""
    assert run(root, "init").returncode == 0
    assert run(root, "hook", "install", "codex").returncode == 0
    code, report = doctor(root)
    [hook] = report["hooks"]
    assert code == 1 and hook["unrecorded"]
    assert any("does not trust this project" in p for p in hook["problems"])
    assert any("has not trusted these hooks" in p for p in hook["problems"])
    assert any("Trust all and continue" in a for a in hook["advice"])
    human = run(root, "doctor").stdout
    assert "!!  codex (project)" in human and "no session recorded yet" in human

    # what Codex writes once the user trusts the project and its hooks
    config = root.parent / "home" / ".codex" / "config.toml"
    config.parent.mkdir(parents=True)
    hooks = root / ".codex" / "hooks.json"
    config.write_text(
        f'[projects."{root}"]\ntrust_level = "trusted"\n\n'
        f'[hooks.state."{hooks}:pre_tool_use:0:0"]\n'
        'trusted_hash = "sha256:0f"\n'
    )
    feed(root, "codex", 4)
    [hook] = doctor(root)[1]["hooks"]
    assert hook["sessions"] == 1 and not hook["unrecorded"]
    assert not any("trust" in p for p in hook["problems"])


def test_a_gemini_cli_folder_not_trusted_is_reported(root: Path) -> None:
    assert run(root, "init").returncode == 0
    assert run(root, "hook", "install", "gemini-cli").returncode == 0
    [hook] = doctor(root)[1]["hooks"]
    assert any("not trusted" in p for p in hook["problems"])
    trusted = root.parent / "home" / ".gemini" / "trustedFolders.json"
    trusted.parent.mkdir(parents=True)
    # a folder above; with a comment, as Gemini CLI allows in its JSON files
    trusted.write_text(f"// mine\n{json.dumps({str(root.parent): 'TRUST_FOLDER'})}")
    [hook] = doctor(root)[1]["hooks"]
    assert not any("trusted" in p for p in hook["problems"])
    settings = root / ".gemini" / "settings.json"
    off = json.loads(settings.read_text())
    off["hooksConfig"] = {"enabled": False}
    settings.write_text("/* switched off for now */\n" + json.dumps(off))
    [hook] = doctor(root)[1]["hooks"]
    assert any("switched off" in p for p in hook["problems"])


def test_a_gemini_cli_switch_left_for_an_old_release_is_reported(
    root: Path, tmp_path: Path
) -> None:
    """Installed for Gemini CLI 0.25, then Gemini CLI upgraded: its "hooks.enabled" now makes
    every start print "Invalid configuration"."""
    gemini = tmp_path / "bin" / "gemini"
    gemini.parent.mkdir()
    gemini.write_text("#!/bin/sh\necho 0.25.0\n")
    gemini.chmod(0o755)
    env = hermetic_env(HOME=str(root.parent / "home"), PATH=f"{gemini.parent}:{os.environ['PATH']}")

    def doctor_here() -> dict:
        done = subprocess.run(
            [*snapstore_bin(), "--json", "doctor"],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        return json.loads(done.stdout)["hooks"][0]

    assert run(root, "init").returncode == 0
    assert (
        subprocess.run(
            [*snapstore_bin(), "hook", "install", "gemini-cli"],
            cwd=root,
            env=env,
            capture_output=True,
            timeout=60,
        ).returncode
        == 0
    )
    assert json.loads((root / ".gemini" / "settings.json").read_text())["hooks"]["enabled"]
    assert not any("Invalid configuration" in p for p in doctor_here()["problems"])
    gemini.write_text("#!/bin/sh\necho 0.61.0\n")
    assert any("Invalid configuration" in p and "remove it" in p for p in doctor_here()["problems"])


def test_hook_failures_in_the_log_are_reported(root: Path) -> None:
    assert run(root, "init").returncode == 0
    assert run(root, "hook", "install", "copilot").returncode == 0
    bad = subprocess.run(
        [*snapstore_bin(), "hook", "copilot", "preToolUse"],
        cwd=root,
        input=b"{ not json",
        capture_output=True,
        env=hermetic_env(),
        timeout=60,
    )
    assert bad.returncode == 0  # Copilot denies a tool call on any other exit code
    [hook] = doctor(root)[1]["hooks"]
    assert any("1 hook failure(s)" in p and "not JSON" in p for p in hook["problems"])
    assert not hook["unrecorded"]  # it ran, and failed


def test_user_wide_hooks_are_found_too(root: Path) -> None:
    assert run(root, "init").returncode == 0
    assert run(root, "hook", "install", "cursor", "--scope", "user").returncode == 0
    [hook] = doctor(root)[1]["hooks"]
    assert (hook["agent"], hook["scope"]) == ("cursor", "user")
    assert hook["file"] == str(root.parent / "home" / ".cursor" / "hooks.json")
    feed(root, "cursor", 4)
    [hook] = doctor(root)[1]["hooks"]
    assert hook["sessions"] == 1 and hook["problems"] == []


def test_http_hooks_between_sessions_are_a_note_not_a_problem(root: Path) -> None:
    """Between sessions no daemon runs, as it should be: each session's SessionStart hook
    starts it, and while it is down Claude Code blocks prompts and writes rather than lose
    one. So doctor notes it (it said "!!" and exited 1), status counts no problem, and the
    note goes once the daemon runs."""
    assert run(root, "init").returncode == 0
    assert run(root, "hook", "install", "claude-code", "--http").returncode == 0
    code, report = doctor(root)
    [hook] = report["hooks"]
    assert (code, report["ok"], hook["problems"]) == (0, True, [])
    [down] = [a for a in hook["advice"] if "snapstore serve is not running" in a]
    assert "SessionStart hook starts it" in down and "`snapstore serve --detach`" in down
    text = run(root, "doctor")
    assert text.returncode == 0 and "ok  claude-code (local)" in text.stdout
    status = run(root, "--json", "status")
    assert json.loads(status.stdout)["hook_problems"] == []
    assert "problem" not in run(root, "status").stdout
    started = run(root, "--json", "serve", "--detach")
    assert started.returncode == 0, started.stderr
    try:
        [hook] = doctor(root)[1]["hooks"]
        assert not any("snapstore serve" in a for a in hook["advice"])
    finally:
        assert run(root, "serve", "--stop").returncode == 0


def test_doctor_right_after_a_correct_install_is_ok(root: Path) -> None:
    """Installed, nothing used yet: "no session recorded yet" is a note, exit 0 (it was "!!"
    and exit 1, which teaches people to ignore doctor)."""
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    assert run(root, "init").returncode == 0
    assert run(root, "hook", "install", "claude-code").returncode == 0
    code, report = doctor(root)
    [hook] = report["hooks"]
    assert (code, report["ok"], report["problems"], hook["problems"]) == (0, True, 0, [])
    assert hook["unrecorded"] and hook["shell"]
    text = run(root, "doctor")
    assert text.returncode == 0 and "!!" not in text.stdout
    assert text.stdout.startswith("ok  claude-code (local): ")
    assert ", no session recorded yet\n" in text.stdout


def test_doctor_says_when_the_shell_is_not_covered_and_the_command_that_covers_it(
    root: Path,
) -> None:
    assert run(root, "init", "--no-track-shell").returncode == 0
    assert run(root, "hook", "install", "claude-code", "--no-shell").returncode == 0
    [hook] = doctor(root)[1]["hooks"]
    [tip] = [a for a in hook["advice"] if "shell is not covered" in a]
    assert hook["shell"] is False
    assert tip == (
        "the shell is not covered (these hooks do not see its shell tool, Bash; the store "
        "is not in scan mode), so what claude-code's shell commands change is not recorded: "
        "turn it on with `snapstore hook install claude-code`"
    )
    assert f"     > {tip}\n" in run(root, "doctor").stdout
    assert run(root, "hook", "install", "claude-code").returncode == 0
    [hook] = doctor(root)[1]["hooks"]
    assert hook["shell"] is True
    assert not any("shell is not covered" in a for a in hook["advice"])


def test_doctor_says_when_the_store_is_not_in_scan_mode(root: Path) -> None:
    """Hooks that see the shell tool do nothing with it while the store is not in scan mode
    (a store from before scan mode was the default)."""
    assert run(root, "hook", "install", "claude-code").returncode == 0
    config = root / ".snapstore" / "config"
    config.write_text(config.read_text().replace("track_shell = true", "track_shell = false"))
    assert run(root, "config", "trust").returncode == 0
    code, report = doctor(root)
    [hook] = report["hooks"]
    [tip] = [p for p in hook["problems"] if "shell is not covered" in p]  # changes lost: !!
    assert code == 1 and not hook["shell"]
    assert "(the store is not in scan mode)" in tip
    assert tip.endswith("turn it on with `snapstore hook install claude-code`")
