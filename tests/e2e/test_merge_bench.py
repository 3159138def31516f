"""bench/merge.py runs and its correctness columns work (no timings asserted here)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_merge_bench_cases_run_and_agree_with_git(tmp_path: Path) -> None:
    from bench import merge as bench

    # 800 lines: small enough for the diff to be git's, so every case must agree.
    merge = bench.merge_case(800, 1, 2, str(tmp_path), 0.0)
    assert merge["agree"] is True and merge["ours"]["n"] == merge["git"]["n"] == 2
    assert (merge["conflicts"] > 0) == (merge["git_conflicts"] > 0)
    for kind in ("rewrite", "reorder"):
        stats = bench.stats_case(kind, 800, 1, 2, str(tmp_path), 0.0)
        assert stats["agree"] is True and stats["stats"] == stats["git_stats"]
        assert stats["stats"][0] > 100  # a real rewrite, not a no-op
    before, agent, current = bench.reorder(800, 1)
    assert sorted(before.splitlines()) == sorted(agent.splitlines())  # a reorder
    assert sum(a != c for a, c in zip(agent.splitlines(), current.splitlines(), strict=True)) == 1
