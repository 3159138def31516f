"""The suites: each runs alone (``python -m bench SUITE``) and writes its own results.

- ``synthetic``: generated trees (1k, 10k, 100k files) and an agent session on
  each: figures 1, 2, 3, 5, and store sizes.
- ``real``: releases of a real project: figure 4 (store size), and 2, 3, 5 on it.
- ``repo``: the same on a copy of ``--repo PATH``.
- ``hook``: the hook process against the bare-import floor (figure 3).
- ``prewrite``: in-process ``pre_write`` of a 10 KiB file.
- ``history``: store bytes against raw bytes for a 100-turn history.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from . import capture, hook, real, remote, report, rewinds, sizes
from .report import Charts, Figure, seconds, size, times
from .session import SessionRun
from .workloads import Workload, repo_workload, synthetic_workload

#: Start a progress task of ``total`` steps; returns the function that advances it.
Step = Callable[[str, int], Callable[[], None]]
BIG_TREE = 100_000


@dataclass
class Config:
    """Everything the command line chooses."""

    out: str
    quick: bool = False
    seed: int = 1
    files: list[int] = field(default_factory=lambda: [1_000, 10_000, 100_000])
    turns: int = 60
    depths: list[int] = field(default_factory=lambda: [1, 10, 50])
    rewind_reps: int = 5
    probe_rounds: int = 300
    hook_reps: int = 60
    prewrite_reps: int = 1000
    history_turns: int = 100
    repo: str | None = None
    package: str = real.PACKAGE
    versions: tuple[str, ...] = real.VERSIONS
    restic: bool = True
    gc: bool | None = None
    tmp: str | None = None
    replay: str | None = None  # a git repository whose history bench/replay.py replays


@dataclass
class Outcome:
    """What one suite produced."""

    suite: str
    params: dict[str, Any]
    results: dict[str, Any]
    figures: list[Figure]
    skipped: str = ""


def _met(value: float, limit: float) -> bool:
    """Whether a ratio meets an at-most target."""
    return value <= limit


# -- session suites (synthetic, real, repo) ------------------------------------------


def _play(
    workload: Workload, tmp: str, cfg: Config, step: Step, with_restic: bool
) -> tuple[SessionRun, dict[str, Any]]:
    run = SessionRun(workload, os.path.join(tmp, workload.name), restic=with_restic)
    tick = step(f"{workload.name}: making the tree", 1)
    run.setup()
    tick()
    run.play(step(f"{workload.name}: {len(run.plans)} turns", len(run.plans)))
    stores = sizes.measure(run)
    depths = [d for d in cfg.depths if d <= len(run.plans)]
    rewound = rewinds.measure(
        run,
        cfg.depths,
        cfg.rewind_reps,
        step(f"{workload.name}: rewinds", cfg.rewind_reps * len(depths)),
    )
    tick = step(f"{workload.name}: git gc --aggressive", 1)
    sizes.gc(run, stores, cfg.gc)
    tick()
    return run, {
        "params": workload.params,
        "info": run.info,
        "timings": run.timings.to_json(),
        "rewind": rewound,
        "store": stores,
    }


def _session_figures(results: dict[str, Any], size_targets: bool) -> list[Figure]:
    figures = []
    for label, r in results.items():
        t = r["timings"]
        files = r["info"]["files"]
        snap, git = t["turn"]["median"], t.get("git", {}).get("median", float("nan"))
        big = files >= BIG_TREE
        figures.append(
            Figure(
                "2",
                f"per-turn checkpoint, {label}",
                seconds(snap),
                f"shadow git commit {seconds(git)}",
                snap / git if git else float("nan"),
                "≤ 0.02x (50x cheaper)" if big else "",
                _met(snap / git, 0.02) if big and git else None,
            )
        )
        for depth, row in r["rewind"]["depths"].items():
            if "git_reset_hard" not in row:
                continue
            figures.append(
                Figure(
                    "3",
                    f"rewind {depth} turn(s), {label}",
                    seconds(row["snapstore"]),
                    f"git reset --hard {seconds(row['git_reset_hard'])}",
                    row["snapstore"] / row["git_reset_hard"],
                    "≤ 1.0x",
                    _met(row["snapstore"] / row["git_reset_hard"], 1.0),
                )
            )
            figures.append(
                Figure(
                    "3",
                    f"rewind {depth} turn(s) vs the floor, {label}",
                    seconds(row["snapstore"]),
                    f"plain copy {seconds(row['plain_copy'])}",
                    row["snapstore"] / row["plain_copy"],
                )
            )
        figures += _store_figures(label, r["store"], size_targets)
        figures.append(
            Figure(
                "5",
                f"rewind correctness, {label}",
                f"{r['rewind']['checks']} checks passed",
                "byte-for-byte",
                float("nan"),
                "all pass",
                r["rewind"]["correct"],
            )
        )
    return figures


def _store_figures(label: str, store: dict[str, Any], targets: bool) -> list[Figure]:
    snap = store["snapstore"]
    figures = [
        Figure(
            "4",
            f"dedup ratio, {label}",
            times(snap["dedup_ratio"]),
            f"raw {size(snap['logical_bytes'])} → {size(snap['stored_bytes'])}",
            snap["dedup_ratio"],
        )
    ]
    if "shadow_git" not in store:
        return figures
    git, ratios = store["shadow_git"], store["ratios"]
    figures.append(
        Figure(
            "4",
            f"store size vs .git before gc, {label}",
            size(snap["disk_bytes"]),
            f".git {size(git['before_gc_bytes'])}",
            ratios["vs_git_before_gc"],
            "≤ 0.3x" if targets else "",
            _met(ratios["vs_git_before_gc"], 0.3) if targets else None,
        )
    )
    if "after_gc_bytes" in git:
        figures.append(
            Figure(
                "4",
                f"store size vs .git after gc --aggressive, {label}",
                size(snap["disk_bytes"]),
                f".git {size(git['after_gc_bytes'])}",
                ratios["vs_git_after_gc"],
                "≤ 1.2x" if targets else "",
                _met(ratios["vs_git_after_gc"], 1.2) if targets else None,
            )
        )
    if "restic" in store:
        figures.append(
            Figure(
                "4",
                f"store size vs restic, {label}",
                size(snap["disk_bytes"]),
                f"restic {size(store['restic']['disk_bytes'])}",
                ratios["vs_restic"],
            )
        )
    return figures


def _session_charts(charts: Charts, suite: str, results: dict[str, Any]) -> None:
    labels = list(results)
    turn = [r["timings"]["turn"]["median"] for r in results.values()]
    git = [r["timings"].get("git", {}).get("median", float("nan")) for r in results.values()]
    charts.bars(
        f"{suite}-checkpoint",
        "Per-turn checkpoint cost (median)",
        labels,
        {"snapstore": turn, "shadow git add -A + commit": git},
        "seconds",
        log=True,
    )
    last = results[labels[-1]]
    depths = list(last["rewind"]["depths"])
    if depths and "git_reset_hard" in last["rewind"]["depths"][depths[0]]:
        rows = [last["rewind"]["depths"][d] for d in depths]
        charts.bars(
            f"{suite}-rewind",
            f"Rewind time, {labels[-1]} (median)",
            [f"{d} turn(s)" for d in depths],
            {
                "snapstore": [r["snapstore"] for r in rows],
                "git reset --hard": [r["git_reset_hard"] for r in rows],
                "plain copy": [r["plain_copy"] for r in rows],
            },
            "seconds",
            log=True,
        )
    store = last["store"]
    if "shadow_git" in store:
        bars = {
            "snapstore": store["snapstore"]["disk_bytes"],
            ".git before gc": store["shadow_git"]["before_gc_bytes"],
            ".git after gc --aggressive": store["shadow_git"].get("after_gc_bytes"),
            "plain copies": store["plain_copy"]["disk_bytes"],
        }
        if "restic" in store:
            bars["restic"] = store["restic"]["disk_bytes"]
        charts.bars(
            f"{suite}-size",
            f"Store size after the session, {labels[-1]}",
            [""],
            {k: [(v or 0) / 2**20] for k, v in bars.items()},
            "MiB",
        )


def _session_suite(
    suite: str,
    workloads: list[Workload],
    cfg: Config,
    step: Step,
    charts: Charts,
    real_workload: bool,
    probe: bool,
) -> Outcome:
    """Play each workload; ``real_workload`` adds restic and the store-size targets."""
    results: dict[str, Any] = {}
    runs = []
    with tempfile.TemporaryDirectory(prefix=f"snapstore-bench-{suite}-", dir=cfg.tmp) as tmp:
        try:
            for workload in workloads:
                run, results_one = _play(workload, tmp, cfg, step, cfg.restic and real_workload)
                runs.append(run)
                label = f"{run.info['files']:,} files" if suite == "synthetic" else workload.name
                results[label] = results_one
            figures = _session_figures(results, real_workload)
            if probe:
                results["probe"] = capture.probe(
                    runs,
                    cfg.probe_rounds,
                    cfg.seed,
                    step("capture latency probe", cfg.probe_rounds),
                )
                figures = _probe_figures(results["probe"]) + figures
        finally:
            for run in runs:
                run.close()
    probe_result = results.pop("probe", None)
    _session_charts(charts, suite, results)
    if probe_result is not None:
        labels = [f"{int(n):,} files" for n in probe_result["sizes"]]
        rows = list(probe_result["sizes"].values())
        charts.bars(
            f"{suite}-capture",
            "Per-write capture latency (median, 10 KiB file)",
            labels,
            {
                "snapstore pre+post_write": [r["write"]["median"] * 1e3 for r in rows],
                "plain copy": [r["copy"]["median"] * 1e3 for r in rows],
            },
            "ms",
        )
        results["probe"] = probe_result
    params = {
        "seed": cfg.seed,
        "turns": cfg.turns,
        "depths": cfg.depths,
        "rewind_reps": cfg.rewind_reps,
        "probe_rounds": cfg.probe_rounds,
        "workloads": [w.params for w in workloads],
    }
    return Outcome(suite, params, results, figures)


def _probe_figures(probe: dict[str, Any]) -> list[Figure]:
    figures = []
    rows = probe["sizes"]
    for files, row in rows.items():
        figures.append(
            Figure(
                "1",
                f"per-write capture, {int(files):,} files",
                seconds(row["write"]["median"]),
                f"plain copy {seconds(row['copy']['median'])}",
                row["ratio_to_copy"],
            )
        )
    smallest, largest = min(rows, key=int), max(rows, key=int)
    if smallest != largest:
        big, small = rows[largest]["write"]["median"], rows[smallest]["write"]["median"]
        figures.append(
            Figure(
                "1",
                f"capture latency, {int(largest):,} vs {int(smallest):,} files",
                seconds(big),
                f"{int(smallest):,} files {seconds(small)}",
                big / small,
                "≤ 1.2x",
                _met(big / small, 1.2),
            )
        )
    return figures


def synthetic(cfg: Config, step: Step, charts: Charts) -> Outcome:
    workloads = [synthetic_workload(n, cfg.turns, cfg.seed) for n in cfg.files]
    return _session_suite("synthetic", workloads, cfg, step, charts, False, True)


def real_suite(cfg: Config, step: Step, charts: Charts) -> Outcome:
    tick = step(f"downloading {cfg.package} sdists", len(cfg.versions))
    try:
        trees = real.fetch(cfg.package, cfg.versions, lambda _label: tick())
    except real.Offline as exc:
        return Outcome("real", {}, {}, [], skipped=f"real workload skipped: {exc}")
    workload = real.real_workload(trees, cfg.package, cfg.versions)
    return _session_suite("real", [workload], cfg, step, charts, True, False)


def repo_suite(cfg: Config, step: Step, charts: Charts) -> Outcome:
    assert cfg.repo is not None
    workload = repo_workload(cfg.repo, cfg.turns, cfg.seed)
    return _session_suite(workload.name, [workload], cfg, step, charts, False, False)


# -- process and in-process latency ----------------------------------------------------


def hook_suite(cfg: Config, step: Step, charts: Charts) -> Outcome:
    result = hook.latency(cfg.hook_reps, step("hook process vs bare import", cfg.hook_reps))
    tick = step("hook import breakdown", 1)
    result["imports"] = hook.import_breakdown(3 if cfg.quick else 7)
    tick()
    h, f = result["hook"], result["floor"]
    figures = [
        Figure(
            "3",
            "hook process wall time (PreToolUse, 10 KiB)",
            seconds(h["median"]),
            f"bare import {seconds(f['median'])}",
            result["ratio"],
            "≤ 1.5x",
            _met(result["ratio"], 1.5),
        )
    ]
    charts.bars(
        "hook",
        "Hook process wall time (median)",
        ["median", "p99"],
        {
            "snapstore hook claude-code": [h["median"] * 1e3, h["p99"] * 1e3],
            "python -c 'import lmdb, blake3, zstandard'": [f["median"] * 1e3, f["p99"] * 1e3],
        },
        "ms",
    )
    return Outcome("hook", {"reps": cfg.hook_reps}, result, figures)


def prewrite_suite(cfg: Config, step: Step, charts: Charts) -> Outcome:
    result = capture.pre_write_latency(
        cfg.prewrite_reps, cfg.seed, step("pre_write latency", cfg.prewrite_reps // 10)
    )
    pre, copy = result["pre_write"], result["plain_copy"]
    figures = [
        Figure(
            "i2",
            "pre_write, 10 KiB file, median",
            seconds(pre["median"]),
            f"plain copy {seconds(copy['median'])}",
            result["ratio_to_copy"],
        ),
        Figure(
            "i2",
            "pre_write, 10 KiB file, p99",
            seconds(pre["p99"]),
            f"plain copy {seconds(copy['p99'])}",
            pre["p99"] / copy["p99"],
        ),
    ]
    return Outcome("prewrite", {"reps": cfg.prewrite_reps, "seed": cfg.seed}, result, figures)


def history_suite(cfg: Config, step: Step, charts: Charts) -> Outcome:
    workload = synthetic_workload(min(cfg.files), cfg.history_turns, cfg.seed)
    with tempfile.TemporaryDirectory(prefix="snapstore-bench-history-", dir=cfg.tmp) as tmp:
        run = SessionRun(workload, os.path.join(tmp, "run"), peers=False)
        run.setup()
        try:
            run.play(step(f"history: {cfg.history_turns} turns", cfg.history_turns))
            result = sizes.history(run)
        finally:
            run.close()
    figures = [
        Figure(
            "i2",
            f"store bytes vs raw bytes, {result['turns']}-turn history",
            size(result["stored_bytes"]),
            f"raw {size(result['logical_bytes'])}",
            result["stored_over_raw"],
        ),
        Figure(
            "i2",
            f"store on disk vs raw bytes, {result['turns']}-turn history",
            size(result["disk_bytes"]),
            f"raw {size(result['logical_bytes'])}",
            result["disk_over_raw"],
        ),
    ]
    return Outcome("history", workload.params, result, figures)


SUITES: dict[str, Callable[[Config, Step, Charts], Outcome]] = {
    "synthetic": synthetic,
    "real": real_suite,
    "hook": hook_suite,
    "prewrite": prewrite_suite,
    "history": history_suite,
    "repo": repo_suite,
    "remote": remote.suite,
}


def run_suite(name: str, cfg: Config, step: Step) -> Outcome:
    """Run one suite and write its JSON and charts into ``cfg.out``."""
    started = time.time()
    charts = Charts(cfg.out)
    outcome = SUITES[name](cfg, step, charts)
    if outcome.skipped:
        report.console.print(f"[yellow]{outcome.skipped}[/]")
        return outcome
    report.write_json(
        cfg.out, outcome.suite, outcome.params, outcome.results, outcome.figures, started
    )
    return outcome
