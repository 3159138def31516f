"""A rewind that takes back the agent's conversation too, against one that takes back the code.

For each agent with a conversation module (Claude Code, Codex, Gemini CLI, Qwen Code), a
store holds a three-turn session whose begin hooks recorded the agent's transcript, as the
real hooks do (tests/support/transcripts.py writes the transcripts in each agent's format;
Claude Code's starts with ``--pad`` of the queue records it writes beside its messages, so that
the file it reads has a realistic size). Then,
as whole processes of this environment's ``snapstore``:

- ``snapstore rewind 2 --yes --mode both``: the files and the transcript (the agent's own
  rewind record appended, checked by replaying the transcript as the agent loads it);
- ``snapstore rewind 2 --yes --mode code``: the files alone (the peer);

each followed by an untimed ``snapstore undo`` that puts both back. The two alternate,
the order flipping every round, so that the load of a shared machine falls on both.

    ./dev sh python -m bench.conversation                  # 15 rounds per agent
    ./dev sh python -m bench.conversation --rounds 5 --pad 0

Prints each agent's medians and their ratio and writes bench/results/conversation.json. No
figure here is asserted anywhere.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from snapstore import Store
from tests.support.runner import hermetic_env
from tests.support.transcripts import chat_session_of, session_of, transcript_in

from .report import machine

SNAPSTORE = os.path.join(os.path.dirname(sys.executable), "snapstore")
AGENTS = ("claude-code", "codex", "gemini-cli", "qwen-code")
#: Where each agent's transcripts live below its home (snapstore.conversation reads the homes).
HOMES = {"claude-code": ".claude", "codex": ".codex", "gemini-cli": ".gemini", "qwen-code": ".qwen"}


def workspace(agent: str, where: Path, pad: int) -> tuple[Path, dict[str, str]]:
    """A workspace with the agent's three-turn session, and the environment to run it in."""
    root, home = where / "ws", where / "home"
    root.mkdir(parents=True)
    transcript = transcript_in({agent: str(home / HOMES[agent])}, agent)
    if pad and agent == "claude-code":  # records its loader passes over
        filler = {"type": "queue-operation", "operation": "dequeue", "content": "x" * 200}
        transcript.write_text("".join(json.dumps(filler) + "\n" for _ in range(pad)))
    with Store.init(root) as store:
        if agent in ("claude-code", "codex"):
            session_of(store, agent, transcript)
        else:
            chat_session_of(store, agent, transcript)
    env = hermetic_env(HOME=str(home), SNAPSTORE_SESSION=f"{agent}/sid")
    env.pop("SNAPSTORE_NOW", None)  # the hooks' times are real ones here
    return root, env


def _run(args: list[str], root: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run([SNAPSTORE, *args], cwd=root, env=env, capture_output=True, check=False)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"snapstore {' '.join(args)}: {done.stderr.decode().strip()}")
    return seconds


def one_agent(agent: str, rounds: int, pad: int, where: Path) -> dict[str, Any]:
    root, env = workspace(agent, where / agent, pad)
    transcript = transcript_in({agent: os.path.join(env["HOME"], HOMES[agent])}, agent)
    times: dict[str, list[float]] = {"both": [], "code": []}
    for r in range(rounds):
        for mode in ("both", "code") if r % 2 == 0 else ("code", "both"):
            before = transcript.read_bytes()
            times[mode].append(_run(["rewind", "2", "--yes", "--mode", mode], root, env))
            grew = len(transcript.read_bytes()) > len(before)
            if grew != (mode == "both"):
                raise RuntimeError(f"{agent}: --mode {mode} did not act on the transcript")
            _run(["undo"], root, env)
            if transcript.read_bytes() != before:
                raise RuntimeError(f"{agent}: undo did not put the transcript back")
    both, code = statistics.median(times["both"]), statistics.median(times["code"])
    return {
        "agent": agent,
        "rounds": rounds,
        "transcript_bytes": transcript.stat().st_size,
        "both_s": both,
        "code_s": code,
        "ratio": both / code,
        "raw": times,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.conversation", description=__doc__)
    parser.add_argument("--agents", nargs="+", default=list(AGENTS), choices=AGENTS)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--pad", type=int, default=600, help="filler records (default 600)")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results"))
    args = parser.parse_args(argv)
    results = []
    with tempfile.TemporaryDirectory(prefix="snapstore-conversation-") as tmp:
        for agent in args.agents:
            r = one_agent(agent, args.rounds, args.pad, Path(tmp))
            results.append(r)
            print(
                f"{agent:>12} (transcript {r['transcript_bytes'] / 1024:.0f} KiB): rewind 2 "
                f"--mode both {r['both_s'] * 1000:.1f} ms vs --mode code "
                f"{r['code_s'] * 1000:.1f} ms = {r['ratio']:.2f}x",
                flush=True,
            )
    os.makedirs(args.out, exist_ok=True)
    out = os.path.join(args.out, "conversation.json")
    with open(out, "w", encoding="utf-8") as handle:
        json.dump({"machine": machine(), "results": results}, handle, indent=2)
        handle.write("\n")
    print(f"results in {out}")


if __name__ == "__main__":
    main()
