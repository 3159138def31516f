"""End to end: the watch daemon serves scans and stops cleanly."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

import pytest

from snapstore import Store
from snapstore.ops.watchlink import watcher_info

from ..support import hermetic_env, read, snapstore_bin, wait_until, write
from ..support.reaper import die_with_parent


@pytest.mark.process
def test_watch_daemon_serves_scans_and_stops_cleanly(cli, root: Path) -> None:
    write(root, "a.txt", "a\n")
    assert cli("init").code == 0
    daemon = subprocess.Popen(
        [*snapstore_bin(), "watch", "--json", "--debounce", "60"],
        cwd=root,
        env=hermetic_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=die_with_parent(),
    )
    try:
        with Store.open(root) as store:
            wait_until(lambda: (watcher_info(store.store_dir) or {}).get("sync"))
        assert cli("scan", "--json").json["source"] == "watch"  # answered once it is watching
        write(root, "a.txt", "changed\n")  # recorded when asked (the debounce is long)
        scanned = cli("scan", "--json")
        assert scanned.code == 0, scanned.stderr
        assert scanned.json["source"] == "watch" and not scanned.json["full"]
        assert scanned.json["changed"] == ["a.txt"]
        stopped = cli("watch", "--stop", "--json")
        assert stopped.code == 0 and stopped.json["stopped"], stopped.stderr
        out, err = daemon.communicate(timeout=30)
    finally:
        if daemon.poll() is None:
            daemon.send_signal(signal.SIGTERM)
            daemon.wait(timeout=30)
    assert daemon.returncode == 0, err
    assert "started" in err and "stopped" in err
    with Store.open(root) as store:
        assert watcher_info(store.store_dir) is None
    assert cli("scan", "--json").json["source"] == "scan"  # no daemon: a full scan again
    assert read(root, "a.txt") == b"changed\n"
    assert json.loads(out)["recorded"] == 1
