"""Scan mode with several sessions: a change is a session's only when it happened inside
that session's own shell call (its window); anything else is the user's."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest

from snapstore import Store
from snapstore.core.records import USER
from snapstore.ops.shell import (
    CLOSE,
    END,
    OPEN,
    STALE_AFTER,
    WindowAction,
    applied,
    open_windows,
    owner,
)

from ..support import FIXED_NOW, agent_write, changes_of, read, shell, wait_until, write


@pytest.fixture
def scanned(store: Store, root: Path) -> Store:
    write(root, "a.txt", "a\n")
    write(root, "b.txt", "b\n")
    write(root, "c.txt", "c\n")
    store.scan()  # the baseline
    return store


def _turn(store: Store, turn_id: str | None):
    assert turn_id is not None
    with store.repo.read() as v:
        return v.turn(turn_id)


def test_only_what_changed_inside_the_sessions_own_shell_call_is_its(
    scanned: Store, root: Path
) -> None:
    turn = scanned.begin_turn("A", "a long turn", scan=True)
    scanned.shell_begin("A", "t1")
    shell(root, "echo agent >> a.txt")
    scanned.shell_end("A", "t1")
    write(root, "b.txt", "the user, while the agent thinks\n")
    scanned.shell_begin("A", "t2")
    shell(root, "echo agent >> c.txt")
    scanned.shell_end("A", "t2")
    scanned.end_turn("A", scan=True)
    assert changes_of(scanned, turn.id) == {"a.txt": "scan", "c.txt": "scan"}
    with scanned.repo.read() as v:
        users = [t for t in v.turns() if t.kind == USER]
    assert [changes_of(scanned, t.id) for t in users] == [{"b.txt": "scan"}]
    assert users[0].unattributed == ()
    assert scanned.rewind(1, "A").ok
    assert (read(root, "a.txt"), read(root, "b.txt"), read(root, "c.txt")) == (
        b"a\n",
        b"the user, while the agent thinks\n",
        b"c\n",
    )


def test_a_scan_of_another_session_during_a_window_gives_it_to_the_windows_owner(
    scanned: Store, root: Path
) -> None:
    """B's turn begins (and scans) while A's shell call runs: what A's call changed is A's."""
    a = scanned.begin_turn("A", "a", scan=True)
    scanned.shell_begin("A", "t1")
    shell(root, "echo A >> a.txt")
    b = scanned.begin_turn("B", "b", scan=True)
    shell(root, "echo A again >> a.txt")
    scanned.shell_end("A", "t1")
    scanned.end_turn("B", scan=True)
    scanned.end_turn("A", scan=True)
    assert changes_of(scanned, a.id) == {"a.txt": "scan"}
    assert changes_of(scanned, b.id) == {}


def test_a_change_in_windows_two_sessions_share_is_nobodys(scanned: Store, root: Path) -> None:
    a = scanned.begin_turn("A", "a", scan=True)
    b = scanned.begin_turn("B", "b", scan=True)
    scanned.shell_begin("A", "ta")
    shell(root, "echo A alone >> a.txt")
    scanned.shell_begin("B", "tb")  # A's change so far is A's, seen by B's scan
    shell(root, "echo one of them >> b.txt")
    scanned.shell_end("A", "ta")  # b.txt changed while both ran: the user's, unattributed
    shell(root, "echo B alone >> c.txt")
    scanned.shell_end("B", "tb")
    scanned.end_turn("A", scan=True)
    scanned.end_turn("B", scan=True)
    assert changes_of(scanned, a.id) == {"a.txt": "scan"}
    assert changes_of(scanned, b.id) == {"c.txt": "scan"}
    status = scanned.status("A")
    (shared,) = status.unattributed
    assert shared.sessions == ["A", "B"] and shared.paths == ["b.txt"]
    assert _turn(scanned, shared.turn).kind == USER
    for session in ("A", "B"):
        assert scanned.rewind(1, session).ok
    assert read(root, "b.txt") == b"b\none of them\n"  # never taken back by either
    assert (read(root, "a.txt"), read(root, "c.txt")) == (b"a\n", b"c\n")


def test_two_parallel_shell_calls_of_one_session_are_its(scanned: Store, root: Path) -> None:
    turn = scanned.begin_turn("A", "two at once", scan=True)
    scanned.shell_begin("A", "t1")
    scanned.shell_begin("A", "t2")
    shell(root, "echo one >> a.txt")
    scanned.shell_end("A", "t1")
    assert [call for call, _ in open_windows(scanned.repo)["A"]] == ["t2"]
    shell(root, "echo two >> b.txt")  # t2 still runs
    scanned.shell_end("A", "t2")
    assert open_windows(scanned.repo) == {}
    write(root, "c.txt", "the user\n")
    scanned.end_turn("A", scan=True)
    assert changes_of(scanned, turn.id) == {"a.txt": "scan", "b.txt": "scan"}


@pytest.mark.parametrize("closer", ["turn end", "next prompt"])
def test_a_shell_call_whose_end_never_comes_is_closed_and_its_changes_are_nobodys(
    scanned: Store, root: Path, closer: str
) -> None:
    turn = scanned.begin_turn("A", "the agent dies in a shell call", scan=True)
    scanned.shell_begin("A", "t1")
    shell(root, "echo half done >> a.txt")
    if closer == "turn end":
        scanned.end_turn("A", scan=True)
    else:
        scanned.begin_turn("A", "try again", scan=True, close_open=True)
    assert open_windows(scanned.repo) == {}
    assert changes_of(scanned, turn.id) == {}
    (lost,) = scanned.status("A").unattributed
    assert lost.sessions == ["A"] and lost.paths == ["a.txt"]
    write(root, "b.txt", "later, the user\n")
    later = scanned.scan("A")
    assert later.user and later.unattributed == []  # the window is closed for good


def test_windows_are_in_the_store_for_every_process(scanned: Store, root: Path) -> None:
    scanned.begin_turn("A", "a", scan=True)
    scanned.shell_begin("A", "t1")
    shell(root, "echo A >> a.txt")
    subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from snapstore import Store\n"
            "with Store.open(sys.argv[1], clock=lambda: float(sys.argv[2])) as s:\n"
            "    s.shell_end('A', 't1')",
            str(root),
            str(FIXED_NOW),
        ],
        check=True,
    )  # another hook process (on the same clock as this test's)
    assert open_windows(scanned.repo) == {}
    scanned.end_turn("A", scan=True)
    assert changes_of(scanned, scanned.resolve_turn(1, "A").id) == {"a.txt": "scan"}


def test_a_hooks_write_in_progress_in_another_session_is_left_to_it(
    scanned: Store, root: Path
) -> None:
    a = scanned.begin_turn("A", "a", scan=True)
    scanned.begin_turn("B", "b", scan=True)
    scanned.pre_write(["a.txt"], "Write", "B")
    scanned.shell_begin("A", "t1")
    write(root, "a.txt", "B's Write tool, half way\n")
    scanned.shell_end("A", "t1")
    scanned.post_write(["a.txt"], "B")
    scanned.end_turn("A", scan=True)
    scanned.end_turn("B", scan=True)
    assert changes_of(scanned, a.id) == {}
    assert changes_of(scanned, scanned.resolve_turn(1, "B").id) == {"a.txt": "hook"}


def test_a_shell_call_without_a_turn_opens_an_implicit_one(scanned: Store, root: Path) -> None:
    scanned.shell_begin("A", "t1")
    shell(root, "echo A >> a.txt")
    scanned.shell_end("A", "t1")
    turn = scanned.open_turn("A")
    assert turn is not None and turn.implicit
    assert changes_of(scanned, turn.id) == {"a.txt": "scan"}


def test_a_failed_scan_still_opens_and_closes_the_window(
    scanned: Store, root: Path, monkeypatch
) -> None:
    import snapstore.ops.scan
    from snapstore import StoreLocked

    warnings: list[str] = []
    scanned.warn = warnings.append
    scanned.begin_turn("A", "a", scan=True)

    def busy(*args, **kwargs):
        raise StoreLocked("the store is busy", what="the write lock", timeout=0)

    monkeypatch.setattr(snapstore.ops.scan, "scan", busy)
    scanned.shell_begin("A", "t1")
    assert [call for call, _ in open_windows(scanned.repo)["A"]] == ["t1"]
    scanned.shell_end("A", "t1")
    assert open_windows(scanned.repo) == {} and len(warnings) == 2


def test_the_window_rules() -> None:
    now = 1000.0
    assert owner({}, [], now) == (None, ())
    assert owner({"A": [("1", now), ("2", now)]}, [], now) == ("A", ())
    assert owner({"A": [("1", now)], "B": [("", now)]}, [], now) == (None, ("A", "B"))
    assert owner({"A": [("1", now)]}, [WindowAction(END, "A")], now) == (None, ("A",))
    assert owner({"A": [("1", now)]}, [WindowAction(END, "B")], now) == ("A", ())
    windows = applied(
        {},
        [
            WindowAction(OPEN, "A", "1"),
            WindowAction(OPEN, "A", "1"),
            WindowAction(OPEN, "G"),
            WindowAction(OPEN, "G"),
        ],
        now,
    )
    assert windows == {"A": [("1", now)], "G": [("", now), ("", now)]}
    windows = applied(windows, [WindowAction(CLOSE, "G"), WindowAction(CLOSE, "A", "9")], now)
    assert windows == {"A": [("1", now)], "G": [("", now)]}
    assert applied(windows, [WindowAction(END, "G"), WindowAction(CLOSE, "A", "1")], now) == {}
    later = now + STALE_AFTER + 1  # a call whose end never came, from a session never back
    assert owner(windows, [], later) == (None, ("A", "G"))
    assert applied(windows, [], later) == {}
    fresh = {"A": [("1", now), ("2", later)]}  # one stale call beside one running
    assert owner(fresh, [], later) == ("A", ())
    assert applied(fresh, [], later) == {"A": [("2", later)]}
    assert WindowAction.from_json(["open", "A", "1"]) == WindowAction(OPEN, "A", "1")
    assert WindowAction.from_json(["drop", "A", "1"]) is None


def test_a_window_left_open_by_a_session_that_never_returns_goes_stale(
    scanned: Store, root: Path, clock
) -> None:
    """Otherwise every other session's changes would be unattributed for good."""
    scanned.begin_turn("A", "dies", scan=True)
    scanned.shell_begin("A", "t1")  # and A is never heard of again
    clock.tick(STALE_AFTER + 60)
    b = scanned.begin_turn("B", "b", scan=True)
    assert open_windows(scanned.repo) == {}
    scanned.shell_begin("B", "t1")
    shell(root, "echo B >> b.txt")
    scanned.shell_end("B", "t1")
    scanned.end_turn("B", scan=True)
    assert changes_of(scanned, b.id) == {"b.txt": "scan"}


def test_the_watcher_records_nothing_itself_while_a_window_is_open(
    scanned: Store, root: Path
) -> None:
    """It cannot tell whose a change is: the scan that closes the window asks for it."""
    watcher = scanned.watcher(debounce=0.05)
    watcher.start()
    stop = threading.Event()
    thread = threading.Thread(target=watcher.run, args=(stop,))
    thread.start()
    try:
        turn = scanned.begin_turn("A", "a", scan=True)
        scanned.shell_begin("A", "t1")
        write(root, "a.txt", "by the agent's shell\n")
        write(root, "b.txt", "also\n")
        wait_until(lambda: watcher._dirty)
        stop_at = watcher.recorded
        threading.Event().wait(0.5)  # ten debounce periods
        assert watcher.recorded == stop_at
        scanned.shell_end("A", "t1")
        assert changes_of(scanned, turn.id) == {"a.txt": "watch", "b.txt": "watch"}
        write(root, "c.txt", "the user, between calls\n")
        wait_until(lambda: watcher.recorded > stop_at + 2)  # on its own again: the user's
        scanned.end_turn("A", scan=True)
        assert changes_of(scanned, turn.id) == {"a.txt": "watch", "b.txt": "watch"}
    finally:
        stop.set()
        thread.join()
        watcher.stop()


def test_a_hook_write_and_its_shell_window_in_one_turn(scanned: Store, root: Path) -> None:
    """The agent's Write and its Bash run in parallel: each change is recorded once."""
    turn = scanned.begin_turn("A", "both tools", scan=True)
    scanned.shell_begin("A", "t1")
    agent_write(scanned, "a.txt", "by Write\n", session="A")
    shell(root, "echo by bash >> b.txt")
    scanned.shell_end("A", "t1")
    scanned.end_turn("A", scan=True)
    assert changes_of(scanned, turn.id) == {"a.txt": "hook", "b.txt": "scan"}
