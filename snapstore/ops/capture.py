"""The capture protocol: begin a turn, capture before a write, record after, end.

Work that touches the disk or compresses (reading the files, hashing, encoding
blobs) happens before the write transaction, so parallel tool calls from
several processes hold the store's writer lock only for the commit. Each call
is one durable LMDB commit: a new prompt's too, which closes the session's
stale turn, begins the next and stores a new session's base together.
"""

# No ``from __future__ import annotations`` here: a NamedTuple turns string annotations
# into ForwardRefs, and the first ForwardRef of a process compiles, which sets up the
# AST module: about 3 ms of every hook's start-up (docs/benchmarks.md).

import os
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, NamedTuple, TypeVar

from ..core import faults
from ..core.errors import FileChanged, NotFound, RunActive, SnapstoreError, TooLarge
from ..core.fsio import DEFAULT_MAX_FILE_SIZE
from ..core.records import (
    CLOSED,
    HOOK,
    Big,
    Change,
    Session,
    Source,
    Turn,
    Version,
    differs,
    fingerprint,
)
from ..core.repo import Locked, Repo, Tx
from ..core.view import View

if TYPE_CHECKING:
    from .gitbase import Copied
    from .session_base import Base

T = TypeVar("T")
#: A commit whose reads went stale before it reads again, this many times at most.
_ATTEMPTS = 4


class CaptureResult(NamedTuple):
    """What one capture call did: the paths protected and those it could not handle.

    ``refused`` holds the errors of the paths that could not even be read (outside the
    workspace, a FIFO): each is in ``skipped`` too, and strict mode turns it into a
    failure once the other paths are captured.
    """

    session: str
    turn: str | None
    paths: list[str]
    skipped: list[tuple[str, str]]
    refused: tuple[SnapstoreError, ...] = ()


class _Prepared(NamedTuple):
    rel: str
    version: Version | None
    key: bytes | None = None
    value: bytes | None = None
    mkdirs: int = 0
    data: bytes | Big | None = None  # kept to re-encode if gc ran between prepare and commit
    stat: os.stat_result | None = None  # what was read, to check it is still there


def resolve_paths(
    repo: Repo, paths: Iterable[str | os.PathLike[str]], refused: dict[str, SnapstoreError]
) -> list[str]:
    """Validate every path before anything is read or written; duplicates collapse.

    A path that is not one the workspace may hold goes to ``refused``, so that one
    bad path never leaves the others unprotected.
    """
    rels: dict[str, None] = {}
    for path in paths:
        try:
            rels[repo.ws.relpath(path)] = None
        except SnapstoreError as exc:
            refused[os.fspath(path)] = exc
    return list(rels)


def _reporting(result: CaptureResult, refused: dict[str, SnapstoreError]) -> CaptureResult:
    """``result`` that also reports the paths ``refused``."""
    return result._replace(
        skipped=result.skipped + [(path, str(exc)) for path, exc in refused.items()],
        refused=tuple(refused.values()),
    )


def prepare(
    repo: Repo,
    rels: Iterable[str],
    bases: dict[str, bytes | None] | None = None,
    refused: dict[str, SnapstoreError] | None = None,
    limit: int = DEFAULT_MAX_FILE_SIZE,
) -> dict[str, _Prepared]:
    """Read each path and encode its bytes as a blob, ready to commit.

    The delta base is the path's latest recorded version unless ``bases`` says
    otherwise. With ``refused``, a path that cannot be read (a FIFO, a folder, a
    file over ``limit``) goes there instead of failing the others. A big file is
    only hashed here; :func:`_write` stores it.
    """
    entries = {}
    for rel in rels:
        try:
            entries[rel] = repo.ws.read_state(rel, limit=limit)[0]
        except SnapstoreError as exc:
            if refused is None:
                raise
            refused[rel] = exc
    prepared = {}
    with repo.read() as v:
        for rel, entry in entries.items():
            if entry is None:
                prepared[rel] = _Prepared(rel, None, mkdirs=repo.ws.missing_parents(rel))
                continue
            if isinstance(entry.data, Big):  # stored in chunks under the lock: store_big
                key, value = entry.data.key, None
            else:
                base = bases[rel] if bases and rel in bases else v.path_digest(rel)
                key, value = v.encode(entry.data, base)
            prepared[rel] = _Prepared(
                rel,
                Version(key.hex(), entry.mode, entry.kind),
                key,
                value,
                data=entry.data,
                stat=entry.stat,
            )
    return prepared


def _start_turn(
    tx: Tx,
    session: str,
    *,
    prompt: str = "",
    message_id: str | None = None,
    implicit: bool,
    transcript: tuple[str, int] | None = None,
    prompt_time: str = "",
) -> Turn:
    record = tx.session(session) or Session(session, tx.clock())
    turn = tx.new_turn(
        session, parent=tx.head(session), prompt=prompt, message_id=message_id, implicit=implicit
    )
    if transcript is not None:
        turn = turn._replace(transcript=transcript[0], transcript_size=transcript[1])
    if prompt_time:
        turn = turn._replace(prompt_time=prompt_time)
    tx.put_turn(turn)
    tx.put_session(record._replace(open_turn=turn.id, turns=record.turns + 1))
    tx.set_head(session, turn.id)
    tx.event("turn_begin", session=session, turn=turn.id, implicit=implicit)
    return turn


def close_turn(tx: Tx, turn: Turn) -> Turn:
    """Mark ``turn`` closed and no longer its session's open turn."""
    turn = turn._replace(state=CLOSED, closed=tx.clock())
    tx.put_turn(turn)
    record = tx.require_session(turn.session)
    if record.open_turn == turn.id:
        tx.put_session(record._replace(open_turn=None))
    tx.event("turn_end", session=turn.session, turn=turn.id)
    return turn


class _Moved(Exception):
    """What a commit was prepared from moved before the lock was taken: the commit is
    aborted, and the caller reads again."""


class _OpenTurn(NamedTuple):
    """A session's open turn as read before the commit that closes it: the paths whose
    ``after`` it awaited, and what each of them held (read outside the lock)."""

    turn: Turn | None
    awaiting: frozenset[str]
    prepared: dict[str, _Prepared]


def _read_open(repo: Repo, session: str, implicit_only: bool) -> _OpenTurn:
    """Read the session's open turn and what its awaiting paths hold now.

    With ``implicit_only``, an explicitly begun turn is refused with ``run_active``.
    """
    with repo.read() as v:
        turn = v.open_turn(session)
        if turn is None:
            return _OpenTurn(None, frozenset(), {})
        _refuse_run(turn, implicit_only)
        awaiting = _awaiting(v, turn)
    prepared: dict[str, _Prepared] = {}
    for change in awaiting:
        try:
            prepared.update(prepare(repo, [change.path], {change.path: _key(change.before)}))
        except SnapstoreError:
            continue  # the path became unreadable; the change keeps an unknown ``after``
    return _OpenTurn(turn, frozenset(c.path for c in awaiting), prepared)


def _refuse_run(turn: Turn, implicit_only: bool) -> None:
    if implicit_only and not turn.implicit:
        raise RunActive(
            f"turn {turn.id} of session {turn.session!r} is still open",
            turn=turn.id,
            session=turn.session,
        )


def refuse_run_active(repo: Repo, session: str) -> None:
    """Refuse with ``run_active`` while the session has an explicitly begun turn open."""
    with repo.read() as v:
        turn = v.open_turn(session)
    if turn is not None:
        _refuse_run(turn, True)


def _close_open(
    tx: Tx, repo: Repo, session: str, read: _OpenTurn, implicit_only: bool, check: bool
) -> Turn | None:
    """Close the session's open turn in this commit, recording what was read as the
    ``after`` of each change awaiting one.

    With ``check``, a commit whose reads moved (another turn open, another path
    awaiting, a file written since it was read) raises :class:`_Moved`.
    """
    turn = tx.open_turn(session)
    if turn is None:
        return None
    _refuse_run(turn, implicit_only)
    awaiting = _awaiting(tx, turn)
    if check and (
        read.turn is None
        or read.turn.id != turn.id
        or any(c.path not in read.awaiting for c in awaiting)
        or any(
            not _still_there(repo, read.prepared[c.path])
            for c in awaiting
            if c.path in read.prepared
        )
    ):
        raise _Moved
    for change in awaiting:
        if change.path in read.prepared:
            turn = _record_after(tx, turn, change, read.prepared[change.path])
    return close_turn(tx, turn)


def _after_reading(
    repo: Repo,
    session: str,
    implicit_only: bool,
    commit: Callable[[Tx, _OpenTurn, bool], T],
) -> T:
    """Read the session's open turn outside the lock, then run ``commit`` in one commit;
    read again when what was read moved meanwhile (the last attempt records what it read)."""
    for attempt in range(_ATTEMPTS):
        read = _read_open(repo, session, implicit_only)
        check = attempt < _ATTEMPTS - 1

        def run(tx: Tx, read: _OpenTurn = read, check: bool = check) -> T:
            return commit(tx, read, check)

        try:
            return _write(repo, read.prepared.values(), run)
        except _Moved:
            continue
        except FileChanged:  # a big file moved before it was stored: read it again
            if not check:
                raise
    raise AssertionError("unreachable: the last attempt does not check")


def _write(repo: Repo, items: Iterable[_Prepared], fn: Callable[[Tx], T]) -> T:
    """``fn`` in one commit, in a hold of the write lock that first stores the big files
    among ``items`` (in chunks, :mod:`~snapstore.core.chunked`), so that gc cannot take
    their chunks before ``fn`` points at them."""
    with repo.lock() as w:
        _store_big(w, items)
        return w.write(fn)


def _store_big(w: Locked, items: Iterable[_Prepared]) -> None:
    for item in items:
        if isinstance(item.data, Big) and item.stat is not None:
            from ..core.chunked import store_big  # not on a small file's hook path

            store_big(w, w.repo.ws, item.rel, item.data, fingerprint(item.stat))


def begin_turn(
    repo: Repo,
    session: str,
    prompt: str = "",
    message_id: str | None = None,
    close_open: bool = False,
    base: "Base | None" = None,
    transcript: str | None = None,
    prompt_time: str = "",
) -> Turn:
    """Open a turn as a child of the head, in one commit that first closes the session's
    open turn and, for a new session, stores ``base`` (snapstore.ops.session_base).

    An implicit turn still open is closed. An explicitly begun one is refused
    with :class:`RunActive`, unless ``close_open`` (an agent's new prompt: the
    turn whose end never came is over). ``transcript`` (the agent's transcript
    file) is kept with its size now: the turn's records come after that offset;
    ``prompt_time`` is the begin hook's own time (the agent's clock), kept with it.
    """
    marker = None if transcript is None else (transcript, _size(transcript))

    def commit(tx: Tx, read: _OpenTurn, check: bool) -> Turn:
        _close_open(tx, repo, session, read, not close_open, check)
        return _start_with_base(
            tx,
            session,
            base,
            prompt=prompt,
            message_id=message_id,
            implicit=False,
            transcript=marker,
            prompt_time=prompt_time,
        )

    return _after_reading(repo, session, not close_open, commit)


def _size(path: str) -> int:
    """A transcript's size (0 while the agent has not created it yet)."""
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def _start_with_base(
    tx: Tx,
    session: str,
    base: "Base | None",
    *,
    prompt: str = "",
    message_id: str | None = None,
    implicit: bool,
    transcript: tuple[str, int] | None = None,
    prompt_time: str = "",
) -> Turn:
    """Start a turn, and store ``base`` with it when this commit creates the session (a
    base is what the tree was at the session's first capture: no later commit has it)."""
    new = tx.session(session) is None
    turn = _start_turn(
        tx,
        session,
        prompt=prompt,
        message_id=message_id,
        implicit=implicit,
        transcript=transcript,
        prompt_time=prompt_time,
    )
    faults.point("capture.turn_started")  # a crash here leaves nothing of this commit
    if base is not None and new:
        from .session_base import store_base  # git's module: only for a new session's base

        store_base(tx, session, base)
    return turn


def finish_open_turn(w: Locked, session: str) -> Turn | None:
    """Record the missing ``after`` of every change and close the open turn, under the
    held lock (a rewind's, which needs its session's turn closed)."""
    read = _read_open(w.repo, session, False)
    _store_big(w, read.prepared.values())
    return w.write(lambda tx: _close_open(tx, w.repo, session, read, False, False))


def open_implicit_turn(repo: Repo, session: str) -> Turn:
    """The session's open turn; an implicit one is opened when there is none."""
    with repo.read() as v:
        turn = v.open_turn(session)
    if turn is not None:
        return turn
    return repo.write(lambda tx: tx.open_turn(session) or _start_turn(tx, session, implicit=True))


def end_turn(repo: Repo, session: str) -> Turn:
    """Close the session's open turn, recording any ``after`` still missing."""
    turn = _after_reading(
        repo,
        session,
        False,
        lambda tx, read, check: _close_open(tx, repo, session, read, False, check),
    )
    if turn is None:
        raise NotFound(f"session {session!r} has no open turn", session=session)
    return turn


def pre_write(
    repo: Repo,
    paths: Iterable[str | os.PathLike[str]],
    tool: str,
    session: str,
    source: Source = HOOK,
    base: "Base | None" = None,
    limit: int = DEFAULT_MAX_FILE_SIZE,
) -> CaptureResult:
    """Capture the current bytes of each path and open a change for it.

    Opens an implicit turn when none is open, in the same commit, with
    ``base`` for a new session (see :func:`begin_turn`). A path whose change
    is already open has another tool call in flight on it: that change
    protects it, and the call is counted, so the change stays open until every
    call on the path has reported (see :func:`post_write`).
    """
    refused: dict[str, SnapstoreError] = {}
    rels = resolve_paths(repo, paths, refused)
    prepared = prepare(repo, rels, refused=refused, limit=limit)
    rels = [rel for rel in rels if rel in prepared]
    too_large = {
        rel: f"larger than the capture limit ({limit} bytes)"
        for rel, exc in refused.items()
        if isinstance(exc, TooLarge)
    }
    if refused and not rels and not too_large:
        raise next(iter(refused.values()))  # nothing to capture: the error is the answer

    def commit(tx: Tx) -> CaptureResult:
        turn = tx.open_turn(session) or _start_with_base(tx, session, base, implicit=True)
        if too_large:  # the turn says so: its rewind, log and timeline name them
            turn = turn._replace(skipped=tuple({**dict(turn.skipped), **too_large}.items()))
        open_changes = dict(turn.open_changes)
        calls = dict(turn.open_calls)
        seq = turn.next_change
        now = tx.clock()
        for rel in rels:
            if rel in open_changes:
                calls[rel] = _in_flight(turn, rel) + 1  # a parallel call on a protected path
                continue
            item = prepared[rel]
            if item.key is not None:
                tx.put_blob(item.key, item.value, item.data)
            tx.put_change(
                Change.opened(
                    turn=turn.id,
                    seq=seq,
                    path=rel,
                    before=item.version,
                    tool=tool,
                    source=source,
                    time=now,
                    mkdirs=item.mkdirs,
                )
            )
            open_changes[rel] = seq
            seq += 1
            tx.set_path_digest(rel, item.version)
        tx.put_turn(turn._replace(next_change=seq, open_changes=open_changes, open_calls=calls))
        tx.event("pre_write", session=session, turn=turn.id, paths=rels, tool=tool)
        faults.point("capture.commit")
        return _reporting(CaptureResult(session, turn.id, rels, []), refused)

    return _write(repo, prepared.values(), commit)


def post_write(
    repo: Repo,
    paths: Iterable[str | os.PathLike[str]],
    session: str,
    tool: str = "",
    limit: int = DEFAULT_MAX_FILE_SIZE,
) -> CaptureResult:
    """Record what was written to each path.

    A path whose change is open is closed once the last tool call in flight on
    it reports; an earlier call's report only counts it off. A path with no
    open change (its pre-write never reached the store, or a parallel call's
    report closed the change already) gets a change from the latest version
    the store knows (``paths``) to what is on disk, in the open turn or a new
    implicit one. What closes a change is checked to be still on disk at the
    commit; when it moved (another call wrote meanwhile) it is read again.
    """
    refused: dict[str, SnapstoreError] = {}
    rels = resolve_paths(repo, paths, refused)
    for attempt in range(_ATTEMPTS):
        with repo.read() as v:
            turn = v.open_turn(session)
            awaiting = {c.path: c for c in _awaiting(v, turn)} if turn is not None else {}
            referenced = _referenced(v, [rel for rel in rels if rel not in awaiting])
        unread: dict[str, SnapstoreError] = {}
        prepared = prepare(
            repo,
            rels,
            {rel: _key(awaiting[rel].before) for rel in rels if rel in awaiting},
            unread,
            limit,
        )
        if not prepared and (refused or unread):
            raise next(iter({**refused, **unread}.values()))
        check = attempt < _ATTEMPTS - 1  # the last attempt records what it read
        copied: dict[str, Copied] = {}
        if referenced:  # a change from a version known by reference to git: bring it in
            from .gitbase import copy_in

            now = {rel: (base, prepared[rel].data) for rel, base in referenced.items()}
            copied = copy_in(repo, {rel: item for rel, item in now.items() if rel in prepared})

        def commit(
            tx: Tx,
            prepared: dict[str, _Prepared] = prepared,
            check: bool = check,
            copied: "dict[str, Copied]" = copied,
        ) -> CaptureResult | None:
            return _commit_post(tx, repo, session, tool, list(prepared), prepared, check, copied)

        try:
            result = _write(repo, prepared.values(), commit)
        except FileChanged:  # a big file moved before it was stored: read it again
            if not check:
                raise
            continue
        if result is not None:
            return _reporting(result, {**refused, **unread})
    raise AssertionError("unreachable: the last attempt does not check")


def _commit_post(
    tx: Tx,
    repo: Repo,
    session: str,
    tool: str,
    rels: list[str],
    prepared: dict[str, _Prepared],
    check: bool,
    copied: "dict[str, Copied]",
) -> CaptureResult | None:
    """One post-write's commit; None (and nothing written) when a read went stale.
    ``copied``: the earlier versions known by reference to git, brought in."""
    turn = tx.open_turn(session)
    if check and any(
        _in_flight(turn, rel) <= 1 and not _still_there(repo, prepared[rel]) for rel in rels
    ):
        return None
    recorded, skipped = [], []
    for rel in rels:
        item = prepared[rel]
        seq = turn.open_changes.get(rel) if turn is not None else None
        if turn is not None and seq is not None:
            if _in_flight(turn, rel) > 1:  # other calls on it still run: the change stays open
                calls = dict(turn.open_calls)
                calls[rel] -= 1
                if calls[rel] == 1:
                    del calls[rel]
                turn = turn._replace(open_calls=calls)
            else:
                turn = _record_after(tx, turn, tx.change(turn.id, seq), item)
            recorded.append(rel)
            continue
        known, before = _latest_known(tx, turn, rel, item.version)
        if not known:
            skipped.append(
                (
                    rel,
                    "no pre-write was captured for it, and the store knows no "
                    "earlier version of it",
                )
            )
            continue
        if before is not None and tx.git_ref(before.key, rel) is not None:
            found = copied.get(rel)
            if (found is None or found.base != before.key) and check:
                return None  # ``paths`` moved since it was read: read again
            if found is None or found.base != before.key or found.key is None:
                why = (
                    found.lost
                    if found is not None and found.lost
                    else "its version moved meanwhile"
                )
                skipped.append((rel, why))
                continue
            tx.put_blob(found.key, found.value, found.data)
            before = before._replace(digest=found.key.hex())
        recorded.append(rel)
        if not differs(before, item.version):
            continue  # the store knows this version already
        turn = turn or _start_turn(tx, session, implicit=True)
        if item.key is not None:
            tx.put_blob(item.key, item.value, item.data)
        tx.put_change(
            Change.recorded(
                turn=turn.id,
                seq=turn.next_change,
                path=rel,
                before=before,
                after=item.version,
                tool=tool,
                source=HOOK,
                time=tx.clock(),
            )
        )
        tx.set_path_digest(rel, item.version)
        turn = turn._replace(next_change=turn.next_change + 1)
    if turn is not None:
        tx.put_turn(turn)
    tx.event("post_write", session=session, turn=turn.id if turn else None, paths=recorded)
    faults.point("capture.commit")
    return CaptureResult(session, turn.id if turn else None, recorded, skipped)


def _referenced(v: View, rels: list[str]) -> dict[str, bytes]:
    """The paths of ``rels`` whose latest version is known by reference to git, with its
    reference key (snapstore.ops.gitbase); a store without any costs one cursor step."""
    if not rels or not v.has_git_refs():
        return {}
    found = {rel: v.path_digest(rel) for rel in rels}
    return {rel: key for rel, key in found.items() if key is not None and v.git_ref(key, rel)}


def _in_flight(turn: Turn | None, rel: str) -> int:
    """How many tool calls on ``rel`` have not reported yet (0: no open change)."""
    if turn is None or rel not in turn.open_changes:
        return 0
    return turn.open_calls.get(rel, 1)


def writing(v: View) -> dict[str, Turn]:
    """The paths a hook is writing right now (captured, the write not recorded yet: an open
    change), each with its session's open turn. A scan or another session's rewind leaves
    them alone, so that the writing session's record stays true."""
    found: dict[str, Turn] = {}
    for record in v.sessions():
        turn = v.open_turn(record.name) if record.open_turn else None
        if turn is not None:
            found.update(dict.fromkeys(turn.open_changes or {}, turn))
    return found


def _still_there(repo: Repo, item: _Prepared) -> bool:
    """Whether the path still holds what was read for it (checked under the write lock)."""
    read = item.stat if item.version is not None else None
    return repo.ws.holds(item.rel, None if read is None else fingerprint(read))


def _latest_known(
    v: View, turn: Turn | None, rel: str, now: Version | None
) -> tuple[bool, Version | None]:
    """Whether the store knows a version of ``rel``, and the latest one it recorded.

    A change without a pre-write starts from it. No ``paths`` entry means absent
    when this turn recorded the path (a deletion, or a new file's absence), and
    unknown otherwise: the file may hold bytes that were never captured.
    """
    latest = v.path_version(rel, like=now)
    if latest is not None:
        return True, latest
    return turn is not None and any(c.path == rel for c in v.changes(turn.id)), None


def _awaiting(v: View, turn: Turn) -> list[Change]:
    """The turn's changes still awaiting their ``after`` (``Turn.open_changes``)."""
    return [v.change(turn.id, seq) for seq in turn.open_changes.values()]


def _record_after(tx: Tx, turn: Turn, change: Change, item: _Prepared) -> Turn:
    """Record ``after`` for one open change; returns the turn without it open.

    The change spans its tool call's window: from what its pre-write saw to
    what is on disk now. When ``paths`` moved meanwhile, another session
    recorded the path inside that window, and this change keeps only what is
    not recorded there (docs/format.md §5.2):

    - a call of another session began on the path and is still in flight (its
      change starts where ``paths`` is): this change ends there;
    - such a call began and has ended, its turn still open (its change ends
      where ``paths`` is): this change keeps what came before it began, and
      what came after it ended.

    Otherwise the change keeps its whole window, even where something else
    recorded a part of it too: a write of its own is never left out.
    """
    if item.key is not None:
        tx.put_blob(item.key, item.value, item.data)
    latest = tx.path_digest(change.path)
    settled = True  # whether ``paths`` now holds what was read
    spans = [(change.before, item.version)]
    if latest != _key(change.before):
        others = _other_calls(tx, turn.session, change)
        if others:
            spans = [(change.before, others[0].before)]
            if others[-1].done:
                spans.append((others[-1].after, item.version))
            else:
                settled = False
    kept = False
    for before, after in spans:
        if not differs(before, after):
            continue
        if not kept:
            tx.put_change(change._replace(before=before, after=after, done=True))
            kept = True
        else:
            tx.put_change(
                Change.recorded(
                    turn=turn.id,
                    seq=turn.next_change,
                    path=change.path,
                    before=before,
                    after=after,
                    tool=change.tool,
                    source=change.source,
                    time=change.time,
                )
            )
            turn = turn._replace(next_change=turn.next_change + 1)
    if not kept:
        tx.delete_change(change)  # the write changed nothing
    if settled:
        tx.set_path_digest(change.path, item.version)
    open_changes = dict(turn.open_changes)
    open_changes.pop(change.path, None)
    calls = dict(turn.open_calls)
    calls.pop(change.path, None)
    return turn._replace(open_changes=open_changes, open_calls=calls)


def _other_calls(v: View, session: str, change: Change) -> list[Change]:
    """The calls of other sessions on the path that began while ``change``'s was in
    flight, oldest first: the chain of their changes that leads to what ``paths`` names.

    Walking back from ``paths``: a change in flight that starts there, or else one
    that ended there, then the one that ended where that one started, and so on,
    until the chain reaches where ``change`` started or no change continues it.
    Only calls that began after this one can be found so: an older call that ends
    while this one is in flight stops where this one began, and leaves ``paths``
    alone. Only open turns are looked at: a rewind (which needs its session's turn
    closed) moves ``paths`` to what it wrote, and is no call inside this one.
    """
    candidates = []
    for record in v.sessions():
        turn = v.open_turn(record.name) if record.name != session else None
        if turn is not None:
            candidates += [c for c in v.changes(turn.id) if c.path == change.path]
    chain: list[Change] = []
    current = v.path_digest(change.path)
    start = _key(change.before)
    while current != start:
        found = next(
            (
                c
                for c in reversed(candidates)
                if not c.done and not chain and _key(c.before) == current
            ),
            None,
        )
        found = found or next(
            (c for c in reversed(candidates) if c.done and _key(c.after) == current), None
        )
        if found is None:
            break
        candidates.remove(found)
        chain.insert(0, found)
        current = _key(found.before)
    return chain


def _key(version: Version | None) -> bytes | None:
    return None if version is None else version.key
