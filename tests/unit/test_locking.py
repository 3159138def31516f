"""The write lock as a value, and one commit per agent event.

What needs the lock across several commits takes the held lock (``Locked``) as a
parameter; another process cannot commit inside a locked scope. An agent's prompt
closes the session's stale turn, begins the next one and stores a new session's base
in one commit, so a crash between them leaves none of it.
"""

from __future__ import annotations

import inspect
import signal
import subprocess
import sys
import threading
import typing
from collections.abc import Callable
from pathlib import Path

import pytest

from snapstore import RunActive, Store, StoreLocked
from snapstore.core.records import AGENT, CLOSED, OPEN, USER
from snapstore.core.repo import Locked, Repo
from snapstore.ops import capture, gc, journal

from ..support import FIXED_NOW, Clock, changes_of, hermetic_env, read, write
from ..support.locking import lock_held_elsewhere

REPO = Path(__file__).resolve().parents[2]
GIT = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t"]

#: One agent event in a Store that records bases, killed (SIGKILL) as its turn starts.
_EVENT = """
import os, signal, sys
from snapstore import Store
from snapstore.core import faults
root, event, kill, now = sys.argv[1:5]
if kill == "kill":
    def die(point):
        if point == "capture.turn_started":
            os.kill(os.getpid(), signal.SIGKILL)
    faults.install(die)
with Store.open(root, record_base=True, clock=lambda: float(now)) as store:
    if event == "begin":
        store.begin_turn("s", "next prompt", close_open=True)
    else:
        store.pre_write(["f.txt"], "Write", "s")
"""


def _event(root: Path, event: str, kill: bool) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-c", _EVENT, str(root), event, "kill" if kill else "run", str(FIXED_NOW)],
        cwd=REPO,
        env=hermetic_env(),
        capture_output=True,
        timeout=120,
    )


def test_what_needs_the_lock_across_commits_takes_the_held_lock() -> None:
    needs_lock: list[Callable[..., object]] = [
        capture.finish_open_turn,
        journal.execute,
        journal._journal,
        journal._finish,
        gc._prune,
        gc._sweep,
    ]
    for fn in needs_lock:
        first = next(iter(inspect.signature(fn).parameters))
        assert typing.get_type_hints(fn)[first] is Locked, fn.__qualname__
    assert list(inspect.signature(Repo.write).parameters) == ["self", "fn"]  # no flag to lie
    assert not hasattr(Repo, "write_lock")


#: Code that calls what needs the lock without it (lines 7 to 9), and with it.
_MISUSE = """\
from snapstore.core.repo import Repo
from snapstore.ops.capture import finish_open_turn
from snapstore.ops.journal import Operation, execute


def unlocked(repo: Repo, operation: Operation) -> None:
    execute(repo, operation)
    finish_open_turn(repo, "s")
    repo.write(lambda tx: None, locked=True)


def locked(repo: Repo, operation: Operation) -> None:
    with repo.lock() as w:
        execute(w, operation)
        finish_open_turn(w, "s")
"""


def test_the_type_checker_refuses_a_call_without_the_held_lock(tmp_path: Path) -> None:
    code = tmp_path / "misuse.py"
    code.write_text(_MISUSE)
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-error-summary", str(code)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    errors = {  # by line; the path may be an earlier run's: mypy keeps a module's errors
        int(line.split("misuse.py:")[1].split(":")[0]): line
        for line in done.stdout.splitlines()
        if "misuse.py:" in line and ": error:" in line
    }
    assert sorted(errors) == [7, 8, 9], done.stdout + done.stderr
    assert '"Repo"; expected "Locked"' in errors[7] and '"Repo"; expected "Locked"' in errors[8]
    assert 'Unexpected keyword argument "locked"' in errors[9]


def test_a_released_lock_commits_nothing(store: Store) -> None:
    with store.repo.lock() as w:
        w.write(lambda tx: tx.event("probe", step=1))
    with pytest.raises(RuntimeError, match="released"):
        w.write(lambda tx: tx.event("probe", step=2))
    with store.repo.read() as v:
        assert [e["step"] for e in v.events() if e["type"] == "probe"] == [1]


def test_a_thread_holding_the_lock_is_refused_another_at_once(store: Store) -> None:
    """Taking the lock again would wait for itself until the timeout: it is refused."""
    with store.repo.lock() as w:
        with pytest.raises(RuntimeError, match="holds the store's write lock already"):
            store.repo.write(lambda tx: tx.event("probe"))
        assert store.repo.write_if_free(lambda tx: tx.event("probe")) is None  # never waits
        w.write(lambda tx: tx.event("probe", step=1))
    store.repo.write(lambda tx: tx.event("probe", step=2))
    with store.repo.read() as v:
        assert [e.get("step") for e in v.events() if e["type"] == "probe"] == [1, 2]


def test_another_process_cannot_commit_inside_a_locked_scope(store: Store) -> None:
    with lock_held_elsewhere(store.store_dir) as release:  # one commit made, the lock held
        with pytest.raises(StoreLocked), store.repo.lock(timeout=0):
            pass
        assert store.repo.write_if_free(lambda tx: tx.event("probe", who="free")) is None
        writer = threading.Thread(
            target=store.repo.write, args=(lambda tx: tx.event("probe", who="other"),)
        )
        writer.start()  # waits for the lock
        release()
        writer.join()
    with store.repo.read() as v:
        probes = [(e["who"], e.get("step")) for e in v.events() if e["type"] == "probe"]
    assert probes == [("scope", 1), ("scope", 2), ("other", None)]


def _stale(store: Store, root: Path) -> str:
    """A turn whose agent died after writing f.txt, before reporting it."""
    write(root, "f.txt", "before\n")
    turn = store.begin_turn("s", "first prompt")
    store.pre_write(["f.txt"], "Write", "s")
    write(root, "f.txt", "written\n")
    return turn.id


def _after(store: Store, turn_id: str, path: str) -> bytes | None:
    (change,) = [c for c in store.changes(turn_id) if c.path == path]
    assert change.done
    if change.after is None:
        return None
    with store.repo.read() as v:
        return v.blob(change.after.key)


def test_the_next_prompt_closes_the_stale_turn_in_the_commit_that_begins_its_own(
    store: Store, root: Path
) -> None:
    stale = _stale(store, root)
    with pytest.raises(RunActive):
        store.begin_turn("s", "next prompt")  # without close_open an explicit turn stands
    turn = store.begin_turn("s", "next prompt", close_open=True)
    assert _after(store, stale, "f.txt") == b"written\n"
    with store.repo.read() as v:
        assert (v.turn(stale).state, turn.state, turn.parent) == (CLOSED, OPEN, stale)
        assert v.open_turn("s") == turn
        ends = [e["type"] for e in v.events() if e.get("turn") in (stale, turn.id)]
    assert ends[-2:] == ["turn_end", "turn_begin"]


def test_a_stale_turn_read_before_a_late_write_is_read_again(
    store: Store, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stale turn's paths are read before the lock is taken; a write that lands
    between that read and the commit is what the closed change records."""
    stale = _stale(store, root)
    real = capture.prepare
    late: list[bool] = []

    def racing(repo, rels, bases=None):
        found = real(repo, rels, bases)
        if not late:
            late.append(True)
            write(root, "f.txt", "written late, and longer\n")  # the dead agent's last write
        return found

    monkeypatch.setattr(capture, "prepare", racing)
    store.begin_turn("s", "next prompt", close_open=True)
    assert _after(store, stale, "f.txt") == b"written late, and longer\n"


def test_a_prompt_with_a_scan_scans_before_it_closes_the_stale_turn(root: Path) -> None:
    with Store.init(root, clock=Clock()) as store:
        store.scan()  # the baseline
        stale = _stale(store, root)
        write(root, "notes.txt", "the user's\n")
        store.begin_turn("s", "next prompt", scan=True, close_open=True)
        assert _after(store, stale, "f.txt") == b"written\n"  # the dead agent's write
        assert changes_of(store, stale) == {"f.txt": "hook"}
        with store.repo.read() as v:
            users = [t for t in v.turns() if t.kind == USER]
        assert [changes_of(store, t.id) for t in users] == [{"notes.txt": "scan"}]


def test_a_refused_prompt_scans_nothing(root: Path) -> None:
    with Store.init(root, clock=Clock()) as store:
        store.scan()
        store.begin_turn("s", "first prompt")
        write(root, "notes.txt", "the user's\n")
        with pytest.raises(RunActive):
            store.begin_turn("s", "second prompt", scan=True)
        with store.repo.read() as v:
            assert [t.kind for t in v.turns()] == [AGENT]


def _git_workspace(root: Path) -> str:
    write(root, "f.txt", "committed\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run([*GIT, "-C", str(root), "add", "."], check=True)
    subprocess.run([*GIT, "-C", str(root), "commit", "-qm", "c"], check=True)
    write(root, "f.txt", "edited before the session\n")
    write(root, "new.txt", "untracked\n")
    return subprocess.run(
        ["git", "-C", str(root), "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.mark.parametrize("event", ["begin", "pre_write"])
def test_a_crash_never_leaves_a_new_sessions_turn_without_its_base(root: Path, event: str) -> None:
    commit = _git_workspace(root)
    Store.init(root).close()
    killed = _event(root, event, kill=True)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    with Store.open(root) as store:
        assert not store.has_session("s")
        with store.repo.read() as v:
            assert list(v.turns()) == []
        assert store.fsck().ok
    done = _event(root, event, kill=False)
    assert done.returncode == 0, done.stderr
    with Store.open(root) as store:
        with store.repo.read() as v:
            (turn,) = v.turns()
            base = v.require_session("s").base
            assert base is not None
            changes = {path: after for path, _, after in base["changes"]}
            assert v.blob(bytes.fromhex(changes["f.txt"][0])) == b"edited before the session\n"
        assert turn.session == "s" and base["commit"] == commit
        assert set(changes) == {"f.txt", "new.txt"}
        assert store.fsck().ok


def test_a_crash_as_the_next_prompt_begins_leaves_the_stale_turn_open(root: Path) -> None:
    with Store.init(root, clock=Clock()) as store:
        stale = _stale(store, root)
    killed = _event(root, "begin", kill=True)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    with Store.open(root) as store:
        with store.repo.read() as v:
            assert [t.id for t in v.turns()] == [stale]
            assert v.open_turn("s") == v.turn(stale)  # its change still awaits its after
            assert v.turn(stale).open_changes == {"f.txt": 0}
        assert store.fsck().ok
    done = _event(root, "begin", kill=False)
    assert done.returncode == 0, done.stderr
    with Store.open(root) as store:
        assert _after(store, stale, "f.txt") == b"written\n"
        assert read(root, "f.txt") == b"written\n"
        with store.repo.read() as v:
            assert v.turn(stale).state == CLOSED
            turn = v.open_turn("s")
            assert turn is not None and turn.parent == stale


def test_a_store_opened_twice_in_one_process_is_a_usage_error(store: Store) -> None:
    """LMDB allows one environment per file and process: opening a second Store on it is a
    caller's mistake (docs/python-api.md's first snippet once made it), said as bad input
    (exit 2), not as a store that failed verification (StoreCorrupt, exit 5)."""
    from snapstore import BadInput, StoreCorrupt

    with pytest.raises(BadInput, match="already open in this process: use the Store you have") as e:
        Store.open(store.root)
    assert not isinstance(e.value, StoreCorrupt)
    store.close()
    with Store.open(store.root) as again:  # closed first: it opens
        assert again.root == store.root
