"""``codex app-server``, driven over its JSON-RPC on stdio as Codex's own clients drive it: a
turn started, then steered with a second user message while it runs (what the TUI does when
the user types while Codex works), which ``codex exec`` cannot do.

Codex runs hooks only once their hash is trusted (``exec`` takes
``--dangerously-bypass-hook-trust``): :func:`trust_hooks` asks the server which hooks it sees
and records each one's hash in ``config.toml``, as the TUI's trust prompt does.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .session import Session

Message = dict[str, Any]


class AppServer:
    """One ``codex app-server`` process of the session, with its messages as they come."""

    def __init__(self, s: Session):
        self.log = open(s.base / "app-server.err", "a")  # noqa: SIM115 (closed by close())
        self.proc = subprocess.Popen(
            [str(s.exe), "app-server"],
            cwd=s.workspace,
            env=s.env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
            start_new_session=True,
        )
        self.inbox: queue.Queue[Message] = queue.Queue()
        self.seen: list[Message] = []
        self.ids = 0
        threading.Thread(target=self._read, daemon=True).start()
        self.call("initialize", {"clientInfo": {"name": "snapstore-tests", "version": "1"}})
        self._send({"method": "initialized"})

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.inbox.put(json.loads(line))

    def _send(self, message: Message) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
        self.proc.stdin.flush()

    def call(self, method: str, params: Message) -> Any:
        """A request's result (its error fails the test)."""
        self.ids += 1
        self._send({"id": self.ids, "method": method, "params": params})
        reply = self.wait(lambda m: m.get("id") == self.ids and "method" not in m)
        assert "error" not in reply, reply
        return reply["result"]

    def wait(self, matches: Callable[[Message], bool], timeout: float = 180) -> Message:
        """The first message, seen or to come, that ``matches``."""
        for message in self.seen:
            if matches(message):
                return message
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                message = self.inbox.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            self.seen.append(message)
            if matches(message):
                return message
        raise AssertionError(f"codex app-server never sent it (stderr in {self.log.name})")

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def trust_hooks(s: Session) -> None:
    """Record the hash of every hook the server sees for the workspace as trusted."""
    server = AppServer(s)
    try:
        listed = server.call("hooks/list", {"cwds": [str(s.workspace)]})
    finally:
        server.close()
    with open(s.home / ".codex" / "config.toml", "a") as config:
        for entry in listed["data"]:
            for hook in entry["hooks"]:
                key, digest = json.dumps(hook["key"]), json.dumps(hook["currentHash"])
                config.write(f"\n[hooks.state.{key}]\ntrusted_hash = {digest}\n")


def steered_turn(s: Session, thread: str, prompt: str, steer: str, when: str) -> None:
    """A turn of ``thread`` started with ``prompt``, steered with ``steer`` once an item of
    type ``when`` (a command Codex runs) has started, and run to its end."""
    server = AppServer(s)
    try:
        server.call("thread/resume", {"threadId": thread})
        text = {"type": "text", "text_elements": []}
        turn = server.call("turn/start", {"threadId": thread, "input": [{**text, "text": prompt}]})
        turn_id = turn["turn"]["id"]
        server.wait(
            lambda m: m.get("method") == "item/started" and m["params"]["item"]["type"] == when
        )
        steered = {
            "threadId": thread,
            "expectedTurnId": turn_id,
            "input": [{**text, "text": steer}],
        }
        assert server.call("turn/steer", steered)["turnId"] == turn_id
        server.wait(lambda m: m.get("method") == "turn/completed")
    finally:
        server.close()


def thread_of(home: Path) -> str:
    """The id of the session's one Codex thread (its rollout's ``session_meta``)."""
    [rollout] = (home / ".codex" / "sessions").rglob("rollout-*.jsonl")
    with open(rollout) as f:
        return str(json.loads(f.readline())["payload"]["id"])
