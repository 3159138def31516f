"""Rewind time and rewind correctness (figures 3 and 5).

For each depth N (1, 10, 50 turns), on the workspace as the session left it:

- snapstore: ``Store.rewind(N)`` (in-process), then ``undo`` back;
- shadow git: ``git reset --hard <commit before the Nth newest turn>``, then
  back to the final commit;
- plain copy: copy back each file's oldest saved bytes, then back.

After every step the tree is checked byte for byte (:meth:`bench.tree.Tree.check`).
snapstore must take back the agent's turns and keep the user's later edits;
``git reset --hard`` restores the old commit whole, so it must match that and
the user's edits it discards are counted. Repetitions interleave the three.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

from .measure import timed
from .session import SESSION, SessionRun
from .tree import CorrectnessError


def _snapstore(run: SessionRun, depth: int, first: int) -> float:
    seconds, result = timed(lambda: run.store.rewind(depth, SESSION))
    if not result.ok or len(result.turns_reverted) != depth:
        raise CorrectnessError(
            f"snapstore rewind {depth}: conflicts {result.conflicts}, "
            f"errors {result.errors}, reverted {len(result.turns_reverted)}"
        )
    run.tree.check(run.rewound_state(first), f"snapstore rewind of {depth} turn(s)")
    undone = run.store.undo(session=SESSION)
    if not undone.ok:
        raise CorrectnessError(
            f"snapstore undo after rewind {depth}: {undone.conflicts} {undone.errors}"
        )
    run.tree.check(run.final, f"snapstore undo of the rewind of {depth} turn(s)")
    return seconds


def _git(run: SessionRun, depth: int, first: int) -> float:
    seconds, _ = timed(lambda: run.git.reset_hard(run.commits[first]))
    run.tree.check(run.states[first], f"git reset --hard, {depth} turn(s) back")
    run.git.reset_hard(run.head_commit)
    run.tree.check(run.final, f"git reset --hard back to the final commit ({depth})")
    return seconds


def _copy(run: SessionRun, depth: int, first: int) -> float:
    seconds, _ = timed(lambda: run.copy.restore(first))
    run.tree.check(run.rewound_state(first), f"plain copy restore of {depth} turn(s)")
    run.restore_final()
    run.tree.check(run.final, f"plain copy back to the final state ({depth})")
    return seconds


PEERS: dict[str, Callable[[SessionRun, int, int], float]] = {
    "snapstore": _snapstore,
    "git_reset_hard": _git,
    "plain_copy": _copy,
}


def measure(
    run: SessionRun, depths: list[int], reps: int, tick: Callable[[], None] | None = None
) -> dict[str, Any]:
    """Median rewind seconds per depth and tool, every step checked for correctness."""
    turns = len(run.plans)
    usable = [d for d in depths if d <= turns]
    samples: dict[int, dict[str, list[float]]] = {d: {name: [] for name in PEERS} for d in usable}
    checks_before = run.tree.checks
    for _ in range(reps):
        for depth in usable:
            first = turns - depth
            for name, step in PEERS.items():
                if name == "snapstore" or run.with_peers:
                    samples[depth][name].append(step(run, depth, first))
            if tick:
                tick()
    out: dict[str, Any] = {"depths": {}, "skipped_depths": [d for d in depths if d > turns]}
    for depth in usable:
        first = turns - depth
        row = {name: statistics.median(s) for name, s in samples[depth].items() if s}
        row["files"] = sum(
            1 for rel in run.agent_paths if run.states[first].get(rel) != run.final.get(rel)
        )
        row["user_edits_lost_by_git"] = sum(
            1
            for rel, v in run.final.items()
            if rel not in run.agent_paths and run.states[first].get(rel) != v
        )
        out["depths"][str(depth)] = row
    out["checks"] = run.tree.checks - checks_before
    out["correct"] = True
    return out
