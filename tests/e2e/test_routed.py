"""Moves handed to the workspace's daemon (``doors.route``, ``POST /snapstore/move``).

The parity table (test_doors.py) proves that a move the daemon makes answers, writes and logs
what the local path does. Here: what a person reads is the same bytes; a daemon killed with
SIGKILL at each fault point of a move leaves what a killed command line leaves, which
``rewind --resume`` finishes, and the command line never makes the move a second time; a
second command line while a move runs waits its turn (or, past its lock timeout, is refused
as a busy store refuses it); a daemon of another version, one that is gone, and one that
does not answer all leave the move to the command line at once; and a command line whose move
the daemon makes loads neither the store nor its database.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import socket
import subprocess
from pathlib import Path

import pytest
from snapstore_cli.doors.route import PATH, PROTOCOL

from snapstore import Store, __version__

from ..support import hermetic_env, read, run_snapstore, snapstore_bin, wait_until, write
from ..support.serving import Serving
from .test_doors import CLAUDE, SCENARIOS, Built, _build, _same_across_stores, _state
from .test_startup import _launched


def _run(b: Built, *args: str, click: bool = False, env: dict[str, str] | None = None):
    return run_snapstore(["--session", b.session, *args], cwd=b.ws, env=env or b.env, click=click)


def _seen(b: Built, done: subprocess.CompletedProcess[str]) -> tuple[str, str, int]:
    """What a person saw, with the store's ids (whole, and as shown: their first 8 digits) and
    folders made comparable across builds."""
    with Store.open(b.ws) as store, store.repo.read() as v:
        ids = {t.id: f"turn#{t.seq}" for t in v.turns()}

    def same(text: str) -> str:
        for turn_id, name in ids.items():
            text = text.replace(turn_id, name).replace(turn_id[:8], name)
        return text.replace(str(b.ws.parent), "<tmp>")

    return same(done.stdout), same(done.stderr), done.returncode


def test_a_person_reads_the_same_bytes_from_the_daemon(tmp_path: Path) -> None:
    """A dry run (how many files it would write; with --diff, their diffs), a rewind that
    leaves a conflict (and what to do about it), its undo: printed by the command line from
    the daemon's answer as from its own move."""
    steps = [
        ("rewind", "1", "--dry-run"),
        ("rewind", "1", "--dry-run", "--diff"),
        ("rewind", "1", "--yes"),
        ("undo",),
    ]
    seen: dict[str, list[tuple[str, str, int]]] = {}
    for door in ("local", "daemon"):
        b = _build(tmp_path / door, SCENARIOS["conflict"])
        with contextlib.ExitStack() as stack:
            daemon = stack.enter_context(Serving(b.ws, b.env)) if door == "daemon" else None
            seen[door] = [_seen(b, _run(b, *step)) for step in steps]
            if daemon is not None:
                moves = [m.split()[1] for m in daemon.moves()]
                assert moves == ["rewind", "rewind", "rewind", "undo"]
    assert seen["daemon"] == seen["local"]
    dry, diffs, rewound, undone = seen["local"]
    assert "add --diff to see what the 1 file(s) would become" in dry[1]
    assert "diff --git" not in dry[0]
    assert "diff --git a/other.txt" in diffs[0]
    assert rewound[2] == 1 and "app.txt" in rewound[0]
    assert undone[2] == 0


# -- a daemon killed in the middle of a move -------------------------------------------------

#: Every fault point a rewind of files and a conversation passes.
POINTS = (
    "journal.journaled",
    "journal.conversation",
    "journal.conversed",
    "journal.wrote_path",
    "fsio.before_rename",
    "journal.before_finish",
)


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> object:
    """What the conversation scenario's rewind leaves when nothing interrupts it."""
    b = _build(tmp_path_factory.mktemp("reference"), SCENARIOS["conversation"])
    assert _run(b, "--json", "rewind", "2", "--yes").returncode == 0
    return _same_across_stores(b, _state(b))


@pytest.mark.parametrize("point", POINTS)
def test_a_daemon_killed_mid_move_leaves_what_resume_finishes(
    point: str, tmp_path: Path, reference: object
) -> None:
    b = _build(tmp_path, SCENARIOS["conversation"])
    with Serving(b.ws, b.env, fault=f"{point}:1") as daemon:
        done = _run(b, "--json", "rewind", "2", "--yes")
        assert daemon.killed_at() == point, done.stderr
        assert daemon.proc.wait(timeout=30) == -9
    assert done.returncode == 3, done.stderr
    assert json.loads(done.stdout)["error"]["code"] == "answer_lost"
    assert "`snapstore ops`" in done.stderr and "rewind --resume" in done.stderr
    with Store.open(b.ws) as store:  # the command line did not make the move itself
        assert len(store.unfinished_operations()) == 1
    resumed = _run(b, "--json", "rewind", "--resume")  # the daemon is gone: made here
    assert resumed.returncode == 0, resumed.stderr
    assert _same_across_stores(b, _state(b)) == reference


def test_a_daemon_gone_before_it_took_the_move_leaves_it_to_the_command_line(
    tmp_path: Path, reference: object
) -> None:
    """Killed after it read the request but before it said that the move is its own (a
    daemon stopping as the move comes looks the same): the command line makes the move
    itself, once."""
    b = _build(tmp_path, SCENARIOS["conversation"])
    with Serving(b.ws, b.env, fault="serve.taking:1") as daemon:
        done = _run(b, "--json", "rewind", "2", "--yes")
        assert daemon.killed_at() == "serve.taking", done.stderr
        assert daemon.proc.wait(timeout=30) == -9
    assert done.returncode == 0, done.stderr
    with Store.open(b.ws) as store:
        assert store.unfinished_operations() == []
        assert len(store.operations()) == 1
    assert _same_across_stores(b, _state(b)) == reference


# -- a second command line while a move runs ---------------------------------------------


def _spawn(b: Built, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*snapstore_bin(), "--session", b.session, *args],
        cwd=b.ws,
        env=b.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_a_second_client_waits_for_the_move_or_is_refused_as_busy(tmp_path: Path) -> None:
    b = _build(tmp_path, SCENARIOS["plain rewind"])
    with Serving(b.ws, b.env, pause="journal.wrote_path") as daemon:
        first = _spawn(b, "--json", "rewind", "2", "--yes")
        wait_until(daemon.paused, timeout=60)  # the rewind is half written, the lock held
        hurried = _run(b, "--lock-timeout", "0.2", "--json", "undo")
        assert hurried.returncode == 3, hurried.stderr
        assert json.loads(hurried.stdout)["error"]["code"] == "locked"
        second = _spawn(b, "--json", "undo")  # waits for the rewind, then takes it back
        daemon.release()
        out, err = first.communicate(timeout=60)
        assert first.returncode == 0, err
        rewound = json.loads(out)
        out, err = second.communicate(timeout=60)
        assert second.returncode == 0, err
        undone = json.loads(out)
        said = [line.split()[1:3] for line in daemon.moves()]
    assert rewound["restored"] == ["notes.txt"] and undone["restored"] == ["notes.txt"]
    assert undone["target"] == rewound["undo_id"]  # the second came after the first
    assert read(b.ws, "notes.txt") == b"version 2\n"
    assert sorted(said) == [["rewind", "2"], ["undo", "(session"], ["undo", "(session"]]
    with Store.open(b.ws) as store:  # the refused one made nothing
        assert [op.action for op in store.operations()] == ["undo", "rewind"]


# -- when the daemon does not take the move -------------------------------------------------


def test_a_daemon_of_another_version_is_left_alone(tmp_path: Path) -> None:
    """Its lock names its version: the command line makes the move itself, without asking."""
    b = _build(tmp_path, SCENARIOS["plain rewind"])
    with Serving(b.ws, b.env, version="0.0.1-other") as daemon:
        done = _run(b, "--json", "rewind", "2", "--yes")
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["restored"] == ["notes.txt"]
        assert daemon.moves() == []
    assert read(b.ws, "notes.txt") == b"version 0\n"


def _post(
    daemon: Serving, body: dict[str, object] | bytes, secret: str | None = None
) -> tuple[int, dict[str, object]]:
    port = json.loads((daemon.ws / ".snapstore" / "serve.lock").read_text())["port"]
    if secret is None:
        secret = (daemon.ws / ".snapstore" / "serve.secret").read_text().strip()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        headers = {"Content-Type": "application/json"}
        if secret:
            headers["X-Snapstore-Secret"] = secret
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        conn.request("POST", PATH, body=raw, headers=headers)
        reply = conn.getresponse()
        return reply.status, json.loads(reply.read())
    finally:
        conn.close()


def test_the_daemon_refuses_another_version_environment_or_move(tmp_path: Path) -> None:
    """Before it starts anything: another client version or protocol, the agents' homes or the
    clock of another environment, a move that is not one, or no secret."""
    from snapstore_cli.operations.requests import Move
    from snapstore_cli.settings.environment import agent_homes

    b = _build(tmp_path, SCENARIOS["plain rewind"])
    move = Move("rewind", "2", b.session).to_json()
    with Serving(b.ws, b.env) as daemon:
        homes = agent_homes(b.env)
        good = {
            "protocol": PROTOCOL,
            "version": __version__,
            "move": move,
            "homes": homes,
            "now": float(b.env["SNAPSTORE_NOW"]),
            "lock_timeout": 10,
            "diffs": False,
        }
        for change, status in (
            ({"version": "0.0.1-other"}, 409),
            ({"protocol": PROTOCOL + 1}, 409),
            ({"homes": {**homes, "claude-code": "/elsewhere"}}, 409),
            ({"now": None}, 409),
            ({"move": {**move, "action": "rm -rf"}}, 400),
            ({"move": {**move, "paths": ["relative.txt"]}}, 400),
            ({"lock_timeout": "soon"}, 400),
        ):
            got, reply = _post(daemon, {**good, **change})
            assert (got, set(reply)) == (status, {"error"}), change
        for hostile in (b"[" * 100_000 + b"]" * 100_000, b"\xff not json", b"[]"):
            assert _post(daemon, hostile)[0] == 400
        got, reply = _post(daemon, good, secret="")
        assert got == 401
        assert daemon.moves() == []
        got, reply = _post(daemon, good)  # and the same request, right, is made
        assert got == 200 and reply["outcome"]["result"]["restored"] == ["notes.txt"]
    assert read(b.ws, "notes.txt") == b"version 0\n"


def test_a_daemon_that_is_gone_or_silent_leaves_the_move_here_at_once(tmp_path: Path) -> None:
    """A lock no process holds (the daemon died: its pid is dead) is not asked at all; a lock
    held whose port does not answer is left at the first refused connection."""
    b = _build(tmp_path, SCENARIOS["plain rewind"])
    store = b.ws / ".snapstore"
    write(b.ws, ".snapstore/serve.secret", "0" * 64 + "\n")
    listener = socket.create_server(("127.0.0.1", 0))  # where the stale lock points
    listener.setblocking(False)
    port = listener.getsockname()[1]
    stale = {"pid": 2**22 + 1, "port": port, "version": __version__, "protocol": PROTOCOL}
    (store / "serve.lock").write_text(json.dumps(stale))
    with listener:
        done = _run(b, "--json", "rewind", "2", "--yes")
        assert done.returncode == 0, done.stderr
        with pytest.raises(BlockingIOError):
            listener.accept()  # nobody knocked
    assert read(b.ws, "notes.txt") == b"version 0\n"
    # held, but nothing listens on its port any more
    import fcntl

    with socket.create_server(("127.0.0.1", 0)) as gone:
        port = gone.getsockname()[1]
    fd = os.open(store / "serve.lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps({**stale, "pid": os.getpid(), "port": port}).encode(), 0)
        done = _run(b, "--json", "undo")
        assert done.returncode == 0, done.stderr
    finally:
        os.close(fd)
    assert read(b.ws, "notes.txt") == b"version 2\n"


# -- the command line the daemon answers, and Click's moves ------------------------------------


def test_a_routed_move_loads_neither_the_store_nor_its_database(root: Path, tmp_path: Path) -> None:
    env = hermetic_env()
    b = Built(root, {}, env, "default", None)
    with Store.init(root) as store:
        SCENARIOS["plain rewind"].build(b, store)
    with Serving(root, env) as daemon:
        code, loaded = _launched(["rewind", "2", "--yes"], root, tmp_path / "modules.json")
        assert code == 0 and [m.split()[1] for m in daemon.moves()] == ["rewind"]
    assert read(root, "notes.txt") == b"version 0\n"
    for heavy in ("lmdb", "snapstore.store", "snapstore.core.db", "snapstore.ops.plan", "click"):
        assert heavy not in loaded, heavy


def test_clicks_moves_go_to_the_daemon_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A switch, a redo refused, and a rewind a person confirmed: the preview and the move
    both made by the daemon, the prompt by the command line."""
    from snapstore_cli.doors.click.commands import rewind

    b = _build(tmp_path, SCENARIOS["conversation"])
    with Store.open(b.ws) as store:
        first = store.rewind_points(CLAUDE)[-1].turn.id
    with Serving(b.ws, b.env) as daemon:
        switched = _run(b, "--json", "switch", first, "--yes", click=True)
        assert switched.returncode == 0, switched.stderr
        redo = _run(b, "--json", "redo", click=True)  # nothing to redo: refused as here
        assert redo.returncode == 4, redo.stderr
        asked: list[str] = []
        monkeypatch.setattr(rewind, "_interactive", lambda: True)
        monkeypatch.setattr("click.confirm", lambda text, **_: asked.append(text) or True)
        confirmed = _run(b, "rewind", "1", click=True)
        assert confirmed.returncode == 0, confirmed.stderr
        assert asked == ["Rewind?"]
        assert [m.rsplit(": ", 1)[0] for m in daemon.moves()] == [
            f"move: switch {first} (session {CLAUDE})",
            f"move: redo (session {CLAUDE})",
            f"move: rewind 1 --dry-run (session {CLAUDE})",
            f"move: rewind 1 (session {CLAUDE})",
        ]
