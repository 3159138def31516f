"""The start-up, hook, scan and rewind figures as whole processes, each beside its peer in the
same run.

Reproduce with::

    python -m bench processes            # full: 60 start-up rounds, scans of 1k/10k/100k files
    python -m bench processes --quick    # about a minute: 12 rounds, a 1k-file scan only
    python -m bench processes --files 1000 10000 --hook-reps 30

snapstore runs as users install it (:mod:`bench.installed`: a wheel in a
virtual environment of its own, bytecode compiled), never the editable
checkout. What the suite measures:

1. start-up of each command against ``python -c "import lmdb, blake3,
   zstandard"``, its imports and (with valgrind) its instruction count:
   :mod:`bench.startup`;
2. ``snapstore rewind 50 --yes`` on a 1,000-file tree after a 50-turn agent
   session (:class:`bench.session.SessionRun`, the same session as the
   ``synthetic`` suite), then ``snapstore undo``, against ``git reset --hard``
   between the same two states in the session's shadow repository; every
   step is checked byte for byte. Each is measured made by the process itself
   and handed to the workspace's daemon (``snapstore serve``, up for those
   moves), whose client's imports and instructions are measured too;
3. the per-turn cost on a 1,000-file repository, ten writes a turn, every
   event its own process as an agent spawns it (``begin``, ten ``pre-write``
   and ``post-write``, ``end``; and the same turn through ``hook
   claude-code``), against shadow git's ``git add -A && git commit`` after
   each of those turns;
4. ``snapstore scan --no-watcher --json`` on a warm store (nothing changed,
   or ten files changed by a "shell command") against ``git status
   --porcelain`` with git's default (no untracked cache) and with
   ``core.untrackedCache=true``, on trees of 1k, 10k and 100k files.

Within a round the peers alternate and the order flips, so that the drift of a
shared machine falls on both. Figures are medians (p90 beside them for start-up);
ratios are between medians of the same run. The load average before and after
is in the JSON: figures taken under load say so there.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

from . import installed, report, serve, startup
from .hook import parse_importtime
from .measure import Summary, percentile, ratio, timed
from .peers import ShadowGit
from .report import Charts, Figure, seconds
from .session import SESSION, SessionRun
from .startup import Cli, Step, payload
from .suites import Config, Outcome
from .suites import Step as Progress
from .synthetic import materialise
from .tree import FILE
from .workloads import synthetic_workload

REWIND_FILES, REWIND_TURNS, REWIND_DEPTH = 1_000, 50, 50
TURN_FILES, TURN_WRITES = 1_000, 10
#: The forms of a turn, in turn: CLI commands, hook processes, HTTP hooks to snapstore serve.
HTTP_VARIANT = "claude-code http hooks"
TURN_VARIANTS = ("commands", "claude-code hooks", HTTP_VARIANT)
SCAN_CHANGED = 10
QUICK = {"profile_runs": 1, "callgrind_runs": 1, "turns": 6, "scan_rounds": 3}
FULL = {"profile_runs": 5, "callgrind_runs": 3, "turns": 15, "scan_rounds": 7}
#: Commands that agents (or their wrappers) spawn per event: at most 1.5x the floor.
CAPTURE = (
    "begin",
    "pre-write f",
    "post-write f",
    "end",
    "hook claude-code PreToolUse",
    "hook claude-code PostToolUse",
    "hook gemini-cli BeforeTool",
)
TARGETS = {
    "capture_startup_vs_floor": 1.5,
    "rewind_vs_git_reset_hard": 1.5,
    "rewind_daemon_vs_git_reset_hard": 1.0,
    "turn_vs_shadow_git_checkpoint": 1.0,
    "warm_scan_vs_git_status": 2.0,
}


# -- 2. rewind and undo as processes -----------------------------------------------------


def rewind(
    inst: installed.Installed, tmp: str, seed: int, reps: int, tick: Callable[[], None]
) -> dict[str, Any]:
    """``rewind 50 --yes`` and ``undo`` against ``git reset --hard`` there and back, each made
    by the process itself (no daemon runs) and handed to ``snapstore serve`` (started for
    those two, and warmed by one untimed pair: the daemon of a session has made moves
    before)."""
    run = SessionRun(
        synthetic_workload(REWIND_FILES, REWIND_TURNS, seed), os.path.join(tmp, "rewind")
    )
    run.setup()
    try:
        run.play()
    finally:
        run.close()  # the processes open the store themselves
    first = len(run.plans) - REWIND_DEPTH
    cli = Cli(inst, run.root)
    samples: dict[str, list[float]] = {
        "rewind": [],
        "undo": [],
        "rewind_daemon": [],
        "undo_daemon": [],
        "rewind_in_daemon": [],
        "git_reset_hard": [],
        "git_reset_hard_back": [],
    }
    rewind_step = Step("rewind", ["--session", SESSION, "rewind", str(REWIND_DEPTH), "--yes"])
    undo_step = Step("undo", ["--session", SESSION, "undo"])

    def pair(suffix: str = "", into: dict[str, list[float]] = samples) -> None:
        seconds_, _, _ = cli.run(rewind_step)
        run.tree.check(run.rewound_state(first), f"snapstore rewind {REWIND_DEPTH} --yes{suffix}")
        into.setdefault(f"rewind{suffix}", []).append(seconds_)
        into.setdefault(f"undo{suffix}", []).append(cli.run(undo_step)[0])
        run.tree.check(run.final, f"snapstore undo of the rewind{suffix}")

    def routed() -> None:
        daemon = serve.Daemon(inst, run.root)
        try:
            pair("_daemon", {})  # warm: the daemon has loaded the rewind
            pair("_daemon")
        finally:
            daemon.stop()
        served = _moves_served(run.root)
        if len(served) != 4:
            raise AssertionError(f"snapstore serve made {len(served)} of the 4 moves handed to it")
        samples["rewind_in_daemon"].append(served[2])  # the timed pair's, as the daemon saw it

    def git() -> None:
        samples["git_reset_hard"].append(timed(lambda: run.git.reset_hard(run.commits[first]))[0])
        run.tree.check(run.states[first], "git reset --hard to the same turn")
        samples["git_reset_hard_back"].append(timed(lambda: run.git.reset_hard(run.head_commit))[0])
        run.tree.check(run.final, "git reset --hard back")

    for r in range(reps):
        steps = (pair, git, routed)
        for step in steps if r % 2 == 0 else reversed(steps):
            step()
        tick()
    rewound = run.rewound_state(first)
    counted = _rewind_instructions(cli, lambda: run.tree.check(rewound, "rewind under callgrind"))
    if counted is not None:
        cli.run(undo_step)
        run.tree.check(run.final, "snapstore undo after callgrind")
    client = _routed_client(inst, cli, run, first)
    out: dict[str, Any] = {name: Summary.of(s).to_json() for name, s in samples.items()}
    out["instructions"] = counted
    out["client"] = client
    git_there, git_back = out["git_reset_hard"]["median"], out["git_reset_hard_back"]["median"]
    out.update(
        files=REWIND_FILES,
        turns=len(run.plans),
        depth=REWIND_DEPTH,
        reps=reps,
        files_restored=sum(
            1 for rel in run.agent_paths if run.states[first].get(rel) != run.final.get(rel)
        ),
        checks=run.tree.checks,
        correct=True,
        command=f"snapstore --session {SESSION} rewind {REWIND_DEPTH} --yes",
        ratio=ratio(out["rewind"]["median"], git_there),
        undo_ratio=ratio(out["undo"]["median"], git_back),
        daemon_ratio=ratio(out["rewind_daemon"]["median"], git_there),
        daemon_undo_ratio=ratio(out["undo_daemon"]["median"], git_back),
    )
    shutil.rmtree(run.workdir, ignore_errors=True)
    return out


def _rewind_instructions(cli: Cli, check: Callable[[], None]) -> int | None:
    """Instructions (callgrind's Ir) of one ``rewind 50 --yes`` process, checked like the
    timed ones; None without valgrind. Hash randomisation is pinned, as for start-up."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        return None
    step = Step(
        "rewind",
        ["--session", SESSION, "rewind", str(REWIND_DEPTH), "--yes"],
        env={"PYTHONHASHSEED": "0"},
    )
    _, _, err = cli.run(step, (valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null"))
    check()
    return startup.instructions_in(err)


def _moves_served(root: str) -> list[float]:
    """The seconds each move the workspace's daemons made took them (their log says so),
    in order; the log is then cleared."""
    path = os.path.join(root, ".snapstore", "serve.log")
    try:
        with open(path, encoding="utf-8") as handle:
            found = [re.search(r" move: .*: done in (\d+) ms$", line.rstrip()) for line in handle]
        return [int(m.group(1)) / 1e3 for m in found if m]
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)


def _routed_client(
    inst: installed.Installed, cli: Cli, run: SessionRun, first: int
) -> dict[str, Any]:
    """The process whose ``rewind 50 --yes`` the daemon makes: what it imports (``-X
    importtime``) and, with valgrind, its instructions (the daemon's work not counted)."""
    rewind_step = Step("rewind", ["--session", SESSION, "rewind", str(REWIND_DEPTH), "--yes"])
    undo_step = Step("undo", ["--session", SESSION, "undo"])
    daemon = serve.Daemon(inst, run.root)
    out: dict[str, Any] = {}
    try:
        cli.run(rewind_step)  # warm the daemon
        cli.run(undo_step)
        _, _, err = cli.run(rewind_step, opts=("-X", "importtime"))
        run.tree.check(run.rewound_state(first), "routed rewind under -X importtime")
        loaded = parse_importtime(err.decode(errors="replace"))
        out["imports"] = {
            "total_us": sum(own for own, _ in loaded.values()),
            "modules": len(loaded),
            "store_loaded": any(m in loaded for m in ("lmdb", "snapstore.store")),
        }
        cli.run(undo_step)
        valgrind = shutil.which("valgrind")
        if valgrind is not None:
            wrap = (valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null")
            pinned = Step(rewind_step.label, rewind_step.args, env={"PYTHONHASHSEED": "0"})
            _, _, err = cli.run(pinned, wrap)
            run.tree.check(run.rewound_state(first), "routed rewind under callgrind")
            out["instructions"] = startup.instructions_in(err)
            cli.run(undo_step)
        run.tree.check(run.final, "undo after the routed client's measures")
    finally:
        daemon.stop()
    if len(_moves_served(run.root)) < 4:
        raise AssertionError("the measured client's moves were not all made by snapstore serve")
    return out


# -- 3. per-turn cost through processes --------------------------------------------------


def _turn(
    cli: Cli,
    variant: str,
    n: int,
    rels: list[str],
    each: dict[str, list[float]],
    daemon: serve.Daemon | None = None,
) -> float:
    """One agent turn of ``len(rels)`` writes, every event a process (or, with ``daemon``, a
    POST to ``snapstore serve``); their summed time. ``each`` gathers the time of every
    event by its label."""
    root, spent = cli.root, 0.0

    def spawn(step: Step) -> None:
        nonlocal spent
        seconds_ = daemon.post(step.stdin) if daemon is not None else cli.run(step)[0]
        each.setdefault(f"{variant}: {step.label}", []).append(seconds_)
        spent += seconds_

    def edit(rel: str) -> None:  # the agent's write, not timed
        with open(os.path.join(root, rel), "ab") as handle:
            handle.write(f"# turn {n}\n".encode())

    if variant == "commands":
        spawn(Step("begin", ["begin", "--prompt", f"turn {n}"]))
        for rel in rels:
            spawn(Step("pre-write", ["pre-write", "--tool", "Write", rel]))
            edit(rel)
            spawn(Step("post-write", ["post-write", rel]))
        spawn(Step("end", ["end"]))
        return spent
    hook = ["hook", "claude-code"]
    spawn(
        Step(
            "UserPromptSubmit",
            hook,
            payload("claude-code", "user-prompt-submit", root, prompt=f"turn {n}"),
        )
    )
    for i, rel in enumerate(rels):
        tool = {"tool_use_id": f"toolu_{n}_{i}"}
        spawn(
            Step(
                "PreToolUse", hook, payload("claude-code", "pre-tool-use-write", root, rel, **tool)
            )
        )
        edit(rel)
        spawn(
            Step(
                "PostToolUse",
                hook,
                payload("claude-code", "post-tool-use-write", root, rel, **tool),
            )
        )
    spawn(Step("Stop", hook, payload("claude-code", "stop", root)))
    return spent


def per_turn(
    inst: installed.Installed, tmp: str, seed: int, turns: int, tick: Callable[[], None]
) -> dict[str, Any]:
    """snapstore's turn (as CLI commands, and as Claude Code hooks) against a shadow-git
    checkpoint of the same turn, alternating turn by turn."""
    root = os.path.join(tmp, "turn", "ws")
    base = materialise(root, TURN_FILES, seed)
    git = ShadowGit(root, os.path.join(tmp, "turn", "git"), (".snapstore",))
    git.checkpoint("baseline")
    cli = Cli(inst, root)
    cli.cli(["init"])
    files = sorted(rel for rel, v in base.items() if v.kind == FILE)
    rng = random.Random(f"process-turns:{seed}")
    samples: dict[str, list[float]] = {v: [] for v in TURN_VARIANTS}
    each: dict[str, list[float]] = {}
    checkpoints = []
    daemon = serve.Daemon(inst, root)
    try:
        for n in range(turns):
            variant = TURN_VARIANTS[n % len(TURN_VARIANTS)]
            samples[variant].append(
                _turn(
                    cli,
                    variant,
                    n,
                    rng.sample(files, TURN_WRITES),
                    each,
                    daemon if variant == HTTP_VARIANT else None,
                )
            )
            checkpoints.append(timed(lambda n=n: git.checkpoint(f"turn {n}"))[0])
            tick()
    finally:
        daemon.stop()
    hook_session = "claude-code/" + json.loads(payload("claude-code", "stop", root))["session_id"]
    logged = {
        session: [
            entry["files"] for entry in json.loads(cli.cli(["--session", session, "log", "--json"]))
        ]
        for session in ("default", hook_session)
    }
    for variant, session in zip(
        TURN_VARIANTS, ("default", hook_session, hook_session), strict=True
    ):
        wanted = (
            sum(len(samples[v]) for v in TURN_VARIANTS if v.startswith("claude-code"))
            if session == hook_session
            else len(samples[variant])
        )
        if logged[session] != [TURN_WRITES] * wanted:
            raise AssertionError(
                f"{variant}: the turns recorded {logged[session]} files, not {TURN_WRITES} each"
            )
    shutil.rmtree(os.path.dirname(root), ignore_errors=True)
    git_median = statistics.median(checkpoints)
    out: dict[str, Any] = {
        "files": TURN_FILES,
        "writes_per_turn": TURN_WRITES,
        "turns": turns,
        "shadow_git_checkpoint": Summary.of(checkpoints).to_json(),
        "per_process": {label: Summary.of(t).to_json() for label, t in each.items()},
    }
    for variant, s in samples.items():
        out[variant] = {
            **Summary.of(s).to_json(),
            "events": 2 + 2 * TURN_WRITES,
            "processes": 0 if variant == HTTP_VARIANT else 2 + 2 * TURN_WRITES,
            "ratio": ratio(statistics.median(s), git_median),
        }
    posts = [t for label, ts in each.items() if label.startswith(HTTP_VARIANT) for t in ts]
    out["http_event"] = {**Summary.of(posts).to_json(), "p90": percentile(posts, 90)}
    return out


# -- 4. warm scan without the daemon ------------------------------------------------------


def _scan_tree(
    inst: installed.Installed,
    tmp: str,
    files: int,
    seed: int,
    rounds: int,
    tick: Callable[[], None],
) -> dict[str, Any]:
    work = os.path.join(tmp, f"scan-{files}")
    root = os.path.join(work, "ws")
    base = materialise(root, files, seed)
    git = ShadowGit(root, os.path.join(work, "git"), (".snapstore",))
    git.checkpoint("baseline")
    uc_index = os.path.join(git.git_dir, "index-uc")
    shutil.copy2(os.path.join(git.git_dir, "index"), uc_index)
    git_env = {"default": git.env, "untracked_cache": {**git.env, "GIT_INDEX_FILE": uc_index}}
    git_cfg = {
        "default": "core.untrackedCache=false",
        "untracked_cache": "core.untrackedCache=true",
    }
    cli = Cli(inst, root)
    cli.cli(["init"])
    first, _, _ = cli.run(Step("scan", ["scan", "--no-watcher", "--json"]))
    time.sleep(2.1)  # files written just now are "racily clean" for both tools: let them age

    def status(kind: str, expect: int) -> float:
        seconds_, proc = installed.run(
            ["git", "-c", git_cfg[kind], "status", "--porcelain"], root, env=git_env[kind]
        )
        if len(proc.stdout.splitlines()) != expect:
            raise AssertionError(f"git status ({kind}) listed {proc.stdout!r}, not {expect}")
        return seconds_

    def scan(expect: int) -> float:
        seconds_, out, _ = cli.run(Step("scan", ["scan", "--no-watcher", "--json"]))
        result = json.loads(out)
        if len(result["changed"]) != expect or result["added"] or result["deleted"]:
            raise AssertionError(f"scan saw {result}, not {expect} changed files")
        return seconds_

    def measure(expect: int, r: int, into: dict[str, list[float]]) -> None:
        steps = [
            ("scan", lambda: scan(expect)),
            ("default", lambda: status("default", expect)),
            ("untracked_cache", lambda: status("untracked_cache", expect)),
        ]
        steps = steps[r % 3 :] + steps[: r % 3]
        for name, fn in steps if r % 2 == 0 else reversed(steps):
            into[name].append(fn())

    for kind in git_env:  # warm both indexes (the untracked cache is built on first use)
        status(kind, 0)
    scan(0)
    texts = sorted(rel for rel, v in base.items() if v.kind == FILE)
    rng = random.Random(f"process-scan:{files}:{seed}")
    clean: dict[str, list[float]] = {"scan": [], "default": [], "untracked_cache": []}
    changed: dict[str, list[float]] = {"scan": [], "default": [], "untracked_cache": []}
    for r in range(rounds):
        measure(0, r, clean)
        for rel in rng.sample(texts, SCAN_CHANGED):  # a shell command's appends
            with open(os.path.join(root, rel), "ab") as handle:
                handle.write(f"# round {r}\n".encode())
        measure(SCAN_CHANGED, r, changed)
        git.checkpoint(f"round {r}")  # untimed: both indexes match HEAD again
        installed.run(
            ["git", "-c", git_cfg["untracked_cache"], "add", "-A"],
            root,
            env=git_env["untracked_cache"],
        )
        tick()
    shutil.rmtree(work, ignore_errors=True)
    out: dict[str, Any] = {"files": files, "first_scan": first, "rounds": rounds}
    for label, rows in (("clean", clean), (f"{SCAN_CHANGED}_changed", changed)):
        row = {name: Summary.of(s).to_json() for name, s in rows.items()}
        row["ratio"] = ratio(row["scan"]["median"], row["default"]["median"])
        row["ratio_untracked_cache"] = ratio(
            row["scan"]["median"], row["untracked_cache"]["median"]
        )
        out[label] = row
    return out


def warm_scan(
    inst: installed.Installed, tmp: str, sizes: list[int], seed: int, rounds: int, step: Progress
) -> list[dict[str, Any]]:
    return [
        _scan_tree(inst, tmp, n, seed, rounds, step(f"processes: scan, {n:,} files", rounds))
        for n in sizes
    ]


# -- the suite --------------------------------------------------------------------------


def suite(cfg: Config, step: Progress, charts: Charts) -> Outcome:
    """``python -m bench processes``: every figure above, its table, JSON and chart."""
    sizes = QUICK if cfg.quick else FULL
    params = {
        "startup_rounds": cfg.hook_reps,
        "rewind_reps": cfg.rewind_reps,
        "scan_files": cfg.files,
        "seed": cfg.seed,
        **sizes,
    }
    tick = step("processes: pip install . (cached)", 1)
    inst = installed.ensure(lambda line: report.console.print(line))
    tick()
    loads: dict[str, tuple[float, float, float]] = {"before": os.getloadavg()}
    results: dict[str, Any] = {
        "installed": inst.describe(),
        "load_averages": loads,
        "machine_note": f"a machine shared with other work ({os.cpu_count()} cores): the load "
        "averages (1, 5 and 15 minutes) beside each part say how busy it was; "
        "ratios between peers measured in the same rounds hold up better than "
        "absolute times",
        "reproduce": "python -m bench processes" + (" --quick" if cfg.quick else ""),
    }
    extra = sizes["profile_runs"] + sizes["callgrind_runs"]
    with tempfile.TemporaryDirectory(prefix="snapstore-bench-processes-", dir=cfg.tmp) as tmp:
        tick = step("processes: start-up workspace", 1)
        ws = startup.Workspace(inst, os.path.join(tmp, "startup"), cfg.hook_reps + extra)
        tick()
        results["startup"] = startup.latency(
            ws, cfg.hook_reps, step("processes: start-up rounds", cfg.hook_reps)
        )
        loads["startup"] = os.getloadavg()
        tick = step("processes: -X importtime and callgrind", 1)
        results["imports"] = startup.importtime(ws, cfg.hook_reps, sizes["profile_runs"])
        results["instructions"] = startup.instructions(
            ws, cfg.hook_reps + sizes["profile_runs"], sizes["callgrind_runs"]
        )
        tick()
        results["turn"] = per_turn(
            inst, tmp, cfg.seed, sizes["turns"], step("processes: per-turn cost", sizes["turns"])
        )
        loads["turn"] = os.getloadavg()
        results["rewind"] = rewind(
            inst,
            tmp,
            cfg.seed,
            cfg.rewind_reps,
            step("processes: rewind 50 and undo", cfg.rewind_reps),
        )
        loads["rewind"] = os.getloadavg()
        results["scan"] = warm_scan(inst, tmp, cfg.files, cfg.seed, sizes["scan_rounds"], step)
    loads["after"] = os.getloadavg()
    results["targets"] = TARGETS
    floor_bounds(results)
    import_table(results["imports"])
    startup_chart(charts, results["startup"])
    return Outcome("processes", params, results, figures(results))


def floor_bounds(results: dict[str, Any]) -> None:
    """What the bare-import floor alone costs beside each peer: the part of a target that no
    work on snapstore's own code can reach while every event is a Python process."""
    floor = results["startup"]["floor"]["median"]
    turn = results["turn"]
    bound = floor * turn["commands"]["processes"]
    turn["floor_bound"] = {
        "seconds": bound,
        "ratio": ratio(bound, turn["shadow_git_checkpoint"]["median"]),
    }
    for tree in results["scan"]:
        tree["floor_vs_git_status"] = ratio(floor, tree["clean"]["default"]["median"])


def figures(results: dict[str, Any]) -> list[Figure]:
    """The table rows: each figure beside its peer, with the issue's target where it has one."""
    out = []
    start = results["startup"]
    floor = start["floor"]["median"]
    for label, row in start["commands"].items():
        target = label in CAPTURE
        out.append(
            Figure(
                "i10",
                f"`snapstore {label}` process (p90 {seconds(row['p90'])})",
                seconds(row["median"]),
                f"bare import {seconds(floor)}",
                row["ratio"],
                "≤ 1.5x" if target else "",
                row["ratio"] <= TARGETS["capture_startup_vs_floor"] if target else None,
            )
        )
    counts = results.get("instructions")
    if counts:
        for label, row in counts["commands"].items():
            out.append(
                Figure(
                    "i10",
                    f"instructions, `snapstore {label}` (callgrind)",
                    f"{row['instructions'] / 1e6:.0f} M",
                    f"bare import {counts['floor'] / 1e6:.0f} M",
                    row["ratio"],
                    "≤ 1.5x",
                    row["ratio"] <= TARGETS["capture_startup_vs_floor"],
                )
            )
    turn = results["turn"]
    git = turn["shadow_git_checkpoint"]["median"]
    for variant in TURN_VARIANTS:
        row = turn[variant]
        what = (
            f"per-turn cost, {turn['files']:,} files, {TURN_WRITES} writes, {variant} "
            f"({row['processes'] or 'no'} processes, {row['events']} events)"
        )
        out.append(
            Figure(
                "i10",
                what,
                seconds(row["median"]),
                f"shadow git add -A + commit {seconds(git)}",
                row["ratio"],
                "≤ 1.0x",
                row["ratio"] <= TARGETS["turn_vs_shadow_git_checkpoint"],
            )
        )
    http = turn["http_event"]
    out.append(
        Figure(
            "i10",
            f"  one event posted to snapstore serve (p90 {seconds(http['p90'])})",
            seconds(http["median"]),
            f"bare import {seconds(floor)}",
            ratio(http["median"], floor),
        )
    )
    bound = turn["floor_bound"]
    out.append(
        Figure(
            "i10",
            f"  the floor alone: {turn['commands']['processes']} x bare import",
            seconds(bound["seconds"]),
            f"shadow git add -A + commit {seconds(git)}",
            bound["ratio"],
        )
    )
    rw = results["rewind"]
    what = (
        f"`rewind {rw['depth']} --yes` process, {rw['files']:,} files, "
        f"{rw['files_restored']} files restored, no daemon"
    )
    out.append(
        Figure(
            "i29",
            what,
            seconds(rw["rewind"]["median"]),
            f"git reset --hard {seconds(rw['git_reset_hard']['median'])}",
            rw["ratio"],
            "≤ 1.5x",
            rw["ratio"] <= TARGETS["rewind_vs_git_reset_hard"],
        )
    )
    counts = results.get("instructions")
    if rw.get("instructions") and counts:
        out.append(
            Figure(
                "i10",
                f"instructions, `rewind {rw['depth']} --yes` (callgrind)",
                f"{rw['instructions'] / 1e6:.0f} M",
                f"bare import {counts['floor'] / 1e6:.0f} M",
                ratio(rw["instructions"], counts["floor"]),
            )
        )
    out.append(
        Figure(
            "i10",
            "`undo` of that rewind, process",
            seconds(rw["undo"]["median"]),
            f"git reset --hard back {seconds(rw['git_reset_hard_back']['median'])}",
            rw["undo_ratio"],
        )
    )
    out.append(
        Figure(
            "i29",
            f"`rewind {rw['depth']} --yes` process, made by snapstore serve",
            seconds(rw["rewind_daemon"]["median"]),
            f"git reset --hard {seconds(rw['git_reset_hard']['median'])}",
            rw["daemon_ratio"],
            "≤ 1.0x",
            rw["daemon_ratio"] <= TARGETS["rewind_daemon_vs_git_reset_hard"],
        )
    )
    out.append(
        Figure(
            "i29",
            "  of which the move in the daemon (its log's time)",
            seconds(rw["rewind_in_daemon"]["median"]),
            f"git reset --hard {seconds(rw['git_reset_hard']['median'])}",
            ratio(rw["rewind_in_daemon"]["median"], rw["git_reset_hard"]["median"]),
        )
    )
    out.append(
        Figure(
            "i29",
            "`undo` of that rewind, made by snapstore serve",
            seconds(rw["undo_daemon"]["median"]),
            f"git reset --hard back {seconds(rw['git_reset_hard_back']['median'])}",
            rw["daemon_undo_ratio"],
        )
    )
    client = rw["client"]
    if client.get("instructions") and counts:
        out.append(
            Figure(
                "i29",
                "  instructions of that process (callgrind; the daemon's not counted)",
                f"{client['instructions'] / 1e6:.0f} M",
                f"bare import {counts['floor'] / 1e6:.0f} M",
                ratio(client["instructions"], counts["floor"]),
            )
        )
    for tree in results["scan"]:
        for state in ("clean", f"{SCAN_CHANGED}_changed"):
            row = tree[state]
            out.append(
                Figure(
                    "i10",
                    f"`scan --no-watcher` process, {tree['files']:,} files, "
                    f"{state.replace('_', ' ')}",
                    seconds(row["scan"]["median"]),
                    f"git status {seconds(row['default']['median'])} (untracked cache "
                    f"{seconds(row['untracked_cache']['median'])}: "
                    f"{row['ratio_untracked_cache']:.2f}x)",
                    row["ratio"],
                    "≤ 2x",
                    row["ratio"] <= TARGETS["warm_scan_vs_git_status"],
                )
            )
        out.append(
            Figure(
                "i10",
                f"  the floor alone, {tree['files']:,} files",
                f"bare import {seconds(floor)}",
                f"git status {seconds(tree['clean']['default']['median'])}",
                tree["floor_vs_git_status"],
            )
        )
    return out


def import_table(imports: dict[str, Any]) -> None:
    """What each command imports beyond the floor, on the terminal."""
    from rich.table import Table

    grid = Table(
        title="imports per command (-X importtime, median of "
        f"{imports['runs']} run(s); the floor: "
        f"{imports['floor']['total_us'] / 1e3:.1f} ms, "
        f"{imports['floor']['modules']} modules)"
    )
    for name in ("command", "imports", "modules", "beyond the floor", "heaviest packages"):
        grid.add_column(name, overflow="fold")
    for label, p in imports["commands"].items():
        heavy = ", ".join(
            f"{row['package']} {row['self_us'] / 1e3:.1f}" for row in p["extra_by_package"][:5]
        )
        grid.add_row(
            label,
            f"{p['total_us'] / 1e3:.1f} ms",
            f"{p['modules']}",
            f"{p['extra_modules']} ({p['extra_us'] / 1e3:.1f} ms)",
            heavy,
        )
    report.console.print(grid)


def startup_chart(charts: Charts, start: dict[str, Any]) -> None:
    """``processes-startup.png``: each command's median (p90 whisker) against the floor."""
    plt = charts.plt
    if plt is None:
        return
    labels = list(start["commands"])
    medians = [start["commands"][k]["median"] * 1e3 for k in labels]
    p90s = [start["commands"][k]["p90"] * 1e3 for k in labels]
    floor = start["floor"]["median"] * 1e3
    fig, ax = plt.subplots(figsize=(8, 6), dpi=110)
    ys = range(len(labels))
    colours = ["tab:blue" if k in CAPTURE else "tab:gray" for k in labels]
    bars = ax.barh(
        ys,
        medians,
        color=colours,
        xerr=[[0] * len(labels), [p - m for p, m in zip(p90s, medians, strict=True)]],
        capsize=2,
        error_kw={"elinewidth": 0.8},
        label="median, whisker to p90 (blue: capture commands and hooks)",
    )
    ax.bar_label(
        bars,
        [f"{m / floor:.1f}x" for m in medians],
        label_type="center",
        color="white",
        fontsize="x-small",
    )
    ax.axvline(floor, color="black", label=f"floor: bare import, {floor:.0f} ms")
    ax.axvline(
        floor * TARGETS["capture_startup_vs_floor"],
        color="tab:red",
        linestyle="--",
        label="target for capture: 1.5x the floor",
    )
    ax.set_yticks(list(ys), [f"snapstore {k}" for k in labels], fontsize="small")
    ax.invert_yaxis()
    ax.set_xlabel("ms per process (wall time)")
    ax.set_title(
        "snapstore commands as processes (installed, not editable), against\n"
        "the floor python -c 'import lmdb, blake3, zstandard'",
        fontsize="medium",
    )
    ax.legend(fontsize="x-small", loc="upper center", bbox_to_anchor=(0.5, -0.1))
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    path = os.path.join(charts.out, "processes-startup.png")
    fig.savefig(path)
    plt.close(fig)
    charts.written.append(path)
