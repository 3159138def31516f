"""The global options (``--root``, ``--json``, ``--debug``, ``--session``), settable before
the command or after it, and the session and store they choose."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from snapstore import DEFAULT_SESSION
from snapstore.core.errors import BadInput

from .environment import Environment

if TYPE_CHECKING:
    from snapstore import Store


class Options:
    """Global options, settable before the command or after it (both front ends: the Click
    application keeps one in its context, the capture fast path makes its own)."""

    __slots__ = ("debug", "env", "json", "root", "session")

    def __init__(
        self,
        root: str | None = None,
        json: bool = False,
        debug: bool = False,
        env: Environment | None = None,
        session: str | None = None,
    ):
        self.root = root
        self.json = json
        self.debug = debug
        self.env = Environment.read() if env is None else env
        self.session = session or self.env.session

    def session_for(self, store: Store | None = None) -> str:
        """The session to act on: --session, else $SNAPSTORE_SESSION, else ``default``; when
        reading (``store`` given) the one :func:`choose_session` chooses, saying so on
        stderr when it chose among several."""
        if store is None:
            return self.session or DEFAULT_SESSION
        session, note = choose_session(store, self.session)
        if note is not None:
            from ..output.plain import printable

            print(f"snapstore: {printable(note, quote=False)}", file=sys.stderr)
        self.session = session
        return session

    def find_root(self) -> str | None:
        if self.root is not None:
            return os.path.realpath(self.root)
        return self.env.find_root(os.getcwd())

    def store_dir(self) -> str | None:
        """The store folder this command uses, without opening it."""
        return self.env.store_dir_for(self.find_root())

    def open_store(self, create: bool = False) -> Store:
        root = self.find_root() if not create else os.path.realpath(self.root or os.getcwd())
        return self.env.open(root, create=create)


def resolve_session(store: Store, named: str) -> str:
    """The session ``named`` names in a command that reads or moves (never one that records,
    where a new name starts a new session): that session, else the one session whose name
    begins with it, as a turn id's prefix names a turn (tables shorten ``claude-code/<uuid>``
    to fit the terminal: docs/cli.md, "Sessions"). A prefix of several is refused; one of
    none is left as it is, for the command to say it is unknown."""
    if store.has_session(named):
        return named
    with store.repo.read() as v:
        matches = sorted(s.name for s in v.sessions() if s.name.startswith(named))
    if len(matches) > 1:
        raise BadInput(
            f"session prefix {named!r} is ambiguous: {', '.join(matches[:5])}", session=named
        )
    return matches[0] if matches else named


def choose_session(store: Store, named: str | None) -> tuple[str, str | None]:
    """The session a command acts on, and a note when it was chosen among several: the one
    ``named`` (or the one session whose name it begins: :func:`resolve_session`), else
    ``default`` when the store has it, else the most recently active (agents' hooks name
    their sessions)."""
    if named:
        return resolve_session(store, named), None
    if store.has_session(DEFAULT_SESSION):
        return DEFAULT_SESSION, None
    latest = store.latest_session()
    if latest is None:
        return DEFAULT_SESSION, None
    if store.session_count() > 1:
        return latest, f"session {latest} (the most recent; choose one with --session)"
    return latest, None
