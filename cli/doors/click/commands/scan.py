"""The scan and watch commands: catch what shell commands and other programs change."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import click

from snapstore import NotFound

from ....output.plain import printable, tell
from ....output.results import scan_summary
from ... import fast
from ..app import common_options, emit, options
from ..params import Number

if TYPE_CHECKING:
    from snapstore import Store
    from snapstore.ops.scanrecord import ScanResult


@contextmanager
def scan_progress(enabled: bool) -> Iterator[Callable[[str, int, int], None] | None]:
    """A progress bar on stderr for a long scan (the first one), when a person watches."""
    if not enabled or not sys.stderr.isatty():
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    from ....output.rich import console

    out = console(stderr=True)

    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=out,
        transient=True,
    ) as bar:
        task = bar.add_task("looking at files", total=None)

        def update(phase: str, done: int, total: int) -> None:
            if phase == "walk":
                bar.update(task, description=f"looking at files ({done})")
            else:
                bar.update(task, description="reading and storing", completed=done, total=total)

        yield update


def track_shell_on(store: Store) -> ScanResult | None:
    """Put the store in scan mode and record the baseline (``operations.setup``), with a
    progress bar; None when it already was."""
    from ....operations.setup import cover_shell

    with scan_progress(not options().json) as progress:
        return cover_shell(store, progress)


@click.command("scan")
@click.option(
    "--max-file-size",
    metavar="SIZE",
    help="Skip (and report) larger files (default: the store's config, else 1GiB).",
)
@click.option(
    "--no-watcher", is_flag=True, help="Walk the workspace even when `snapstore watch` is running."
)
@common_options
def scan_command(max_file_size: str | None, no_watcher: bool) -> None:
    """Record what changed in the workspace since the last scan.

    A change seen inside one of the agent's shell calls (its hooks scan just
    before and after each) belongs to that agent's turn, and a rewind takes it
    back; every other change is yours, and is kept: this scan's too. The first
    scan records the baseline.
    """
    opts = options()
    with scan_progress(not opts.json) as progress:
        result = fast.scan(opts, max_file_size, no_watcher, progress)
    emit(result.to_json(), lambda: scan_summary(result))


def _stop_watcher(store_dir: str, pid: int, timeout: float) -> bool:
    """Send SIGTERM and wait for the watcher to let go of its lock."""
    from snapstore.ops.watchlink import watcher_info

    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        raise NotFound(f"the watcher's process {pid} is not visible from here") from None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if watcher_info(store_dir) is None:
            return True
        time.sleep(0.05)
    return False


@click.command()
@click.option(
    "--debounce",
    type=Number("a number of seconds"),
    default=0.2,
    show_default=True,
    metavar="SECONDS",
    help="Wait this long after a path's last event before recording it.",
)
@click.option(
    "--stop",
    "stop_running",
    is_flag=True,
    help="Stop the watcher running for this store, then exit.",
)
@common_options
def watch(debounce: float, stop_running: bool) -> None:
    """Watch the workspace and record changes as they happen, until stopped.

    Scans (and the hooks' scans at each turn) then ask the watcher instead of
    walking the whole tree. Stop it with Ctrl-C, SIGTERM or `snapstore watch --stop`.
    """
    from snapstore.ops.watch import WatchReport
    from snapstore.ops.watchlink import watcher_info

    opts = options()
    if stop_running:
        with opts.open_store() as store:
            store_dir = store.store_dir
        info = watcher_info(store_dir)
        if not info or not isinstance(info.get("pid"), int):
            raise NotFound("no watcher is running for this store")
        stopped = _stop_watcher(store_dir, info["pid"], opts.env.lock_timeout)
        emit(
            {"stopped": stopped, "pid": info["pid"]},
            lambda: tell(
                f"watcher {info['pid']} {'stopped' if stopped else 'did not stop in time'}"
            ),
        )
        return
    from ....output.rich import console

    # what it recorded (on stderr with --json: stdout holds the one document); what went wrong
    out, err = console(stderr=opts.json), console(stderr=True)
    # watchdog re-adds a new folder's watch it already has and warns about it: harmless
    warnings.filterwarnings("ignore", message="Callback with id", category=RuntimeWarning)

    def report(item: WatchReport) -> None:
        if item.kind != "answered":  # what an answer recorded is reported as "recorded"
            trouble = item.kind in ("fallback", "coverage", "error")
            (err if trouble else out).print(
                f"{time.strftime('%H:%M:%S')} {item.kind:<9} "
                f"{printable(item.message, quote=False)}",
                style="yellow" if trouble else "",
            )

    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, lambda *_: stop.set())
    started = time.monotonic()
    with opts.open_store() as store:
        watcher = store.watcher(debounce=debounce, report=report)
        with scan_progress(not opts.json) as progress:
            first = watcher.start(progress)
        if not opts.json:
            scan_summary(first)
        try:
            watcher.run(stop)
        finally:
            watcher.stop()
    emit(
        {
            "root": store.root,
            "recorded": watcher.recorded,
            "fallbacks": watcher.fallbacks,
            "unwatched": sorted(watcher.unwatched),
            "seconds": round(time.monotonic() - started, 3),
        },
        lambda: None,
    )
