"""The repository's state, read from its files: HEAD, the refs, the index, the stash's reflog.

A record of the repository runs on the hook path, around every shell call, so it
must cost next to nothing when git did nothing: :func:`probe` takes the stat
fingerprint of each file and folder a change would touch (``HEAD``, ``index``,
``packed-refs``, the stash's reflog, ``config``, every folder of loose refs: git
writes a ref by renaming a lock file into its folder, which moves the folder's
times), and only what moved is read. A fingerprint taken within two seconds of the
file's last change may not see the next change in the same tick ("racily clean", as
git says): it is kept as one that never matches, so the next probe reads again.

Every value is a string: a commit id (hex), ``ref: NAME`` for a symbolic ref, and for
the index and the stash's reflog the bytes themselves, which the caller stores as a
blob. What git would not write, or what is too big to read safely, is refused
(:class:`~snapstore.core.errors.GitRefused`): a ref name with control characters or
bytes that are no UTF-8, a packed-refs file over :data:`MAX_PACKED_REFS`, a symlink.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Iterable

from ..core.errors import GitRefused
from .layout import Layout, open_regular, read_small
from .stamp import fingerprint

#: The names of the state that are not refs (a ref's name starts with ``refs/``).
HEAD = "HEAD"
INDEX = ":index"
STASH = "refs/stash"
STASH_LOG = ":logs/refs/stash"
#: The names whose values are the digests of blobs in the store.
BLOBS = (INDEX, STASH_LOG)
#: Refs never recorded: snapstore's own (what a rewind keeps), and git maintenance's
#: background prefetches.
UNRECORDED = ("refs/snapstore/", "refs/prefetch/")
#: Remote-tracking refs: they say where a remote was; snapstore reports their moves (a
#: push cannot be taken back) and never moves them.
REMOTE = "refs/remotes/"
#: The largest packed-refs file read (about 250,000 refs); a bigger one is refused.
MAX_PACKED_REFS = 16 * 1024 * 1024
#: The most refs a repository may hold for its state to be recorded.
MAX_REFS = 250_000
#: What git's check_refname_format refuses in a component, and anywhere (compiled when a
#: ref is first checked: a record in which no ref moved never needs it).
_BAD_REF = r"[\x00-\x20\x7f~^:?*\[\\]|\.\.|@\{|//|/\.|^\.|\.lock(/|$)|[/.]$|^/"
_bad_ref: re.Pattern[str] | None = None


def blob_keys(name: str, *values: str | None) -> list[bytes]:
    """The blobs of the store that ``name``'s ``values`` name (none for a ref or HEAD)."""
    if name not in BLOBS:
        return []
    return [bytes.fromhex(value) for value in values if value]


def valid_ref(name: str) -> bool:
    """Whether ``name`` is a ref git would write (``refs/...``, check_refname_format's
    rules) and is UTF-8 (a name snapstore can record and give back to git exactly)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    global _bad_ref
    if _bad_ref is None:
        _bad_ref = re.compile(_BAD_REF)
    return name.startswith("refs/") and name != "refs/" and _bad_ref.search(name) is None


def _hex(text: str, size: int) -> bool:
    """Whether ``text`` is a commit id: ``size`` lowercase hex digits."""
    return len(text) == size and not text.strip("0123456789abcdef")


def value_of(raw: bytes, layout: Layout, where: str) -> str:
    """A ref file's content as a value: a commit id, or ``ref: NAME``."""
    text = raw.decode("utf-8", "replace").strip()
    if text.startswith("ref: "):
        target = text[len("ref: ") :].strip()
        if not valid_ref(target):
            raise GitRefused(f"{where} names a ref git would not write: {target!r}", path=where)
        return "ref: " + target
    if not _hex(text, layout.oid_size):
        raise GitRefused(f"{where} holds neither a commit id nor a ref", path=where)
    return text


# -- fingerprints --------------------------------------------------------------------


def _files(layout: Layout) -> dict[str, str]:
    """The files a probe fingerprints, by name."""
    return {
        ".git": layout.dot,  # a .git file pointed elsewhere, a folder replaced
        "HEAD": os.path.join(layout.git_dir, "HEAD"),
        "index": os.path.join(layout.git_dir, "index"),
        "packed-refs": os.path.join(layout.common_dir, "packed-refs"),
        "logs/refs/stash": os.path.join(layout.common_dir, "logs", "refs", "stash"),
        "config": os.path.join(layout.common_dir, "config"),
    }


def probe(layout: Layout, folders: Iterable[str]) -> dict[str, str]:
    """The fingerprints a record compares: the files of :func:`_files` and the folders of
    loose refs (relative to the common folder) known from the last read."""
    now = time.time_ns()
    return {name: fingerprint(path, now) for name, path in paths(layout, folders).items()}


def paths(layout: Layout, folders: Iterable[str]) -> dict[str, str]:
    """Where each fingerprinted file and folder is (the next record's quick look compares
    them without finding the repository again: ``unchanged``)."""
    found = _files(layout)
    found.update((folder, os.path.join(layout.common_dir, folder)) for folder in folders)
    return found


def refs_moved(before: dict[str, str], now: dict[str, str]) -> bool:
    """Whether the refs may have moved: packed-refs, or a folder of loose refs."""
    return any(
        moved(before, now, name) for name in now if name == "packed-refs" or name[:4] == "refs"
    )


def moved(before: dict[str, str], now: dict[str, str], name: str) -> bool:
    """Whether the file or folder ``name`` may have changed since ``before`` was taken (a
    racy fingerprint always may)."""
    value = now.get(name, "")
    return before.get(name) != value or value.endswith("~")


# -- reading -------------------------------------------------------------------------


def read_head(layout: Layout) -> str | None:
    """HEAD: ``ref: refs/heads/NAME`` (a branch, maybe unborn) or a commit id (detached)."""
    path = os.path.join(layout.git_dir, "HEAD")
    raw = read_small(path, 4096)
    return None if raw is None else value_of(raw, layout, path)


def read_refs(layout: Layout) -> tuple[dict[str, str], dict[str, str]]:
    """Every ref (packed ones, and loose ones over them) but :data:`UNRECORDED`, and the
    fingerprint of each folder of loose refs walked (relative to the common folder), taken
    before it was listed, which :func:`probe` compares from now on."""
    refs = _packed(layout)
    folders: dict[str, str] = {}
    pending = ["refs"]
    now = time.time_ns()
    while pending:
        rel = pending.pop()
        if rel + "/" in UNRECORDED:
            continue
        path = os.path.join(layout.common_dir, rel)
        folders[rel] = fingerprint(path, now)
        try:
            entries = list(os.scandir(path))
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise GitRefused(f"cannot list {rel}: {exc.strerror}", path=rel) from None
        for entry in entries:
            name = f"{rel}/{entry.name}"
            if entry.is_symlink():
                raise GitRefused(f"the ref {name!r} is a symlink; snapstore does not follow it")
            if entry.is_dir():
                pending.append(name)
            elif not entry.name.endswith(".lock"):  # a ref being written: its old value stands
                if not valid_ref(name):
                    raise GitRefused(
                        f"the repository holds a ref whose name git would not write or that "
                        f"is no UTF-8: {os.fsencode(name)!r}"
                    )
                raw = read_small(entry.path, 4096)
                if raw is not None:
                    refs[name] = value_of(raw, layout, name)
        if len(refs) > MAX_REFS:
            raise GitRefused(f"the repository holds over {MAX_REFS} refs")
    return refs, folders


def packed(layout: Layout, name: str) -> bool:
    """Whether ``packed-refs`` holds ``name`` (a loose ref of that name may stand over it)."""
    path = os.path.join(layout.common_dir, "packed-refs")
    raw = read_small(path, MAX_PACKED_REFS) or b""
    return f" {name}\n".encode() in raw or raw.endswith(f" {name}".encode())


def read_named(layout: Layout, names: Iterable[str]) -> dict[str, str | None]:
    """The values of some refs, as git resolves them: a loose file each, else packed-refs
    (read once, its other lines not checked: a rewind asks for names a record checked)."""
    found: dict[str, str | None] = {}
    packed: dict[str, str] | None = None
    packed_path = os.path.join(layout.common_dir, "packed-refs")
    with contextlib.suppress(FileNotFoundError):  # refused as a record refuses it
        if os.stat(packed_path).st_size > MAX_PACKED_REFS:
            raise GitRefused(
                f"packed-refs is {os.stat(packed_path).st_size} bytes, over the "
                f"{MAX_PACKED_REFS} bytes snapstore reads",
                path=packed_path,
            )
    for name in names:
        path = os.path.join(layout.common_dir, name)
        if os.path.isfile(path) and not os.path.islink(path):
            found[name] = read_loose(layout, name)
            continue
        if packed is None:
            packed = {}
            raw = read_small(packed_path, MAX_PACKED_REFS)
            for line in (raw or b"").split(b"\n"):
                if line and line[:1] not in (b"#", b"^"):
                    oid, _, ref = line.partition(b" ")
                    packed[ref.decode("utf-8", "replace")] = oid.decode("ascii", "replace")
        value = packed.get(name)
        if value is not None and not _hex(value, layout.oid_size):
            raise GitRefused(f"packed-refs holds a malformed line for {name!r}")
        found[name] = value
    return found


def read_loose(layout: Layout, name: str) -> str | None:
    """A loose ref's value (None: there is no loose ref of that name)."""
    raw = read_small(os.path.join(layout.common_dir, name), 4096)
    return None if raw is None else value_of(raw, layout, name)


def _packed(layout: Layout) -> dict[str, str]:
    """The refs of ``packed-refs`` but the unrecorded ones (peeled lines skipped)."""
    path = os.path.join(layout.common_dir, "packed-refs")
    raw = read_small(path, MAX_PACKED_REFS)
    refs: dict[str, str] = {}
    if raw is None:
        return refs
    size = layout.oid_size
    for line in raw.split(b"\n"):
        if not line or line[:1] in (b"#", b"^"):
            continue
        oid, _, name_bytes = line.partition(b" ")
        try:
            name = name_bytes.decode("utf-8")
        except UnicodeDecodeError:
            name = ""
        if not valid_ref(name):
            raise GitRefused(
                f"packed-refs holds a ref whose name git would not write or that is no "
                f"UTF-8: {name_bytes!r}"
            )
        text = oid.decode("ascii", "replace")
        if not _hex(text, size):
            raise GitRefused(f"packed-refs holds a malformed line for {name!r}")
        if not name.startswith(UNRECORDED):
            refs[name] = text
    if len(refs) > MAX_REFS:
        raise GitRefused(f"the repository holds over {MAX_REFS} refs")
    return refs


def read_file(path: str, limit: int, what: str) -> bytes | None:
    """The bytes of the index or the stash's reflog (None: absent); one over ``limit``
    (the capture limit) is refused, as a workspace file over it is skipped."""
    fd = open_regular(path, limit, what, f"the capture limit ({limit} bytes)")
    if fd is None:
        return None
    try:
        chunks = []
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
        data = b"".join(chunks)
        if len(data) > limit:
            raise GitRefused(f"{what} grew over the capture limit while it was read", path=path)
        return data
    finally:
        os.close(fd)


def file_path(layout: Layout, name: str) -> str:
    """Where the index (``:index``) or the stash's reflog (``:logs/refs/stash``) is."""
    if name == INDEX:
        return os.path.join(layout.git_dir, "index")
    assert name == STASH_LOG
    return os.path.join(layout.common_dir, "logs", "refs", "stash")
