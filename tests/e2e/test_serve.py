"""`snapstore serve`: the daemon that agents' HTTP hooks post to, as a real process.

What it must do: record an agent's turn from posted events exactly as the hook
command does; refuse whatever is not an authenticated capture event from this
machine (no secret, a wrong one, another Host, another path or method, a body
without a length or over the cap, a peer that is not loopback); never print
its secret; and stop cleanly. Every daemon a test starts is stopped by pid.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import socket
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from snapstore.adapters import MAX_PAYLOAD

from ..support import claude_event, hermetic_env, read, reaper, snapstore_bin, wait_until, write

HOOK = "/snapstore/hook/claude-code"
SESSION = "claude-code/3f2b9c1e-7a4d-4e8b-9c2f-1d5e6a7b8c90"


class Daemon:
    """A `snapstore serve --detach` of a test: its port and secret, stopped by pid."""

    def __init__(self, root: Path):
        self.root = root
        reaper.watch_folder(root)  # detached: if the run is killed, the reaper stops it
        done = subprocess.run(
            [*snapstore_bin(), "--json", "serve", "--detach"],
            cwd=root,
            env=hermetic_env(),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        started = json.loads(done.stdout)
        assert started["started"] is True
        self.pid, self.port = started["pid"], started["port"]
        self.secret = (root / ".snapstore" / "serve.secret").read_text().strip()
        self.output = done.stdout + done.stderr

    def post(
        self,
        body: bytes,
        headers: dict[str, str] | None = None,
        path: str = "/snapstore/hook/claude-code",
        method: str = "POST",
        host: str = "127.0.0.1",
    ) -> tuple[int, bytes]:
        conn = http.client.HTTPConnection(host, self.port, timeout=10)
        try:
            sent = {"X-Snapstore-Secret": self.secret, "Content-Type": "application/json"}
            sent.update(headers or {})
            conn.request(method, path, body=body, headers={k: v for k, v in sent.items() if v})
            reply = conn.getresponse()
            return reply.status, reply.read()
        finally:
            conn.close()

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGTERM)
        wait_until(lambda: not _alive(self.pid), timeout=20)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.fixture
def daemon(root: Path, cli) -> Iterator[Daemon]:
    write(root, "src/app.py", "original\n")
    assert cli("init").code == 0
    running = Daemon(root)
    try:
        yield running
    finally:
        running.stop()


def turns(cli) -> int:
    """How many turns the store holds."""
    return cli("status", "--json").json["turns"]


def turn_through(d: Daemon, root: Path, rel: str, content: str) -> None:
    """One agent turn posted to the daemon: prompt, a Write's pre and post, stop."""
    for body in (
        claude_event(root, "user-prompt-submit"),
        claude_event(root, "pre-tool-use-write", rel, tool_use_id=f"toolu_{rel}"),
    ):
        assert d.post(body) == (200, b"")
    write(root, rel, content)
    post = claude_event(root, "post-tool-use-write", rel, tool_use_id=f"toolu_{rel}")
    assert d.post(post) == (200, b"")
    assert d.post(claude_event(root, "stop")) == (200, b"")


def test_a_turn_posted_to_the_daemon_is_recorded_and_rewinds(
    daemon: Daemon, root: Path, cli
) -> None:
    turn_through(daemon, root, "src/app.py", "written by the agent\n")
    logged = cli("--session", SESSION, "log", "--json").json
    assert [(p["files"], p["state"]) for p in logged] == [(1, "closed")]
    assert cli("--session", SESSION, "rewind", "1", "--yes").code == 0
    assert read(root, "src/app.py") == b"original\n"


def test_the_secret_is_private_and_never_printed(daemon: Daemon, root: Path, cli) -> None:
    path = root / ".snapstore" / "serve.secret"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert len(daemon.secret) >= 32
    assert daemon.secret not in daemon.output
    log = root / ".snapstore" / "serve.log"
    daemon.post(b"{}", {"X-Snapstore-Secret": "0" * 64})
    again = cli("serve", "--detach")  # already running: says so, starts nothing
    assert again.code == 0 and "already running" in again.stdout
    for text in (
        again.stdout,
        again.stderr,
        log.read_text(),
        (root / ".snapstore" / "config").read_text(),
    ):
        assert daemon.secret not in text


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"X-Snapstore-Secret": ""}, 401),  # none
        ({"X-Snapstore-Secret": "0" * 64}, 403),  # a wrong one
        ({"X-Snapstore-Secret": "x"}, 403),  # a wrong one of another length
    ],
)
def test_a_missing_or_wrong_secret_is_refused(
    daemon: Daemon, root: Path, cli, headers: dict[str, str], status: int
) -> None:
    assert daemon.post(claude_event(root, "user-prompt-submit"), headers)[0] == status
    assert turns(cli) == 0


def test_only_capture_events_on_the_hook_path_are_taken(daemon: Daemon, root: Path, cli) -> None:
    body = claude_event(root, "user-prompt-submit")
    assert daemon.post(body, path="/snapstore/hook/gemini-cli")[0] == 404
    assert daemon.post(body, path="/rewind")[0] == 404
    assert daemon.post(body, path="/hook/claude-code")[0] == 404
    assert daemon.post(body, path="/snapstore/hook/claude-code/../rewind")[0] == 404
    # events that change nothing are answered and ignored: a session's start, a read
    assert daemon.post(claude_event(root, "session-start")) == (200, b"")
    assert daemon.post(
        json.dumps(
            {**json.loads(claude_event(root, "pre-tool-use-write")), "tool_name": "Read"}
        ).encode()
    ) == (200, b"")
    assert turns(cli) == 0
    # an event that names another workspace is refused, and says so
    other = json.loads(claude_event(root, "user-prompt-submit"))
    other["cwd"] = str(root.parent)
    status, reply = daemon.post(json.dumps(other).encode())
    assert status == 200 and "outside this daemon's workspace" in json.loads(reply)["systemMessage"]
    assert turns(cli) == 0
    assert "outside this daemon's workspace" in (root / ".snapstore" / "hook.log").read_text()


def test_every_other_request_gets_a_json_error(daemon: Daemon, root: Path, cli) -> None:
    """Another method, an unknown one, an unknown path, headers too long: each refusal is
    JSON with its status (never the standard library's HTML page), and the daemon goes on."""
    for method, path, status in (
        ("GET", HOOK, 405),
        ("DELETE", HOOK, 405),
        ("PUT", HOOK, 405),
        ("GET", "/", 404),
        ("BREW", HOOK, 501),
    ):
        got, body = daemon.post(b"", method=method, path=path)
        assert got == status, (method, path)
        assert isinstance(json.loads(body)["error"], str), body
    with socket.create_connection(("127.0.0.1", daemon.port), timeout=10) as sock:
        sock.sendall(
            f"POST {HOOK} HTTP/1.1\r\nHost: 127.0.0.1:{daemon.port}\r\n"
            f"X-Long: {'a' * 70000}\r\n\r\n".encode()
        )
        reply = b""
        while chunk := sock.recv(65536):
            reply += chunk
    head, _, body = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 431") and b"Content-Type: application/json" in head
    assert json.loads(body) == {"error": "Line too long"}
    assert daemon.post(claude_event(root, "session-start")) == (200, b"")
    assert turns(cli) == 0


def test_another_host_name_is_refused(daemon: Daemon, root: Path) -> None:
    """A web page whose name resolves to 127.0.0.1 (DNS rebinding) sends its own Host."""
    body = claude_event(root, "user-prompt-submit")
    assert daemon.post(body, {"Host": f"evil.example:{daemon.port}"})[0] == 403
    assert daemon.post(body, {"Host": "127.0.0.1:1"})[0] == 403
    assert daemon.post(body, {"Host": f"localhost:{daemon.port}"})[0] == 200


def test_the_body_is_capped_and_needs_a_length(daemon: Daemon, root: Path) -> None:
    with socket.create_connection(("127.0.0.1", daemon.port), timeout=10) as sock:
        sock.sendall(
            f"POST {HOOK} HTTP/1.1\r\nHost: 127.0.0.1:{daemon.port}\r\n"
            f"X-Snapstore-Secret: {daemon.secret}\r\n"
            f"Content-Length: {MAX_PAYLOAD + 1}\r\n\r\n".encode()
        )
        reply = sock.recv(4096)  # refused before a byte of the body is read
    assert reply.startswith(b"HTTP/1.1 413")
    with socket.create_connection(("127.0.0.1", daemon.port), timeout=10) as sock:
        sock.sendall(
            f"POST {HOOK} HTTP/1.1\r\nHost: 127.0.0.1:{daemon.port}\r\n"
            f"X-Snapstore-Secret: {daemon.secret}\r\n"
            "Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n".encode()
        )
        assert sock.recv(4096).startswith(b"HTTP/1.1 411")
    # a bad body is a failure of the event, not of the daemon: it answers the next one
    status, reply = daemon.post(b"not json")
    assert status == 200 and "not JSON" in json.loads(reply)["systemMessage"]
    assert daemon.post(claude_event(root, "user-prompt-submit")) == (200, b"")


def _other_address() -> str:
    """This machine's own address on its network (not loopback): where the route to an
    outside address leaves from (a UDP connect picks the route and sends nothing)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect(("198.51.100.1", 9))
        address = probe.getsockname()[0]
    assert not address.startswith("127."), "no address besides loopback on this machine"
    return address


def test_a_peer_that_is_not_loopback_is_refused(daemon: Daemon, root: Path) -> None:
    address = _other_address()
    # the daemon listens on 127.0.0.1 only: the machine's other address has nobody there
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection((address, daemon.port), timeout=5).close()
    # and a request that reaches the handler from another address is refused there too
    from snapstore_cli.doors.daemon import _Server

    class Exposed(_Server):  # the same server, bound to the other address for this test
        def server_bind(self) -> None:
            self.server_address = (address, 0)
            super().server_bind()

    server = Exposed(0, None, lambda text: None)  # type: ignore[arg-type]
    try:
        import threading

        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        port = server.server_address[1]
        conn = http.client.HTTPConnection(address, port, timeout=10)
        conn.request(
            "POST",
            "/snapstore/hook/claude-code",
            body=b"{}",
            headers={"X-Snapstore-Secret": daemon.secret, "Host": f"127.0.0.1:{port}"},
        )
        reply = conn.getresponse()
        assert reply.status == 403 and b"not from this machine" in reply.read()
        conn.close()
    finally:
        server.shutdown()
        server.server_close()


def test_stop_and_start_again(daemon: Daemon, root: Path, cli) -> None:
    stopped = cli("--json", "serve", "--stop")
    assert stopped.code == 0 and stopped.json == {"stopped": True, "pid": daemon.pid}
    wait_until(lambda: not _alive(daemon.pid))
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", daemon.port), timeout=5).close()
    assert cli("serve", "--stop").code == 4  # none runs now
    again = Daemon(root)  # the same port (the store's config keeps it), a new process
    try:
        assert again.port == daemon.port and again.pid != daemon.pid
        turn_through(again, root, "src/app.py", "second\n")
    finally:
        again.stop()


def test_a_killed_daemon_starts_again_at_once_with_the_agents_connection_open(
    daemon: Daemon, root: Path, cli
) -> None:
    """The agent keeps its connection open; the daemon is killed (SIGKILL: nothing closed
    cleanly, the port's connections linger for a minute); a new one listens on the same
    port at once and records the next turn."""
    agent = http.client.HTTPConnection("127.0.0.1", daemon.port, timeout=10)
    headers = {"X-Snapstore-Secret": daemon.secret, "Content-Type": "application/json"}
    agent.request("POST", HOOK, body=claude_event(root, "session-start"), headers=headers)
    assert agent.getresponse().read() == b""  # kept alive: the agent's connection stays open
    try:
        os.kill(daemon.pid, signal.SIGKILL)
        wait_until(lambda: not _alive(daemon.pid))
        again = Daemon(root)
        try:
            assert again.port == daemon.port and again.pid != daemon.pid
            turn_through(again, root, "src/app.py", "after the restart\n")
            assert turns(cli) == 1
        finally:
            again.stop()
    finally:
        agent.close()


@pytest.mark.process  # were it not refused, the second daemon would serve on in the test itself
def test_a_second_daemon_on_one_store_is_refused(daemon: Daemon, root: Path, cli) -> None:
    """One daemon per store: a second one in the foreground exits 3 and names the first."""
    second = cli("--json", "serve")
    assert second.code == 3, second.stderr
    error = second.json["error"]
    assert error["code"] == "locked" and f"pid {daemon.pid}" in error["message"]
    assert "snapstore serve --stop" in second.stderr
    assert daemon.post(claude_event(root, "stop")) == (200, b"")  # the first still answers
