"""Where the command line's settings come from, and opening the store with them.

The library never reads the environment or the store's settings file; this
module does, once, for both front ends: the Click application and the fast
path in ``hooks`` (which must not import Click or rich). Everything a command
needs to open its store is here.

Environment variables (docs/cli.md):

- ``SNAPSTORE_DIR``: the store folder, overriding discovery;
- ``SNAPSTORE_SESSION``: the session when ``--session`` is not given;
- ``SNAPSTORE_LOCK_TIMEOUT``: seconds to wait for a busy store (default 10);
- ``SNAPSTORE_NOW``: a fixed clock (hermetic tests, reproducible demos);
- ``SNAPSTORE_STRICT=1``: hooks exit 2 on their own failures instead of 0.

The store's settings file, ``<store>/config`` (INI), holds scan mode, the scan
file-size cap, automatic gc, and the remotes (``[remote.NAME]``, with ``[remote]
auto_push = NAME``; a store with a remote records each new session's base), and the
port of ``snapstore serve`` (``[serve] port``, chosen on first use).
Unknown sections and keys are kept when the file is rewritten, so a newer
snapstore's settings survive an older one. Hooks open the store on every tool
call, so loading costs nothing when there is no file (no ``configparser``
import).

The config is obeyed only if this user wrote it on this machine: a repository can
commit ``.snapstore/config`` (a remote and ``auto_push`` that would send the next
``.env`` the agent edits to someone else's bucket), and a clone must not be able to
make snapstore send data anywhere or run anything. So every time snapstore writes
the config (or ``serve.secret``), it records the file's BLAKE3 digest in a trust
record outside the workspace, in the user's state folder
(``$XDG_STATE_HOME/snapstore/trusted/``, one file per store, named by the digest of
the store's real path), where no clone can put one. A file whose digest is not
recorded there (cloned, copied, edited by hand, or the store moved) is not used at
all until the user reviews it and runs ``snapstore config trust``.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import sys
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from snapstore import DEFAULT_SESSION, BadInput, SnapstoreError, Store, find_root
from snapstore.core.blobs import digest_hex
from snapstore.core.db import STORE_DIRNAME
from snapstore.core.errors import NoStore
from snapstore.core.fsio import DEFAULT_MAX_FILE_SIZE

if TYPE_CHECKING:
    import configparser

DEFAULT_LOCK_TIMEOUT = 10.0
_INF = float("inf")  # not math's: the hook path does not load math
CONFIG_FILE = "config"
SECRET_FILE = "serve.secret"  # the HTTP hooks' secret (snapstore_cli.daemon)
#: The store's files that make snapstore send or run something: obeyed only when trusted.
SETTINGS_FILES = (CONFIG_FILE, SECRET_FILE)
#: ``[remote.NAME]`` sections hold one remote each (url, endpoint_url, conditional_writes).
REMOTE_SECTION = "remote."
_UNITS = {
    "": 1,
    "b": 1,
    "k": 1024,
    "kb": 1024,
    "kib": 1024,
    "m": 1024**2,
    "mb": 1024**2,
    "mib": 1024**2,
    "g": 1024**3,
    "gb": 1024**3,
    "gib": 1024**3,
}


def parse_size(text: str, name: str = "a size") -> int:
    """'10MiB', '512k', '2G' or a plain number of bytes; ``name`` is what the error names (the
    option, the variable or the settings file's key)."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text)
    if not match or match.group(2).lower() not in _UNITS:
        raise BadInput(f"{name} takes a size such as 500MiB, 2GiB or 4096 (bytes), not {text!r}")
    return int(float(match.group(1)) * _UNITS[match.group(2).lower()])


def parse_number(
    text: str, name: str, takes: str, *, whole: bool = False, low: float = 0, high: float = _INF
) -> float:
    """A finite number from ``low`` to ``high`` (a whole one with ``whole``); else one line
    naming ``name`` and saying what it ``takes`` ("a number of days"), never Python's words
    about floats."""
    try:
        value = int(text) if whole else float(text)
    except ValueError:
        value = _INF  # refused below
    if not low <= value <= high or value == _INF:  # a NaN fails the comparison
        bound = f"{low:g} or more" if high == _INF else f"from {low:g} to {high:g}"
        raise BadInput(f"{name} takes {takes}, {bound}, not {text!r}")
    return value


def format_size(n: int) -> str:
    """A size for people: '512 B', '16.0 KiB', '12.3 MiB', '2.0 GiB'."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


class Config:
    """Settings from ``<store>/config``; the defaults when the file is absent.

    Plain classes here, not NamedTuples: the hook path loads this module, and
    defining a NamedTuple costs about 0.1 ms of every hook's start-up.
    """

    __slots__ = (
        "auto_push",
        "found",
        "gc_auto",
        "gc_keep_days",
        "gc_keep_turns",
        "gc_max_size",
        "max_file_size",
        "refused",
        "remotes",
        "serve_idle_minutes",
        "serve_port",
        "track_shell",
    )

    def __init__(
        self,
        *,
        track_shell: bool = False,
        max_file_size: int = DEFAULT_MAX_FILE_SIZE,
        gc_auto: bool = False,
        gc_max_size: int | None = None,
        gc_keep_days: float | None = 30.0,
        gc_keep_turns: int | None = None,
        remotes: dict[str, dict[str, str]] | None = None,
        auto_push: str | None = None,
        serve_port: int | None = None,
        serve_idle_minutes: float = 30.0,
    ):
        self.remotes = remotes or {}  # name -> url, endpoint_url, conditional_writes
        self.auto_push = auto_push  # a remote's name: the hook pushes there at each turn end
        self.serve_port = serve_port  # where `snapstore serve` listens (HTTP hooks)
        self.serve_idle_minutes = serve_idle_minutes  # the daemon exits idle this long; 0: never
        self.track_shell = track_shell  # scan mode: scan at each turn's edges
        self.max_file_size = max_file_size  # captures and scans skip (and report) larger files
        self.gc_auto = gc_auto  # run gc after a command once the store passes gc_max_size
        self.gc_max_size = gc_max_size
        self.gc_keep_days = gc_keep_days
        self.gc_keep_turns = gc_keep_turns
        #: Why the file's settings are not used (it was not written here), else None.
        self.refused: str | None = None
        #: What an unused file holds (to say so), else None.
        self.found: Config | None = None

    @classmethod
    def load(cls, store_dir: str) -> Config:
        """The settings of ``<store>/config``; the defaults, with :attr:`refused` saying
        why, when this user did not write the file here (see :func:`trust`)."""
        path = os.path.join(store_dir, CONFIG_FILE)
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except (FileNotFoundError, NotADirectoryError):
            return cls()
        except OSError as exc:
            raise BadInput(f"cannot read {path}: {exc.strerror}") from None
        if digest_hex(data) == _record(store_dir).get(CONFIG_FILE):
            return cls._parse(path, data)
        unused = cls()
        unused.refused = (
            f"{path} was not written by snapstore for you here (a clone, a copy or a hand "
            "edit), so none of its settings are used: review it, then run "
            "`snapstore config trust`"
        )
        with contextlib.suppress(BadInput):  # unused either way: no command fails on it
            unused.found = cls._parse(path, data)
        return unused

    def require_trusted(self) -> None:
        """Stop a command that would have used the settings of an unused file."""
        if self.refused is not None:
            raise BadInput(self.refused)

    def describe(self) -> list[str]:
        """What these settings make snapstore do beyond recording: send, run, delete."""
        lines = [f"remote {name} ({s.get('url', '?')})" for name, s in self.remotes.items()]
        if self.auto_push:
            lines.append(f"auto_push = {self.auto_push} (a push at every turn's end)")
        if self.serve_port:
            lines.append(f"serve port {self.serve_port}")
        if self.gc_auto:
            lines.append("gc auto = true (automatic gc)")
        if self.track_shell:
            lines.append("track_shell = true (scan mode)")
        return lines

    @classmethod
    def _parse(cls, path: str, data: bytes) -> Config:
        sections = _sections(path, data)

        def get(section: str, key: str) -> str | None:
            return sections.get(section, {}).get(key)

        def number(section: str, key: str, takes: str, whole: bool = False) -> float | None:
            value = get(section, key)
            name = f"{path}: [{section}] {key}"
            return None if value is None else parse_number(value, name, takes, whole=whole)

        try:
            max_size = get("gc", "max_size")
            keep_days = number("gc", "keep_days", "a number of days")
            keep_turns = number("gc", "keep_turns", "a number of turns", whole=True)
            port = number("serve", "port", "a TCP port", whole=True)
            idle = number("serve", "idle_minutes", "a number of minutes (0: never)")
            file_size = get("capture", "max_file_size")
            return cls(
                track_shell=_boolean(get("capture", "track_shell")),
                max_file_size=DEFAULT_MAX_FILE_SIZE
                if file_size is None
                else parse_size(file_size, f"{path}: [capture] max_file_size"),
                gc_auto=_boolean(get("gc", "auto")),
                gc_max_size=None
                if max_size is None
                else parse_size(max_size, f"{path}: [gc] max_size"),
                gc_keep_days=cls().gc_keep_days if keep_days is None else keep_days,
                gc_keep_turns=None if keep_turns is None else int(keep_turns),
                remotes={
                    section[len(REMOTE_SECTION) :]: values
                    for section, values in sections.items()
                    if section.startswith(REMOTE_SECTION)
                },
                auto_push=get("remote", "auto_push") or None,
                serve_port=None if port is None else int(port),
                serve_idle_minutes=cls().serve_idle_minutes if idle is None else idle,
            )
        except ValueError as exc:
            raise BadInput(f"{path}: {exc}") from None

    def save(self, store_dir: str) -> None:
        parser = _read(store_dir)
        for section, key, value in (
            ("capture", "track_shell", str(self.track_shell).lower()),
            ("capture", "max_file_size", str(self.max_file_size)),
        ):
            if not parser.has_section(section):
                parser.add_section(section)
            parser.set(section, key, value)
        _write(store_dir, parser)


def set_remote(
    store_dir: str, name: str, settings: dict[str, str] | None, *, auto_push: bool = False
) -> None:
    """Add (or with None, remove) the remote ``name`` in ``<store>/config``, keeping the rest;
    with ``auto_push``, hooks push there at each turn's end."""
    parser = _read(store_dir)
    section = REMOTE_SECTION + name
    parser.remove_section(section)
    if settings is not None:
        parser.add_section(section)
        for key, value in settings.items():
            parser.set(section, key, value)
        if auto_push:
            if not parser.has_section("remote"):
                parser.add_section("remote")
            parser.set("remote", "auto_push", name)
    elif parser.get("remote", "auto_push", fallback=None) == name:
        parser.remove_option("remote", "auto_push")
    _write(store_dir, parser)


def set_serve_port(store_dir: str, port: int) -> None:
    """Record the port `snapstore serve` listens on (the HTTP hooks name it)."""
    parser = _read(store_dir)
    if not parser.has_section("serve"):
        parser.add_section("serve")
    parser.set("serve", "port", str(port))
    _write(store_dir, parser)


def _write(store_dir: str, parser: configparser.ConfigParser) -> None:
    """Replace the config (mode 0600) and record it as written here."""
    text = io.StringIO()
    parser.write(text)
    path = os.path.join(store_dir, CONFIG_FILE)
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(text.getvalue().encode())
    os.replace(tmp, path)
    trust(store_dir, CONFIG_FILE)


def _read(store_dir: str) -> configparser.ConfigParser:
    """The config, to change it: only one written here (a change must not adopt the rest)."""
    Config.load(store_dir).require_trusted()
    path = os.path.join(store_dir, CONFIG_FILE)
    try:
        with open(path, "rb") as handle:
            return _parser(path, handle.read())
    except FileNotFoundError:
        return _parser(path, b"")


#: The lines of a config as snapstore writes it (configparser's own output).
_SIMPLE_LINE = re.compile(r"\[([^\]\s]+)\]|([a-z0-9_.-]+) = ([^%\s](?:[^%]*[^%\s])?)?")


def _sections(path: str, data: bytes) -> dict[str, dict[str, str]]:
    """The config's sections and values. Every hook reads it, and the config is nearly
    always as snapstore wrote it: that simple form is read here without importing
    ``configparser`` (about 1.3 ms); anything else (comments, continuation lines,
    interpolation, repeats) is left to configparser."""
    try:
        lines = data.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        lines = None
    sections: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    for line in lines or ():
        match = _SIMPLE_LINE.fullmatch(line) if line else None
        if not line:
            continue
        if match is None or (match[1] or "").upper() == "DEFAULT":
            break
        if match[1] is not None:
            if match[1] in sections:
                break
            current = sections[match[1]] = {}
        elif current is None or match[2] in current:
            break
        else:
            current[match[2]] = match[3] or ""
    else:
        if lines is not None:
            return sections
    import configparser

    parser = _parser(path, data)
    try:
        return {section: dict(parser[section]) for section in parser.sections()}
    except configparser.Error as exc:  # a bad interpolation, met when the value is read
        raise BadInput(f"{path} is not a valid settings file: {exc}") from None


def _boolean(value: str | None) -> bool:
    """A setting's truth, spelled as configparser allows (``true``, ``yes``, ``on``, ``1``)."""
    if value is None:
        return False
    spelled = value.lower()
    if spelled in ("1", "yes", "true", "on"):
        return True
    if spelled in ("0", "no", "false", "off"):
        return False
    raise ValueError(f"Not a boolean: {value}")


def _parser(path: str, data: bytes) -> configparser.ConfigParser:
    import configparser

    parser = configparser.ConfigParser()
    try:
        parser.read_string(data.decode("utf-8"), source=path)
    except (configparser.Error, UnicodeDecodeError) as exc:
        raise BadInput(f"{path} is not a valid settings file: {exc}") from None
    return parser


# -- trust: which of the store's settings files this user wrote here -------------------


def trust_dir() -> str:
    """Where this user's trust records live: ``$XDG_STATE_HOME/snapstore/trusted``
    (``~/.local/state/snapstore/trusted``), outside every workspace. A relative
    ``XDG_STATE_HOME`` is refused (the XDG spec calls it invalid): it would put the records
    in whatever folder the command runs in, a workspace included."""
    state = os.environ.get("XDG_STATE_HOME")
    if state and not os.path.isabs(state):
        raise BadInput(f"XDG_STATE_HOME takes an absolute path, not {state!r}")
    return os.path.join(
        state or os.path.join(os.path.expanduser("~"), ".local", "state"), "snapstore", "trusted"
    )


def _record_path(store_dir: str) -> str:
    return os.path.join(trust_dir(), digest_hex(os.path.realpath(store_dir).encode())[:32])


def _record(store_dir: str) -> dict[str, str]:
    """The store's trust record: each settings file's digest as snapstore last wrote it."""
    try:
        with open(_record_path(store_dir), "rb") as handle:
            record = json.loads(handle.read())
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def _file_digest(path: str) -> str | None:
    """The digest of a file's bytes; None when there is no file."""
    try:
        with open(path, "rb") as handle:
            return digest_hex(handle.read())
    except (FileNotFoundError, NotADirectoryError):
        return None


def trusted(store_dir: str, name: str) -> bool:
    """Whether the store's file ``name`` is absent, or as snapstore wrote it for this user."""
    digest = _file_digest(os.path.join(store_dir, name))
    return digest is None or digest == _record(store_dir).get(name)


def trust(store_dir: str, *names: str) -> None:
    """Record the store's files ``names`` as they are now as written by this user here
    (snapstore's own writes, and `snapstore config trust`).

    The record holds every file's digest, so its read, change and write happen under an
    flock of ``<record>.lock``: a daemon trusting its new ``serve.secret`` while `hook
    install` trusts the config it just wrote would otherwise write back the record it read
    before, and the config, no longer trusted, would be ignored by every hook."""
    import fcntl

    from snapstore.core.locks import flock

    path = _record_path(store_dir)
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        lock = flock(f"{path}.lock", fcntl.LOCK_EX, 10.0, "the trust record", create=0o600)
        try:
            record = _record(store_dir)
            record["store"] = os.path.realpath(store_dir)
            for name in names:
                digest = _file_digest(os.path.join(store_dir, name))
                if digest is None:
                    record.pop(name, None)
                else:
                    record[name] = digest
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(record, handle, indent=1)
            os.replace(tmp, path)
        finally:
            os.close(lock)
    except OSError as exc:
        raise BadInput(
            f"cannot record the store's settings as yours in {trust_dir()}: {exc.strerror} "
            "(set XDG_STATE_HOME to a folder you can write)"
        ) from None


def agent_homes(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Each agent's home folder, where its transcripts and its registry of running sessions
    are: what a conversation rewind reads (snapstore.conversation)."""
    env = os.environ if environ is None else environ
    home = env.get("HOME") or os.path.expanduser("~")
    return {
        "claude-code": env.get("CLAUDE_CONFIG_DIR") or os.path.join(home, ".claude"),
        "codex": env.get("CODEX_HOME") or os.path.join(home, ".codex"),
        "gemini-cli": os.path.join(home, ".gemini"),
        "qwen-code": os.path.join(home, ".qwen"),
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
            parse_number(now, "SNAPSTORE_NOW", "a Unix time in seconds") if now else None,
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
    return parse_number(text, name, "a number of seconds to wait for a busy store")


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


def open_for_hook(env: Environment, cwd: str, warn: Callable[[str], None]) -> tuple[Store, Config]:
    """The store an agent's hook at ``cwd`` writes to, and its settings; the store is
    created at the project root when there is none yet, never at the file system root
    or the home folder. What goes wrong without stopping the hook goes to ``warn``."""
    if env.store_dir:
        return env.open_with_config(None, warn=warn)
    root = find_root(cwd)
    if root is not None:
        return env.open_with_config(root, warn=warn)
    project = os.path.realpath(project_root(cwd))
    home = os.path.realpath(os.path.expanduser("~"))
    if project in (os.path.sep, home):
        raise NoStore(
            f"no snapstore store for {cwd}, and {project} is too broad to create one", start=cwd
        )
    return env.open_with_config(project, create=True, warn=warn)


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
        """The session to act on: --session, else $SNAPSTORE_SESSION, else ``default``.

        When reading (``store`` given) and the store has no ``default`` session,
        the most recently active one is used instead (agents' hooks name their
        sessions), and a note says so when there were others to choose from.
        """
        if self.session:
            return self.session
        if store is None or store.has_session(DEFAULT_SESSION):
            return DEFAULT_SESSION
        latest = store.latest_session()
        if latest is None:
            return DEFAULT_SESSION
        if store.session_count() > 1:
            from .output.plain import printable  # said with --json too: stderr is for people

            print(
                f"snapstore: session {printable(latest)} (the most recent; "
                "choose one with --session)",
                file=sys.stderr,
            )
        self.session = latest
        return latest

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
