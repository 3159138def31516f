"""The interactive picker in a real terminal: tmux drives the keys and reads the screen."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from snapstore import Store

from ..support import hermetic_env, snapstore_bin
from ..support.transcripts import posing_as, session_of, transcript_in

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


class Terminal:
    """A detached tmux session running one command."""

    def __init__(self, command: list[str], cwd: Path, **extra: str):
        self.name = f"snapstore-test-{uuid.uuid4().hex[:8]}"
        env = hermetic_env(TERM="xterm-256color", **extra)
        env.pop("NO_COLOR", None)
        exports = " ".join(
            f"{k}={shlex.quote(v)}"
            for k, v in env.items()
            if k.startswith(("SNAPSTORE_", "PATH", "HOME", "LANG"))
        )
        script = (
            f"cd {shlex.quote(str(cwd))} && env {exports} {shlex.join(command)}; "
            "echo EXIT=$?; sleep 60"
        )
        subprocess.run(
            ["tmux", "new-session", "-d", "-s", self.name, "-x", "140", "-y", "40", script],
            check=True,
            env={**os.environ, "TERM": "xterm-256color"},
        )

    def screen(self) -> str:
        return subprocess.run(
            ["tmux", "capture-pane", "-p", "-t", self.name],
            capture_output=True,
            text=True,
            check=True,
        ).stdout

    def wait_for(self, text: str, timeout: float = 20.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.screen()
            if text in screen:
                return screen
            time.sleep(0.1)
        raise AssertionError(f"{text!r} never appeared on screen:\n{self.screen()}")

    def keys(self, *keys: str) -> None:
        for key in keys:
            subprocess.run(["tmux", "send-keys", "-t", self.name, key], check=True)
            time.sleep(0.15)

    def close(self) -> None:
        subprocess.run(["tmux", "kill-session", "-t", self.name], capture_output=True)


@pytest.fixture
def session_with_three_turns(cli, root: Path) -> Path:
    cli("init")
    for n in (1, 2, 3):
        cli("begin", "--prompt", f"prompt number {n}\nmore detail for turn {n}")
        cli("pre-write", f"f{n}.txt")
        (root / f"f{n}.txt").write_text(f"content {n}\n")
        cli("post-write", f"f{n}.txt")
        cli("end")
    return root


@pytest.fixture
def terminal(session_with_three_turns: Path):
    opened: list[Terminal] = []

    def start(*args: str) -> Terminal:
        term = Terminal([*snapstore_bin(), *args], session_with_three_turns)
        opened.append(term)
        return term

    yield start
    for term in opened:
        term.close()


def test_arrow_keys_enter_and_mode_choice_rewind(terminal, root: Path) -> None:
    term = terminal("rewind")
    screen = term.wait_for("Rewind to before which turn?")
    assert "> " in screen and "prompt number 3" in screen and "more detail for turn 3" in screen
    term.keys("Down")
    screen = term.wait_for("more detail for turn 2")
    assert "f2.txt" in screen
    term.keys("Enter")
    screen = term.wait_for("Rewind code and conversation")
    assert "taking back 2 turn(s)" in screen and "delete   f3.txt" in screen
    term.keys("Enter")
    screen = term.wait_for("EXIT=")
    assert "EXIT=0" in screen and "deleted   f2.txt" in screen
    assert sorted(p.name for p in root.glob("f*.txt")) == ["f1.txt"]


def test_escape_cancels_and_changes_nothing(terminal, root: Path) -> None:
    term = terminal("rewind")
    term.wait_for("Rewind to before which turn?")
    term.keys("Escape")
    screen = term.wait_for("EXIT=")
    assert "cancelled; nothing changed" in screen and "EXIT=0" in screen
    assert sorted(p.name for p in root.glob("f*.txt")) == ["f1.txt", "f2.txt", "f3.txt"]


def test_conversation_only_keeps_the_files(terminal, root: Path, cli) -> None:
    term = terminal("rewind")
    term.wait_for("Rewind to before which turn?")
    term.keys("Enter")  # the newest turn
    term.wait_for("Rewind conversation only")
    term.keys("Down", "Enter")
    term.wait_for("EXIT=0")
    assert (root / "f3.txt").exists()
    assert [p["n"] for p in cli("--json", "log").json] == [1, 2]


def test_rewind_turn_asks_for_confirmation_on_a_terminal(terminal, root: Path) -> None:
    term = terminal("rewind", "1")
    screen = term.wait_for("Rewind? [y/N]")
    assert "would be deleted" in screen and "f3.txt" in screen
    term.keys("n", "Enter")
    term.wait_for("EXIT=1")
    assert (root / "f3.txt").exists()


def test_names_and_prompts_that_would_drive_the_terminal_are_escaped(
    session_with_three_turns: Path, cli
) -> None:
    """A prompt that clears the screen and retitles the window, and a file named to do the
    same: the picker shows them escaped, as `log` does."""
    root = session_with_three_turns
    cli("begin", "--prompt", "wipe\x1b[2J\x1b]0;owned\x07 it")
    cli("pre-write", "x\x1b[2Jy.txt")
    (root / "x\x1b[2Jy.txt").write_text("x\n")
    cli("post-write", "x\x1b[2Jy.txt")
    cli("end")
    term = Terminal([*snapstore_bin(), "rewind"], root)
    try:
        screen = term.wait_for("Rewind to before which turn?")
        assert '"wipe\\033[2J\\033]0;owned\\a it"' in screen, screen
        assert '"x\\033[2Jy.txt"' in screen, screen
        assert "prompt number 3" in screen  # the rest of the list was not wiped
        term.keys("Enter")
        screen = term.wait_for("Rewind code and conversation")
        assert 'delete   "x\\033[2Jy.txt"' in screen, screen
        term.keys("Escape")
        term.wait_for("EXIT=0")
    finally:
        term.close()
    assert (root / "x\x1b[2Jy.txt").exists()


def test_a_turn_taken_back_earlier_is_offered_and_switched_to(terminal, root: Path, cli) -> None:
    assert cli("rewind", "2", "--yes").code == 0  # f2 and f3 go; turns 2 and 3 are rewound
    term = terminal("rewind")
    screen = term.wait_for("Rewind to before which turn?")
    assert "↻" in screen and "[rewound: switch to it]" in screen
    term.keys("Down")  # past the one rewind point, to the newest turn taken back
    term.wait_for("more detail for turn 3")
    term.keys("Enter")
    screen = term.wait_for("Switch to it")
    assert "restore  f2.txt" in screen and "restore  f3.txt" in screen
    term.keys("Enter")
    screen = term.wait_for("EXIT=")
    assert "EXIT=0" in screen and "switched" in screen
    assert sorted(p.name for p in root.glob("f*.txt")) == ["f1.txt", "f2.txt", "f3.txt"]
    assert [p["n"] for p in cli("--json", "log").json] == [1, 2, 3]


def test_the_modes_say_what_they_do_to_the_agents_chat(tmp_path: Path, root: Path) -> None:
    """A Claude Code session: the second menu names the resume command; while Claude Code runs
    the session, only the code can go back, and the menu says why."""
    home = tmp_path / "home"
    transcript = transcript_in({"claude-code": str(home / ".claude")}, "claude-code")
    with Store.init(root) as store:
        session = session_of(store, "claude-code", transcript)
    env = {"HOME": str(home), "SNAPSTORE_SESSION": session}
    term = Terminal([*snapstore_bin(), "rewind"], root, **env)
    try:
        term.wait_for("Rewind to before which turn?")
        term.keys("Down", "Enter")  # turn 2
        screen = term.wait_for("Rewind code only")
        assert "Rewind code and conversation (the agent forgets turn 2 on; then " in screen
        assert "`claude --resume sid`" in screen
        assert "Rewind code only (the agent still remembers turn 2 on)" in screen
        term.keys("Enter")
        screen = term.wait_for("EXIT=")
        assert "EXIT=0" in screen and "conversation: rewound to before turn 2" in screen
        assert "your prompt from turn 2, to edit and send again:" in screen
    finally:
        term.close()
    assert transcript.read_bytes().endswith(b'"sessionId":"sid"}\n')

    registry = home / ".claude" / "sessions"
    registry.mkdir(parents=True)
    with posing_as(tmp_path, "claude") as claude:
        (registry / "1.json").write_text(json.dumps({"pid": claude.pid, "sessionId": "sid"}))
        term = Terminal([*snapstore_bin(), "--session", session, "rewind"], root, HOME=str(home))
        try:
            term.wait_for("Rewind to before which turn?")
            term.keys("Enter")  # turn 1, the one left
            screen = term.wait_for("Cancel")
            assert "Rewind code only (the chat cannot go back: Claude Code is running" in screen
            assert "Rewind code and conversation" not in screen
        finally:
            term.close()
