"""Scan and watch mode against shadow git, on the same tree in the same run.

Reproduce with::

    python -m bench.scan                   # 100,000-file generated tree + the CPython stdlib
    python -m bench.scan --quick           # 10,000 files, 3 rounds: a smoke run
    python -m bench.scan --repo ~/src/app  # a copy of your checkout instead of the stdlib

For each tree (the generated one is deterministic: ``bench.synthetic``, seed 1;
the real one is the running interpreter's standard library, or ``--repo``,
copied to a temporary folder) it measures:

1. the first scan (the baseline: every file read and stored), beside the
   shadow repository's first ``git add -A && git commit``;
2. per round, with 10 files changed by a "shell command" (an appended line):
   ``git status`` in the shadow repository, the warm scan without a daemon,
   the warm scan with ``snapstore watch`` running (it is asked, so its cost
   includes the round trip; its debounce is long, so the work happens on
   request and is timed), and the per-turn cost: ``begin_turn(scan=True)``,
   the scan that opens the shell call's window, the scan that closes it (the
   "scan" figure), ``end_turn``; then, as "typical", the same with the
   default debounce and one second between the shell command and the end of
   the call. (A watcher records nothing on its own while a window is open, so
   since windows exist "typical" no longer finds the changes recorded early.)
3. the peer's per-turn cost: ``git add -A && git commit`` in a shadow
   repository (GIT_DIR elsewhere, as Cline and Roo Code do).

Every figure is a median over the rounds; ratios are between medians of the
same run. Targets: warm scan without the daemon <= 2x ``git status``, with the
daemon <= 0.2x, and a per-turn cost at least 20x cheaper than the checkpoint.
Results go to bench/results/scan.json with the machine, versions and parameters.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
from importlib import metadata
from typing import Any

from snapstore import Store
from snapstore.ops.watchlink import watcher_info

from .measure import Summary, ratio, timed
from .peers import ShadowGit
from .synthetic import materialise

HERE = os.path.dirname(os.path.abspath(__file__))
CHANGED = 10
SESSION = "bench"
TARGETS = {
    "warm_scan_vs_git_status": 2.0,
    "daemon_scan_vs_git_status": 0.2,
    "checkpoint_vs_turn": 20.0,
}


def _stdlib_copy(dest: str) -> str:
    """A real source tree: this interpreter's standard library, without caches and packages."""
    source = sysconfig.get_paths()["stdlib"]
    shutil.copytree(
        source,
        dest,
        symlinks=True,
        ignore=shutil.ignore_patterns("site-packages", "__pycache__", "*.pyc"),
    )
    return source


def _text_files(root: str) -> list[str]:
    """Files a shell command may append to: regular, text-like, outside .git."""
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in (".git", ".snapstore"))
        for name in sorted(files):
            path = os.path.join(folder, name)
            if not os.path.islink(path) and name.endswith((".py", ".md", ".txt", ".json", ".js")):
                found.append(os.path.relpath(path, root))
    return found


class Daemon:
    """``snapstore watch`` in its own process, as a user would run it."""

    def __init__(self, root: str, debounce: float):
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "snapstore_cli",
                "--root",
                root,
                "watch",
                "--debounce",
                str(debounce),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def wait_ready(self, store: Store) -> float:
        """Seconds until it answers (its start-up scan included)."""
        start = time.perf_counter()
        while watcher_info(store.store_dir) is None:
            if self.proc.poll() is not None:
                raise RuntimeError("snapstore watch exited early")
            time.sleep(0.05)
        while store.scan(SESSION).source != "watch":
            time.sleep(0.05)
        return time.perf_counter() - start

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=120)


def _round(
    store: Store,
    git: ShadowGit,
    root: str,
    files: list[str],
    rng: random.Random,
    label: str,
    use_watcher: bool,
    settle: float = 0.0,
) -> dict[str, float]:
    """One agent turn in which a shell command changes ``CHANGED`` files.

    ``settle``: seconds between the shell command and the end of the turn (the
    agent writing its answer), in which a watcher records what it saw.
    """
    begin, turn = timed(lambda: store.begin_turn(SESSION, label, scan=True))
    opened, _ = timed(lambda: store.shell_begin(SESSION, label))  # the shell call's window
    for rel in rng.sample(files, CHANGED):
        with open(os.path.join(root, rel), "a", encoding="utf-8") as handle:
            handle.write(f"# {label}\n")
    time.sleep(settle)
    status, _ = timed(lambda: git.git("status", "--porcelain"))
    scan, _ = timed(lambda: store.shell_end(SESSION, label))  # records what the call changed
    end, _ = timed(lambda: store.end_turn(SESSION))
    recorded = len(store.changes(turn.id))
    if recorded != CHANGED:
        raise RuntimeError(f"{label}: the turn recorded {recorded} changes, not {CHANGED}")
    checkpoint, _ = timed(lambda: git.checkpoint(label))
    return {
        "git_status": status,
        "scan": scan,
        "turn": begin + opened + scan + end,
        "checkpoint": checkpoint,
    }


def measure_tree(name: str, root: str, git_dir: str, rounds: int, seed: int) -> dict[str, Any]:
    """All figures for one tree; ``root`` holds the tree, ``git_dir`` the shadow repo."""
    git = ShadowGit(root, git_dir, exclude=(".snapstore",))
    store = Store.init(root)
    figures: dict[str, Any] = {"tree": name}
    try:
        first, baseline = timed(lambda: store.scan(use_watcher=False))
        figures["files"] = baseline.files
        figures["bytes"] = sum(os.lstat(os.path.join(root, p)).st_size for p in _walk_files(root))
        figures["first_scan"] = first
        figures["first_checkpoint"], _ = timed(lambda: git.checkpoint("baseline"))
        figures["store_bytes_after_baseline"] = _disk(store.store_dir)
        time.sleep(2.1)  # files written just now are "racily clean" for both tools: let them age
        store.scan(use_watcher=False)
        git.git("status", "--porcelain")
        files = _text_files(root)
        rng = random.Random(f"scan-bench:{name}:{seed}")
        plain = [_round(store, git, root, files, rng, f"plain {i}", False) for i in range(rounds)]
        daemon = Daemon(root, debounce=60)  # nothing is recorded before it is asked
        try:
            figures["daemon_ready"] = daemon.wait_ready(store)
            watched = [
                _round(store, git, root, files, rng, f"watched {i}", True) for i in range(rounds)
            ]
        finally:
            daemon.stop()
        daemon = Daemon(root, debounce=0.2)  # the default: recorded as the changes happen
        try:
            daemon.wait_ready(store)
            typical = [
                _round(store, git, root, files, rng, f"typical {i}", True, settle=1.0)
                for i in range(rounds)
            ]
        finally:
            daemon.stop()
    finally:
        store.close()
    figures.update(_summaries(plain, watched, typical))
    return figures


def _walk_files(root: str) -> list[str]:
    out = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d not in (".git", ".snapstore")]
        out += [os.path.relpath(os.path.join(folder, n), root) for n in names]
    return out


def _disk(path: str) -> int:
    return sum(
        os.lstat(os.path.join(folder, n)).st_size
        for folder, _, names in os.walk(path)
        for n in names
    )


def _summaries(
    plain: list[dict[str, float]], watched: list[dict[str, float]], typical: list[dict[str, float]]
) -> dict[str, Any]:
    def median(rows: list[dict[str, float]], key: str) -> Summary:
        return Summary.of([row[key] for row in rows])

    status = Summary.of([row["git_status"] for row in plain + watched + typical])
    checkpoint = Summary.of([row["checkpoint"] for row in plain + watched + typical])
    out = {
        "git_status": status.to_json(),
        "checkpoint": checkpoint.to_json(),
        "warm_scan": median(plain, "scan").to_json(),
        "daemon_scan": median(watched, "scan").to_json(),
        "turn": median(plain, "turn").to_json(),
        "daemon_turn": median(watched, "turn").to_json(),
        "typical_daemon_scan": median(typical, "scan").to_json(),
        "typical_daemon_turn": median(typical, "turn").to_json(),
    }
    out["ratios"] = {
        "warm_scan_vs_git_status": ratio(out["warm_scan"]["median"], status.median),
        "daemon_scan_vs_git_status": ratio(out["daemon_scan"]["median"], status.median),
        "checkpoint_vs_turn": ratio(checkpoint.median, out["turn"]["median"]),
        "checkpoint_vs_daemon_turn": ratio(checkpoint.median, out["daemon_turn"]["median"]),
        "typical_daemon_scan_vs_git_status": ratio(
            out["typical_daemon_scan"]["median"], status.median
        ),
        "checkpoint_vs_typical_daemon_turn": ratio(
            checkpoint.median, out["typical_daemon_turn"]["median"]
        ),
    }
    r = out["ratios"]
    out["targets_met"] = {
        "warm_scan_vs_git_status": r["warm_scan_vs_git_status"] <= 2.0,
        "daemon_scan_vs_git_status": r["daemon_scan_vs_git_status"] <= 0.2,
        "checkpoint_vs_turn": min(r["checkpoint_vs_turn"], r["checkpoint_vs_daemon_turn"]) >= 20.0,
    }
    return out


def _machine() -> dict[str, Any]:
    versions = {
        name: metadata.version(name)
        for name in ("snapstore", "watchdog", "pathspec", "lmdb", "zstandard", "blake3")
    }
    return {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "git": ShadowGit.version(),
        "versions": versions,
        "load_average": os.getloadavg(),
    }


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:9.1f} ms" if seconds < 10 else f"{seconds:9.2f} s "


def print_table(result: dict[str, Any]) -> None:
    for tree in result["trees"]:
        r = tree["ratios"]
        print(f"\n{tree['tree']}: {tree['files']} files, {tree['bytes'] / 1e6:.0f} MB")
        rows = [
            ("first scan (baseline)", tree["first_scan"]),
            ("  peer: first git add -A && commit", tree["first_checkpoint"]),
            ("git status", tree["git_status"]["median"]),
            (f"warm scan, {CHANGED} changed, no daemon", tree["warm_scan"]["median"]),
            (f"warm scan, {CHANGED} changed, daemon", tree["daemon_scan"]["median"]),
            ("per-turn cost, no daemon", tree["turn"]["median"]),
            ("per-turn cost, daemon", tree["daemon_turn"]["median"]),
            ("  typical: daemon already recorded, scan", tree["typical_daemon_scan"]["median"]),
            ("  typical: daemon already recorded, turn", tree["typical_daemon_turn"]["median"]),
            ("peer: shadow-git checkpoint", tree["checkpoint"]["median"]),
        ]
        for label, seconds in rows:
            print(f"  {label:<38}{_ms(seconds)}")
        print(f"  warm scan / git status      {r['warm_scan_vs_git_status']:6.2f}x  (target <= 2)")
        print(
            f"  daemon scan / git status    {r['daemon_scan_vs_git_status']:6.2f}x  (target <= 0.2)"
        )
        print(f"  checkpoint / turn           {r['checkpoint_vs_turn']:6.1f}x  (target >= 20)")
        print(
            f"  checkpoint / daemon turn    {r['checkpoint_vs_daemon_turn']:6.1f}x  (target >= 20)"
        )
        print(
            f"  typical: scan / git status  {r['typical_daemon_scan_vs_git_status']:6.2f}x, "
            f"checkpoint / turn {r['checkpoint_vs_typical_daemon_turn']:.1f}x"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.scan",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--files", type=int, help="generated tree size (default 100000)")
    parser.add_argument("--quick", action="store_true", help="10,000 files, 3 rounds")
    parser.add_argument("--rounds", type=int, help="turns measured per mode (default 7)")
    parser.add_argument("--repo", help="the real tree: a copy of this folder (default: stdlib)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--tmp", help="where the temporary trees go")
    parser.add_argument("--out", default=os.path.join(HERE, "results", "scan.json"))
    args = parser.parse_args(argv)
    files = args.files or (10_000 if args.quick else 100_000)
    rounds = args.rounds or (3 if args.quick else 7)
    result: dict[str, Any] = {
        "machine": _machine(),
        "trees": [],
        "params": {
            "files": files,
            "rounds": rounds,
            "changed": CHANGED,
            "seed": args.seed,
            "repo": args.repo,
        },
        "targets": TARGETS,
    }
    work = tempfile.mkdtemp(prefix="snapstore-scan-bench-", dir=args.tmp)
    try:
        synthetic = os.path.join(work, "synthetic")
        print(f"generating {files} files ...", file=sys.stderr)
        materialise(synthetic, files, args.seed)
        result["trees"].append(
            measure_tree(
                f"generated ({files} files)",
                synthetic,
                os.path.join(work, "synthetic.git"),
                rounds,
                args.seed,
            )
        )
        shutil.rmtree(synthetic)
        real = os.path.join(work, "real")
        if args.repo:
            shutil.copytree(args.repo, real, symlinks=True)
            source = os.path.abspath(args.repo)
        else:
            source = _stdlib_copy(real)
        print(f"real tree: a copy of {source} ...", file=sys.stderr)
        result["params"]["real_source"] = source
        result["trees"].append(
            measure_tree(
                f"real ({os.path.basename(source)})",
                real,
                os.path.join(work, "real.git"),
                rounds,
                args.seed,
            )
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    result["machine"]["load_average_after"] = os.getloadavg()
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as handle:
        json.dump(result, handle, indent=2)
    print_table(result)
    print(f"\nwrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
