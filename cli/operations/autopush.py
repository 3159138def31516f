"""Automatic push: at each turn's end the hook starts ``snapstore push NAME --all`` and
goes on without waiting.

Turned on in ``<store>/config``::

    [remote]
    auto_push = origin

The push runs as a fresh, detached process (the S3 client must never be used
across ``fork()``, and the hook must never wait for the network or import the
client). Its output goes to ``<store>/push.log``. A push that fails leaves
nothing half-done on the remote that matters, and the next turn's push sends
everything still missing, so nothing is lost. This module imports no Click.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

from snapstore.core.db import append_private

LOG_FILE = "push.log"


def start(store_dir: str, root: str, name: str) -> int:
    """Start the background push; returns its pid."""
    log = os.path.join(store_dir, LOG_FILE)
    with append_private(log) as handle:
        handle.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} push {name}\n".encode())
        env = dict(os.environ)
        env.setdefault("SNAPSTORE_DIR", store_dir)
        proc = subprocess.Popen(
            [sys.executable, "-m", "snapstore_cli", "--root", root, "push", name, "--all"],
            cwd=root,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=handle,
            stderr=handle,
            start_new_session=True,
            close_fds=True,
        )
    return proc.pid
