"""Remotes: object storage (S3 or a folder) that snapstore pushes turns to and pulls from.

Three packages, bottom to top: ``transport`` (:class:`ObjectStore`, its two
backends, credentials and the remote's errors, exit 6), ``format`` (the
remote's layout: packs, indexes, the catalog, objects checked against their
digests) and ``sync`` (push, pull, and the remote's log, fsck and gc). This
module re-exports the transport. Importing it loads no S3 client; opening an
``s3://`` remote does (the optional extra ``snapstore[remote]``). The hook path
never imports this package.
"""

from __future__ import annotations

from .transport.backend import Capabilities, ObjectInfo, ObjectStore, RetryPolicy
from .transport.credentials import (
    AwsChain,
    S3Credentials,
    from_environment,
    region_from_environment,
)
from .transport.errors import (
    CorruptObject,
    MissingBucket,
    ObjectMissing,
    RemoteDenied,
    RemoteError,
    RemoteUnavailable,
    RemoteUnreachable,
)
from .transport.location import RemoteURL, open_object_store, parse_url

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
    "from_environment",
    "open_object_store",
    "parse_url",
    "region_from_environment",
]
