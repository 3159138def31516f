"""The hook time a real agent waits for: each hook process's wall time inside a real session.

For every agent CLI that runs here (the npm installs and the scripted model on loopback of
tests/support/agents), one three-turn session (write, edit, shell) runs twice: once with
snapstore's hooks as ``snapstore hook install AGENT --scope project`` writes them, once with
the harness's recorder (a Python script that appends the event to a file: the floor of any
hook written in Python) on the same events. Both go through the same shim, which times the
hook process from just before it starts to just after it exits (``date +%s%N`` on either
side, in POSIX sh), and keeps each payload to say what kind of event it was.

    ./dev sh python -m bench.agent_hooks               # every agent (about 4 minutes)
    ./dev sh python -m bench.agent_hooks codex cline   # some of them

Prints, per agent and kind of event (turn begins, before and after a write, turn ends,
events snapstore ignores), the median and the largest hook time, snapstore's and the
recorder's, and writes bench/results/agent-hooks.json. No figure here is asserted anywhere.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from snapstore.adapters import IGNORE, START, load_payload, module_of, parse

from .report import machine
from .tree import CorrectnessError

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the harness lives with the tests

from tests.support.agents.drivers import DRIVERS, Opencode, recorder_command  # noqa: E402
from tests.support.agents.fake_model import Edit, Shell, Turn, Write  # noqa: E402
from tests.support.agents.install import install  # noqa: E402
from tests.support.agents.session import Session  # noqa: E402

AGENTS = ["claude-code", "gemini-cli", "codex", "qwen-code", "copilot", "opencode", "cline"]
SCRIPT = [
    Turn("Create notes.txt with two lines", (Write("notes.txt", "alpha\nbeta\n"),), "Created."),
    Turn("Change beta to gamma in notes.txt", (Edit("notes.txt", "beta", "gamma"),), "Edited."),
    Turn("Append a line to other.txt", (Shell("printf 'x\\n' >> other.txt"),), "Appended."),
]
SHIM = """#!/bin/sh
# times one hook process: its arguments are the hook command
n=$(mktemp "{log}.XXXXXX")
cat > "$n"
start=$(date +%s%N)
{real} "$@" < "$n"
code=$?
end=$(date +%s%N)
printf '%s %s %s %s %s\\n' "$start" "$end" "$code" "$n" "$*" >> "{log}"
exit $code
"""


def shim(path: Path, real: str, log: Path) -> Path:
    path.write_text(SHIM.format(real=real, log=log))
    path.chmod(0o755)
    return path


def timings(log: Path, agent: str, cwd: str) -> list[tuple[str, float, int]]:
    """(kind, seconds, exit code) of each hook run the shim logged; the kind is what
    snapstore's adapter makes of the payload and the event the command line named."""
    spec = module_of(agent).AGENT
    out = []
    for line in log.read_text().splitlines() if log.exists() else []:
        start, end, code, payload, args = line.split(" ", 4)
        words = args.split()
        if "hook" in words:  # snapstore hook AGENT [EVENT] [--no-create]
            rest = [w for w in words[words.index("hook") + 2 :] if not w.startswith("-")]
        else:  # python recorder.py LOG EVENT [STDOUT]
            rest = words[3:4]
        try:
            action = parse(
                spec, load_payload(Path(payload).read_bytes()), rest[-1] if rest else None, cwd
            )
            kind = "ignored" if action.kind in (IGNORE, START) else action.kind
        except Exception as exc:
            kind = "other"
            print(f"  ({agent}: a payload snapstore could not read: {exc})")
        out.append((kind, (int(end) - int(start)) / 1e9, int(code)))
    return out


def run_session(agent: str, base: Path, hooks: str) -> dict[str, Any]:
    """One three-turn session with ``hooks`` (snapstore or recorder) timed by the shim."""
    bin_dir = base / "bin"
    bin_dir.mkdir(parents=True)
    log = base / "times.log"
    snapstore = os.path.join(os.path.dirname(sys.executable), "snapstore")
    shim(bin_dir / "snapstore", shlex.quote(snapstore), log)  # project hooks run it from PATH
    old_path = os.environ["PATH"]
    os.environ["PATH"] = f"{bin_dir}{os.pathsep}{old_path}"
    try:
        with Session(agent, base, SCRIPT) as s:
            if hooks == "snapstore":
                done = subprocess.run(
                    [snapstore, "hook", "install", agent, "--scope", "project"],
                    cwd=s.workspace,
                    env=s.env(),
                    capture_output=True,
                    text=True,
                    timeout=60,
                )
                if done.returncode:
                    raise CorrectnessError(f"hook install {agent}: {done.stderr}")
                if agent == "opencode":  # else opencode npm-installs its plugin API, offline
                    Opencode._deps_installed(s.workspace / ".opencode")
            else:
                timer = shim(bin_dir / "timed", "", log)
                recorder = recorder_command(base / "recorded.jsonl", s.driver.allow_stdout)
                s.driver.install_hooks(s, lambda event: f"{timer} {recorder(event)}")
            (s.workspace / "other.txt").write_text("original\n")
            started = time.monotonic()
            for turn in SCRIPT:
                run = s.run(turn.prompt)
                if run.code != 0 or run.timed_out:
                    raise CorrectnessError(f"{agent} ({hooks}): {run.brief()}")
            seconds = time.monotonic() - started
            failures = s.workspace / ".snapstore" / "hook.log"
            if hooks == "snapstore" and failures.exists():
                raise CorrectnessError(failures.read_text())
            return {"session_s": seconds, "hooks": timings(log, agent, str(s.workspace))}
    finally:
        os.environ["PATH"] = old_path


def summary(rows: list[tuple[str, float, int]]) -> dict[str, dict[str, float]]:
    kinds: dict[str, list[float]] = {}
    for kind, seconds, _ in rows:
        kinds.setdefault(kind, []).append(seconds)
    return {
        kind: {"n": len(v), "median_ms": statistics.median(v) * 1e3, "max_ms": max(v) * 1e3}
        for kind, v in sorted(kinds.items())
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.agent_hooks",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("agents", nargs="*", choices=[[], *AGENTS], metavar="AGENT")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results"))
    args = parser.parse_args(argv)
    started = time.time()
    results: dict[str, Any] = {}
    for agent in args.agents or AGENTS:
        install(DRIVERS[agent].pin or agent)
        with tempfile.TemporaryDirectory(prefix="bench-agent-hooks-") as tmp:
            ours = run_session(agent, Path(tmp) / "snapstore", "snapstore")
            floor = run_session(agent, Path(tmp) / "recorder", "recorder")
        results[agent] = {
            "snapstore": summary(ours["hooks"]),
            "recorder": summary(floor["hooks"]),
            "session_s": {"snapstore": ours["session_s"], "recorder": floor["session_s"]},
            "failed_hooks": sum(code != 0 for _, _, code in ours["hooks"]),
        }
        print(
            f"\n{agent}: session {ours['session_s']:.1f} s with snapstore, "
            f"{floor['session_s']:.1f} s with the recorder"
        )
        print(
            f"  {'event':<8} {'n':>3} {'snapstore median':>17} {'max':>7} "
            f"{'recorder median':>16} {'ratio':>6}"
        )
        for kind, figures in results[agent]["snapstore"].items():
            peer = results[agent]["recorder"].get(kind, {})
            ratio = figures["median_ms"] / peer["median_ms"] if peer else float("nan")
            print(
                f"  {kind:<8} {figures['n']:>3} {figures['median_ms']:>14.1f} ms "
                f"{figures['max_ms']:>4.0f} ms {peer.get('median_ms', float('nan')):>13.1f} ms"
                f" {ratio:>6.2f}"
            )
    path = Path(args.out) / "agent-hooks.json"
    path.write_text(
        json.dumps(
            {
                "suite": "agent-hooks",
                "when": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(started)),
                "duration_s": time.time() - started,
                "machine": machine(),
                "results": results,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
