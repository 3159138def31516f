"""One flush per rewind: the real command, traced, syncs the file system once, not each file.

The journal is durable before the first write, so the files can be written by
atomic renames and made durable together just before the operation is marked
done (docs/format.md §5.3); a crash before then is finished by resume, which
tests/e2e/test_crash.py checks under kill -9.
"""

from __future__ import annotations

import collections
import subprocess
from pathlib import Path

from ..support import hermetic_env, read, snapstore_bin, write


def _syncs(root: Path, trace: Path, *args: str) -> collections.Counter[str]:
    """The sync calls one snapstore process makes, by name."""
    subprocess.run(
        [
            "strace",
            "-f",
            "-qq",
            "-e",
            "trace=fsync,fdatasync,syncfs",
            "-o",
            str(trace),
            *snapstore_bin(),
            *args,
        ],
        cwd=root,
        env=hermetic_env(),
        check=True,
        capture_output=True,
        timeout=120,
    )
    return collections.Counter(
        line.split()[1].split("(")[0] for line in trace.read_text().splitlines() if "(" in line
    )


def test_a_rewind_of_many_files_flushes_once(cli, root: Path, tmp_path: Path) -> None:
    assert cli("init").code == 0
    paths = [f"dir{n % 3}/f{n}.txt" for n in range(30)]
    for path in paths:
        write(root, path, f"before {path}\n")
    assert cli("begin", "--prompt", "rewrite them all").code == 0
    assert cli("pre-write", *paths).code == 0
    for path in paths:
        write(root, path, f"agent {path}\n")
    assert cli("post-write", *paths).code == 0
    assert cli("end").code == 0
    rewind = _syncs(root, tmp_path / "rewind.trace", "rewind", "1", "--yes")
    assert all(read(root, p) == f"before {p}\n".encode() for p in paths)
    assert rewind["syncfs"] == 1 and rewind["fsync"] == 0, rewind  # the store: fdatasync
    undo = _syncs(root, tmp_path / "undo.trace", "undo")
    assert all(read(root, p) == f"agent {p}\n".encode() for p in paths)
    assert undo["syncfs"] == 1 and undo["fsync"] == 0, undo


def test_a_rewind_of_one_file_syncs_just_it(cli, root: Path, tmp_path: Path) -> None:
    """A few files are synced one by one: a whole file system flush is not worth it."""
    assert cli("init").code == 0
    write(root, "one.txt", "before\n")
    assert cli("pre-write", "one.txt").code == 0
    write(root, "one.txt", "agent\n")
    assert cli("post-write", "one.txt").code == 0
    assert cli("end").code == 0
    syncs = _syncs(root, tmp_path / "one.trace", "rewind", "1", "--yes")
    assert read(root, "one.txt") == b"before\n"
    assert syncs["syncfs"] == 0 and syncs["fsync"] == 2, syncs  # the file, then its folder
