"""The conversation rewinds with the files for Gemini CLI and Qwen Code: real sessions recorded
by the real `snapstore hook AGENT`, rewound with `snapstore rewind`, then resumed by the agent
with the session id from `--json`. Their hooks carry no message id: the turn is found by its
prompt and the begin hook's time. The fake model's request log is the proof, as in
test_conversation.py. The refusal while the agent runs the session comes from Qwen Code's registry
of running sessions, and for Gemini CLI, which keeps none, from the process list: the real
Gemini CLI, interactive on a terminal (`script`) in the workspace."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import time
from pathlib import Path

import pytest

from snapstore.conversation import gemini_cli

from ..support.agents.session import Session
from ..support.transcripts import pose
from .test_agents_hooks import (  # on_path: a fixture
    NOTES,
    SCRIPT,
    install_snapstore,
    installed,
    on_path,  # noqa: F401
    sessions_of,
    snap,
)
from .test_conversation import (
    FIFTH,
    FOURTH,
    crash_at,
    resumed_remembers_every_turn,
    resumed_remembers_turn_one,
    rewind,
    through_the_page,
    tree,
)

RESUME = {"gemini-cli": "gemini --resume {}", "qwen-code": "qwen --resume {}"}


def transcript(s) -> Path:
    """The session's chat: the one file holding its first prompt (a Gemini CLI start may leave
    an empty chat of its own beside it)."""
    if s.agent == "gemini-cli":
        found = (s.home / ".gemini" / "tmp").glob("*/chats/*.jsonl")
    else:
        found = (s.home / ".qwen" / "projects").glob("*/chats/*.jsonl")
    holding = [p for p in found if SCRIPT[0].prompt in p.read_text()]
    assert len(holding) == 1, holding
    return holding[0]


@pytest.mark.long(40)
@pytest.mark.usefixtures("on_path")
@pytest.mark.parametrize("agent", ["gemini-cli", "qwen-code"])
def test_a_real_session_rewinds_its_conversation_with_its_files(agent: str, tmp_path: Path) -> None:
    installed(agent)
    with Session(agent, tmp_path, [*SCRIPT, FOURTH, FIFTH]) as s:
        install_snapstore(s)
        (s.workspace / "other.txt").write_text("original\n")
        for turn in SCRIPT:
            run = s.run(turn.prompt)
            assert run.code == 0 and not run.timed_out, run.brief()
        after_3 = tree(s)
        path = transcript(s)
        whole = path.read_bytes()
        [session] = sessions_of(s)
        sid = session.split("/", 1)[1]
        resume = RESUME[agent].format(sid)
        log = json.loads(snap(s, "--json", "log", "--session", session).stdout)
        second = log[1]["turn"]  # 1 is the newest: turn 2 of three
        assert log[1]["prompt"] == SCRIPT[1].prompt

        # --mode code: the files only
        done = rewind(s, session, "2", "--mode", "code")
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["conversation"] is None
        assert tree(s)["notes.txt"] == NOTES and path.read_bytes() == whole
        assert snap(s, "undo").returncode == 0 and tree(s) == after_3

        # --mode conversation: the files stay; the record is appended; undo cuts it
        done = snap(s, "rewind", "2", "--mode", "conversation", "--yes", "--session", session)
        assert done.returncode == 0, done.stderr
        assert tree(s) == after_3
        assert path.read_bytes().startswith(whole) and len(path.read_bytes()) > len(whole)
        assert f"resume it with: {resume}\n" in done.stdout
        assert snap(s, "undo").returncode == 0 and path.read_bytes() == whole

        # kill -9 before and after the append: `rewind --resume` finishes either
        for point in ("journal.conversation", "journal.conversed"):
            assert crash_at(s, session, "2", point) == -signal.SIGKILL
            grown = path.read_bytes()
            assert grown == whole if point == "journal.conversation" else len(grown) > len(whole)
            resumed = snap(s, "--json", "rewind", "--resume")
            assert resumed.returncode == 0, resumed.stderr
            assert tree(s)["notes.txt"] == NOTES
            assert path.read_bytes()[len(whole) :].count(b"\n") == 1
            assert snap(s, "undo").returncode == 0
            assert tree(s) == after_3 and path.read_bytes() == whole

        # through the page's socket: the chat goes back and comes back whole
        paged = through_the_page(s, session)
        assert tree(s) == after_3 and path.read_bytes() == whole

        # rewind 2, undo right after it, then resume: the model sees turns 1 to 3
        done = rewind(s, session, "2")
        assert done.returncode == 0, done.stderr
        out = json.loads(done.stdout)
        assert out["conversation"] == paged  # the same answer through both doors
        assert out["user_text"] == SCRIPT[1].prompt
        assert out["conversation"] == {
            "agent": agent,
            "status": "rewound",
            "how": "appended",
            "session_id": sid,
            "resume_command": resume,
            "transcript": str(path),
            "note": "",
        }
        assert snap(s, "undo").returncode == 0 and path.read_bytes() == whole
        resumed_remembers_every_turn(s, sid)

        # rewind turn 2 for good, then resume with the id from --json: turn 1 only
        done = rewind(s, session, second)
        assert done.returncode == 0, done.stderr
        out = json.loads(done.stdout)["conversation"]
        assert out["status"] == "rewound" and out["session_id"] == sid
        resumed_remembers_turn_one(s, out["session_id"])

        # the agent runs the session: refused, nothing changed. Qwen Code's registry names
        # it with a live pid (the test's own `sleep`, under qwen's name); Gemini CLI keeps
        # none: the real Gemini CLI, interactive on a terminal in the workspace, is found in
        # the process list
        if agent == "qwen-code":
            running = pose(s.base, "qwen")
            registry = s.home / ".qwen" / "sessions"
            registry.mkdir(parents=True, exist_ok=True)
            entry = {"pid": running.pid, "sessionId": sid, "cwd": str(s.workspace)}
            (registry / f"{running.pid}.json").write_text(json.dumps(entry))
        else:
            command = shlex.join([str(s.exe), "--resume", sid])
            running = subprocess.Popen(
                ["script", "-qc", command, "/dev/null"],
                cwd=s.workspace,
                env={**s.env(), "TERM": "xterm"},
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
            _wait_for_gemini(sid, s.home / ".gemini")
        try:
            files, grown = tree(s), path.read_bytes()
            refused = rewind(s, session, "2")
            assert refused.returncode == 3, refused.stderr
            assert json.loads(refused.stdout)["error"]["code"] == "run_active"
            assert "first, or use --mode code" in refused.stderr
            assert refused.stderr.count("\n") == 1
            assert tree(s) == files and path.read_bytes() == grown
        finally:
            os.killpg(running.pid, signal.SIGKILL)
            running.wait()


def _wait_for_gemini(sid: str, home: Path) -> None:
    """Wait until a Gemini CLI process runs in the session's project."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if gemini_cli.running(sid, [str(home)], None):
            return
        time.sleep(0.2)
    raise AssertionError("Gemini CLI never started")
