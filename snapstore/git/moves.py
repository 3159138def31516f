"""Moving the repository back (or forward): refs, HEAD, the index, the stash's reflog.

Only a rewind, switch or undo runs this, so a process is fine here (the hook path
starts none). Each move is checked against what the plan found, and done the way
git does it, so that a git command running at the same time either waits or fails,
never interleaves:

1. the refs, and snapstore's keeps of what they (and HEAD) pointed at
   (``refs/snapstore/<operation>/<name>``), in **one** ``git update-ref --stdin``
   transaction: git locks every ref, checks every old value, and moves all or
   none. Its reflog message names the operation;
2. HEAD: ``HEAD.lock`` is taken (git's own lock), HEAD is checked, written and
   renamed into place, and the move logged in ``logs/HEAD``, as ``git checkout``
   does (git 2.39's ``update-ref --stdin`` has no symbolic-ref commands, and a
   detached HEAD cannot move in the transaction that deletes the branch it named).
   When HEAD moves, the branches it leaves are deleted after it, in a second
   transaction, and the ones it goes to are made before it: HEAD never names a
   branch that is not there;
3. the stash and its reflog (the stash list), under ``refs/stash.lock``: the list,
   then the ref (a packed ``refs/stash`` moves in the transaction, and its list is
   written after it, the line ``update-ref`` appended to it included);
4. the index, by ``index.lock`` as HEAD.

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


def current(
    layout: Layout, names: list[str], refs: dict[str, str | None] | None = None
) -> dict[str, str | None]:
    """What each of ``names`` holds now (the index and the stash's reflog: their bytes'
    digests, by ``digest``); ``refs``: every ref, read already."""
    from ..core.blobs import digest

    found: dict[str, str | None] = {}
    if refs is None:
        refs = files.read_named(layout, [n for n in names if n.startswith("refs/")])
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
    heads = [m.before for m in moves if m.name == files.HEAD] + [
        m.after for m in moves if m.name == files.HEAD
    ]
    named = {m.name for m in moves if m.name.startswith("refs/")}
    named |= {h[len("ref: ") :] for h in heads if h and h.startswith("ref: ")}
    refs = files.read_named(layout, sorted(named))  # once, and only these
    now = current(layout, [m.name for m in moves], refs)
    todo: list[Move] = []
    for move in moves:
        here = now[move.name]
        if _there(layout, move, here, content):
            outcomes[move.name] = (MOVED, "")
        elif _expected(layout, move, here, moves, content):
            todo.append(move)
        else:
            outcomes[move.name] = (CONFLICT, "it changed while the rewind ran; left alone")
    stash = [m for m in todo if m.name in (files.STASH, files.STASH_LOG)]
    own = bool(stash) and not files.packed(layout, files.STASH)
    moving = [m for m in todo if not (own and m.name == files.STASH)]
    head = next((m for m in todo if m.name == files.HEAD), None)
    # A branch HEAD is to name is made before HEAD moves, and one it named is deleted
    # after: HEAD never names a branch that is not there.
    later = [m for m in moving if m.after is None] if head is not None else []
    first = [m for m in moving if m not in later]
    outcomes.update(_transaction(layout, todo, first, now, op_id, message))
    faults.point("git.refs_moved")
    failed = next(
        (outcomes[m.name][1] for m in first if outcomes.get(m.name, ("",))[0] == ERROR), ""
    )
    if failed:  # HEAD, the branches it leaves and the index stay with the refs
        stays = [m for m in todo if m.name in (files.HEAD, files.INDEX) or m in later]
        outcomes.update({m.name: (ERROR, failed) for m in stays})
        head, later, todo = None, [], [m for m in todo if m not in stays]
    if head is not None:
        data = None if head.after is None else f"{head.after}\n".encode()
        outcomes[head.name] = _write(layout, head, data, moves, content)
        if outcomes[head.name][0] == MOVED:
            for move in first:  # the refs as HEAD found them when it moved
                if outcomes.get(move.name, ("",))[0] == MOVED:
                    refs[move.name] = move.after
            _log_head(layout, head, message, refs)
        faults.point("git.head_moved")
    if later:
        outcomes.update(_transaction(layout, [], later, now, op_id, message))
        faults.point("git.refs_deleted")
    if own:
        outcomes.update(_move_stash(layout, stash, content))
    for name in (files.INDEX, files.STASH_LOG):
        found = next((m for m in todo if m.name == name), None)
        if found is None or name in outcomes:
            continue
        move = found
        if name == files.STASH_LOG and outcomes.get(files.STASH, (MOVED, ""))[0] != MOVED:
            outcomes[name] = (CONFLICT, "the stash could not be moved; its list is left alone")
            continue
        data = None if move.after is None else content(move.after)
        outcomes[name] = _write(layout, move, data, moves, content)
        faults.point("git.file_written")
    return outcomes


def _oid(value: str | None, layout: Layout) -> str:
    return "0" * layout.oid_size if value is None else value


def _transaction(
    layout: Layout,
    todo: list[Move],
    moving: list[Move],
    now: dict[str, str | None],
    op_id: str,
    message: str,
) -> dict[str, tuple[Outcome, str]]:
    """In one ``git update-ref`` transaction: keep what every move of ``todo`` that points
    at a commit points at now, then move the refs of ``moving``."""
    lines = []
    for move in todo:  # what each pointed at is kept before anything moves
        here = now[move.name]
        points = move.name == files.HEAD or move.name.startswith("refs/")
        if points and here is not None and not here.startswith("ref: "):
            lines.append(f"update {keep_name(op_id, move.name)} {here}")
    moving = [m for m in moving if m.name.startswith("refs/")]
    for move in moving:
        lines.append(f"update {move.name} {_oid(move.after, layout)} {_oid(move.before, layout)}")
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


def _resolved(refs: dict[str, str | None], head: str | None) -> str | None:
    """The commit a HEAD value names among ``refs`` (None: none, an unborn branch)."""
    if head is None or not head.startswith("ref: "):
        return head
    return refs.get(head[len("ref: ") :])


def _there(layout: Layout, move: Move, here: str | None, content: Callable[[str], bytes]) -> bool:
    """Whether ``name`` holds what the move makes: the same value, or an index that stages
    the same (git rewrites its stat cache, as any `git status` after a run cut short)."""
    if here == move.after:
        return True
    if move.name != files.INDEX or here is None or move.after is None:
        return False
    data = files.read_file(files.file_path(layout, move.name), 1 << 40, "the repository's index")
    return data is not None and same_index(data, content(move.after), layout.oid_size // 2)


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
        if _there(layout, move, here, content):
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


def _temps(layout: Layout) -> list[str]:
    """The folders where temporary files are written (never among the refs, where git
    would take one for a ref): beside HEAD and the index, the stash's reflog, and the
    common folder (for the stash's lock)."""
    return [layout.git_dir, layout.common_dir, os.path.join(layout.common_dir, "logs", "refs")]


def _temp(folder: str, name: str) -> str:
    return os.path.join(folder, f"{name}.snapstore-{os.getpid()}.tmp")


def _remove_temps(layout: Layout) -> None:
    """Remove the temporary files a run cut short left (``NAME.snapstore-PID.tmp``)."""
    for folder in _temps(layout):
        try:
            entries = os.listdir(folder)
        except OSError:
            continue
        for entry in entries:
            if ".snapstore-" in entry and entry.endswith(".tmp"):
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(folder, entry))


def _take(lock: str, data: bytes, tmp: str) -> str | None:
    """Take git's lock file ``lock``, holding ``data`` from the start (a hard link of the
    temporary file ``tmp``, written first); why not, when another git command holds it. A
    lock that holds exactly ``data`` was left by a run of this operation cut short: it is
    taken over."""
    with open(tmp, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    try:
        try:
            os.link(tmp, lock)
        except FileExistsError:
            if not _holds(lock, data):
                return f"{lock} exists: another git command is running; left alone"
            os.unlink(lock)
            os.link(tmp, lock)
    finally:
        os.unlink(tmp)
    return None


def _commit_lock(
    path: str, data: bytes, check: Callable[[], tuple[Outcome, str] | None]
) -> tuple[Outcome, str]:
    lock = path + ".lock"
    held = _take(lock, data, _temp(os.path.dirname(path), os.path.basename(path)))
    if held is not None:
        return ERROR, held
    done = check()  # checked again while git's lock keeps git out
    if done is not None:
        os.unlink(lock)
        return done
    faults.point("git.before_rename")
    os.rename(lock, path)
    _fsync_dir(os.path.dirname(path))
    return MOVED, ""


def _move_stash(
    layout: Layout, stash: list[Move], content: Callable[[str], bytes]
) -> dict[str, tuple[Outcome, str]]:
    """Move the stash (``refs/stash``, a loose ref or none) and its list (its reflog) as git
    does, under ``refs/stash.lock``, which every git command that writes either holds: the
    list first, then the ref, so that a run cut short leaves each as it was or as planned,
    and never a line more in the list (``git update-ref`` would append one)."""
    ref = next((m for m in stash if m.name == files.STASH), None)
    log = next((m for m in stash if m.name == files.STASH_LOG), None)
    ref_path = os.path.join(layout.common_dir, "refs", "stash")
    names = [m.name for m in stash]
    target = b"" if ref is None or ref.after is None else f"{ref.after}\n".encode()
    lock = ref_path + ".lock"
    held = _take(lock, target or b"snapstore: the stash goes\n", _temp(layout.common_dir, "stash"))
    if held is not None:
        return dict.fromkeys(names, (ERROR, held))
    try:
        now = {files.STASH: files.read_loose(layout, files.STASH)}  # not packed: loose or none
        if log is not None:
            now.update(current(layout, [log.name], {}))
        if any(now[m.name] not in (m.before, m.after) for m in stash):
            return dict.fromkeys(names, (CONFLICT, "it changed while the rewind ran; left alone"))
        if log is not None and now[log.name] != log.after:
            path = files.file_path(layout, log.name)
            if log.after is None:
                os.unlink(path)
            else:
                _replace(path, content(log.after))
            faults.point("git.stash_list_written")
        if ref is not None and now[ref.name] != ref.after:
            if ref.after is None:
                os.unlink(ref_path)
            else:
                os.rename(lock, ref_path)
        _fsync_dir(os.path.dirname(ref_path))
        return dict.fromkeys(names, (MOVED, ""))
    except OSError as exc:
        return dict.fromkeys(names, (ERROR, f"cannot move the stash: {exc.strerror or exc}"))
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(lock)


def _replace(path: str, data: bytes) -> None:
    """Write ``path`` whole by a rename (a run cut short leaves the old bytes, or the new)."""
    tmp = _temp(os.path.dirname(path), os.path.basename(path))
    with open(tmp, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.rename(tmp, path)


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


def _log_head(layout: Layout, move: Move, message: str, refs: dict[str, str | None]) -> None:
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
    old = _oid(_resolved(refs, move.before), layout)
    new = _oid(_resolved(refs, move.after), layout)
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
