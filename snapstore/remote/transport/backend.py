"""The object-store interface every remote speaks: S3 buckets and plain folders alike.

Remotes hold immutable, content-addressed objects (docs/remote.md, "How it is built"),
so the interface is small: whole-object get and put, ranged reads, a put that
never overwrites, listing by folder, and delete. Keys are ``/``-separated and
restricted to a portable alphabet, so the same key works on S3 and on any file
system; a key is never also the folder of another key.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass

from .errors import ObjectMissing, RemoteError

_SEGMENT = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*")
TEMP_PREFIX = ".tmp-"  # folder stores' temporary files; no key segment starts with "."


def is_key(key: str) -> bool:
    """Whether ``key`` is a valid object key (a listing may hold anything else)."""
    return bool(key) and len(key) <= 900 and all(_SEGMENT.fullmatch(s) for s in key.split("/"))


def check_key(key: str) -> str:
    """Return ``key`` if it is a valid object key, else raise ValueError (a caller's bug)."""
    if not is_key(key):
        raise ValueError(f"invalid object key: {key!r}")
    return key


def check_folder(prefix: str) -> str:
    """Normalise a listing prefix: ``""`` (everything) or a key folder, without a slash."""
    prefix = prefix.strip("/")
    return check_key(prefix) if prefix else ""


def check_span(start: int, end: int) -> None:
    """Reject a byte range that cannot be meant (a caller's bug)."""
    if not 0 <= start <= end:
        raise ValueError(f"invalid byte range: {start}-{end}")


@dataclass(frozen=True)
class ObjectInfo:
    """What a listing or a head request tells about one object."""

    key: str
    size: int
    modified: float  # seconds since the epoch
    etag: str | None = None


@dataclass(frozen=True)
class Capabilities:
    """What :meth:`ObjectStore.check` found the remote to honour."""

    conditional_writes: bool  # a create-only put is refused when the key exists


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded retries with exponential backoff and jitter, for throttling, 5xx and resets.

    The worst case is about ``max_retries`` backoffs, each at most ``max_backoff``,
    and never longer than ``total_timeout`` from the first attempt.
    """

    max_retries: int = 5
    initial_backoff: float = 0.1  # seconds
    max_backoff: float = 5.0
    total_timeout: float = 120.0
    connect_timeout: float = 5.0
    request_timeout: float = 300.0  # one request, including a large pack's upload


class ObjectStore(ABC):
    """A flat namespace of immutable objects under one remote URL.

    Every method raises a :class:`~snapstore.remote.transport.errors.RemoteError` subclass
    when the remote is at fault (unreachable, denied, missing bucket, failing).
    """

    url: str
    name: str | None = None

    @abstractmethod
    def get(self, key: str, limit: int | None = None) -> bytes:
        """The object's bytes; :class:`ObjectMissing` if there is none. With ``limit``, an
        object larger than that is refused unread (:meth:`too_large`)."""

    @abstractmethod
    def get_range(self, key: str, start: int, end: int) -> bytes:
        """Bytes ``start`` up to ``end`` (exclusive) of the object, for one blob of a pack."""

    @abstractmethod
    def put(self, key: str, data: bytes) -> None:
        """Store ``data`` at ``key`` atomically, replacing any object there."""

    @abstractmethod
    def put_if_absent(self, key: str, data: bytes) -> bool:
        """Store ``data`` unless the key holds an object; never overwrites.

        True if the key now holds exactly ``data`` (this call wrote it, or the
        same bytes were already there: a retried request whose first attempt
        landed, or identical content from another writer). False if it holds
        other bytes, which are left as they are. When racers write different
        bytes, exactly one gets True, provided the server honours conditional
        writes (see :meth:`check`).
        """

    @abstractmethod
    def head(self, key: str) -> ObjectInfo | None:
        """The object's size and date, or None if there is none."""

    @abstractmethod
    def list(self, prefix: str = "") -> Iterator[ObjectInfo]:
        """Every object under the key folder ``prefix`` (all pages), each once, in no set
        order: AWS lists by UTF-8 key, SeaweedFS folder by folder."""

    @abstractmethod
    def delete(self, key: str) -> None:
        """Remove the object; removing a missing object is not an error."""

    @abstractmethod
    def check(self) -> Capabilities:
        """Probe the remote once: reachable, credentials accepted, bucket there, and
        whether create-only puts are really refused on an existing key."""

    def exists(self, key: str) -> bool:
        return self.head(key) is not None

    def holds(self, key: str, data: bytes) -> bool | None:
        """Whether the object at ``key`` is exactly ``data``; None if there is none."""
        info = self.head(key)
        if info is None:
            return None
        if info.size != len(data):
            return False
        try:
            return self.get(key, len(data)) == data
        except ObjectMissing:  # deleted between the two requests
            return None

    def expect_range(self, key: str, data: bytes, start: int, end: int) -> bytes:
        """Check a ranged read got every byte asked for: a short object is a damaged one."""
        if len(data) != end - start:
            raise RemoteError(
                f"object is shorter than the range {start}-{end} read from it",
                remote=self.url,
                key=key,
                name=self.name,
            )
        return data

    def too_large(self, key: str, size: int, limit: int) -> RemoteError:
        """The error for an object over the size its kind may have: never read into memory."""
        return RemoteError(
            f"object is {size} bytes, more than the {limit} an object of its kind may have",
            remote=self.url,
            key=key,
            name=self.name,
        )

    def close(self) -> None:  # noqa: B027 - optional: only some stores hold connections
        """Release connections; the store is not used afterwards."""

    def __enter__(self) -> ObjectStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
