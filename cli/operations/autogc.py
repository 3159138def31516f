"""Automatic gc: once the store passes its quota, a command runs gc and says so.

Turned on in ``<store>/config``::

    [gc]
    auto = true
    max_size = 2GiB

It runs after a command that adds to the store (and after an agent's turn ends,
from the hook), never inside one, and never fails that command: a gc that
cannot run is reported in the same one-line note. This module imports no Click
so the hook path can use it.
"""

from __future__ import annotations

from snapstore import SnapstoreError, Store
from snapstore.core.db import store_size

from ..settings.config import Config
from ..settings.options import Options

#: gc brings the store this far under its quota, so it does not run again at once.
LOW_WATER = 0.9


def due(store_dir: str, config: Config) -> bool:
    """Whether the settings ask for automatic gc and the store is over its quota.

    Cheap: one ``stat``, so every command can ask.
    """
    quota = config.gc_max_size
    return config.gc_auto and quota is not None and store_size(store_dir) > quota


def run_if_due(store: Store, config: Config) -> str | None:
    """Run gc with the configured policy when due; the one-line note that says so."""
    if not due(store.store_dir, config):
        return None
    from snapstore.ops.gc import GcPolicy

    assert config.gc_max_size is not None
    before = store_size(store.store_dir)
    try:
        result = store.gc(
            GcPolicy(config.gc_keep_days, config.gc_keep_turns, int(config.gc_max_size * LOW_WATER))
        )
    except SnapstoreError as exc:
        return f"automatic gc failed: {exc}"
    from ..settings.values import format_size  # only once a gc runs

    quota = format_size(config.gc_max_size)
    note = (
        f"the store passed its quota ({format_size(before)} > {quota}); "
        f"automatic gc removed {len(result.removed_turns)} turn(s) and "
        f"{result.removed_blobs} blob(s), now {format_size(result.store_bytes)}"
    )
    return "; ".join([note, *result.notes])


def after_command(opts: Options) -> str | None:
    """After a command that added to the store: run gc when the store passed its quota; the
    note that says so. Problems with the store are the command's to report, not this one's."""
    try:
        store_dir = opts.store_dir()
        if store_dir is None:
            return None
        config = Config.load(store_dir)
        if not due(store_dir, config):
            return None
        with opts.open_store() as store:
            return run_if_due(store, config)
    except SnapstoreError:
        return None
