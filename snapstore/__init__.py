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

from typing import Any

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
from .ops.capture import CaptureResult
from .store import DEFAULT_SESSION, STORE_DIRNAME, Store, find_root, tracked

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


def __getattr__(name: str) -> Any:
    # Result types of rewinding and history load lazily: the hook path never needs them.
    if name == "RewindResult":
        from .ops.plan import RewindResult

        return RewindResult
    if name == "RewindPoint":
        from .ops.history import RewindPoint

        return RewindPoint
    raise AttributeError(f"module 'snapstore' has no attribute {name!r}")
