"""Replaying a workload: snapstore and the peers in lockstep on one workspace.

Every turn, in order:

1. the shadow git checkpoint (``git add -A && git commit``), taken before the
   turn, as the agents that use one do, so that commit ``t`` is the state a
   rewind of turn ``t`` must restore;
2. snapstore's ``begin_turn``;
3. each agent write: the plain-copy floor saves the file, snapstore's
   ``pre_write`` runs, the bytes are written, snapstore's ``post_write`` runs;
4. snapstore's ``end_turn``;
5. the user's own edits (seen by no tool).

Only the tools' own calls are timed. The run keeps the expected state of every
touched path before each turn, which the rewind checks compare against.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from snapstore import Store

from .measure import Summary, timed
from .peers import PlainCopy, Restic, ShadowGit
from .tree import CorrectnessError, State, Tree, Version
from .workloads import Edit, TurnPlan, Workload

SESSION = "bench"
STORE_DIR = ".snapstore"


@dataclass
class Timings:
    """Samples (seconds) gathered while the session played."""

    pre: list[float] = field(default_factory=list)
    post: list[float] = field(default_factory=list)
    write: list[float] = field(default_factory=list)  # pre + post of one write
    copy: list[float] = field(default_factory=list)  # the floor's save of one write
    turn: list[float] = field(default_factory=list)  # snapstore: begin + writes + end
    git: list[float] = field(default_factory=list)  # shadow git: add -A + commit
    copy_turn: list[float] = field(default_factory=list)
    restic: list[float] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            name: Summary.of(samples).to_json() for name, samples in vars(self).items() if samples
        }


def apply_edit(root: str, edit: Edit) -> None:
    """What an agent's (or the user's) write does to the disk."""
    path = os.path.join(root, edit.path)
    if edit.data is None:
        os.unlink(path)
        return
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(edit.data)
    os.chmod(path, edit.mode)


class SessionRun:
    """One workload in one temporary folder: the workspace, the store and every peer."""

    def __init__(
        self,
        workload: Workload,
        workdir: str,
        *,
        peers: bool = True,
        restic: bool = False,
        init: Callable[[SessionRun], Store] | None = None,
        skip: frozenset[str] = frozenset({STORE_DIR}),
        timed_checkpoints: int | None = None,
    ):
        """``init`` makes and opens the store (default: ``Store.init`` in this process); it
        runs once the peers exist, so it may set them up first. ``skip``: the top-level names
        the tree checks leave out. ``timed_checkpoints``: how many of the shadow's checkpoints
        after the first are ``git add -A && git commit`` and timed (default: all); the others
        commit the same tree from the paths the session changed (:meth:`ShadowGit.commit_paths`),
        as a million-file tree would otherwise spend minutes of the run on untimed walks."""
        self.workload = workload
        self.init = init or (lambda run: Store.init(run.root))
        self.skip = skip
        self.timed_checkpoints = timed_checkpoints
        self.changed: set[str] = set()  # paths written since the shadow's last checkpoint
        self.workdir = workdir
        self.root = os.path.join(workdir, "ws")
        self.with_peers = peers
        self.with_restic = restic and peers and Restic.available()
        self.timings = Timings()
        self.info: dict[str, Any] = {}
        self.states: list[State] = []  # touched paths before each turn
        self.final: State = {}
        self.final_edits: dict[str, Edit] = {}
        self.agent_paths: set[str] = set()
        self.commits: list[str] = []
        self.head_commit = ""
        self.plans: list[TurnPlan] = []

    def setup(self) -> None:
        os.makedirs(self.root)
        seconds, base = timed(lambda: self.workload.materialise(self.root))
        self.info.update(
            files=len(base), tree_bytes=_tree_bytes(self.root, base), materialise_s=seconds
        )
        self.plans = self.workload.plan(self.root, base)
        self.tree = Tree(self.root, base, self.skip)
        if self.with_peers:
            self.git = ShadowGit(self.root, os.path.join(self.workdir, "git"), (STORE_DIR,))
            self.copy = PlainCopy(self.root, os.path.join(self.workdir, "copy"))
        if self.with_restic:
            self.restic = Restic(self.root, os.path.join(self.workdir, "restic"), (STORE_DIR,))
        seconds, self.store = timed(lambda: self.init(self))
        self.info["snapstore_init_s"] = seconds
        touched = {e.path for plan in self.plans for e in plan.agent + plan.user}
        self.agent_paths = {e.path for plan in self.plans for e in plan.agent}
        self.final = {rel: base.get(rel) for rel in touched}

    def play(self, tick: Callable[[], None] | None = None) -> None:
        """Replay every turn (see the module docstring), then checkpoint the final state."""
        for n, plan in enumerate(self.plans):
            self.states.append(dict(self.final))
            if self.with_peers:
                self._git_checkpoint(f"before turn {n}", initial=n == 0)
            if self.with_restic:
                self.timings.restic.append(timed(self.restic.snapshot)[0])
            self._agent_turn(n, plan)
            for edit in plan.user:
                self._apply(edit)
            if tick:
                tick()
        if self.with_peers:
            self._git_checkpoint("final", initial=False)
            self.head_commit = self.git.head()
        if self.with_restic:
            self.timings.restic.append(timed(self.restic.snapshot)[0])

    def _git_checkpoint(self, message: str, initial: bool) -> None:
        limit = self.timed_checkpoints
        if initial or limit is None or len(self.timings.git) < limit:
            seconds, _ = timed(lambda: self.git.checkpoint(message))
            if initial:
                self.info.update(git_initial_commit_s=seconds, git_initial_bytes=self.git.size())
            else:
                self.timings.git.append(seconds)
        else:
            self.git.commit_paths(message, self.changed)
            if message == "final" and self.git.git("status", "--porcelain"):
                raise CorrectnessError("the shadow's commits from changed paths missed a change")
        self.changed.clear()
        if message != "final":
            self.commits.append(self.git.head())

    def _agent_turn(self, n: int, plan: TurnPlan) -> None:
        t = self.timings
        total, _ = timed(lambda: self.store.begin_turn(SESSION, plan.prompt))
        copied = 0.0
        for edit in plan.agent:
            if self.with_peers:
                seconds, _ = timed(lambda e=edit: self.copy.save(n, e.path))
                t.copy.append(seconds)
                copied += seconds
            pre, _ = timed(lambda e=edit: self.store.pre_write([e.path], "Write", SESSION))
            self._apply(edit)
            post, _ = timed(lambda e=edit: self.store.post_write([e.path], SESSION))
            t.pre.append(pre)
            t.post.append(post)
            t.write.append(pre + post)
            total += pre + post
        total += timed(lambda: self.store.end_turn(SESSION))[0]
        t.turn.append(total)
        if self.with_peers:
            t.copy_turn.append(copied)

    def _apply(self, edit: Edit) -> None:
        apply_edit(self.root, edit)
        self.changed.add(edit.path)
        self.final[edit.path] = edit.version
        self.final_edits[edit.path] = edit

    def rewound_state(self, first: int) -> State:
        """What a rewind of turn ``first`` and every later turn must leave: the agent's
        paths as they were before ``first``, the user's edits kept."""
        before = self.states[first]
        return {rel: before[rel] if rel in self.agent_paths else v for rel, v in self.final.items()}

    def restore_final(self) -> None:
        """Put every touched path back to its final state (untimed, between measurements)."""
        for rel, version in self.final.items():
            path = os.path.join(self.root, rel)
            if version is None:
                if os.path.lexists(path):
                    os.unlink(path)
            elif rel in self.final_edits:
                apply_edit(self.root, self.final_edits[rel])

    def close(self) -> None:
        self.store.close()


def _tree_bytes(root: str, base: dict[str, Version]) -> int:
    return sum(os.lstat(os.path.join(root, rel)).st_size for rel in base)
