"""Every write transaction run twice: the first run is thrown away as LMDB throws away one
that found the map resized, and the commit starts again from the top (core.db).

A transaction's function must therefore leave nothing of itself outside the transaction:
what it changed in the objects it was given, the second run finds changed. Tests run whole
histories under :func:`commits_run_twice` to find any that does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import lmdb
import pytest

from snapstore.core import db


def commits_run_twice(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Make every commit run its function, throw that run away, and run it again; the
    list returned counts the commits so run."""
    real = db.Database._commit
    count: list[int] = [0]

    def commit(self: db.Database, fn: Callable[[Any], Any]) -> Any:
        thrown = False

        def twice(txn: Any) -> Any:
            nonlocal thrown
            result = fn(txn)
            if not thrown:
                thrown = True
                count[0] += 1
                raise lmdb.MapResizedError("resized by another process (a test's)")
            return result

        return real(self, twice)

    monkeypatch.setattr(db.Database, "_commit", commit)
    return count
