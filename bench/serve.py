"""``snapstore serve`` for the process benchmarks: the installed daemon, and a client that
posts hook events to it the way Claude Code's HTTP hooks do.

Each event is one ``POST /snapstore/hook/claude-code`` with the workspace's secret in
``X-Snapstore-Secret``, on one kept-alive connection: Claude Code 2.1.332 sent a whole
session's hook events on one connection (22 events, 1 connection, counted by a server on
loopback). A reply must be 200 with an empty body (go ahead, nothing to
say), or the figure is refused: a figure is only taken of work that was done.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import time
from typing import Any

from .installed import Installed, run
from .measure import timed

HOOK = "/snapstore/hook/claude-code"


class Daemon:
    """``snapstore serve --detach`` in one workspace, stopped by its pid."""

    def __init__(self, inst: Installed, root: str):
        self.root = root
        _, proc = run([inst.snapstore, "--json", "serve", "--detach"], root)
        started: dict[str, Any] = json.loads(proc.stdout)
        self.pid, self.port = int(started["pid"]), int(started["port"])
        with open(os.path.join(root, ".snapstore", "serve.secret"), encoding="ascii") as handle:
            self.secret = handle.read().strip()
        self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)

    def post(self, body: bytes) -> float:
        """Send one event; the wall time until the whole reply is in."""

        def exchange() -> None:
            self.conn.request(
                "POST",
                HOOK,
                body=body,
                headers={"X-Snapstore-Secret": self.secret, "Content-Type": "application/json"},
            )
            reply = self.conn.getresponse()
            answer = reply.read()
            if reply.status != 200 or answer:
                raise RuntimeError(f"snapstore serve answered {reply.status} {answer[:300]!r}")

        return timed(exchange)[0]

    def stop(self) -> None:
        self.conn.close()
        try:
            os.kill(self.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                os.kill(self.pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.02)
        os.kill(self.pid, signal.SIGKILL)
