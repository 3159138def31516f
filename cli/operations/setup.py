"""What a new store starts with, whoever makes it: ``init``, ``hook install``, or the first
hook event in a workspace without one (a teammate who got the project's hooks through the
repository and never ran ``init``). The same defaults every time (docs/cli.md, ``init``):
the store kept out of git, scan mode on, and the baseline recorded, so that what the
agent's shell commands change is recorded from the first turn.

Click-free, and loaded only when a store is to be set up: the hook path imports it lazily.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from snapstore import Store
    from snapstore.ops.scanrecord import ScanResult

    from ..settings.trust import Unrecorded


def cover_shell(
    store: Store, progress: Callable[[str, int, int], None] | None = None
) -> ScanResult | None:
    """Put the store in scan mode and record the baseline; None when it already was (its
    hooks keep the baseline current). Raises ``Unrecorded`` when the trust record of the
    settings cannot be written: the store then works, with scan mode off."""
    from ..settings.config import Config

    config = Config.load(store.store_dir)
    if config.track_shell:
        return None
    config.track_shell = True
    config.save(store.store_dir)
    return store.scan(progress=progress, use_watcher=False)


def unrecorded_line(exc: Unrecorded) -> str:
    """Why scan mode is off when the settings could not be trusted, and the fix: one line."""
    return (
        f"{exc.message.split(' (set XDG_STATE_HOME')[0]}, so they are not used and scan mode "
        "is off: set XDG_STATE_HOME to a folder you can write, then run `snapstore config "
        "trust`"
    )


def new_store(store: Store) -> tuple[ScanResult | None, str | None]:
    """Give a store a hook just made what ``init`` gives one: kept out of git, scan mode,
    the baseline. The baseline scan, and the one line that says why scan mode could not be
    turned on (None when it was)."""
    from snapstore import SnapstoreError

    from ..settings.trust import Unrecorded

    with contextlib.suppress(OSError):  # a read-only .git: the store works all the same
        store.exclude_from_git()
    try:
        return cover_shell(store), None
    except Unrecorded as exc:
        return None, unrecorded_line(exc)
    except (SnapstoreError, OSError) as exc:
        return None, f"scan mode is off in the new store {store.store_dir}: {exc}"
