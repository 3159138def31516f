"""Workloads: a base tree and a list of turns to replay on it, deterministic from a seed.

- ``synthetic``: a generated tree (:mod:`bench.synthetic`) and an agent session.
- ``real``: successive releases of a real project (:mod:`bench.real`).
- ``repo``: a copy of the user's tree and an agent session on it.

An *agent session* works in a few places per turn: it edits some files there
(replacing, inserting and deleting lines), sometimes creates a file (now and
then in a new folder), sometimes deletes one, and comes back to files it edited
before. Between turns the user edits files of their own; the agent never
touches those, so a rewind that keeps the user's work has one right answer.
"""

from __future__ import annotations

import os
import random
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from . import synthetic
from .synthetic import WORDS, Text
from .tree import FILE, Version, scan_base

#: Never copied from a user's tree: another store, and git's own folder (shadow git has its own).
SKIP = frozenset({".snapstore", ".git"})
MAX_EDIT_SIZE = 256 * 1024


@dataclass
class Edit:
    """One write: the path's new bytes and mode, or ``None`` to delete it."""

    path: str
    data: bytes | None
    mode: int = 0o644

    @property
    def version(self) -> Version | None:
        return None if self.data is None else Version.of(FILE, self.data, self.mode)


@dataclass
class TurnPlan:
    """One agent turn, and the user's edits that follow it (before the next turn)."""

    prompt: str
    agent: list[Edit] = field(default_factory=list)
    user: list[Edit] = field(default_factory=list)


@dataclass
class Workload:
    """A recipe: ``materialise`` writes the base tree, ``plan`` lists the turns."""

    name: str
    params: dict[str, Any]
    materialise: Callable[[str], dict[str, Version]]
    plan: Callable[[str, dict[str, Version]], list[TurnPlan]]


def synthetic_workload(files: int, turns: int, seed: int) -> Workload:
    return Workload(
        f"synthetic-{files}",
        {"workload": "synthetic", "files": files, "turns": turns, "seed": seed},
        lambda root: synthetic.materialise(root, files, seed),
        lambda root, base: plan_session(root, base, turns, seed),
    )


def repo_workload(path: str, turns: int, seed: int) -> Workload:
    """The user's tree, copied first: the original is only ever read."""
    source = os.path.realpath(path)
    if not os.path.isdir(source):
        raise SystemExit(f"bench: --repo {path} is not a folder")

    def materialise(root: str) -> dict[str, Version]:
        shutil.copytree(
            source,
            root,
            symlinks=True,
            dirs_exist_ok=True,
            ignore=lambda d, names: [n for n in names if n in SKIP],
        )
        return scan_base(root, SKIP)

    name = os.path.basename(source.rstrip(os.sep)) or "repo"
    return Workload(
        f"repo-{name}",
        {"workload": "repo", "repo": source, "turns": turns, "seed": seed},
        materialise,
        lambda root, base: plan_session(root, base, turns, seed),
    )


# -- the agent session -------------------------------------------------------------


def mutate(data: bytes, text: Text) -> bytes:
    """One to three line-level edits: replace, insert or delete a few lines."""
    rng = text.rng
    lines = data.splitlines(keepends=True) or [b"\n"]
    for _ in range(rng.randint(1, 3)):
        at = rng.randrange(len(lines) + 1)
        op = rng.randrange(3)
        if op == 0:
            lines[at : at + rng.randint(1, 5)] = text.lines(rng.randint(1, 5))
        elif op == 1:
            lines[at:at] = text.lines(rng.randint(1, 20))
        elif len(lines) > 6:
            del lines[at : at + rng.randint(1, 5)]
    return b"".join(lines)


class _Session:
    """The planner's view of the tree: what each path holds now, and who may touch it."""

    def __init__(self, root: str, base: dict[str, Version], seed: int):
        self.root = root
        self.rng = random.Random(f"session:{seed}")
        self.text = Text(self.rng)
        self.current: dict[str, tuple[bytes, int] | None] = {}
        by_folder: dict[str, list[str]] = {}
        for rel in sorted(base):
            if base[rel].kind == FILE and self._is_text(rel):
                by_folder.setdefault(os.path.dirname(rel), []).append(rel)
        self.folders = sorted(by_folder)
        if not self.folders:
            raise SystemExit("bench: the tree has no text file an agent could edit")
        everything = [rel for folder in self.folders for rel in by_folder[folder]]
        self.user_files = set(self.rng.sample(everything, max(1, min(50, len(everything) // 50))))
        self.by_folder = {
            f: [r for r in rels if r not in self.user_files] for f, rels in by_folder.items()
        }
        self.recent: list[str] = []

    def _is_text(self, rel: str) -> bool:
        path = os.path.join(self.root, rel)
        if os.path.getsize(path) > MAX_EDIT_SIZE:
            return False
        if rel.endswith(synthetic.BINARY):
            return False
        with open(path, "rb") as handle:
            return b"\0" not in handle.read(8192)

    def content(self, rel: str) -> tuple[bytes, int] | None:
        if rel not in self.current:
            path = os.path.join(self.root, rel)
            with open(path, "rb") as handle:
                self.current[rel] = (handle.read(), os.stat(path).st_mode & 0o777)
        return self.current[rel]

    def edit(self, rel: str) -> Edit:
        held = self.content(rel)
        data, mode = held if held is not None else (b"", 0o644)
        edit = Edit(rel, mutate(data, self.text), mode)
        self.current[rel] = (edit.data or b"", mode)
        return edit

    def create(self, folder: str) -> Edit:
        if self.rng.random() < 0.3:
            folder = os.path.join(folder, f"new_{self.rng.choice(WORDS)}_{len(self.current)}")
        rel = os.path.join(folder, f"added_{len(self.current)}.py")
        edit = Edit(rel, b"".join(self.text.lines(self.rng.randint(20, 200))))
        self.current[rel] = (edit.data or b"", 0o644)
        self.by_folder.setdefault(folder, []).append(rel)
        return edit

    def delete(self, rel: str) -> Edit:
        self.current[rel] = None
        return Edit(rel, None)

    def agent_turn(self, n: int) -> TurnPlan:
        rng = self.rng
        turn = TurnPlan(f"turn {n}: {' '.join(rng.choices(WORDS, k=6))}")
        touched: set[str] = set()
        for folder in rng.sample(self.folders, min(len(self.folders), rng.choice((1, 1, 2, 3)))):
            live = [r for r in self.by_folder[folder] if self.current.get(r, b"") is not None]
            for rel in rng.sample(live, min(len(live), rng.randint(1, 3))):
                turn.agent.append(self.edit(rel))
                touched.add(rel)
            if rng.random() < 0.3:
                turn.agent.append(self.create(folder))
            if live and rng.random() < 0.1:
                victim = rng.choice(live)
                if victim not in touched:
                    turn.agent.append(self.delete(victim))
                    touched.add(victim)
        again = [r for r in self.recent if r not in touched and self.current.get(r) is not None]
        if again and rng.random() < 0.3:
            turn.agent.append(self.edit(rng.choice(again)))
        self.recent = ([e.path for e in turn.agent if e.data is not None] + self.recent)[:20]
        if rng.random() < 0.5:
            for rel in rng.sample(sorted(self.user_files), min(2, len(self.user_files))):
                turn.user.append(self.edit(rel))
        return turn


def plan_session(root: str, base: dict[str, Version], turns: int, seed: int) -> list[TurnPlan]:
    """An agent session of ``turns`` turns over the tree at ``root`` (read, not changed)."""
    session = _Session(root, base, seed)
    return [session.agent_turn(n) for n in range(turns)]
