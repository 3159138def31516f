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


def _three_turns(root: Path) -> list[str]:
    """A session of three turns, each writing its own file; their ids, oldest first."""
    from snapstore import Store

    from ..support import agent_turn

    with Store.init(root) as store:
        return [agent_turn(store, f"turn {i}", {f"f{i}.txt": f"{i}\n"}) for i in range(3)]


def _holding_the_lock(pid: int, lock: Path) -> bool:
    """Whether process ``pid`` has the store's write-lock file open: it has read the head and
    waits for the lock (the head is read before, in the operation layer)."""
    import os

    folder = Path(f"/proc/{pid}/fd")
    with contextlib.suppress(OSError):
        return any(os.readlink(fd) == str(lock) for fd in folder.iterdir())
    return False


def test_two_rewinds_of_turn_1_started_at_once_take_back_one_turn(root: Path) -> None:
    """A turn number counts from the head the user saw: of two `rewind 1 --yes` that both
    counted from the same head, the second finds that the head moved under it and refuses
    in one line, exit 3, nothing changed (it took back a second turn before)."""
    import fcntl
    import subprocess

    from snapstore import Store

    from ..support import hermetic_env, snapstore_bin, wait_until

    _three_turns(root)
    lock = root / ".snapstore" / "write.lock"
    with open(lock, "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # both start, read the head, and wait here
        both = [
            subprocess.Popen(
                [*snapstore_bin(), "--lock-timeout", "120", "rewind", "1", "--yes"],
                cwd=root,
                env=hermetic_env(),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(2)
        ]
        wait_until(lambda: all(_holding_the_lock(p.pid, lock) for p in both), timeout=60)
    done = sorted((p.wait(120), *p.communicate()) for p in both)
    assert [code for code, _, _ in done] == [0, 3], done
    assert done[1][2] == (
        "snapstore: the head moved since you chose turn 1; nothing changed "
        "(run it again: `snapstore log` shows the turns now)\n"
    )
    assert read(root, "f2.txt") is None and read(root, "f1.txt") == b"1\n"  # one turn back
    with Store.open(root) as store:
        assert [op.action for op in store.operations()] == ["rewind"]


def _racing(root: Path, args: list[str]):
    """A fault handler that, the first time a move has counted its turn number from the head
    but not yet taken the write lock (the operation layer's ``moves.counted``), runs
    ``snapstore ARGS`` to its end in another process."""
    import subprocess

    from ..support import hermetic_env, snapstore_bin

    ran: list[subprocess.CompletedProcess[str]] = []

    def handler(name: str) -> None:
        if name == "moves.counted" and not ran:
            ran.append(
                subprocess.run(
                    [*snapstore_bin(), *args],
                    cwd=root,
                    env=hermetic_env(),
                    capture_output=True,
                    text=True,
                    timeout=120,
                )
            )

    return handler, ran


def test_a_move_between_the_count_and_the_lock_refuses_a_number(cli, root: Path) -> None:
    """The same race, made certain: another rewind runs right between the moment the door
    counted `1` from the head and the moment it takes the lock. Every door counts there
    (the operation layer), the fast path's `rewind 1 --yes` and Click's `switch 1 --yes`."""
    from snapstore.core import faults

    ids = _three_turns(root)
    for args in (["rewind", "1", "--yes"], ["switch", "2", "--yes", "--on-conflict", "skip"]):
        handler, ran = _racing(root, ["rewind", "1", "--yes"])
        faults.install(handler)
        try:
            refused = cli(*args)
        finally:
            faults.install(None)
        assert ran and ran[0].returncode == 0, ran
        assert refused.code == 3 and "the head moved since you chose turn" in refused.stderr
        assert refused.stdout == ""
    assert read(root, "f0.txt") == b"0\n" and read(root, "f1.txt") is None  # two turns back
    from snapstore import Store

    with Store.open(root) as store:
        assert [op.action for op in store.operations()] == ["rewind", "rewind"]
        assert store.rewind_points()[0].turn.id == ids[0]


def test_a_turn_id_names_one_turn_whatever_moved(cli, root: Path) -> None:
    """An id is not counted from the head: a rewind of it after another rewind came between
    takes back that same turn (here, the other rewind took back the later turn only)."""
    from snapstore.core import faults

    ids = _three_turns(root)
    handler, ran = _racing(root, ["rewind", "1", "--yes"])
    faults.install(handler)
    try:
        done = cli("rewind", ids[1], "--yes")
    finally:
        faults.install(None)
    assert ran and ran[0].returncode == 0
    assert done.code == 0, done.stderr
    assert read(root, "f0.txt") == b"0\n" and read(root, "f1.txt") is None
