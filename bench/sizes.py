"""Store size (figure 4) and store bytes against raw bytes for a long edit history.

snapstore keeps only what the turns touched, delta-compressed; shadow git
keeps the whole tree from its first checkpoint on, as loose zlib objects until
a gc packs them. Sizes are bytes allocated on disk (``du``), measured right
after the session, before the rewinds (whose journals snapstore keeps so that
they can be undone): snapstore's ``.snapstore`` folder, the shadow ``.git``,
the plain copies and restic's repository when restic is installed. ``git gc
--aggressive`` runs once the rewinds are done, for the after-gc size. The
dedup ratio is snapstore's own: the raw bytes of every version its changes
reference over the bytes its blobs take.
"""

from __future__ import annotations

from typing import Any

from snapstore.core.db import store_size

from .measure import ratio, timed
from .session import SESSION, SessionRun
from .tree import disk_usage

#: ``git gc --aggressive`` on a 100k-file tree takes minutes; past this it is skipped.
GC_MAX_FILES = 20_000


def snapstore_size(run: SessionRun) -> dict[str, Any]:
    status = run.store.status(SESSION)
    return {
        "disk_bytes": disk_usage(run.store.store_dir),
        "stored_bytes": status.stored_bytes,
        "logical_bytes": status.logical_bytes,
        "blobs": status.blobs,
        "dedup_ratio": status.dedup_ratio,
    }


def measure(run: SessionRun) -> dict[str, Any]:
    """Every store's size right after the session, before any rewind adds to it."""
    out: dict[str, Any] = {"snapstore": snapstore_size(run)}
    snap = out["snapstore"]["disk_bytes"]
    if not run.with_peers:
        return out
    git: dict[str, Any] = {
        "before_gc_bytes": run.git.size(),
        "initial_commit_bytes": run.info.get("git_initial_bytes"),
    }
    git["after_turns_bytes"] = git["before_gc_bytes"] - (git["initial_commit_bytes"] or 0)
    out["shadow_git"] = git
    out["plain_copy"] = {"disk_bytes": run.copy.size()}
    out["ratios"] = {
        "vs_git_before_gc": ratio(snap, git["before_gc_bytes"]),
        "vs_plain_copy": ratio(snap, out["plain_copy"]["disk_bytes"]),
    }
    if run.with_restic:
        out["restic"] = {"disk_bytes": run.restic.size()}
        out["ratios"]["vs_restic"] = ratio(snap, out["restic"]["disk_bytes"])
    return out


def gc(run: SessionRun, sizes: dict[str, Any], enabled: bool | None = None) -> None:
    """``git gc --aggressive`` and the after-gc ratio; run after the rewinds, which add no
    objects, so that they reset from loose objects as the agents' shadow repos do.
    ``enabled`` None means only on trees of at most GC_MAX_FILES files."""
    if not run.with_peers or not (
        run.info["files"] <= GC_MAX_FILES if enabled is None else enabled
    ):
        return
    git = sizes["shadow_git"]
    git["gc_aggressive_s"], _ = timed(run.git.gc_aggressive)
    git["after_gc_bytes"] = run.git.size()
    sizes["ratios"]["vs_git_after_gc"] = ratio(
        sizes["snapstore"]["disk_bytes"], git["after_gc_bytes"]
    )


def history(run: SessionRun) -> dict[str, Any]:
    """What a long edit history costs the store, against the raw bytes it holds."""
    size = snapstore_size(run)
    edits = sum(len(p.agent) for p in run.plans)
    return {
        "turns": len(run.plans),
        "writes": edits,
        **size,
        "stored_over_raw": ratio(size["stored_bytes"], size["logical_bytes"]),
        "disk_over_raw": ratio(size["disk_bytes"], size["logical_bytes"]),
        "lmdb_file_bytes": store_size(run.store.store_dir),
    }
