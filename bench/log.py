"""``python -m bench log``: `snapstore log` on a long history with huge rewrites, against git.

`log` must never diff while displaying: the lines added and
removed are counted once and kept. This builds a session of ``--turns`` turns
(default 1,000), each editing a small file, every ``--turns / --rewrites``-th
one also rewriting a ``--lines``-line file (default 30,000: its functions
reordered), and the same history as a git repository (one commit per turn).
Then, as whole processes of snapstore installed as users install it
(bench/installed.py), each repeated and the median taken:

- `snapstore log` the first time (it counts the rewrites and keeps the counts),
- `snapstore log` after that (it reads what was kept),
- `snapstore log --json`,
- the peer: `git log --numstat` over the same 1,000 commits.

    python -m bench log                          # about 2 minutes
    python -m bench log --turns 200 --rewrites 4 --lines 10000   # a quick look

Prints a table and writes bench/results/log.json (machine, parameters, every run).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from snapstore import Store

from . import installed, report
from .installed import clean_env, run

HERE = os.path.dirname(os.path.abspath(__file__))


def _big(rng: random.Random, lines: int, order: list[int]) -> str:
    blocks = [f"def f{n}(x):\n    return x + {n}\n\n" for n in range(lines // 3)]
    return "".join(blocks[i] for i in order)


def build(root: Path, turns: int, rewrites: int, lines: int, seed: int) -> None:
    """The session in a store, and the same history as git commits beside it."""
    rng = random.Random(seed)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    git = ["git", "-C", str(root), "-c", "user.email=b@e", "-c", "user.name=bench"]
    order = list(range(lines // 3))
    (root / "big.py").write_text(_big(rng, lines, order))
    small = {f"f{n}.txt": [f"line {i}\n" for i in range(40)] for n in range(20)}
    for name, text in small.items():
        (root / name).write_text("".join(text))
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "base"], check=True)
    every = max(1, turns // max(rewrites, 1))
    with Store.init(root) as store:
        store.exclude_from_git()
        for n in range(turns):
            store.begin_turn("default", f"turn {n}")
            name = f"f{n % 20}.txt"
            edited = [name] + (["big.py"] if rewrites and n % every == every - 1 else [])
            store.pre_write(edited, "Edit")
            small[name][rng.randrange(40)] = f"edited in turn {n}\n"
            (root / name).write_text("".join(small[name]))
            if "big.py" in edited:
                rng.shuffle(order)
                (root / "big.py").write_text(_big(rng, lines, order))
            store.post_write(edited)
            store.end_turn()
            subprocess.run([*git, "commit", "-qam", f"turn {n}"], check=True)


def timed(cmd: list[str], cwd: Path) -> float:
    return run(cmd, str(cwd), env=clean_env())[0]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench log",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--rewrites", type=int, default=10)
    parser.add_argument("--lines", type=int, default=30_000)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", default=os.path.join(HERE, "results"))
    args = parser.parse_args(argv)
    exe = installed.ensure(report.console.print).snapstore  # as users install it
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="snapstore-bench-log-") as tmp:
        root = Path(tmp) / "ws"
        root.mkdir()
        build(root, args.turns, args.rewrites, args.lines, args.seed)
        built = time.time() - started
        first = timed([exe, "log"], root)
        runs: dict[str, list[float]] = {
            "snapstore log": [],
            "snapstore log --json": [],
            "git log --numstat": [],
        }
        for _ in range(args.reps):  # interleaved, so that drift hits all three alike
            runs["snapstore log"].append(timed([exe, "log"], root))
            runs["snapstore log --json"].append(timed([exe, "--json", "log"], root))
            runs["git log --numstat"].append(timed(["git", "log", "--numstat"], root))
    medians = {name: statistics.median(times) for name, times in runs.items()}
    peer = medians["git log --numstat"]
    rows = [("snapstore log, the first time (counts made, then kept)", first)]
    rows += [(name, value) for name, value in medians.items()]
    report.console.print(
        f"log over {args.turns} turns, {args.rewrites} of them "
        f"{args.lines:,}-line rewrites (built in {built:.0f} s)"
    )
    for label, value in rows:
        report.console.print(f"  {label:<58} {value * 1000:8.0f} ms  {value / peer:6.2f}x git")
    results: dict[str, Any] = {
        "first_log_s": first,
        "medians_s": medians,
        "runs_s": runs,
        "ratio_to_git": {k: v / peer for k, v in medians.items()},
    }
    os.makedirs(args.out, exist_ok=True)
    report.write_json(args.out, "log", vars(args) | {"out": None}, results, [], started)
    return 0
