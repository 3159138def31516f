"""snapstore: the undo layer for AI coding agents.

Before an agent writes a file, snapstore stores the file's current bytes in a
content-addressed store keyed by the conversation turn. ``Store.rewind`` later
puts the workspace back as it was before a turn: exact bytes where the file
still holds what the agent wrote, a three-way merge that keeps the user's own
edits where it does not, and a reported conflict where neither is possible.
Every rewind can be undone with ``Store.undo``.

The public API (documented in docs/python-api.md):

- :class:`Store` with ``init``/``open``, the capture calls ``begin_turn``,
  ``pre_write``, ``post_write``, ``end_turn`` and ``writing``, and ``rewind``,
  ``undo``, ``rewind_points``, ``show``, ``status``;
- :func:`tracked`, a decorator for an agent's tool functions;
- :func:`find_root`, which finds a workspace's store the way git finds ``.git``;
- the errors, each carrying the facts it is about as fields.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .core.errors import (
    BadInput,
    NotFound,
    RunActive,
    SnapstoreError,
    StoreCorrupt,
    StoreFull,
    StoreLocked,
    UnsafePath,
)
from .core.places import STORE_DIRNAME, find_root
from .core.records import DEFAULT_SESSION

if TYPE_CHECKING:
    from .ops.capture import CaptureResult
    from .ops.history import RewindPoint
    from .ops.result import RewindResult
    from .store import Store, tracked

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_SESSION",
    "STORE_DIRNAME",
    "BadInput",
    "CaptureResult",
    "NotFound",
    "RewindPoint",
    "RewindResult",
    "RunActive",
    "SnapstoreError",
    "Store",
    "StoreCorrupt",
    "StoreFull",
    "StoreLocked",
    "UnsafePath",
    "find_root",
    "tracked",
]


#: What loads on first use, and from where: the facade and its result types load the store's
#: database (lmdb) and its operations, which a front end that only finds the store, or only
#: renders a result it was sent (a move answered by ``snapstore serve``), never needs.
_LAZY = {
    "Store": "store",
    "tracked": "store",
    "CaptureResult": "ops.capture",
    "RewindResult": "ops.result",
    "RewindPoint": "ops.history",
}


def __getattr__(name: str) -> Any:
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError(f"module 'snapstore' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f".{where}", __name__), name)
