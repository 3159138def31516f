"""Remotes: object storage (S3 or a folder) that snapstore pushes turns to and pulls from.

This package is the transport: :class:`ObjectStore` and its two backends, the
errors (exit 6), and digest checks. Importing it loads no S3 client; opening an
``s3://`` remote does (the optional extra ``snapstore[remote]``). The hook path
never imports this package.
"""

from __future__ import annotations

from .base import Capabilities, ObjectInfo, ObjectStore, RetryPolicy
from .credentials import AwsChain, S3Credentials, from_environment, region_from_environment
from .errors import (
    CorruptObject,
    MissingBucket,
    ObjectMissing,
    RemoteDenied,
    RemoteError,
    RemoteUnavailable,
    RemoteUnreachable,
)
from .location import RemoteURL, open_object_store, parse_url
from .verify import digest_hex, get_verified, verified

__all__ = [
    "AwsChain",
    "Capabilities",
    "CorruptObject",
    "MissingBucket",
    "ObjectInfo",
    "ObjectMissing",
    "ObjectStore",
    "RemoteDenied",
    "RemoteError",
    "RemoteURL",
    "RemoteUnavailable",
    "RemoteUnreachable",
    "RetryPolicy",
    "S3Credentials",
    "digest_hex",
    "from_environment",
    "get_verified",
    "open_object_store",
    "parse_url",
    "region_from_environment",
    "verified",
]
