"""Raw access to a store's LMDB tables, for tests that damage a store on purpose.

The library reaches its tables only through ``snapstore.core.repo``; these helpers
go underneath it, as a disk fault or a hostile edit would.
"""

from __future__ import annotations

from typing import Any

from snapstore import Store


def database(store: Store) -> Any:
    """The store's ``snapstore.core.db.Database`` (its environment and named tables)."""
    return store.repo._db


def raw_values(store: Store, table: str = "blobs") -> dict[bytes, bytes]:
    db = database(store)
    with db.read() as txn:
        return {bytes(k): bytes(v) for k, v in txn.cursor(db=db.dbs[table])}


def raw_put(store: Store, key: bytes, value: bytes | None, table: str = "blobs") -> None:
    """Overwrite (or with None, delete) one raw entry, in one commit."""
    db = database(store)

    def put(txn: Any) -> None:
        if value is None:
            txn.delete(key, db=db.dbs[table])
        else:
            txn.put(key, value, db=db.dbs[table])

    db.write(put)


def drop_table(store: Store, table: str) -> None:
    """Delete a whole named database, as a store from an older schema lacks it."""
    db = database(store)
    db.write(lambda txn: txn.drop(db.dbs[table], delete=True))
