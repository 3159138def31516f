"""``snapstore mcp`` in an agent's MCP settings: registered by ``hook install``, removed by
``hook uninstall``, checked by ``doctor`` (that it is there and that the server starts).

The server is registered at the hooks' scope (snapstore.adapters.mcp.PLACES), by the same
command the hooks name: ``snapstore`` from PATH in a project's shared settings, this machine's
snapstore elsewhere.
"""

from __future__ import annotations

import json
import os
import selectors
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import IO, Any

from snapstore.adapters import mcp
from snapstore.core.errors import BadInput

from .checks import mcp_path

#: The tools every registration offers, and those it offers unless read-only.
READING = ("list_turns", "show_turn", "file_at")
MOVING = ("rewind_files", "undo_last")
#: How long ``doctor`` waits for the server to answer its first request.
START_TIMEOUT = 60.0


def snapstore_path() -> str | None:
    """This snapstore's executable, absolute (not resolved: a pipx or venv link stays
    valid across upgrades), or None when it runs as ``python -m snapstore_cli``."""
    argv0 = sys.argv[0]
    if (
        os.path.basename(argv0).startswith("snapstore")
        and os.path.isfile(argv0)
        and not argv0.endswith(".py")
    ):
        return os.path.abspath(argv0)
    found = shutil.which("snapstore")
    return os.path.abspath(found) if found else None


def snapstore_words() -> list[str]:
    """This machine's snapstore as a command line's first words."""
    exe = snapstore_path()
    return [exe] if exe else [sys.executable, "-m", "snapstore_cli"]


def server_words(scope: str, read_only: bool) -> list[str]:
    """The command the agent starts: as the hooks name snapstore at that scope."""
    first = ["snapstore"] if scope == "project" else snapstore_words()
    return [*first, "mcp", *(["--read-only"] if read_only else [])]


def can_do(read_only: bool) -> str:
    """What the agent can now do, in one sentence."""
    reading = "list its own turns and read their diffs and files (" + ", ".join(READING) + ")"
    if read_only:
        return f"the agent can now {reading}; it cannot take turns back (--mcp-read-only)"
    return (
        f"the agent can now {reading}, and take its own turns' file changes back "
        f"({', '.join(MOVING)}), recorded as part of its turn so that `snapstore rewind` "
        "can undo it"
    )


def can_register(agent: str, scope: str, root: str, read_only: bool) -> None:
    """Raise what would refuse :func:`register`, changing nothing (an install checks it
    before it writes the hooks)."""
    place = mcp.PLACES[agent][scope]
    words = server_words(scope, read_only)
    mcp.register(mcp_path(agent, scope, root), place, root, words, write=False)


def register(agent: str, scope: str, root: str, read_only: bool) -> dict[str, Any]:
    """Register the server; what ``hook install --json`` says of it under ``mcp``."""
    place = mcp.PLACES[agent][scope]
    path = mcp_path(agent, scope, root)
    added = mcp.register(path, place, root, server_words(scope, read_only))
    return {
        "file": path,
        "read_only": read_only,
        "added": added,
        "wide": place.wide,
        "tools": [*READING, *(() if read_only else MOVING)],
    }


def unregister(agent: str, scope: str, root: str) -> dict[str, Any]:
    """Remove the server; the file, and whether it held one."""
    place = mcp.PLACES[agent][scope]
    path = mcp_path(agent, scope, root)
    return {"file": path, "removed": mcp.unregister(path, place, root)}


def check(agent: str, scope: str, root: str) -> dict[str, Any]:
    """What ``doctor`` says of the agent's registration at that scope: the file, the command,
    whether it is read-only, and whether the server starts and lists its tools here (notes:
    the agent goes on without it, and no change is lost)."""
    place = mcp.PLACES[agent][scope]
    path = mcp_path(agent, scope, root)
    try:
        words = mcp.registered(path, place, root)
    except BadInput as exc:
        return {"file": path, "registered": False, "notes": [str(exc)]}
    if words is None:
        return {
            "file": path,
            "registered": False,
            "notes": [
                f"snapstore mcp is not registered for {agent} ({path}): the agent cannot reach "
                f"its turns; `snapstore hook install {agent}` registers it"
            ],
        }
    tools, note = starts(words, root)
    return {
        "file": path,
        "registered": True,
        "command": words,
        "read_only": "--read-only" in words,
        "starts": note is None,
        "tools": tools,
        "notes": [] if note is None else [note],
    }


def starts(words: list[str], root: str) -> tuple[list[str], str | None]:
    """Start the server as the agent would, in ``root``, and ask it for its tools: their
    names, and None; or what went wrong."""
    program = words[0]
    if shutil.which(program) is None and not os.path.isfile(program):
        return [], f"the server's command cannot start: {program} is not found"
    requests = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "snapstore-doctor", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    text = "".join(json.dumps(r) + "\n" for r in requests)
    try:
        server = subprocess.Popen(
            words,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=root,
        )
    except OSError as exc:
        return [], f"the server did not start: {exc}"
    try:
        assert server.stdin is not None and server.stdout is not None
        server.stdin.write(text.encode())
        server.stdin.flush()
        for line in _lines(server.stdout, time.monotonic() + START_TIMEOUT):
            try:
                reply = json.loads(line)
            except ValueError:
                continue
            if isinstance(reply, dict) and reply.get("id") == 2 and "result" in reply:
                tools = reply["result"].get("tools", [])
                return sorted(str(t.get("name", "")) for t in tools if isinstance(t, dict)), None
    except OSError as exc:
        return [], f"the server went away: {exc}"
    finally:
        server.kill()
        _, err = server.communicate()
    why = (err.decode(errors="replace").strip().splitlines() or ["no answer"])[-1]
    return [], f"the server started but did not list its tools: {why}"


def _lines(stream: IO[bytes], deadline: float) -> Iterator[bytes]:
    """The lines a server writes, until it stops or ``deadline`` passes."""
    with selectors.DefaultSelector() as selector:
        selector.register(stream, selectors.EVENT_READ)
        buffer = b""
        while time.monotonic() < deadline:
            if not selector.select(timeout=max(0.0, deadline - time.monotonic())):
                return
            chunk = os.read(stream.fileno(), 65536)
            if not chunk:
                return
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            yield from lines
