"""A scripted model on loopback that real agent CLIs talk to instead of their vendor's API.

The test gives a script: for each user prompt, the tool calls the model makes (write a file, edit
a file, run a shell command), one per model reply, then a final text answer. The server reads the
conversation each CLI sends, finds the latest scripted prompt in it, counts the tool results that
came back since, and answers with the next step in that CLI's wire format (`wire.py`). It keeps no
state between requests, so retries, side requests and a resumed session all get the right answer.

A request without tools (a title, a summary, a routing or next-speaker check) gets a short text,
or JSON that fits the schema it asked for. Every request is recorded.
"""

from __future__ import annotations

import gzip
import itertools
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from . import wire


@dataclass(frozen=True)
class Write:
    """Create or overwrite a file (a path relative to the workspace, or absolute)."""

    path: str
    content: str


@dataclass(frozen=True)
class Edit:
    """Replace one exact string in a file."""

    path: str
    old: str
    new: str


@dataclass(frozen=True)
class Read:
    """Read a file (some agents refuse to edit a file they have not read in this session)."""

    path: str


@dataclass(frozen=True)
class Patch:
    """An apply_patch text (`*** Begin Patch` ... `*** End Patch`), for agents that have one."""

    text: str


@dataclass(frozen=True)
class Shell:
    """Run one shell command in the workspace."""

    command: str


@dataclass(frozen=True)
class Mcp:
    """Call a tool of the MCP server named ``server`` (each agent names it its own way)."""

    tool: str
    args: dict[str, Any] = field(default_factory=dict)
    server: str = "snapstore"


@dataclass(frozen=True)
class Wait:
    """Wait until the agent's request names ``marker`` (an MCP server's tools, which an agent
    may offer the model only once the server has started), running ``poll`` meanwhile.
    ``settle``: where the marker comes before the turn's prompt, it counts only after that
    many polls (Codex announces a server's tools in the conversation, and a resumed
    conversation carries an earlier run's announcement, which may come before this run's
    server is up; an announcement after the prompt is this run's)."""

    marker: str
    poll: Shell = Shell("sleep 1")
    settle: int = 0


Step = Write | Edit | Read | Patch | Shell | Mcp | Wait


@dataclass(frozen=True)
class ToolCall:
    """One concrete tool call in an agent's own vocabulary: a JSON-args tool, or a freeform one
    (Codex's `apply_patch` custom tool) whose input is raw text."""

    name: str
    args: dict[str, Any] | str
    namespace: str = ""  # Codex's deferred tools: the namespace they are called in


@dataclass(frozen=True)
class Turn:
    prompt: str
    steps: tuple[Step, ...]
    answer: str = "Done."


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any  # parsed JSON, or the text when it is not JSON
    time: float = 0.0  # when it arrived (time.monotonic())


@dataclass
class Reply:
    """What the model says next: a tool call, or a final text."""

    call: ToolCall | None = None
    text: str | None = None
    call_id: str = ""


@dataclass
class FakeModel:
    """The scripted model. `tools` turns an abstract step into the agent's concrete tool call;
    `schema_answers` maps a JSON-schema property name to the value a side request should get."""

    turns: list[Turn]
    tools: Callable[[Step, str], ToolCall]  # (step, workspace) -> call
    workspace: str
    model: str = "fake-model"
    requests: list[Recorded] = field(default_factory=list)
    _ids: itertools.count = field(default_factory=lambda: itertools.count(1))
    #: per prompt, how many tool results were a Wait's polls (which no step counts)
    polls: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> FakeModel:
        handler = type("Handler", (_Handler,), {"model": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, daemon=True, name="fake-model"
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeModel:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None, "start() the server first"
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # -- the script ----------------------------------------------------------------------------
    def next_id(self, prefix: str) -> str:
        with self._lock:
            return f"{prefix}{next(self._ids)}"

    def reply(self, conversation: list[wire.Message], has_tools: bool, raw: str = "") -> Reply:
        """The next step for this conversation: find the latest scripted prompt, count the
        tool results since, and answer with the step after them or the turn's final text. A
        :class:`Wait` step is passed once the request (``raw``) names its marker; until then
        it polls, and its polls are counted apart."""
        if not has_tools:
            return Reply(text="OK")
        turn, at = self._current_turn(conversation)
        if turn is None:
            return Reply(text="I have nothing scripted for that.")
        with self._lock:
            real = sum(m.tool_results for m in conversation[at + 1 :]) - self.polls.get(
                turn.prompt, 0
            )
        for step in turn.steps:
            if isinstance(step, Wait):
                settled = self.polls.get(turn.prompt, 0) >= step.settle
                if step.marker in (raw if settled else raw[max(raw.rfind(turn.prompt), 0) :]):
                    continue
                with self._lock:
                    self.polls[turn.prompt] = self.polls.get(turn.prompt, 0) + 1
                return Reply(
                    call=self.tools(step.poll, self.workspace), call_id=self.next_id("call_")
                )
            if real > 0:  # done: its result came back
                real -= 1
                continue
            return Reply(call=self.tools(step, self.workspace), call_id=self.next_id("call_"))
        return Reply(text=turn.answer)

    def _current_turn(self, conversation: list[wire.Message]) -> tuple[Turn | None, int]:
        for i in range(len(conversation) - 1, -1, -1):
            msg = conversation[i]
            if msg.role != "user" or msg.tool_results:
                continue
            for turn in self.turns:
                if turn.prompt in msg.text:
                    return turn, i
        return None, -1

    def record(self, rec: Recorded) -> None:
        with self._lock:
            self.requests.append(rec)

    def paths(self) -> list[str]:
        """`METHOD path` of every request, in order."""
        with self._lock:
            return [f"{r.method} {r.path}" for r in self.requests]


class _Handler(BaseHTTPRequestHandler):
    model: FakeModel
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:  # keep pytest's output clean
        pass

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_PUT(self) -> None:
        self._handle("PUT")

    def do_HEAD(self) -> None:
        self._handle("HEAD")

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
                data += self.rfile.read(size)
                self.rfile.readline()
            self.rfile.readline()
        else:
            data = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        enc = self.headers.get("Content-Encoding", "").lower()
        if enc == "gzip":
            data = gzip.decompress(data)
        elif enc == "zstd":
            import zstandard

            data = zstandard.ZstdDecompressor().decompressobj().decompress(data)
        return data

    def _handle(self, method: str) -> None:
        raw = self._body() if method in ("POST", "PUT") else b""
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        url = urlsplit(self.path)
        self.model.record(
            Recorded(
                method,
                url.path,
                parse_qs(url.query),
                {k.lower(): v for k, v in self.headers.items()},
                body,
                time.monotonic(),
            )
        )
        status, ctype, payload = wire.route(
            self.model,
            method,
            url.path,
            parse_qs(url.query),
            body if isinstance(body, dict) else {},
        )
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        if ctype == "text/event-stream":
            self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        if method != "HEAD":
            self.wfile.write(data)
