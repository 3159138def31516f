"""``python -m bench.pull_memory [--mb 200] [--big]``: the peak memory of a ``snapstore
push`` and a ``snapstore pull``.

One store captures ``--mb`` MiB of incompressible files in one turn (1 MiB files, or with
``--big`` one file of that size, stored in chunks) and pushes them to a folder remote
with the real command; a fresh store then pulls them the same way. Each command runs in
a process of its own, and the kernel's peak resident set size of that process
(``wait4``) is printed beside the bytes moved, and written to
bench/results/pull-memory.json. A pull commits the blobs pack by pack, and a push packs
them 8 MiB at a time, so the peaks stay near a couple of packs above the interpreter,
whatever the size; a pull used to hold everything until one commit (about 3x the data).

Nothing is asserted: memory depends on the machine. See docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

MIB = 1024 * 1024
RESULTS = Path(__file__).resolve().parent / "results"


def _baseline(env: dict[str, str]) -> int:
    """Peak RSS (bytes) of the command doing nearly nothing: its start-up's share."""
    return _peak([sys.executable, "-m", "snapstore_cli", "--help"], None, env)


def _peak(argv: list[str], cwd: str | None, env: dict[str, str]) -> int:
    proc = subprocess.Popen(
        argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed with exit {proc.returncode}")
    return usage.ru_maxrss * 1024  # kilobytes on Linux


def build(a: Path, megabytes: int, big: bool) -> None:
    """One turn writing ``megabytes`` MiB of random data in ``a``: 1 MiB files, or one
    big file written a MiB at a time."""
    from snapstore import Store

    rels = ["data/big.bin"] if big else [f"data/{n:04d}.bin" for n in range(megabytes)]
    (a / "data").mkdir()
    with Store.init(a) as store:
        store.begin_turn("default", "write the data")
        for rel in rels:
            store.pre_write([rel], session="default")
            with open(a / rel, "wb") as handle:
                for _ in range(megabytes if big else 1):
                    handle.write(os.urandom(MIB))
            store.post_write([rel], session="default")
        store.end_turn("default")


def measure(megabytes: int, big: bool, tmp: str) -> dict[str, float | bool]:
    a, b, remote = (Path(tmp) / name for name in ("a", "b", "remote"))
    for folder in (a, b, remote):
        folder.mkdir()
    # in a process of its own: a child forked from a large parent would count its pages
    build_args = ["--build", str(a), str(megabytes), "big" if big else "files"]
    subprocess.run([sys.executable, "-m", "bench.pull_memory", *build_args], check=True)
    env = {**os.environ, "HOME": tmp, "NO_COLOR": "1"}
    env.pop("SNAPSTORE_SESSION", None)
    for where, args in [
        (a, ["remote", "add", "origin", remote.as_uri()]),
        (b, ["init"]),
        (b, ["remote", "add", "origin", remote.as_uri()]),
    ]:
        subprocess.run(
            [sys.executable, "-m", "snapstore_cli", *args],
            cwd=where,
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    pushed = _peak([sys.executable, "-m", "snapstore_cli", "push"], str(a), env)
    peak = _peak([sys.executable, "-m", "snapstore_cli", "pull"], str(b), env)
    floor = _baseline(env)
    pulled = megabytes * MIB
    return {
        "big_file": big,
        "pulled_mib": pulled / MIB,
        "push_peak_rss_mib": pushed / MIB,
        "peak_rss_mib": peak / MIB,
        "startup_rss_mib": floor / MIB,
        "peak_over_pulled": peak / pulled,
    }


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.pull_memory", description=__doc__)
    parser.add_argument("--mb", type=int, default=200, help="MiB to push, then pull")
    parser.add_argument("--big", action="store_true", help="one big file, not 1 MiB files")
    parser.add_argument("--out", default=str(RESULTS), help="results folder")
    parser.add_argument("--build", nargs=3, help=argparse.SUPPRESS)  # A MB big|files: the child
    args = parser.parse_args()
    if args.build:
        build(Path(args.build[0]), int(args.build[1]), args.build[2] == "big")
        return
    tmp = tempfile.mkdtemp(prefix="snapstore-pull-memory-")
    try:
        r = measure(args.mb, args.big, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    what = "one big file" if args.big else "1 MiB files"
    print(
        f"{r['pulled_mib']:.0f} MiB of {what}: push peak RSS {r['push_peak_rss_mib']:.0f} MiB, "
        f"pull peak RSS {r['peak_rss_mib']:.0f} MiB ({r['peak_over_pulled']:.2f}x the data; "
        f"the command's start-up alone: {r['startup_rss_mib']:.0f} MiB)"
    )
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "pull-memory.json"), "w") as handle:
        json.dump(r, handle, indent=2)


if __name__ == "__main__":
    main()
