"""Planning a rewind: the per-path fold, newest change first (docs/design.md, Rewind).

For each path the fold starts from the bytes on disk now and undoes the changes
one at a time, newest first:

- current == change.after: the exact path, current becomes change.before;
- current == change.before: this change is already undone;
- otherwise a three-way merge with base = after, ours = current,
  theirs = before, which keeps the user's edits and takes out the agent's.

Planning only reads. ``snapstore.journal`` makes the plan durable and applies it.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, fields
from typing import Any

from .errors import SnapstoreError
from .fsio import Workspace
from .merge import is_binary, merge3
from .records import FILE, LINK, Change, Entry, Version, differs, same, version_of
from .repo import View

MODES = ("both", "code", "conversation")
POLICIES = ("skip", "markers", "theirs")
RESTORE, DELETE, MERGE, CONFLICT, ERROR, KEEP = (
    "restore", "delete", "merge", "conflict", "error", "keep")


@dataclass
class PathPlan:
    """What a rewind will do to one path."""

    path: str
    action: str
    current: Version | None = None
    current_entry: Entry | None = None
    result: Version | None = None
    content: Entry | None = None
    reason: str = ""
    rmdirs: int = 0  # empty parent folders to remove once the file is deleted
    mkdirs: int = 0  # parent folders the write creates (an undo removes them again)

    @property
    def writes(self) -> bool:
        """Whether applying the plan writes the path (a conflict with markers does)."""
        return self.action in (RESTORE, DELETE, MERGE) or (
            self.action == CONFLICT and self.content is not None)


@dataclass
class RewindResult:
    """What a rewind or undo did (or, with ``dry_run``, would do)."""

    session: str
    target: str | None
    user_text: str
    turns_reverted: list[str]
    restored: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    merged: list[str] = field(default_factory=list)
    conflicts: list[dict[str, str]] = field(default_factory=list)
    errors: list[dict[str, str]] = field(default_factory=list)
    new_head: str | None = None
    undo_id: str | None = None
    dry_run: bool = False
    plans: list[PathPlan] = field(default_factory=list, repr=False)

    @property
    def ok(self) -> bool:
        return not self.conflicts and not self.errors

    def to_json(self) -> dict[str, Any]:
        # Not asdict(): it would deep-copy the file bytes of every plan only to drop them.
        return copy.deepcopy({f.name: getattr(self, f.name) for f in fields(self)
                              if f.name != "plans"})

    def add(self, plan: PathPlan) -> None:
        """Sort one path's plan into the result lists."""
        if plan.action == RESTORE:
            self.restored.append(plan.path)
        elif plan.action == DELETE:
            self.deleted.append(plan.path)
        elif plan.action == MERGE:
            self.merged.append(plan.path)
        elif plan.action == CONFLICT:
            self.conflicts.append({"path": plan.path, "reason": plan.reason})
        elif plan.action == ERROR:
            self.errors.append({"path": plan.path, "reason": plan.reason})


def group_by_path(changes: list[Change]) -> dict[str, list[Change]]:
    """Changes per path, newest first, given changes listed oldest first."""
    grouped: dict[str, list[Change]] = {}
    for change in reversed(changes):
        grouped.setdefault(change.path, []).append(change)
    return grouped


class _Conflict(Exception):
    """One path's fold cannot go on; carries the plan to report."""

    def __init__(self, plan: PathPlan):
        super().__init__(plan.reason)
        self.plan = plan


def plan_path(ws: Workspace, v: View, path: str, changes: list[Change],
              on_conflict: str) -> PathPlan:
    """Fold ``changes`` (newest first) backwards from what the path holds now."""
    try:
        entry = ws.read(path)
    except SnapstoreError as exc:
        return PathPlan(path, ERROR, reason=str(exc))
    start = version_of(entry)
    fold = _Fold(ws, v, path, start, entry, on_conflict)
    try:
        for change in changes:
            fold.undo(change)
    except _Conflict as stop:
        return stop.plan
    except SnapstoreError as exc:
        return PathPlan(path, ERROR, start, entry, reason=str(exc))
    return fold.plan()


class _Fold:
    """The state of one path while its changes are undone, newest first."""

    def __init__(self, ws: Workspace, v: View, path: str, start: Version | None,
                 entry: Entry | None, on_conflict: str):
        self.ws, self.v, self.path = ws, v, path
        self.start, self.start_entry = start, entry
        self.version, self.entry = start, entry
        self.on_conflict = on_conflict
        self.merged = False
        self.rmdirs = 0

    def undo(self, change: Change) -> None:
        """Take one change back from the current state."""
        if not change.done:
            if same(self.version, change.before):
                return
            return self._conflict("what the agent wrote was never recorded", change)
        if same(self.version, change.after):
            self._become(change.before, change)
            return
        if same(self.version, change.before):
            return
        self._merge(change)

    def _become(self, version: Version | None, change: Change) -> None:
        self.entry = self.v.content(version)
        self.version = version
        if version is None:
            self.rmdirs = max(self.rmdirs, change.mkdirs)

    def _merge(self, change: Change) -> None:
        if self.version is None:
            return self._conflict("the file was deleted after the agent wrote it", change)
        assert self.entry is not None
        base = self.v.content(change.after)
        theirs = self.v.content(change.before)
        sides = [e for e in (base, self.entry, theirs) if e is not None]
        if any(e.kind == LINK for e in sides):
            return self._conflict("a symlink that was changed after the agent wrote it", change)
        if any(is_binary(e.data) for e in sides):
            return self._conflict("binary file changed after the agent wrote it", change)
        result = merge3(base.data if base else b"", self.entry.data,
                        theirs.data if theirs else b"")
        if not result.clean:
            return self._conflict(f"{result.conflicts} conflicting region(s) between your edits "
                           "and the agent's", change, result.content)
        self.merged = True
        if change.before is None and not result.content:
            self.version, self.entry = None, None
            self.rmdirs = max(self.rmdirs, change.mkdirs)
            return
        mode = self.entry.mode
        if change.after is not None and change.before is not None and mode == change.after.mode:
            mode = change.before.mode
        self.entry = Entry(FILE, result.content, mode)
        self.version = version_of(self.entry)

    def _conflict(self, reason: str, change: Change, markers: bytes | None = None) -> None:
        """Stop the fold with a conflict, unless the policy forces ``before``."""
        if self.on_conflict == "theirs":
            self._become(change.before, change)
            return
        plan = PathPlan(self.path, "conflict", self.start, self.start_entry, reason=reason)
        if self.on_conflict == "markers" and markers is not None:
            assert self.entry is not None
            plan.content = Entry(FILE, markers, self.entry.mode)
            plan.result = version_of(plan.content)
        raise _Conflict(plan)

    def plan(self) -> PathPlan:
        plan = PathPlan(self.path, KEEP, self.start, self.start_entry, self.version, self.entry,
                        rmdirs=self.rmdirs)
        if not differs(self.start, self.version):
            return plan
        plan.action = DELETE if self.version is None else MERGE if self.merged else RESTORE
        if self.start is None and self.version is not None:
            plan.mkdirs = self.ws.missing_parents(self.path)
        return plan
