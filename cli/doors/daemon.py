"""``snapstore serve``: the local daemon that agents' HTTP hooks post their events to.

Claude Code (2.1.63 and newer) can POST a hook's JSON to a URL instead of starting
a process for it. A process costs an agent 30-50 ms per event; a POST to a daemon
that has the store open costs about a millisecond. What the daemon accepts:

- connections on the loopback address only (it binds 127.0.0.1, and checks the
  peer again), with a ``Host`` of ``127.0.0.1`` or ``localhost`` and its port (a
  web page whose own name resolves to 127.0.0.1 is refused);
- ``POST /snapstore/hook/AGENT`` with the workspace's secret in ``X-Snapstore-Secret``,
  compared in constant time. A browser cannot send that header without a CORS
  preflight, which nothing here answers. The secret is ``<store>/serve.secret``
  (mode 0600), made on first use and never printed;
- a body of at most :data:`~snapstore.adapters.MAX_PAYLOAD` bytes with a
  ``Content-Length`` (no chunked bodies), read within :data:`TIMEOUT` seconds;
- capture events only: the agent's adapter turns the payload into a turn's
  begin or end, or a capture before or after a write, exactly as the hook
  command does, and everything else is ignored. Nothing a hook's request says
  can change the workspace, and events from outside it are refused;
- and ``POST /snapstore/move``, under the same checks: a move (rewind, switch,
  undo, redo) that a command line hands over (``doors.route``), made through the
  operation layer on the open store with the context resolved at the daemon's
  start, and answered with its outcome or its failure as the command line would
  print them. Anything but a 200 says the move was not started (another version
  or protocol, another environment, a malformed move), and the command line
  makes it itself; a daemon killed during a move leaves what a killed command
  line leaves, which ``rewind --resume`` finishes.

The reply is the agent's hook output: an empty body, go ahead. When snapstore
itself fails, the failure goes to ``<store>/hook.log`` and the agent shows a
``systemMessage``; with ``SNAPSTORE_STRICT=1`` a prompt or a write is blocked
instead, as the hook command blocks it. When the daemon is not running, nothing
answers: ``snapstore hook install claude-code --http`` sets ``onFailure:
block``, so that a write waits rather than go unprotected.

Requests (hook events and moves) are served one at a time (a lock around the store),
each on its connection's thread. The store stays open between requests and is closed
after :data:`IDLE` seconds without one, so that gc can compact it. The daemon holds
``<store>/serve.lock`` (its pid and port, and its snapstore version and move protocol)
while it runs.

It is the workspace's one daemon: in scan mode it also runs the watcher
(snapstore.ops.watch), so that the scans around each shell call ask it instead
of walking the tree. The hooks start it at a session's start (snapstore_cli.lifecycle)
and it exits once the last session has ended, or after ``[serve] idle_minutes``
(30) without a hook event, a scan asking its watcher, or a prompt.
"""

from __future__ import annotations

import fcntl
import hmac
import json
import os
import secrets
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

from snapstore import BadInput, Store, __version__
from snapstore.adapters import (
    BEGIN,
    IGNORE,
    MAX_PAYLOAD,
    PRE,
    START,
    HookAction,
    load_payload,
    parse,
)
from snapstore.core import faults
from snapstore.core.db import FILE_MODE
from snapstore.core.errors import ServeRunning, SnapstoreError, StoreLocked
from snapstore.core.locks import holder_info
from snapstore.ops.watchlink import REQUEST_DIR

from ..operations import daemons, moves
from ..operations.context import Context
from ..operations.lifecycle import live_sessions
from ..operations.requests import Move
from ..operations.runner import WRITES, failure, record
from ..output.plain import printable
from ..settings.config import Config, set_serve_port
from ..settings.environment import Environment, strict_hooks
from ..settings.trust import SECRET_FILE, trust, trusted
from .hook import agent_table, log_line
from .route import HEADER, LOCK_FILE, PATH, PROTOCOL

#: The environment variable that carries the secret into the agent's header.
SECRET_VAR = "SNAPSTORE_HOOK_SECRET"
#: Seconds a connection may take to send one request.
TIMEOUT = 10.0
#: Seconds without a request after which the store is closed (it reopens on the next one).
IDLE = 2.0
LOOPBACK = ("127.0.0.1", "::1")
#: The agents whose HTTP hooks this daemon answers.
AGENTS = ("claude-code",)

if TYPE_CHECKING:
    import subprocess


def secret(store_dir: str) -> str:
    """The workspace's secret: made on first use (mode 0600, atomically), never printed.
    One this user did not make here (it came with a clone: others know it) is refused."""
    path = os.path.join(store_dir, SECRET_FILE)
    if os.path.exists(path) and not trusted(store_dir, SECRET_FILE):
        raise BadInput(
            f"{path} was not made by snapstore for you here (a clone or a copy: others may "
            "know it): remove it, then run `snapstore hook install claude-code --http` "
            "again (or run `snapstore config trust` if it is yours)"
        )
    if not os.path.exists(path):
        tmp = f"{path}.{os.getpid()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            handle.write(secrets.token_hex(32) + "\n")

        def put() -> None:
            try:
                os.link(tmp, path)  # fails if another process made it first: theirs stands
            except FileExistsError:
                pass
            finally:
                os.unlink(tmp)

        trust(store_dir, SECRET_FILE, put=put)
    if os.stat(path).st_mode & 0o077:
        os.chmod(path, 0o600)
    with open(path, encoding="ascii") as handle:
        value = handle.read().strip()
    if len(value) < 32:
        raise BadInput(f"{path} does not hold a secret; remove it to make a new one")
    return value


def port(store_dir: str) -> int:
    """The port the workspace's daemon listens on: ``[serve] port`` in the store's config,
    else a free one, chosen now and saved there (the HTTP hooks name it)."""
    configured = Config.load(store_dir).serve_port
    if configured:
        return configured
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        chosen = int(probe.getsockname()[1])
    set_serve_port(store_dir, chosen)
    return chosen


def info(store_dir: str) -> dict[str, Any] | None:
    """What a running daemon wrote into its lock (pid, port, root), or None when none runs."""
    return holder_info(os.path.join(store_dir, LOCK_FILE))


class Daemon:
    """The work behind the HTTP front: one store, its settings, and the events it records."""

    def __init__(
        self,
        env: Environment,
        root: str | None,
        store_dir: str,
        key: str,
        log: Callable[[str], None] | None = None,
    ):
        self.env, self.root, self.store_dir, self.key = env, root, store_dir, key
        self.ctx = Context(env, root)  # the agents' homes, as at the daemon's start
        self.strict = strict_hooks()
        self.lock = threading.Lock()
        #: set, under ``lock``, once the daemon stops: a move that comes now is refused
        self.stopping = False
        self._moves = 0  # moves come and not yet answered, which the daemon's end waits for
        self._answered = threading.Condition()
        self.store: Store | None = None
        self.config = Config()
        self._config_stamp: float | None = None
        self.last = time.monotonic()
        self.agents = {name: agent_table(name) for name in AGENTS}
        self._cwds: dict[str, bool] = {}  # cwd -> inside the workspace (a realpath each)
        self.log = log or (lambda text: None)

    # -- the store, open while requests come ------------------------------------------

    def _open(self) -> Store:
        path = os.path.join(self.store_dir, "config")
        stamp = os.stat(path).st_mtime if os.path.exists(path) else None
        if self.store is None or stamp != self._config_stamp:
            self.close()
            warnings: list[str] = []
            self.store, self.config = self.env.open_with_config(self.root, warn=warnings.append)
            self._config_stamp = stamp
            for text in warnings:
                self._note("serve", text)
        return self.store

    def close(self) -> None:
        if self.store is not None:
            self.store.close()
            self.store = None

    def close_if_idle(self) -> None:
        with self.lock:
            if self.store is not None and time.monotonic() - self.last >= IDLE:
                self.close()

    # -- one event ----------------------------------------------------------------------

    def handle(self, agent: str, body: bytes) -> bytes:
        """Record one hook event; the agent's hook output to send back."""
        spec = self.agents[agent]
        action = HookAction(IGNORE)
        try:
            action = parse(spec, load_payload(body))
            if action.kind in (IGNORE, START):
                return spec.silent.encode()
            self._inside(action.cwd)
            with self.lock:
                self.last = time.monotonic()
                warnings = record(self._open(), self.config, action, self.strict)
                self.last = time.monotonic()
            for text in warnings:
                self._note(agent, text)
            if warnings:
                return _message("; ".join(f"snapstore: {w}" for w in warnings))
            return spec.silent.encode()
        except Exception as exc:  # an event must never take the daemon down
            text = failure(exc)[0]
        self._note(agent, text)
        if self.strict and action.kind in (BEGIN, PRE):
            return _block(action, f"snapstore: {text}")
        return _message(f"snapstore: {text}")

    # -- one move ---------------------------------------------------------------------

    @contextmanager
    def answering(self) -> Iterator[None]:
        """Count a move from its request to its reply's last byte (:meth:`drained`)."""
        with self._answered:
            self._moves += 1
        try:
            yield
        finally:
            with self._answered:
                self._moves -= 1
                self._answered.notify_all()

    def drained(self, timeout: float) -> None:
        """Wait until every move that came has had its reply sent (or ``timeout``)."""
        with self._answered:
            self._answered.wait_for(lambda: self._moves == 0, timeout)

    def move(self, body: bytes, starting: Callable[[], None]) -> tuple[int, bytes]:
        """Make the move a command line handed over; the HTTP status and the reply. Every
        status but 200 means the move was not started: the command line makes it itself.
        ``starting`` tells the command line, before anything is done, that the move is now
        this daemon's (what it hears before that, a closed connection included, is a
        refusal)."""
        try:
            request = json.loads(body)
            if not isinstance(request, dict):
                raise BadInput("a move's request is a JSON object")
            if request.get("protocol") != PROTOCOL or request.get("version") != __version__:
                return 409, _error(
                    f"this daemon is snapstore {__version__} (move protocol {PROTOCOL}), not "
                    f"{request.get('version')!r} ({request.get('protocol')!r})"
                )
            if request.get("homes") != self.ctx.homes or request.get("now") != self.env.now:
                return 409, _error("another environment: the agents' homes or the clock")
            move = Move.from_json(request.get("move"))
            wait = request.get("lock_timeout")
            if not isinstance(wait, (int, float)) or not 0 <= wait < float("inf"):
                raise BadInput("a move's lock_timeout is a number of seconds")
        except (ValueError, RecursionError, BadInput) as exc:  # json's: ValueError, or deep
            return 400, _error(f"not a move: {exc}")
        command = "rewind" if move.action in ("finish", "resume") else move.action
        started = time.monotonic()
        if not self.lock.acquire(timeout=min(float(wait), threading.TIMEOUT_MAX)):
            busy = StoreLocked(
                f"the store is busy: snapstore serve is recording or making another move "
                f"(waited {float(wait):g} s)",
                what="snapstore serve",
                timeout=wait,
            )
            return 200, self._answer(move, command, started, busy)
        try:
            if self.stopping:
                return 503, _error("this daemon is stopping")
            faults.point("serve.taking")  # killed here, it never took the move
            starting()
            self.last = time.monotonic()
            store = self._open()
            outcome = moves.run(store, self.ctx, move)
            after = []
            if command in WRITES and self.config.gc_auto:  # as the command line's frame runs it
                from ..operations import autogc

                try:
                    note = autogc.run_if_due(store, self.config)
                except SnapstoreError:
                    note = None
                if note is not None:
                    after.append(note)
            reply = {"outcome": outcome.to_wire(diffs=request.get("diffs") is True)}
            return 200, self._answer(move, command, started, None, {**reply, "after": after})
        except Exception as exc:  # a move's failure is its answer, never the daemon's end
            return 200, self._answer(move, command, started, exc)
        finally:
            self.last = time.monotonic()
            self.lock.release()

    def _answer(
        self,
        move: Move,
        command: str,
        started: float,
        exc: BaseException | None,
        reply: dict[str, Any] | None = None,
    ) -> bytes:
        """The reply's body (the failure's words when ``exc``), logged in one line."""
        answer: dict[str, Any] = {"protocol": PROTOCOL, "version": __version__}
        if exc is not None:
            text, code, kind = failure(exc, command)
            answer["failure"] = {"message": text, "exit_code": code, "code": kind}
            said = f"refused ({kind})"
        else:
            answer.update(reply or {})
            said = "done"
        target = "" if move.target is None else f" {printable(move.target)}"
        where = "" if move.session is None else f" (session {printable(move.session)})"
        dry = " --dry-run" if move.dry_run else ""
        took = (time.monotonic() - started) * 1e3
        self.log(f"move: {move.action}{target}{dry}{where}: {said} in {took:.0f} ms")
        return json.dumps(answer, default=str).encode()  # as --json prints it

    def _inside(self, cwd: str) -> None:
        """Refuse an event from outside this daemon's workspace: its store is another one."""
        root = self.root or (self.store.root if self.store is not None else None)
        if root is None:
            return
        inside = self._cwds.get(cwd)
        if inside is None:
            real = os.path.realpath(cwd)
            inside = real == root or real.startswith(root.rstrip(os.sep) + os.sep)
            if len(self._cwds) < 1024:
                self._cwds[cwd] = inside
        if not inside:
            raise BadInput(f"an event from {cwd}, outside this daemon's workspace {root}")

    def _note(self, agent: str, text: str) -> None:
        """A failure or warning: into hook.log, as the hook command logs it (`snapstore
        doctor` reads it), and into the daemon's own log."""
        log_line(self.store_dir, agent, text)
        self.log(f"{agent}: {text}")


def _die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` that has Linux kill the child when the daemon dies, even by SIGKILL
    (``PR_SET_PDEATHSIG``); None where there is no ``prctl`` (the child then watches its
    parent itself: :data:`_ORPHAN_GUARD`)."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes
    import signal

    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def arm() -> None:
        prctl(1, signal.SIGKILL)  # 1: PR_SET_PDEATHSIG
        if os.getppid() != parent:  # the daemon died between the fork and the prctl
            os._exit(1)

    return arm


def _identity(path: str) -> tuple[int, int] | None:
    """A folder's identity (device, inode); None once it is gone."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


#: Where the kernel cannot kill the watcher with the daemon, the watcher runs under this
#: guard (its first argument the daemon's pid): once its parent is no longer the daemon
#: (it died, even by SIGKILL, and the child was given to init), it stops as on SIGTERM,
#: and leaves at once if it has not stopped 30 s later.
_ORPHAN_GUARD = """
import os, signal, sys, threading, time
parent = int(sys.argv.pop(1))
def guard():
    while os.getppid() == parent:
        time.sleep(1)
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(30)
    os._exit(1)
threading.Thread(target=guard, name="snapstore-orphan-guard", daemon=True).start()
from snapstore_cli.launch import main
main()
"""


def _spawn_watcher(root: str) -> subprocess.Popen[bytes]:
    """Start ``snapstore watch`` for ``root`` as a child that ends with this process."""
    import subprocess

    args = ["--root", root, "watch"]
    arm = _die_with_parent()
    command = ["-m", "snapstore_cli"] if arm else ["-c", _ORPHAN_GUARD, str(os.getpid())]
    return subprocess.Popen(
        [sys.executable, *command, *args],
        cwd=root,
        stdin=subprocess.DEVNULL,
        preexec_fn=arm,
    )


def _monotonic(stamps: list[float]) -> list[float]:
    """Wall-clock times (file mtimes) on the monotonic clock the daemon keeps."""
    offset = time.monotonic() - time.time()
    return [stamp + offset for stamp in stamps]


def _error(why: str) -> bytes:
    """A refusal's body, as every other refusal of the daemon's."""
    return json.dumps({"error": why}).encode()


def _message(text: str) -> bytes:
    """Go ahead, and show the user this line."""
    return json.dumps({"systemMessage": text}).encode()


def _block(action: HookAction, reason: str) -> bytes:
    """Stop the prompt or the write (strict mode): Claude Code's decision fields."""
    if action.kind == PRE:
        return json.dumps(
            {
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": "deny",
                    "permissionDecisionReason": reason,
                }
            }
        ).encode()
    return json.dumps({"decision": "block", "reason": reason}).encode()


class _Handler(BaseHTTPRequestHandler):
    """Refuses everything but an authenticated capture event or move from loopback."""

    server: _Server
    _headers_buffer: list[bytes]  # http.server's, undeclared in its stubs: _send appends to it
    protocol_version = "HTTP/1.1"  # keep-alive: an agent may post many events on one
    timeout = TIMEOUT
    disable_nagle_algorithm = True  # a reply is one small write: send it now
    server_version = "snapstore"
    sys_version = ""

    def do_POST(self) -> None:
        """Every method comes here: all but an authenticated POST get a JSON refusal."""
        refusal = self._refusal()
        if refusal is not None:
            status, why = refusal
            self.server.refused(f"{status} {why} ({self.client_address[0]} {self.path!r})")
            # closed: the body of a refused request is never read, so nothing else may follow
            self._send(status, json.dumps({"error": why}).encode(), close=True)
            return
        length = int(self.headers["Content-Length"])
        body = self.rfile.read(length)
        if len(body) != length:
            self.close_connection = True
            return
        if self.path == PATH:
            with self.server.daemon.answering():
                self._send(*self.server.daemon.move(body, self._starting))
            return
        agent = self.path.split("/")[3]
        self._send(200, self.server.daemon.handle(agent, body))

    do_GET = do_HEAD = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_CONNECT = do_TRACE = do_POST

    def _starting(self) -> None:
        """Tell the command line that the move is this daemon's now: an interim reply, before
        the move does anything (``doors.route`` makes the move itself when it never hears it)."""
        self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        self.wfile.flush()

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """The standard library's refusals (a malformed request, an unknown method, headers
        too long) in JSON, as every other answer, not its HTML page."""
        why = message or self.responses.get(code, ("error",))[0]
        self._send(code, json.dumps({"error": why}).encode(), close=True)

    def _refusal(self) -> tuple[int, str] | None:
        """Why this request is refused, or None."""
        if self.client_address[0] not in LOOPBACK:
            return 403, "not from this machine"
        host = (self.headers.get("Host") or "").strip().lower()
        if host not in self.server.hosts:
            return 403, "wrong Host"
        parts = self.path.split("/")
        hook = len(parts) == 4 and parts[1:3] == ["snapstore", "hook"] and parts[3] in AGENTS
        if not hook and self.path != PATH:
            return 404, "no such hook"
        if self.command != "POST":
            return 405, f"a {'hook event' if hook else 'move'} is a POST, not {self.command}"
        given = self.headers.get(HEADER)
        if not given:
            return 401, f"no {HEADER} header"
        if not hmac.compare_digest(given.encode(), self.server.daemon.key.encode()):
            return 403, f"wrong {HEADER}"
        if self.headers.get("Transfer-Encoding"):
            return 411, "a body needs a Content-Length"
        length = self.headers.get("Content-Length", "")
        if not length.isdigit():
            return 411, "a body needs a Content-Length"
        if int(length) > MAX_PAYLOAD:
            return 413, f"a hook event is at most {MAX_PAYLOAD} bytes"
        return None

    def _send(self, status: int, body: bytes, close: bool = False) -> None:
        """The reply in one write: status line, headers and body."""
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self._headers_buffer.append(b"\r\n" + body)
        self.flush_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass  # requests are not logged; refusals are (Server.refused)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # SO_REUSEADDR: a restart binds at once, though the last daemon's connections linger in
    # TIME_WAIT for a minute (HTTP hooks block the agent's writes until the daemon answers).
    # Two daemons cannot share the port: Linux still refuses a second listener.
    allow_reuse_address = True

    def __init__(self, port: int, daemon: Daemon, log: Callable[[str], None]):
        self.daemon = daemon
        self.refused = log
        super().__init__(("127.0.0.1", port), _Handler)
        port = self.server_address[1]
        self.hosts = {f"127.0.0.1:{port}", f"localhost:{port}"}


class Serving:
    """A running daemon: its lock, its socket and its threads. Stop it with :meth:`stop`."""

    def __init__(
        self,
        env: Environment,
        root: str | None,
        store_dir: str,
        port: int,
        log: Callable[[str], None] | None = None,
        lock_fd: int | None = None,
    ):
        self.store_dir = store_dir
        self.log = log or (lambda text: None)
        self._lock_fd = self._lock() if lock_fd is None else self._adopt(lock_fd)
        try:
            self.daemon = Daemon(env, root, store_dir, secret(store_dir), self.log)
            self.daemon._open()  # fail now, not at the first event, if the store cannot open
            self.daemon.root = self.daemon.root or self.daemon.store.root  # type: ignore[union-attr]
            try:
                self.server = _Server(port, self.daemon, self.log)
            except OSError as exc:
                raise BadInput(f"cannot listen on 127.0.0.1:{port}: {exc.strerror}") from None
            self.port = self.server.server_address[1]
            os.ftruncate(self._lock_fd, 0)
            os.pwrite(
                self._lock_fd,
                json.dumps(
                    {
                        "pid": os.getpid(),
                        "port": self.port,
                        "root": self.daemon.root,
                        "version": __version__,
                        "protocol": PROTOCOL,
                    }
                ).encode(),
                0,
            )
        except BaseException:
            os.close(self._lock_fd)
            raise
        self._stopped = threading.Event()
        self._home = _identity(store_dir), _identity(str(self.daemon.root))
        self.idle_exit = self.daemon.config.serve_idle_minutes * 60
        self._for_sessions = lock_fd is not None  # a session's hook started it
        self.exit_reason = ""

    def _adopt(self, fd: int) -> int:
        """The lock a hook took for this daemon (snapstore_cli.lifecycle), handed down open:
        it must be this store's serve.lock, and still held."""
        path = os.path.join(self.store_dir, LOCK_FILE)
        mine, there = os.fstat(fd), os.stat(path)
        if (mine.st_dev, mine.st_ino) != (there.st_dev, there.st_ino):
            raise BadInput(f"file descriptor {fd} is not {path}")
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # ours already: this does not block
        os.set_inheritable(fd, False)
        return fd

    def _lock(self) -> int:
        path = os.path.join(self.store_dir, LOCK_FILE)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            running = info(self.store_dir) or {}
            raise ServeRunning(
                f"snapstore serve is already running for this store (pid "
                f"{running.get('pid', '?')}, port {running.get('port', '?')})",
                pid=running.get("pid"),
                port=running.get("port"),
                what="the serve lock",
                timeout=0,
            ) from None
        return fd

    def run(self, watch: bool = False) -> None:
        """Serve until :meth:`stop`, and with ``watch`` (scan mode) run the watcher; closes
        the store whenever it has been idle a while, and stops once the last session has
        ended, nothing has come for ``idle_exit`` seconds, or the workspace is gone."""
        listed = daemons.register(os.getpid(), str(self.daemon.root), self.store_dir)
        threads = [threading.Thread(target=self._reap, name="snapstore-idle", daemon=True)]
        if watch:
            threads.append(threading.Thread(target=self._watch, name="snapstore-watch"))
        for thread in threads:
            thread.start()
        try:
            self.server.serve_forever(poll_interval=0.2)
        finally:
            self._stopped.set()
            self.server.server_close()
            for thread in threads[1:]:
                thread.join()
            with self.daemon.lock:
                self.daemon.stopping = True  # a move that comes now is refused, not cut short
                self.daemon.close()
            self.daemon.drained(TIMEOUT)  # the replies of moves made (or refused) are sent
            os.close(self._lock_fd)
            daemons.unregister(listed)

    def _watch(self) -> None:
        """The watcher (`snapstore watch`), as a process of the daemon's own: the store's
        database may be open only once per process, and the watcher writes on its own. It
        dies with the daemon, stops when the daemon stops, and is never needed for
        correctness: when it cannot run (a `snapstore watch` of the user's runs already),
        scans walk the tree or ask that one."""
        import subprocess

        try:
            child = _spawn_watcher(str(self.daemon.root))
        except OSError as exc:
            self.log(f"watch: not started: {exc}")
            return
        self.log(f"watch: started (pid {child.pid})")
        self._stopped.wait()
        child.terminate()
        try:
            child.wait(timeout=30)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()

    def _asked(self) -> float:
        """When a scan last asked the watcher (its request folder changes with each)."""
        try:
            return os.stat(os.path.join(self.store_dir, REQUEST_DIR)).st_mtime
        except OSError:
            return 0.0

    def _reap(self) -> None:
        had_sessions = self._for_sessions  # they may all have ended before this first look
        while not self._stopped.wait(IDLE / 2):
            if (_identity(self.store_dir), _identity(str(self.daemon.root))) != self._home:
                self._exit("its workspace or store was removed or replaced")
                return
            self.daemon.close_if_idle()
            sessions = live_sessions(self.store_dir)
            if sessions:
                had_sessions = True
            elif had_sessions:
                self._exit("the last session has ended")
                return
            last = max([self.daemon.last, *_monotonic([*sessions, self._asked()])])
            if self.idle_exit > 0 and time.monotonic() - last >= self.idle_exit:
                self._exit(f"idle for {self.idle_exit / 60:g} minutes")
                return

    def _exit(self, why: str) -> None:
        self.exit_reason = why
        self.log(f"stopping: {why}")
        self.stop()

    def stop(self) -> None:
        """Stop serving (from a signal handler or another thread)."""
        threading.Thread(target=self.server.shutdown, daemon=True).start()
