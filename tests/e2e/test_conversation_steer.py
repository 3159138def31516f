"""Codex rolls back user messages, not turns: a real Codex session whose second turn the user
steered with a second message while it ran (``codex app-server``'s ``turn/steer``, what the TUI
does when one types while Codex works), recorded by the real `snapstore hook codex`.

Codex's hook gives the steering message a turn of snapstore's own, with the Codex turn's id.
A rewind to before the steering message keeps the turn's first prompt; a rewind to before the
steered turn drops both its messages. Each time the resumed session (``codex exec resume``)
sends the fake model nothing of what was rewound: no prompt, no answer.
"""

from __future__ import annotations

import json

import pytest

from ..support.agents.app_server import steered_turn, thread_of, trust_hooks
from ..support.agents.fake_model import Shell, Turn, Write
from ..support.agents.session import Session
from .test_agents_hooks import install_snapstore, installed, on_path, snap  # noqa: F401
from .test_conversation import rewind, seen_by_model, tree

FIRST = Turn("Create notes.txt with one line", (Write("notes.txt", "alpha\n"),), "Created.")
SLOW = Turn(
    "Run the slow shell command",
    (Shell("sleep 5; printf 'slow\\n' >> notes.txt"),),
    "Slow done.",
)
STEER = Turn("Steer it: also say the word turnip", (), "Steered with turnip.")
THIRD = Turn("Say hello for the third prompt", (), "Hello three.")
FOURTH = Turn("Say hello for the fourth prompt", (), "Hello four.")
FIFTH = Turn("Say hello for the fifth prompt", (), "Hello five.")


def resumed(s: Session, thread: str, turn: Turn) -> str:
    """Resume the thread with ``turn``'s prompt: everything the model was sent for it."""
    s.state["resume_id"] = thread
    run = s.run(turn.prompt)
    assert run.code == 0 and not run.timed_out, run.brief()
    return seen_by_model(s, turn.prompt)


@pytest.mark.usefixtures("on_path")
def test_a_steered_codex_turn_is_rewound_by_its_user_messages(tmp_path) -> None:
    installed("codex")
    with Session("codex", tmp_path, [FIRST, SLOW, STEER, THIRD, FOURTH, FIFTH]) as s:
        install_snapstore(s)
        run = s.run(FIRST.prompt)
        assert run.code == 0 and not run.timed_out, run.brief()
        thread = thread_of(s.home)
        trust_hooks(s)
        steered_turn(s, thread, SLOW.prompt, STEER.prompt, "commandExecution")
        run = s.run(THIRD.prompt)
        assert run.code == 0 and not run.timed_out, run.brief()
        session = f"codex/{thread}"
        turns = json.loads(snap(s, "--json", "log", "--session", session).stdout)
        prompts = [t["prompt"] for t in turns]
        assert prompts == [THIRD.prompt, STEER.prompt, SLOW.prompt, FIRST.prompt], prompts

        # to before the steering message: the steered turn's first prompt and its command stay
        done = rewind(s, session, "2")
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["conversation"]["status"] == "rewound"
        sent = resumed(s, thread, FOURTH)
        for kept in (FIRST.prompt, "Created.", SLOW.prompt):
            assert kept in sent, (kept, sent)
        for gone in (STEER.prompt, "turnip", THIRD.prompt, "Hello three."):
            assert gone not in sent, (gone, sent)

        # to before the steered turn: both its messages go, whatever came after
        turns = json.loads(snap(s, "--json", "log", "--session", session).stdout)
        assert [t["prompt"] for t in turns] == [FOURTH.prompt, SLOW.prompt, FIRST.prompt]
        done = rewind(s, session, "2")
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["conversation"]["status"] == "rewound"
        assert tree(s)["notes.txt"] == "alpha\n"
        sent = resumed(s, thread, FIFTH)
        assert FIRST.prompt in sent and "Created." in sent
        for gone in (SLOW.prompt, "Slow done.", STEER.prompt, "turnip", FOURTH.prompt):
            assert gone not in sent, (gone, sent)
