"""The workspace's daemon as the hooks run it: started detached by a session's start, at
most once whatever races, gone when the last session ends or when idle, and never needed
for a shell-only turn to be recorded and rewound exactly."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest
from snapstore_cli.doors.daemon import info
from snapstore_cli.operations.lifecycle import SESSIONS_DIR

from ..support import hermetic_env, reaper, snapstore_bin, wait_until
from .test_hooks import ok, payload, shell_only_turn, snapstore, workspace_files

AGENT = "claude-code"
UP = {"SNAPSTORE_DAEMON": "auto"}


def alive(pid: int) -> bool:
    """Whether the process runs: a detached daemon's parent is init, which may leave it a
    zombie for a while after it exits."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def watcher_pid(store: Path) -> int | None:
    """The pid in the watcher's lock while one holds it."""
    from snapstore.ops.watchlink import watcher_info

    found = watcher_info(str(store))
    return found.get("pid") if found and found.get("sync") else None


@pytest.fixture
def store(root: Path):
    """A workspace in scan mode with the agent's default hooks; every daemon started in it
    is stopped by pid at the end (and by the run's reaper if the run dies)."""
    (root / "data.txt").write_text("alpha\ngamma\nalpha two\n")
    (root / "old.txt").write_text("this file is removed by the agent's shell command\n")
    assert snapstore(root, "hook", "install", AGENT).returncode == 0
    reaper.watch_folder(root)
    folder = root / ".snapstore"
    yield folder
    running = info(str(folder))
    if running and running.get("pid"):
        os.kill(running["pid"], signal.SIGTERM)
        wait_until(lambda: not alive(running["pid"]), timeout=30)


def session(root: Path, event: str, session_id: str, **env: str) -> None:
    """One SessionStart or SessionEnd hook of a Claude Code session."""
    name = "session-start" if event == "SessionStart" else "session-end"
    data = payload(AGENT, name, root, session_id=session_id, hook_event_name=event)
    done = subprocess.run(
        [*snapstore_bin(), "hook", AGENT],
        cwd=root,
        input=json.dumps(data).encode(),
        capture_output=True,
        env=hermetic_env(**env),
        timeout=60,
    )
    ok(done)


def daemon_up(store: Path) -> int:
    """Wait until the daemon listens and its watcher answers; the daemon's pid."""
    wait_until(lambda: (info(str(store)) or {}).get("port") and watcher_pid(store), timeout=60)
    return info(str(store))["pid"]  # type: ignore[index]


def test_session_start_hooks_racing_start_exactly_one_daemon(root: Path, store: Path) -> None:
    data = json.dumps(payload(AGENT, "session-start", root)).encode()
    hooks = [
        subprocess.Popen(
            [*snapstore_bin(), "hook", AGENT],
            cwd=root,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=hermetic_env(**UP),
        )
        for _ in range(8)
    ]
    for proc in hooks:
        out, err = proc.communicate(data, timeout=60)
        assert (proc.returncode, out, err) == (0, b"", b"")
    pid = daemon_up(store)
    log = (store / "serve.log").read_text()
    assert log.count("snapstore serve: listening on") == 1, log
    assert "already running" not in log
    session(root, "SessionStart", "another", **UP)  # a running daemon is left alone
    assert info(str(store))["pid"] == pid  # type: ignore[index]
    assert (store / "serve.log").read_text().count("listening on") == 1


def test_the_daemon_exits_when_the_last_session_ends(root: Path, store: Path) -> None:
    session(root, "SessionStart", "one", **UP)
    session(root, "SessionStart", "two", **UP)
    pid = daemon_up(store)
    watcher = watcher_pid(store)
    assert len(os.listdir(store / SESSIONS_DIR)) == 2
    session(root, "SessionEnd", "one", **UP)
    assert os.listdir(store / SESSIONS_DIR) != [] and alive(pid)
    session(root, "SessionEnd", "two", **UP)
    wait_until(lambda: not alive(pid), timeout=30)
    assert watcher is not None and not alive(watcher)  # its watcher went with it
    assert info(str(store)) is None
    assert "stopping: the last session has ended" in (store / "serve.log").read_text()


def test_the_daemon_exits_when_idle(root: Path, store: Path) -> None:
    config = store / "config"
    config.write_text(config.read_text() + "\n[serve]\nidle_minutes = 0.02\n")
    assert snapstore(root, "config", "trust").returncode == 0
    session(root, "SessionStart", "one", **UP)
    pid = daemon_up(store)
    wait_until(lambda: not alive(pid), timeout=30)
    assert "stopping: idle for 0.02 minutes" in (store / "serve.log").read_text()


@pytest.mark.parametrize("daemon", ["up", "killed"])
def test_a_shell_only_turn_is_recorded_and_rewound_exactly_with_the_daemon_up_or_killed(
    root: Path, store: Path, daemon: str
) -> None:
    session(root, "SessionStart", payload(AGENT, "stop", root)["session_id"], **UP)
    pid = daemon_up(store)
    env = UP
    if daemon == "killed":
        os.kill(pid, signal.SIGKILL)
        wait_until(lambda: not alive(pid) and watcher_pid(store) is None, timeout=30)
        env = {}  # and no hook starts another: the hooks walk the tree
    before = workspace_files(root)
    shell_only_turn(root, AGENT, **env)
    assert not (root / "old.txt").exists()
    shown = json.loads(snapstore(root, "--json", "show", "1").stdout)
    assert sorted(c["path"] for c in shown["changes"]) == ["data.txt", "old.txt"]
    # with the daemon up its watcher recorded them; without it, a scan of the tree did
    assert {c["source"] for c in shown["changes"]} == {"watch" if daemon == "up" else "scan"}
    assert (info(str(store)) is not None) == (daemon == "up")
    rewind = snapstore(root, "--json", "rewind", "1", "--yes")
    assert rewind.returncode == 0, rewind.stderr
    assert workspace_files(root) == before


@pytest.mark.parametrize("started", ["by a session", "by serve --detach"])
@pytest.mark.parametrize("gone", ["workspace removed", "store replaced"])
def test_a_daemon_ends_with_its_workspace(root: Path, store: Path, gone: str, started: str) -> None:
    """Removed, or its store replaced by another: the daemon and its watcher end within
    seconds (a bound against a hang), and leave no entry in the user's list of daemons;
    also one that no session started, which would otherwise wait for its idle time."""
    import shutil

    if started == "by a session":
        session(root, "SessionStart", "one", **UP)
    else:
        assert snapstore(root, "serve", "--detach").returncode == 0
    pid = daemon_up(store)
    watcher = watcher_pid(store)
    listed = Path(os.environ["XDG_STATE_HOME"]) / "snapstore" / "daemons" / f"{pid}.json"
    assert json.loads(listed.read_text())["root"] == str(root)

    def removed(path: Path) -> bool:  # as `rm -rf` run again: the watcher may record the
        try:  # removals in the store while the tree goes, until it sees the tree gone
            shutil.rmtree(path)
        except FileNotFoundError:
            pass
        except OSError:
            return False
        return True

    if gone == "workspace removed":
        wait_until(lambda: removed(root), timeout=10)
    else:
        wait_until(lambda: removed(store), timeout=10)
        assert snapstore(root, "init", "--no-track-shell").returncode == 0
    wait_until(lambda: not alive(pid) and not (watcher and alive(watcher)), timeout=10)
    assert not listed.exists()


def test_sessions_and_doctor_name_a_daemon_whose_workspace_is_gone(
    root: Path, tmp_path: Path
) -> None:
    """One that does not end on its own (hung, or of an older release): its entry names a
    live process and a workspace that is gone; an entry whose process died is pruned."""
    assert snapstore(root, "init").returncode == 0
    folder = Path(os.environ["XDG_STATE_HOME"]) / "snapstore" / "daemons"
    folder.mkdir(parents=True, exist_ok=True)
    hung = subprocess.Popen(["sleep", "300"])
    dead = subprocess.Popen(["true"])
    dead.wait()
    gone = str(tmp_path / "deleted-workspace")
    try:
        for proc in (hung, dead):
            entry = {
                "pid": proc.pid,
                "root": gone,
                "store": gone + "/.snapstore",
                "dev": 1,
                "ino": 2,
            }
            (folder / f"{proc.pid}.json").write_text(json.dumps(entry))
        listed = snapstore(root, "sessions")
        assert listed.returncode == 0
        line = f"snapstore serve (pid {hung.pid}) still runs for {gone}, which is gone"
        assert line in listed.stderr
        doctor = snapstore(root, "--json", "doctor")
        assert json.loads(doctor.stdout)["stray_daemons"] == [
            {"pid": hung.pid, "root": gone, "store": gone + "/.snapstore"}
        ]
        assert not (folder / f"{dead.pid}.json").exists()  # pruned as it was read
    finally:
        hung.kill()
        hung.wait()
