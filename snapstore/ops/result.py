"""What a rewind, switch or undo did: the result record, and the actions of one path's plan.

Apart from the planner (``snapstore.ops.plan``), which loads the workspace and the store, so
that a front end can rebuild a result it was sent (``snapstore serve`` answers a move with
one) and render it without loading either.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any, Final, Literal, Protocol

#: What an operation does to one path.
Action = Literal["restore", "delete", "merge", "conflict", "error", "keep"]
RESTORE: Final = "restore"
DELETE: Final = "delete"
MERGE: Final = "merge"
CONFLICT: Final = "conflict"
ERROR: Final = "error"
KEEP: Final = "keep"


class Planned(Protocol):
    """One path's plan as a result reads it: what :class:`~snapstore.ops.plan.PathPlan` holds,
    named here so that this module does not load the planner."""

    @property
    def path(self) -> str: ...
    @property
    def action(self) -> Action: ...
    @property
    def reason(self) -> str: ...
    @property
    def warning(self) -> str | None: ...
    @property
    def content(self) -> Any: ...
    @property
    def current_entry(self) -> Any: ...
    @property
    def writes(self) -> bool: ...


class RewindResult:
    """What a rewind or undo did (or, with ``dry_run``, would do)."""

    #: What :meth:`to_json` holds, in its order (``plans`` aside: they hold file bytes).
    FIELDS = (
        "session",
        "target",
        "user_text",
        "turns_reverted",
        "restored",
        "deleted",
        "merged",
        "conflicts",
        "marked",
        "errors",
        "warnings",
        "folders_removed",
        "folders_created",
        "new_head",
        "undo_id",
        "dry_run",
        "conversation",
        "nothing_done",
        "git",
    )
    __slots__ = (*FIELDS, "plans")

    def __init__(
        self,
        session: str,
        target: str | None,
        user_text: str,
        turns_reverted: list[str],
        restored: list[str] | None = None,
        deleted: list[str] | None = None,
        merged: list[str] | None = None,
        conflicts: list[dict[str, str]] | None = None,
        marked: list[str] | None = None,
        errors: list[dict[str, str]] | None = None,
        warnings: list[dict[str, str]] | None = None,
        folders_removed: list[str] | None = None,
        folders_created: list[str] | None = None,
        new_head: str | None = None,
        undo_id: str | None = None,
        dry_run: bool = False,
        conversation: dict[str, Any] | None = None,
        nothing_done: bool = False,
        git: dict[str, Any] | None = None,
        plans: Sequence[Planned] | None = None,
    ):
        self.session = session
        self.target = target
        self.user_text = user_text
        self.turns_reverted = turns_reverted
        self.restored = restored or []
        self.deleted = deleted or []
        self.merged = merged or []
        self.conflicts = conflicts or []
        self.marked = marked or []  # conflicts written with markers
        self.errors = errors or []
        self.warnings = warnings or []
        self.folders_removed = folders_removed or []  # emptied folders turns made
        self.folders_created = folders_created or []  # folders turns made, put back
        self.new_head = new_head
        self.undo_id = undo_id
        self.dry_run = dry_run
        self.conversation = conversation  # the agent's chat (snapstore.conversation)
        #: every write failed: nothing moved (head, turns), and the operation can be run again
        self.nothing_done = nothing_done
        #: the repository's HEAD, refs and index (snapstore.ops.gitplan.result); None: no
        #: repository, or not asked
        self.git = git
        self.plans = plans or []

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RewindResult) and self.to_json() == other.to_json()

    def __repr__(self) -> str:
        return f"RewindResult({self.to_json()!r})"

    @property
    def ok(self) -> bool:
        """Nothing left undone: no file in conflict or failed, and the git half whole."""
        return not self.conflicts and not self.errors and (self.git or {}).get("ok", True)

    @property
    def changed(self) -> list[str]:
        """The files it wrote (or would write): conflict markers count."""
        return self.restored + self.merged + self.deleted + self.marked

    @property
    def left(self) -> list[dict[str, str]]:
        """What it left undone, which ``finish`` retries: conflicts and failed writes."""
        return [] if self.nothing_done else self.conflicts + self.errors

    def to_json(self) -> dict[str, Any]:
        return copy.deepcopy({name: getattr(self, name) for name in self.FIELDS})

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RewindResult:
        """The result :meth:`to_json` gave (without its plans): what a door renders from a
        reply it got over a socket. A document that is not one is refused (ValueError)."""
        if not isinstance(data, dict) or set(data) != set(cls.FIELDS):
            raise ValueError("not a rewind result")
        return cls(**data)

    def add(self, plan: Planned) -> None:
        """Sort one path's plan into the result lists."""
        if plan.action == RESTORE:
            self.restored.append(plan.path)
        elif plan.action == DELETE:
            self.deleted.append(plan.path)
        elif plan.action == MERGE:
            self.merged.append(plan.path)
        elif plan.action == CONFLICT:
            self.conflicts.append({"path": plan.path, "reason": plan.reason})
            if plan.content is not None:
                self.marked.append(plan.path)
        elif plan.action == ERROR:
            self.errors.append({"path": plan.path, "reason": plan.reason})
        if plan.warning:
            self.warnings.append({"path": plan.path, "reason": plan.warning})
