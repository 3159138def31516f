"""End to end: a full disk is one clear line on the command line."""

from __future__ import annotations

import os
from pathlib import Path

from ..support import write

MIB = 1024 * 1024


def test_cli_reports_a_full_disk_in_one_line(cli, small_fs: Path, root: Path) -> None:
    env = {"SNAPSTORE_DIR": str(small_fs / "store")}
    assert cli("init", env=env).code == 0
    write(root, "huge.bin", os.urandom(4 * MIB))
    result = cli("pre-write", "huge.bin", env=env)
    assert result.code == 3 and result.stderr.startswith("snapstore: ")
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    assert cli("fsck", env=env).code == 0


def test_a_rewind_that_wrote_nothing_says_so_and_runs_again(
    cli, small_fs: Path, tmp_path: Path
) -> None:
    ws = small_fs / "ws"
    ws.mkdir()
    env = {"SNAPSTORE_DIR": str(tmp_path / "store")}

    def run(*args: str):
        return cli(*args, cwd=ws, env=env)

    write(ws, "big.bin", os.urandom(MIB))
    assert run("init").code == 0
    assert run("begin", "--prompt", "shrink").code == 0
    assert run("pre-write", "big.bin").code == 0
    write(ws, "big.bin", b"tiny")
    assert run("post-write", "big.bin").code == 0 and run("end").code == 0
    write(ws, "filler", os.urandom(int(2.5 * MIB)))
    full = run("rewind", "1", "--yes")
    assert full.code == 1 and "no space" in full.stdout
    assert "nothing was rewound: every write failed" in full.stdout
    assert "finish with" not in full.stdout and "undo it" not in full.stdout
    assert run("--json", "status").json["left"] is None
    assert run("--json", "ops").json[0]["status"] == "failed"
    assert "rewind (failed: nothing moved)" in run("ops").stdout
    os.unlink(ws / "filler")
    again = run("--json", "rewind", "1", "--yes")
    assert again.code == 0 and again.json["restored"] == ["big.bin"], again.stderr
