"""Run a real agent CLI through a multi-turn session against the fake model, and clean up.

A `Session` owns a temporary workspace and home folder, the fake model, the dead-end proxy, and
the agent's driver. `run(prompt)` starts the CLI headless in its own process group with a time
limit, continues the same conversation from the second turn on, and kills the whole group when
the CLI returns or runs out of time, so nothing it spawned outlives the turn.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import reaper
from .drivers import DRIVERS, Driver
from .egress import Blackhole, strace_connects
from .fake_model import FakeModel, Turn
from .install import install

RUN_TIMEOUT = 180.0  # seconds for one headless turn; a cold Node CLI on 2 busy cores needs ~10


@dataclass
class Run:
    prompt: str
    code: int
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False

    def brief(self) -> str:
        """What the CLI said, cut to fit an assertion message."""
        return (
            f"exit {self.code}{' (timed out)' if self.timed_out else ''} after "
            f"{self.seconds:.1f} s\nstdout: {self.stdout[-1500:]}\nstderr: "
            f"{self.stderr[-1500:]}"
        )


@dataclass
class Session:
    agent: str
    base: Path  # an empty temporary folder
    turns: list[Turn]
    strace: bool = False
    driver: Driver = field(init=False)
    model: FakeModel = field(init=False)
    proxy: Blackhole = field(init=False)
    runs: list[Run] = field(default_factory=list)
    state: dict[str, Any] = field(default_factory=dict)  # the driver's memory between turns
    extra_env: dict[str, str] = field(default_factory=dict)  # for the CLI and its hooks

    def __post_init__(self) -> None:
        self.driver = DRIVERS[self.agent]()
        self.workspace = self.base / "ws"
        self.home = self.base / "home"
        for d in (self.workspace, self.home):
            d.mkdir(parents=True, exist_ok=True)
        self.workspace = self.workspace.resolve()
        self.exe = install(self.driver.pin or self.agent)
        self.model = FakeModel(
            self.driver.script(self.turns), self.driver.tool_call, str(self.workspace)
        )
        self.proxy = Blackhole()

    def __enter__(self) -> Session:
        reaper.watch_folder(self.base)  # a killed run leaves none of its daemons
        self.model.start()
        self.proxy.start()
        try:
            self.driver.setup(self)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        reaper.kill_in(self.base)
        self.model.stop()
        self.proxy.stop()

    def env(self) -> dict[str, str]:
        """A hermetic environment: a fresh home, every proxy variable at the dead end, no
        colour, and the agent's own switches for its model URL, telemetry and updates."""
        h = self.home
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(h),
            "USER": "tester",
            "LANG": "C.UTF-8",
            "TERM": "dumb",
            "NO_COLOR": "1",
            "FORCE_COLOR": "0",
            "CI": "1",
            "XDG_CONFIG_HOME": str(h / ".config"),
            "XDG_DATA_HOME": str(h / ".local/share"),
            "XDG_CACHE_HOME": str(h / ".cache"),
            "XDG_STATE_HOME": str(h / ".local/state"),
            "TMPDIR": str(self.base),
            "PYTHON": sys.executable,
        }
        for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
            env[var] = env[var.lower()] = self.proxy.url
        env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost,::1"
        env.update(self.driver.env(self))
        env.update(self.extra_env)
        return env

    def run(self, prompt: str, timeout: float = RUN_TIMEOUT) -> Run:
        """Run one turn headless; the driver continues the session from the second turn on."""
        cmd = self.driver.command(self, prompt, first=not self.runs)
        n = len(self.runs) + 1
        code_path = self.base / f"exit.{n}"
        if self.strace:  # a shell between strace and the CLI keeps the CLI's exit status
            trace = str(self.base / f"strace.{n}")
            cmd = [
                "strace",
                "-f",
                "-qq",
                "-e",
                "trace=connect",
                "-o",
                trace,
                "/bin/sh",
                "-c",
                '"$@"; echo $? > "$0.tmp"; mv "$0.tmp" "$0"',
                str(code_path),
                *cmd,
            ]
        out_path, err_path = self.base / f"stdout.{n}", self.base / f"stderr.{n}"
        t0 = time.monotonic()
        # files, not pipes: a daemon the CLI leaves behind (Cline's hub) would hold a pipe open
        with open(out_path, "w") as out, open(err_path, "w") as err:
            proc = subprocess.Popen(
                cmd,
                cwd=self.workspace,
                env=self.env(),
                text=True,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
                preexec_fn=reaper.die_with_parent(),
            )
            timed_out = not _wait_for_cli(proc, timeout, code_path if self.strace else None)
        if not timed_out:
            _let_hooks_finish(proc.pid, self.base, self.driver.daemons)
        _kill_group(proc.pid)  # whatever the CLI left running in its group
        reaper.kill_in(self.base)  # and daemons that left it (Cline's hub)
        proc.wait()
        code = proc.returncode
        if self.strace:
            text = code_path.read_text().strip() if code_path.exists() else ""
            code = int(text) if text else -9
        out, err = out_path.read_text(errors="replace"), err_path.read_text(errors="replace")
        run = Run(prompt, code, out, err, time.monotonic() - t0, timed_out)
        self.runs.append(run)
        self.driver.after_run(self, run)
        return run

    def connects(self) -> list[str]:
        """Every address a straced run connected to."""
        return [
            a
            for i in range(1, len(self.runs) + 1)
            for a in strace_connects(self.base / f"strace.{i}")
        ]


def _wait_for_cli(proc: subprocess.Popen, timeout: float, exit_file: Path | None) -> bool:
    """Wait until the CLI exits; False when it ran out of time. Under strace, which waits for
    every descendant (daemons included), the CLI has exited when its shell wrote EXIT_FILE."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None or (exit_file is not None and exit_file.exists()):
            return True
        time.sleep(0.05)
    return False


#: The workspace's daemon and its watcher, which the hooks start and leave running.
SNAPSTORE_DAEMON = ("-m snapstore_cli --root",)


def _let_hooks_finish(pgid: int, base: Path, daemons: tuple[str, ...], grace: float = 10.0) -> None:
    """Give hook commands the CLI did not wait for time to end on their own, as they would for
    a user (Cline runs each hook in a session of its own and exits while its TaskComplete hook
    still runs): wait until nothing but the group's leader (the CLI, or strace) and the agent's
    known daemons is left."""
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        hooks = [
            pid
            for pid, cmdline in reaper.processes_in(base)
            if pid != pgid and not any(d in cmdline for d in (*daemons, *SNAPSTORE_DAEMON))
        ]
        if not hooks and not _group_members(pgid) - {pgid}:
            return
        time.sleep(0.05)


def _group_members(pgid: int) -> set[int]:
    members = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.add(int(stat.parent.name))
    return members


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def read_log(path: Path) -> list[dict[str, Any]]:
    """The recorder's lines, in the order the hooks ran."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
