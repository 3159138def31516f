"""Rewind, switch and undo: choose what to take back or put back, plan it, journal it.

- ``rewind(T)`` takes back T and every later turn on the session's branch.
- ``switch(X)`` makes the workspace what it was right after X, wherever X is in
  the session's DAG: back to the fork with the current branch, then forward
  along X's branch. A rewind is a switch to T's parent.
- ``finish(S)`` retries, with another conflict policy, exactly the paths that the
  session's last operation left in conflict or failed to write (``branches.leftover``).
- ``redo(U)`` takes back the undo U: it does what U undid again, planned from now.
- ``undo(R)`` takes back a rewind or switch R. When the session's head is still
  where R left it, the head goes back too. When turns were recorded since (or
  the head moved otherwise), the undo does not move the head over them: it
  becomes a turn of its own on top (kind ``revert``, as git revert does).

A rewind or undo made **from inside** an agent's open turn (``inside``: ``snapstore mcp``, at
the agent's request) takes back files only, and its writes are recorded as changes of that
open turn (``RewindOp.within``), so that rewinding the turn takes them back like any other
edit of it; outside, an undo of one becomes a ``revert`` turn on top.

Every turn whose edits are in the workspace stays on the current branch, and
rewinding to any turn of the branch gives the workspace as it was before that
turn (docs/design.md, "The undo invariant"). Planning is the per-path fold of
``snapstore.ops.plan``; ``snapstore.ops.journal`` makes it durable and applies it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from .. import conversation
from ..core.errors import (
    BadInput,
    ConversationRefused,
    HeadMoved,
    NotFound,
    NotOnBranch,
    RunActive,
    ShellRunning,
    Unfinished,
)
from ..core.records import (
    BOTH,
    BRANCH_KINDS,
    CODE,
    CONVERSATION,
    FINISH,
    MODES,
    POLICIES,
    REWIND,
    SKIP,
    SWITCH,
    THEIRS,
    UNDO,
    Change,
    Mode,
    Policy,
    RewindOp,
    Turn,
)
from ..core.repo import Locked, Repo
from ..core.view import View
from . import gitplan
from .branches import (
    ancestors,
    branch,
    last_redoable,
    last_undoable,
    leftover,
    redoable,
    refuse_unchanged,
    resolve_operation,
    resolve_turn,
    undoable,
)
from .capture import finish_open_turn, writing
from .journal import Operation, execute
from .plan import (
    PathPlan,
    RewindResult,
    Step,
    plan_path,
    refuse_clashes,
    release,
    steps_by_path,
)
from .shell import open_windows


class Git:
    """Whether an operation moves the repository too, and where it is: ``git_dir`` is the
    agent's ``GIT_DIR``, when its environment names one. ``Git(False)``: the files only
    (``--no-git``)."""

    __slots__ = ("enabled", "git_dir")

    def __init__(self, enabled: bool = True, git_dir: str | None = None):
        self.enabled, self.git_dir = enabled, git_dir


NO_GIT = Git(False)


def check_choices(mode: str, on_conflict: str) -> None:
    """Refuse a mode or policy that is none of the known ones (a caller's typo)."""
    if mode not in MODES:
        raise BadInput(f"unknown mode {mode!r} (choose from {', '.join(MODES)})")
    if on_conflict not in POLICIES:
        raise BadInput(
            f"unknown conflict policy {on_conflict!r} (choose from {', '.join(POLICIES)})"
        )


def refuse_moved(v: View, session: str | None, target: str | int, expect_head: str | None) -> None:
    """Refuse when the session's head is not ``expect_head`` (the head the caller counted
    ``target``, a turn number, from): under the write lock, so that two rewinds of "turn 1"
    started at once take back one turn, not two."""
    if expect_head is None or session is None:
        return
    head = v.head(session)
    if head != expect_head:
        raise HeadMoved(
            f"the head of session {session!r} moved since turn {target} was chosen "
            f"(from {expect_head} to {head or 'the start'})",
            session=session,
            ref=str(target),
            expected=expect_head,
            head=head,
        )


def refuse_unfinished(repo: Repo) -> None:
    """Refuse to start an operation while an interrupted one is not finished."""
    unfinished = repo.unfinished()
    if unfinished:
        raise Unfinished(
            f"rewind {unfinished[0]} was interrupted and is not finished", operation=unfinished[0]
        )


def rewind(
    repo: Repo,
    target: str | int,
    session: str,
    *,
    mode: Mode = BOTH,
    on_conflict: Policy = SKIP,
    paths: Iterable[str] | None = None,
    dry_run: bool = False,
    force: bool = False,
    homes: Mapping[str, str] | None = None,
    inside: bool = False,
    git: Git = NO_GIT,
    expect_head: str | None = None,
) -> RewindResult:
    """Take back ``target`` and every later turn on the session's current branch.

    Unless ``mode`` is ``code``, the agent's conversation goes back too, for the agents
    with a conversation module (snapstore.conversation); ``homes`` names each agent's home
    folder (its registry of running sessions). ``expect_head``: the head a turn number was
    counted from (:func:`refuse_moved`). Every check comes before the first change.

    ``inside``: the agent asks from inside its open turn. The files alone go back (``mode``
    must be ``code``: the agent is running its chat), and what is written is recorded as
    changes of that turn; refused while another session's shell call runs.
    """
    check_choices(mode, on_conflict)
    if inside and mode != CODE:
        raise BadInput("a rewind from inside a turn takes back files only (mode code)")
    if inside:
        git = NO_GIT  # the agent's turn runs: its repository is not moved under it
    rels = None if paths is None else [repo.ws.relpath(p) for p in paths]
    if rels is not None:
        mode = CODE  # taking back some files never moves the conversation
    with repo.lock() as w:
        refuse_unfinished(repo)
        with repo.read() as v:
            refuse_moved(v, session, target, expect_head)
            turn = resolve_turn(v, target, session)
            within = _inside(repo, v, session) if inside else None
        if within is None:
            _end_open_turn(w, session, force, dry_run)
        with repo.read() as v:
            operation = _plan_rewind(repo, v, turn, session, mode, on_conflict, rels, within, git)
        if mode != CODE:
            _plan_conversation(operation, turn, homes, target)
        return _run(w, operation, dry_run)


def _inside(repo: Repo, v: View, session: str) -> Turn:
    """The open turn a move from inside is made in; refused without one, and while another
    session's shell call runs (its changes could not be told from this move's writes)."""
    open_turn = v.open_turn(session)
    if open_turn is None:
        raise NotFound(
            f"session {session!r} has no open turn: a move from inside is made during "
            "the agent's turn",
            session=session,
        )
    others = tuple(sorted(s for s in open_windows(repo) if s != session))
    if others:
        raise ShellRunning(
            f"session {others[0]!r} is running a shell command right now, and what it "
            "changes meanwhile could not be told from this rewind's writes: try again "
            "once it ends",
            session=session,
            others=others,
        )
    return open_turn


def _plan_conversation(
    operation: Operation, turn: Turn, homes: Mapping[str, str] | None, target: str | int
) -> None:
    """Add the conversation edit to a planned rewind (raises when it must be refused). A chat
    whose files cannot be read safely is left as it is while the files go back; in mode
    ``conversation`` nothing would go back, so that is refused."""
    if not conversation.concerns(turn.session):
        return
    shown = f"{target}" if isinstance(target, int) else turn.id
    edit = conversation.plan(
        turn.session,
        turn.message_id,
        turn.transcript,
        homes,
        shown,
        turn.transcript_size,
        turn.prompt,
        turn.prompt_time or conversation.iso(turn.created),
    )
    if edit is None:
        return
    if edit.status == "refused" and operation.op.mode == CONVERSATION:
        raise ConversationRefused(edit.note, path=edit.transcript)
    operation.op = operation.op._replace(conversation=edit._asdict())
    operation.result.conversation = edit.to_json()


def switch(
    repo: Repo,
    target: str | int,
    session: str | None = None,
    *,
    on_conflict: Policy = SKIP,
    dry_run: bool = False,
    force: bool = False,
    git: Git = NO_GIT,
    expect_head: str | None = None,
) -> RewindResult:
    """Make the workspace what it was right after ``target`` (a number from ``log``, or
    an id of any turn of the session's DAG: then ``session`` may be None). ``expect_head``:
    as for :func:`rewind`."""
    check_choices(BOTH, on_conflict)
    with repo.lock() as w:
        refuse_unfinished(repo)
        with repo.read() as v:
            refuse_moved(v, session, target, expect_head)
            turn = resolve_turn(v, target, session)
        if turn.kind not in BRANCH_KINDS:
            raise BadInput(
                f"turn {turn.id} is a {turn.kind} turn; only the turns of a "
                "conversation can be switched to",
                turn=turn.id,
            )
        _end_open_turn(w, turn.session, force, dry_run)
        with repo.read() as v:
            operation = _plan_switch(repo, v, turn, on_conflict, git)
        return _run(w, operation, dry_run)


def undo(
    repo: Repo,
    rewind_id: str | None,
    session: str | None = None,
    *,
    on_conflict: Policy = SKIP,
    dry_run: bool = False,
    homes: Mapping[str, str] | None = None,
    mode: Mode = BOTH,
    inside: bool = False,
    git: Git = NO_GIT,
) -> RewindResult:
    """Take back a rewind or switch: the given one, else the newest of ``session``, else
    the newest in the store, whatever its session. A conversation the rewind changed goes
    back too (``homes``: as for :func:`rewind`), unless ``mode`` is ``code``: the files
    alone, for when the agent has written to its chat since.

    ``inside``: the agent asks from inside its open turn of ``session``; without an id, the
    newest operation made from inside one of its turns goes back. Its writes are recorded
    as changes of the open turn, as for :func:`rewind`."""
    check_choices(mode, on_conflict)
    if mode == CONVERSATION:
        raise BadInput("an undo takes --mode both or code: the files always go back")
    with repo.lock() as w:
        refuse_unfinished(repo)
        with repo.read() as v:
            if inside:
                if session is None:
                    raise BadInput("an undo from inside a turn needs its session")
                record = _find_undoable(v, rewind_id, session, made_inside=rewind_id is None)
                if record.session != session or record.op is None or record.op.within is None:
                    raise BadInput(
                        f"{record.id} was not made from inside a turn of session "
                        f"{session!r}: take it back with `snapstore undo` after the agent "
                        "exits",
                        turn=record.id,
                    )
                within: Turn | None = _inside(repo, v, session)
            else:
                record = _find_undoable(v, rewind_id, session)
                within = None
                open_turn = v.open_turn(record.session)
                if open_turn is not None:
                    raise RunActive(
                        f"turn {open_turn.id} of session {record.session!r} is still open",
                        turn=open_turn.id,
                        session=record.session,
                    )
            operation = _plan_undo(repo, v, record, on_conflict, within, git)
        assert record.op is not None
        edit = conversation.from_record(record.op.conversation)
        if edit is not None and edit.status == "rewound" and mode != CODE:
            back = conversation.plan_undo(edit, homes)
            operation.op = operation.op._replace(conversation=back._asdict())
            operation.result.conversation = back.to_json()
        return _run(w, operation, dry_run)


def finish(
    repo: Repo, session: str, *, on_conflict: Policy = SKIP, dry_run: bool = False
) -> RewindResult:
    """Retry what the session's last operation left (its conflicts and failed writes) with
    ``on_conflict``: the same steps, folded from what the paths hold now. The head stays;
    it is an operation of its own, which undo takes back, and which may leave paths too."""
    check_choices(BOTH, on_conflict)
    with repo.lock() as w:
        refuse_unfinished(repo)
        with repo.read() as v:
            left = leftover(v, session)
            if left is None:
                raise NotFound(f"session {session!r} has nothing left to finish", session=session)
            operation = _plan_finish(repo, v, left, on_conflict, on_conflict == THEIRS)
        return _run(w, operation, dry_run)


def _plan_finish(
    repo: Repo, v: View, left: Turn, on_conflict: Policy, marked_too: bool = True
) -> Operation:
    """Retry the paths ``left`` left in conflict or failed to write, folded from now; those
    it wrote conflict markers into only if ``marked_too`` (a user's finish: only to take
    theirs, as merging them again would nest markers in markers; a redo: as it was)."""
    assert left.op is not None
    session = left.session
    marked = set(left.op.result.get("marked", ()))
    paths = [e["path"] for e in left.op.result["conflicts"] + left.op.result["errors"]]
    if not marked_too and marked:
        paths = [p for p in paths if p not in marked]
        if not paths:
            names = ", ".join(sorted(marked))
            raise BadInput(
                f"the conflict markers are in {names}: edit them (`--on-conflict theirs` "
                "takes the other side instead)",
                session=session,
            )
    root = left
    while root.op is not None and root.op.finishes is not None:
        root = v.turn(root.op.finishes)
    head = v.head(session)
    op = RewindOp(
        session,
        left.id,
        CODE,
        action=FINISH,
        prev_head=head,
        new_head=head,
        paths=tuple(paths),
        prev_rewind=left.id,
        finishes=left.id,
    )
    result = RewindResult(session, left.id, "", [], new_head=head)
    steps = {p: s for p, s in _op_steps(v, root).items() if p in paths}
    return Operation(op, result, _plans(repo, v, op, steps, on_conflict))


def redo(
    repo: Repo,
    undo_id: str | None,
    session: str | None = None,
    *,
    on_conflict: Policy = SKIP,
    dry_run: bool = False,
    homes: Mapping[str, str] | None = None,
    git: Git = NO_GIT,
) -> RewindResult:
    """Take back an undo (the given one, else the newest of ``session``, else the newest
    in the store) by doing what it undid again: the same rewind, switch or finish, planned
    against the files as they are now. Refused once the head moved since the undo: the
    redo would rewrite a branch that went on."""
    check_choices(BOTH, on_conflict)
    with repo.lock() as w:
        refuse_unfinished(repo)
        with repo.read() as v:
            record = _find_redoable(v, undo_id, session)
        _end_open_turn(w, record.session, False, dry_run)
        with repo.read() as v:
            operation = _plan_redo(repo, v, record, on_conflict, homes, git)
        return _run(w, operation, dry_run)


def _find_redoable(v: View, ref: str | None, session: str | None) -> Turn:
    if ref is not None:
        turn = resolve_operation(v, ref)
        if turn.op is None or turn.op.action != UNDO:
            raise BadInput(f"{turn.id} is not an undo", turn=turn.id)
        if turn.op.redone_by is not None:
            raise BadInput(
                f"undo {turn.id} was already redone by {turn.op.redone_by}", turn=turn.id
            )
        if not redoable(turn):
            raise BadInput(f"undo {turn.id} was never applied", turn=turn.id)
        return turn
    if session is not None:
        v.require_session(session)
    last = last_redoable(v, session)
    if last is None:
        raise NotFound("nothing to redo", session=session)
    return last


def _plan_redo(
    repo: Repo,
    v: View,
    record: Turn,
    on_conflict: Policy,
    homes: Mapping[str, str] | None,
    git: Git,
) -> Operation:
    """Plan again what the undo ``record`` took back, recorded as redoing it."""
    undone = record.op
    assert undone is not None and undone.undoes is not None
    session, head = record.session, v.head(record.session)
    if undone.on_branch or undone.within is not None:
        where = "a turn of its own" if undone.on_branch else f"changes of turn {undone.within}"
        raise BadInput(
            f"undo {record.id} was recorded as {where}; "
            "take it back with `snapstore rewind` instead",
            turn=record.id,
        )
    if head != undone.new_head:
        raise BadInput(
            f"cannot redo {record.id}: session {session!r} moved on since that undo "
            f"(its head is {head or 'empty'}, the undo left {undone.new_head or 'empty'}); "
            "redoing it would rewrite that history, rewind or switch instead",
            turn=record.id,
            session=session,
        )
    done = _kept(v, record, undone.undoes).op
    assert done is not None
    if not done.git:  # it left the repository alone (--no-git): so does doing it again
        git = NO_GIT
    if done.action == SWITCH:
        operation = _plan_switch(repo, v, _kept(v, record, done.target), on_conflict, git)
    elif done.action == FINISH:
        operation = _plan_finish(repo, v, _kept(v, record, done.finishes), on_conflict)
    else:
        turn = _kept(v, record, done.target)
        rels = list(done.paths) or None
        operation = _plan_rewind(repo, v, turn, session, done.mode, on_conflict, rels, None, git)
        edit = conversation.from_record(done.conversation)
        if edit is not None and edit.status == "rewound":
            _plan_conversation(operation, turn, homes, turn.id)
    operation.op = operation.op._replace(redoes=record.id)
    return operation


def _kept(v: View, record: Turn, turn_id: str | None) -> Turn:
    """A turn or operation a redo needs, unless gc dropped it since the undo."""
    turn = None if turn_id is None else v.find_turn(turn_id)
    if turn is None:
        raise NotFound(
            f"undo {record.id} can no longer be redone: gc dropped {turn_id or 'its target'}",
            turn=record.id,
        )
    return turn


def _op_steps(v: View, record: Turn) -> dict[str, list[Step]]:
    """The steps of a rewind, switch or undo, each path's in fold order."""
    op = record.op
    assert op is not None
    if op.action == UNDO:
        assert op.undoes is not None
        return steps_by_path(v.changes(op.undoes))
    if op.action == SWITCH:
        back = [v.turn(t) for t in op.reverted]
        forward = [v.turn(t) for t in op.forward]
        return steps_by_path(_changes(v, reversed(back)), _changes(v, forward))
    turns = ancestors(v, op.prev_head)  # a rewind: its target is on this branch
    ids: list[str | None] = [t.id for t in turns]
    reverted = turns[: ids.index(op.target) + 1]
    return steps_by_path(_changes(v, reversed(reverted), list(op.paths) or None))


def _run(w: Locked, operation: Operation, dry_run: bool) -> RewindResult:
    try:
        if dry_run:
            operation.result.dry_run = True
            return operation.result
        return execute(w, operation)
    finally:
        release(operation.plans)


def _end_open_turn(w: Locked, session: str, force: bool, dry_run: bool) -> None:
    """Refuse while the session has an open turn, or with ``force``, end it first."""
    with w.repo.read() as v:
        open_turn = v.open_turn(session)
    if open_turn is None:
        return
    if not force:
        raise RunActive(
            f"turn {open_turn.id} of session {session!r} is still open",
            turn=open_turn.id,
            session=session,
        )
    if not dry_run:
        finish_open_turn(w, session)


def _busy(v: View, session: str) -> dict[str, str]:
    """Paths other sessions are writing right now (captured, their write not recorded
    yet): an operation leaves them alone, so that the other session's record stays true."""
    return {
        path: f"session {turn.session!r} is writing it right now (turn {turn.id}); "
        "left alone, try again once its tool call ends"
        for path, turn in writing(v).items()
        if turn.session != session
    }


def _plans(
    repo: Repo, v: View, op: RewindOp, steps: dict[str, list[Step]], on_conflict: Policy
) -> list[PathPlan]:
    """Each path's plan; paths another session is writing right now are left alone, and so,
    for a move from inside a turn, are those a tool call of that turn is writing."""
    if op.mode == CONVERSATION:
        return []
    busy = _busy(v, op.session)
    if op.within is not None:
        for path in v.turn(op.within).open_changes:
            busy[path] = (
                "a tool call of this turn is writing it right now; left alone, try again "
                "once that call ends"
            )
    plans: list[PathPlan] = []
    try:
        with repo.ws.holding_folders():  # sorted paths: each folder is opened once
            for path, path_steps in steps.items():
                plans.append(
                    plan_path(
                        repo.ws, v, path, path_steps, on_conflict, repo.store_dir, busy.get(path)
                    )
                )
            refuse_clashes(repo.ws, plans)
    except BaseException:
        release(plans)
        raise
    return plans


def _changes(v: View, turns: Iterable[Turn], paths: list[str] | None = None) -> list[Change]:
    """The changes of ``turns``, in the order given, limited to ``paths`` when given."""
    return [c for t in turns for c in v.changes(t.id) if paths is None or c.path in paths]


def _plan_rewind(
    repo: Repo,
    v: View,
    turn: Turn,
    session: str,
    mode: Mode,
    on_conflict: Policy,
    rels: list[str] | None,
    within: Turn | None,
    git: Git,
) -> Operation:
    on_branch = branch(v, session)
    ids = [t.id for t in on_branch]
    if turn.kind not in BRANCH_KINDS or turn.id not in ids:
        raise NotOnBranch(
            f"turn {turn.id} is not on the current branch of session "
            f"{session!r} (it is {turn.state})",
            turn=turn.id,
            session=session,
            state=turn.state,
        )
    reverted = on_branch[: ids.index(turn.id) + 1]
    head = ids[0]
    new_head = head if mode == CODE else turn.parent
    if rels is not None:
        changed = {c.path for c in _changes(v, reverted)}
        refuse_unchanged(turn, set(rels), changed, f"turn {turn.id} and the turns after it")
    op = RewindOp(
        session,
        turn.id,
        mode,
        prev_head=head,
        new_head=new_head,
        reverted=() if mode == CODE else tuple(t.id for t in reverted),
        paths=tuple(rels or ()),
        prev_rewind=v.require_session(session).last_rewind,
        within=None if within is None else within.id,
    )
    result = RewindResult(
        session, turn.id, turn.prompt, [t.id for t in reverted], new_head=new_head
    )
    steps = steps_by_path(_changes(v, reversed(reverted), rels))
    operation = Operation(op, result, _plans(repo, v, op, steps, on_conflict))
    if rels is None and mode != CONVERSATION:
        operation.remove_folders = _made(reverted)
        result.warnings += _uncaptured(reverted)
        _plan_git(repo, v, operation, git, gitplan.steps(v, reverted), reverted)
    return operation


def _plan_git(
    repo: Repo,
    v: View,
    operation: Operation,
    git: Git,
    steps: gitplan.Steps,
    turns: Iterable[Turn],
) -> None:
    """Add the repository's half to a planned operation (snapstore.ops.gitplan)."""
    if git.enabled:
        operation.git, operation.git_held = gitplan.plan(
            repo, v, git.git_dir, steps, gitplan.notes(turns)
        )
        operation.result.git = gitplan.result(operation.git, None)


def _plan_switch(repo: Repo, v: View, turn: Turn, on_conflict: Policy, git: Git) -> Operation:
    session = turn.session
    here = branch(v, session)  # the head first
    there = ancestors(v, turn.id)  # the target first
    here_ids, there_ids = [t.id for t in here], [t.id for t in there]
    fork = next((tid for tid in there_ids if tid in set(here_ids)), None)
    back = here[: here_ids.index(fork) if fork else len(here)]  # newest first
    forward = there[: there_ids.index(fork) if fork else len(there)][::-1]  # oldest first
    op = RewindOp(
        session,
        turn.id,
        BOTH,
        action=SWITCH,
        prev_head=here_ids[0] if here else None,
        new_head=turn.id,
        reverted=tuple(t.id for t in back),
        forward=tuple(t.id for t in forward),
        prev_rewind=v.require_session(session).last_rewind,
    )
    result = RewindResult(session, turn.id, "", list(op.reverted), new_head=turn.id)
    steps = steps_by_path(_changes(v, reversed(back)), _changes(v, forward))
    operation = Operation(op, result, _plans(repo, v, op, steps, on_conflict))
    operation.remove_folders, operation.make_folders = _made(back), _made(forward)
    result.warnings += _uncaptured([*back, *forward])
    _plan_git(repo, v, operation, git, gitplan.steps(v, back, forward), [*back, *forward])
    return operation


def _made(turns: Iterable[Turn]) -> list[str]:
    """The folders that came during ``turns`` (scan mode)."""
    return [folder for turn in turns for folder in turn.folders]


def _uncaptured(turns: Iterable[Turn]) -> list[dict[str, str]]:
    """What ``turns`` changed that was never captured (scan mode): it stays as it is."""
    return [
        {"path": path, "reason": f"could not be restored: it was never captured ({reason})"}
        for turn in turns
        for path, reason in turn.skipped
    ]


def _find_undoable(
    v: View, ref: str | None, session: str | None, made_inside: bool = False
) -> Turn:
    """The rewind or switch an undo takes back: ``ref``, else the newest of ``session`` (or
    of the store); ``made_inside``: the newest made from inside one of the session's turns."""
    if ref is not None:
        turn = resolve_turn(v, ref, session)
        if turn.kind != REWIND or turn.op is None or turn.op.undoes is not None:
            raise BadInput(f"{turn.id} is not a rewind or a switch", turn=turn.id)
        if turn.op.undone_by is not None:
            raise BadInput(
                f"rewind {turn.id} was already undone by {turn.op.undone_by}", turn=turn.id
            )
        assert undoable(turn), turn
        return turn
    if session is not None:
        v.require_session(session)
    last = last_undoable(v, session, made_inside)
    if last is None:
        where = f"session {session!r}" if session is not None else "the store"
        what = "rewind made from inside its turns" if made_inside else "rewind or switch"
        raise NotFound(f"{where} has no {what} to undo", session=session)
    return last


def _plan_undo(
    repo: Repo, v: View, record: Turn, on_conflict: Policy, within: Turn | None, git: Git
) -> Operation:
    """An undo of ``record``; ``within``: made from inside that open turn (files only, and
    recorded as its changes). Outside, the undo of a move made from inside a turn is a turn of
    its own on top: that turn holds the move's writes, so they are no longer the head's to
    drop."""
    done = record.op
    assert done is not None
    session, head = record.session, v.head(record.session)
    prev_rewind = v.require_session(session).last_rewind
    if within is not None:
        op = RewindOp(
            session,
            record.id,
            CODE,
            action=UNDO,
            prev_head=head,
            new_head=head,
            undoes=record.id,
            prev_rewind=prev_rewind,
            within=within.id,
        )
    elif done.mode == CODE and done.within is None:  # the head never moved: the files go back
        op = RewindOp(
            session,
            record.id,
            CODE,
            action=UNDO,
            prev_head=head,
            new_head=head,
            undoes=record.id,
            prev_rewind=prev_rewind,
        )
    elif head == done.new_head and done.within is None:  # nothing since: the head goes back
        op = RewindOp(
            session,
            record.id,
            done.mode,
            action=UNDO,
            prev_head=head,
            new_head=done.prev_head,
            reverted=done.forward,
            forward=done.reverted,
            undoes=record.id,
            prev_rewind=prev_rewind,
        )
    else:  # turns came since: a turn of its own on top, which can itself be rewound
        op = RewindOp(
            session,
            record.id,
            BOTH,
            action=UNDO,
            prev_head=head,
            new_head=None,
            undoes=record.id,
            prev_rewind=prev_rewind,
            on_branch=True,
        )
    result = RewindResult(session, record.id, "", list(done.reverted), new_head=op.new_head)
    steps = steps_by_path(v.changes(record.id))
    operation = Operation(op, result, _plans(repo, v, op, steps, on_conflict))
    if op.mode != CONVERSATION:  # the folders it removed come back, those it made go
        operation.make_folders = list(done.result.get("folders_removed", ()))
        operation.remove_folders = list(done.result.get("folders_created", ()))
        if done.git:
            _plan_git(repo, v, operation, git, gitplan.undo_steps(record), ())
    return operation
