"""Large merges are correct; no timings here, see ``bench/merge.py``.

An agent reorders the functions of a file of thousands of lines, then the user edits one
line; the rewind merges (base = agent's version, ours = current, theirs = before). Files
this large go past the diff's search budget, where the alignment is no longer git's by
construction (see ``snapstore/text/merge.py``), so these tests check the merge itself: against
``git merge-file`` on the same files, and as a property.
"""

from __future__ import annotations

import os
import random
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from snapstore.text.diff import line_stats, split_lines
from snapstore.text.merge import merge3

USER_LINE = b"    user_edit = True  # the user's own change\n"
COMMON = (b"\n", b"        pass\n", b"    return value\n", b"    else:\n")


def functions(rng: random.Random, count: int) -> list[list[bytes]]:
    """Code-like functions: unique lines among repeated ones (blank lines, ``pass``...)."""
    blocks = []
    for n in range(count):
        body = [
            rng.choice(COMMON)
            if rng.random() < 0.4
            else f"    value = value * {rng.randrange(1000)} + {n}\n".encode()
            for _ in range(rng.randint(2, 12))
        ]
        blocks.append([f"def f{n}(value):\n".encode(), *body, b"    return value\n", b"\n"])
    return blocks


def scenario(
    rng: random.Random, count: int, moves: int | None
) -> tuple[bytes, bytes, bytes, bytes]:
    """(before, agent's version, current, the line the user replaced): the agent moves
    ``moves`` functions (all of them, shuffled, when None), the user edits one line of the
    agent's version that is unique in it."""
    blocks = functions(rng, count)
    before = b"".join(line for block in blocks for line in block)
    if moves is None:
        rng.shuffle(blocks)
    for _ in range(moves or 0):
        blocks.insert(rng.randrange(len(blocks)), blocks.pop(rng.randrange(len(blocks))))
    agent = [line for block in blocks for line in block]
    counts = Counter(agent)
    unique = [n for n, line in enumerate(agent) if counts[line] == 1]
    edited = rng.choice(unique)
    replaced, agent_text = agent[edited], b"".join(agent)
    agent[edited] = USER_LINE
    return before, agent_text, b"".join(agent), replaced


def git_merge_file(tmp: Path, base: bytes, ours: bytes, theirs: bytes) -> tuple[int, bytes]:
    for name, data in (("ours", ours), ("base", base), ("theirs", theirs)):
        (tmp / name).write_bytes(data)
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "LC_ALL": "C"}
    proc = subprocess.run(
        ["git", "merge-file", "-p", "ours", "base", "theirs"],
        cwd=tmp,
        env=env,
        capture_output=True,
        check=False,
    )
    assert 0 <= proc.returncode < 128, proc.stderr
    return proc.returncode, proc.stdout


@pytest.mark.parametrize(("count", "moves"), [(800, 3), (800, 40), (1500, None), (6000, None)])
def test_large_reorder_merge_agrees_with_git_merge_file(
    tmp_path: Path, count: int, moves: int | None
) -> None:
    for seed in range(3):
        before, agent, current, _ = scenario(random.Random(seed), count, moves)
        result = merge3(agent, current, before)
        status, output = git_merge_file(tmp_path, agent, current, before)
        assert result.clean == (status == 0), (count, moves, seed)
        if result.clean:
            assert result.content == output, (count, moves, seed)
        else:
            assert USER_LINE in result.content  # nothing of the user's is lost


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(300, 1200), st.integers(0, 60))
def test_prop_clean_rewind_keeps_the_users_line(seed: int, count: int, moves: int) -> None:
    """Taking the agent's reorder out keeps the user's edit: a clean merge is the file as it
    was before the turn with the user's line in place of the one it replaced; a conflict
    keeps the user's line in the conflict."""
    before, agent, current, replaced = scenario(random.Random(seed), count, moves)
    result = merge3(agent, current, before)
    if result.clean:
        assert result.content == before.replace(replaced, USER_LINE)
    else:
        assert USER_LINE in result.content
    # And the stats of the turn count what the merge saw: each moved line once each way.
    added, removed = line_stats(before, agent)
    assert added == removed <= len(split_lines(agent))
