"""What a door asks the operation layer to do: one request record per move between turns.

Every front end (the Click commands, the fast path, the picker, the page's socket, ``snapstore
mcp``) builds a :class:`Move` from its own input and hands it to ``operations.moves``; none
calls the Store's moves itself. So a request means the same through every door, and its
checks (which options go together) are made here, once.
"""

from __future__ import annotations

import os
from typing import Any, Literal, NamedTuple, get_args

from snapstore import BadInput
from snapstore.core.records import BOTH, CODE, MODES, POLICIES, SKIP, Mode, Policy

#: The moves: back (rewind), anywhere (switch), taking one back (undo), doing it again (redo),
#: retrying what one left (finish), and finishing one a crash cut short (resume).
Action = Literal["rewind", "switch", "undo", "redo", "finish", "resume"]


class Move(NamedTuple):
    """One move, as a door read it from its user.

    ``target`` is a turn (a number from ``log``, or an id or a unique prefix of one) for a
    rewind or a switch, an operation id (or a prefix) for an undo or a redo, and None for the
    rest (an undo or redo of the newest). ``session`` is the one the user named, or None: the
    layer then chooses as ``log`` does (the turn's own session for a turn id). ``paths`` are
    absolute. ``shown`` is the turn as the user saw it (the picker's number), for the lines
    that name it. ``inside``: the agent asks from inside its own open turn of ``session``
    (``snapstore mcp``): a rewind or an undo of files only, recorded as changes of that turn.
    ``git`` false (``--no-git``) leaves the repository's HEAD, refs and index where they are.
    ``expect_head`` is the session's head that a turn number was counted from
    when the user saw it (the picker's list, a confirmation's plan); without it, the head as
    the move starts. A turn number is refused once the head moved (``HeadMoved``)."""

    action: Action
    target: str | None = None
    session: str | None = None
    mode: Mode = BOTH
    on_conflict: Policy = SKIP
    paths: tuple[str, ...] = ()
    dry_run: bool = False
    force: bool = False
    shown: str | None = None
    inside: bool = False
    git: bool = True
    expect_head: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The move as a JSON object (what the command line sends ``snapstore serve``)."""
        return {**self._asdict(), "paths": list(self.paths)}

    @classmethod
    def from_json(cls, data: Any) -> Move:
        """The move :meth:`to_json` gave, each field checked (BadInput names the first that is
        not of its kind): it came over a socket."""
        if not isinstance(data, dict) or set(data) != set(cls._fields):
            raise BadInput("a move names exactly the fields " + ", ".join(cls._fields))
        words = {"action": get_args(Action), "mode": MODES, "on_conflict": POLICIES}
        for name, allowed in words.items():
            if data[name] not in allowed:
                raise BadInput(f"a move's {name} is one of {', '.join(allowed)}")
        for name in ("target", "session", "shown", "expect_head"):
            if data[name] is not None and not isinstance(data[name], str):
                raise BadInput(f"a move's {name} is a string or null")
        for name in ("dry_run", "force", "inside", "git"):
            if not isinstance(data[name], bool):
                raise BadInput(f"a move's {name} is true or false")
        paths = data["paths"]
        if not isinstance(paths, list) or not all(
            isinstance(p, str) and os.path.isabs(p) for p in paths
        ):
            raise BadInput("a move's paths are absolute paths")
        return cls(**{**data, "paths": tuple(paths)})


def check(move: Move) -> None:
    """Refuse what no door may ask (BadInput, exit 2): options that do not go with the move."""
    action = move.action
    if action == "resume":
        if move.target or move.paths or move.mode != BOTH or move.dry_run or move.force:
            raise BadInput("--resume takes no TURN, --path, --mode, --dry-run or --force")
        return
    if action == "finish" and (move.target is not None or move.paths or move.mode != BOTH):
        raise BadInput("--finish takes no TURN, --path or --mode")
    if action in ("rewind", "switch") and not (move.target or "").strip():
        raise BadInput(f"{action} needs a turn: a number from `snapstore log`, or a turn id")
    if move.paths and action != "rewind":
        raise BadInput(f"--path goes with rewind, not {action}")
    if move.mode != BOTH and action not in ("rewind", "undo"):
        raise BadInput(f"--mode goes with rewind and undo, not {action}")
    if move.force and action not in ("rewind", "switch"):
        raise BadInput(f"--force goes with rewind and switch, not {action}")
    if move.inside and (
        action not in ("rewind", "undo") or move.mode != CODE or not move.session or move.force
    ):
        raise BadInput(
            "a move from inside a turn is a rewind or an undo of files only (mode code), "
            "of a named session, without --force"
        )
