"""The interactive picker in a real terminal: tmux drives the keys and reads the screen."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from snapstore import Store

from ..support import Clock, agent_write, hermetic_env, snapstore_bin
from ..support.gitrepo import git, init, state
from ..support.runner import FIXED_NOW
from ..support.transcripts import claude_turn, posing_as, session_of, transcript_in
from ..support.trees import snapshot

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


class Terminal:
    """A detached tmux session running one command, on a tmux server of its own.

    Its own socket because parallel workers sharing the default server race:
    one closing the server's last session stops the server as another starts its
    session on it ("server exited unexpectedly").
    """

    def __init__(
        self, command: list[str], cwd: Path, columns: int = 140, rows: int = 40, **extra: str
    ):
        self.name = f"snapstore-test-{uuid.uuid4().hex[:8]}"
        self._socket = Path(tempfile.gettempdir()) / f"{self.name}.sock"
        self._tmux = ["tmux", "-S", str(self._socket)]
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
        size = ["-x", str(columns), "-y", str(rows)]
        subprocess.run(
            [*self._tmux, "new-session", "-d", "-s", self.name, *size, script],
            check=True,
            env={**os.environ, "TERM": "xterm-256color"},
        )

    def screen(self) -> str:
        return subprocess.run(
            [*self._tmux, "capture-pane", "-p", "-t", self.name],
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
            subprocess.run([*self._tmux, "send-keys", "-t", self.name, key], check=True)
            time.sleep(0.15)

    def close(self) -> None:
        subprocess.run([*self._tmux, "kill-server"], capture_output=True)
        self._socket.unlink(missing_ok=True)


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
    assert "> " in screen and "Stay at current position" in screen
    term.keys("Up")  # the newest turn, just above "Stay"
    screen = term.wait_for("more detail for turn 3")
    term.keys("Up")
    screen = term.wait_for("more detail for turn 2")
    assert "f2.txt" in screen
    term.keys("Enter")
    screen = term.wait_for("Rewind code and conversation")
    assert "Takes back 2 turns" in screen and "delete   f3.txt" in screen
    term.keys("Up", "Up", "Up")  # from "Do nothing" to the first choice
    term.wait_for("turn 2 on leave the branch (this session has no agent chat")
    term.keys("Enter")
    screen = term.wait_for("EXIT=")
    assert "EXIT=0" in screen and "deleted   f2.txt" in screen
    assert sorted(p.name for p in root.glob("f*.txt")) == ["f1.txt"]


def test_escape_cancels_and_changes_nothing(terminal, root: Path) -> None:
    term = terminal("rewind")
    term.wait_for("Rewind to before which turn?")
    term.keys("Up", "Escape")
    screen = term.wait_for("EXIT=")
    assert "cancelled; nothing changed" in screen and "EXIT=0" in screen
    assert sorted(p.name for p in root.glob("f*.txt")) == ["f1.txt", "f2.txt", "f3.txt"]


def test_conversation_only_keeps_the_files(terminal, root: Path, cli) -> None:
    term = terminal("rewind")
    term.wait_for("Rewind to before which turn?")
    term.keys("Up", "Enter")  # the newest turn
    term.wait_for("Rewind conversation only")
    term.keys("Up", "Up", "Enter")  # above "Rewind code only"
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
        assert "prompt number 3" in screen  # the rest of the list was not wiped
        term.keys("Up")
        screen = term.wait_for("Files:")
        assert '"x\\033[2Jy.txt"' in screen, screen
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
    assert "(↻: taken back earlier)" in screen and screen.count("↻") == 3, screen
    term.keys("Up", "Up")  # past the one rewind point, to the newest turn taken back
    screen = term.wait_for("more detail for turn 3")
    assert "Taken back earlier (rewound): choosing it switches to right after it." in screen
    term.keys("Enter")
    screen = term.wait_for("Switch to it")
    assert "restore  f2.txt" in screen and "restore  f3.txt" in screen
    term.keys("Up", "Enter")  # the default is "Do nothing"
    screen = term.wait_for("EXIT=")
    assert "EXIT=0" in screen and "switched" in screen
    assert sorted(p.name for p in root.glob("f*.txt")) == ["f1.txt", "f2.txt", "f3.txt"]
    assert [p["n"] for p in cli("--json", "log").json] == [1, 2, 3]


def test_the_modes_say_what_they_do_to_the_agents_chat(tmp_path: Path, root: Path) -> None:
    """A Claude Code session: the second menu names the resume command; while Claude Code runs
    the session, only the code can go back, and the confirmation says why."""
    home = tmp_path / "home"
    transcript = transcript_in({"claude-code": str(home / ".claude")}, "claude-code")
    with Store.init(root) as store:
        session = session_of(store, "claude-code", transcript)
    env = {"HOME": str(home), "SNAPSTORE_SESSION": session}
    term = Terminal([*snapstore_bin(), "rewind"], root, **env)
    try:
        term.wait_for("Rewind to before which turn?")
        term.keys("Up", "Up", "Enter")  # turn 2
        screen = term.wait_for("Rewind code only")
        term.keys("Up")
        screen = term.wait_for("The files go back; the agent still remembers turn 2 on.")
        term.keys("Up", "Up")
        screen = term.wait_for("The agent forgets turn 2 on. Then resume it with:")
        assert "  claude --resume sid" in screen
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
            term.keys("Up", "Enter")  # turn 1, the one left
            screen = term.wait_for("Do nothing (Esc)")
            assert "The chat cannot go back: Claude Code is running" in screen
            assert "Rewind code only" in screen and "Rewind code and conversation" not in screen
        finally:
            term.close()


@pytest.fixture
def git_turn(cli, root: Path) -> dict[str, object]:
    """A repository on main with the user's uncommitted edit, and one turn (hook mode) in
    which the agent wrote a.txt, made the branch topic and committed it there; the
    repository before the turn, after it, and topic's commit."""
    init(root)
    (root / "notes.txt").write_text("notes\nuser edit\n")
    assert cli("init").code == 0
    before = state(root)
    assert cli("begin", "--prompt", "commit the work on a branch").code == 0
    assert cli("pre-write", "a.txt").code == 0
    (root / "a.txt").write_text("a1\na2\nagent\n")
    assert cli("post-write", "a.txt").code == 0
    git(root, "checkout", "-q", "-b", "topic")
    git(root, "commit", "-qm", "agent", "a.txt")
    assert cli("end").code == 0
    return {"before": before, "after": state(root), "topic": git(root, "rev-parse", "topic")}


def test_the_confirmation_says_what_moves_in_the_repository(git_turn, root: Path) -> None:
    topic = str(git_turn["topic"])
    term = Terminal([*snapstore_bin(), "rewind"], root)
    try:
        term.wait_for("Rewind to before which turn?")
        term.keys("Up")  # the turn
        screen = term.wait_for("Git:")
        details = screen[screen.index("Git:") :].splitlines()
        assert details[1:4] == [
            "  checked out topic",
            f"  created branch topic at {topic[:7]}",
            "  updated the index",
        ], screen
        term.keys("Enter")
        screen = term.wait_for("Select an action:")
        assert "  git      HEAD: topic -> main\n" in screen, screen
        assert f"  git      refs/heads/topic: {topic[:7]} -> (none)\n" in screen, screen
        assert "  git      the index put back\n" in screen, screen
        assert "restore  a.txt" in screen
        assert state(root) == git_turn["after"]  # the dry run moved nothing
        term.keys("Up", "Up", "Up", "Enter")  # "Rewind code and conversation"
        screen = term.wait_for("EXIT=")
        assert "EXIT=0" in screen, screen
    finally:
        term.close()
    assert state(root) == git_turn["before"]  # on main, the user's edit, as before the turn
    (kept,) = git(root, "for-each-ref", "--format=%(refname)", "refs/snapstore/").splitlines()
    assert kept.endswith("/heads/topic") and git(root, "rev-parse", kept) == topic


def test_with_no_git_the_confirmation_moves_nothing_of_the_repository(git_turn, root: Path) -> None:
    term = Terminal([*snapstore_bin(), "rewind", "--no-git"], root)
    try:
        term.wait_for("Rewind to before which turn?")
        term.keys("Up", "Enter")
        screen = term.wait_for("Select an action:")
        assert "restore  a.txt" in screen, screen
        assert "  git      " not in screen and "index put back" not in screen, screen
        term.keys("Up", "Up", "Up", "Enter")
        screen = term.wait_for("EXIT=")
        assert "EXIT=0" in screen, screen
    finally:
        term.close()
    now = state(root)
    assert git(root, "symbolic-ref", "HEAD") == "refs/heads/topic"  # git was left alone
    assert now["refs"] == git_turn["after"]["refs"]  # type: ignore[index]
    assert (root / "a.txt").read_text() == "a1\na2\n"  # the file went back


# -- at 80 columns, with what a real session looks like ---------------------------------------

#: A real Claude Code session id, and the name its hooks give the session (48 characters).
SID = "7c1e0a52-3f4b-4c1e-9d7e-0a523f4b4c1e"
SESSION = f"claude-code/{SID}"
LONG = (
    "Create a minimal Flask app with an index route and a requirements file listing Flask",
    "Add a /health endpoint that returns JSON with the status and the version of the app",
    "Greet the user by name from the ?name= query parameter, and write a test for it",
)


@pytest.fixture
def claude(tmp_path: Path, root: Path) -> Path:
    """A Claude Code session of three turns with real-length names and prompts, made 3 h, 2 h
    and 1 h before the command's clock; the home folder its transcript is in."""
    home = tmp_path / "home"
    transcript = home / ".claude" / "projects" / "-ws" / f"{SID}.jsonl"
    transcript.parent.mkdir(parents=True)
    clock = Clock(FIXED_NOW - 3 * 3600)
    with Store.init(root, clock=clock) as store:
        for i, prompt in enumerate(LONG):
            store.begin_turn(SESSION, prompt, f"p{i}", transcript=str(transcript))
            claude_turn(transcript, i, sid=SID, text=prompt)
            agent_write(
                store, "app.py", "".join(f"line {j}\n" for j in range(i + 2)), session=SESSION
            )
            agent_write(store, f"part{i}.py", f"part = {i}\n", session=SESSION)
            store.end_turn(SESSION)
            clock.tick(3600)
    return home


def _state(root: Path, home: Path) -> tuple[object, bytes]:
    """The workspace's files and the agent's transcript."""
    (transcript,) = home.glob(".claude/projects/-ws/*.jsonl")
    return snapshot(root), transcript.read_bytes()


def _chosen(screen: str) -> str:
    """The row the cursor is on."""
    (row,) = [line for line in screen.splitlines() if line.startswith("> ")]
    return row[2:].strip()


def _in_width(screen: str, columns: int) -> None:
    """Every line fits the terminal with a column to spare: none was cut by the terminal."""
    assert max(len(line.rstrip()) for line in screen.splitlines()) < columns, screen


def test_enter_on_the_defaults_changes_nothing(claude: Path, root: Path) -> None:
    """Enter, Enter (a Gemini CLI user's habit) stays where it is; so does Enter on the
    confirmation of a turn chosen."""
    before = _state(root, claude)
    env = {"HOME": str(claude), "SNAPSTORE_SESSION": SESSION}
    term = Terminal([*snapstore_bin(), "rewind"], root, columns=80, **env)
    try:
        screen = term.wait_for("Stay at current position")
        assert _chosen(screen) == "Stay at current position", screen
        assert "Cancel rewind and stay here: nothing changes." in screen
        term.keys("Enter", "Enter")
        screen = term.wait_for("EXIT=")
        assert "stayed at the current position; nothing changed" in screen and "EXIT=0" in screen
    finally:
        term.close()
    assert _state(root, claude) == before
    term = Terminal([*snapstore_bin(), "rewind"], root, columns=80, **env)
    try:
        term.wait_for("Stay at current position")
        term.keys("Up", "Enter")  # the newest turn, then Enter on the confirmation's default
        screen = term.wait_for("Select an action:")
        assert _chosen(screen) == "Do nothing (Esc)", screen
        assert "The files and the chat stay as they are." in screen
        term.keys("Enter")
        screen = term.wait_for("EXIT=")
        assert "cancelled; nothing changed" in screen and "EXIT=0" in screen
    finally:
        term.close()
    assert _state(root, claude) == before
    with Store.open(root) as store:
        assert [p.n for p in store.rewind_points(SESSION)] == [1, 2, 3]
        assert store.operations() == []


def test_the_confirmation_summarises_the_rewind_at_80_columns(
    claude: Path, root: Path, cli
) -> None:
    """The seed's summary (files, lines, how long ago, what a rewind does not cover) and every
    outcome's words fit 80 columns, the resume command whole on its own line."""
    log = cli("--json", "--session", SESSION, "log").json[:2]  # the turns taken back
    added, removed = sum(p["added"] for p in log), sum(p["removed"] for p in log)
    env = {"HOME": str(claude), "SNAPSTORE_SESSION": SESSION}
    term = Terminal([*snapstore_bin(), "rewind"], root, columns=80, **env)
    try:
        term.wait_for("Stay at current position")
        term.keys("Up", "Up", "Enter")  # turn 2
        screen = term.wait_for("Select an action:")
        _in_width(screen, 80)
        assert f"Rewind to before turn 2 ({log[1]['turn'][:8]}, 2 h ago):" in screen
        assert f"Takes back 2 turns: 3 files, +{added} -{removed} lines" in screen
        assert "\N{INFORMATION SOURCE} Not taken back: what the agent did beyond" in screen
        assert "a push to a remote" in screen and "Shell commands' changes were not" in screen
        assert "  restore  app.py" in screen and "  delete   part2.py" in screen
        term.keys("Up", "Up", "Up")  # to "Rewind code and conversation"
        screen = term.wait_for("The agent forgets turn 2 on. Then resume it with:")
        _in_width(screen, 80)
        assert _chosen(screen) == "Rewind code and conversation"
        assert f"\n  claude --resume {SID}\n" in screen
        term.keys("Escape")
        term.wait_for("EXIT=0")
    finally:
        term.close()


@pytest.mark.parametrize("columns", [80, 200])
def test_the_list_shows_turn_ids_and_cuts_prompts_between_words(
    claude: Path, root: Path, columns: int
) -> None:
    with Store.open(root) as store:
        ids = {p.n: p.turn.id[:8] for p in store.rewind_points(SESSION)}
    env = {"HOME": str(claude), "SNAPSTORE_SESSION": SESSION}
    term = Terminal([*snapstore_bin(), "rewind"], root, columns=columns, **env)
    try:
        screen = term.wait_for("Stay at current position")
        term.keys("Escape")
        term.wait_for("EXIT=0")
    finally:
        term.close()
    _in_width(screen, columns)
    assert f"session {SESSION}" in screen
    rows = [line[2:] for line in screen.splitlines() if re.match(r"  \s*\d  [0-9a-f]{8}  ", line)]
    cells = [re.split(r"\s{2,}", row.strip()) for row in rows]  # n, id, when, prompt, stats
    assert [(int(c[0]), c[1], c[2]) for c in cells] == [
        (3, ids[3], "3 h ago"), (2, ids[2], "2 h ago"), (1, ids[1], "1 h ago")
    ]  # fmt: skip
    for prompt, (*_, shown, stats) in zip(LONG, cells, strict=True):
        assert stats.startswith("2 files +")
        if columns == 200:
            assert shown == prompt
        else:  # cut where a word ends, and said so
            assert shown.endswith("…") and len(shown) > 20, shown
            assert prompt.startswith(shown[:-1]) and prompt[len(shown) - 1] == " ", shown
