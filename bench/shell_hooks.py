"""The hooks of one shell call, as an agent waits for them, with and without the daemon.

In scan mode (the default) a shell call costs two hook processes: one before it
(``PreToolUse`` of ``Bash``: a scan, which opens the call's window) and one after
(``PostToolUse``: a scan, which closes it and gives the call's changes to the turn).
With the workspace's daemon running, each scan asks its watcher and costs what changed;
without it, each walks the tree. On a generated tree (bench/synthetic.py) of each size:

- with the daemon: the pre and post hooks of one shell call that changes 3 files, against
  two no-op hook processes on the same payloads: snapstore's own hook on an event it
  ignores (the same start-up and imports, no store work: the target's peer), and a
  Python process that reads its payload and exits (the floor of any hook in Python);
- without it: the same hooks, against ``git status`` on the same tree.

    ./dev sh python -m bench.shell_hooks                    # 10,000 and 100,000 files
    ./dev sh python -m bench.shell_hooks --files 2000 --rounds 5

Each figure is the median over ``--rounds`` shell calls of the two hooks' wall time (process
start to exit). Prints the figures and their ratios and writes
bench/results/shell-hooks.json. No figure here is asserted anywhere.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .report import machine
from .synthetic import materialise

SNAPSTORE = os.path.join(os.path.dirname(sys.executable), "snapstore")
NOOP = [sys.executable, "-c", "import sys; sys.stdin.buffer.read()"]
SESSION = "bench-shell-hooks"
#: The targets: the two hooks with the daemon, against two no-op hooks, per tree size.
TARGETS = {10_000: 1.5, 100_000: 2.0}


def event(root: str, name: str, **fields: Any) -> bytes:
    """A Claude Code hook payload as the real CLI sends it."""
    data = {"session_id": SESSION, "cwd": root, "hook_event_name": name, **fields}
    return json.dumps(data).encode()


def bash(root: str, name: str, call: str) -> bytes:
    return event(
        root,
        name,
        tool_name="Bash",
        tool_input={"command": "sed -i && rm && printf", "description": "edit, remove, add"},
        tool_use_id=call,
    )


def timed(command: list[str], payload: bytes, root: str, env: dict[str, str]) -> float:
    """One hook process's wall time, start to exit; it must succeed."""
    start = time.perf_counter()
    done = subprocess.run(command, input=payload, cwd=root, env=env, capture_output=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0 or done.stderr:
        raise RuntimeError(f"{command[-1]} failed: {done.stderr.decode(errors='replace')}")
    return seconds


def shell_command(root: str, n: int) -> None:
    """What the agent's shell command does between the hooks: edit, remove, add a file."""
    edited = os.path.join(root, "shell-edited.txt")
    with open(edited, "a", encoding="utf-8") as handle:
        handle.write(f"line {n}\n")
    if n:
        os.unlink(os.path.join(root, f"shell-new-{n - 1}.txt"))
    with open(os.path.join(root, f"shell-new-{n}.txt"), "w", encoding="utf-8") as handle:
        handle.write(f"new {n}\n")


def calls(root: str, env: dict[str, str], rounds: int, start: int) -> dict[str, list[float]]:
    """``rounds`` shell calls inside one turn: each call's two hooks, snapstore's and the
    no-op's on the same payloads."""
    hook = [SNAPSTORE, "hook", "claude-code"]
    timed(hook, event(root, "UserPromptSubmit", prompt="run the shell"), root, env)
    out: dict[str, list[float]] = {"snapstore": [], "noop": [], "ignored": []}
    ignored = event(root, "Notification", message="waiting")
    for n in range(start, start + rounds):
        call = f"toolu_{n}"
        pre, post = bash(root, "PreToolUse", call), bash(root, "PostToolUse", call)
        out["noop"].append(timed(NOOP, pre, root, env) + timed(NOOP, post, root, env))
        out["ignored"].append(timed(hook, ignored, root, env) + timed(hook, ignored, root, env))
        first = timed(hook, pre, root, env)
        shell_command(root, n)
        out["snapstore"].append(first + timed(hook, post, root, env))
    timed(hook, event(root, "Stop"), root, env)
    return out


def git_status(root: str, env: dict[str, str], rounds: int) -> list[float]:
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        subprocess.run(
            ["git", "status", "--porcelain"], cwd=root, env=env, check=True, capture_output=True
        )
        samples.append(time.perf_counter() - start)
    return samples


def daemon_up(
    root: str,
    env: dict[str, str],
    timeout: float = 600.0,
    watching: Callable[[int], None] | None = None,
) -> int:
    """Start the daemon as a session's start does, and wait for its watcher: its lock
    taken, then its first scan done (the log's ``started ... watching`` line).
    ``watching`` is called with the watcher's pid at each look (every 50 ms) meanwhile."""
    from snapstore_cli.doors.daemon import info

    from snapstore.ops.watchlink import watcher_info

    store = os.path.join(root, ".snapstore")
    timed([SNAPSTORE, "hook", "claude-code"], event(root, "SessionStart"), root, env)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        running, watcher = info(store), watcher_info(store)
        if watching is not None and watcher and watcher.get("pid"):
            with contextlib.suppress(OSError):  # not up yet, or gone
                watching(int(watcher["pid"]))
        if (
            running
            and running.get("port")
            and watcher
            and watcher.get("sync")
            and _watching(store, root)
        ):
            return int(running["pid"])
        time.sleep(0.05)
    raise RuntimeError("the daemon did not start")


def _watching(store: str, root: str) -> bool:
    """Whether the watcher has said that it watches ``root`` (after its first scan)."""
    try:
        with open(os.path.join(store, "serve.log"), encoding="utf-8", errors="replace") as log:
            return any(" started " in line and f"watching {root}" in line for line in log)
    except FileNotFoundError:
        return False


def one_size(files: int, rounds: int, base: Path) -> dict[str, Any]:
    root = str(base / f"tree-{files}")
    os.makedirs(root)
    materialise(root, files, seed=files)
    env = {
        **os.environ,
        "SNAPSTORE_DAEMON": "off",
        "GIT_AUTHOR_NAME": "b",
        "GIT_AUTHOR_EMAIL": "b@b",
        "GIT_COMMITTER_NAME": "b",
        "GIT_COMMITTER_EMAIL": "b@b",
    }
    env.pop("SNAPSTORE_DIR", None)
    for args in (
        ["init", "-q"],
        ["config", "gc.auto", "0"],  # no gc in the background, under the figures
        ["config", "maintenance.auto", "false"],
        ["add", "-A"],
        ["commit", "-q", "-m", "base"],
    ):
        subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)
    Path(root, ".git", "info", "exclude").write_text(".snapstore/\n")
    started = time.perf_counter()
    subprocess.run([SNAPSTORE, "init"], cwd=root, env=env, check=True, capture_output=True)
    baseline = time.perf_counter() - started
    without = calls(root, env, rounds, 0)
    status = git_status(root, env, rounds)
    pid = daemon_up(root, {**env, "SNAPSTORE_DAEMON": "auto"})
    try:
        with_daemon = calls(root, {**env, "SNAPSTORE_DAEMON": "auto"}, rounds, rounds)
    finally:
        subprocess.run([SNAPSTORE, "serve", "--stop"], cwd=root, env=env, capture_output=True)
        wait_gone(pid)
    shutil.rmtree(root, ignore_errors=True)
    median = statistics.median
    return {
        "files": files,
        "rounds": rounds,
        "baseline_seconds": baseline,
        "daemon_hooks_s": median(with_daemon["snapstore"]),
        "noop_hooks_s": median(with_daemon["noop"] + without["noop"]),
        "ignored_hooks_s": median(with_daemon["ignored"] + without["ignored"]),
        "no_daemon_hooks_s": median(without["snapstore"]),
        "git_status_s": median(status),
        "raw": {"daemon": with_daemon, "no_daemon": without, "git_status": status},
    }


def wait_gone(pid: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
                if handle.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return
        except FileNotFoundError:
            return
        time.sleep(0.05)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.shell_hooks", description=__doc__)
    parser.add_argument("--files", type=int, nargs="+", default=sorted(TARGETS))
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results"))
    args = parser.parse_args(argv)
    results = []
    with tempfile.TemporaryDirectory(
        prefix="snapstore-shell-hooks-", ignore_cleanup_errors=True
    ) as tmp:
        for files in args.files:
            print(f"{files:,} files ...", file=sys.stderr, flush=True)
            results.append(one_size(files, args.rounds, Path(tmp)))
            report(results[-1])
            write(args.out, results)  # each size as it is done: a long run keeps what it has


def report(r: dict[str, Any]) -> None:
    """Print one tree size's figures and add their ratios."""
    target = TARGETS.get(r["files"])
    daemon = r["daemon_hooks_s"] / r["ignored_hooks_s"]
    floor = r["daemon_hooks_s"] / r["noop_hooks_s"]
    walk = r["no_daemon_hooks_s"] / r["git_status_s"]
    print(
        f"{r['files']:>7,} files: one shell call's two hooks with the daemon "
        f"{r['daemon_hooks_s'] * 1000:.1f} ms vs snapstore's no-op hooks "
        f"{r['ignored_hooks_s'] * 1000:.1f} ms = {daemon:.2f}x"
        + (f" (target <= {target}x)" if target else "")
        + f"; vs Python no-op hooks {r['noop_hooks_s'] * 1000:.1f} ms = {floor:.2f}x",
        flush=True,
    )
    print(
        f"{'':>14} without the daemon {r['no_daemon_hooks_s'] * 1000:.1f} ms vs `git status` "
        f"{r['git_status_s'] * 1000:.1f} ms = {walk:.2f}x; baseline (init) "
        f"{r['baseline_seconds']:.1f} s",
        flush=True,
    )
    r["ratios"] = {
        "daemon_vs_snapstore_noop": daemon,
        "daemon_vs_python_noop": floor,
        "no_daemon_vs_git_status": walk,
    }
    r["target_daemon_vs_snapstore_noop"] = target


def write(out: str, results: list[dict[str, Any]]) -> None:
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "shell-hooks.json")
    with open(path, "w", encoding="utf-8") as handle:
        json.dump({"machine": machine(), "results": results}, handle, indent=2)
    print(f"wrote {path}", flush=True)


if __name__ == "__main__":
    main()
