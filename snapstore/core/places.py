"""Where a workspace's store is: its folder's name, and finding it the way git finds ``.git``.

Apart from the database (``db``) and the repository (``repo``), which load lmdb, so that a
front end can find a store, and the daemon that holds it open, without loading either.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

#: The store's folder in a workspace root.
STORE_DIRNAME = ".snapstore"


def find_root(start: str | os.PathLike[str], names: Iterable[str] = (STORE_DIRNAME,)) -> str | None:
    """The nearest folder at or above ``start`` holding an entry of one of ``names``.

    With the default it finds a workspace's store, the way git finds ``.git``.
    """
    path = os.path.realpath(start)
    names = tuple(names)
    while True:
        if any(os.path.lexists(os.path.join(path, name)) for name in names):
            return path
        parent = os.path.dirname(path)
        if parent == path:
            return None
        path = parent
