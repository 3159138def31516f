"""Recording what git did to the repository during a turn (docs/design.md, Git state).

At a turn's edges and around each shell call (where scans run), the repository is
compared with what the last record saw: HEAD, every ref but snapstore's own, the
index and the stash's reflog (snapstore.git.files). What moved becomes a
:class:`~snapstore.core.records.GitMove` of the turn it belongs to, found as a scan
finds whose a change is (snapstore.ops.shell): inside one session's shell call, its
turn; otherwise a ``user`` turn, which no rewind takes back. Without shell windows
(hook mode) what moved between a turn's begin and its end is the turn's.

This runs on the hook path, so when git did nothing it costs a read of the store's
stamp and a dozen ``lstat``: no file is read, nothing is committed, no process runs.
The index and the stash's reflog are stored as blobs, deduplicated, each a delta
against its previous version. A repository that cannot be read safely
(``GitRefused``) records nothing: the turn keeps the reason (``Turn.git_note``) and
its rewind says it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, Literal

from ..core import blobs, faults
from ..core.errors import GitRefused
from ..core.records import CLOSED, DEFAULT_SESSION, USER, GitMove, Turn
from ..core.repo import Repo, Tx
from ..git import files
from ..git.layout import find

if TYPE_CHECKING:
    from .shell import WindowKind

#: When a record is taken: a turn's begin or end, or a shell call's start or end.
Moment = Literal["begin", "end", "shell-begin", "shell-end"]
BEGIN: Final = "begin"
#: A record whose stamp another process moved before it committed reads again, this
#: many times at most.
_ATTEMPTS = 4


class _Action:
    """When a record is taken, and for whom. (Plain classes here, not NamedTuples: making
    one costs the hook's start-up, core/records.py.)"""

    __slots__ = ("call", "moment", "session")

    def __init__(self, session: str, moment: Moment, call: str):
        self.session, self.moment, self.call = session, moment, call


class _Read:
    """What one record read of the repository, outside the lock."""

    __slots__ = ("blobs", "refs", "state", "values")

    def __init__(
        self,
        state: dict[str, Any],
        values: dict[str, str | None],
        refs: bool,
        blobs: dict[bytes, tuple[bytes | None, bytes]],
    ):
        self.state = state  # the stamp to keep: layout, fingerprints, refused
        self.values = values  # name -> value now, for what may have moved
        self.refs = refs  # whether every ref was read (those absent now are gone)
        self.blobs = blobs  # key -> (encoded value or None when stored, bytes)


def record(
    repo: Repo,
    git_dir: str | None,
    session: str,
    moment: Moment,
    limit: int,
    call: str = "",
    windows: bool = False,
) -> str | None:
    """Record what moved in the repository since the last record; the reason git was left
    alone, the first time a record finds it so (None otherwise). ``windows``: scan mode,
    where the shell windows decide whose the moves are."""
    action = _Action(session, moment, call)
    for attempt in range(_ATTEMPTS):
        with repo.read() as v:
            stamp = v.git_state()
        try:
            read = _read(repo, git_dir, stamp, limit)
        except GitRefused as exc:
            return _refused(repo, stamp, session, moment, str(exc))
        if read is None:
            return None
        last = attempt == _ATTEMPTS - 1
        if _commit(repo, stamp, read, action, windows, check=not last):
            return None
    return None


def _read(
    repo: Repo, git_dir: str | None, stamp: dict[str, Any] | None, limit: int
) -> _Read | None:
    """What may have moved since ``stamp`` (None: nothing did, or there is no repository
    now and there was none before)."""
    layout = find(repo.root, git_dir)
    if layout is None:
        if stamp is None or stamp.get("layout") is None:
            return None
        return _Read({"layout": None}, {}, False, {})  # the repository went: forget it
    here = [layout.git_dir, layout.common_dir]
    fresh = stamp is None or stamp.get("layout") != here or bool(stamp.get("refused"))
    before: dict[str, str] = {} if fresh else stamp.get("fp", {})  # type: ignore[union-attr]
    now = files.probe(layout, [name for name in before if name.startswith("refs")])
    if not fresh and not any(files.moved(before, now, name) for name in now):
        return None  # the cheap path: git did nothing
    values: dict[str, str | None] = {}
    if fresh or files.moved(before, now, "HEAD"):
        values[files.HEAD] = files.read_head(layout)
    refs = fresh or files.refs_moved(before, now)
    if refs:
        found, folders = files.read_refs(layout)
        values.update(found)
        now = {name: fp for name, fp in now.items() if not name.startswith("refs")} | folders
    contents: dict[bytes, tuple[bytes | None, bytes]] = {}
    with repo.read() as v:
        for name, fp in ((files.INDEX, "index"), (files.STASH_LOG, "logs/refs/stash")):
            if fresh or files.moved(before, now, fp):
                data = files.read_file(files.file_path(layout, name), limit, _what(name))
                if data is None:
                    values[name] = None
                    continue
                key = blobs.digest(data)
                values[name] = key.hex()
                if key not in contents and not v.has_blob(key):
                    old = v.git_value(name)
                    base = bytes.fromhex(old) if old else None
                    value = None if len(data) > blobs.BIG else v.encode(data, base)[1]
                    contents[key] = (value, data)
    where = files.paths(layout, [name for name in now if name.startswith("refs")])
    state = {"layout": here, "fp": now, "paths": where, "refused": ""}
    return _Read(state, values, refs, contents)


def _what(name: str) -> str:
    return "the repository's index" if name == files.INDEX else "the stash's reflog"


def _commit(
    repo: Repo,
    stamp: dict[str, Any] | None,
    read: _Read,
    action: _Action,
    windows: bool,
    check: bool,
) -> bool:
    """Commit what was read: the moves, the new values, the stamp. False (nothing written)
    when another record committed since ``stamp`` was read, so that this one reads again."""
    big = [data for value, data in read.blobs.values() if value is None]
    with repo.lock() as w:
        if big:
            from ..core.chunked import store_bytes  # only an index over 4 MiB

            for data in big:
                store_bytes(w, data)

        def commit(tx: Tx) -> bool:
            if check and tx.git_state() != stamp:
                return False
            _put(tx, stamp, read, action, windows)
            faults.point("git.recorded")
            return True

        return w.write(commit)


def _put(
    tx: Tx,
    stamp: dict[str, Any] | None,
    read: _Read,
    action: _Action,
    windows: bool,
) -> None:
    for key, (encoded, data) in read.blobs.items():
        if encoded is not None:
            tx.put_blob(key, encoded, data)
    if read.state.get("layout") is None:  # no repository any more: its values go
        for name in tx.git_values():
            tx.set_git_value(name, None)
        tx.set_git_state(None)
        return
    fresh = stamp is None or stamp.get("layout") != read.state["layout"] or stamp.get("refused")
    recorded = tx.git_values()
    values = dict(read.values)
    if read.refs:  # every ref was read: those not found are gone
        for name in recorded:
            if name.startswith("refs/") and name not in values:
                values[name] = None
    moved = [
        (name, recorded.get(name), value)
        for name, value in sorted(values.items())
        if recorded.get(name) != value
    ]
    for name, _, value in moved:
        tx.set_git_value(name, value)
    tx.set_git_state(read.state)
    if fresh or not moved:
        return  # a first record is the baseline: nothing moved before it
    turn = _target(tx, action, windows)
    seq = tx.next_git_seq(turn.id)
    for n, (name, old, new) in enumerate(moved):
        tx.put_git_move(GitMove(turn.id, seq + n, name, old, new))
    tx.event("git", session=turn.session, turn=turn.id, names=[name for name, _, _ in moved])


def _target(tx: Tx, action: _Action, windows: bool) -> Turn:
    """The turn the moves belong to: the session's open turn when they happened in its
    shell call (scan mode) or its turn (hook mode); else a ``user`` turn."""
    shared: tuple[str, ...] = ()
    turn = None
    if windows:
        from .shell import CLOSE, END, OPEN, WindowAction, owner  # scan mode has it loaded

        kinds: dict[str, WindowKind] = {"shell-begin": OPEN, "shell-end": CLOSE}
        kind = kinds.get(action.moment, END)
        who = owner(
            tx.shell_windows(), [WindowAction(kind, action.session, action.call)], tx.clock()
        )
        if who.session is not None:
            turn = tx.open_turn(who.session)
            shared = () if turn is not None else (who.session,)
        else:
            shared = who.shared
    elif action.moment != BEGIN:
        turn = tx.open_turn(action.session)
    if turn is not None:
        return turn
    prompt = "git changes seen between turns"
    if shared:
        prompt = f"git changes seen during shell calls of {', '.join(shared)} (unattributed)"
    user = tx.new_turn(
        action.session or DEFAULT_SESSION,
        kind=USER,
        state=CLOSED,
        prompt=prompt,
        unattributed=shared,
    )
    user = user._replace(closed=user.created)
    tx.put_turn(user)
    return user


def _refused(
    repo: Repo, stamp: dict[str, Any] | None, session: str, moment: Moment, reason: str
) -> str | None:
    """The repository cannot be read safely: the session's open turn says so (its rewind
    leaves git alone and says why), and the stamp remembers it; the reason, the first time
    the stamp meets it."""
    with repo.read() as v:
        turn = v.open_turn(session) if moment != BEGIN else None
    new = (stamp or {}).get("refused") != reason
    if not new and (turn is None or turn.git_note == reason):
        return None  # said already: nothing to write

    def commit(tx: Tx) -> None:
        turn = tx.open_turn(session) if moment != BEGIN else None
        if turn is not None and turn.git_note != reason:
            tx.put_turn(turn._replace(git_note=reason))
        tx.set_git_state({**(tx.git_state() or {}), "refused": reason})

    repo.write(commit)
    return reason if new else None
