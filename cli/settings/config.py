"""The store's settings file, ``<store>/config`` (INI): scan mode, the capture file-size cap,
automatic gc, the remotes (``[remote.NAME]``, with ``[remote] auto_push = NAME``; a store with
a remote records each new session's base) and the port of ``snapstore serve`` (``[serve]
port``, chosen on first use).

Unknown sections and keys are kept when the file is rewritten, so a newer snapstore's
settings survive an older one. Hooks open the store on every tool call, so loading costs
nothing when there is no file (no ``configparser`` import). A file is obeyed only when this
user wrote it here (``trust``).
"""

from __future__ import annotations

import contextlib
import io
import os
import re
from typing import TYPE_CHECKING

from snapstore import BadInput
from snapstore.core.blobs import digest_hex
from snapstore.core.fsio import DEFAULT_MAX_FILE_SIZE

from .trust import CONFIG_FILE, record, settled, trust

if TYPE_CHECKING:
    import configparser

#: ``[remote.NAME]`` sections hold one remote each (url, endpoint_url, conditional_writes).
REMOTE_SECTION = "remote."


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
        data, recorded = _bytes(path), record(store_dir).get(CONFIG_FILE)
        if data is not None and digest_hex(data) != recorded:
            with settled(store_dir):  # read half way through snapstore's own write?
                data, recorded = _bytes(path), record(store_dir).get(CONFIG_FILE)
        if data is None:
            return cls()
        if digest_hex(data) == recorded:
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
            if value is None:
                return None
            from .values import parse_number

            return parse_number(value, name, takes, whole=whole)

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
                else _size(file_size, f"{path}: [capture] max_file_size"),
                gc_auto=_boolean(get("gc", "auto")),
                gc_max_size=None if max_size is None else _size(max_size, f"{path}: [gc] max_size"),
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
    """Replace the config (mode 0600) and record it as written here, under the record's lock
    (a hook reading it meanwhile waits, and never takes it for a stranger's)."""
    text = io.StringIO()
    parser.write(text)
    path = os.path.join(store_dir, CONFIG_FILE)
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(text.getvalue().encode())
    trust(store_dir, CONFIG_FILE, put=lambda: os.replace(tmp, path))


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


def _size(value: str, name: str) -> int:
    """A size from the file: as snapstore writes it, a number of bytes (read here, without
    loading ``values``, on every hook); as a person may write it, ``500MiB``."""
    if value.isdigit():
        return int(value)
    from .values import parse_size

    return parse_size(value, name)


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


def _bytes(path: str) -> bytes | None:
    """The file's bytes; None when there is none."""
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise BadInput(f"cannot read {path}: {exc.strerror}") from None
