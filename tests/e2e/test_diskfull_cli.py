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
