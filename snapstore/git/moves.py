"""Moving the repository back (or forward): refs, HEAD, the index, the stash's reflog.

Only a rewind, switch or undo runs this, so a process is fine here (the hook path
starts none). Each move is checked against what the plan found, and done the way
git does it, so that a git command running at the same time either waits or fails,
never interleaves:

1. the refs, and snapstore's keeps of what they pointed at
   (``refs/snapstore/<operation>/<name>``), in **one** ``git update-ref --stdin``
   transaction: git locks every ref, checks every old value, and moves all or
   none. Its reflog message names the operation. A HEAD that goes to a detached
   commit moves in it too (``option no-deref``);
2. a HEAD that goes back to a branch: ``HEAD.lock`` is taken (git's own lock), HEAD
   is checked, written and renamed into place, and the move logged in ``logs/HEAD``;
3. the index, by ``index.lock`` the same way;
4. the stash's reflog (the stash list), by ``logs/refs/stash.lock``, after the
   transaction appended its own line for ``refs/stash``.

Every step can be run again: a move whose target is already there is done, one
still at what the plan found is made, anything else is a conflict (someone moved it
since). So a rewind interrupted anywhere (kill -9 included) ends, resumed, with each
of them either as it was or as planned.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Final, Literal, NamedTuple

from ..core import faults
from . import files
from .index import same_index
from .layout import Layout

if TYPE_CHECKING:
    import subprocess

#: What happened to one planned move.
Outcome = Literal["moved", "conflict", "error"]
MOVED: Final = "moved"
CONFLICT: Final = "conflict"
ERROR: Final = "error"
#: Where snapstore keeps what a ref pointed at before an operation moved it.
KEEP_PREFIX = "refs/snapstore/"
#: Seconds git may take for one step before it is given up.
GIT_TIMEOUT = 60.0


class Move(NamedTuple):
    """One planned move: ``name`` goes from ``before`` (what the plan found) to ``after``."""

    name: str
    before: str | None
    after: str | None


def keep_name(op_id: str, name: str) -> str:
    """The ref that keeps what ``name`` pointed at before operation ``op_id`` moved it."""
    return f"{KEEP_PREFIX}{op_id}/{name.removeprefix('refs/')}"


def git(
    layout: Layout, *args: str, data: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    """Run git on this repository, whatever the current folder and ``GIT_DIR`` say. Git
    that cannot start, or runs past :data:`GIT_TIMEOUT`, is an ``OSError``."""
    import subprocess  # only what moves or describes the repository starts git

    try:
        return subprocess.run(
            ["git", f"--git-dir={layout.git_dir}", f"--work-tree={layout.work_tree}", *args],
            input=data,
            capture_output=True,
            timeout=GIT_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise OSError(f"git {args[0]} ran over {GIT_TIMEOUT:.0f} s") from None


def current(layout: Layout, names: list[str]) -> dict[str, str | None]:
    """What each of ``names`` holds now (the index and the stash's reflog: their bytes'
    digests, by ``digest``)."""
    from ..core.blobs import digest

    found: dict[str, str | None] = {}
    refs = files.read_refs(layout)[0] if any(n.startswith("refs/") for n in names) else {}
    for name in names:
        if name == files.HEAD:
            found[name] = files.read_head(layout)
        elif name.startswith("refs/"):
            found[name] = refs.get(name)
        else:
            data = files.read_file(files.file_path(layout, name), 1 << 40, name)
            found[name] = None if data is None else digest(data).hex()
    return found


def apply(
    layout: Layout,
    moves: list[Move],
    op_id: str,
    message: str,
    content: Callable[[str], bytes],
) -> dict[str, tuple[Outcome, str]]:
    """Make each move whose name still holds ``before``; the outcome of each, with a reason
    for those not made. ``content`` gives the bytes of a blob by its digest (the index and
    the stash's reflog to write)."""
    outcomes: dict[str, tuple[Outcome, str]] = {}
    _remove_temps(layout)
    now = current(layout, [m.name for m in moves])
    todo: list[Move] = []
    for move in moves:
        here = now[move.name]
        if here == move.after:
            outcomes[move.name] = (MOVED, "")
        elif _expected(layout, move, here, moves, content):
            todo.append(move)
        else:
            outcomes[move.name] = (CONFLICT, "it changed while the rewind ran; left alone")
    outcomes.update(_transaction(layout, todo, now, op_id, message))
    faults.point("git.refs_moved")
    for move in todo:
        if move.name == files.HEAD and not _detached(move):
            outcomes[move.name] = _write(layout, move, f"{move.after}\n".encode(), moves, content)
            if outcomes[move.name][0] == MOVED:
                _log_head(layout, move, message)
            faults.point("git.head_moved")
    for name in (files.INDEX, files.STASH_LOG):
        found = next((m for m in todo if m.name == name), None)
        if found is None:
            continue
        move = found
        if name == files.STASH_LOG and outcomes.get(files.STASH, (MOVED, ""))[0] != MOVED:
            outcomes[name] = (CONFLICT, "the stash could not be moved; its list is left alone")
            continue
        data = None if move.after is None else content(move.after)
        outcomes[name] = _write(layout, move, data, moves, content)
        faults.point("git.file_written")
    return outcomes


def _detached(move: Move) -> bool:
    """A move of HEAD to a commit (a detached HEAD), or to no HEAD at all."""
    return move.name == files.HEAD and not (move.after or "").startswith("ref: ")


def _oid(value: str | None, layout: Layout) -> str:
    return "0" * layout.oid_size if value is None else value


def _transaction(
    layout: Layout, todo: list[Move], now: dict[str, str | None], op_id: str, message: str
) -> dict[str, tuple[Outcome, str]]:
    """In one ``git update-ref`` transaction: keep what every move of ``todo`` that points
    at a commit points at now, then move the refs (and a HEAD that goes detached)."""
    lines = []
    for move in todo:  # what each pointed at is kept before anything moves
        here = now[move.name]
        points = move.name == files.HEAD or move.name.startswith("refs/")
        if points and here is not None and not here.startswith("ref: "):
            lines.append(f"update {keep_name(op_id, move.name)} {here}")
    moving = [m for m in todo if m.name.startswith("refs/") or _detached(m)]
    for move in moving:
        old = move.before
        if move.name == files.HEAD:
            lines.append("option no-deref")
            old = _resolved(layout, move.before)
            if move.after is None:
                lines.append(f"delete HEAD {_oid(old, layout)}")
                continue
        lines.append(f"update {move.name} {_oid(move.after, layout)} {_oid(old, layout)}")
    if not lines:
        return {}
    data = ("\n".join(lines) + "\n").encode()
    try:
        done = git(layout, "update-ref", "--create-reflog", "-m", message, "--stdin", data=data)
    except OSError as exc:
        return {m.name: (ERROR, f"git update-ref could not run: {exc}") for m in moving}
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        reason = said[-1] if said else f"exit {done.returncode}"
        return {m.name: (ERROR, f"git refused the moves, none was made: {reason}") for m in moving}
    return {m.name: (MOVED, "") for m in moving}


def _resolved(layout: Layout, head: str | None) -> str | None:
    """The commit a HEAD value names (None: none, an unborn branch)."""
    if head is None or not head.startswith("ref: "):
        return head
    return files.read_refs(layout)[0].get(head[len("ref: ") :])


def _expected(
    layout: Layout,
    move: Move,
    here: str | None,
    moves: list[Move],
    content: Callable[[str], bytes],
) -> bool:
    """Whether ``name`` holds what the plan found: the same value; an index that stages the
    same; the stash's reflog plus the one line the move of ``refs/stash`` appended to it
    (the transaction ran before it: a run cut short after it, or this one)."""
    if here == move.before:
        return True
    if move.name == files.INDEX and here is not None and move.before is not None:
        path = files.file_path(layout, move.name)
        data = files.read_file(path, 1 << 40, "the repository's index")
        return same_index(data, content(move.before), layout.oid_size // 2)
    if move.name != files.STASH_LOG or here is None:
        return False
    stash = next((m for m in moves if m.name == files.STASH), None)
    data = files.read_file(files.file_path(layout, move.name), 1 << 40, "the stash's reflog")
    old = b"" if move.before is None else content(move.before)
    if stash is None or data is None or not data.startswith(old):
        return False
    tail = data[len(old) :].splitlines()
    fields = tail[0].split(b" ", 2) if len(tail) == 1 else []
    return len(fields) == 3 and fields[1].decode() == _oid(stash.after, layout)


def _write(
    layout: Layout,
    move: Move,
    data: bytes | None,
    moves: list[Move],
    content: Callable[[str], bytes],
) -> tuple[Outcome, str]:
    """Write HEAD, the index or the stash's reflog as git commits a lock file: the new
    bytes become ``PATH.lock`` (a hard link of a written temporary file: the lock never
    exists half-written), the path is checked again while the lock is held, then the lock
    is renamed over it. A lock left by a run of this operation cut short (it holds exactly
    these bytes) is taken over; any other means a git command is running."""
    path = _path(layout, move.name)

    def check() -> tuple[Outcome, str] | None:
        here = current(layout, [move.name])[move.name]
        if here == move.after:
            return MOVED, ""
        if not _expected(layout, move, here, moves, content):
            return CONFLICT, "it changed while the rewind ran; left alone"
        return None

    early = check()
    if early is not None:
        return early
    try:
        if data is None:
            os.unlink(path)
            return MOVED, ""
        return _commit_lock(path, data, check)
    except FileNotFoundError:
        return MOVED, ""  # gone already: nothing to remove
    except OSError as exc:
        return ERROR, f"cannot write {path}: {exc.strerror or exc}"


def _path(layout: Layout, name: str) -> str:
    """Where HEAD, the index or the stash's reflog is."""
    return (
        os.path.join(layout.git_dir, "HEAD")
        if name == files.HEAD
        else files.file_path(layout, name)
    )


def _remove_temps(layout: Layout) -> None:
    """Remove the temporary files a run cut short left beside HEAD, the index and the
    stash's reflog (``PATH.snapstore-PID.tmp``)."""
    for name in (files.HEAD, files.INDEX, files.STASH_LOG):
        folder, base = os.path.split(_path(layout, name))
        try:
            entries = os.listdir(folder)
        except OSError:
            continue
        for entry in entries:
            if entry.startswith(base + ".snapstore-") and entry.endswith(".tmp"):
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(folder, entry))


def _commit_lock(
    path: str, data: bytes, check: Callable[[], tuple[Outcome, str] | None]
) -> tuple[Outcome, str]:
    lock = path + ".lock"
    tmp = f"{path}.snapstore-{os.getpid()}.tmp"
    with open(tmp, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    try:
        try:
            os.link(tmp, lock)
        except FileExistsError:
            if _holds(lock, data):  # ours, from a run cut short
                os.unlink(lock)
                os.link(tmp, lock)
            else:
                return ERROR, f"{lock} exists: another git command is running; left alone"
    finally:
        os.unlink(tmp)
    done = check()  # checked again while git's lock keeps git out
    if done is not None:
        os.unlink(lock)
        return done
    faults.point("git.before_rename")
    os.rename(lock, path)
    _fsync_dir(os.path.dirname(path))
    return MOVED, ""


def _holds(path: str, data: bytes) -> bool:
    try:
        with open(path, "rb") as handle:
            return handle.read(len(data) + 1) == data
    except OSError:
        return False


def _fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _log_head(layout: Layout, move: Move, message: str) -> None:
    """Log a move of HEAD to a branch in ``logs/HEAD``, as git's checkout does (only
    where git keeps that log)."""
    path = os.path.join(layout.git_dir, "logs", "HEAD")
    if not os.path.isfile(path):
        return
    try:
        ident = git(layout, "var", "GIT_COMMITTER_IDENT").stdout.decode().strip()
    except OSError:
        return
    if not ident:
        return
    old = _oid(_resolved(layout, move.before), layout)
    new = _oid(_resolved(layout, move.after), layout)
    line = f"{old} {new} {ident}\t{message}\n".encode()
    with open(path, "ab") as handle:
        handle.write(line)


def missing(layout: Layout, oids: list[str]) -> set[str]:
    """The commits of ``oids`` that git's object store no longer holds (gc pruned them)."""
    if not oids:
        return set()
    try:
        done = git(
            layout, "cat-file", "--batch-check", data="".join(f"{o}\n" for o in oids).encode()
        )
    except OSError:
        return set(oids)
    return {
        line.split()[0].decode() for line in done.stdout.splitlines() if line.endswith(b" missing")
    }
