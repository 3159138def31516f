"""Scan mode: record what changed on disk that no hook saw.

Shell commands (``sed -i``, ``rm``, ``mv``, generators, formatters), other
programs and the user change files without any pre-write hook. A scan finds
those changes by comparing the workspace with two databases:

- ``index``: path -> stat fingerprint (size, mtime_ns, ctime_ns, inode,
  st_mode) and digest, as git's index and jj's working-copy state keep it. A
  file whose fingerprint is unchanged is not read again, so a scan costs one
  ``lstat`` per file plus the reading of what changed.
- ``paths``: path -> latest recorded digest, the baseline. A change's
  ``before`` comes from it, so a file a shell command deleted or rewrote can
  be put back. A hook's write has already moved ``paths``; a scan that finds
  the same bytes only refreshes the index and records nothing twice.

The first scan of a workspace records the baseline: every file's blob, so that
any file can come back later (in a git repository, a file git's index shows clean
against HEAD is recorded by reference instead, unread: snapstore.ops.gitbase). Changes
found inside one agent's shell call belong to its turn (snapstore.ops.shell); all
others go to a closed turn of kind ``user`` that no branch contains, so a rewind never
takes the user's own work back.

This module walks the workspace against the index and reads what moved, outside
the write lock, in batches; each batch is one commit, which checks every path
again and records the changes (snapstore.ops.scanrecord).
"""

from __future__ import annotations

import gc
import json
import os
import stat
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from ..core import blobs
from ..core.errors import SnapstoreError
from ..core.fsio import DEFAULT_MAX_FILE_SIZE
from ..core.records import (
    FILE,
    FINGERPRINT,
    LINK,
    SCAN,
    Big,
    Entry,
    Source,
    Version,
    fingerprint,
)
from ..core.repo import Repo
from ..core.view import View
from .ignore import IGNORE_FILES, IgnoreRules, Stack, ignored
from .scanrecord import Committer, Item, Noted, ScanResult, copied, encode
from .shell import WindowAction

if TYPE_CHECKING:
    from .gitbase import Baseline

#: A file touched this recently may change again within the same timestamp tick
#: ("racily clean" in git): its entry is stored so that the next scan re-reads it.
RACY_NS = 2_000_000_000
BATCH_FILES = 2000
BATCH_BYTES = 32 * 1024 * 1024
#: Files of the baseline by reference per commit: a few records each (core.baseline)
GROUPED_FILES = 20_000
_IGNORE_SET = frozenset(IGNORE_FILES)
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC

#: progress(phase, done, total): phase "walk" (total 0: unknown) or "read".
Progress = Callable[[str, int, int], None]


def _racy(st: os.stat_result, now_ns: int) -> bool:
    return now_ns - max(st.st_mtime_ns, st.st_ctime_ns) < RACY_NS


def _kept(check: bytes, racy: bool) -> bytes:
    """The fingerprint to keep: a racily clean file gets one that never matches."""
    if not racy:
        return check
    size, _, _, ino, mode = FINGERPRINT.unpack(check)
    return FINGERPRINT.pack(size, 0, 0, ino, mode)


def _stored(st: os.stat_result, now_ns: int) -> bytes:
    return _kept(fingerprint(st), _racy(st, now_ns))


def _decode(rel: bytes) -> str:
    return rel.decode("utf-8", "surrogateescape")


class _Walker:
    """Finds the paths whose fingerprint moved, the new ones and the gone ones.

    The hot loop works on ``bytes`` paths, as the index stores them, so a file
    whose fingerprint is unchanged costs one ``lstat`` and a dictionary lookup.
    The index is read a folder at a time from ``view`` (open for the walk), so a walk
    holds one folder's entries, not the workspace's: a daemon's first scan of a
    million files would otherwise hold a million. What the walk does not meet stays
    in the store until :meth:`unvisited` lists it, for :meth:`gone` to check.
    """

    def __init__(
        self,
        repo: Repo,
        rules: IgnoreRules,
        max_file_size: int,
        result: ScanResult,
        progress: Progress | None,
        dirs: dict[str, int] | None,
    ):
        self.repo, self.rules, self.root = repo, rules, os.fsencode(repo.root)
        self.store_rel = os.fsencode(rules.store_rel) if rules.store_rel else None
        self.max_file_size = max_file_size
        self.result = result
        self.progress = progress
        self.dirs = dirs
        self.view: View | None = None
        self.unseen: list[tuple[bytes, bytes]] = []  # index entries the walk did not meet
        self._below: list[bytes] = []  # folders whose entries it did not meet (unvisited)
        self.candidates: list[tuple[str, bytes | None]] = []
        self.forget: list[str] = []
        self.refused: dict[str, str] = {}  # a file that cannot be captured -> its fingerprint
        self.baseline: Baseline | None = None  # the first scan in a repository: git's clean files
        self.referenced: list[Noted] = []  # files of the baseline by reference
        self.converted: dict[bytes, bytes] = {}  # read, then referenced if the blob: its id

    def skip(self, rel: str, reason: str) -> None:
        self.result.skipped.append({"path": rel, "reason": reason})

    def refuse(self, rel: str, reason: str, st: os.stat_result) -> None:
        """A file that is there but cannot be captured (too large, not a regular file)."""
        self.skip(rel, reason)
        self.refused[rel] = fingerprint(st).hex()

    def walk(self, top: bytes, stack: Stack, clean: bool) -> None:
        """Visit every folder below ``top`` (b"" is the root), depth first."""
        pending = [(top, stack, clean)]
        skip = self.skip
        files = self.result.files
        root_fd = os.open(self.root, _DIR_FLAGS)
        try:
            while pending:
                rel_dir, stack, clean = pending.pop()
                prefix = rel_dir + b"/" if rel_dir else b""
                try:
                    # stat relative to the open folder: the kernel resolves one name, not the path
                    fd = os.open(rel_dir, _DIR_FLAGS, dir_fd=root_fd) if rel_dir else root_fd
                except OSError as exc:
                    skip(_decode(rel_dir), f"cannot list the folder: {exc.strerror}")
                    self._below.append(rel_dir)
                    continue
                try:
                    files = self._folder(fd, rel_dir, prefix, stack, clean, files, pending)
                finally:
                    if fd != root_fd:
                        os.close(fd)
                if self.progress is not None:
                    self.progress("walk", files, 0)
        finally:
            os.close(root_fd)
        self.result.files = files

    def _folder(
        self,
        fd: int,
        rel_dir: bytes,
        prefix: bytes,
        stack: Stack,
        clean: bool,
        files: int,
        pending: list[tuple[bytes, Stack, bool]],
    ) -> int:
        """Visit one folder's entries; returns the running count of files looked at."""
        assert self.view is not None
        index, indexed = self.view.index_folder(prefix)
        walked: set[bytes] = set()  # the subfolders to walk
        pop = index.pop
        candidates, forget, skip = self.candidates, self.forget, self.skip
        rules, store_rel, dirs = self.rules, self.store_rel, self.dirs
        limit = self.max_file_size
        pack, is_reg, is_lnk = FINGERPRINT.pack, stat.S_ISREG, stat.S_ISLNK
        try:
            with os.scandir(fd) as it:
                entries = list(it)
        except OSError as exc:
            skip(_decode(rel_dir) or ".", f"cannot list the folder: {exc.strerror}")
            entries = []
        present = {e.name: e for e in entries if e.name in _IGNORE_SET}
        if present or clean:
            clean = clean and self._rules_unchanged(prefix, present, index)
            stack = rules.push(stack, _decode(rel_dir)) if present else stack
        for entry in entries:
            name = entry.name
            if name[0] == "." and (
                name == ".git"
                or (  # dot names are rare: test them first
                    name.startswith(".snapstore") and rules.always_skipped(_decode(prefix) + name)
                )
            ):
                continue
            rel = prefix + name.encode("utf-8", "surrogateescape")
            if entry.is_dir(follow_symlinks=False):
                if rel == store_rel or (stack and ignored(_decode(rel), is_dir=True, stack=stack)):
                    continue
                if dirs is not None:
                    dirs[_decode(rel)] = entry.inode()
                walked.add(rel)
                pending.append((rel, stack, clean))
                continue
            old = pop(rel, None)
            if (
                (old is None or not clean)
                and stack
                and ignored(_decode(rel), is_dir=False, stack=stack)
            ):
                if old is not None:
                    forget.append(_decode(rel))
                continue
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                if old is not None:
                    index[rel] = old  # vanished meanwhile: the gone-path check decides
                continue
            files += 1
            mode = st.st_mode
            # fingerprint(st), inlined: this runs once for every file in the workspace
            if old is not None and old.startswith(
                pack(st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, mode)
            ):
                continue
            if not (is_reg(mode) or is_lnk(mode)):
                self.refuse(_decode(rel), "not a regular file or a symlink", st)
            elif st.st_size > limit and is_reg(mode):
                self.refuse(_decode(rel), f"larger than the size cap ({limit} bytes)", st)
            elif old is not None or self.baseline is None or not self._referenced(rel, st):
                candidates.append((_decode(rel), old and self._whole(rel, old)))
        self.unseen.extend((key, self._whole(key, old)) for key, old in index.items())
        self._below.extend(prefix + name for name in indexed if prefix + name not in walked)
        return files

    def _whole(self, rel: bytes, old: bytes) -> bytes:
        """A path's whole index entry, where :meth:`View.index_folder` gave a grouped
        file's fingerprint alone."""
        if len(old) > FINGERPRINT.size:
            return old
        assert self.view is not None
        return self.view.index_entry(rel) or old

    def _referenced(self, rel: bytes, st: os.stat_result) -> bool:
        """Note a file whose ``lstat`` is the one git's index cached, to be recorded by
        reference, unread (snapstore.ops.gitbase), unless :meth:`unclean` sends it back to
        be read: noted as a tuple, not an :class:`Item`, as a million of them are held."""
        assert self.baseline is not None
        oid = self.baseline.find(rel, st)
        if oid is None:
            return False
        check = fingerprint(st)
        self.referenced.append((rel, _kept(check, _racy(st, time.time_ns())), check, oid))
        return True

    def unclean(self) -> None:
        """After the walk of a first scan: each file it noted by reference that git says
        is not clean after all (HEAD stages another blob) is read as any other, and so
        is each that git may convert, which is referenced only if its bytes are its
        blob's. Git that could not tell sends every noted file to be read."""
        assert self.baseline is not None
        unclean = self.baseline.unclean()
        if unclean is not None and not (unclean.staged or unclean.attributed or unclean.autocrlf):
            return  # the common case: a million files, none of them to read
        kept: list[Noted] = []
        for noted in self.referenced:
            rel = noted[0]
            if unclean is not None and rel not in unclean.staged:
                if not unclean.converts(rel):
                    kept.append(noted)
                    continue
                self.converted[rel] = noted[3]
            self.candidates.append((_decode(rel), None))
        self.referenced = kept

    def _rules_unchanged(
        self, prefix: bytes, present: dict[str, os.DirEntry[str]], index: dict[bytes, bytes]
    ) -> bool:
        """Whether this folder's ignore files are as the index last saw them."""
        for name in IGNORE_FILES:
            old = index.get(prefix + os.fsencode(name))
            entry = present.get(name)
            if (old is None) != (entry is None):
                return False
            if entry is not None and old is not None:
                try:
                    if not old.startswith(fingerprint(entry.stat(follow_symlinks=False))):
                        return False
                except OSError:
                    return False
        return True

    def scope(self, rel: str) -> None:
        """Visit one path: a file, a link, a folder (its whole subtree) or a gone path.
        What it holds in the index and the walk does not meet is checked as gone: the
        file a folder replaced, the entries below a folder a file replaced."""
        assert self.view is not None
        key = os.fsencode(rel)
        old = self.view.index_entry(key)
        if self.rules.always_skipped(rel):
            self._unmet(key, old)  # never walked: what the index holds there is checked
            return
        try:
            st = os.lstat(self.repo.ws.abspath(rel))
        except OSError:
            self._unmet(key, old)  # gone
            return
        is_dir = stat.S_ISDIR(st.st_mode)
        if self.rules.path_ignored(rel, is_dir):
            self.forget.extend(_decode(k) for k, _ in self._entries_at(key, old))
            return
        if is_dir:
            if self.dirs is not None:
                self.dirs[rel] = st.st_ino
            if old is not None:
                self.unseen.append((key, old))
            self.walk(key, self.rules.stack(rel), clean=False)
            return
        self._below.append(key)
        self.result.files += 1
        if old is not None and old.startswith(fingerprint(st)):
            return
        if not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
            self.refuse(rel, "not a regular file or a symlink", st)
        elif st.st_size > self.max_file_size and stat.S_ISREG(st.st_mode):
            self.refuse(rel, f"larger than the size cap ({self.max_file_size} bytes)", st)
        else:
            self.candidates.append((rel, old))

    def _entries_at(self, key: bytes, old: bytes | None) -> list[tuple[bytes, bytes]]:
        """The index entries of path ``key`` (``old``: its own) and below it."""
        assert self.view is not None
        below = list(self.view.index_below(key))
        return below if old is None else [(key, old), *below]

    def _unmet(self, key: bytes, old: bytes | None) -> None:
        self._below.append(key)
        if old is not None:
            self.unseen.append((key, old))

    def unvisited(self) -> None:
        """Add to ``unseen`` the entries below the folders the walk did not enter (gone,
        ignored now, a file now, unreadable), while ``view`` is still open."""
        assert self.view is not None
        for folder in self._below:
            self.unseen.extend(self._entries_at(folder, None))
        self._below = []

    def gone(self) -> list[tuple[str, bytes]]:
        """Index entries not seen: deleted, or (if still there) ignored now."""
        deleted = []
        for key, old in self.unseen:
            rel = _decode(key)
            try:
                st = os.lstat(self.root + b"/" + key)
            except (FileNotFoundError, NotADirectoryError):
                deleted.append((rel, old))
                continue
            except OSError:
                continue  # unreadable: neither seen nor known to be gone
            if stat.S_ISDIR(st.st_mode):
                deleted.append((rel, old))  # a folder now stands where the file was
            else:
                self.forget.append(rel)
        return deleted


class ScanMemo:
    """The scan state as a scan last decoded it, for a caller that scans again and again
    (the watcher), kept while its stored bytes stay the same. Its list of folders is 2.2 MB
    of JSON at a million files: decoding it and making a set of it took 20 ms of a 24 ms
    scan of one file. Neither is changed by a scan: a new state is a new dict."""

    def __init__(self) -> None:
        #: The stored bytes, the state they decode to, and its folders: one tuple, replaced
        #: whole, so that no reader pairs one state's bytes with another's folders.
        self._kept: tuple[bytes, dict, frozenset[str]] | None = None

    def read(self, v: View) -> tuple[dict | None, frozenset[str]]:
        """The state (None before the baseline) and the folders it lists, the ones scans
        met (there before: a new file never brought them)."""
        raw = v.scan_state()
        if raw is None:
            return None, frozenset()
        kept = self._kept
        if kept is None or kept[0] != raw:
            state = json.loads(raw)
            kept = self._kept = (raw, state, frozenset(state.get("folders") or ()))
        return kept[1], kept[2]


def normalize_scopes(rels: Iterable[str]) -> list[str]:
    """Sorted scopes with duplicates and paths inside another scope removed."""
    kept: list[str] = []
    for rel in sorted(set(rels)):
        if kept and (rel == kept[-1] or rel.startswith(kept[-1] + "/")):
            continue
        kept.append(rel)
    return kept


def _widen(scopes: list[str]) -> list[str]:
    """A changed ignore file may hide or reveal its whole folder: scan the folder."""
    widened = []
    for rel in scopes:
        head, _, name = rel.rpartition("/")
        widened.append(head if name in _IGNORE_SET else rel)
    return normalize_scopes(widened)


def scan(
    repo: Repo,
    session: str | None = None,
    paths: Iterable[str | os.PathLike[str]] | None = None,
    *,
    progress: Progress | None = None,
    max_file_size: int = DEFAULT_MAX_FILE_SIZE,
    source: Source = SCAN,
    dirs: dict[str, int] | None = None,
    rules: IgnoreRules | None = None,
    window: Iterable[WindowAction] = (),
    git_baseline: bool = True,
    memo: ScanMemo | None = None,
) -> ScanResult:
    """Record what changed since the last scan, in the whole workspace or below ``paths``.

    The shell windows open at the commit decide whose the changes are
    (snapstore.ops.shell): one session's open turn, or a ``user`` turn, which is
    named after ``session`` (the one that asked). ``window`` opens or closes
    windows in the scan's last commit, after what it found is recorded.
    ``dirs``, when given, collects the folders visited (path -> inode).
    ``rules`` may be kept from an earlier scan while no ignore file changed, and ``memo``
    for as long as the caller scans again and again.
    ``git_baseline``: the first scan may record git's clean files by reference.
    """
    started = time.perf_counter()
    result = ScanResult(source=source)
    if rules is None or not rules.current():
        rules = IgnoreRules(repo.root, repo.ws.store_rel)
    exclude = rules.exclude_stamp
    memo = memo or ScanMemo()
    with repo.read() as v:
        state, known = memo.read(v)
    scopes = None
    if paths is not None and state is not None and state.get("exclude") == exclude:
        scopes = _widen(_relpaths(repo, paths, result))
        if "" in scopes:  # the root's ignore file changed: anything may be hidden or revealed
            scopes = None
    result.baseline = state is None
    result.full = scopes is None
    if dirs is None:
        dirs = {}  # the folders visited: the ones that came, or (scoped) the ones now known
    walker = _Walker(repo, rules, max_file_size, result, progress, dirs)
    new_state = None
    if scopes is None and (state is None or state.get("exclude") != exclude):
        new_state = {"baseline": (state or {}).get("baseline", repo.clock()), "exclude": exclude}
    created: list[str] = []
    collecting = gc.isenabled()
    gc.disable()  # a scan makes many small objects and frees none until it ends
    try:
        if result.baseline and result.full and git_baseline:
            from .gitbase import baseline

            walker.baseline = baseline(repo)  # an entry for each file git's index holds
        with repo.read() as walker.view:
            if scopes is None:
                clean = state is not None and state.get("exclude") == exclude
                walker.walk(b"", rules.base, clean)
                if walker.baseline is not None:
                    walker.unclean()
            else:
                for scope in scopes:
                    walker.scope(scope)
            walker.unvisited()
        walker.view = None
        if scopes is None:
            new_state, created = _folders(state, new_state, sorted(dirs), result.baseline)
        else:
            new_state = _known_folders(state, new_state, dirs, known)
        new_state = _uncaptured(state, new_state, walker, scopes)
        _record(repo, session, walker, result, progress, new_state, list(window), created, known)
    finally:
        if collecting:
            gc.enable()
    result.seconds = time.perf_counter() - started
    return result


def _folders(
    state: dict | None, new_state: dict | None, seen: list[str], baseline: bool
) -> tuple[dict | None, list[str]]:
    """The scan state to write (None: unchanged) and the folders that came since the last
    full scan (``folders`` of the scan state: every folder it saw)."""
    before = (state or {}).get("folders")
    created = []
    if before is not None and not baseline:
        known = set(before)
        created = [folder for folder in seen if folder not in known]
    if seen != before:
        new_state = {**(new_state or state or {}), "folders": seen}
    return new_state, created


def _known_folders(
    state: dict | None, new_state: dict | None, seen: dict[str, int], known: frozenset[str]
) -> dict | None:
    """The folders a scoped scan met join the state's (the watcher's scans are scoped, but
    for its first and one after a lost queue): a file made in one later did not bring it,
    so a rewind of that file keeps the folder. A state that lists no folders keeps none."""
    added = [folder for folder in seen if folder not in known]
    if not added or state is None or state.get("folders") is None:
        return new_state
    return {**(new_state or state), "folders": sorted(known.union(added))}


def _uncaptured(
    state: dict | None, new_state: dict | None, walker: _Walker, scopes: list[str] | None
) -> dict | None:
    """Sort out the files this scan could not capture that are new or changed since the
    last scan (``result.uncaptured``), and the scan state that remembers them (``skipped``:
    path -> fingerprint; a scoped scan adds to it)."""
    before = (state or {}).get("skipped", {})
    now = walker.refused
    result = walker.result
    if not result.baseline:
        result.uncaptured = [
            s
            for s in result.skipped
            if s["path"] in now and before.get(s["path"]) != now[s["path"]]
        ]
    kept = now if scopes is None else {**before, **now}
    if kept != before:
        new_state = {**(new_state or state or {}), "skipped": kept}
    return new_state


def _relpaths(repo: Repo, paths: Iterable[str | os.PathLike[str]], result: ScanResult) -> list[str]:
    """Scopes as relative paths, normalised lexically (no syscalls: a watcher passes many).

    Nothing is read through them: the walk never follows a link, and reads go
    through the safe reader, which refuses a symlinked parent.
    """
    rels = []
    prefix = repo.root + os.sep
    for path in paths:
        text = os.fspath(path)
        full = os.path.normpath(os.path.join(repo.root, text))
        if not full.startswith(prefix) or "\0" in full:
            result.skipped.append({"path": text, "reason": "not a path inside the workspace"})
            continue
        rels.append(full[len(prefix) :].replace(os.sep, "/"))
    return rels


def _record(
    repo: Repo,
    session: str | None,
    walker: _Walker,
    result: ScanResult,
    progress: Progress | None,
    new_state: dict | None,
    actions: list[WindowAction],
    folders: list[str],
    known: frozenset[str],
) -> None:
    """Read, encode and commit the candidates in batches, then the files of a first scan's
    baseline by reference (in groups, in path order: those the walk found clean and the
    converted ones whose bytes hold their blob), then the gone paths and the ``folders``
    that came (given to the agent's open turn, if the changes are its); ``known``: the
    folders the last full scan saw."""
    commit = Committer(repo, session, result, actions)
    batch: list[Item] = []
    size = 0
    total = len(walker.candidates)
    old = dict(walker.candidates)
    reads = repo.ws.read_many(rel for rel, _ in walker.candidates)
    for done, (rel, entry) in enumerate(reads, start=1):
        item = _item(rel, entry, old[rel], walker)
        oid = None if item is None else _holds_blob(walker, item)
        if item is not None and oid is not None:  # converted, and the blob after all
            assert item.check is not None
            walker.referenced.append((os.fsencode(rel), item.fingerprint, item.check, oid))
        elif item is not None:
            batch.append(item)
            size += 0 if isinstance(item.data, Big) else len(item.data)  # a big one is not held
        if len(batch) >= BATCH_FILES or size >= BATCH_BYTES:
            commit(copied(repo, encode(repo, batch, result.baseline, known), result), [])
            batch, size = [], 0
        if progress is not None:
            progress("read", done, total)
    referenced, walker.referenced = walker.referenced, []
    referenced.sort()  # in key order: each commit's groups follow the last one's
    for at in range(0, len(referenced), GROUPED_FILES):
        singles = commit.references(referenced[at : at + GROUPED_FILES])
        if singles:
            commit([_reference(*noted) for noted in singles], [])
    del referenced
    gone_items = [Item(rel, old) for rel, old in walker.gone()]
    while len(gone_items) > BATCH_FILES:  # each batch's earlier versions are held at once
        commit([], copied(repo, gone_items[:BATCH_FILES], result))
        gone_items = gone_items[BATCH_FILES:]
    if batch or gone_items or walker.forget or new_state is not None or actions:
        commit(
            copied(repo, encode(repo, batch, result.baseline, known), result),
            copied(repo, gone_items, result),
            walker.forget,
            new_state,
            final=True,
            folders=folders,
        )


def _reference(rel: bytes, kept: bytes, check: bytes, oid: bytes) -> Item:
    """One file of the baseline recorded by reference, as :meth:`_Walker._referenced` noted
    it, that has a record of its own by now: an item whose version is named by the
    reference key of its git object id."""
    size, _, _, _, mode = FINGERPRINT.unpack(check)
    item = Item(_decode(rel), None, fingerprint=kept, check=check)
    hex_oid = oid.hex()
    item.key, item.ref = blobs.reference_key(hex_oid), (hex_oid, size)
    item.version = Version(item.key.hex(), stat.S_IMODE(mode), FILE)
    return item


def _holds_blob(walker: _Walker, item: Item) -> bytes | None:
    """The git object id of a converted file of the baseline (gitbase.Baseline.find)
    whose bytes, as read, are its blob's after all: it is recorded by reference."""
    if not walker.converted:  # every scan but a repository's baseline with attributes
        return None
    oid = walker.converted.pop(os.fsencode(item.rel), None)
    if oid is None or walker.baseline is None or not isinstance(item.data, bytes):
        return None
    assert item.version is not None
    if item.version.kind != FILE or not walker.baseline.holds_blob(item.data, oid):
        return None
    return oid


def _item(
    rel: str, entry: Entry | SnapstoreError | None, old: bytes | None, walker: _Walker
) -> Item | None:
    """What one candidate holds now, as read through the safe reader."""
    if isinstance(entry, SnapstoreError):
        walker.skip(rel, str(entry))
        return None
    walker.result.read += 1
    if entry is None:
        if old is not None:
            walker.unseen.append((os.fsencode(rel), old))  # vanished since the walk: gone?
        return None
    st = entry.stat
    assert st is not None
    size = entry.data.size if isinstance(entry.data, Big) else len(entry.data)
    if entry.kind == FILE and size > walker.max_file_size:
        walker.refuse(rel, f"larger than the size cap ({walker.max_file_size} bytes)", st)
        return None
    item = Item(rel, old, fingerprint=_stored(st, time.time_ns()), check=fingerprint(st))
    if entry.kind == LINK:
        item.check = None  # a link's lstat is what the reader saw; nothing to re-check
    item.data = entry.data
    item.version = Version("", entry.mode, entry.kind)
    return item
