"""Digest checks: every object read from a remote is verified before it is used.

Remote objects are content-addressed: a pack's key names the BLAKE3 digest of
its bytes, and an index names each blob's. A reader checks the bytes it got
against the digest it asked for, so a damaged or tampered object is reported
and never reaches the local store or a workspace.
"""

from __future__ import annotations

from ...core.blobs import digest_hex
from ..transport.backend import ObjectStore
from ..transport.errors import CorruptObject


def verified(store: ObjectStore, key: str, data: bytes, expected: str) -> bytes:
    """``data`` if its digest is ``expected``, else :class:`CorruptObject` for ``key``."""
    actual = digest_hex(data)
    if actual != expected:
        raise CorruptObject(
            remote=store.url, key=key, expected=expected, actual=actual, name=store.name
        )
    return data
