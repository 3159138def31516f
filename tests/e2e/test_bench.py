"""The benchmark harness runs end to end, and its correctness checks run and pass.

Only that: timing assertions do not belong in tests. The run is the quick
benchmark, shrunk a little more (a 500-file tree, no ``git gc``) to stay fast.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_quick_benchmark_runs_and_restores_the_right_bytes(tmp_path: Path) -> None:
    out = tmp_path / "results"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench",
            "--quick",
            "--no-progress",
            "--no-gc",
            "--files",
            "500",
            "--hook-reps",
            "4",
            "--out",
            str(out),
            "--tmp",
            str(tmp_path),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]

    synthetic = json.loads((out / "synthetic.json").read_text())
    (session,) = (v for k, v in synthetic["results"].items() if k != "probe")
    assert session["rewind"]["correct"] is True
    # every depth: snapstore rewind + undo, git reset + back, plain copy + back
    assert session["rewind"]["checks"] == 6 * len(session["rewind"]["depths"]) > 0
    assert synthetic["machine"]["versions"]["snapstore"]

    hook = json.loads((out / "hook.json").read_text())
    assert hook["results"]["captured"] == hook["results"]["reps"] == 4
    history = json.loads((out / "history.json").read_text())
    assert history["results"]["turns"] == 100
    assert history["results"]["stored_bytes"] > 0
    assert json.loads((out / "prewrite.json").read_text())["results"]["pre_write"]["n"] > 0
    assert (out / "figures.md").read_text().count("\n") > 5


def test_quick_scale_benchmark_checks_its_rewinds_and_measures_the_daemon(tmp_path: Path) -> None:
    """``bench scale --quick`` (shrunk from 100k to 2,000 files to stay fast): the rewinds are
    checked byte for byte, ``init`` runs on a clean git repository, the daemon watches every
    folder, and the figures table and JSON are written, with ``init`` storing every file
    (``.git`` moved aside) beside the git-backed baseline, which stores far less."""
    out = tmp_path / "results"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench",
            "scale",
            "--quick",
            "--files",
            "2000",
            "--no-progress",
            "--out",
            str(out),
            "--tmp",
            str(tmp_path),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    scale = json.loads((out / "scale.json").read_text())
    (row,) = scale["results"]["sizes"]
    assert row["files"] == 2000 and row["folders"] == 100
    rewind = row["rewind"]
    assert set(rewind) >= {"1", "10"}
    assert rewind["checks"] == 2 * 2 * rewind["reps"]  # a rewind and its undo, per depth
    init = row["init"]
    assert init["snapstore"]["store_bytes"] > 0 and init["snapstore"]["peak_rss"] > 0
    assert init["stored"]["store_bytes"] > 2 * init["snapstore"]["store_bytes"]
    daemon = row["shell"]["daemon_process"]
    assert daemon["inotify_watches"] >= row["folders"]
    assert daemon["rss_bytes"] > 0 and daemon["max_user_watches"] > 0
    table = (out / "scale.md").read_text()
    assert "`rewind 10 --yes`, a process" in table and "storing every file" in table
    assert (out / "figures.md").read_text().count("\n") > 10
    assert (tmp_path / "results").exists() and not list(tmp_path.glob("snapstore-bench-scale-*"))


def test_the_conversation_benchmark_checks_what_each_mode_did(tmp_path: Path) -> None:
    """bench.conversation refuses a figure of a rewind that did not do its work: --mode both
    must grow the transcript, --mode code must leave it, undo must put it back."""
    args = ["--rounds", "2", "--pad", "20", "--out", str(tmp_path)]
    proc = subprocess.run(
        [sys.executable, "-m", "bench.conversation", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    results = json.loads((tmp_path / "conversation.json").read_text())["results"]
    assert [r["agent"] for r in results] == ["claude-code", "codex", "gemini-cli", "qwen-code"]
    assert all(len(r["raw"]["both"]) == len(r["raw"]["code"]) == 2 for r in results)


def test_the_git_baseline_benchmark_references_the_clean_files(tmp_path: Path) -> None:
    """bench.git_baseline's quick run: the baseline by reference reads only what git cannot
    vouch for (the tree's symlinks), the other stores every file, and the figures say so."""
    proc = subprocess.run(
        [sys.executable, "-m", "bench.git_baseline", "--quick", "--out", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    results = json.loads((tmp_path / "git-baseline.json").read_text())["results"]
    refs, stored = results["referenced"], results["stored"]
    assert refs["referenced"] + refs["read"] == results["files"] == stored["read"]
    assert refs["read"] < results["files"] // 10
    assert refs["live_bytes"] < stored["live_bytes"]
