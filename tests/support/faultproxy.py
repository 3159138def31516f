"""A loopback HTTP proxy that answers the first requests with injected S3 errors.

The remote tests put it in front of the real SeaweedFS server to prove the client
retries throttling (503 SlowDown, 429) and 5xx answers with a bounded backoff, and
gives up with a clear error when the faults go on. Every request past the faults
is forwarded unchanged (same Host header, so SigV4 signatures still verify).
"""

from __future__ import annotations

import http.client
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_REASONS = {
    429: ("SlowDown", "Please reduce your request rate."),
    500: ("InternalError", "We encountered an internal error. Please try again."),
    503: ("SlowDown", "Please reduce your request rate."),
}


@dataclass
class FaultPlan:
    """Which answers to inject: ``statuses[i]`` answers the i-th request, then pass through.

    With ``hide_conflicts``, the server's 412 to a create-only put becomes a 200: the
    proxy then plays a server that ignores ``If-None-Match``.
    """

    statuses: list[int] = field(default_factory=list)
    hide_conflicts: bool = False
    seen: int = 0
    injected: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def next_fault(self) -> int | None:
        with self.lock:
            self.seen += 1
            if self.statuses:
                self.injected += 1
                return self.statuses.pop(0)
            return None

    def reset(self, statuses: list[int]) -> None:
        with self.lock:
            self.statuses = list(statuses)
            self.seen = 0
            self.injected = 0


def _handler(upstream: tuple[str, int], plan: FaultPlan) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            pass

        def _body(self) -> bytes:
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                chunks = []
                while True:
                    size = int(self.rfile.readline().split(b";")[0], 16)
                    if size == 0:
                        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                            pass
                        return b"".join(chunks)
                    chunks.append(self.rfile.read(size))
                    self.rfile.readline()
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))

        def _serve(self) -> None:
            body = self._body()
            status = plan.next_fault()
            if status is not None:
                code, message = _REASONS[status]
                xml = (
                    f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code>'
                    f"<Message>{message}</Message></Error>"
                ).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/xml")
                self.send_header("Content-Length", str(len(xml)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(xml)
                return
            conn = http.client.HTTPConnection(*upstream, timeout=30)
            try:
                conn.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
                for name, value in self.headers.items():
                    if name.lower() not in ("transfer-encoding", "content-length", "connection"):
                        conn.putheader(name, value)
                conn.putheader("Content-Length", str(len(body)))
                conn.endheaders(body)
                resp = conn.getresponse()
                data = resp.read()
                status = resp.status
                hop = ("transfer-encoding", "content-length", "connection")
                headers = [(k, v) for k, v in resp.getheaders() if k.lower() not in hop]
                if status == 412 and plan.hide_conflicts and self.command == "PUT":
                    status, data = 200, b""
                    headers = [("ETag", '"00000000000000000000000000000000"')]
                self.send_response(status)
                for name, value in headers:
                    self.send_header(name, value)
                length = resp.getheader("Content-Length") if self.command == "HEAD" else None
                self.send_header("Content-Length", length or str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
            finally:
                conn.close()

        do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _serve

    return Handler


@contextmanager
def fault_proxy(upstream_port: int, plan: FaultPlan) -> Iterator[str]:
    """Run the proxy on a free loopback port; yields its endpoint URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(("127.0.0.1", upstream_port), plan))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="fault-proxy", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
