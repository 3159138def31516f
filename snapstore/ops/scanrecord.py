"""What a scan records: its result, and the commits that make what it read changes.

A scan (snapstore.ops.scan) walks the workspace and reads what moved outside the
write lock, in batches; each batch becomes one commit here. Inside the commit
every path is checked again (its fingerprint must not have moved since it was
read), so a scan never records bytes that a concurrent rewind has already
replaced. The changes go to the turn that owns them, by the shell windows open
at the commit (snapstore.ops.shell): one agent's open turn, or a closed ``user``
turn that no branch contains. The first scan's commits record the baseline: each
path's version, and no change.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from ..core import blobs
from ..core.errors import FileChanged
from ..core.records import (
    CLOSED,
    DEFAULT_SESSION,
    FINGERPRINT,
    SCAN,
    USER,
    Big,
    Change,
    Source,
    Turn,
    Version,
    differs,
    index_version,
)
from ..core.repo import Locked, Repo, Tx
from ..core.view import View
from .capture import writing
from .shell import WindowAction, apply_actions, owner

if TYPE_CHECKING:
    from .gitbase import Copied

FP_SIZE = FINGERPRINT.size
#: A batch of this many files or more has its new content compressed by ``ENCODERS``
#: threads (zstd lets go of the GIL), as a first scan's is. Fewer are not worth threads.
PARALLEL_FRAMES, ENCODERS = 64, 2
#: A file of the baseline by reference, as a first scan notes it: its path, the fingerprint
#: to keep (racily clean: one that never matches), the one its ``lstat`` gave, its object id.
Noted = tuple[bytes, bytes, bytes, bytes]


class ScanResult:
    """What one scan found and recorded.

    A plain class, not a dataclass: scans run from hooks and from processes whose
    start-up counts, and ``dataclasses`` loads ``inspect`` (docs/benchmarks.md).
    """

    __slots__ = (
        "added",
        "baseline",
        "changed",
        "deleted",
        "files",
        "full",
        "read",
        "seconds",
        "skipped",
        "source",
        "turn",
        "unattributed",
        "uncaptured",
        "user",
    )

    def __init__(
        self,
        changed: Iterable[str] = (),
        added: Iterable[str] = (),
        deleted: Iterable[str] = (),
        skipped: Iterable[dict[str, str]] = (),
        seconds: float = 0.0,
        turn: str | None = None,
        user: bool = False,
        unattributed: Iterable[str] = (),
        baseline: bool = False,
        files: int = 0,
        read: int = 0,
        source: Source = SCAN,
        full: bool = True,
        uncaptured: list[dict[str, str]] | None = None,
    ):
        self.changed = list(changed)
        self.added = list(added)
        self.deleted = list(deleted)
        self.skipped = list(skipped)  # path, reason
        self.seconds = seconds
        self.turn = turn  # the turn the changes went to
        self.user = user  # whether that turn is a ``user`` turn (changes seen between turns)
        self.unattributed = list(unattributed)  # sessions whose shell calls overlapped
        self.baseline = baseline  # the first scan: the baseline was recorded, no changes
        self.files = files  # files looked at
        self.read = read  # files read and hashed because their fingerprint moved
        self.source = source
        self.full = full  # the whole workspace, or only some paths
        #: the files of ``skipped`` that are new or changed since the last scan skipped them:
        #: what they hold now was never captured, so no rewind can bring it back
        self.uncaptured = uncaptured or []

    @property
    def count(self) -> int:
        return len(self.changed) + len(self.added) + len(self.deleted)

    def to_json(self) -> dict[str, object]:
        return {
            "changed": list(self.changed),
            "added": list(self.added),
            "deleted": list(self.deleted),
            "skipped": [dict(s) for s in self.skipped],
            "seconds": round(self.seconds, 4),
            "turn": self.turn,
            "user": self.user,
            "unattributed": list(self.unattributed),
            "baseline": self.baseline,
            "files": self.files,
            "read": self.read,
            "source": self.source,
            "full": self.full,
            "uncaptured": [dict(s) for s in self.uncaptured],
        }

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ScanResult) and self.to_json() == other.to_json()

    def __repr__(self) -> str:
        return f"ScanResult({self.to_json()!r})"


class Item:
    """One path whose fingerprint moved: what is on disk now, ready to commit."""

    __slots__ = (
        *("check", "copied", "data", "fingerprint", "key", "mkdirs"),
        *("old", "ref", "rel", "value", "version"),
    )

    def __init__(
        self,
        rel: str,
        old: bytes | None,
        version: Version | None = None,
        fingerprint: bytes = b"",
        check: bytes | None = None,
    ):
        self.rel = rel
        self.old = old  # its index entry before the scan
        self.version = version  # None: the path is gone
        self.fingerprint = fingerprint  # to store; what lstat must still say at commit time
        self.check = check
        self.key: bytes | None = None
        self.value: bytes | None = None  # encoded; None when the blob is already stored
        self.data: bytes | Big = b""
        self.mkdirs = 0
        self.ref: tuple[str, int] | None = None  # recorded by reference: git object id, size
        self.copied: Copied | None = None  # its referenced earlier version, brought in


def encode(repo: Repo, items: list[Item], baseline: bool, known: frozenset[str]) -> list[Item]:
    """Hash and compress a batch, each against its path's latest version; a new file's
    ``mkdirs`` counts the parent folders it brought (none of ``known``)."""
    if not items:
        return items
    frames: list[Item] = []  # new content with no base: a full frame each, made in threads
    with repo.read() as v:
        for item in items:
            base = v.path_digest(item.rel)
            if isinstance(item.data, Big):  # stored in chunks by the commit: Committer
                item.key, item.value = item.data.key, None
            elif base is None and len(items) >= PARALLEL_FRAMES:
                item.key, item.value = blobs.digest(item.data), None
                if not v.has_blob(item.key):
                    frames.append(item)
            else:
                item.key, item.value = v.encode(item.data, base)
            assert item.version is not None
            item.version = Version(item.key.hex(), item.version.mode, item.version.kind)
            if not baseline and item.old is None and base is None:
                item.mkdirs = _new_parents(v, item.rel, known)
    if frames:
        from concurrent.futures import ThreadPoolExecutor

        def compress(share: list[Item]) -> None:
            datas = [item.data for item in share if isinstance(item.data, bytes)]
            assert len(datas) == len(share)  # a big one has no frame: not here
            for item, value in zip(share, blobs.frames(datas), strict=True):
                item.value = value

        # A share per thread: a task per file costs as much as compressing a small one.
        with ThreadPoolExecutor(ENCODERS) as pool:
            list(pool.map(compress, [frames[i::ENCODERS] for i in range(ENCODERS)]))
    return items


def copied(repo: Repo, items: list[Item], result: ScanResult) -> list[Item]:
    """Bring in the earlier version of each item whose ``paths`` entry is a git reference
    (snapstore.ops.gitbase), outside the write lock; one git cannot give back is reported
    as not captured. A store that holds no reference loads nothing of git's."""
    with repo.read() as v:
        if not items or not v.has_git_refs():
            return items
    from .gitbase import copy_items

    for rel, why in copy_items(repo, items):
        lost = {"path": rel, "reason": why}
        result.skipped.append(lost)
        result.uncaptured.append(lost)
    return items


def _new_parents(v: View, rel: str, known: frozenset[str]) -> int:
    """How many parent folders of a new file it brought: those that held nothing indexed
    and that the last full scan did not see (``known``: an empty folder that was there,
    the user's, is not the file's and stays when the file's creation is taken back)."""
    parts = rel.split("/")[:-1]
    count = 0
    for depth in range(len(parts), 0, -1):
        folder = "/".join(parts[:depth])
        if folder in known or v.indexed_below(folder):
            break
        count += 1
    return count


class Committer:
    """Commits batches to the turn the changes belong to (snapstore.ops.shell), made if needed."""

    def __init__(
        self, repo: Repo, session: str | None, result: ScanResult, actions: list[WindowAction]
    ):
        self.repo, self.session, self.result, self.actions = repo, session, result, actions
        self.user_turns: dict[tuple[str, ...], str] = {}  # made by this scan, by shared sessions
        #: A baseline's paths its commits found in place (so the last need not look again).
        self.present: set[str] = set()

    def __call__(
        self,
        items: list[Item],
        gone: list[Item],
        forget: Iterable[str] = (),
        new_state: dict | None = None,
        final: bool = False,
        folders: Sequence[str] = (),
    ) -> None:
        forget = list(forget)
        with self.repo.lock() as w:
            items = [item for item in items if self._store_big(w, item)]
            with self.repo.ws.holding_folders():  # each path is checked: a folder opened once
                turn, recorded, present = w.write(
                    lambda tx: self._commit(tx, items, gone, forget, new_state, final, folders)
                )
        self.present.update(present)
        for kind, rel in recorded:
            getattr(self.result, kind).append(rel)
        if turn is not None:
            self.result.turn, self.result.user = turn.id, turn.kind == USER
            self.result.unattributed = list(turn.unattributed)
            if turn.kind == USER:
                self.user_turns[turn.unattributed] = turn.id

    def references(self, noted: list[Noted]) -> list[Noted]:
        """Commit files of the baseline by reference, in groups (core.baseline), each as
        the walk noted it. A file that changed since is still recorded as the walk saw
        it: git holds that version, and the next scan finds the change, as after any
        scan. Returns those that have records of their own (a hook wrote them meanwhile,
        or an earlier capture): they are recorded as items, as any other path, whose
        ``lstat`` is checked again."""
        with self.repo.lock() as w:
            return w.write(lambda tx: self._group(tx, noted))

    def _group(self, tx: Tx, noted: list[Noted]) -> list[Noted]:
        held = {os.fsencode(rel) for rel in writing(tx)}
        own = tx.has_own()
        grouped: list[Noted] = []
        singles: list[Noted] = []
        for entry in noted:
            if entry[0] in held:
                continue  # a hook's write in progress: the next scan sees it
            (singles if own and tx.has_own(entry[0]) else grouped).append(entry)
        tx.put_groups([e[0] for e in grouped], [e[1] for e in grouped], [e[3] for e in grouped])
        return singles

    def _store_big(self, w: Locked, item: Item) -> bool:
        """Store a big file's chunks in this hold of the lock, before the commit that
        records it; False (skipped, for the next scan) when it changed meanwhile."""
        if not isinstance(item.data, Big) or item.check is None:
            return True
        from ..core.chunked import store_big  # not on the path of a scan of small files

        try:
            store_big(w, self.repo.ws, item.rel, item.data, item.check)
        except FileChanged as exc:
            self.result.skipped.append({"path": item.rel, "reason": str(exc)})
            return False
        return True

    def _target(self, tx: Tx) -> tuple[Turn | None, tuple[str, ...]]:
        """The open agent turn the changes go to, or the sessions a user turn names."""
        who = owner(tx.shell_windows(), self.actions, tx.clock())
        if who.session is None:
            return None, who.shared
        turn = tx.open_turn(who.session)
        return (turn, ()) if turn is not None else (None, (who.session,))

    def _user_turn(self, tx: Tx, shared: tuple[str, ...]) -> Turn:
        """This scan's user turn for changes owned so (made at the first one)."""
        if shared in self.user_turns:
            return tx.turn(self.user_turns[shared])
        source = self.result.source
        if not shared:
            prompt = f"changes seen by {source} between turns"
        else:
            prompt = (
                f"changes seen by {source} during shell calls of {', '.join(shared)} (unattributed)"
            )
        return tx.new_turn(
            self.session or DEFAULT_SESSION,
            kind=USER,
            state=CLOSED,
            prompt=prompt,
            unattributed=shared,
        )

    def _commit(
        self,
        tx: Tx,
        items: list[Item],
        gone: list[Item],
        forget: list[str],
        new_state: dict | None,
        final: bool,
        folders: Sequence[str],
    ) -> tuple[Turn | None, list[tuple[str, str]], list[str]]:
        recorded, present = [], []
        turn, shared = self._target(tx)
        if turn is not None and folders:  # an agent's: a rewind of its turn removes them
            turn = turn._replace(folders=(*turn.folders, *folders))
            tx.put_turn(turn)
        if turn is not None and final and self.result.uncaptured:  # a rewind says so
            skipped = dict(turn.skipped)
            skipped.update((s["path"], s["reason"]) for s in self.result.uncaptured)
            turn = turn._replace(skipped=tuple(skipped.items()))
            tx.put_turn(turn)
        latest = {}
        if turn is not None:
            for change in tx.changes(turn.id):
                latest[change.path] = change.after if change.done else change.before
        held = writing(tx)  # a hook's write in progress owns its path
        for item in [*items, *gone]:
            if item.rel in held or not _still(self.repo, item):
                continue
            if self.result.baseline and item.version is not None:
                present.append(item.rel)
            base = tx.path_digest(item.rel)
            before = _before(base, item, latest.get(item.rel))
            if base is not None and before is not None and tx.git_ref(base, item.rel) is not None:
                from .gitbase import settle

                before = settle(tx, item, base, before)
                if before is None:
                    continue
            if item.ref is not None:
                tx.put_git_ref(item.key or b"", *item.ref)
            elif item.version is not None:
                tx.put_blob(item.key or b"", item.value, item.data)
            if self.result.baseline or not differs(before, item.version):
                if self.result.baseline:
                    tx.set_path_digest(item.rel, item.version)
                _index(tx, item)
                continue
            if turn is None:
                turn = self._user_turn(tx, shared)
            tx.put_change(
                Change.recorded(
                    turn=turn.id,
                    seq=turn.next_change,
                    path=item.rel,
                    before=before,
                    after=item.version,
                    tool="",
                    source=self.result.source,
                    time=tx.clock(),
                    mkdirs=item.mkdirs,
                )
            )
            turn = turn._replace(next_change=turn.next_change + 1)
            tx.set_path_digest(item.rel, item.version)
            _index(tx, item)
            kind = "deleted" if item.version is None else "added" if before is None else "changed"
            recorded.append((kind, item.rel))
        for rel in forget:
            tx.delete_index(rel)
        if self.result.baseline and final:
            # What the store last knew of a path that is gone now (deleted before scan mode
            # was on) is no baseline: a file that appears there later is new.
            seen = self.present.union(present)  # found in place under the lock: not gone
            for rel in [
                rel
                for rel, _ in tx.path_digests()
                if rel not in held and rel not in seen and not self.repo.ws.occupied(rel)
            ]:
                tx.forget_path(rel)
        if turn is not None and recorded:
            if turn.kind == USER:
                turn = turn._replace(closed=turn.created)
            tx.put_turn(turn)
            tx.event(
                "scan",
                session=turn.session,
                turn=turn.id,
                source=self.result.source,
                paths=[rel for _, rel in recorded],
            )
        if new_state is not None:
            tx.set_scan_state(new_state)
            if self.result.baseline:
                tx.event("scan_baseline", files=self.result.files)
        if final:
            apply_actions(tx, self.actions)  # and drop stale windows
        return (turn if recorded else None), recorded, present


def _index(tx: Tx, item: Item) -> None:
    if item.version is None:
        tx.delete_index(item.rel)
    else:
        tx.put_index(item.rel, item.fingerprint + (item.key or b""))


def _still(repo: Repo, item: Item) -> bool:
    """Whether the path still holds what was read (checked under the write lock)."""
    if item.version is None:
        return repo.ws.holds(item.rel, None)
    return item.check is None or repo.ws.holds(item.rel, item.check)  # None: a link, as read


def _before(base: bytes | None, item: Item, latest: Version | None) -> Version | None:
    """The baseline version of a path: its latest digest, with the mode last seen for it."""
    if base is None:
        return None
    if item.old is not None and item.old[FP_SIZE:] == base:
        return index_version(item.old)
    if latest is not None and latest.digest == base.hex():
        return latest
    if item.version is not None:
        return Version(base.hex(), item.version.mode, item.version.kind)
    return Version(base.hex())
