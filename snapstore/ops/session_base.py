"""What a session started from: its git commit, and what differed from it.

A turn records only what it changed, so another machine can rebuild the tree
after turn T only from where the session began: the commit a fresh ``git
clone`` checks out, plus the paths that differed from it at the session's
first capture (uncommitted edits, new untracked files, deletions). That is the
session's **base**, kept on its record (``Session.base``):

    {"commit": "<40 hex>" or null,
     "changes": [[path, version in the commit or null, version on disk or null], ...],
     "skipped": [path, ...]}            # too large, or unreadable: not reproducible

Running git costs a few milliseconds to a few hundred on a very large tree, so
it happens once per session, when the facade sees a session's first capture
(``Store(record_base=True)``), never per write, and outside the store's lock.
The base is stored in the commit that begins the session's first turn (its
``begin_turn`` or first ``pre_write``), so a crash never leaves that turn
without it. A workspace that is no git repository gets ``commit: null`` and no
changes: only the files its turns touched can be rebuilt elsewhere.
"""

from __future__ import annotations

import os
import subprocess
from typing import Any, NamedTuple

from ..core import blobs
from ..core.errors import SnapstoreError
from ..core.records import FILE, LINK, Big, Kind, Version, version_from_json, version_to_json
from ..core.repo import Repo, Tx

#: Seconds git may take before the base is given up (recorded as unknown, never blocking).
GIT_TIMEOUT = 30.0
_MODES: dict[str, tuple[int, Kind]] = {
    "100644": (0o644, FILE),
    "100755": (0o755, FILE),
    "120000": (0o777, LINK),
}


def _git(root: str, *args: str, data: bytes | None = None) -> bytes | None:
    try:
        done = subprocess.run(
            ["git", "-C", root, *args],
            input=data,
            capture_output=True,
            timeout=GIT_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def git_commit(root: str) -> str | None:
    """The commit the workspace's git checkout is at (None: no repository, or no commit)."""
    out = _git(root, "rev-parse", "--verify", "-q", "HEAD")
    return out.decode().strip() if out else None


def _status(root: str) -> tuple[str, str, list[tuple[str, str | None, str | None]]] | None:
    """(commit, prefix, [(path from the top, HEAD mode or None, HEAD object or None)])."""
    prefix = _git(root, "rev-parse", "--show-prefix")
    if prefix is None:
        return None
    out = _git(
        root,
        "status",
        "--porcelain=v2",
        "--branch",
        "-z",
        "--untracked-files=all",
        "--no-renames",
        "--ignore-submodules=all",
        "--",
        ".",
    )
    if out is None:
        return None
    commit = ""
    entries: list[tuple[str, str | None, str | None]] = []
    for item in out.split(b"\0"):
        line = os.fsdecode(item)
        if line.startswith("# branch.oid "):
            commit = line.split()[2]
        elif line.startswith("1 "):
            fields = line.split(" ", 8)
            mode_head, object_head, path = fields[3], fields[6], fields[8]
            entries.append(
                (
                    path,
                    None if mode_head == "000000" else mode_head,
                    None if mode_head == "000000" else object_head,
                )
            )
        elif line.startswith("u "):
            path = line.split(" ", 10)[10]
            entries.append((path, None, None))  # unmerged: the commit's side is unknown
        elif line.startswith("? "):
            entries.append((line[2:], None, None))
    if commit in ("", "(initial)"):
        return None
    return commit, prefix.decode().strip(), entries


def _objects(root: str, names: list[str]) -> dict[str, bytes]:
    """The bytes of git objects, by name (one ``git cat-file --batch``)."""
    if not names:
        return {}
    out = _git(root, "cat-file", "--batch", data="".join(f"{n}\n" for n in names).encode())
    found: dict[str, bytes] = {}
    at = 0
    while out is not None and at < len(out):
        end = out.index(b"\n", at)
        header = out[at:end].split()
        at = end + 1
        if len(header) != 3:
            continue  # "<name> missing"
        size = int(header[2])
        found[header[0].decode()] = out[at : at + size]
        at += size + 1
    return found


class Base(NamedTuple):
    """A session's base as captured, before its first turn's commit stores it."""

    record: dict[str, Any]  # what ``Session.base`` keeps
    contents: dict[bytes, bytes]  # the bytes of the blobs it names, by key


def capture_base(repo: Repo, max_file_size: int) -> Base:
    """The workspace's base now, and the blobs it names, read outside any lock. Never
    raises for git's sake: without a usable repository the commit is null."""
    status = _status(repo.root)
    if status is None:
        return Base({"commit": git_commit(repo.root), "changes": [], "skipped": []}, {})
    commit, prefix, entries = status
    contents: dict[bytes, bytes] = {}
    changes: list[list[Any]] = []
    skipped: list[str] = []
    objects = _objects(repo.root, [o for _, mode, o in entries if mode in _MODES and o])
    for top_path, mode, obj in entries:
        if not top_path.startswith(prefix):
            continue
        rel = top_path[len(prefix) :]
        store = repo.ws.store_rel
        if store is not None and (rel == store or rel.startswith(store + "/")):
            continue
        try:
            rel = repo.ws.relpath(rel)
            entry = repo.ws.read(rel)
        except SnapstoreError:
            skipped.append(rel)
            continue
        before = None
        if mode is not None:
            if mode not in _MODES or obj not in objects:
                skipped.append(rel)
                continue
            data = objects[obj]
            key = blobs.digest(data)
            contents[key] = data
            before = Version(key.hex(), *_MODES[mode])
        after = None
        if entry is not None:
            # a big file would need its chunks stored before the commit that records
            # the base; the base is a convenience for other machines, so it is skipped
            if isinstance(entry.data, Big) or len(entry.data) > max_file_size:
                skipped.append(rel)
                continue
            key = blobs.digest(entry.data)
            contents[key] = entry.data
            after = Version(key.hex(), entry.mode, entry.kind)
        changes.append([rel, version_to_json(before), version_to_json(after)])
    return Base(
        {"commit": commit, "changes": sorted(changes), "skipped": sorted(skipped)}, contents
    )


def base_changes(base: dict[str, Any] | None) -> list[tuple[str, Version | None, Version | None]]:
    """A base's (path, version in the commit, version on disk) triples."""
    if not base:
        return []
    return [
        (path, version_from_json(b), version_from_json(a)) for path, b, a in base.get("changes", [])
    ]


def base_keys(base: dict[str, Any] | None) -> set[bytes]:
    """The blobs a base names (gc keeps them; push uploads them)."""
    return {v.key for _, b, a in base_changes(base) for v in (b, a) if v is not None}


def store_base(tx: Tx, session: str, base: Base) -> bool:
    """Record ``base`` on a session that has none yet, in the commit that begins the
    session's first turn (snapstore.ops.capture)."""
    record = tx.session(session)
    if record is None or record.base is not None:
        return False
    for key, data in base.contents.items():
        if not tx.has_blob(key):
            tx.put_blob(key, blobs.encode(data))
    tx.put_session(record._replace(base=base.record))
    return True
