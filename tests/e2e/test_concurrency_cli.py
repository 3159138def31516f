"""End to end: a rewind waits for a busy writer, then gives up with exit 3."""

from __future__ import annotations

import contextlib
import multiprocessing as mp
from pathlib import Path

from ..support import read, write

CTX = mp.get_context("spawn")  # never share an LMDB environment across fork()


CALLS = 200


SHARED = 3


def test_a_rewind_waits_for_a_busy_writer_then_gives_up_with_exit_3(cli, root: Path) -> None:
    import fcntl
    import subprocess

    from ..support import hermetic_env, snapstore_bin

    cli("init")
    cli("begin", "--prompt", "p")
    cli("pre-write", "a.txt")
    write(root, "a.txt", "agent\n")
    cli("post-write", "a.txt")
    cli("end")
    with open(root / ".snapstore" / "write.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a writer that takes too long
        refused = cli("--lock-timeout", "0.5", "rewind", "1", "--yes")
        assert refused.code == 3 and "busy" in refused.stderr and "Traceback" not in refused.stderr
        waiting = subprocess.Popen(
            [*snapstore_bin(), "--lock-timeout", "120", "rewind", "1", "--yes"],
            cwd=root,
            env=hermetic_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        with contextlib.suppress(subprocess.TimeoutExpired):
            waiting.wait(1.0)
        assert waiting.poll() is None and read(root, "a.txt") == b"agent\n"  # it waits
    assert waiting.wait(120) == 0  # and goes on once the writer is done
    assert read(root, "a.txt") is None
