"""The serve command: the daemon that agents' HTTP hooks post to (snapstore_cli.daemon)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import click

from snapstore import NotFound
from snapstore.core.db import append_private

from ....output.plain import say, tell
from ..app import common_options, emit, options
from ..params import Number

LOG_FILE = "serve.log"


@click.command()
@click.option(
    "--stop",
    "stop_running",
    is_flag=True,
    help="Stop the daemon running for this store, then exit.",
)
@click.option(
    "--detach",
    is_flag=True,
    help="Start it in the background unless it runs already, and return "
    "(its output goes to <store>/serve.log).",
)
@click.option(
    "--port",
    type=Number("a TCP port", whole=True, low=1, high=65535),
    metavar="N",
    help="Listen on this port, and keep it in the store's config (default: the "
    "one there, else a free one, chosen now).",
)
@click.option("--lock-fd", type=int, hidden=True)  # the lock a hook took for it (lifecycle)
@common_options
def serve(stop_running: bool, detach: bool, port: int | None, lock_fd: int | None) -> None:
    """Run the workspace's daemon: answer agents' HTTP hooks on 127.0.0.1 and, in scan
    mode, watch the workspace (as `snapstore watch`), until stopped.

    Only capture events are accepted, only from this machine, and only with the
    workspace's secret (<store>/serve.secret). The agents' hooks start it when a
    session starts; it stops when the last session ends, or after [serve]
    idle_minutes (30) with nothing to do. Stop it with Ctrl-C, SIGTERM or
    `snapstore serve --stop`.
    """
    from ....settings.config import set_serve_port
    from ... import daemon

    opts = options()
    with opts.open_store(create=False) as store:
        store_dir, root = store.store_dir, store.root
    if stop_running:
        _stop(store_dir, opts.env.lock_timeout)
        return
    if port is not None:
        set_serve_port(store_dir, port)
    running = daemon.info(store_dir)
    deadline = time.monotonic() + max(opts.env.lock_timeout, 5.0)
    while running == {} and detach and time.monotonic() < deadline:  # one starting: wait
        time.sleep(0.02)
        running = daemon.info(store_dir)
    if detach and running:
        emit(
            {"pid": running.get("pid"), "port": running.get("port"), "started": False},
            lambda: tell(
                f"snapstore serve is already running (pid {running.get('pid')}, "
                f"port {running.get('port')})"
            ),
        )
        return
    chosen = daemon.port(store_dir)
    daemon.secret(store_dir)  # one that is not ours is refused here, not in the background
    if detach:
        found = _detach(store_dir, root, opts.env.lock_timeout)
        emit(
            {"pid": found.get("pid"), "port": found.get("port"), "started": True},
            lambda: tell(
                f"snapstore serve started (pid {found.get('pid')}, port "
                f"{found.get('port')}); its output goes to "
                f"{os.path.join(store_dir, LOG_FILE)}"
            ),
        )
        return
    serving = daemon.Serving(
        opts.env,
        root,
        store_dir,
        chosen,
        lambda text: say(f"{time.strftime('%H:%M:%S')} {text}"),
        lock_fd=lock_fd,
    )
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, lambda *_: serving.stop())
    if not opts.json:
        say(
            f"snapstore serve: listening on 127.0.0.1:{serving.port} for {root} "
            "(stop with Ctrl-C or `snapstore serve --stop`)"
        )
    started = time.monotonic()
    serving.run(watch=serving.daemon.config.track_shell)
    emit(
        {
            "root": root,
            "port": serving.port,
            "seconds": round(time.monotonic() - started, 3),
            "why": serving.exit_reason or "stopped",
        },
        lambda: say(f"snapstore serve: stopped ({serving.exit_reason or 'asked to'})"),
    )


def _detach(store_dir: str, root: str, timeout: float) -> dict:
    """Start the daemon as a process of its own and wait until it listens."""
    from ... import daemon

    log = os.path.join(store_dir, LOG_FILE)
    with append_private(log) as handle:
        proc = subprocess.Popen(
            [sys.executable, "-m", "snapstore_cli", "--root", root, "serve"],
            cwd=root,
            stdin=subprocess.DEVNULL,
            stdout=handle,
            stderr=handle,
            start_new_session=True,
            close_fds=True,
        )
    deadline = time.monotonic() + max(timeout, 5.0)
    while time.monotonic() < deadline:
        found = daemon.info(store_dir)
        if found and found.get("pid") == proc.pid and found.get("port"):
            return found
        if proc.poll() is not None:
            found = daemon.info(store_dir)  # another start won the race: that one serves
            if found and found.get("port"):
                return found
            with open(log, "rb") as handle:
                tail = handle.read()[-2000:].decode(errors="replace").strip().splitlines()
            raise click.ClickException(
                f"snapstore serve did not start: {tail[-1] if tail else 'see ' + log}"
            )
        time.sleep(0.02)
    raise click.ClickException(f"snapstore serve did not start within {timeout:.0f} s (see {log})")


def _stop(store_dir: str, timeout: float) -> None:
    """Send SIGTERM to the running daemon and wait for it to let go of its lock."""
    from ... import daemon

    found = daemon.info(store_dir)
    if not found or not isinstance(found.get("pid"), int):
        raise NotFound("snapstore serve is not running for this store")
    pid = found["pid"]
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        raise NotFound(f"the daemon's process {pid} is not visible from here") from None
    deadline = time.monotonic() + timeout
    stopped = False
    while time.monotonic() < deadline:
        if daemon.info(store_dir) is None:
            stopped = True
            break
        time.sleep(0.02)
    emit(
        {"stopped": stopped, "pid": pid},
        lambda: tell(f"snapstore serve {pid} {'stopped' if stopped else 'did not stop in time'}"),
    )
