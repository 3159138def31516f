"""Three-way merge and line stats on large files, against git on the same files.

Reproduce with::

    python -m bench merge                  # or: python -m bench.merge
    python -m bench merge --quick          # fewer repetitions: a smoke run
    python -m bench merge --reps 9 --seed 2

Workloads (deterministic for a given seed; code-like lines from ``bench.synthetic.Text``,
in functions of 4 to 16 lines):

- **reorder N + user edit**: the agent reorders the functions of an N-line file, then the
  user edits one line in the middle. Rewinding the turn is ``merge3(base=agent's version,
  ours=current, theirs=before)``; the peer is ``git merge-file -p current agent before``.
- **line_stats, rewrite N**: the agent rewrites about half of the lines of an N-line file;
  **line_stats, reorder N**: the agent reorders its functions. The peer is
  ``git diff --no-index --numstat``.

Our figure is the in-process time of the call (the inputs already in memory). git's is a
process on the same three files, so its figure includes starting a process; it is also
given less the floor of a bare ``git --version`` process. Each figure is the median of
``--reps`` runs, ours and git's interleaved so that machine noise falls on both. The target:
the 60,000-line reorder merge in at most 2x the time of ``git merge-file``.

The results also say whether ours and git agree (clean or not, and the bytes when clean;
the same +/- counts), since on large rewrites the two may align lines differently (see
``snapstore/text/merge.py``). JSON goes to ``bench/results/merge.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import subprocess
import sys
import tempfile
from collections.abc import Callable
from typing import Any

from snapstore.text.diff import line_stats
from snapstore.text.merge import merge3

from .measure import Summary, ratio, timed
from .peers import ShadowGit
from .synthetic import Text

HERE = os.path.dirname(os.path.abspath(__file__))
TARGET = 2.0
MERGE_SIZES = (10_000, 60_000)
STATS_SIZES = (10_000, 30_000, 60_000)
GIT_ENV = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "LC_ALL": "C"}


def functions(lines: int, rng: random.Random) -> list[list[bytes]]:
    """A code-like file of about ``lines`` lines, as its functions."""
    text = Text(rng)
    blocks: list[list[bytes]] = []
    total = 0
    while total < lines:
        block = [
            f"def f{len(blocks)}_{text.line()[:30].strip()}():\n".encode(),
            *text.lines(rng.randint(3, 15)),
        ]
        blocks.append(block)
        total += len(block)
    return blocks


def reorder(lines: int, seed: int) -> tuple[bytes, bytes, bytes]:
    """(before, agent's version, current): functions shuffled, then one line edited."""
    rng = random.Random(f"merge-bench:reorder:{lines}:{seed}")
    blocks = functions(lines, rng)
    before = b"".join(line for block in blocks for line in block)
    rng.shuffle(blocks)
    agent = [line for block in blocks for line in block]
    current = list(agent)
    current[len(current) // 2] = b"    user_edit = True  # the user's own change\n"
    return before, b"".join(agent), b"".join(current)


def rewrite(lines: int, seed: int) -> tuple[bytes, bytes]:
    """(before, after): about half of the lines replaced by new ones."""
    rng = random.Random(f"merge-bench:rewrite:{lines}:{seed}")
    old = [line for block in functions(lines, rng) for line in block]
    text = Text(rng)
    new = [text.lines(1)[0] if rng.random() < 0.5 else line for line in old]
    return b"".join(old), b"".join(new)


def git(*args: str, cwd: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", *args], cwd=cwd, env=GIT_ENV, capture_output=True, check=False)


def _cpu() -> float:
    """CPU seconds used so far by this process and by its finished children."""
    me, children = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime


def _compare(
    reps: int, ours: Callable[[], Any], peer: Callable[[], Any]
) -> tuple[dict[str, Summary], dict[str, Summary], Any, Any]:
    """Wall and CPU times of ``ours`` and ``peer``, interleaved (the order flips every rep)."""
    samples: dict[str, dict[str, list[float]]] = {
        "ours": {"wall": [], "cpu": []},
        "git": {"wall": [], "cpu": []},
    }
    results: dict[str, Any] = {}
    for rep in range(reps):
        order = [("ours", ours), ("git", peer)]
        for name, fn in order if rep % 2 == 0 else order[::-1]:
            cpu = _cpu()
            seconds, results[name] = timed(fn)
            samples[name]["cpu"].append(_cpu() - cpu)
            samples[name]["wall"].append(seconds)
    mine, theirs = (
        {kind: Summary.of(values) for kind, values in samples[name].items()}
        for name in ("ours", "git")
    )
    return mine, theirs, results["ours"], results["git"]


def _figures(
    name: str, ours: dict[str, Summary], peer: dict[str, Summary], floor: float, **extra: Any
) -> dict[str, Any]:
    wall, peer_wall = ours["wall"].median, peer["wall"].median
    return {
        "name": name,
        "ours": ours["wall"].to_json(),
        "git": peer["wall"].to_json(),
        "ours_cpu": ours["cpu"].to_json(),
        "git_cpu": peer["cpu"].to_json(),
        "git_minus_floor": peer_wall - floor,
        "ratio": ratio(wall, peer_wall),
        "ratio_minus_floor": ratio(wall, peer_wall - floor),
        "ratio_cpu": ratio(ours["cpu"].median, peer["cpu"].median),
        **extra,
    }


def merge_case(lines: int, seed: int, reps: int, work: str, floor: float) -> dict[str, Any]:
    before, agent, current = reorder(lines, seed)
    names = ("current", "agent", "before")
    for name, data in zip(names, (current, agent, before), strict=True):
        with open(os.path.join(work, name), "wb") as handle:
            handle.write(data)
    mine, peer, result, proc = _compare(
        reps,
        lambda: merge3(agent, current, before),
        lambda: git("merge-file", "-p", *names, cwd=work),
    )
    if proc.returncode >= 128 or proc.returncode < 0:
        raise RuntimeError(f"git merge-file failed: {proc.stderr.decode(errors='replace')}")
    agree = result.clean == (proc.returncode == 0) and (
        not result.clean or result.content == proc.stdout
    )
    return _figures(
        f"merge, reorder {lines:,} + user edit",
        mine,
        peer,
        floor,
        lines=lines,
        conflicts=result.conflicts,
        git_conflicts=proc.returncode,
        agree=agree,
    )


def stats_case(
    kind: str, lines: int, seed: int, reps: int, work: str, floor: float
) -> dict[str, Any]:
    old, new = rewrite(lines, seed) if kind == "rewrite" else reorder(lines, seed)[:2]
    for name, data in (("old", old), ("new", new)):
        with open(os.path.join(work, name), "wb") as handle:
            handle.write(data)
    mine, peer, result, proc = _compare(
        reps,
        lambda: line_stats(old, new),
        lambda: git("diff", "--no-index", "--numstat", "old", "new", cwd=work),
    )
    added, removed = (int(n) for n in proc.stdout.split(b"\t")[:2])
    return _figures(
        f"line_stats, {kind} {lines:,}",
        mine,
        peer,
        floor,
        lines=lines,
        stats=list(result),
        git_stats=[added, removed],
        agree=result == (added, removed),
    )


def measure(seed: int, reps: int) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="snapstore-merge-bench-") as work:
        floor = Summary.of(
            [timed(lambda: git("--version", cwd=work))[0] for _ in range(max(reps, 5))]
        ).median
        cases = [merge_case(n, seed, reps, work, floor) for n in MERGE_SIZES]
        cases += [
            stats_case(kind, n, seed, reps, work, floor)
            for kind in ("rewrite", "reorder")
            for n in STATS_SIZES
        ]
    for case in cases:
        case["git_floor"] = floor
    return cases


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:8.1f} ms"


def print_table(cases: list[dict[str, Any]]) -> None:
    print(
        f"\n{'':36}{'ours':>11}{'git':>11}{'git-floor':>11}{'ratio':>8}{'-floor':>8}"
        f"{'cpu':>8}  agree"
    )
    for case in cases:
        print(
            f"{case['name']:36}{_ms(case['ours']['median'])}{_ms(case['git']['median'])}"
            f"{_ms(case['git_minus_floor'])}{case['ratio']:7.2f}x"
            f"{case['ratio_minus_floor']:7.2f}x{case['ratio_cpu']:7.2f}x"
            f"  {'yes' if case['agree'] else 'no'}"
        )
    print(
        f"(medians of wall time; cpu: the ratio of CPU times, steadier on a busy machine; "
        f"git --version floor: {_ms(cases[0]['git_floor']).strip()}; target: the 60,000-line "
        f"merge at most {TARGET:g}x git merge-file)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench merge",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--quick", action="store_true", help="3 repetitions")
    parser.add_argument("--reps", type=int, help="repetitions per figure (default 7)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", default=os.path.join(HERE, "results", "merge.json"))
    args = parser.parse_args(argv)
    reps = args.reps or (3 if args.quick else 7)
    cases = measure(args.seed, reps)
    target = next(c for c in cases if c["name"].startswith(f"merge, reorder {60_000:,}"))
    result = {
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "git": ShadowGit.version(),
            "load_average": os.getloadavg(),
        },
        "params": {
            "seed": args.seed,
            "reps": reps,
            "merge_sizes": MERGE_SIZES,
            "stats_sizes": STATS_SIZES,
        },
        "target": {"merge_60k_vs_git_merge_file": TARGET},
        "target_met": {"merge_60k_vs_git_merge_file": target["ratio"] <= TARGET},
        "cases": cases,
    }
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as handle:
        json.dump(result, handle, indent=2)
    print_table(cases)
    print(f"\nwrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
