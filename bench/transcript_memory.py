"""``python -m bench.transcript_memory [--mb 200]``: the peak memory of a conversation rewind
of a big transcript, for each agent with one (Claude Code, Codex, Gemini CLI, Qwen Code,
Copilot CLI).

A store holds a three-turn session of the agent (tests/support/transcripts.py writes it as
the agent does, in the agent's folder); then ``--mb`` MiB of records the agent's loader
passes over (64 KiB tool outputs, snapshots, token counts) go in after the first turn, so
that everything after it lies behind them. One process then plans and makes the rewind to
before turn 2 through the library (``Store.rewind(..., homes=...)``: the files and the
chat), and the kernel's peak resident set size of that process (``wait4``) is printed
beside the transcript's size and a baseline (the same rewind of the session without the
filler), and written to bench/results/transcript-memory.json. The transcript streams
line by line into the agent's model, which keeps ids and offsets, not records: the peak
stays near the baseline whatever the size (Copilot CLI's fork is made twice from the
file, never held). It used to be 6 to 9 times the transcript.

Nothing is asserted: memory depends on the machine. See docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from snapstore import Store
from tests.support.transcripts import chat_session_of, session_of, transcript_in

from .report import machine

MIB = 1024 * 1024
RESULTS = Path(__file__).resolve().parent / "results"
AGENTS = ("claude-code", "codex", "gemini-cli", "qwen-code", "copilot")
#: A record of each agent that its loader passes over (no message), ``pad`` as its payload.
FILLER = {
    "claude-code": lambda n, pad: {"type": "file-history-snapshot", "messageId": n, "x": pad},
    "codex": lambda n, pad: {
        "ordinal": 100 + n,
        "type": "event_msg",
        "payload": {"type": "token_count", "info": {"x": pad}},
    },
    "gemini-cli": lambda n, pad: {"$set": {"lastUpdated": "2026-12-01T10:00:00Z", "x": pad}},
    "qwen-code": lambda n, pad: {"type": "file_history", "n": n, "x": pad},
    "copilot": lambda n, pad: {
        "type": "tool.execution_complete",
        "id": f"f{n}",
        "data": {"output": pad},
        "timestamp": "2026-12-01T10:00:00.000Z",
    },
}
_REWIND = """
import json, sys
from snapstore import Store
with Store.open(sys.argv[1]) as store:
    chat = store.rewind(2, sys.argv[2], homes=json.loads(sys.argv[3])).conversation
    assert chat is not None and chat["status"] == "rewound", chat
"""


def build(agent: str, where: Path, megabytes: int) -> tuple[Path, str, dict[str, str], Path]:
    """A workspace with the agent's session, its transcript padded with ``megabytes`` MiB."""
    root = where / "ws"
    root.mkdir(parents=True)
    homes = {agent: str(where / "home" / agent)}
    transcript = transcript_in(homes, agent)
    with Store.init(root) as store:
        if agent == "copilot":
            (transcript.parent / "workspace.yaml").write_text("id: sid\ncwd: /w\n")
        if agent in ("gemini-cli", "qwen-code"):
            session = chat_session_of(store, agent, transcript)
        else:
            session = session_of(store, agent, transcript)
    if megabytes:
        lines = transcript.read_bytes().splitlines(keepends=True)
        pad = "z" * (64 * 1024)
        with open(transcript, "wb") as f:
            f.writelines(lines[:2])  # the first turn's first records, then the filler
            for n in range(megabytes * 16):
                f.write((json.dumps(FILLER[agent](n, pad)) + "\n").encode())
            f.writelines(lines[2:])
    return root, session, homes, transcript


def peak(root: Path, session: str, homes: dict[str, str]) -> tuple[int, float]:
    """The rewind's process: its peak RSS (bytes) and its seconds."""
    start = time.perf_counter()
    argv = [sys.executable, "-c", _REWIND, str(root), session, json.dumps(homes)]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"the rewind of {session} failed")
    return usage.ru_maxrss * 1024, time.perf_counter() - start  # kilobytes on Linux


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.transcript_memory", description=__doc__)
    parser.add_argument("--mb", type=int, default=200, help="MiB of filler (default 200)")
    parser.add_argument("--agents", nargs="+", default=list(AGENTS), choices=AGENTS)
    args = parser.parse_args(argv)
    results = []
    for agent in args.agents:
        with tempfile.TemporaryDirectory(prefix="snapstore-transcript-") as tmp:
            base_rss, _ = peak(*build(agent, Path(tmp) / "small", 0)[:3])
            root, session, homes, transcript = build(agent, Path(tmp) / "big", args.mb)
            size = transcript.stat().st_size
            rss, seconds = peak(root, session, homes)
        results.append(
            {
                "agent": agent,
                "transcript_bytes": size,
                "peak_rss_bytes": rss,
                "baseline_rss_bytes": base_rss,
                "seconds": seconds,
            }
        )
        print(
            f"{agent:>12}: transcript {size / MIB:.0f} MiB, rewind peak RSS "
            f"{rss / MIB:.0f} MiB (baseline {base_rss / MIB:.0f} MiB, +{(rss - base_rss) / MIB:.0f}"
            f" MiB) in {seconds:.1f} s",
            flush=True,
        )
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / "transcript-memory.json"
    out.write_text(json.dumps({"machine": machine(), "results": results}, indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
