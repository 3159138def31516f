"""The timeline page's WebSocket API: one request frame in, one reply frame out (docs/api.md).

A request is a JSON object ``{"action": A, "session_id": S, ...}``; its reply is
``{"type": T, "data": {"session_id": S, ...}}``. Every reply carries the session it is
about, errors included, so that a client with several sessions in flight matches
replies on it; a ``request_id`` the client sent comes back in ``data`` as well. This
module only turns frames into requests and results into JSON: a move (rewind, switch, undo,
redo, finish) goes through the operation layer (``snapstore_cli.operations``), as from
every other door, with the context the server resolved when it started (each agent's home, for the
conversation and its running check); the server (``server``) owns the sockets. Nothing a
frame says names a file: turns, sessions and operations are named, and the library decides
which files they touched.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Literal, TypeVar

from snapstore import SnapstoreError, Store
from snapstore.adapters import agent_of
from snapstore.core.errors import UnknownOperation, UnknownSession, UnknownTurn
from snapstore.core.records import BOTH, CODE, MODES, POLICIES
from snapstore.ops.gitshow import operation_lines, way_back
from snapstore.ops.history import RewindPoint

from ...operations.context import Context
from ...operations.impact import impact, taken_back
from ...operations.moves import run
from ...operations.outcome import Outcome
from ...operations.requests import Move
from ...output.plain import iso
from . import sentences

#: Lines of one file's diff sent to the page; a longer diff is cut and says so.
MAX_DIFF_LINES = 2000


C = TypeVar("C", bound=str)
Frame = dict[str, Any]  # a request, as parsed
Reply = tuple[str, dict]  # its reply's type and data


class FrameError(Exception):
    """A request refused before it reached the store: a stable ``code``, one line, and the
    request as far as it could be read (its session and request id go back in the reply)."""

    def __init__(self, code: str, message: str, request: dict[str, Any] | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.request = request or {}


def reply(kind: str, session: str | None, data: dict[str, Any], request: dict[str, Any]) -> str:
    """A reply frame, as text: ``data`` with the session and the client's request id (one
    that :func:`parse` accepted: a short string or a number)."""
    body = {"session_id": session, **data}
    if _request_id(request) is not None:
        body["request_id"] = request["request_id"]
    return json.dumps({"type": kind, "data": body})


#: The longest request id echoed back (a client's own name for its request).
MAX_REQUEST_ID = 200


def _request_id(request: dict[str, Any]) -> str | int | None:
    value = request.get("request_id")
    if isinstance(value, str) and len(value) <= MAX_REQUEST_ID:
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return None


def failure(exc: BaseException, request: dict[str, Any]) -> str:
    """The error frame for a failure while answering ``request``: the library's code (or
    ``internal``, for a failure of snapstore's own), and a sentence that says what to do."""
    code = CODES.get(type(exc), exc.code) if isinstance(exc, SnapstoreError) else "internal"
    return error(code, sentences.error_message(exc), request)


def error(code: str, message: str, request: dict[str, Any]) -> str:
    """An error frame for ``request`` (whatever could be read of it)."""
    session = request.get("session_id")
    action = request.get("action")
    return reply(
        "error",
        session if isinstance(session, str) else None,
        {"action": action if isinstance(action, str) else None, "code": code, "message": message},
        request,
    )


def parse(text: str | bytes) -> dict[str, Any]:
    """A request frame's JSON object; anything else is a ``bad_json`` or ``bad_frame``."""
    try:
        frame = json.loads(text)
    except (ValueError, UnicodeDecodeError, RecursionError):  # nested past Python's stack
        raise FrameError("bad_json", "the frame is not JSON") from None
    if not isinstance(frame, dict):
        raise FrameError("bad_frame", "a frame is a JSON object")
    if "request_id" in frame and _request_id(frame) is None:
        raise FrameError(
            "bad_frame",
            f"request_id must be a number or a string of at most {MAX_REQUEST_ID} characters",
            {k: frame[k] for k in ("session_id", "action") if k in frame},
        )
    if not isinstance(frame.get("action"), str):
        raise FrameError("bad_frame", "the frame has no action", frame)
    return frame


def answer(store: Store, ctx: Context, frame: dict[str, Any]) -> str:
    """The reply to one parsed request frame: its result, or an error frame."""
    action = frame["action"]
    handler = ACTIONS.get(action)
    try:
        if handler is None:
            raise FrameError("unknown_action", f"unknown action {action!r}")
        session = _session(store, frame, required=action not in ("sessions", "ops"))
        kind, data = handler(store, ctx, session, frame)
    except FrameError as exc:
        return error(exc.code, exc.message, frame)
    except SnapstoreError as exc:
        return failure(exc, frame)
    return reply(kind, session, data, frame)


#: The socket's codes for what the library calls ``not_found`` (docs/api.md).
CODES: dict[type[SnapstoreError], str] = {
    UnknownTurn: "unknown_turn",
    UnknownOperation: "unknown_operation",
    UnknownSession: "unknown_session",
}


def _session(store: Store, frame: dict[str, Any], required: bool) -> str | None:
    session = frame.get("session_id")
    if session is None and not required:
        return None
    if not isinstance(session, str) or not session:
        raise FrameError("bad_frame", "session_id must be a session's name")
    if not store.has_session(session):
        raise FrameError("unknown_session", f"no session {session!r} in this store")
    return session


def _choice(frame: dict[str, Any], key: str, choices: tuple[C, ...], default: C) -> C:
    value = frame.get(key, default)
    for choice in choices:
        if value == choice:
            return choice
    raise FrameError("bad_frame", f"{key} must be one of {', '.join(choices)}")


def _flag(frame: dict[str, Any], key: str) -> bool:
    value = frame.get(key, False)
    if not isinstance(value, bool):
        raise FrameError("bad_frame", f"{key} must be true or false")
    return value


def _turn_ref(frame: dict[str, Any]) -> str:
    """The ``turn`` a frame names: a number from the head (1 is the newest) or an id."""
    turn = frame.get("turn")
    if isinstance(turn, bool) or not isinstance(turn, (int, str)) or str(turn).strip() == "":
        raise FrameError("bad_frame", "turn must be a number or a turn id")
    return str(turn)


def _own_turn(store: Store, frame: dict[str, Any], session: str) -> str:
    """The id of the turn a frame names, refused unless it is ``session``'s."""
    turn = store.resolve_turn(_turn_ref(frame), session)
    if turn.session != session:
        raise FrameError("unknown_turn", f"turn {turn.id} is not of session {session!r}")
    return turn.id


def point_json(point: RewindPoint, branches: int = 0) -> dict[str, Any]:
    turn = point.turn
    return {
        "n": point.n,
        "id": turn.id,
        "message_id": turn.message_id,
        "prompt": turn.prompt,
        "created": iso(turn.created),
        "time": turn.created,
        "state": turn.state,
        "parent": turn.parent,
        "files": [
            {"path": f.path, "status": f.status, "added": f.added, "removed": f.removed}
            for f in point.files
        ],
        "added": point.added,
        "removed": point.removed,
        "branches": branches,
        # what the turn did to the repository, in the words of `show` and `log`
        "git": point.git,
        "git_note": turn.git_note or None,
    }


def sessions(
    store: Store, ctx: Context, _session: str | None, _frame: dict[str, Any]
) -> tuple[str, dict]:
    """Every session: its agent, turns, last activity, head and open turn."""
    listed = [
        {
            "session_id": s.name,
            "agent": agent_of(s.name),
            "turns": s.all_turns,
            "branch_turns": s.turns,
            "created": iso(s.created),
            "last_activity": iso(s.last_activity),
            "time": s.last_activity,
            "head": s.head,
            "open_turn": s.open_turn,
            "running": s.running,
        }
        for s in store.sessions(homes=ctx.homes)
    ]
    return "sessions", {"sessions": listed}


def rewind_list(
    store: Store, _ctx: Context, session: str | None, _frame: dict[str, Any]
) -> tuple[str, dict]:
    """The session's rewind points on its current branch, newest first."""
    assert session is not None
    return "rewind_points", {
        "points": [point_json(p) for p in store.rewind_points(session)],
    }


def load_session(
    store: Store, _ctx: Context, session: str | None, _frame: dict[str, Any]
) -> tuple[str, dict]:
    """The session's turns on its current branch (newest first), and those rewound."""
    assert session is not None
    points = store.rewind_points(session, all_branches=True)
    rewound = [p for p in points if p.n is None]
    forks: dict[str | None, int] = {}
    for p in rewound:
        forks[p.turn.parent] = forks.get(p.turn.parent, 0) + 1
    with store.repo.read() as v:
        head = v.head(session)
        open_turn = v.open_turn(session)
    return "session", {
        "agent": agent_of(session),
        "head": head,
        "open_turn": None if open_turn is None else open_turn.id,
        "turns": [point_json(p, forks.get(p.turn.id, 0)) for p in points if p.n is not None],
        "rewound": [point_json(p, forks.get(p.turn.id, 0)) for p in rewound],
    }


def diff(
    store: Store, _ctx: Context, session: str | None, frame: dict[str, Any]
) -> tuple[str, dict]:
    """One turn's diff, file by file (each cut at :data:`MAX_DIFF_LINES`)."""
    assert session is not None
    turn, files = store.diffs(_own_turn(store, frame, session), session)
    return "diff", {
        "turn": turn.id,
        "prompt": turn.prompt,
        "files": [
            {
                "path": stat.path,
                "status": stat.status,
                "added": stat.added,
                "removed": stat.removed,
                "binary": stat.binary,
                "lines": lines[:MAX_DIFF_LINES],
                "truncated": len(lines) > MAX_DIFF_LINES,
            }
            for stat, lines in files
        ],
        # files the turn changed that were never captured (over the capture limit, a
        # scan's unreadable ones): no rewind can restore them, and the page says so
        "uncaptured": [{"path": path, "reason": reason} for path, reason in turn.skipped],
    }


def ops(
    store: Store, _ctx: Context, session: str | None, _frame: dict[str, Any]
) -> tuple[str, dict]:
    """The rewinds, switches and undos, newest first (of ``session``, or of every session)."""
    listed = [
        {
            "id": op.id,
            "action": op.action,
            "session_id": op.session,
            "target": op.target,
            "target_n": op.target_n,
            "new_head": op.new_head,
            "files": op.files,
            "errors": len(op.errors),
            "conflicts": len(op.conflicts),
            "time": iso(op.time),
            "status": op.status,
            "undone_by": op.undone_by,
            "git_lines": _lines(operation_lines(op.git, way_back(op.action, op.new_head == op.id))),
        }
        for op in store.operations(session)
    ]
    return "ops", {"ops": listed}


def result_json(outcome: Outcome) -> dict[str, Any]:
    """A move's result frame data (docs/api.md, ``rewind_result``): the outcome's JSON, as
    every door gives it, and the names the page's protocol began with; each path left in
    ``errors`` also says, in a sentence, what happened to it."""
    data = outcome.to_json()
    result = outcome.result
    assert result is not None
    data.update(
        operation_id=result.undo_id,
        restored_paths=sorted(result.restored + result.merged + result.deleted),
        new_head_id=result.new_head,
        user_text=outcome.prompt or result.user_text,
        git_lines=_lines(outcome.git_lines()),
    )
    for item in data["errors"]:
        marked = item["path"] in result.marked
        item["message"] = sentences.left(item["path"], item["kind"], item["reason"], marked)
    for key in ("session", "undo_id", "new_head"):
        data.pop(key)
    return data


def _lines(lines: list[tuple[str, str]]) -> list[dict[str, str]]:
    """What an operation did (or would do) to the repository, as the page shows it: the
    command line's lines, each with its kind (``git``, ``conflict``, ``note``)."""
    return [{"kind": kind, "text": text} for kind, text in lines]


def _move(store: Store, ctx: Context, move: Move) -> dict[str, Any]:
    return result_json(run(store, ctx, move))


def _policed(
    store: Store,
    ctx: Context,
    action: Literal["switch", "redo", "finish"],
    ref: str | None,
    session: str | None,
    frame: dict[str, Any],
) -> dict[str, Any]:
    """A move whose frame gives only a conflict policy and ``dry_run`` beside its target."""
    move = Move(
        action,
        ref,
        session,
        on_conflict=_choice(frame, "on_conflict", POLICIES, "skip"),
        dry_run=_flag(frame, "dry_run"),
    )
    return _move(store, ctx, move)


def _operation_ref(frame: dict[str, Any], what: str) -> str | None:
    """The frame's ``operation_id``: absent (the newest), or a non-empty string."""
    operation = frame.get("operation_id")
    if operation is not None and (not isinstance(operation, str) or not operation.strip()):
        raise FrameError("bad_frame", f"operation_id must be {what}")
    return operation


def rewind(
    store: Store, ctx: Context, session: str | None, frame: dict[str, Any]
) -> tuple[str, dict]:
    """Take back a turn (by the agent's message id, or a number or id) and what followed."""
    message = frame.get("target_msg_id")
    if message is not None:
        if not isinstance(message, str):
            raise FrameError("bad_frame", "target_msg_id must be a string")
        assert session is not None
        found = [p.turn.id for p in store.rewind_points(session) if p.turn.message_id == message]
        if not found:
            raise FrameError(
                "unknown_turn", f"no turn of message {message!r} on the current branch"
            )
        target = found[0]
    else:
        target = _turn_ref(frame)
    move = Move(
        "rewind",
        target,
        session,
        mode=_choice(frame, "mode", MODES, "both"),
        on_conflict=_choice(frame, "on_conflict", POLICIES, "skip"),
        dry_run=_flag(frame, "dry_run"),
    )
    data = _move(store, ctx, move)
    if move.dry_run:  # what the page's confirmation shows, as the picker's does
        assert session is not None
        turn = store.resolve_turn(target, session).id
        data["summary"] = impact(store, taken_back(store.rewind_points(session), turn)).to_json()
    return "rewind_result", data


def switch(
    store: Store, ctx: Context, session: str | None, frame: dict[str, Any]
) -> tuple[str, dict]:
    """Make the workspace what it was right after a turn of the session (any branch)."""
    return "switch_result", _policed(store, ctx, "switch", _turn_ref(frame), session, frame)


def undo(
    store: Store, ctx: Context, session: str | None, frame: dict[str, Any]
) -> tuple[str, dict]:
    """Take back the session's newest rewind or switch, or the operation named."""
    move = Move(
        "undo",
        _operation_ref(frame, "an operation's id"),
        session,
        mode=_choice(frame, "mode", (BOTH, CODE), BOTH),
        on_conflict=_choice(frame, "on_conflict", POLICIES, "skip"),
        dry_run=_flag(frame, "dry_run"),
    )
    return "undo_result", _move(store, ctx, move)


def redo(
    store: Store, ctx: Context, session: str | None, frame: dict[str, Any]
) -> tuple[str, dict]:
    """Take back the session's newest undo not redone yet, or the undo named: do its
    rewind, switch or finish again (``snapstore redo``)."""
    return "redo_result", _policed(
        store, ctx, "redo", _operation_ref(frame, "an undo's id"), session, frame
    )


def finish(
    store: Store, ctx: Context, session: str | None, frame: dict[str, Any]
) -> tuple[str, dict]:
    """Retry, with ``on_conflict``, the paths the session's last move left in conflict or
    failed to write (``snapstore rewind --finish``); the head stays."""
    return "finish_result", _policed(store, ctx, "finish", None, session, frame)


Handler = Callable[[Store, Context, "str | None", dict[str, Any]], "tuple[str, dict]"]

#: Each action and its handler; the read-only ones may be subscribed to (``LIVE``).
ACTIONS: dict[str, Handler] = {
    "sessions": sessions,
    "load_session": load_session,
    "rewind_list": rewind_list,
    "ops": ops,
    "diff": diff,
    "rewind": rewind,
    "switch": switch,
    "undo": undo,
    "redo": redo,
    "finish": finish,
}
#: Requests the server answers again, and pushes when the answer changes.
LIVE = ("sessions", "load_session", "rewind_list", "ops")
