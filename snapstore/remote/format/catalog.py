"""What a remote holds, read through its objects (layout v1), with a local cache.

:class:`Catalog` wraps an :class:`ObjectStore` for push, pull and upkeep: it
counts requests, checks ``config`` first, and reads the three kinds of objects
that describe the rest:

- **states**, one per push, at ``states/<writer store id>/<seq>``: every
  session that writer pushed, with its base, head and the state of each turn.
  A writer only ever adds states with a higher seq; the newest state of each
  writer is the writer's word, and for one session the newest of those (by
  time) gives its head.
- **indexes**: their union says which blob is in which pack, whoever pushed it.
- **gc records**: turns a ``remote gc`` dropped, and packs it condemned.

Indexes and states never change once written, so they are cached under the
local store's ``remote-cache/`` and fetched once. A cached file is re-verified
on every read; a damaged one is fetched again.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from ...core.blobs import digest_hex
from ...core.db import FILE_MODE, makedirs_private
from ...core.records import TurnState
from ..transport.backend import ObjectInfo, ObjectStore, is_key
from ..transport.errors import CorruptObject, ObjectMissing, RemoteError
from . import layout, schema
from .verify import verified

#: Parallel requests for many small objects (turns, states); loopback or not, it pays.
PARALLEL = 8


@dataclass
class RemoteSession:
    """One session as the remote's states describe it (merged over writers)."""

    origin: str  # the store id of the machine where the session began
    name: str  # its name there
    created: float
    base: dict[str, Any] | None
    head: str | None
    turns: dict[str, TurnState] = field(default_factory=dict)  # turn id -> state
    time: float = 0.0  # of the state that gave head and base
    writers: set[str] = field(default_factory=set)

    @property
    def identity(self) -> tuple[str, str]:
        return self.origin, self.name


@dataclass
class Tombstones:
    """What ``remote gc`` runs recorded: dropped turns, condemned packs (with the time)."""

    turns: set[str] = field(default_factory=set)
    packs: dict[str, float] = field(default_factory=dict)
    keys: list[str] = field(default_factory=list)


class Catalog:
    """A remote, read and written through layout v1."""

    def __init__(self, store: ObjectStore, cache_dir: str | None = None):
        self.store = store
        self.url = store.url
        self.name = store.name
        self.requests: Counter[str] = Counter()
        self.cache_dir = cache_dir
        self._listings: dict[str, list[ObjectInfo]] = {}
        self.version = layout.VERSION  # the remote's layout version, once opened

    # -- requests, counted -----------------------------------------------------------

    def get(self, key: str, limit: int) -> bytes:
        """The object at ``key``, refused past ``limit`` bytes (a remote is untrusted)."""
        self.requests["get"] += 1
        return self.store.get(key, limit)

    def get_range(self, key: str, start: int, end: int) -> bytes:
        self.requests["get"] += 1
        return self.store.expect_range(key, self.store.get_range(key, start, end), start, end)

    def create(self, key: str, data: bytes) -> bool:
        self.requests["put"] += 1
        return self.store.put_if_absent(key, data)

    def delete(self, key: str) -> None:
        self.requests["delete"] += 1
        self.store.delete(key)

    def listing(self, folder: str, fresh: bool = False) -> list[ObjectInfo]:
        """The objects under ``folder``: listed once, and again when ``fresh``."""
        if fresh or folder not in self._listings:
            found = list(self.store.list(folder))
            self.requests["list"] += 1 + len(found) // 1000
            # a name no writer makes (`..`, a space) is nothing of ours: never used as a key
            self._listings[folder] = [info for info in found if is_key(info.key)]
        return self._listings[folder]

    def total_requests(self) -> int:
        return sum(self.requests.values())

    def error(self, what: str, key: str | None = None) -> RemoteError:
        return RemoteError(what, remote=self.url, key=key, name=self.name)

    def map(self, fn: Any, items: list[Any]) -> Iterator[Any]:
        if len(items) <= 1:
            return map(fn, items)
        with ThreadPoolExecutor(PARALLEL) as pool:
            return iter(list(pool.map(fn, items)))

    # -- config ----------------------------------------------------------------------

    def open(self, create: bool) -> bool:
        """Check the remote's format; with ``create``, write ``config`` on an empty remote.

        Returns whether the remote has a config (False: nothing was ever pushed).
        """
        try:
            raw = self.get(layout.CONFIG, layout.MAX_CONFIG)
        except ObjectMissing:
            if not create:
                return False
            if not self.create(layout.CONFIG, layout.config_bytes()):
                # another machine initialised it first
                raw = self.get(layout.CONFIG, layout.MAX_CONFIG)
            else:
                return True
        self.version = layout.check_config(raw, self.url, self.name)["version"]
        return True

    def raise_version(self) -> None:
        """Rewrite a version-1 ``config`` as this layout's (the one object ever replaced:
        every writer writes the same bytes), so that version-1 readers refuse the remote
        before it holds what they would misread (chunked blobs)."""
        if self.version < layout.VERSION:
            self.requests["put"] += 1
            self.store.put(layout.CONFIG, layout.config_bytes())
            self.version = layout.VERSION

    # -- the local cache of immutable objects ------------------------------------------

    def _cached(self, kind: str, key: str) -> str | None:
        if self.cache_dir is None:
            return None
        return os.path.join(
            self.cache_dir, kind, layout.leaf(key) if kind == "indexes" else key.replace("/", "_")
        )

    def _fetch(self, kind: str, key: str, limit: int, check: Any) -> Any:
        """Read an immutable object through the cache; ``check`` verifies and decodes it."""
        path = self._cached(kind, key)
        if path is not None:
            try:
                with open(path, "rb") as handle:
                    return check(handle.read(limit + 1))
            except (OSError, RemoteError):
                pass  # absent, or damaged: fetch it again
        raw = self.get(key, limit)
        value = check(raw)
        if path is not None:
            makedirs_private(os.path.dirname(path))
            tmp = f"{path}.{os.getpid()}.tmp"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, FILE_MODE)
            with os.fdopen(fd, "wb") as handle:
                handle.write(raw)
            os.replace(tmp, path)
        return value

    # -- states ------------------------------------------------------------------------

    def newest_state_keys(self, writer: str | None = None) -> dict[str, tuple[int, str]]:
        """Each writer's newest state: writer -> (seq, key)."""
        folder = layout.STATES if writer is None else f"{layout.STATES}/{writer}"
        newest: dict[str, tuple[int, str]] = {}
        for info in self.listing(folder, fresh=True):
            parsed = layout.parse_state_key(info.key)
            if parsed is not None and parsed[1] > newest.get(parsed[0], (-1, ""))[0]:
                newest[parsed[0]] = (parsed[1], info.key)
        return newest

    def state(self, key: str) -> dict[str, Any]:
        def check(raw: bytes) -> dict[str, Any]:
            state = layout.unseal(raw, self.url, key, self.name)
            if not isinstance(state, dict) or state.get("version") != layout.RECORD:
                raise self.error("state is not one this snapstore reads", key)
            return self._checked(schema.state, state, "state", key)

        return self._fetch("states", key, layout.MAX_RECORD, check)

    def states(self) -> list[dict[str, Any]]:
        keys = [key for _, key in self.newest_state_keys().values()]
        return list(self.map(self.state, sorted(keys)))

    def sessions(
        self, states: list[dict[str, Any]] | None = None
    ) -> dict[tuple[str, str], RemoteSession]:
        """Every session on the remote, merged over the writers' newest states."""
        merged: dict[tuple[str, str], RemoteSession] = {}
        for state in sorted(
            self.states() if states is None else states, key=lambda s: (s["time"], s["writer"])
        ):
            for item in state["sessions"]:
                ident = (item["origin"], item["name"])
                session = merged.setdefault(
                    ident,
                    RemoteSession(
                        item["origin"], item["name"], item["created"], item["base"], item["head"]
                    ),
                )
                session.created = min(session.created, item["created"])
                session.base, session.head, session.time = item["base"], item["head"], state["time"]
                session.writers.add(state["writer"])
                for turn_id, turn_state in item["turns"]:
                    session.turns[turn_id] = turn_state  # a newer state's word wins
        return merged

    # -- turns ---------------------------------------------------------------------------

    def turn_ids(self) -> set[str]:
        return {layout.leaf(info.key) for info in self.listing(layout.TURNS, fresh=True)}

    def turn(self, turn_id: str) -> dict[str, Any]:
        key = layout.turn_key(turn_id)
        record = layout.unseal(self.get(key, layout.MAX_RECORD), self.url, key, self.name)
        if (
            not isinstance(record, dict)
            or record.get("id") != turn_id
            or record.get("version") != layout.RECORD
        ):
            raise self.error("turn record is not the turn its key names", key)
        return self._checked(schema.turn, record, "turn record", key)

    def _checked(self, check: Any, record: Any, what: str, key: str) -> Any:
        return layout.checked(check, record, what, self.url, key, self.name)

    # -- indexes and packs -----------------------------------------------------------------

    def index(self, key: str) -> dict[str, layout.BlobRef]:
        expected = layout.leaf(key)

        def check(raw: bytes) -> dict[str, layout.BlobRef]:
            verified(self.store, key, raw, expected)
            return layout.read_index(raw, self.url, key, self.name)

        return self._fetch("indexes", key, layout.MAX_INDEX, check)

    def index_keys(self) -> list[str]:
        return sorted(info.key for info in self.listing(layout.INDEXES, fresh=True))

    def blob_index(self, condemned: dict[str, float] | None = None) -> dict[str, layout.BlobRef]:
        """Which pack holds each blob, over every index; blobs only in condemned packs are
        left out, so a push uploads them again."""
        union: dict[str, layout.BlobRef] = {}
        for part in self.map(self.index, self.index_keys()):
            for blob_id, ref in part.items():
                if condemned is None or ref.pack not in condemned:
                    union.setdefault(blob_id, ref)
        return union

    def pack(self, digest: str, limit: int) -> bytes:
        """A whole pack of at most ``limit`` bytes, checked against its name."""
        key = layout.pack_key(digest)
        return verified(self.store, key, self.get(key, limit), digest)

    def new_pack(self, data: bytes) -> str:
        digest = digest_hex(data)
        self.create(layout.pack_key(digest), data)
        return digest

    # -- gc records ------------------------------------------------------------------------

    def tombstones(self) -> Tombstones:
        found = Tombstones()
        keys = sorted(info.key for info in self.listing(layout.GC, fresh=True))

        def read(key: str) -> dict[str, Any]:
            return self._fetch(
                "gc",
                key,
                layout.MAX_RECORD,
                lambda raw: self._checked(
                    schema.gc_record, layout.unseal(raw, self.url, key, self.name), "gc record", key
                ),
            )

        for key, record in zip(keys, self.map(read, keys), strict=True):
            found.keys.append(key)
            found.turns.update(record["turns"])
            for pack in record["packs"]:
                found.packs.setdefault(pack, record["time"])
        return found


def corrupt(
    catalog: Catalog, key: str, expected: str, actual: str, why: str | None = None
) -> CorruptObject:
    return CorruptObject(
        remote=catalog.url, key=key, expected=expected, actual=actual, name=catalog.name, why=why
    )
