"""A move handed to the workspace's daemon: ``rewind``, ``switch``, ``undo`` and ``redo``
made by the process that already holds the store open.

A command line that makes a move pays for its start-up (the store's database and the
rewind's modules), for opening the store, and for what the move writes. When ``snapstore
serve`` runs for the workspace, the first two are paid already: the command line sends it
the :class:`~snapstore_cli.operations.requests.Move` it read, over the daemon's socket on
127.0.0.1 with the workspace's secret, gets back the outcome, and prints it as if it had made
the move itself (``output.results.report``, from the rebuilt
:class:`~snapstore_cli.operations.outcome.Outcome`). This module loads neither the store nor
its database, so a process whose move the daemon makes stays as light as a hook.

Whatever keeps the daemon from taking the move leaves it to this process, which makes it
as it always did: no daemon holds ``<store>/serve.lock`` (none runs, or it died: its lock
is free at once), the lock names another snapstore version or :data:`PROTOCOL`, there is no
secret, the port does not answer, or the daemon refuses the request (another version,
another environment: the agents' homes or the clock it resolved at its start are not this
process's). Every refusal comes before the daemon starts the move, so nothing runs twice.
Once the request is sent, the move is the daemon's: if its answer never comes (the daemon
died on the way, or closed the connection), the move is not made again here; the command
says so and points to ``snapstore ops`` and ``rewind --resume`` (:class:`AnswerLost`).
"""

from __future__ import annotations

import _socket  # the C module: socket.py's enums cost this process a fifth of its imports
import json
import os
from typing import TYPE_CHECKING, Any

from snapstore import __version__
from snapstore.core.errors import Unfinished
from snapstore.core.locks import holder_info

from ..operations.outcome import Outcome
from ..operations.runner import Relayed
from ..settings.environment import agent_homes
from ..settings.trust import SECRET_FILE

if TYPE_CHECKING:
    from ..operations.requests import Move
    from ..settings.options import Options

#: The version of the move's request and reply between a command line and ``snapstore
#: serve``; with the snapstore version, the daemon's lock names it, and each checks both.
PROTOCOL = 1
#: Where the daemon takes a move.
PATH = "/snapstore/move"
HEADER = "X-Snapstore-Secret"
#: The daemon's lock: while it runs, it holds it, and has written its pid, port and versions.
LOCK_FILE = "serve.lock"
#: Seconds to wait for the daemon to accept the connection (it listens on loopback: at once).
CONNECT = 1.0
#: Seconds between two looks at whether the daemon still runs, while the move takes.
POLL = 0.5
#: The daemon's interim reply once the move is its own; a refusal comes without it.
TAKEN = b"HTTP/1.1 100 Continue\r\n\r\n"


class AnswerLost(Unfinished):
    """The daemon took the move but its answer never came: it died, or closed the connection.
    The move may be done, half done (``rewind --resume`` finishes it) or not started."""

    code = "answer_lost"


def perform(opts: Options, move: Move, diffs: bool = False) -> tuple[Outcome, list[str]] | None:
    """The move made by the workspace's daemon (with a dry run's diffs, ``diffs``: ``--diff``
    read by a person): its outcome, and the notes of what the daemon
    did after it (the automatic gc), which a command line prints after the outcome as its own
    frame would; None when no daemon took the move (make it here). A failure the daemon
    reports is raised as it worded it (``Relayed``)."""
    try:
        store_dir = opts.store_dir()
    except Exception:  # no store here: the local path says so, as it always did
        return None
    if store_dir is None:
        return None
    lock = os.path.join(store_dir, LOCK_FILE)
    running = _holder(lock)
    if not running or running.get("version") != __version__:
        return None
    if running.get("protocol") != PROTOCOL or not isinstance(running.get("port"), int):
        return None
    key = _secret(store_dir)
    if key is None:
        return None
    request = {
        "protocol": PROTOCOL,
        "version": __version__,
        "move": move.to_json(),
        "homes": agent_homes(),
        "now": opts.env.now,
        "lock_timeout": opts.env.lock_timeout,
        "diffs": diffs and move.dry_run and not opts.json,
    }
    reply = _exchange(running, lock, key, json.dumps(request).encode())
    if reply is None:
        return None
    if "failure" in reply:
        failed = reply["failure"]
        raise Relayed(str(failed["message"]), int(failed["exit_code"]), str(failed["code"]))
    try:
        return Outcome.from_wire(move, reply["outcome"]), reply["after"]
    except ValueError:
        raise _lost(running, "its answer could not be read") from None


def _holder(lock: str) -> dict[str, Any] | None:
    """What the daemon holding ``lock`` wrote in it; None when none holds it, or the store's
    folder cannot hold one (a file stands there: the local path says what is wrong)."""
    try:
        return holder_info(lock)
    except OSError:
        return None


def _secret(store_dir: str) -> str | None:
    """The workspace's secret, or None when there is none (no daemon was ever started). The
    daemon checks it: one that is not its own is refused there, and the move made here."""
    try:
        with open(os.path.join(store_dir, SECRET_FILE), encoding="ascii") as handle:
            return handle.read().strip() or None
    except (OSError, ValueError):
        return None


def _exchange(running: dict[str, Any], lock: str, key: str, body: bytes) -> dict[str, Any] | None:
    """Send the request and read the reply (None: the daemon did not take the move).

    One request on its own connection, in a few system calls: http.client would load more
    than the rest of this process does."""
    port = running["port"]
    head = (
        f"POST {PATH} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{HEADER}: {key}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    )
    conn = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    try:
        conn.settimeout(CONNECT)
        try:
            conn.connect(("127.0.0.1", port))
        except OSError:  # refused, or nothing listens yet: the daemon never saw the move
            return None
        try:
            conn.sendall(head.encode("ascii") + body)
        except OSError:  # the daemon reads the whole body before it starts: it did not
            return None
        answer = _reply(conn, running, lock)
    finally:
        conn.close()
    if answer is None:  # it went away before it took the move: a daemon stopping, say
        return None
    status, data = answer
    if status != 200:  # the daemon refuses only before it starts a move (docs/design.md)
        return None
    try:
        reply = json.loads(data)
        if reply.get("protocol") != PROTOCOL or reply.get("version") != __version__:
            raise ValueError("another protocol")
        if "failure" not in reply:
            reply["after"] = [str(note) for note in reply["after"]]
        return dict(reply)
    except (AttributeError, KeyError, TypeError, ValueError):
        raise _lost(running, "its answer could not be read") from None


def _reply(conn: _socket.socket, running: dict[str, Any], lock: str) -> tuple[int, bytes] | None:
    """The status and body of the daemon's reply, waiting while the daemon still holds its
    lock (a move on a big tree takes a while). None when it went away before it said that
    it took the move (its interim ``100 Continue``: until then, nothing was done);
    AnswerLost when it went away after."""
    conn.settimeout(POLL)
    chunks: list[bytes] = []
    while True:
        try:
            chunk = conn.recv(65536)
        except TimeoutError:
            if (_holder(lock) or {}).get("pid") != running.get("pid"):
                if not b"".join(chunks).startswith(TAKEN):
                    return None
                raise _lost(running, "it stopped before it answered") from None
            continue
        except OSError:  # a reset: what came before it may still be the whole answer
            break
        if not chunk:
            break
        chunks.append(chunk)
    raw = b"".join(chunks)
    if raw.startswith(TAKEN):
        return _final(raw[len(TAKEN) :], running)
    try:  # a refusal, or the store busy: whole, or closed before the move was taken
        return _final(raw, running)
    except AnswerLost:
        return None


def _final(raw: bytes, running: dict[str, Any]) -> tuple[int, bytes]:
    """The status and body of a whole HTTP reply; AnswerLost when it is cut short."""
    head, sep, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    length = next(
        (
            line.split(":", 1)[1].strip()
            for line in lines[1:]
            if line.lower().startswith("content-length:")
        ),
        None,
    )
    if not sep or len(parts) < 2 or not parts[1].isdigit() or length != str(len(body)):
        raise _lost(running, "it closed the connection before it answered")
    return int(parts[1]), body


def _lost(running: dict[str, Any], why: str) -> AnswerLost:
    return AnswerLost(
        f"snapstore serve (pid {running.get('pid')}) took the move, but {why}: it may be "
        "done, cut short or not started; `snapstore ops` lists what was done, and it is not "
        "made again here",
        operation=None,
    )
