"""Applying rewinds and undos as journaled operations.

A rewind (or an undo) becomes durable in three steps, each described in
docs/format.md:

1. **Journal.** One commit records an operation turn (kind ``rewind``) whose
   changes hold, per path, the bytes on disk now (``before``) and the planned
   result (``after``), and lists the operation under ``meta/unfinished``.
2. **Apply.** The agent's transcript gets its one appended record (or loses it again, for
   an undo), then each path is written once, atomically; emptied folders go.
3. **Finish.** One commit marks the operation applied, moves the head, marks
   the reverted turns and takes it off ``unfinished``; for an operation made from inside
   an open turn (``op.within``), it appends what was written to that turn's changes
   (source ``rewind``). When it had files to
   write and every write failed (a full disk), nothing moves: the operation is
   marked ``failed`` and can be run again as it was.

A crash between 1 and 3 leaves an unfinished operation that :func:`resume`
finishes: a path still holding ``before`` gets ``after``, a path holding
``after`` is done, anything else is left alone and reported; a transcript still at its
recorded size gets the record, one that already ends with it is done. Because the
journal is written first, ``undo`` always has the bytes to go back to.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from typing import Any

from .. import conversation
from ..core import blobs, faults
from ..core.chunked import store_big, store_bytes, store_spool
from ..core.errors import SnapstoreError, StoreCorrupt
from ..core.records import (
    APPLIED,
    CLOSED,
    CODE,
    FAILED,
    FINISH,
    REVERT,
    REWIND,
    REWOUND,
    SWITCH,
    UNDO,
    Big,
    Change,
    Entry,
    RewindOp,
    Turn,
    TurnState,
    fingerprint,
    version_of,
)
from ..core.repo import Locked, Repo, Tx
from ..core.view import View
from . import gitplan
from .plan import (
    CONFLICT,
    DELETE,
    KEEP,
    MERGE,
    RESTORE,
    Action,
    PathPlan,
    RewindResult,
)


class Operation:
    """A planned rewind or undo, before it is journaled; its plans sorted into the result."""

    __slots__ = ("git", "git_held", "make_folders", "op", "plans", "remove_folders", "result")

    def __init__(self, op: RewindOp, result: RewindResult, plans: list[PathPlan] | None = None):
        self.op = op
        self.result = result
        self.plans = plans or []
        #: folders that turns made (scan mode): removed once the files are done, if empty
        #: (the turns taken back), or made again (the turns put back, an undo)
        self.remove_folders: list[str] = []
        self.make_folders: list[str] = []
        #: the repository's half (snapstore.ops.gitplan), journaled with the files
        self.git: dict[str, Any] | None = None
        #: the bytes of the index or stash list it moves away from that the store lacks,
        #: by name: stored with the journal, for the undo to write back
        self.git_held: dict[str, bytes] = {}
        for plan in self.plans:
            result.add(plan)
        result.plans = self.plans


def execute(w: Locked, operation: Operation) -> RewindResult:
    """Journal, apply and finish one planned operation, under the lock it was planned in."""
    op_id = _journal(w, operation)
    faults.point("journal.journaled")
    operation.result.undo_id = op_id
    errors = _converse(operation.op.conversation)
    errors += _apply(w.repo, operation.plans)
    failed = {e["path"] for e in errors}
    writes = [p for p in operation.plans if p.writes]
    folders: tuple[list[str], list[str]] = ([], [])
    if not writes or any(p.path not in failed for p in writes):  # else nothing will move
        folders = _folders(w.repo, operation.make_folders, operation.remove_folders)
    git = _move_git(w.repo, operation.op._replace(git=operation.git or {}), op_id)
    return _finish(w, op_id, errors, folders, git)


def _move_git(repo: Repo, op: RewindOp, op_id: str) -> dict[str, Any] | None:
    """Make the repository's half of the operation, after its files (None: it has none)."""
    if not op.git:
        return None
    faults.point("journal.git")
    return gitplan.execute(repo, dict(op.git), op_id, f"snapstore: {_describe(op)} ({op_id})")


def _converse(record: Mapping[str, Any]) -> list[dict[str, str]]:
    """Make the operation's conversation edit, if it has one to make; its failure, if any."""
    edit = conversation.from_record(record)
    if edit is None or edit.status != "rewound":
        return []
    faults.point("journal.conversation")
    try:
        conversation.apply(edit)
    except (SnapstoreError, OSError) as exc:
        return [{"path": edit.transcript, "reason": str(exc)}]
    faults.point("journal.conversed")
    return []


def _describe(op: RewindOp) -> str:
    """The operation record's prompt line."""
    verb = {UNDO: "undo", SWITCH: "switch to", FINISH: "finish"}.get(op.action, "rewind to")
    inside = "" if op.within is None else f", from inside turn {op.within}"
    return f"{verb} {op.target}{inside}"


def _journal(w: Locked, operation: Operation) -> str:
    writes = [p for p in operation.plans if p.writes]
    encoded = {}
    unstored: list[tuple[PathPlan, Entry]] = []  # big files the store lacks
    with w.repo.read() as v:
        for plan in writes:
            for version, entry in ((plan.current, plan.current_entry), (plan.result, plan.content)):
                # A plan's version is its entry's digest: bytes the store holds (most of a
                # rewind's) are not hashed again.
                if entry is None or version is None or v.has_blob(version.key):
                    continue
                if isinstance(entry.data, Big):  # stored below, in chunks
                    unstored.append((plan, entry))
                    continue
                key, value = v.encode(entry.data, v.path_digest(plan.path))
                encoded[key] = value
        big: list[bytes] = []  # an index over 4 MiB the store lacks
        for name, data in operation.git_held.items():  # what the git half moves away from
            if len(data) > blobs.BIG:
                big.append(data)
                continue
            last = v.git_value(name)  # a delta against the last one recorded, as a record's
            key, value = v.encode(data, bytes.fromhex(last) if last else None)
            if value is not None:
                encoded[key] = value
    for data in big:
        store_bytes(w, data)
    for plan, entry in unstored:
        assert isinstance(entry.data, Big)
        if entry is plan.content and plan.spool is not None:  # a big merge's result
            store_spool(w, plan.spool)
        else:  # the user's big file
            assert entry.stat is not None
            store_big(w, w.repo.ws, plan.path, entry.data, fingerprint(entry.stat))
    summary = operation.result.to_json()
    # Every path that ends absent with folders to remove, written or already gone.
    summary["rmdirs"] = {p.path: p.rmdirs for p in operation.plans if p.rmdirs}
    summary["folders"] = {"make": operation.make_folders, "remove": operation.remove_folders}

    def commit(tx: Tx) -> str:
        op = operation.op._replace(result=summary, git=operation.git or {})
        # An undo that cannot move the head back stands on the branch as a turn of its own.
        turn = tx.new_turn(
            op.session,
            kind=REVERT if op.on_branch else REWIND,
            state=CLOSED,
            parent=op.prev_head if op.on_branch else None,
            prompt=_describe(op),
        )
        if op.on_branch:
            op = op._replace(new_head=turn.id)
        for key, value in encoded.items():
            tx.put_blob(key, value)
        for seq, plan in enumerate(writes):
            tx.put_change(
                Change.recorded(
                    turn=turn.id,
                    seq=seq,
                    path=plan.path,
                    before=plan.current,
                    after=plan.result,
                    tool="snapstore",
                    source=REWIND,
                    time=tx.clock(),
                    mkdirs=plan.mkdirs,
                )
            )
        tx.put_turn(turn._replace(op=op, closed=turn.created, next_change=len(writes)))
        record = tx.require_session(op.session)
        tx.put_session(record._replace(last_rewind=turn.id))
        tx.set_unfinished(turn.id, unfinished=True)
        tx.event(
            f"{op.action}_begin",
            session=op.session,
            turn=turn.id,
            target=op.target,
            paths=[p.path for p in writes],
        )
        return turn.id

    return w.write(commit)


def _apply(repo: Repo, plans: list[PathPlan]) -> list[dict[str, str]]:
    """Write each planned path once; a path that changed since planning is left alone.

    The newer structure goes first, then the old comes back: files are deleted,
    then the folders emptied by this operation that stand where a file must come
    back are removed, then files are written, each by an atomic rename, then the
    other emptied folders go. Nothing is synced one by one: one flush makes every
    write and removal durable before the caller's finish commit; a crash before it
    leaves the operation unfinished, for resume to finish (docs/format.md §5.3).
    """
    deletes = [p for p in plans if p.writes and p.content is None]
    writes = [p for p in plans if p.writes and p.content is not None]
    emptied = [p for p in plans if p.action == KEEP and p.result is None and p.rmdirs]

    def write(plan: PathPlan) -> str | None:
        """Write (or delete) one path; the reason it was left alone, or None."""
        try:
            if not _unchanged(repo, plan):
                raise SnapstoreError(
                    f"{plan.path} changed while the rewind ran; left alone", path=plan.path
                )
            if plan.folder and plan.content is not None:
                repo.ws.remove_empty_tree(plan.path)  # emptied by this operation's deletes
            _write(repo, plan.path, plan.content)
        except (SnapstoreError, OSError) as exc:
            return str(exc)
        faults.point("journal.wrote_path")
        return None

    failed: dict[str, str] = {}
    done: list[PathPlan] = []

    def run(batch: list[PathPlan]) -> None:
        for plan in batch:
            failure = write(plan)
            if failure is None:
                done.append(plan)
            else:
                failed[plan.path] = failure

    # One path after another: the writes land in the page cache until the flush, so
    # threads would only contend for the interpreter; each folder is opened once.
    with repo.ws.holding_folders():
        run(deletes)
        emptied += [p for p in deletes if p.rmdirs and p.path not in failed]
        blocking = tuple(p.path + "/" for p in writes if p.folder)
        first = [p for p in emptied if p.path.startswith(blocking)]
        removed = _remove_emptied(repo, first)
        run(writes)
        removed += _remove_emptied(repo, [p for p in emptied if p not in first])
        # The one flush, before the finish commit counts anything written or removed.
        repo.ws.flush([*(p.path for p in done), *removed])
    return [{"path": path, "reason": reason} for path, reason in failed.items()]


def _write(repo: Repo, rel: str, entry: Entry | None) -> None:
    """Write one path, unsynced; a big file streams from the store's verified chunks."""
    if entry is not None and isinstance(entry.data, Big):
        with repo.read() as v:
            repo.ws.write(rel, entry, durable=False, pieces=v.pieces(entry.data.key))
    else:
        repo.ws.write(rel, entry, durable=False)


def _folders(repo: Repo, make: list[str], remove: list[str]) -> tuple[list[str], list[str]]:
    """Make the folders ``make``, then remove those of ``remove`` that are empty, deepest
    first; the ones made and removed. A folder that cannot be made or go is only named
    in neither: its files, if any, are what counts."""
    shallowest = sorted(set(make), key=lambda rel: (rel.count("/"), rel))
    made = [rel for rel in shallowest if _quietly(repo.ws.make_folder, rel)]
    deepest = sorted(set(remove), key=lambda rel: (-rel.count("/"), rel))
    removed = [rel for rel in deepest if _quietly(repo.ws.remove_folder, rel)]
    return made, removed


def _quietly(action: Callable[[str], bool], rel: str) -> bool:
    try:
        return action(rel)
    except (SnapstoreError, OSError):
        return False


def _remove_emptied(repo: Repo, plans: list[PathPlan]) -> list[str]:
    """Remove the folders these plans emptied, deepest first (unsynced: the caller's flush
    makes it durable); the folders removed."""
    removed: list[str] = []
    for plan in sorted(plans, key=lambda p: -p.path.count("/")):
        # A folder that cannot go is only clutter, never lost work.
        with contextlib.suppress(SnapstoreError, OSError):
            removed += repo.ws.remove_empty_parents(plan.path, plan.rmdirs, durable=False)
    return removed


def _unchanged(repo: Repo, plan: PathPlan) -> bool:
    """Whether the path still holds what the plan was made from.

    The stat fingerprint read at planning time settles it cheaply; only when
    that moved is the file read and hashed again. A folder that stood at the
    path may still stand there, or be gone.
    """
    if plan.folder or plan.current is None:
        return repo.ws.holds(plan.path, None)
    then = plan.current_entry.stat if plan.current_entry is not None else None
    if then is not None and repo.ws.holds(plan.path, fingerprint(then)):
        return True
    return version_of(repo.ws.read(plan.path)) == plan.current


def _finish(
    w: Locked,
    op_id: str,
    errors: list[dict[str, str]],
    folders: tuple[list[str], list[str]] = ([], []),
    git: dict[str, Any] | None = None,
) -> RewindResult:
    faults.point("journal.before_finish")

    def commit(tx: Tx) -> RewindResult:
        turn = tx.turn(op_id)
        op = turn.op
        assert op is not None
        failed = {e["path"] for e in errors}
        summary = dict(op.result)
        summary.pop("rmdirs", None)
        summary.pop("folders", None)
        result = RewindResult(**summary)
        result.undo_id, result.new_head = op_id, op.new_head
        result.folders_created, result.folders_removed = folders
        for key in ("restored", "deleted", "merged", "marked"):
            setattr(result, key, [p for p in getattr(result, key) if p not in failed])
        result.errors = result.errors + errors
        result.git = gitplan.result(git, op_id)
        if git is not None:
            op = op._replace(git=git)
        if result.conversation is not None and result.conversation["transcript"] in failed:
            result.conversation = {**result.conversation, "status": "unchanged"}
        changes = tx.changes(op_id)
        conversed = result.conversation is not None and result.conversation["status"] == "rewound"
        git_moved = any(m["status"] == "moved" for m in (git or {}).get("moves", ()))
        if changes and all(c.path in failed for c in changes) and not conversed and not git_moved:
            return _nothing_done(tx, turn, result)
        for change in changes:
            if change.path not in failed:
                tx.set_path_digest(change.path, change.after)
        if op.within is not None:
            _record_within(tx, op.within, op_id, [c for c in changes if c.path not in failed])
        if git is not None:  # what it moved is no news to the next record of the repository
            gitplan.recorded(tx, git)
            if op.on_branch:  # a turn of its own: a rewind of it takes its moves back
                gitplan.as_moves(tx, op_id, git)
        if op.mode != CODE:
            tx.set_head(op.session, op.new_head)
            moves: tuple[tuple[tuple[str, ...], TurnState], ...] = (
                (op.reverted, REWOUND),
                (op.forward, CLOSED),
            )
            for turn_ids, state in moves:
                for turn_id in turn_ids:
                    moved = tx.find_turn(turn_id)  # gc may have dropped it since
                    if moved is not None and moved.state != state:
                        tx.put_turn(moved._replace(state=state))
        if op.undoes is not None:
            undone = tx.turn(op.undoes)
            assert undone.op is not None
            tx.put_turn(undone._replace(op=undone.op._replace(undone_by=op_id)))
        if op.redoes is not None:
            redone = tx.turn(op.redoes)
            assert redone.op is not None
            tx.put_turn(redone._replace(op=redone.op._replace(redone_by=op_id)))
        tx.put_turn(turn._replace(op=op._replace(status=APPLIED, result=result.to_json())))
        tx.set_unfinished(op_id, unfinished=False)
        tx.event(
            op.action,
            session=op.session,
            turn=op_id,
            target=op.target,
            new_head=op.new_head,
            errors=len(result.errors),
            conflicts=len(result.conflicts),
        )
        return result

    return w.write(commit)


def _record_within(tx: Tx, turn_id: str, op_id: str, written: list[Change]) -> None:
    """What an operation made from inside an agent's turn wrote, as changes of that turn
    (source ``rewind``, tool ``snapstore``), in the commit that marks it applied: a rewind
    of the turn takes them back with the agent's own edits, and no crash separates the
    files written from their record. A turn gc dropped meanwhile gets nothing."""
    turn = tx.find_turn(turn_id)
    if turn is None:
        return
    seq = turn.next_change
    for change in written:
        tx.put_change(
            Change.recorded(
                turn=turn_id,
                seq=seq,
                path=change.path,
                before=change.before,
                after=change.after,
                tool="snapstore",
                source=REWIND,
                time=tx.clock(),
                mkdirs=change.mkdirs,
            )
        )
        seq += 1
    tx.put_turn(turn._replace(next_change=seq, rewinds=(*turn.rewinds, op_id)))


def _nothing_done(tx: Tx, turn: Turn, result: RewindResult) -> RewindResult:
    """Every write of the operation failed: it is marked failed and nothing else moves, so
    the same command can run again (an undo of it has nothing to take back)."""
    op = turn.op
    assert op is not None
    result.nothing_done = True
    result.new_head = op.prev_head
    record = tx.require_session(op.session)
    if record.last_rewind == turn.id:
        tx.put_session(record._replace(last_rewind=op.prev_rewind))
    tx.put_turn(turn._replace(op=op._replace(status=FAILED, result=result.to_json())))
    tx.set_unfinished(turn.id, unfinished=False)
    tx.event(f"{op.action}_failed", session=op.session, turn=turn.id, errors=len(result.errors))
    return result


def resume(repo: Repo, run_agents: bool = True) -> list[RewindResult]:
    """Finish every interrupted operation, rolling each path forward to its plan. Without
    ``run_agents``, an operation whose conversation edit runs the agent's own CLI (which may
    take minutes) is left for a later call: the rest only writes, so it ends in bounded time
    (what a hook event needs before it records)."""
    results = []
    with repo.lock() as w:
        for op_id in repo.unfinished():
            with repo.read() as v:
                turn = v.turn(op_id)
                if turn.op is None:
                    raise StoreCorrupt(
                        f"unfinished operation {op_id} has no record", operation=op_id
                    )
                edit = conversation.from_record(turn.op.conversation)
                if not run_agents and edit is not None and conversation.needs_agent(edit):
                    continue
                rmdirs = dict(turn.op.result.get("rmdirs", {}))
                plans = [
                    _resume_plan(repo, v, change, rmdirs.pop(change.path, 0))
                    for change in v.changes(op_id)
                ]
                plans += [PathPlan(path, KEEP, rmdirs=n) for path, n in rmdirs.items()]
            folders = turn.op.result.get("folders", {})
            errors = [{"path": p.path, "reason": p.reason} for p in plans if p.action == CONFLICT]
            errors += _converse(turn.op.conversation)
            errors += _apply(repo, [p for p in plans if p.action != CONFLICT])
            done = _folders(repo, folders.get("make", []), folders.get("remove", []))
            git = _move_git(repo, turn.op, op_id)
            results.append(_finish(w, op_id, errors, done, git))
    return results


def _resume_plan(repo: Repo, v: View, change: Change, rmdirs: int) -> PathPlan:
    try:
        repo.ws.remove_temp_files(change.path)  # a write the crash cut short
        entry, folder = repo.ws.read_state(change.path, links_absent=True)
    except (SnapstoreError, OSError) as exc:
        return PathPlan(change.path, CONFLICT, reason=str(exc))
    current = version_of(entry)
    if current == change.after and not (folder and change.after is not None):
        return PathPlan(change.path, KEEP, current, entry, current, entry, rmdirs=rmdirs)
    if current != change.before:
        return PathPlan(
            change.path,
            CONFLICT,
            current,
            entry,
            reason="changed since the interrupted rewind; left alone",
        )
    try:
        content = v.content(change.after)
    except SnapstoreError as exc:
        return PathPlan(change.path, CONFLICT, current, entry, reason=str(exc))
    action: Action = DELETE if change.after is None else RESTORE if change.before else MERGE
    return PathPlan(
        change.path, action, current, entry, change.after, content, rmdirs=rmdirs, folder=folder
    )
