"""What the process environment says: the store, the session, the clock, the lock timeout,
strict hooks, and each agent's home folder. The library never reads the environment; this
module does, once, for every front end.

Environment variables (docs/cli.md):

- ``SNAPSTORE_DIR``: the store folder, overriding discovery;
- ``SNAPSTORE_SESSION``: the session when ``--session`` is not given;
- ``SNAPSTORE_LOCK_TIMEOUT``: seconds to wait for a busy store (default 10);
- ``SNAPSTORE_NOW``: a fixed clock (hermetic tests, reproducible demos);
- ``SNAPSTORE_STRICT=1``: hooks exit 2 on their own failures instead of 0;
- ``GIT_DIR``: the repository git uses for the workspace (its state is read and moved with
  each turn);
- the agents' own: ``CLAUDE_CONFIG_DIR``, ``CODEX_HOME``, ``GEMINI_CLI_HOME``, ``QWEN_HOME``,
  ``COPILOT_HOME``, ``XDG_DATA_HOME`` (opencode), for where their transcripts and registries
  of running sessions are.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from snapstore import BadInput, SnapstoreError, find_root
from snapstore.core.errors import NoStore
from snapstore.core.places import STORE_DIRNAME

if TYPE_CHECKING:  # loaded when a store is opened: finding one needs neither (fast.route)
    from snapstore import Store

    from .config import Config

DEFAULT_LOCK_TIMEOUT = 10.0


def agent_homes(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Each agent's home folder, where its transcripts and its registry of running sessions
    are: what a conversation rewind reads (snapstore.conversation). Gemini CLI's
    ``GEMINI_CLI_HOME`` stands for the user's home (``.gemini`` is made in it); Qwen Code's
    ``QWEN_HOME`` is its folder, the registry's (``QWEN_RUNTIME_DIR`` moves only the
    transcripts, whose folder a rewind takes from the transcript's own path)."""
    env = os.environ if environ is None else environ
    home = env.get("HOME") or os.path.expanduser("~")
    return {
        "claude-code": env.get("CLAUDE_CONFIG_DIR") or os.path.join(home, ".claude"),
        "codex": env.get("CODEX_HOME") or os.path.join(home, ".codex"),
        "gemini-cli": os.path.join(env.get("GEMINI_CLI_HOME") or home, ".gemini"),
        "qwen-code": env.get("QWEN_HOME") or os.path.join(home, ".qwen"),
        "copilot": env.get("COPILOT_HOME") or os.path.join(home, ".copilot"),
        "opencode": os.path.join(
            env.get("XDG_DATA_HOME") or os.path.join(home, ".local", "share"), "opencode"
        ),
    }


class Environment:
    """What the process environment says about the store and how to use it."""

    __slots__ = ("git_dir", "lock_timeout", "now", "session", "store_dir")

    def __init__(
        self,
        store_dir: str | None = None,
        session: str | None = None,
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
        now: float | None = None,
        git_dir: str | None = None,
    ):
        self.store_dir = store_dir  # SNAPSTORE_DIR, absolute
        self.session = session
        self.lock_timeout = lock_timeout  # seconds to wait for a busy store
        self.now = now  # a fixed clock
        self.git_dir = git_dir  # GIT_DIR, absolute: the repository git uses here

    @classmethod
    def read(cls, environ: Mapping[str, str] | None = None) -> Environment:
        """Every ``SNAPSTORE_`` variable, each checked here (BadInput naming it): an empty one
        counts as unset."""
        env = os.environ if environ is None else environ
        timeout, now = env.get("SNAPSTORE_LOCK_TIMEOUT"), env.get("SNAPSTORE_NOW")
        strict_hooks(env)
        store_dir, git_dir = env.get("SNAPSTORE_DIR"), env.get("GIT_DIR")
        return cls(
            os.path.abspath(store_dir) if store_dir else None,
            env.get("SNAPSTORE_SESSION") or None,
            lock_timeout(timeout, "SNAPSTORE_LOCK_TIMEOUT") if timeout else DEFAULT_LOCK_TIMEOUT,
            _number(now, "SNAPSTORE_NOW", "a Unix time in seconds") if now else None,
            os.path.abspath(git_dir) if git_dir else None,
        )

    def clock(self) -> Callable[[], float]:
        if self.now is None:
            return time.time
        fixed = self.now
        return lambda: fixed

    def store_dir_for(self, root: str | None) -> str | None:
        """The store folder: ``SNAPSTORE_DIR``, else ``ROOT/.snapstore``."""
        if self.store_dir:
            return self.store_dir
        return None if root is None else os.path.join(root, STORE_DIRNAME)

    def find_root(self, start: str) -> str | None:
        """The workspace holding a store at or above ``start`` (None: the store says, when
        ``SNAPSTORE_DIR`` names it)."""
        if self.store_dir:
            return None  # the store records its workspace
        root = find_root(start)
        if root is None:
            raise NoStore(f"no snapstore store in {start} or any folder above it", start=start)
        return root

    def open(self, root: str | None, *, create: bool = False) -> Store:
        """Open (or create) the store of ``root`` with this environment's settings and the
        store's own config (its scan file-size cap)."""
        return self.open_with_config(root, create=create)[0]

    def open_with_config(
        self, root: str | None, *, create: bool = False, warn: Callable[[str], None] | None = None
    ) -> tuple[Store, Config]:
        """The store and its settings. With ``warn``, a bad settings file is reported there
        and the defaults are used, instead of failing, and so is one not written here."""
        from snapstore import Store

        from .config import Config

        store_dir = self.store_dir_for(root)
        config = Config()
        if store_dir is not None:
            try:
                config = Config.load(store_dir)
            except SnapstoreError as exc:
                if warn is None:
                    raise
                warn(str(exc))
            if config.refused is not None and warn is not None:
                warn(config.refused)
        store = Store(
            root,
            store_dir=store_dir,
            create=create,
            clock=self.clock(),
            lock_timeout=self.lock_timeout,
            max_file_size=config.max_file_size,
            warn=warn,
            record_base=bool(config.remotes),
            git_dir=self.git_dir,
        )
        return store, config


def lock_timeout(text: str, name: str) -> float:
    """Seconds to wait for a busy store (``--lock-timeout``, ``SNAPSTORE_LOCK_TIMEOUT``)."""
    return _number(text, name, "a number of seconds to wait for a busy store")


def _number(text: str, name: str, takes: str) -> float:
    """A variable's or option's number, 0 or more; ``values`` (its one line when it is not
    one) loads only for a bad one, off every hook's path."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if 0 <= value < float("inf"):
        return value
    from .values import parse_number

    return parse_number(text, name, takes)


def strict_hooks(environ: Mapping[str, str] | None = None) -> bool:
    """Whether hooks block the agent (exit 2) on snapstore's own failures: ``SNAPSTORE_STRICT``
    is 1, or 0 or unset; anything else is refused rather than guessed."""
    value = (os.environ if environ is None else environ).get("SNAPSTORE_STRICT") or "0"
    if value not in ("0", "1"):
        raise BadInput(f"SNAPSTORE_STRICT takes 1 (hooks block on failure) or 0, not {value!r}")
    return value == "1"


def project_root(cwd: str) -> str:
    """Where a hook creates a store when none exists: the git top level, else ``cwd``."""
    return find_root(cwd, (".git",)) or cwd


def open_for_hook(
    env: Environment, cwd: str, warn: Callable[[str], None]
) -> tuple[Store, Config, bool]:
    """The store an agent's hook at ``cwd`` writes to, its settings, and whether it was made
    now; the store is created at the project root when there is none yet, never at the file
    system root or the home folder. What goes wrong without stopping the hook goes to
    ``warn``."""
    if env.store_dir:
        return (*env.open_with_config(None, warn=warn), False)
    root = find_root(cwd)
    if root is not None:
        return (*env.open_with_config(root, warn=warn), False)
    project = os.path.realpath(project_root(cwd))
    home = os.path.realpath(os.path.expanduser("~"))
    if project in (os.path.sep, home):
        raise NoStore(
            f"no snapstore store for {cwd}, and {project} is too broad to create one", start=cwd
        )
    return (*env.open_with_config(project, create=True, warn=warn), True)
