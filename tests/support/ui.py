"""The timeline page's test parts: a real ``snapstore ui`` process, a socket client, chromium.

Each test starts its own server on a free loopback port (the server picks it and prints its
address) and stops it with SIGINT, as a person's Ctrl-C would; nothing outlives the test.
"""

from __future__ import annotations

import itertools
import json
import select
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from websockets.sync.client import ClientConnection, connect

from snapstore import Store

from . import hermetic_env, snapstore_bin, write

#: Debian's chromium (.ci/run installs it): Playwright's own browser download cannot run here.
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
#: What the three turns of :func:`agent_turns` leave in app.py.
GREET = "def greet():\n    return 'hi'\n"
FAREWELL = GREET + "\n\ndef bye():\n    return 'bye'\n"
SHOUT = FAREWELL.replace("'hi'", "'HI'")
#: Seconds to wait for an answer that must come (a bound against a hung test, not a timing).
WAIT = 30.0


@dataclass
class Ui:
    """A running ``snapstore ui``: its address (with the token) and its process."""

    url: str
    process: subprocess.Popen[str]

    @property
    def port(self) -> int:
        return int(urlsplit(self.url).port or 0)

    @property
    def token(self) -> str:
        return parse_qs(urlsplit(self.url).query)["token"][0]

    def socket_url(self, token: str | None = None) -> str:
        token = self.token if token is None else token
        return f"ws://127.0.0.1:{self.port}/ws?token={token}"

    def page(self, **query: str) -> str:
        return self.url + "".join(f"&{k}={v}" for k, v in query.items())


@contextmanager
def running_ui(root: Path, *args: str, **env: str) -> Iterator[Ui]:
    """``snapstore ui --no-open ARGS`` in ``root`` (with ``env`` added to a hermetic
    environment), stopped (and checked to stop cleanly) after."""
    process = subprocess.Popen(
        [*snapstore_bin(), "ui", "--no-open", *args],
        cwd=root,
        env=hermetic_env(**env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        ready, _, _ = select.select([process.stdout], [], [], WAIT)
        assert ready, "snapstore ui printed no address"
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        if "--json" in args:
            url = json.loads(url)["url"]
        assert url.startswith("http://127.0.0.1:") and "?token=" in url, url
        yield Ui(url, process)
    finally:
        process.send_signal(signal.SIGINT)
        try:
            _, err = process.communicate(timeout=WAIT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            raise
    assert process.returncode == 0, err
    assert err.endswith("snapstore ui: stopped\n"), err


def agent_turns(store: Store, session: str = "default") -> list[str]:
    """Three closed turns of ``session``, with the agent's message ids m1..m3; their ids."""
    ids = []
    for n, (prompt, edits) in enumerate(
        [
            ("create the greeting", {"app.py": GREET}),
            ("add a farewell", {"app.py": FAREWELL, "notes.txt": "bye\n"}),
            ("shout the greeting", {"app.py": SHOUT}),
        ],
        start=1,
    ):
        ids.append(store.begin_turn(session, prompt, f"m{n}").id)
        for rel, data in edits.items():
            store.pre_write([rel], "Write", session)
            write(Path(store.root), rel, data)
            store.post_write([rel], session)
        store.end_turn(session)
    return ids


#: The session and shell call of :func:`git_turn`: Claude Code's, making branch x and
#: committing on it.
GIT_SESSION = "claude-code/s"
GIT_SCRIPT = (
    "git checkout -q -b x && echo agent >> a.txt && git commit -qm 'the agent commits' a.txt"
)


def git_repo(cli: Any, root: Path) -> None:
    """A repository on main (tests/support/gitrepo.py) with the user's uncommitted edit, and
    a store in scan mode (the hooks read the repository around each shell call)."""
    from .gitrepo import init

    init(root)
    assert cli("init", "--track-shell").code == 0
    (root / "notes.txt").write_text("notes\nuser edit\n")  # the user's uncommitted work


def shell_turn(cli: Any, root: Path, script: str) -> None:
    """One Claude Code turn of :data:`GIT_SESSION` whose Bash call runs ``script``, through
    the real hook command."""
    from ..e2e.test_git_layouts_cli import _turn

    _turn(cli, root, script, {})


def git_turn(cli: Any, root: Path) -> str:
    """:func:`git_repo`, then a turn whose Bash call runs :data:`GIT_SCRIPT`; x's commit."""
    from .gitrepo import git

    git_repo(cli, root)
    shell_turn(cli, root, GIT_SCRIPT)
    assert git(root, "symbolic-ref", "HEAD") == "refs/heads/x"
    return git(root, "rev-parse", "x")


_ids = itertools.count(1)


def ask(ws: ClientConnection, frame: dict[str, Any], timeout: float = WAIT) -> dict[str, Any]:
    """Send one request and return its reply (matched on its request id; pushes are skipped)."""
    request_id = f"t{next(_ids)}"
    ws.send(json.dumps({**frame, "request_id": request_id}))
    return reply_to(ws, request_id, timeout)


def reply_to(ws: ClientConnection, request_id: str, timeout: float = WAIT) -> dict[str, Any]:
    while True:
        frame = json.loads(ws.recv(timeout=timeout))
        if frame["data"].get("request_id") == request_id:
            return frame


def open_socket(ui: Ui, **options: Any) -> ClientConnection:
    return connect(ui.socket_url(), open_timeout=WAIT, **options)
