"""``python -m bench``: run the benchmark suites, print the figures, write JSON and charts.

    python -m bench --quick              # synthetic 1k-file tree, hook, pre_write, history
    python -m bench                      # everything, full size (8-14 minutes on 2 cores)
    python -m bench synthetic --files 10000 --turns 30
    python -m bench real                 # downloads 11 Django releases once, into bench/.cache
    python -m bench --repo ~/src/myproject
    python -m bench processes --quick    # every command as a process, installed (about 1 min)
    python -m bench merge                # merges and line stats of large files against git
    python -m bench log                  # `snapstore log` on 1,000 turns with huge rewrites
    python -m bench big-files --quick    # peak memory and bytes stored for a 100 MB file
    python -m bench big-merge            # rewinds that merge 10-500 MB text files, against git
    python -m bench scale                # 1k to 1M files: init, hooks, daemon, rewinds (30-70 min)
    python -m bench scale-replay --replay GIT_DIR   # the same on a repository's last 52 commits

See docs/benchmarks.md for what each figure means.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable

from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from . import big_files, big_merge, processes, report, scale
from .suites import SUITES, Config, run_suite
from .tree import CorrectnessError

HERE = os.path.dirname(os.path.abspath(__file__))
SUITES["processes"] = processes.suite
SUITES["big-files"] = big_files.suite
SUITES["big-merge"] = big_merge.suite
SUITES["scale"] = scale.suite
SUITES["scale-replay"] = scale.replay_suite
QUICK = dict(
    files=[1_000],
    turns=12,
    depths=[1, 10],
    rewind_reps=1,
    probe_rounds=60,
    hook_reps=12,
    prewrite_reps=200,
    restic=False,
)
# Latency-sensitive suites first: the big trees' clean-up does not overlap them.
DEFAULT_SUITES = ["hook", "prewrite", "history", "processes", "real", "synthetic"]
QUICK_SUITES = ["hook", "prewrite", "history", "synthetic"]


def parse(argv: list[str]) -> tuple[list[str], Config, bool]:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    # [] among the choices: argparse checks an empty nargs="*" default against them
    parser.add_argument(
        "suites",
        nargs="*",
        choices=[[], *SUITES],
        metavar="SUITE",
        help=f"suites to run, from: {', '.join(SUITES)} (default: all but repo; with --repo: repo)",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="small sizes, synthetic only: the smoke run (under 2 minutes)",
    )
    parser.add_argument(
        "--files",
        type=int,
        nargs="+",
        metavar="N",
        help="synthetic tree sizes (default 1000 10000 100000)",
    )
    parser.add_argument("--turns", type=int, help="agent turns per session (default 60)")
    parser.add_argument(
        "--depths",
        type=int,
        nargs="+",
        metavar="N",
        help="rewind depths in turns (default 1 10 50)",
    )
    parser.add_argument(
        "--repo", metavar="PATH", help="benchmark a copy of this tree (the original is only read)"
    )
    parser.add_argument("--seed", type=int, default=1, help="workload seed (default 1)")
    parser.add_argument(
        "--out", help="results folder (default bench/results, bench/results/quick with --quick)"
    )
    parser.add_argument("--package", help="real workload: the project on the package index")
    parser.add_argument(
        "--versions",
        nargs="+",
        metavar="V",
        help="real workload: consecutive releases, oldest first",
    )
    parser.add_argument("--reps", type=int, help="repetitions of each rewind (default 5)")
    parser.add_argument("--hook-reps", type=int, help="hook process runs (default 60)")
    parser.add_argument("--no-restic", action="store_true", help="leave restic out")
    parser.add_argument(
        "--gc",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="run git gc --aggressive for the after-gc size (default: on trees up to 20k files)",
    )
    parser.add_argument("--tmp", help="where the temporary trees go (default: the system's)")
    parser.add_argument(
        "--replay", metavar="GIT_DIR", help="scale-replay: the repository whose history is replayed"
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    args = parser.parse_args(argv)
    cfg = Config(
        out=args.out or os.path.join(HERE, "results", "quick" if args.quick else ""),
        quick=args.quick,
        seed=args.seed,
        repo=args.repo,
        restic=not args.no_restic,
        gc=args.gc,
        tmp=args.tmp,
    )
    if args.quick:
        for key, value in QUICK.items():
            setattr(cfg, key, value)
    for key, value in (
        ("files", args.files),
        ("turns", args.turns),
        ("depths", args.depths),
        ("rewind_reps", args.reps),
        ("hook_reps", args.hook_reps),
        ("package", args.package),
        ("replay", args.replay),
    ):
        if value is not None:
            setattr(cfg, key, value)
    if args.versions:
        cfg.versions = tuple(args.versions)
    suites = args.suites or (
        ["repo"] if args.repo else QUICK_SUITES if args.quick else DEFAULT_SUITES
    )
    if "scale" in suites and args.files is None:
        cfg.files = scale.QUICK_FILES if args.quick else scale.SIZES
    if "repo" in suites and not args.repo:
        parser.error("the repo suite needs --repo PATH")
    return suites, cfg, not args.no_progress


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["merge"]:  # a suite of its own, with its own options: bench/merge.py
        from . import merge

        return merge.main(argv[1:])
    if argv[:1] == ["log"]:  # likewise: bench/log.py
        from . import log

        return log.main(argv[1:])
    suites, cfg, show = parse(argv)
    os.makedirs(cfg.out, exist_ok=True)
    started = time.time()
    figures = []
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        console=report.console,
        disable=not show,
    ) as progress:

        def step(label: str, total: int) -> Callable[[], None]:
            task = progress.add_task(label, total=max(total, 1))
            return lambda: progress.advance(task)

        for name in suites:
            begun = time.time()
            try:
                figures += run_suite(name, cfg, step).figures
                report.console.print(f"{name}: done in {time.time() - begun:.0f} s")
            except CorrectnessError as exc:
                progress.stop()
                report.console.print(f"[bold red]CORRECTNESS FAILURE in suite {name}:[/] {exc}")
                return 1
    report.table(figures)
    report.console.print(
        f"results in {cfg.out} ({report.markdown(cfg.out, figures)}); {time.time() - started:.0f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
