"""A remote in an S3 bucket (``s3://BUCKET[/PREFIX]``), on AWS or any S3-compatible server.

The client is obstore (Rust's ``object_store`` crate): it imports in about 20 ms,
against about 0.7 s for boto3 with its client, and retries throttling and 5xx
answers with bounded, jittered backoff (docs/remote.md has the figures).
This module is imported only when an S3 remote is opened, so nothing on the hook
path pays for it.

obstore's runtime does not survive ``fork()``: a process that used it must not fork
and use it again (a child would crash). Start workers with ``spawn`` or as fresh
processes; :func:`_same_process` turns that mistake into a clear error.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import TYPE_CHECKING

import obstore
from obstore.exceptions import (
    AlreadyExistsError,
    BaseError,
    NotFoundError,
    PermissionDeniedError,
    PreconditionError,
    UnauthenticatedError,
)
from obstore.store import S3Store

from .backend import (
    Capabilities,
    ObjectInfo,
    ObjectStore,
    RetryPolicy,
    check_folder,
    check_key,
    check_span,
)
from .credentials import AwsChain, S3Credentials
from .errors import (
    MissingBucket,
    ObjectMissing,
    RemoteDenied,
    RemoteError,
    RemoteUnavailable,
    RemoteUnreachable,
)

if TYPE_CHECKING:  # obstore declares its option types only in its stubs
    from obstore.store import ClientConfig, RetryConfig, S3Config

_STATUS = re.compile(r"status code: (\d{3})")
_S3_CODE = re.compile(r"<Code>([A-Za-z0-9.]+)</Code>")
_NO_CONNECTION = (
    "error sending request",
    "connection refused",
    "dns error",
    "timed out",
    "operation timed out",
    "certificate",
    "connection reset",
)
_BAD_CREDENTIALS = {
    "SignatureDoesNotMatch",
    "InvalidAccessKeyId",
    "InvalidToken",
    "ExpiredToken",
    "TokenRefreshRequired",
    "InvalidClientTokenId",
}
_FAILURES = (BaseError, OSError)  # obstore raises its own classes, and FileNotFoundError
_first_pid: int | None = None


def _same_process() -> None:
    global _first_pid
    if _first_pid is None:
        _first_pid = os.getpid()
    elif _first_pid != os.getpid():
        raise RuntimeError(
            "an S3 remote cannot be used in a child forked after the parent used "
            "one; start the worker as a fresh process (multiprocessing 'spawn')"
        )


def _seconds(value: float) -> str:
    return f"{max(1, round(value * 1000))}ms"


class S3ObjectStore(ObjectStore):
    """Objects under ``prefix`` in ``bucket``, through obstore."""

    def __init__(
        self,
        bucket: str,
        prefix: str = "",
        *,
        endpoint_url: str | None = None,
        region: str | None = None,
        credentials: S3Credentials | AwsChain | None = None,
        retry: RetryPolicy | None = None,
        conditional_writes: bool = True,
        name: str | None = None,
    ):
        _same_process()
        self.bucket = bucket
        self.prefix = check_folder(prefix)
        self.url = f"s3://{bucket}/{self.prefix}".rstrip("/")
        self.name = name
        self.endpoint_url = endpoint_url
        self.conditional_writes = conditional_writes
        self.retry = retry or RetryPolicy()
        if credentials is None:
            credentials = AwsChain()
        config: S3Config = {}
        provider = None
        if isinstance(credentials, AwsChain):
            credentials.resolve(self.url)
            provider = credentials
            region = region or credentials.region
        else:
            config["access_key_id"] = credentials.access_key_id
            config["secret_access_key"] = credentials.secret_access_key
            if credentials.session_token:
                config["session_token"] = credentials.session_token
        config["region"] = region or "us-east-1"
        options: ClientConfig = {
            "connect_timeout": _seconds(self.retry.connect_timeout),
            "timeout": _seconds(self.retry.request_timeout),
        }
        if endpoint_url:
            config["endpoint"] = endpoint_url
            config["virtual_hosted_style_request"] = False  # path style: MinIO, SeaweedFS, Ceph
            options["allow_http"] = endpoint_url.startswith("http://")
        retry_config: RetryConfig = {
            "max_retries": self.retry.max_retries,
            "retry_timeout": timedelta(seconds=self.retry.total_timeout),
            "backoff": {
                "init_backoff": timedelta(seconds=self.retry.initial_backoff),
                "max_backoff": timedelta(seconds=self.retry.max_backoff),
                "base": 2,
            },
        }
        self._store = S3Store(
            bucket,
            prefix=self.prefix or None,
            config=config,
            client_options=options,
            retry_config=retry_config,
            credential_provider=provider,
        )

    # -- reading

    def get(self, key: str, limit: int | None = None) -> bytes:
        check_key(key)
        _same_process()
        try:
            result = obstore.get(self._store, key)
            size = result.meta["size"]
            if limit is not None and size > limit:
                raise self.too_large(key, size, limit)  # the body is never read
            data = bytes(result.bytes())
        except _FAILURES as exc:
            raise self._error(exc, key) from exc
        if len(data) != size:
            raise RemoteError(
                f"object is {len(data)} bytes where its length said {size}",
                remote=self.url,
                key=key,
                name=self.name,
            )
        return data

    def get_range(self, key: str, start: int, end: int) -> bytes:
        check_key(key)
        check_span(start, end)
        _same_process()
        if start == end:
            return b""
        try:
            data = bytes(obstore.get_range(self._store, key, start=start, end=end))
        except _FAILURES as exc:
            raise self._error(exc, key) from exc
        return self.expect_range(key, data, start, end)

    def head(self, key: str) -> ObjectInfo | None:
        """The object's metadata, or None. A HEAD answer has no body, so a missing
        bucket looks like a missing object here: :meth:`check` tells them apart."""
        check_key(key)
        _same_process()
        try:
            meta = obstore.head(self._store, key)
        except (FileNotFoundError, NotFoundError):
            return None
        except _FAILURES as exc:
            raise self._error(exc, key) from exc
        return ObjectInfo(key, meta["size"], meta["last_modified"].timestamp(), meta["e_tag"])

    def list(self, prefix: str = "") -> Iterator[ObjectInfo]:
        prefix = check_folder(prefix)
        _same_process()
        try:
            for batch in obstore.list(self._store, prefix or None, chunk_size=1000):
                for meta in batch:
                    yield ObjectInfo(
                        meta["path"], meta["size"], meta["last_modified"].timestamp(), meta["e_tag"]
                    )
        except _FAILURES as exc:
            raise self._error(exc, prefix or None) from exc

    # -- writing

    def put(self, key: str, data: bytes) -> None:
        self._put(key, data, "overwrite")

    def put_if_absent(self, key: str, data: bytes) -> bool:
        if not self.conditional_writes:
            # The server ignores If-None-Match: look first, and read back what stuck.
            # Racing writers may both see True here; the layout never relies on it.
            same = self.holds(key, data)
            if same is not None:
                return same
            self._put(key, data, "overwrite")
            return self.holds(key, data) is True
        for _ in range(3):  # the holder may be deleted between the put and the compare
            try:
                self._put(key, data, "create")
                return True
            except _Exists:
                same = self.holds(key, data)
                if same is not None:
                    return same
        return False

    def delete(self, key: str) -> None:
        check_key(key)
        _same_process()
        try:
            obstore.delete(self._store, key)
        except (FileNotFoundError, NotFoundError):
            pass
        except _FAILURES as exc:
            raise self._error(exc, key) from exc

    def check(self) -> Capabilities:
        next(iter(self.list()), None)  # a listing tells a missing bucket from refused keys
        probe = f"probe-{uuid.uuid4().hex}"
        try:
            first = self.put_if_absent(probe, b"first")
            try:
                self._put(probe, b"second", "create")
                honoured = False
            except _Exists:
                honoured = True
        finally:
            self.delete(probe)
        return Capabilities(conditional_writes=first and honoured)

    # -- helpers

    def _put(self, key: str, data: bytes, mode: str) -> None:
        check_key(key)
        _same_process()
        try:
            # One request, never multipart: a put is atomic and the create mode holds.
            obstore.put(self._store, key, data, mode=mode, use_multipart=False)  # type: ignore[arg-type]
        except (AlreadyExistsError, PreconditionError) as exc:
            raise _Exists from exc
        except _FAILURES as exc:
            raise self._error(exc, key) from exc

    def _error(self, exc: Exception, key: str | None) -> RemoteError:
        """Map obstore's exception to ours, by its class and the server's status and code."""
        text = str(exc)
        status_match, code_match = _STATUS.search(text), _S3_CODE.search(text)
        status = int(status_match.group(1)) if status_match else None
        code = code_match.group(1) if code_match else None
        detail = code or (f"HTTP {status}" if status else None)

        def error(kind: type[RemoteError], what: str, detail: str | None = detail) -> RemoteError:
            return kind(what, remote=self.url, key=key, name=self.name, detail=detail)

        if code == "NoSuchBucket":
            return error(MissingBucket, f"bucket {self.bucket} does not exist", None)
        if isinstance(exc, (FileNotFoundError, NotFoundError)) or status == 404:
            return error(ObjectMissing, "no such object")
        if isinstance(exc, (PermissionDeniedError, UnauthenticatedError)) or status in (401, 403):
            what = "credentials refused" if code in _BAD_CREDENTIALS else "access denied"
            return error(RemoteDenied, what)
        if status is not None and (status >= 500 or status == 429):
            return error(
                RemoteUnavailable,
                f"the server kept failing after {self.retry.max_retries} retries",
            )
        if status is None and any(s in text.lower() for s in _NO_CONNECTION):
            return error(RemoteUnreachable, "cannot connect", self.endpoint_url or "AWS S3")
        return error(RemoteError, "request failed", detail or type(exc).__name__)

    def close(self) -> None:
        self._store = None  # type: ignore[assignment]


class _Exists(Exception):
    """A create-only put found the key taken (412 Precondition Failed)."""
