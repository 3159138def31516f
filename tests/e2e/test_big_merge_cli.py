"""End to end: `snapstore rewind` of a big text file (over 4 MiB) the user edited since.

The user's edit far from the agent's: merged, byte for byte `git merge-file`'s. Both in one
region: a conflict, the file left as the user has it, and `undo` takes the rewind back. A
binary big file: a conflict, even with markers. The merge itself is tested in
tests/unit/test_merge_big.py; the figures are ``python -m bench big-merge``'s.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from ..support import read, write
from ..unit.test_merge_large import git_merge_file

ROWS = 110_000  # about 5 MiB


def _dump(seed: int) -> list[bytes]:
    rng = random.Random(seed)
    return [b"INSERT INTO t VALUES (%d, %d);\n" % (n, rng.randrange(10**9)) for n in range(ROWS)]


def _edit(lines: list[bytes], at: int, text: bytes) -> list[bytes]:
    out = list(lines)
    out[at] = text + b"\n"
    return out


def _agent_turn(cli, root: Path, rel: str, data: bytes) -> None:
    assert cli("begin", "--prompt", "edit it").code == 0
    assert cli("pre-write", "--tool", "Edit", rel).code == 0
    write(root, rel, data)
    assert cli("post-write", rel).code == 0
    assert cli("end").code == 0


@pytest.mark.parametrize("where", ["far apart", "one region"])
def test_rewind_of_a_big_text_file_the_user_edited(
    cli, root: Path, tmp_path: Path, where: str
) -> None:
    assert cli("init", "--no-track-shell").code == 0
    lines = _dump(1)
    before = b"".join(lines)
    write(root, "dump.sql", before)
    agent_lines = _edit(lines, 10, b"-- the agent's")
    agent = b"".join(agent_lines)
    _agent_turn(cli, root, "dump.sql", agent)
    mine = b"".join(_edit(agent_lines, ROWS - 5 if where == "far apart" else 11, b"-- mine"))
    write(root, "dump.sql", mine)
    done = cli("--json", "rewind", "1", "--yes")
    status, expected = git_merge_file(tmp_path, agent, mine, before)
    if where == "far apart":
        assert done.code == 0, done.stderr
        assert done.json["merged"] == ["dump.sql"]
        assert status == 0 and read(root, "dump.sql") == expected
    else:  # adjacent lines: git conflicts too
        assert done.code == 1 and status == 1
        assert [c["path"] for c in done.json["conflicts"]] == ["dump.sql"]
        assert read(root, "dump.sql") == mine
    undone = cli("undo")
    assert undone.code == 0, undone.stderr
    assert read(root, "dump.sql") == mine
    assert cli("fsck").code == 0


def test_a_binary_big_file_still_conflicts_even_with_markers(cli, root: Path) -> None:
    assert cli("init", "--no-track-shell").code == 0
    data = bytearray(random.Random(2).randbytes(5 * 1024 * 1024))
    write(root, "blob.bin", bytes(data))
    data[100:104] = b"agnt"
    _agent_turn(cli, root, "blob.bin", bytes(data))
    data[-4:] = b"mine"
    write(root, "blob.bin", bytes(data))
    done = cli("--json", "rewind", "1", "--yes", "--on-conflict", "markers")
    assert done.code == 1 and not done.json["marked"]
    assert "binary" in done.json["conflicts"][0]["reason"]
    assert read(root, "blob.bin") == bytes(data)
