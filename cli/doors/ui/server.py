"""``snapstore ui``'s server: the timeline page over HTTP, and its API over a WebSocket.

One asyncio server (the ``websockets`` library, the ``ui`` extra) answers both: its
``process_request`` hook serves the page's three files and refuses what it must before
any handshake, and ``/ws`` upgrades to the socket that carries the frames of
``snapstore_cli.ui.frames``. What it accepts:

- connections on 127.0.0.1 only (it binds nothing else);
- a ``Host`` of ``127.0.0.1:PORT`` or ``localhost:PORT``: a site whose own name was made to
  resolve to 127.0.0.1 (DNS rebinding) is refused (403);
- the token printed with the address, on every request (401 without it), compared in
  constant time; the page passes it on to its script, its style sheet and its socket (the
  page is also given the store's clock, so that it says how long ago a turn was as the
  command line does, ``SNAPSTORE_NOW`` included);
- for the socket, an ``Origin`` that is the page's own, or none (a program, not a
  browser): a page of another site the user has open cannot drive it (403);
- pages with a strict Content-Security-Policy: only the page's own script and style,
  no inline script, nothing framed, nothing sent elsewhere.

The store is opened for each piece of work and closed after it, on one worker thread,
so that the store's own locks order this server's operations with the agents' hooks and
the command line, and gc can compact it while the page is open. Live updates cost a
``stat`` every :data:`POLL` seconds: only when the store's data file changed (or was
written within :data:`RECENT`) are the subscribed answers (``frames.LIVE``) computed again,
and pushed where they differ.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import os
import secrets
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, urlsplit

from websockets.asyncio.server import ServerConnection, serve
from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from snapstore.core.db import data_file

from ...operations.context import Context
from . import frames

#: Seconds between two looks at the store for live updates.
POLL = 0.5
#: Nanoseconds after a write to the data file during which it is read again at each look.
RECENT = 2 * int(POLL * 1e9)
#: Frames, and bytes, waiting to be sent to one client; a client that falls this far behind
#: is dropped.
QUEUE = 64
QUEUE_BYTES = 8 * 1024 * 1024
#: The close code for a dropped client (1008: policy violation, RFC 6455 §7.4.1).
CLOSE_BEHIND = 1008
#: The largest request frame accepted (frames name sessions and turns, never file bodies).
MAX_FRAME = 64 * 1024
#: The page's files: name -> content type.
FILES = {
    "/": "text/html; charset=utf-8",
    "/app.js": "text/javascript; charset=utf-8",
    "/app.css": "text/css; charset=utf-8",
}
SOCKET = "/ws"


class UiServer:
    """The page and its API for one store, on one loopback port.

    ``ctx`` opens the store (the command line's settings: its clock, lock timeout,
    file-size cap) and names each agent's home; ``port`` 0 takes a free port.
    """

    def __init__(self, ctx: Context, store_dir: str, port: int = 0):
        self.ctx = ctx
        self.data_file = data_file(store_dir)
        self.port = port
        self.token = secrets.token_urlsafe(32)
        self.worker = ThreadPoolExecutor(1, thread_name_prefix="snapstore-ui")
        self.clients: dict[ServerConnection, _Client] = {}

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/?token={self.token}"

    def _hosts(self) -> tuple[str, ...]:
        return (f"127.0.0.1:{self.port}", f"localhost:{self.port}")

    # -- HTTP: the page, and what is refused before a handshake -------------------------

    def process_request(self, connection: ServerConnection, request: Request) -> Response | None:
        """The page's files; for ``/ws``, None (the handshake goes on) once it may."""
        if request.headers.get("Host") not in self._hosts():
            return _plain(403, "Forbidden", "unknown host")
        url = urlsplit(request.path)
        given = parse_qs(url.query).get("token", [""])[0]
        if not hmac.compare_digest(given.encode(), self.token.encode()):
            return _plain(401, "Unauthorized", "the address printed by `snapstore ui` is needed")
        if url.path == SOCKET:
            origin = request.headers.get("Origin")
            if origin is not None and origin not in [f"http://{h}" for h in self._hosts()]:
                return _plain(403, "Forbidden", "cross-origin socket refused")
            return None
        if url.path not in FILES:
            return _plain(404, "Not Found", "not found")
        name = "index.html" if url.path == "/" else url.path[1:]
        body = resources.files(__package__).joinpath(name).read_bytes()
        if name == "index.html":  # the token for its requests, the clock for its "5 min ago"
            now = f"{self.ctx.env.clock()():.3f}".encode()
            body = body.replace(b"__TOKEN__", self.token.encode()).replace(b"__NOW__", now)
        return _response(200, "OK", FILES[url.path], body, self._headers())

    def _headers(self) -> list[tuple[str, str]]:
        sockets = " ".join(f"ws://{h}" for h in self._hosts())
        return [
            (
                "Content-Security-Policy",
                "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                f"connect-src {sockets}; base-uri 'none'; form-action 'none'; "
                "frame-ancestors 'none'",
            ),
            ("X-Content-Type-Options", "nosniff"),
            ("X-Frame-Options", "DENY"),
            ("Referrer-Policy", "no-referrer"),  # the address holds the token
            ("Cache-Control", "no-store"),
        ]

    # -- the socket ---------------------------------------------------------------------

    async def handle(self, connection: ServerConnection) -> None:
        """Answer each frame in turn; a live request is also answered again when it changes.
        What goes to the client goes through its own queue (:class:`_Client`)."""
        client = _Client(connection)
        self.clients[connection] = client
        sender = asyncio.create_task(client.send_all())
        try:
            async for message in connection:
                try:
                    frame = frames.parse(message)
                except frames.FrameError as exc:
                    client.push(frames.error(exc.code, exc.message, exc.request))
                    continue
                (text,) = await self._answer([frame])
                if frame["action"] in frames.LIVE and json.loads(text)["type"] != "error":
                    client.subscriptions[json.dumps(_live_key(frame))] = text
                client.push(text)
        except ConnectionClosed:
            pass
        finally:
            sender.cancel()
            del self.clients[connection]

    async def _answer(self, requests: list[dict[str, Any]]) -> list[str]:
        """The replies to ``requests``, on the worker thread with the store open once. A store
        that cannot be opened (busy, gone, damaged) answers each with an error frame; so does
        a failure of snapstore's own, as the command line says ``internal error``."""

        def run() -> list[str]:
            try:
                with self.ctx.open() as store:
                    return [frames.answer(store, self.ctx, request) for request in requests]
            except Exception as exc:  # the store cannot be opened, or snapstore failed
                return [frames.failure(exc, r) for r in requests]

        return await asyncio.get_running_loop().run_in_executor(self.worker, run)

    async def _watch(self) -> None:
        """Push what changed: when the store's data file did, answer each live request
        again, once for all its subscribers, and send it where it differs."""
        last = _signature(self.data_file)
        while True:
            await asyncio.sleep(POLL)
            now = _signature(self.data_file)
            # a file's time stamp ticks coarsely (the kernel's clock tick): a write in the same
            # tick as the last look leaves it unchanged, so a file written lately is read again
            recent = now is not None and time.time_ns() - now[0] < RECENT
            if (now == last and not recent) or not self.clients:
                last = now
                continue
            last = now
            wanted = sorted({key for c in self.clients.values() for key in c.subscriptions})
            answers = await self._answer([json.loads(k) for k in wanted])
            fresh = dict(zip(wanted, answers, strict=True))
            for client in list(self.clients.values()):
                for key, old in list(client.subscriptions.items()):
                    text = fresh.get(key)
                    if text is not None and text != old:
                        client.subscriptions[key] = text
                        client.push(text)

    async def run(self, ready: Callable[[UiServer], None], stop: asyncio.Event) -> None:
        """Serve until ``stop`` is set; ``ready`` is called once the port is bound."""
        async with serve(
            self.handle,
            "127.0.0.1",
            self.port,
            process_request=self.process_request,
            server_header=None,
            max_size=MAX_FRAME,
        ) as server:
            self.port = next(iter(server.sockets)).getsockname()[1]
            ready(self)
            watcher = asyncio.create_task(self._watch())
            try:
                await stop.wait()
            finally:
                watcher.cancel()
                server.close()
        self.worker.shutdown(wait=True)


class _Client:
    """One socket's subscriptions and its own queue of frames to send, drained by its own
    task: a client that reads slowly (a stalled tab, a paused program) delays nobody else,
    and one that falls :data:`QUEUE` frames behind is dropped with a close frame."""

    __slots__ = ("connection", "dropped", "queue", "queued", "subscriptions")

    def __init__(self, connection: ServerConnection):
        self.connection = connection
        self.queue: asyncio.Queue[str] = asyncio.Queue(QUEUE)
        self.queued = 0  # bytes in the queue
        self.dropped = False
        self.subscriptions: dict[str, str] = {}  # live request -> its answer last sent

    def push(self, text: str) -> None:
        """Queue ``text`` for the client, or drop the client when its queue is full."""
        if self.dropped:
            return
        if self.queued + len(text) <= QUEUE_BYTES or not self.queued:
            try:
                self.queue.put_nowait(text)
                self.queued += len(text)
                return
            except asyncio.QueueFull:
                pass
        self.dropped = True
        self.subscriptions.clear()  # nothing more is queued for it
        asyncio.get_running_loop().create_task(
            self.connection.close(CLOSE_BEHIND, "fell too far behind; reconnect")
        )

    async def send_all(self) -> None:
        while True:
            text = await self.queue.get()
            self.queued -= len(text)
            try:
                await self.connection.send(text)
            except ConnectionClosed:
                return


def _live_key(frame: dict[str, Any]) -> dict[str, Any]:
    """What identifies a live request: its action and session, and its request id."""
    return {k: frame.get(k) for k in ("action", "session_id", "request_id")}


def _signature(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def _plain(status: int, reason: str, text: str) -> Response:
    return _response(status, reason, "text/plain; charset=utf-8", f"{text}\n".encode(), [])


def _response(
    status: int, reason: str, kind: str, body: bytes, extra: list[tuple[str, str]]
) -> Response:
    headers = Headers(
        [("Content-Type", kind), ("Content-Length", str(len(body))), *extra],
    )
    return Response(status, reason, headers, body)
