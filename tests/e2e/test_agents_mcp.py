"""The agent takes back its own turns: the real agent CLIs, installed from npm and driven by the
fake model, with the hooks and the ``snapstore mcp`` server that ``snapstore hook install AGENT``
wrote. Three turns; in a fourth the model calls list_turns, then rewind_files for turn 2 (in
each agent's own tool naming and API dialect); the files are then as before turn 2, the model's
next request carries the tool's result naming the restored files, and ``snapstore rewind 1``
afterwards (the fourth turn) puts them back as after turn 3.

Slow (four headless runs of a Node CLI each): run one agent at a time with ``-k``. Each test
prints the agent's version and the seconds from the model's rewind_files call to the request
that carries its result (the closing note of issue 28 has them).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from ..support.agents.drivers import DRIVERS
from ..support.agents.fake_model import Mcp, Turn, Wait
from ..support.agents.install import PINS
from ..support.agents.session import Session
from .test_agents_hooks import (  # on_path: a fixture
    NOTES,
    SCRIPT,
    install_snapstore,
    installed,
    on_path,  # noqa: F401
    sessions_of,
    snap,
)

AGENTS = ["claude-code", "gemini-cli", "codex", "qwen-code", "copilot", "opencode"]
#: turn 2 of three, as list_turns numbers it while the fourth turn is open (1)
TURN_2 = "3"


def fourth(agent: str) -> Turn:
    """The fourth turn: list_turns, then rewind_files for turn 2, once the agent offers the
    server's tools (it may start the server while the turn has begun: Codex then announces
    them in the conversation, after the prompt; an announcement of an earlier run, before it,
    counts only after five polls, which give this run's server time to come up)."""
    call = DRIVERS[agent]().tool_call(Mcp("list_turns"), "")
    return Turn(
        PROMPT,
        (
            Wait(call.namespace, settle=5) if call.namespace else Wait(call.name),
            Mcp("list_turns"),
            Mcp("rewind_files", {"turn": TURN_2}),
        ),
        "Taken back.",
    )


PROMPT = "Take back what you did from turn 2 on"
BEFORE_2 = {"notes.txt": NOTES, "other.txt": "original\n"}
AFTER_3 = {"notes.txt": "alpha\ngamma\n", "other.txt": "original\nadded by shell\n"}


def tree(s: Session) -> dict[str, str]:
    """The files the turns wrote."""
    return {
        p.name: p.read_text()
        for p in s.workspace.iterdir()
        if p.is_file() and p.name in ("notes.txt", "other.txt")
    }


def results_seen(s: Session, text: str) -> list[int]:
    """The indexes of the model requests whose body carries ``text``."""
    return [i for i, r in enumerate(s.model.requests) if text in json.dumps(r.body)]


def last_seen(s: Session, requests: int = 3, chars: int = 1500) -> list[str]:
    """The end of each of the model's last requests (what the tools answered), for a failure."""
    return [json.dumps(r.body)[-chars:] for r in s.model.requests[-requests:]]


def version(s: Session) -> str:
    done = subprocess.run(
        [str(s.exe), "--version"], env=s.env(), capture_output=True, text=True, timeout=120
    )
    return (done.stdout.strip().splitlines() or [PINS[s.driver.pin or s.agent].version])[0]


@pytest.mark.long(30)
@pytest.mark.usefixtures("on_path")
@pytest.mark.parametrize("agent", AGENTS)
def test_the_agent_takes_back_its_own_turns_through_mcp(
    agent: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    installed(agent)
    with Session(agent, tmp_path, [*SCRIPT, fourth(agent)]) as s:
        done = install_snapstore(s)
        assert done["mcp"]["added"] and not done["mcp"]["read_only"], done
        (s.workspace / "other.txt").write_text("original\n")
        for turn in SCRIPT:
            run = s.run(turn.prompt)
            assert run.code == 0 and not run.timed_out, run.brief()
        assert tree(s) == AFTER_3
        [session] = sessions_of(s)

        run = s.run(PROMPT)
        assert run.code == 0 and not run.timed_out, run.brief()
        assert tree(s) == BEFORE_2, run.brief()

        # the list the model read named turn 2 by its number, and the result it got back
        # named the files restored, in the request that followed the call
        listed = results_seen(s, "1 file(s), +1/-1: notes.txt (modified, +1/-1)")  # turn 2's
        assert listed, f"the model never got list_turns' answer; it got: {last_seen(s)}"
        restored = results_seen(s, "Restored exactly: notes.txt, other.txt.")
        assert restored, f"the model never got rewind_files' answer; it got: {last_seen(s)}"
        call = max(i for i in listed if i < restored[0])  # its answer was the call
        took = s.model.requests[restored[0]].time - s.model.requests[call].time

        log = json.loads(snap(s, "--json", "log", "--session", session).stdout)
        assert log[0]["prompt"].strip('"') == PROMPT  # opencode quotes its prompts
        assert log[0]["inside"][0]["text"] == "took back turns 2\u20133 at the agent's request"

        back = snap(s, "--json", "rewind", "1", "--yes", "--session", session)
        assert back.returncode in (0, 1), back.stderr
        assert tree(s) == AFTER_3
        with capsys.disabled():
            print(f"\n{agent} {version(s)}: rewind_files call to its result {took:.2f} s")
