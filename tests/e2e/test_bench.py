"""The benchmark harness runs end to end, and its correctness checks run and pass.

Only that: timing assertions do not belong in tests. The run is the quick
benchmark, shrunk a little more (a 500-file tree, no ``git gc``) to stay fast.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

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
    assert row["files"] == 2000 and 90 <= row["folders"] <= 100
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


def _history(repo: Path) -> list[dict[str, bytes]]:
    """A repository of six commits on its first-parent line (a merge among them), each
    adding, changing, deleting or making executable a file, or changing a link; returns
    each commit's regular files, oldest first."""
    env = {"GIT_AUTHOR_DATE": "2026-01-01T00:00:00", "GIT_COMMITTER_DATE": "2026-01-01T00:00:00"}

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env=env)

    repo.mkdir()
    git("init", "-q", "-b", "main")
    git("config", "user.name", "t")
    git("config", "user.email", "t@t")
    steps = [
        {"a.txt": b"one\n", "src/b.py": b"print(1)\n", "keep.md": b"kept\n"}
        | {f"docs/page{i}.md": f"page {i}\n".encode() for i in range(8)},  # never touched
        {"a.txt": b"one\ntwo\n", "new/deep/c.txt": b"c\n"},
        {"src/b.py": None, "run.sh": b"#!/bin/sh\n"},
        {"link": "a.txt"},
        {"link": "keep.md", "a.txt": b"three\n"},
        {"new/deep/c.txt": None, "d.txt": b"d\n"},
    ]
    trees = []
    for n, step in enumerate(steps):
        if n == 3:  # a merge on the first-parent line: its first parent's diff is the turn
            git("checkout", "-q", "-b", "side")
        for rel, data in step.items():
            path = repo / rel
            if data is None:
                path.unlink()
            elif isinstance(data, str):
                path.unlink(missing_ok=True)
                path.symlink_to(data)
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data)
        if "run.sh" in step:
            (repo / "run.sh").chmod(0o755)
        git("add", "-A")
        git("commit", "-q", "-m", f"step {n}")
        if n == 3:
            git("checkout", "-q", "main")
            git("merge", "-q", "--no-ff", "-m", "merge side", "side")
        files = {}
        for path in sorted(repo.rglob("*")):
            rel = path.relative_to(repo).as_posix()
            if rel.startswith(".git") or path.is_symlink() or not path.is_file():
                continue
            files[rel] = path.read_bytes() + (b"+x" if path.stat().st_mode & 0o100 else b"")
        trees.append(files)
    return trees


def test_a_repositorys_history_replays_as_turns_and_the_scale_figures_run_on_it(
    tmp_path: Path,
) -> None:
    """bench/replay.py's turns take the base, commit by commit, to each commit's files
    (links left as they are); ``bench scale-replay`` runs the scale figures on them, every
    rewind checked byte for byte."""
    trees = _history(tmp_path / "repo")
    sys.path.insert(0, str(ROOT))
    try:
        from bench.replay import replay_workload
        from bench.session import apply_edit
    finally:
        sys.path.remove(str(ROOT))
    workload = replay_workload(str(tmp_path / "repo" / ".git"), 4)
    root = tmp_path / "tree"
    workload.materialise(str(root))
    plans = workload.plan(str(root), {})
    assert [p.prompt for p in plans] == ["step 2", "merge side", "step 4", "step 5"]

    def files() -> dict[str, bytes]:
        return {
            p.relative_to(root).as_posix(): p.read_bytes()
            + (b"+x" if p.stat().st_mode & 0o100 else b"")
            for p in sorted(root.rglob("*"))
            if p.is_file() and not p.is_symlink()
        }

    assert files() == trees[1]
    for plan, tree in zip(plans, trees[2:], strict=True):
        for edit in plan.agent:
            apply_edit(str(root), edit)
        assert files() == tree
    out = tmp_path / "results"
    args = ["--replay", str(tmp_path / "repo" / ".git"), "--quick", "--turns", "4"]
    args += ["--depths", "1", "2", "--no-progress", "--out", str(out), "--tmp", str(tmp_path)]
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "scale-replay", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    (row,) = json.loads((out / "scale-replay.json").read_text())["results"]["sizes"]
    assert row["workload"]["workload"] == "replay" and row["files"] == len(trees[1])
    assert row["rewind"]["checks"] == 2 * 2 * row["rewind"]["reps"]
    table = (out / "scale-replay.md").read_text()
    assert "| figure | repo (12 files) |" in table and "`rewind 1 --yes`, a process" in table


def _bench_modules() -> tuple[Any, Any]:
    sys.path.insert(0, str(ROOT))
    try:
        from bench import peers, tree
    finally:
        sys.path.remove(str(ROOT))
    return peers, tree


def test_the_shadows_commit_from_changed_paths_is_the_commit_of_add_all(tmp_path: Path) -> None:
    """The scale suite's untimed checkpoints (``commit_paths``) commit the tree that
    ``git add -A && git commit`` commits: deletions, a mode change, a new link, a file that
    became a folder, and a path made and deleted between the two."""
    peers, _ = _bench_modules()
    ws = tmp_path / "ws"
    (ws / "d").mkdir(parents=True)
    for rel in ("a", "d/b", "d/c"):
        (ws / rel).write_text(rel)
    shadows = [peers.ShadowGit(str(ws), str(tmp_path / name), (".snapstore",)) for name in "AB"]
    for shadow in shadows:
        shadow.checkpoint("base")
    (ws / "a").unlink()
    (ws / "d" / "b").chmod(0o755)
    (ws / "d" / "l").symlink_to("b")
    (ws / "d" / "c").unlink()
    (ws / "d" / "c").mkdir()
    (ws / "d" / "c" / "x").write_text("x")
    (ws / "new").write_text("new")
    shadows[0].checkpoint("turn")
    shadows[1].commit_paths("turn", {"a", "d/b", "d/l", "d/c", "d/c/x", "new", "gone"})
    trees = [shadow.git("rev-parse", "HEAD^{tree}") for shadow in shadows]
    assert trees[0] == trees[1]
    assert shadows[1].git("rev-list", "--count", "HEAD").strip() == "2"
    assert shadows[1].git("status", "--porcelain") == ""


def test_the_tree_checks_catch_a_wrong_path_and_removal_stays_inside(tmp_path: Path) -> None:
    """A check of the touched paths only still finds wrong bytes, a missing file and one that
    must not exist; ``remove`` deletes a tree without following its links out of it."""
    _, tree = _bench_modules()
    root = tmp_path / "ws"
    (root / "d" / "e").mkdir(parents=True)
    for rel in ("a", "d/b", "d/e/c"):
        (root / rel).write_text(rel)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("keep")
    (root / "d" / "out").symlink_to(outside)
    checked = tree.Tree(str(root), tree.scan_base(str(root), frozenset()), frozenset())
    good = {"a": tree.Version.of(tree.FILE, b"a", 0o644), "gone": None}
    checked.check(good, "as made", whole=False)
    (root / "a").write_text("A")
    (root / "gone").write_text("here")
    (root / "d" / "b").unlink()
    overlay = {**good, "d/b": checked.base["d/b"]}
    with pytest.raises(tree.CorrectnessError) as raised:
        checked.check(overlay, "broken", whole=False)
    found = str(raised.value)
    assert "(3 problem(s))" in found
    assert all(
        f"{rel}: {what}" in found
        for rel, what in (
            ("a", "wrong bytes"),
            ("gone", "present but should not exist"),
            ("d/b", "missing"),
        )
    )
    tree.remove(str(root))
    assert not root.exists() and (outside / "keep").read_text() == "keep"
