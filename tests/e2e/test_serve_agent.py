"""The real Claude Code CLI (from npm, against the scripted model on loopback) with the HTTP
hooks `snapstore hook install claude-code --http` writes, posting to `snapstore serve`.

Two things must hold: the session's writes are recorded (and rewound) exactly as with command
hooks, and when the daemon dies in the middle of a turn no later write goes through
uncaptured: Claude Code blocks it (onFailure: block) and tells the model why.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from ..support import hermetic_env, snapstore
from ..support.agents.fake_model import Turn, Write
from ..support.agents.install import InstallError, install
from ..support.agents.session import Session

WRITES = 4
SCRIPT = [
    Turn(
        "Write the notes",
        tuple(Write(f"notes{i}.txt", f"note {i}\n") for i in range(WRITES)),
        "Written.",
    ),
    Turn(
        "Write the drafts",
        tuple(Write(f"draft{i}.txt", f"draft {i}\n") for i in range(WRITES)),
        "Written.",
    ),
]


def snap(s: Session, *args: str) -> subprocess.CompletedProcess[str]:
    """`snapstore ARGS` in the session's workspace, as its user (one state folder, where trust
    is recorded, so the agent's hooks see the store's settings files as written by the same
    user), on the real clock: the daemon's idle timer and the agent's run it."""
    env = {k: v for k, v in hermetic_env().items() if k != "SNAPSTORE_NOW"}
    env["XDG_STATE_HOME"] = s.env()["XDG_STATE_HOME"]
    return snapstore(s.workspace, *args, env=env)


def daemon_pid(ws: Path) -> int | None:
    try:
        return json.loads((ws / ".snapstore" / "serve.lock").read_text() or "{}").get("pid")
    except FileNotFoundError:
        return None


@pytest.fixture
def session(tmp_path: Path):
    try:
        install("claude-code")
    except InstallError as e:
        pytest.fail(f"could not install the claude-code CLI: {e}", pytrace=False)
    with Session("claude-code", tmp_path, SCRIPT) as s:
        yield s


def test_http_hooks_record_the_turn_and_block_writes_once_the_daemon_is_gone(
    session: Session,
) -> None:
    s, ws = session, session.workspace
    (ws / "notes0.txt").write_text("the user's notes\n")
    done = snap(s, "--json", "hook", "install", "claude-code", "--http")
    assert done.returncode == 0, done.stderr
    config = json.loads((ws / ".claude" / "settings.local.json").read_text())
    assert {
        h["type"] for entries in config["hooks"].values() for e in entries for h in e["hooks"]
    } == {"http", "command"}  # the daemon's start is a command

    run = s.run(SCRIPT[0].prompt)  # the session's start starts the daemon
    assert run.code == 0 and not run.timed_out, run.brief()
    logged = json.loads(snap(s, "log", "--json", "--all").stdout)
    assert [(p["prompt"], p["files"], p["state"]) for p in logged] == [
        (SCRIPT[0].prompt, WRITES, "closed")
    ]
    assert snap(s, "rewind", "1", "--yes").returncode == 0
    assert (ws / "notes0.txt").read_text() == "the user's notes\n"  # captured, and restored
    assert not (ws / "notes1.txt").exists()

    def kill_after_the_first_write() -> None:
        deadline = time.monotonic() + 120
        while not (ws / "draft0.txt").exists() and time.monotonic() < deadline:
            time.sleep(0.002)
        pid = daemon_pid(ws)
        if pid:
            os.kill(pid, signal.SIGKILL)

    killer = threading.Thread(target=kill_after_the_first_write, daemon=True)
    killer.start()
    run = s.run(SCRIPT[1].prompt)  # resumed: the session's start brings the daemon back
    killer.join(timeout=130)
    assert run.code == 0 and not run.timed_out, run.brief()
    assert (ws / "draft0.txt").exists()
    assert not any((ws / f"draft{i}.txt").exists() for i in range(1, WRITES)), (
        "a write went through with no daemon to capture it"
    )
    told = [json.dumps(r.body) for r in s.model.requests if isinstance(r.body, dict)]
    assert any(
        "blocking because onFailure is" in t
        and "ECONNREFUSED" in t
        and "/snapstore/hook/claude-code" in t
        for t in told
    ), "the model is told why the write was blocked"
    # the first write was captured before the daemon died: once its turn is ended (as the
    # next prompt would), it is in the turn, and a rewind takes it back
    logged = json.loads(snap(s, "log", "--json", "--all").stdout)
    assert logged[0]["prompt"] == SCRIPT[1].prompt and logged[0]["state"] == "open"
    assert snap(s, "--session", logged[0]["session"], "end").returncode == 0
    turn = json.loads(snap(s, "show", logged[0]["turn"], "--json").stdout)
    assert [c["path"] for c in turn["changes"]] == ["draft0.txt"]
    assert snap(s, "--session", logged[0]["session"], "rewind", "1", "--yes").returncode == 0
    assert not (ws / "draft0.txt").exists()
