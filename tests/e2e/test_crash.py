"""Crash injection: SIGKILL at seeded moments of capture, rewind, undo and gc.

A child process (tests/support/crash_child.py) runs a seeded scenario; it is killed
either at a fault point of the library (chosen through ``SNAPSTORE_FAULT``,
which only the child reads) or after a seeded delay. After every kill:

- fsck passes on the store as the crash left it;
- every workspace file holds its complete content from before the interrupted
  operation or its complete content from after it;
- finishing the operation (the next child, which resumes first as the CLI does,
  or ``snapstore rewind --resume`` itself) gives the tree of an uninterrupted
  reference run, byte for byte.

At least 300 kills run by default; ``--slow`` runs 1500.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from snapstore import Store
from snapstore.core.fsio import TEMP_NAME

from ..support import hermetic_env, snapshot, snapstore_bin
from ..support.crash_child import Runner

REPO = Path(__file__).resolve().parents[2]
POINTS = (
    "capture.commit",
    "capture.turn_started",
    "journal.journaled",
    "journal.wrote_path",
    "journal.before_finish",
    "fsio.before_rename",
    "gc.pruned",
    "gc.rebased",
    "db.compact_copied",
    "db.compact_swapped",
)
KILLS_PER_SCENARIO = 40

Tree = dict[str, tuple[str, bytes, int]]


class Torture:
    """One scenario under repeated SIGKILL, checked against its reference run."""

    def __init__(self, base: Path, seed: int, rng: random.Random):
        self.seed, self.rng = seed, rng
        self.work = base / f"seed{seed}"
        self.ws = self.work / "ws"
        self.hashes: list[str] = []
        self.trees: list[Tree] = []
        reference = Runner(str(base / f"ref{seed}"), seed)
        reference.run(
            lambda _, digest: (
                self.hashes.append(digest),
                self.trees.append(snapshot(reference.ws, dirs=True)),
            )
        )
        self.kills = 0
        self.cli_resumes = 0

    def run(self, budget: int) -> None:
        while True:
            env = {k: v for k, v in os.environ.items() if k != "SNAPSTORE_FAULT"}
            delay = None
            if self.kills < budget:
                if self.rng.random() < 0.7:
                    env["SNAPSTORE_FAULT"] = (
                        f"{self.rng.choice(POINTS)}:1,hit:{self.rng.randint(1, 25)}"
                    )
                else:
                    delay = self.rng.uniform(0.15, 0.6)
            child = subprocess.Popen(
                [sys.executable, "-m", "tests.support.crash_child", str(self.work), str(self.seed)],
                cwd=REPO,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            try:
                _, err = child.communicate(timeout=delay if delay is not None else 120)
            except subprocess.TimeoutExpired:
                child.kill()
                _, err = child.communicate()
            if child.returncode == -signal.SIGKILL:
                self.kills += 1
                self.check_crash()
                continue
            assert child.returncode == 0, err.decode()
            if self.finished():
                break
        assert snapshot(self.ws, dirs=True) == self.trees[-1]

    def progress(self) -> list[str]:
        path = self.work / "progress"
        return path.read_text().splitlines() if path.exists() else []

    def finished(self) -> bool:
        lines = self.progress()
        return bool(lines) and lines[-1].startswith(f"end {len(self.trees) - 1} ")

    def check_crash(self) -> None:
        lines = self.progress()
        for line in lines:
            if line.startswith("end "):
                _, index, digest = line.split()
                assert digest == self.hashes[int(index)], f"op {index} ended on another tree"
        last = lines[-1] if lines else "end -1"
        index = int(last.split()[1])
        old = self.trees[index - 1] if index > 0 else {}
        if last.startswith("end "):
            tree = {
                p: v
                for p, v in snapshot(self.ws, dirs=True).items()
                if not p.startswith(".snapstore.new-")
            }  # a store being created
            assert tree == (self.trees[index] if index >= 0 else {})
        else:
            new = self.trees[index]
            for path, got in _files(snapshot(self.ws)).items():
                assert got in (_files(old).get(path), _files(new).get(path)), (
                    f"{path} is neither its old nor its new content after a crash in op {index}"
                )
            for path in set(_files(old)) & set(_files(new)):
                assert (self.ws / path).exists() or (self.ws / path).is_symlink(), path
        if not (self.ws / ".snapstore").exists():
            return  # killed while creating the store: there is nothing yet, not half of it
        with Store.open(self.ws) as store:
            report = store.fsck()
            assert report.ok, report
            pending = store.unfinished_operations()
        if pending and last.startswith("begin ") and self.rng.random() < 0.3:
            self.resume_with_cli(index)

    def resume_with_cli(self, index: int) -> None:
        """Finish the interrupted rewind the way a person would, and check the result."""
        env = hermetic_env()
        resumed = subprocess.run(
            [*snapstore_bin(), "--json", "rewind", "--resume"],
            cwd=self.ws,
            env=env,
            capture_output=True,
            text=True,
        )
        # exit 1 when what it finished left a path in conflict (docs/cli.md), as the rewind
        # itself would have
        left = any(r["errors"] for r in json.loads(resumed.stdout))
        assert resumed.returncode == (1 if left else 0), resumed.stderr
        assert snapshot(self.ws, dirs=True) == self.trees[index]
        fsck = subprocess.run(
            [*snapstore_bin(), "fsck"], cwd=self.ws, env=env, capture_output=True, text=True
        )
        assert fsck.returncode == 0, fsck.stderr
        self.cli_resumes += 1


def _files(tree: Tree) -> Tree:
    """The tree without the temp files an interrupted atomic write may leave."""
    return {
        p: v
        for p, v in tree.items()
        if not TEMP_NAME.fullmatch(os.path.basename(p)) and not p.startswith(".snapstore.new-")
    }


@pytest.mark.long(75)
def test_sigkill_at_random_moments_loses_nothing(tmp_path: Path, slow: bool) -> None:
    budget = 1500 if slow else 300
    tortures: list[Torture] = []

    def scenario(seed: int) -> Torture:
        torture = Torture(tmp_path, seed, random.Random(seed))
        torture.run(KILLS_PER_SCENARIO)
        return torture

    def killed_at() -> Counter[str]:
        where: Counter[str] = Counter()
        for torture in tortures:
            record = torture.work / "faults"
            if record.exists():
                where.update(record.read_text().split())
        return where

    # Kills land where the children's timing puts them, so a rare point (a gc that prunes)
    # can be missed by the budget's kills: go on until every point was hit, up to 4x it.
    with ThreadPoolExecutor(2) as pool:  # two children at a time: the machine has two cores
        seeds = iter(range(10_000))
        while (kills := sum(t.kills for t in tortures)) < budget or (
            not set(POINTS) <= set(killed_at()) and kills < 4 * budget
        ):
            tortures += pool.map(scenario, [next(seeds), next(seeds)])
    where = killed_at()
    print(
        f"\ncrash injections: {kills} run and survived over {len(tortures)} scenarios; at "
        f"fault points: {dict(where)}, the rest at random moments; "
        f"{sum(t.cli_resumes for t in tortures)} finished by `snapstore rewind --resume`"
    )
    assert kills >= budget
    assert set(POINTS) <= set(where), f"never killed at {set(POINTS) - set(where)}"
    assert any(t.cli_resumes for t in tortures)
