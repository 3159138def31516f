"""The records a store keeps, and their JSON encoding (docs/format.md).

Records are immutable ``typing.NamedTuple`` classes; code that changes one
makes a new one with ``_replace`` and puts it back. They are NamedTuples rather
than dataclasses because every hook process loads them: ``import dataclasses``
pulls in ``inspect`` and alone costs a third of the bare-import floor that the
hook's start-up is measured against (docs/benchmarks.md). Result types off the
hook path are ordinary dataclasses.

Records are stored as compact JSON objects whose keys are the field names; a
version of a file is stored as the triple ``[digest, mode, kind]``. Unknown
keys are an error, so a record written by a newer schema is never half-read.
"""

# No ``from __future__ import annotations`` here: a NamedTuple turns string annotations
# into ForwardRefs, and the first ForwardRef of a process compiles, which sets up the
# AST module: about 3 ms of every hook's start-up (docs/benchmarks.md).

import json
import os
import stat
import struct
from collections.abc import Mapping
from typing import Any, Final, Literal, NamedTuple, get_args

from .blobs import digest
from .errors import StoreCorrupt

#: The session of a command that names none (the CLI: ``$SNAPSTORE_SESSION``, else this).
DEFAULT_SESSION = "default"

# The words records are made of, each a ``Literal`` type with its values as constants, so
# that a checker sees a misspelt one; ``Final`` keeps each constant's literal type.

#: What a version or an entry is: file bytes, or a symlink's target.
Kind = Literal["file", "link"]
FILE: Final = "file"
LINK: Final = "link"

#: A turn's state: open (its changes go on), closed, or taken back by a rewind.
TurnState = Literal["open", "closed", "rewound"]
OPEN: Final = "open"
CLOSED: Final = "closed"
REWOUND: Final = "rewound"

#: What a turn is: a user message's (agent), changes nobody's agent made (user), a
#: rewind, switch or undo (rewind), or an undo that became a turn on the branch (revert).
TurnKind = Literal["agent", "user", "rewind", "revert"]
AGENT: Final = "agent"
USER: Final = "user"
REWIND: Final = "rewind"
REVERT: Final = "revert"
#: Turns that stand on a session's branches: a user message's turn, and an undo that
#: could not move the head back and so became a turn of its own on top (as git revert).
BRANCH_KINDS: tuple[TurnKind, ...] = (AGENT, REVERT)

#: Who recorded a change: an agent's hook, a scan, the watcher, a rewind (``REWIND``), or
#: a pull (the uncommitted changes a session started from).
Source = Literal["hook", "scan", "watch", "rewind", "base"]
HOOK: Final = "hook"
SCAN: Final = "scan"
WATCH: Final = "watch"
BASE: Final = "base"

#: What a rewind takes back: files and conversation, only the files, only the conversation.
Mode = Literal["both", "code", "conversation"]
BOTH: Final = "both"
CODE: Final = "code"
CONVERSATION: Final = "conversation"
MODES: tuple[Mode, ...] = get_args(Mode)

#: What a rewind does with a file it cannot merge: leave it, write conflict markers, or
#: force the version it goes to.
Policy = Literal["skip", "markers", "theirs"]
SKIP: Final = "skip"
MARKERS: Final = "markers"
THEIRS: Final = "theirs"
POLICIES: tuple[Policy, ...] = get_args(Policy)

#: What an operation record is (a rewind is ``REWIND``), and how far it has got.
#: ``finish`` retries what an operation left (its conflicts and failed writes); ``failed``:
#: every write failed, so nothing else moved.
Action = Literal["rewind", "switch", "undo", "finish"]
SWITCH: Final = "switch"
UNDO: Final = "undo"
FINISH: Final = "finish"
Status = Literal["planned", "applied", "failed"]
PLANNED: Final = "planned"
APPLIED: Final = "applied"
FAILED: Final = "failed"

#: The empty mapping a record's mapping fields default to; records are never changed in
#: place (``_replace`` makes a new one), and the ``Mapping`` type keeps it so.
_EMPTY: Mapping[str, Any] = {}


class Version(NamedTuple):
    """One state of a path: a blob digest (hex), its permission bits, and its kind."""

    digest: str
    mode: int = 0o644
    kind: Kind = FILE

    @property
    def key(self) -> bytes:
        """The digest as the blob's key."""
        return bytes.fromhex(self.digest)

    def same_content(self, other: "Version | None") -> bool:
        return other is not None and other.digest == self.digest and other.kind == self.kind


class Big(tuple[bytes, int]):
    """A big file's content, named but not held: its digest and size. Its bytes stay in
    the workspace file or in the store's chunks, and are streamed from there
    (``core/chunked.py``), so memory stays bounded whatever the size.

    A plain tuple, not a NamedTuple: making a NamedTuple class costs every hook's start-up
    about 0.7 M instructions (docs/benchmarks.md)."""

    __slots__ = ()

    def __new__(cls, key: bytes, size: int) -> "Big":
        return super().__new__(cls, (key, size))

    @property
    def key(self) -> bytes:
        return self[0]

    @property
    def size(self) -> int:
        return self[1]


class Entry(NamedTuple):
    """What a path holds on disk: file bytes (or, for a big file, :class:`Big`) or a link
    target, with permission bits."""

    kind: Kind
    data: bytes | Big
    mode: int = 0o644
    stat: os.stat_result | None = None


def version_of(entry: Entry | None) -> Version | None:
    """The identity of what is on disk (its digest, mode and kind)."""
    if entry is None:
        return None
    key = entry.data.key if isinstance(entry.data, Big) else digest(entry.data)
    return Version(key.hex(), entry.mode, entry.kind)


#: ``index`` values (scan mode): size, mtime_ns, ctime_ns, inode, st_mode, then the digest.
FINGERPRINT = struct.Struct(">QqqQI")


def fingerprint(st: os.stat_result) -> bytes:
    """A path's stat fingerprint: it moves whenever the path's content or kind may have."""
    return FINGERPRINT.pack(st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_mode)


def unscanned_fingerprint(version: Version) -> bytes:
    """The fingerprint of a version that something other than a scan recorded.

    It matches no file on disk, so the next scan re-reads the path, and it
    keeps the version's kind and mode, the baseline a scan compares against.
    """
    st_mode = stat.S_IFLNK | 0o777 if version.kind == LINK else stat.S_IFREG | version.mode
    return FINGERPRINT.pack(0, 0, 0, 0, st_mode)


def index_version(value: bytes) -> Version:
    """The version an ``index`` value (fingerprint, then digest) describes."""
    st_mode = FINGERPRINT.unpack_from(value)[4]
    digest = value[FINGERPRINT.size :].hex()
    if stat.S_ISLNK(st_mode):
        return Version(digest, 0o777, LINK)
    return Version(digest, stat.S_IMODE(st_mode), FILE)


def same(a: Version | None, b: Version | None) -> bool:
    """Whether two states hold the same content (absence equals absence; modes aside)."""
    return (a is None and b is None) or (a is not None and a.same_content(b))


def differs(a: Version | None, b: Version | None) -> bool:
    """Whether going from ``a`` to ``b`` needs a write: other content, kind or mode."""
    if not same(a, b):
        return True
    return a is not None and b is not None and a.mode != b.mode


class Change(NamedTuple):
    """One recorded write to one path within a turn (made by ``opened`` or ``recorded``)."""

    turn: str
    seq: int
    path: str
    before: Version | None
    after: Version | None = None
    done: bool = False  # whether ``after`` has been recorded
    tool: str = ""
    source: Source = HOOK
    time: float = 0.0
    mkdirs: int = 0  # parent folders that did not exist before this change

    @classmethod
    def opened(
        cls,
        *,
        turn: str,
        seq: int,
        path: str,
        before: Version | None,
        tool: str,
        source: Source,
        time: float,
        mkdirs: int = 0,
    ) -> "Change":
        """A write about to happen: what the path held is kept, its ``after`` awaited."""
        return cls(turn, seq, path, before, None, False, tool, source, time, mkdirs)

    @classmethod
    def recorded(
        cls,
        *,
        turn: str,
        seq: int,
        path: str,
        before: Version | None,
        after: Version | None,
        tool: str,
        source: Source,
        time: float,
        mkdirs: int = 0,
    ) -> "Change":
        """A write already done: both sides are known."""
        return cls(turn, seq, path, before, after, True, tool, source, time, mkdirs)


class RewindOp(NamedTuple):
    """What a rewind, switch or undo did, so that it can be finished, or taken back."""

    session: str
    target: str | None  # rewind: the first turn taken back; switch: the turn switched
    # to; undo: the operation undone
    mode: Mode
    status: Status = PLANNED
    prev_head: str | None = None
    new_head: str | None = None
    reverted: tuple[str, ...] = ()  # turns it took back (marked rewound)
    paths: tuple[str, ...] = ()
    undoes: str | None = None
    undone_by: str | None = None
    prev_rewind: str | None = None
    result: Mapping[str, Any] = _EMPTY  # what it reported (while planned: and ``rmdirs``)
    action: Action = REWIND
    forward: tuple[str, ...] = ()  # turns it put back (closed again)
    on_branch: bool = False  # an undo recorded as a turn on the branch (kind ``revert``)
    # the agent's transcript edit, recorded before it is made (snapstore.conversation.Edit)
    conversation: Mapping[str, Any] = _EMPTY
    finishes: str | None = None  # action ``finish``: the operation whose leftovers it retries
    redoes: str | None = None  # a redo: the undo it takes back (the action is the one redone)
    redone_by: str | None = None  # an undo: the operation that redid what it took back
    # made from inside this open agent turn (``snapstore mcp``, at the agent's request): the
    # turn its writes are recorded into, as changes of source ``rewind`` (schema 5)
    within: str | None = None
    # the repository's HEAD, refs and index: what moves, recorded before it moves
    # (snapstore.ops.gitplan)
    git: Mapping[str, Any] = _EMPTY


class Turn(NamedTuple):
    """What follows one user message, or a rewind record (kind ``rewind``)."""

    id: str
    session: str
    seq: int
    kind: TurnKind = AGENT
    parent: str | None = None
    prompt: str = ""
    message_id: str | None = None
    created: float = 0.0
    closed: float | None = None
    state: TurnState = OPEN
    implicit: bool = False
    next_change: int = 0  # the seq the next change of this turn gets
    open_changes: Mapping[str, int] = _EMPTY  # path -> seq of its change awaiting ``after``
    op: RewindOp | None = None
    open_calls: Mapping[str, int] = _EMPTY  # path -> tool calls in flight on it, when over 1
    unattributed: tuple[str, ...] = ()  # a ``user`` turn seen in sessions' shared windows
    transcript: str | None = None  # the agent's transcript at the begin hook (absolute path)
    transcript_size: int = 0  # its size then: the turn's records lie after this offset
    prompt_time: str = ""  # the begin hook's own time, as the agent stamps it (ISO 8601)
    folders: tuple[str, ...] = ()  # scan mode: folders that came during the turn
    skipped: tuple[tuple[str, str], ...] = ()  # scan mode: (path, reason) it changed, uncaptured
    rewinds: tuple[str, ...] = ()  # operations made from inside it (``RewindOp.within``)
    git_note: str = ""  # why the repository's state could not be recorded during the turn


class GitMove(NamedTuple):
    """One move of the repository's state seen within a turn, from ``old`` to ``new`` (None:
    absent). ``name`` is ``HEAD`` (a value ``ref: refs/heads/x`` or a commit id), a ref
    (``refs/...``: a commit id, or ``ref: ...`` for a symbolic one), ``:index`` or
    ``:logs/refs/stash`` (the digest of a blob holding the file's bytes)."""

    turn: str
    seq: int
    name: str
    old: str | None
    new: str | None


class Session(NamedTuple):
    """One agent conversation in the workspace."""

    name: str
    created: float
    open_turn: str | None = None
    last_rewind: str | None = None
    turns: int = 0
    base: dict[str, Any] | None = None  # what it started from (snapstore.ops.session_base)
    origin: dict[str, str] | None = None  # pulled: {"store": its store id, "name": its name}


def version_to_json(version: Version | None) -> list[Any] | None:
    """A version as JSON stores it (records, session bases, remote turns): the triple
    ``[digest, mode, kind]``, or null for no file."""
    return None if version is None else [version.digest, version.mode, version.kind]


def version_from_json(value: Any) -> Version | None:
    """The version a JSON triple (or null) holds; ValueError or TypeError when it holds none."""
    if value is None:
        return None
    digest, mode, kind = value
    return Version(digest, mode, kind)


def _plain(value: Any) -> Any:
    return version_to_json(value) if isinstance(value, Version) else value


def dumps(record: Any) -> bytes:
    """Encode a record as compact JSON."""
    data = {name: _plain(value) for name, value in record._asdict().items()}
    if isinstance(record, Turn) and record.op is not None:
        data["op"] = record.op._asdict()
    return json.dumps(data, separators=(",", ":")).encode()


def _mapping(value: Any) -> Mapping[str, Any]:
    return _EMPTY if value is None else value  # null: written by an earlier release


def _strings(value: Any) -> tuple[str, ...]:
    return () if value is None else tuple(value)  # null: written by an earlier release


def _pairs(value: Any) -> tuple[tuple[str, str], ...]:
    return () if value is None else tuple((path, reason) for path, reason in value)


def _op(value: Any) -> RewindOp | None:
    return None if value is None else _decode(RewindOp, value)


_LOADERS = {
    "before": version_from_json,
    "after": version_from_json,
    "op": _op,
    "open_changes": _mapping,
    "open_calls": _mapping,
    "result": _mapping,
    "conversation": _mapping,
    "git": _mapping,
    "unattributed": _strings,
    "reverted": _strings,
    "paths": _strings,
    "forward": _strings,
    "folders": _strings,
    "rewinds": _strings,
    "skipped": _pairs,
}


def _decode(cls: Any, data: dict[str, Any]) -> Any:
    return cls(
        **{key: _LOADERS[key](value) if key in _LOADERS else value for key, value in data.items()}
    )


def loads(cls: type, raw: bytes) -> Any:
    """Decode a record of type ``cls``, refusing anything that is not one."""
    try:
        return _decode(cls, json.loads(raw))
    except (ValueError, TypeError, KeyError) as exc:
        raise StoreCorrupt(f"a {cls.__name__.lower()} record is malformed: {exc}") from None
