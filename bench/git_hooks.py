"""What recording the repository costs the hooks, and what a rewind of a git turn costs.

The hooks read the repository's HEAD, refs, index and stash list straight from ``.git``
at a turn's edges and around each shell call (snapstore.ops.gitrecord), so the hook
path pays for it. On a repository with 10,000 refs (tags and branches, packed as git
gc leaves them, and 200 loose branches beside them), in scan mode:

- **the hooks of a turn in which git did nothing**: a turn's begin and end, one shell
  call's two hooks and a file tool's pre-write hook, as processes, in the repository and
  in the same workspace without its ``.git`` (the path the hooks took before git was
  recorded: no repository, nothing of git's loaded), interleaved, in wall time and in
  callgrind instructions (noise-free on a shared machine); and the bare-import floor
  (``python -c "import lmdb, blake3, zstandard"``);
- **the git record alone, in process**, with nothing moved (a read of the store's stamp
  and a dozen ``lstat``), and after a commit (every ref read again);
- **a rewind of a turn that committed on a new branch**, as a process (``snapstore rewind
  1 --yes``), against what a person types for the same: ``git checkout main`` plus ``git
  reset --hard`` to where main was (and ``git branch -D`` of the agent's branch), each a
  process; then undone, so every round starts from the same state.

    ./dev sh python -m bench.git_hooks [--refs 10000] [--rounds 15]

Prints the figures and writes bench/results/git.json. No figure here is asserted anywhere.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .report import machine

SNAPSTORE = os.path.join(os.path.dirname(sys.executable), "snapstore")
FLOOR = [sys.executable, "-c", "import lmdb, blake3, zstandard"]
SESSION = "bench-git"
LOOSE = 200


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SNAPSTORE_", "GIT_"))}
    return {
        **env,
        "SNAPSTORE_DAEMON": "off",
        "GIT_AUTHOR_NAME": "b",
        "GIT_AUTHOR_EMAIL": "b@b",
        "GIT_COMMITTER_NAME": "b",
        "GIT_COMMITTER_EMAIL": "b@b",
    }


def _run(cmd: list[str], root: str, payload: bytes = b"", check_stderr: bool = True) -> float:
    start = time.perf_counter()
    done = subprocess.run(cmd, input=payload, cwd=root, env=_env(), capture_output=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0 or (check_stderr and done.stderr.strip()):
        raise RuntimeError(f"{' '.join(cmd)}: {done.stderr.decode(errors='replace')}")
    return seconds


def _git(root: str, *args: str, data: bytes | None = None) -> str:
    done = subprocess.run(
        ["git", *args], cwd=root, env=_env(), input=data, capture_output=True, check=True
    )
    return done.stdout.decode().strip()


def _event(root: str, name: str, **fields: Any) -> bytes:
    payload = {"session_id": SESSION, "cwd": root, "hook_event_name": name, **fields}
    return json.dumps(payload).encode()


def _bash(root: str, name: str, call: str) -> bytes:
    return _event(root, name, tool_name="Bash", tool_input={"command": "true"}, tool_use_id=call)


def repository(root: str, refs: int) -> None:
    """A small work tree whose repository holds ``refs`` refs: packed tags and branches, and
    :data:`LOOSE` loose branches over them."""
    os.makedirs(root)
    for n in range(20):
        Path(root, f"f{n}.txt").write_text(f"file {n}\n")
    for args in (["init", "-q", "-b", "main"], ["config", "gc.auto", "0"], ["add", "-A"]):
        _git(root, *args)
    _git(root, "commit", "-qm", "base")
    head = _git(root, "rev-parse", "HEAD")
    lines = [f"create refs/tags/t{n:05d} {head}" for n in range(refs // 2)]
    lines += [f"create refs/heads/b{n:05d} {head}" for n in range(refs - refs // 2 - LOOSE)]
    _git(root, "update-ref", "--stdin", data=("\n".join(lines) + "\n").encode())
    _git(root, "pack-refs", "--all")
    loose = [f"create refs/heads/loose/l{n:03d} {head}" for n in range(LOOSE)]
    _git(root, "update-ref", "--stdin", data=("\n".join(loose) + "\n").encode())


def idle_hooks(root: str, rounds: int) -> dict[str, list[float]]:
    """A turn's begin and end, and a shell call's two hooks, in which git does nothing."""
    hook = [SNAPSTORE, "hook", "claude-code"]
    out: dict[str, list[float]] = {"edges": [], "shell": []}
    for n in range(rounds):
        begin = _run(hook, root, _event(root, "UserPromptSubmit", prompt=f"turn {n}"))
        call = f"toolu_{n}"
        shell = _run(hook, root, _bash(root, "PreToolUse", call))
        shell += _run(hook, root, _bash(root, "PostToolUse", call))
        end = _run(hook, root, _event(root, "Stop"))
        out["edges"].append(begin + end)
        out["shell"].append(shell)
    return out


def instructions(root: str, bare: str, runs: int = 3) -> dict[str, Any] | None:
    """Callgrind instruction counts (medians of ``runs``) of each hook of an idle turn, in the
    repository and without it, and of the floor: noise-free, where wall times on a shared
    machine are not. None without valgrind."""
    from .startup import instructions_in

    valgrind = shutil.which("valgrind")
    if valgrind is None:
        return None
    wrap = [valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null"]
    env = {**_env(), "PYTHONHASHSEED": "0"}
    counts: dict[str, list[int]] = {}

    def count(label: str, cmd: list[str], where: str, payload: bytes = b"") -> None:
        done = subprocess.run([*wrap, *cmd], input=payload, cwd=where, env=env, capture_output=True)
        counts.setdefault(label, []).append(instructions_in(done.stderr))

    hook = [SNAPSTORE, "hook", "claude-code"]
    for n in range(runs):
        for name, where in (("git", root), ("no_git", bare)):
            count(f"begin_{name}", hook, where, _event(where, "UserPromptSubmit", prompt=f"i{n}"))
            count(f"shell_pre_{name}", hook, where, _bash(where, "PreToolUse", f"i{n}"))
            count(f"shell_post_{name}", hook, where, _bash(where, "PostToolUse", f"i{n}"))
            write = {"file_path": os.path.join(where, f"w{n}.txt"), "content": "x"}
            tool = {"tool_name": "Write", "tool_input": write, "tool_use_id": f"w{n}"}
            count(f"file_pre_{name}", hook, where, _event(where, "PreToolUse", **tool))
            count(f"end_{name}", hook, where, _event(where, "Stop"))
        count("floor", FLOOR, root)
    found: dict[str, Any] = {k: statistics.median(v) for k, v in counts.items()}
    found["ratios"] = {f"{k}_vs_floor": found[k] / found["floor"] for k in counts if k != "floor"}
    return found


def rewind_instructions(root: str) -> dict[str, int] | None:
    """Callgrind instructions of a rewind of a turn that committed on a new branch, every
    process it starts included (``--trace-children``), with and without its git half, and
    of ``git checkout`` plus ``git reset --hard`` to the same state. None without valgrind."""
    import re

    valgrind = shutil.which("valgrind")
    if valgrind is None:
        return None
    env = {**_env(), "PYTHONHASHSEED": "0"}

    def count(*cmd: str) -> int:
        wrap = [
            valgrind,
            "--tool=callgrind",
            "--trace-children=yes",
            "--callgrind-out-file=/dev/null",
        ]
        done = subprocess.run([*wrap, *cmd], cwd=root, env=env, capture_output=True)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)}: {done.stderr[-500:]!r}")
        return sum(int(n) for n in re.findall(rb"Collected\s*:\s*(\d+)", done.stderr))

    hook = [SNAPSTORE, "hook", "claude-code"]
    branch, commit = _git(root, "symbolic-ref", "--short", "HEAD"), _git(root, "rev-parse", "HEAD")
    _run(hook, root, _event(root, "UserPromptSubmit", prompt="counted"))
    _run(hook, root, _bash(root, "PreToolUse", "counted"))
    _git(root, "checkout", "-q", "-b", "counted")
    Path(root, "f0.txt").write_text("counted\n")
    _git(root, "commit", "-qam", "counted")
    _run(hook, root, _bash(root, "PostToolUse", "counted"))
    _run(hook, root, _event(root, "Stop"))
    session = ("--session", f"claude-code/{SESSION}")
    found = {"rewind": count(SNAPSTORE, "rewind", "1", "--yes", *session)}
    found["undo"] = count(SNAPSTORE, "undo")
    found["rewind_no_git"] = count(SNAPSTORE, "rewind", "1", "--yes", "--no-git", *session)
    _run([SNAPSTORE, "undo", "--no-git"], root, check_stderr=False)
    found["git_checkout"] = count("git", "checkout", "-q", branch)
    found["git_reset_hard"] = count("git", "reset", "-q", "--hard", commit)
    found["floor"] = count(*FLOOR)
    return found


def in_process(root: str, rounds: int) -> dict[str, list[float]]:
    """The git record alone, with every import warm: nothing moved, and after a commit."""
    from snapstore import Store
    from snapstore.ops.gitrecord import record

    out: dict[str, list[float]] = {"unchanged": [], "after_commit": []}
    with Store.open(root) as store:
        record(store.repo, None, SESSION, "begin", store.max_file_size)
        time.sleep(2.1)  # past the racy window: the fingerprints settle
        record(store.repo, None, SESSION, "begin", store.max_file_size)
        for _ in range(rounds):
            start = time.perf_counter()
            record(store.repo, None, SESSION, "begin", store.max_file_size)
            out["unchanged"].append(time.perf_counter() - start)
        for n in range(rounds):
            _git(root, "commit", "-q", "--allow-empty", "-m", f"c{n}")
            start = time.perf_counter()
            record(store.repo, None, SESSION, "begin", store.max_file_size)
            out["after_commit"].append(time.perf_counter() - start)
    return out


def rewinds(root: str, rounds: int) -> dict[str, list[float]]:
    """A rewind of a turn that checked out a new branch and committed on it, against the
    git commands that undo the same by hand; each round undone first (by snapstore, or by
    putting the agent's branch back)."""
    hook = [SNAPSTORE, "hook", "claude-code"]
    out: dict[str, list[float]] = {"snapstore": [], "git": [], "undo": []}
    for n in range(rounds):
        branch, commit = (
            _git(root, "symbolic-ref", "--short", "HEAD"),
            _git(root, "rev-parse", "HEAD"),
        )
        _run(hook, root, _event(root, "UserPromptSubmit", prompt=f"commit {n}"))
        _run(hook, root, _bash(root, "PreToolUse", f"c{n}"))
        _git(root, "checkout", "-q", "-b", f"agent{n}")
        Path(root, "f0.txt").write_text(f"agent {n}\n")
        _git(root, "commit", "-qam", f"agent {n}")
        _run(hook, root, _bash(root, "PostToolUse", f"c{n}"))
        _run(hook, root, _event(root, "Stop"))
        agent = _git(root, "rev-parse", "HEAD")
        session = ["--session", f"claude-code/{SESSION}"]
        out["snapstore"].append(_run([SNAPSTORE, "rewind", "1", "--yes", *session], root))
        out["undo"].append(_run([SNAPSTORE, "undo"], root, check_stderr=False))
        # the same by hand: back to the branch, and the branch where it was
        start = time.perf_counter()
        _git(root, "checkout", "-q", branch)
        _git(root, "reset", "-q", "--hard", commit)
        out["git"].append(time.perf_counter() - start)
        _git(root, "checkout", "-q", f"agent{n}")  # as the agent left it, for the next round
        assert _git(root, "rev-parse", "HEAD") == agent
    return out


def run(refs: int, rounds: int, base: Path) -> dict[str, Any]:
    from .hook import compile_bytecode

    compile_bytecode()  # as an installed wheel has them: no hook compiles a module
    root = str(base / "repo")
    repository(root, refs)
    _run([SNAPSTORE, "init"], root, check_stderr=False)
    bare = str(base / "bare")  # the same workspace, no repository: the path before git
    shutil.copytree(root, bare, ignore=shutil.ignore_patterns(".git"))
    shutil.rmtree(os.path.join(bare, ".snapstore"))
    Path(bare, ".gitignore").write_text("/.snapstore/\n")  # the same rules as info/exclude
    _run([SNAPSTORE, "init"], bare, check_stderr=False)
    time.sleep(2.1)  # past the racy window of the repository's files
    for where in (root, bare):  # the baseline record, and warm caches
        idle_hooks(where, 2)
    git_idle: dict[str, list[float]] = {"edges": [], "shell": []}
    no_git: dict[str, list[float]] = {"edges": [], "shell": []}
    floor: list[float] = []
    for n in range(rounds):
        pair = [(git_idle, root), (no_git, bare)]
        for into, where in pair if n % 2 == 0 else reversed(pair):
            for key, values in idle_hooks(where, 1).items():
                into[key] += values
        floor.append(_run(FLOOR, root))
    median = statistics.median
    found = {
        "refs": refs,
        "loose_refs": LOOSE,
        "rounds": rounds,
        "edges_git_s": median(git_idle["edges"]),
        "edges_no_git_s": median(no_git["edges"]),
        "shell_git_s": median(git_idle["shell"]),
        "shell_no_git_s": median(no_git["shell"]),
        "floor_s": median(floor),
    }
    found["instructions"] = instructions(root, bare)
    process = in_process(root, rounds)
    found["record_unchanged_s"] = median(process["unchanged"])
    found["record_after_commit_s"] = median(process["after_commit"])
    rewound = rewinds(root, max(5, rounds // 3))
    found["rewind_instructions"] = rewind_instructions(root)
    found["rewind_s"] = median(rewound["snapstore"])
    found["undo_s"] = median(rewound["undo"])
    found["git_by_hand_s"] = median(rewound["git"])
    found["raw"] = {
        "idle_git": git_idle,
        "idle_no_git": no_git,
        "floor": floor,
        **{f"record_{k}": v for k, v in process.items()},
        **{f"rewind_{k}": v for k, v in rewound.items()},
    }
    return found


def report(r: dict[str, Any]) -> None:
    ms = 1000
    per_hook = (r["edges_git_s"] - r["edges_no_git_s"]) / 2
    print(
        f"{r['refs']:,} refs: a turn's begin and end {r['edges_git_s'] * ms:.1f} ms, "
        f"{r['edges_no_git_s'] * ms:.1f} ms with no repository ({per_hook * ms:+.2f} ms a hook); "
        f"a shell call's two hooks {r['shell_git_s'] * ms:.1f} ms vs "
        f"{r['shell_no_git_s'] * ms:.1f} ms",
        flush=True,
    )
    print(
        f"{'':>12}one hook {r['edges_git_s'] / 2 * ms:.1f} ms vs the bare-import floor "
        f"{r['floor_s'] * ms:.1f} ms = {r['edges_git_s'] / 2 / r['floor_s']:.2f}x (target 1.5x)",
        flush=True,
    )
    print(
        f"{'':>12}the record in process: {r['record_unchanged_s'] * 1e6:.0f} us when nothing "
        f"moved, {r['record_after_commit_s'] * ms:.1f} ms after a commit",
        flush=True,
    )
    print(
        f"{'':>12}rewind of a turn that committed on a new branch {r['rewind_s'] * ms:.1f} ms "
        f"(undo {r['undo_s'] * ms:.1f} ms) vs git checkout + reset --hard "
        f"{r['git_by_hand_s'] * ms:.1f} ms = {r['rewind_s'] / r['git_by_hand_s']:.2f}x",
        flush=True,
    )
    counted = r.get("instructions")
    if counted:
        for kind in ("begin", "shell_pre", "shell_post", "file_pre", "end"):
            git, bare = counted[f"{kind}_git"], counted[f"{kind}_no_git"]
            print(
                f"{'':>12}instructions, {kind}: {git / 1e6:.1f} M in the repository, "
                f"{bare / 1e6:.1f} M without it ({(git - bare) / 1e6:+.2f} M); the floor "
                f"{counted['floor'] / 1e6:.1f} M: {git / counted['floor']:.2f}x",
                flush=True,
            )
    ri = r.get("rewind_instructions")
    if ri:
        by_hand = ri["git_checkout"] + ri["git_reset_hard"]
        print(
            f"{'':>12}instructions, the rewind {ri['rewind'] / 1e6:.0f} M (without its git half "
            f"{ri['rewind_no_git'] / 1e6:.0f} M; undo {ri['undo'] / 1e6:.0f} M) vs git checkout "
            f"+ reset --hard {by_hand / 1e6:.1f} M; the floor {ri['floor'] / 1e6:.0f} M",
            flush=True,
        )
    r["ratios"] = {
        "hook_vs_floor": r["edges_git_s"] / 2 / r["floor_s"],
        "edges_git_vs_no_git": r["edges_git_s"] / r["edges_no_git_s"],
        "shell_git_vs_no_git": r["shell_git_s"] / r["shell_no_git_s"],
        "rewind_vs_git": r["rewind_s"] / r["git_by_hand_s"],
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.git_hooks", description=__doc__)
    parser.add_argument("--refs", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results"))
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="snapstore-bench-git-") as tmp:
        result = run(args.refs, args.rounds, Path(tmp))
    report(result)
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "git.json")
    with open(path, "w", encoding="utf-8") as handle:
        json.dump({"machine": machine(), "results": [result]}, handle, indent=2)
    print(f"wrote {path}", flush=True)


if __name__ == "__main__":
    main()
