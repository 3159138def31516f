"""Errors of the remote transport: the remote was at fault, not the local store.

Each carries structured fields (which remote, which key, the server's own error
code) so the caller can report or react without parsing the message, and a
one-line message for a person. No message ever holds a credential.
"""

from __future__ import annotations

from ...core.errors import BadInput, SnapstoreError


class RemoteError(SnapstoreError):
    """A remote could not be used. ``remote`` is its URL, ``name`` its local name if known."""

    code = "remote"
    what: str
    remote: str
    key: str | None
    name: str | None
    detail: str | None

    def __init__(
        self,
        what: str,
        *,
        remote: str,
        key: str | None = None,
        name: str | None = None,
        detail: str | None = None,
    ):
        where = f"remote {name} ({remote})" if name else remote
        if key is not None:
            where += f": {key}"
        super().__init__(
            f"{where}: {what}" + (f" ({detail})" if detail else ""),
            what=what,
            remote=remote,
            key=key,
            name=name,
            detail=detail,
        )


class RemoteUnreachable(RemoteError):
    """No connection: refused, unknown host, timed out, TLS failure."""

    code = "remote_unreachable"


class RemoteDenied(RemoteError):
    """The credentials were refused, are missing, or lack the permission."""

    code = "remote_denied"


class MissingBucket(RemoteError):
    """The bucket (or, for ``file://``, the folder) does not exist."""

    code = "remote_missing_bucket"


class RemoteUnavailable(RemoteError):
    """The server kept answering 5xx or throttling (503 SlowDown, 429) past the retries."""

    code = "remote_unavailable"


class ObjectMissing(RemoteError):
    """An object that should be on the remote is not there."""

    code = "remote_object_missing"


class CorruptObject(RemoteError):
    """An object's bytes do not match the digest it is stored under (or, with ``why``, a
    blob in it does not decode to its id: ``why`` says how)."""

    code = "remote_corrupt"
    key: str
    expected: str
    actual: str

    def __init__(
        self,
        *,
        remote: str,
        key: str,
        expected: str,
        actual: str,
        name: str | None = None,
        why: str | None = None,
    ):
        super().__init__(
            "object does not match its digest",
            remote=remote,
            key=key,
            name=name,
            detail=why or f"expected blake3 {expected[:16]}, got {actual[:16]}",
        )
        self.expected = expected
        self.actual = actual


class ClientMissing(BadInput):
    """An S3 remote on an install without its client (the ``remote`` extra): nothing is wrong
    with the remote, so this is not a RemoteError. ``module`` is the one that is missing."""

    code = "client_missing"


def client_missing(exc: ModuleNotFoundError, modules: tuple[str, ...]) -> ClientMissing:
    """The error for an import of one of ``modules`` that failed; re-raises any other."""
    if (exc.name or "").split(".")[0] not in modules:
        raise exc
    return ClientMissing(
        f"s3:// remotes need the S3 client ({exc.name}), which is not installed", module=exc.name
    )
