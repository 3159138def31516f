"""Remote URLs (``s3://BUCKET[/PREFIX]``, ``file:///PATH``) and opening the store behind one.

Only the chosen backend's module is imported, so a ``file://`` remote never
loads the S3 client.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from ...core.errors import BadInput
from .backend import ObjectStore, RetryPolicy, check_folder
from .credentials import AwsChain, S3Credentials
from .errors import client_missing

_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")


@dataclass(frozen=True)
class RemoteURL:
    """A parsed remote URL: ``bucket`` and ``prefix`` for S3, ``path`` for a folder."""

    scheme: str
    bucket: str = ""
    prefix: str = ""
    path: str = ""

    def __str__(self) -> str:
        if self.scheme == "file":
            return f"file://{self.path}"
        return f"s3://{self.bucket}/{self.prefix}".rstrip("/")


def parse_url(url: str) -> RemoteURL:
    """Parse and check a remote URL; BadInput names what is wrong with it."""
    parts = urlsplit(url)
    if parts.scheme == "s3":
        if not _BUCKET.fullmatch(parts.netloc) or ".." in parts.netloc:
            raise BadInput(f"not an S3 bucket name: {parts.netloc!r} in {url}")
        if parts.query or parts.fragment:
            raise BadInput(f"an s3:// URL takes no query or fragment: {url}")
        try:
            prefix = check_folder(parts.path)
        except ValueError:
            raise BadInput(
                f"an S3 prefix is made of letters, digits, '.', '_', '-' and '/': {url}"
            ) from None
        return RemoteURL("s3", bucket=parts.netloc, prefix=prefix)
    if parts.scheme == "file":
        if parts.netloc not in ("", "localhost"):
            raise BadInput(f"a file:// remote is a local folder (file:///PATH): {url}")
        path = unquote(parts.path)
        if not path.startswith("/") or parts.query or parts.fragment:
            raise BadInput(f"a file:// remote needs an absolute path (file:///PATH): {url}")
        return RemoteURL("file", path=path.rstrip("/") or "/")
    raise BadInput(f"a remote URL is s3://BUCKET[/PREFIX] or file:///PATH, not {url!r}")


def open_object_store(
    url: str | RemoteURL,
    *,
    endpoint_url: str | None = None,
    region: str | None = None,
    credentials: S3Credentials | AwsChain | None = None,
    retry: RetryPolicy | None = None,
    conditional_writes: bool = True,
    name: str | None = None,
) -> ObjectStore:
    """The store behind ``url``. For S3, ``credentials`` None means AWS's standard chain
    (see :mod:`.credentials`), and ``conditional_writes`` False is for a server that
    :meth:`ObjectStore.check` found ignoring create-only puts."""
    where = url if isinstance(url, RemoteURL) else parse_url(url)
    if where.scheme == "file":
        if endpoint_url:
            raise BadInput(f"an endpoint URL applies to s3:// remotes only, not {where}")
        from .folder import FolderObjectStore

        return FolderObjectStore(where.path, name=name)
    if endpoint_url and urlsplit(endpoint_url).scheme not in ("http", "https"):
        raise BadInput(f"an endpoint URL starts with http:// or https://: {endpoint_url}")
    try:
        from .s3 import S3ObjectStore
    except ModuleNotFoundError as exc:
        raise client_missing(exc, ("obstore",)) from None

    return S3ObjectStore(
        where.bucket,
        where.prefix,
        endpoint_url=endpoint_url,
        region=region,
        credentials=credentials,
        retry=retry,
        conditional_writes=conditional_writes,
        name=name,
    )
