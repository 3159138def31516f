"""``python -m bench scale``: the same figures at 1,000, 10,000, 100,000 and 1,000,000 files.

    python -m bench scale                  # 1k, 10k, 100k and 1M files (30-70 minutes, ~25 GB)
    python -m bench scale --quick          # 100k files, fewer rounds
    python -m bench scale --files 1000 20000

Each tree (:mod:`bench.synthetic`) has N files in N/20 folders, and their sizes follow a
real repository's: the quantiles of Django 5.1.10's source release (:data:`DJANGO_SIZES`,
6,824 files, median 1.5 KB, mean 6.5 KB, 10% empty), log-interpolated between them. The
workspace is a clean git repository (its own ``.git``, committed), as a monorepo is; a
shadow repository beside it (:class:`bench.peers.ShadowGit`) takes ``git add -A && git
commit`` per turn. On each tree, in one run:

- ``init``: ``snapstore init`` as a process (wall time, peak RSS from ``wait4``, the store's
  bytes on disk), against ``git status`` on the clean repository and the shadow repository's
  first ``git add -A && git commit`` (time, peak RSS, ``.git`` bytes). ``init`` runs twice:
  first with ``.git`` moved aside, so that it stores every file's bytes as outside git, then
  in the repository, where it references the clean files (the git-backed baseline: it stays);
- an agent session (:mod:`bench.session`, in-process) as long as the deepest rewind needs,
  and two turns more, a shadow git checkpoint before each turn;
- ``rewind N --yes`` and ``undo`` as processes, checked byte for byte, against ``git reset
  --hard`` there and back; ``pre-write`` as a process in an open turn, against the floor;
- one shell call's two hooks in scan mode (:func:`bench.shell_hooks.calls`) without the
  daemon, against ``git status``; the daemon started as a session's start does (its start:
  until its watcher's first scan is done), its memory, its inotify watches against
  ``fs.inotify.max_user_watches``, and the same hooks with it up;
- ``log``, ``status`` and ``gc`` as processes.

Trees are deleted after each size. Figures are medians; ``scale.md`` puts each beside its
value at the smallest size, with the targets (docs/benchmarks.md, "Scale").
"""

from __future__ import annotations

import bisect
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from snapstore import Store

from . import shell_hooks
from .hook import FLOOR
from .installed import clean_env
from .measure import Summary, ratio, timed
from .report import Charts, Figure, seconds, size, times
from .session import SESSION, STORE_DIR, SessionRun
from .suites import Config, Outcome, Step
from .synthetic import materialise
from .tree import FILE, disk_usage, remove
from .workloads import Workload, plan_session

SIZES = [1_000, 10_000, 100_000, 1_000_000]
QUICK_FILES = [100_000]
PER_FOLDER = 20
#: (quantile, bytes) of the file sizes in Django 5.1.10's sdist: every 2% and the tail.
DJANGO_SIZES = (
    (0.0, 0), (0.08, 0), (0.1, 20), (0.12, 52), (0.14, 91), (0.16, 143), (0.18, 207),
    (0.2, 295), (0.22, 378), (0.24, 459), (0.26, 519), (0.28, 622), (0.3, 692), (0.32, 752),
    (0.34, 807), (0.36, 874), (0.38, 938), (0.4, 1027), (0.42, 1106), (0.44, 1183),
    (0.46, 1306), (0.48, 1408), (0.5, 1522), (0.52, 1687), (0.54, 1907), (0.56, 2141),
    (0.58, 2326), (0.6, 2533), (0.62, 2789), (0.64, 3112), (0.66, 3543), (0.68, 3961),
    (0.7, 4633), (0.72, 5170), (0.74, 5802), (0.76, 6536), (0.78, 7148), (0.8, 7739),
    (0.82, 8530), (0.84, 9489), (0.86, 11248), (0.88, 14199), (0.9, 17407), (0.92, 20139),
    (0.94, 24652), (0.96, 30229), (0.97, 33648), (0.98, 40845), (0.99, 70445),
    (0.995, 93943), (0.999, 279680), (1.0, 709050),
)  # fmt: skip
_QUANTILES = [q for q, _ in DJANGO_SIZES]
FULL = {"rounds": 7, "rewind_reps": 3}
QUICK = {"rounds": 3, "rewind_reps": 1}
#: Past this many files a walk of the tree costs seconds: one rewind repetition, three rounds
#: of the rest, one ``gc``.
LARGE = 500_000
DAEMON_LIMIT = 256 * 2**20
TARGETS = {"per_turn_vs_smallest": 1.2, "init_vs_git_status": 1.0, "init_store_share": 0.01}
UNAVAILABLE = "not available"


def django_size(rng: random.Random) -> int:
    """One file size drawn from :data:`DJANGO_SIZES`, geometric between its quantiles."""
    u = rng.random()
    i = min(bisect.bisect_right(_QUANTILES, u), len(_QUANTILES) - 1)
    (q0, lo), (q1, hi) = DJANGO_SIZES[i - 1], DJANGO_SIZES[i]
    share = (u - q0) / (q1 - q0)
    return int(lo + (hi - lo) * share) if lo == 0 else int(lo * (hi / lo) ** share)


def scale_workload(files: int, turns: int, seed: int) -> Workload:
    return Workload(
        f"scale-{files}",
        {"workload": "scale", "files": files, "per_folder": PER_FOLDER, "turns": turns},
        lambda root: materialise(root, files, seed, PER_FOLDER, django_size),
        lambda root, base: plan_session(root, base, turns, seed),
    )


# -- processes ------------------------------------------------------------------------


@dataclass
class Ran:
    """One finished process: wall time, peak resident memory (0: not asked), what it printed."""

    seconds: float
    peak_rss: int
    stdout: bytes


#: Runs argv[2:] as its forked child and writes the child's wall time and ``ru_maxrss`` to
#: fd argv[1]. A child forked straight from the benchmark would report the benchmark's own
#: RSS as its peak (the forked image's high-water mark survives ``exec``); this small
#: process's fork leaves it a floor of a few MiB instead (``python -S -c pass``: 6 MiB).
LAUNCHER = """import os, sys, time
fd = int(sys.argv[1])
start = time.perf_counter()
pid = os.fork()
if pid == 0:
    os.close(fd)
    os.execvp(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
os.write(fd, f"{time.perf_counter() - start} {usage.ru_maxrss}".encode())
sys.exit(os.waitstatus_to_exitcode(status))
"""


def measured(cmd: list[str], cwd: str, env: dict[str, str], rss: bool = False) -> Ran:
    """Run ``cmd`` (it must succeed); its wall time and, with ``rss``, its own peak RSS."""
    if not rss:
        seconds_, proc = timed(lambda: subprocess.run(cmd, cwd=cwd, env=env, capture_output=True))
        _check(cmd, proc)
        return Ran(seconds_, 0, proc.stdout)
    read, write = os.pipe()
    try:
        proc = subprocess.run(
            [sys.executable, "-S", "-c", LAUNCHER, str(write), *cmd],
            cwd=cwd,
            env=env,
            capture_output=True,
            pass_fds=(write,),
        )
        os.close(write)
        write = -1
        _check(cmd, proc)
        spent, peak = os.read(read, 128).split()
    finally:
        os.close(read)
        if write >= 0:
            os.close(write)
    return Ran(float(spent), int(peak) * 1024, proc.stdout)


def _check(cmd: list[str], proc: subprocess.CompletedProcess[bytes]) -> None:
    if proc.returncode != 0:
        raise RuntimeError(
            f"{' '.join(cmd)} failed ({proc.returncode}): "
            f"{proc.stderr.decode(errors='replace').strip()[-2000:]}"
        )


def _env(**extra: str) -> dict[str, str]:
    return {
        **clean_env(SNAPSTORE_DAEMON="off"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_AUTHOR_NAME": "bench",
        "GIT_AUTHOR_EMAIL": "bench@localhost",
        "GIT_COMMITTER_NAME": "bench",
        "GIT_COMMITTER_EMAIL": "bench@localhost",
        **extra,
    }


def _snapstore(*args: str) -> list[str]:
    return [shell_hooks.SNAPSTORE, *args]


def _median(samples: list[float]) -> dict[str, Any]:
    return Summary.of(samples).to_json()


# -- init ------------------------------------------------------------------------------


def _own_repository(run: SessionRun, env: dict[str, str]) -> None:
    """Make the workspace a clean git repository at the shadow's first commit: its own
    ``.git`` borrows the shadow's objects (``alternates``) and a copy of its index, so the
    tree is hashed by git once, not twice."""
    git_dir = os.path.join(run.root, ".git")
    subprocess.run(["git", "init", "-q", run.root], env=env, check=True)
    with open(os.path.join(git_dir, "objects", "info", "alternates"), "w") as handle:
        handle.write(os.path.join(run.git.git_dir, "objects") + "\n")
    with open(os.path.join(git_dir, "info", "exclude"), "a") as handle:
        handle.write(f"/{STORE_DIR}/\n")
    shutil.copy2(os.path.join(run.git.git_dir, "index"), os.path.join(git_dir, "index"))
    for args in (["config", "gc.auto", "0"], ["update-ref", "HEAD", run.git.head()]):
        subprocess.run(["git", *args], cwd=run.root, env=env, check=True)


def git_status(root: str, env: dict[str, str], rounds: int, clean: bool) -> list[float]:
    """``git status --porcelain`` wall times; with ``clean``, each must list nothing."""
    samples = []
    for _ in range(rounds):
        ran = measured(["git", "status", "--porcelain"], root, env)
        if clean and ran.stdout.strip():
            raise AssertionError(f"the repository is not clean: {ran.stdout[:300]!r}")
        samples.append(ran.seconds)
    return samples


def _init(result: dict[str, Any], rounds: int) -> Callable[..., Store]:
    """The store's maker for :class:`SessionRun`: the shadow's first commit, the workspace's
    own clean repository and ``git status`` on it, then ``snapstore init`` twice: with the
    repository's ``.git`` moved aside (every file stored), then in it (the clean files
    referenced), which stays."""

    def init(run: SessionRun) -> Store:
        env = _env()
        add = measured(["git", "add", "-A"], run.root, run.git.env, rss=True)
        commit = measured(
            ["git", "commit", "-q", "--no-verify", "-m", "baseline"], run.root, run.git.env, True
        )
        result["shadow_git"] = {
            "seconds": add.seconds + commit.seconds,
            "peak_rss": max(add.peak_rss, commit.peak_rss),
            "git_bytes": run.git.size(),
        }
        _own_repository(run, env)
        git_status(run.root, env, 1, clean=True)  # warm: the index is refreshed once
        result["git_status"] = _median(git_status(run.root, env, rounds, clean=True))
        dot_git, aside = os.path.join(run.root, ".git"), os.path.join(run.root, "..", "git-aside")
        for name in ("stored", "snapstore"):
            shutil.rmtree(os.path.join(run.root, STORE_DIR), ignore_errors=True)
            if name == "stored":
                os.rename(dot_git, aside)
            try:
                ran = measured(_snapstore("init"), run.root, env, rss=True)
            finally:
                if name == "stored":
                    os.rename(aside, dot_git)
            result[name] = {
                "seconds": ran.seconds,
                "peak_rss": ran.peak_rss,
                "store_bytes": disk_usage(os.path.join(run.root, STORE_DIR)),
            }
        return Store.open(run.root)

    return init


# -- the per-turn figures ----------------------------------------------------------------


def rewinds(run: SessionRun, depths: list[int], reps: int, env: dict[str, str]) -> dict[str, Any]:
    """``rewind N --yes`` and ``undo`` as processes, each checked, against ``git reset --hard``
    to the same turn and back; repetitions alternate the two. The first repetition of each
    depth checks the whole tree, the others the paths the session touched (a walk of a
    million files costs ten seconds). Each timed step starts after an untimed ``sync``: the
    rewind's flush (``syncfs``) would otherwise wait for the pages the step before it left
    dirty, the peer's rewrite of a million-entry index among them."""
    out: dict[str, Any] = {}
    for depth in (d for d in depths if d <= len(run.plans)):
        first = len(run.plans) - depth
        samples: dict[str, list[float]] = {"rewind": [], "undo": [], "git": [], "git_back": []}

        def snap(depth: int = depth, first: int = first, into: dict = samples) -> None:
            whole = not into["rewind"]
            os.sync()
            ran = measured(
                _snapstore("--session", SESSION, "rewind", str(depth), "--yes"), run.root, env
            )
            run.tree.check(run.rewound_state(first), f"snapstore rewind {depth} --yes", whole)
            into["rewind"].append(ran.seconds)
            os.sync()
            into["undo"].append(
                measured(_snapstore("--session", SESSION, "undo"), run.root, env).seconds
            )
            run.tree.check(run.final, f"snapstore undo of rewind {depth}", whole)

        def git(first: int = first, into: dict = samples) -> None:
            os.sync()
            into["git"].append(timed(lambda: run.git.reset_hard(run.commits[first]))[0])
            os.sync()
            into["git_back"].append(timed(lambda: run.git.reset_hard(run.head_commit))[0])

        for r in range(reps):
            for step in (snap, git) if r % 2 == 0 else (git, snap):
                step()
        out[str(depth)] = {name: _median(s) for name, s in samples.items()}
    out["checks"] = run.tree.checks
    return out


def pre_write(run: SessionRun, rounds: int, env: dict[str, str]) -> dict[str, Any]:
    """``pre-write`` of one untouched file as a process in an open turn, then the write and
    ``post-write`` (untimed); the bare-import floor beside each."""
    rng = random.Random(f"scale-prewrite:{len(run.tree.base)}")
    free = sorted(
        rel
        for rel, v in run.tree.base.items()
        if v.kind == FILE and rel not in run.final and not rel.endswith((".png", ".bin"))
    )
    hook: list[float] = []
    floor: list[float] = []
    measured(_snapstore("begin", "--prompt", "scale: one write"), run.root, env)
    for rel in rng.sample(free, rounds):
        floor.append(measured([sys.executable, "-c", FLOOR], run.root, env).seconds)
        hook.append(
            measured(_snapstore("pre-write", "--tool", "Write", rel), run.root, env).seconds
        )
        with open(os.path.join(run.root, rel), "ab") as handle:
            handle.write(b"# written\n")
        measured(_snapstore("post-write", rel), run.root, env)
    measured(_snapstore("end"), run.root, env)
    return {"hook": _median(hook), "floor": _median(floor)}


def _memory(pid: int) -> dict[str, int]:
    """A process's resident bytes: VmRSS, its peak VmHWM, and VmRSS's parts RssAnon (its
    own) and RssFile (mapped file pages it touched: the store's LMDB file among them)."""
    found = {}
    with open(f"/proc/{pid}/status", encoding="ascii") as handle:
        for line in handle:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
                found[key] = int(value.split()[0]) * 1024
    return found


def _watches(pid: int) -> int:
    """The inotify watches a process holds, over all its inotify descriptors."""
    total = 0
    for fd in os.listdir(f"/proc/{pid}/fdinfo"):
        try:
            with open(f"/proc/{pid}/fdinfo/{fd}", encoding="ascii") as handle:
                total += sum(1 for line in handle if line.startswith("inotify wd:"))
        except OSError:
            continue
    return total


def _max_user_watches() -> int:
    with open("/proc/sys/fs/inotify/max_user_watches", encoding="ascii") as handle:
        return int(handle.read())


def shell(run: SessionRun, rounds: int, env: dict[str, str]) -> dict[str, Any]:
    """One shell call's two hooks without the daemon and with it, and the daemon itself."""
    from snapstore.ops.watchlink import watcher_info

    walk = shell_hooks.calls(run.root, env, rounds, 0)
    status = git_status(run.root, env, rounds, clean=False)
    auto = {**env, "SNAPSTORE_DAEMON": "auto"}
    own: dict[str, int] = {}  # the watcher's largest RssAnon and VmRSS seen during its start

    def sample(watcher: int) -> None:
        seen = _memory(watcher)
        for key in ("RssAnon", "VmRSS"):
            own[key] = max(own.get(key, 0), seen[key])

    started, pid = timed(lambda: shell_hooks.daemon_up(run.root, auto, watching=sample))
    try:
        info = watcher_info(os.path.join(run.root, STORE_DIR)) or {}
        watcher = int(info.get("pid") or pid)
        pids = [pid] if watcher == pid else [pid, watcher]  # serve, then its watch process
        rss = [_memory(p)["VmRSS"] for p in pids]
        watches = sum(_watches(p) for p in pids)
        up = shell_hooks.calls(run.root, auto, rounds, rounds)
        after = [_memory(p) for p in pids]
        peak = [m["VmHWM"] for m in after]
    finally:
        subprocess.run(_snapstore("serve", "--stop"), cwd=run.root, env=env, capture_output=True)
        shell_hooks.wait_gone(pid)
    return {
        "no_daemon": _median(walk["snapstore"]),
        "daemon": _median(up["snapstore"]),
        "ignored": _median(walk["ignored"] + up["ignored"]),
        "noop": _median(walk["noop"] + up["noop"]),
        "git_status": _median(status),
        "daemon_process": {
            "start_s": started,
            "pids": len(pids),
            "rss_bytes": sum(rss),
            "peak_rss_bytes": sum(peak),
            "peak_rss_by_process": dict(zip(("serve", "watch"), peak, strict=False)),
            # sampled every 50 ms during the start: the watcher's own memory (RssAnon) at its
            # largest, and its RSS then (with the store's mapped pages, RssFile)
            "watch_start_sampled": own,
            "memory_by_process": dict(zip(("serve", "watch"), after, strict=False)),
            "inotify_watches": watches,
            "max_user_watches": _max_user_watches(),
        },
    }


def commands(run: SessionRun, rounds: int, gcs: int, env: dict[str, str]) -> dict[str, Any]:
    """``log`` and ``status`` of the session as processes, ``rounds`` times, and ``gc``
    ``gcs`` times (it keeps every turn: they are recent)."""
    out = {}
    for name, times_ in (("log", rounds), ("status", rounds), ("gc", gcs)):
        args = _snapstore("--session", SESSION, name)
        out[name] = _median([measured(args, run.root, env).seconds for _ in range(times_)])
    return out


def session_turns(cfg: Config) -> int:
    """As many turns as the deepest rewind needs, and two more (at most ``cfg.turns``)."""
    return min(cfg.turns, max(cfg.depths) + 2)


def one_size(
    workload: Workload, cfg: Config, sizes: dict[str, int], tmp: str, step: Step, large: bool
) -> dict[str, Any]:
    """Every figure on one tree, then the tree is deleted: a generated tree, or a real
    repository's history (bench/replay.py); a ``large`` one gets fewer rounds."""
    tick = step(f"scale: {workload.name}", 6)
    init: dict[str, Any] = {}
    rounds = min(sizes["rounds"], 5) if large else sizes["rounds"]
    run = SessionRun(
        workload,
        os.path.join(tmp, workload.name),
        init=_init(init, rounds),
        skip=frozenset({STORE_DIR, ".git"}),
        timed_checkpoints=rounds,
    )
    env = _env()
    phases: dict[str, float] = {}
    clock = time.perf_counter()

    def done(phase: str) -> None:
        nonlocal clock
        phases[phase] = time.perf_counter() - clock
        clock = time.perf_counter()
        tick()

    try:
        run.setup()
        done("setup")
        run.play()
        run.close()
        done("session")
        reps = sizes["rewind_reps"]  # at 1M too: one repetition moved by tens of percent
        rewound = rewinds(run, cfg.depths, reps, env)
        done("rewinds")
        written = pre_write(run, rounds, env)
        done("pre_write")
        shelled = shell(run, rounds, env)
        done("shell")
        ran = commands(run, rounds, 1 if large else min(rounds, 3), env)
        done("commands")
    finally:
        remove(run.workdir)
    return {
        "workload": workload.params,
        "files": run.info["files"],
        "folders": len({os.path.dirname(rel) for rel in run.tree.base}),
        "tree_bytes": run.info["tree_bytes"],
        "materialise_s": run.info["materialise_s"],
        "init": init,
        "turn": {
            "snapstore_in_process": _median(run.timings.turn),
            "shadow_git": _median(run.timings.git),
        },
        "rewind": {**rewound, "reps": reps},
        "pre_write": written,
        "shell": shelled,
        "commands": ran,
        "phases_s": phases,
    }


# -- the figures ---------------------------------------------------------------------


@dataclass(frozen=True)
class Metric:
    """One figure measured at every size: its key, what it is, and how to read it."""

    key: str
    what: str
    value: Callable[[dict[str, Any]], float | None]
    per_turn: bool = False
    unit: str = "s"


def _depth(depth: int) -> Callable[[dict[str, Any]], float | None]:
    return lambda r: (
        r["rewind"][str(depth)]["rewind"]["median"] if str(depth) in r["rewind"] else None
    )


STORED = Metric(
    "init_stored",
    "`snapstore init` storing every file (`.git` moved aside)",
    lambda r: r["init"]["stored"]["seconds"],
)


METRICS = [
    Metric("init", "`snapstore init`", lambda r: r["init"]["snapstore"]["seconds"]),
    STORED,
    Metric(
        "git_status",
        "`git status` on the clean repository",
        lambda r: r["init"]["git_status"]["median"],
    ),
    Metric(
        "shadow_init",
        "shadow git's first `add -A && commit`",
        lambda r: r["init"]["shadow_git"]["seconds"],
    ),
    Metric(
        "turn",
        "a turn's checkpoint (in-process)",
        lambda r: r["turn"]["snapstore_in_process"]["median"],
        True,
    ),
    Metric(
        "shadow_turn",
        "shadow git's per-turn `add -A && commit`",
        lambda r: r["turn"]["shadow_git"]["median"],
    ),
    Metric(
        "pre_write",
        "one write's hook: `pre-write`, a process",
        lambda r: r["pre_write"]["hook"]["median"],
        True,
    ),
    Metric(
        "shell_daemon",
        "one shell call's two hooks, daemon up",
        lambda r: r["shell"]["daemon"]["median"],
        True,
    ),
    Metric(
        "shell_walk",
        "one shell call's two hooks, no daemon",
        lambda r: r["shell"]["no_daemon"]["median"],
        True,
    ),
    *(
        Metric(f"rewind_{d}", f"`rewind {d} --yes`, a process", _depth(d), True)
        for d in (1, 10, 50)
    ),
    Metric("log", "`log`, a process", lambda r: r["commands"]["log"]["median"], True),
    Metric("status", "`status`, a process", lambda r: r["commands"]["status"]["median"], True),
    Metric("gc", "`gc`, a process", lambda r: r["commands"]["gc"]["median"]),
    Metric(
        "daemon_start",
        "the daemon's start, until its watcher is synced",
        lambda r: r["shell"]["daemon_process"]["start_s"],
    ),
    Metric(
        "init_rss",
        "`snapstore init` peak RSS",
        lambda r: r["init"]["snapstore"]["peak_rss"],
        unit="B",
    ),
    Metric(
        "shadow_rss",
        "shadow git's first commit, peak RSS",
        lambda r: r["init"]["shadow_git"]["peak_rss"],
        unit="B",
    ),
    Metric(
        "daemon_rss",
        "the daemon's RSS (peak, after the shell calls)",
        lambda r: r["shell"]["daemon_process"]["peak_rss_bytes"],
        unit="B",
    ),
    Metric(
        "daemon_own",
        "the daemon's own memory (RssAnon; the watcher's largest during its start)",
        lambda r: _own_memory(r["shell"]["daemon_process"]),
        unit="B",
    ),
    Metric(
        "init_store",
        "the store after `init`",
        lambda r: r["init"]["snapstore"]["store_bytes"],
        unit="B",
    ),
    Metric(
        "shadow_store",
        "shadow git's `.git` after its first commit",
        lambda r: r["init"]["shadow_git"]["git_bytes"],
        unit="B",
    ),
    Metric("tree", "the tree", lambda r: r["tree_bytes"], unit="B"),
    Metric(
        "watches",
        "the daemon's inotify watches",
        lambda r: r["shell"]["daemon_process"]["inotify_watches"],
        unit="",
    ),
]


METRICS_BY_KEY = {m.key: m for m in METRICS}


def _own_memory(daemon: dict[str, Any]) -> float | None:
    """The daemon's anonymous memory, without the store's mapped pages: ``serve``'s after
    the shell calls and the watcher's largest, sampled during its start or after the calls
    (None for a run from before the sampling)."""
    by = daemon.get("memory_by_process", {})
    sampled = daemon.get("watch_start_sampled", {}).get("RssAnon")
    if sampled is None:
        return None
    watch = max(sampled, by.get("watch", {}).get("RssAnon", 0))
    return by.get("serve", {}).get("RssAnon", 0) + watch


def _show(metric: Metric, value: float | None) -> str:
    if value is None:
        return UNAVAILABLE
    if metric.unit == "s":
        return seconds(value)
    return size(value) if metric.unit == "B" else f"{int(value):,}"


def _label(files: int) -> str:
    return (
        f"{files // 1_000_000}M"
        if files >= 1_000_000 and files % 1_000_000 == 0
        else f"{files // 1000}k"
        if files % 1000 == 0
        else f"{files:,}"
    )


def _name(row: dict[str, Any], files: bool = False) -> str:
    """A tree's column (its size, or the replayed repository and its size); with
    ``files``, as a figure's name ends ("1M files")."""
    repository = row.get("workload", {}).get("repository")
    if repository:
        return f"{repository} ({row['files']:,} files)"
    return _label(row["files"]) + (" files" if files else "")


def _figure(what: str, value: str, peer: str, times_: float, *target: Any) -> Figure:
    return Figure("i29", what, value, peer, times_, *target)


def figures(rows: list[dict[str, Any]]) -> list[Figure]:
    """Each size's figures beside their peers, then the targets."""
    out = []
    for r in rows:
        n, init = _name(r, files=True), r["init"]
        git_status = init["git_status"]["median"]
        snap, stored = init["snapstore"], init["stored"]
        out += [
            _figure(
                f"`init`, {n}",
                seconds(snap["seconds"]),
                f"git status {seconds(git_status)}",
                ratio(snap["seconds"], git_status),
                "≤ 1.0x",
                snap["seconds"] <= git_status * TARGETS["init_vs_git_status"],
            ),
            _figure(
                f"  the store after `init`, {n}",
                size(snap["store_bytes"]),
                f"the tree {size(r['tree_bytes'])}",
                ratio(snap["store_bytes"], r["tree_bytes"]),
                "≤ 0.01x",
                snap["store_bytes"] <= r["tree_bytes"] * TARGETS["init_store_share"],
            ),
            _figure(
                f"  `init` peak RSS, {n}",
                size(snap["peak_rss"]),
                f"shadow git's first commit {size(init['shadow_git']['peak_rss'])}",
                ratio(snap["peak_rss"], init["shadow_git"]["peak_rss"]),
            ),
            _figure(
                f"  `init` storing every file (`.git` moved aside), {n}",
                f"{seconds(stored['seconds'])}; store {size(stored['store_bytes'])}",
                f"git status {seconds(git_status)}",
                ratio(stored["seconds"], git_status),
            ),
            _figure(
                f"per-turn checkpoint (in-process), {n}",
                seconds(r["turn"]["snapstore_in_process"]["median"]),
                f"shadow git {seconds(r['turn']['shadow_git']['median'])}",
                ratio(
                    r["turn"]["snapstore_in_process"]["median"], r["turn"]["shadow_git"]["median"]
                ),
            ),
            _figure(
                f"`pre-write` process, {n}",
                seconds(r["pre_write"]["hook"]["median"]),
                f"bare import {seconds(r['pre_write']['floor']['median'])}",
                ratio(r["pre_write"]["hook"]["median"], r["pre_write"]["floor"]["median"]),
            ),
            _figure(
                f"shell call's two hooks, daemon up, {n}",
                seconds(r["shell"]["daemon"]["median"]),
                f"snapstore's ignored-event hooks {seconds(r['shell']['ignored']['median'])}",
                ratio(r["shell"]["daemon"]["median"], r["shell"]["ignored"]["median"]),
            ),
            _figure(
                f"shell call's two hooks, no daemon, {n}",
                seconds(r["shell"]["no_daemon"]["median"]),
                f"git status {seconds(r['shell']['git_status']['median'])}",
                ratio(r["shell"]["no_daemon"]["median"], r["shell"]["git_status"]["median"]),
            ),
        ]
        for depth, row in r["rewind"].items():
            if isinstance(row, dict) and "rewind" in row:
                out.append(
                    _figure(
                        f"`rewind {depth} --yes` process, {n}",
                        seconds(row["rewind"]["median"]),
                        f"git reset --hard {seconds(row['git']['median'])}",
                        ratio(row["rewind"]["median"], row["git"]["median"]),
                    )
                )
        d = r["shell"]["daemon_process"]
        big = r["files"] >= 1_000_000
        out += [
            _figure(
                f"daemon start, {n}",
                seconds(d["start_s"]),
                f"git status {seconds(git_status)}",
                ratio(d["start_s"], git_status),
            ),
            _figure(
                f"daemon RSS (peak), {n}",
                size(d["peak_rss_bytes"]),
                "limit 256 MiB",
                ratio(d["peak_rss_bytes"], DAEMON_LIMIT),
                "≤ 1.0x" if big else "",
                d["peak_rss_bytes"] <= DAEMON_LIMIT if big else None,
            ),
            _figure(
                f"  the daemon's own memory (RssAnon), {n}",
                _show(METRICS_BY_KEY["daemon_own"], _own_memory(d)),
                "limit 256 MiB",
                ratio(_own_memory(d) or math.nan, DAEMON_LIMIT),
            ),
            _figure(
                f"daemon inotify watches, {n}",
                f"{d['inotify_watches']:,}",
                f"max_user_watches {d['max_user_watches']:,}",
                ratio(d["inotify_watches"], d["max_user_watches"]),
            ),
        ]
        for name in ("log", "status", "gc"):
            out.append(
                _figure(
                    f"`{name}` process, {n}",
                    seconds(r["commands"][name]["median"]),
                    "",
                    math.nan,
                )
            )
    if len(rows) > 1:
        small, large = rows[0], rows[-1]
        for m in METRICS:
            a, b = m.value(small), m.value(large)
            if m.per_turn and a and b:
                limit = TARGETS["per_turn_vs_smallest"]
                out.append(
                    _figure(
                        f"{m.what}: {_label(large['files'])} vs {_label(small['files'])} files",
                        _show(m, b),
                        _show(m, a),
                        b / a,
                        f"≤ {limit}x",
                        b / a <= limit,
                    )
                )
    return out


def matrix(rows: list[dict[str, Any]]) -> str:
    """The Markdown table: each figure at every size, and the largest over the smallest."""
    names = [_name(r) for r in rows]
    if len(rows) == 1:  # one tree: nothing to grow from
        lines = [f"| figure | {names[0]} |", "|---|---:|"]
        lines += [f"| {m.what} | {_show(m, m.value(rows[0]))} |" for m in METRICS]
        return "\n".join(lines) + "\n"
    last = f"{names[-1]} / {names[0]}"
    lines = [
        f"| figure | {' | '.join(names)} | {last} | target |",
        "|---|" + "---:|" * (len(rows) + 1) + "---|",
    ]
    limit = TARGETS["per_turn_vs_smallest"]
    for m in METRICS:
        values = [m.value(r) for r in rows]
        first, final = values[0], values[-1]
        grown = times(final / first) if first and final else ""
        target = ""
        if m.per_turn and first and final and len(rows) > 1:
            target = f"≤ {limit}x: {'met' if final / first <= limit else 'MISSED'}"
        lines.append(
            f"| {m.what} | {' | '.join(_show(m, v) for v in values)} | {grown} | {target} |"
        )
    return "\n".join(lines) + "\n"


def chart(charts: Charts, rows: list[dict[str, Any]]) -> None:
    """``scale.png``: each time figure (left) and each memory or size figure (right)
    against the tree's size, log-log."""
    plt = charts.plt
    if plt is None or len(rows) < 2:
        return
    xs = [r["files"] for r in rows]
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 6), dpi=110)
    for ax, unit, scale_by in ((left, "s", 1e3), (right, "B", 1 / 2**20)):
        for m in (m for m in METRICS if m.unit == unit):
            ys = [y for y in (m.value(r) for r in rows) if y is not None]
            if len(ys) < len(rows):
                continue
            style = "-o" if m.per_turn else "--s"
            ax.plot(
                xs, [y * scale_by for y in ys], style, markersize=4, label=m.what.replace("`", "")
            )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks(xs, [_label(x) for x in xs])
        ax.set_xlabel("files in the tree (N/20 folders)")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize="x-small", loc="upper left")
    left.set_ylabel("ms (median wall time; solid: per-turn figures)")
    left.set_title("Time against tree size", fontsize="medium")
    right.axhline(
        DAEMON_LIMIT / 2**20, color="tab:red", linestyle=":", label="daemon target: 256 MiB"
    )
    right.legend(fontsize="x-small", loc="upper left")
    right.set_ylabel("MiB")
    right.set_title("Memory and bytes against tree size", fontsize="medium")
    fig.tight_layout()
    path = os.path.join(charts.out, "scale.png")
    fig.savefig(path)
    plt.close(fig)
    charts.written.append(path)


def suite(cfg: Config, step: Step, charts: Charts) -> Outcome:
    """``python -m bench scale``: every size in turn, then the table and the chart."""
    sizes = QUICK if cfg.quick else FULL
    rows = []
    with tempfile.TemporaryDirectory(prefix="snapstore-bench-scale-", dir=cfg.tmp) as tmp:
        for files in sorted(cfg.files):
            begun = time.time()
            workload = scale_workload(files, session_turns(cfg), cfg.seed)
            rows.append(one_size(workload, cfg, sizes, tmp, step, large=files >= LARGE))
            rows[-1]["suite_s"] = time.time() - begun
    table = matrix(rows)
    with open(os.path.join(cfg.out, "scale.md"), "w", encoding="utf-8") as handle:
        handle.write(table)
    chart(charts, rows)
    params = {
        "files": sorted(cfg.files),
        "per_folder": PER_FOLDER,
        "sizes": "Django 5.1.10 sdist quantiles",
        "turns": cfg.turns,
        "depths": cfg.depths,
        "seed": cfg.seed,
        **sizes,
    }
    results = {"sizes": rows, "targets": TARGETS, "daemon_limit_bytes": DAEMON_LIMIT}
    return Outcome("scale", params, results, figures(rows))


def replay_suite(cfg: Config, step: Step, charts: Charts) -> Outcome:
    """``python -m bench scale-replay --replay GIT_DIR``: the same figures on a real
    repository's last commits, replayed as the session's turns (bench/replay.py)."""
    from .replay import replay_workload

    if not cfg.replay:
        raise ValueError("the scale-replay suite needs --replay GIT_DIR")
    sizes = QUICK if cfg.quick else FULL
    workload = replay_workload(cfg.replay, session_turns(cfg))
    with tempfile.TemporaryDirectory(prefix="snapstore-bench-replay-", dir=cfg.tmp) as tmp:
        begun = time.time()
        row = one_size(workload, cfg, sizes, tmp, step, large=False)
        row["suite_s"] = time.time() - begun
    with open(os.path.join(cfg.out, "scale-replay.md"), "w", encoding="utf-8") as handle:
        handle.write(matrix([row]))
    params = {**workload.params, "turns": session_turns(cfg), "depths": cfg.depths, **sizes}
    return Outcome("scale-replay", params, {"sizes": [row]}, figures([row]))
