"""``python -m bench.pull_memory [--mb 200]``: the peak memory of a ``snapstore pull``.

One store captures ``--mb`` MiB of incompressible files in one turn and pushes them to
a folder remote; a fresh store then pulls them with the real command, in a process of
its own, and the kernel's peak resident set size of that process (``wait4``) is
printed beside the bytes pulled. A pull commits the blobs pack by pack, so the peak
stays near a couple of packs above the interpreter, whatever the pull's size; it
used to hold everything until one commit (about 3x the data).

Nothing is asserted: memory depends on the machine. See docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

MIB = 1024 * 1024


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


def build(a: Path, remote: Path, megabytes: int) -> None:
    """One turn writing ``megabytes`` MiB of random files in ``a``, pushed to ``remote``."""
    from snapstore import Store
    from snapstore.remote import open_object_store

    with Store.init(a) as store, open_object_store(remote.as_uri()) as objects:
        store.begin_turn("default", "write the data")
        for n in range(megabytes):
            rel = f"data/{n:04d}.bin"
            store.pre_write([rel], session="default")
            (a / "data").mkdir(exist_ok=True)
            (a / rel).write_bytes(os.urandom(MIB))
            store.post_write([rel], session="default")
        store.end_turn("default")
        store.push(objects)


def measure(megabytes: int, tmp: str) -> dict[str, float]:
    a, b, remote = (Path(tmp) / name for name in ("a", "b", "remote"))
    for folder in (a, b, remote):
        folder.mkdir()
    # in a process of its own: a child forked from a large parent would count its pages
    build_args = ["--build", str(a), str(remote), str(megabytes)]
    subprocess.run([sys.executable, "-m", "bench.pull_memory", *build_args], check=True)
    env = {**os.environ, "HOME": tmp, "NO_COLOR": "1"}
    env.pop("SNAPSTORE_SESSION", None)
    for args in (["init"], ["remote", "add", "origin", remote.as_uri()]):
        subprocess.run(
            [sys.executable, "-m", "snapstore_cli", *args],
            cwd=b,
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    peak = _peak([sys.executable, "-m", "snapstore_cli", "pull"], str(b), env)
    floor = _baseline(env)
    pulled = megabytes * MIB
    return {
        "pulled_mib": pulled / MIB,
        "peak_rss_mib": peak / MIB,
        "startup_rss_mib": floor / MIB,
        "peak_over_pulled": peak / pulled,
    }


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.pull_memory", description=__doc__)
    parser.add_argument("--mb", type=int, default=200, help="MiB to push, then pull")
    parser.add_argument("--build", nargs=3, help=argparse.SUPPRESS)  # A REMOTE MB: the child
    args = parser.parse_args()
    if args.build:
        build(Path(args.build[0]), Path(args.build[1]), int(args.build[2]))
        return
    tmp = tempfile.mkdtemp(prefix="snapstore-pull-memory-")
    try:
        r = measure(args.mb, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(
        f"pull of {r['pulled_mib']:.0f} MiB: peak RSS {r['peak_rss_mib']:.0f} MiB "
        f"({r['peak_over_pulled']:.2f}x the data; the command's start-up alone: "
        f"{r['startup_rss_mib']:.0f} MiB)"
    )


if __name__ == "__main__":
    main()
