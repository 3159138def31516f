"""Planning a rewind, switch or undo: the per-path fold (docs/design.md, Rewind).

For each path the fold starts from what the path holds now and takes steps,
one recorded change at a time. A step goes from ``src`` to ``dst``: backward
(undo a change, newest first) from its ``after`` to its ``before``, forward
(redo a change, oldest first) from its ``before`` to its ``after``:

- current == src: the exact path, current becomes dst;
- current == dst: this step is already done;
- otherwise a three-way merge with base = src, ours = current, theirs = dst,
  which keeps the user's edits and takes out (or puts back) the agent's.

Content and mode are folded apart: a mode the user changed survives a step
that changes only the content, and the other way round. A folder standing
where a file must come back counts as absent; the journal removes it (once
this operation has emptied it) before it writes the file.

Planning only reads. ``snapstore.ops.journal`` makes the plan durable and applies it.
"""

from __future__ import annotations

import bisect
import contextlib
import itertools
import os
import stat
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, NamedTuple

from ..core import faults
from ..core.errors import FileChanged, SnapstoreError
from ..core.fsio import Workspace
from ..core.records import (
    FILE,
    LINK,
    MARKERS,
    THEIRS,
    Big,
    Change,
    Entry,
    Policy,
    Version,
    differs,
    fingerprint,
    same,
    version_of,
)
from ..core.view import View
from .result import CONFLICT, DELETE, ERROR, KEEP, MERGE, RESTORE, Action
from .result import RewindResult as RewindResult  # the planner's result: its home is .result

if TYPE_CHECKING:
    from ..core.chunked import Spool
    from ..text.bigmerge import Source


class Step(NamedTuple):
    """One change to take back (``forward`` false) or to put back (true)."""

    change: Change
    forward: bool = False

    @property
    def src(self) -> Version | None:
        return self.change.before if self.forward else self.change.after

    @property
    def dst(self) -> Version | None:
        return self.change.after if self.forward else self.change.before


def steps_by_path(back: Iterable[Change], forward: Iterable[Change] = ()) -> dict[str, list[Step]]:
    """Each path's steps in fold order: ``back`` (listed oldest first) undone newest first,
    then ``forward`` (oldest first) redone in order."""
    grouped: dict[str, list[Step]] = {}
    for change in reversed(coalesce(back)):
        grouped.setdefault(change.path, []).append(Step(change, forward=False))
    for change in coalesce(forward):
        grouped.setdefault(change.path, []).append(Step(change, forward=True))
    return dict(sorted(grouped.items()))


def coalesce(changes: Iterable[Change]) -> list[Change]:
    """A turn's writes that follow on each other, as one change per run (listed oldest first).

    Several tool calls of one turn on one path, each starting where the last ended,
    are one change from the first ``before`` to the last ``after``; a run that ends
    where it began is none. So a path the turn deleted and wrote again is folded as
    one edit, and an absence in between never passes for someone else's deletion.
    """
    runs: list[Change] = []
    last: dict[tuple[str, str], int] = {}  # (turn, path) -> index of its latest run
    for change in changes:
        at = last.get((change.turn, change.path))
        if (
            at is not None
            and change.done
            and runs[at].done
            and _identical(runs[at].after, change.before)
        ):
            runs[at] = runs[at]._replace(after=change.after)
            continue
        last[(change.turn, change.path)] = len(runs)
        runs.append(change)
    return [c for c in runs if not (c.done and _identical(c.before, c.after))]


def _identical(a: Version | None, b: Version | None) -> bool:
    return not differs(a, b)


class PathPlan:
    """What an operation will do to one path.

    Plain classes, here and below, not dataclasses: ``dataclasses`` loads ``inspect``, a
    tenth of a ``snapstore rewind`` process (docs/benchmarks.md).
    """

    __slots__ = (
        "action",
        "content",
        "current",
        "current_entry",
        "folder",
        "mkdirs",
        "path",
        "reason",
        "result",
        "rmdirs",
        "spool",
        "warning",
    )

    def __init__(
        self,
        path: str,
        action: Action,
        current: Version | None = None,
        current_entry: Entry | None = None,
        result: Version | None = None,
        content: Entry | None = None,
        reason: str = "",
        rmdirs: int = 0,
        mkdirs: int = 0,
        folder: bool = False,
        warning: str = "",
    ):
        self.path = path
        self.action = action
        self.current = current
        self.current_entry = current_entry
        self.result = result
        self.content = content
        self.reason = reason
        self.rmdirs = rmdirs  # empty parent folders to remove once the file is deleted
        self.mkdirs = mkdirs  # parent folders the write creates (an undo removes them again)
        self.folder = folder  # a folder stands at the path now (counted as absent)
        self.warning = warning  # done, but worth knowing (a hard link split)
        #: where a big merge's result (``content``) waits to be stored (``core/chunked.py``)
        self.spool: Spool | None = None

    @property
    def writes(self) -> bool:
        """Whether applying the plan writes the path (a conflict with markers does)."""
        return self.action in (RESTORE, DELETE, MERGE) or (
            self.action == CONFLICT and self.content is not None
        )

    def __repr__(self) -> str:
        return f"PathPlan({self.path!r}, {self.action!r}, reason={self.reason!r})"


def refuse_clashes(ws: Workspace, plans: list[PathPlan]) -> None:
    """Turn into errors the writes that would need a file and a folder of one name.

    A file comes back where a folder stands only if this operation empties the
    folder; it goes below a path only if no file stays there. Whatever else
    holds the name (the user's own file in the folder, a path left in conflict)
    is never removed: the write is refused, planned as an error, and what it
    refuses to replace stays, which may refuse another write in turn. Two writes
    of this operation that clash refuse each other: which one wins is not the
    planner's to choose, so the outcome never depends on the order of paths.
    """
    by_path = {p.path: p for p in plans}
    ordered = sorted(by_path)
    occupied: dict[str, bool] = {}  # the workspace does not change while the plan is made

    def stays(path: str) -> bool:
        """Whether a file or link is at ``path`` once the operation is done."""
        plan = by_path.get(path)
        if plan is None:
            if path not in occupied:
                occupied[path] = ws.occupied(path)
            return occupied[path]
        return (plan.result if plan.writes else plan.current) is not None

    def planned_below(path: str) -> Iterator[str]:
        """The planned paths below ``path``: a run of the sorted list."""
        prefix = path + "/"
        for other in itertools.islice(ordered, bisect.bisect_left(ordered, prefix), None):
            if not other.startswith(prefix):
                return
            yield other

    while True:
        refused: list[tuple[PathPlan, str]] = []
        for plan in plans:
            if not plan.writes or plan.content is None:
                continue
            parts = plan.path.split("/")
            others = [
                *(ws.files_below(plan.path) if plan.folder else ()),
                *planned_below(plan.path),
                *("/".join(parts[:n]) for n in range(1, len(parts))),
            ]
            holder = next((p for p in others if stays(p)), None)
            if holder is not None:
                refused.append((plan, holder))
        if not refused:
            return
        for plan, holder in refused:
            plan.action, plan.content, plan.result = ERROR, None, None
            plan.reason = (
                f"cannot write {plan.path}: {holder} stays, and a file and a "
                "folder cannot share a name"
            )


def release(plans: Iterable[PathPlan]) -> None:
    """Let go of the big merge results the plans hold (once applied, or never to be)."""
    for plan in plans:
        if plan.spool is not None:
            plan.spool.close()
            plan.spool = None


class _Conflict(Exception):
    """One path's fold cannot go on; carries the plan to report."""

    def __init__(self, plan: PathPlan):
        super().__init__(plan.reason)
        self.plan = plan


def plan_path(
    ws: Workspace,
    v: View,
    path: str,
    steps: list[Step],
    on_conflict: Policy,
    scratch: str,
    busy: str | None = None,
) -> PathPlan:
    """Fold ``steps`` from what the path holds now. ``scratch`` is the folder where a big
    merge writes its result (the store's). ``busy`` says who else is writing the path right
    now: then it is left alone, whatever the policy."""
    try:
        entry, folder = ws.read_state(path, links_absent=True)
    except SnapstoreError as exc:
        return PathPlan(path, ERROR, reason=str(exc))
    start = version_of(entry)
    if busy:
        return PathPlan(path, CONFLICT, start, entry, reason=busy, folder=folder)
    fold = _Fold(ws, v, path, start, entry, on_conflict, scratch)
    try:
        for step in steps:
            fold.step(step)
        plan = fold.plan()
    except _Conflict as stop:
        fold.drop_spool()
        stop.plan.folder = folder
        return stop.plan
    except SnapstoreError as exc:
        fold.drop_spool()
        return PathPlan(path, ERROR, start, entry, reason=str(exc), folder=folder)
    plan.folder = folder
    return plan


class _Fold:
    """The state of one path while its steps are taken.

    A step that lands on a recorded version keeps only that version: its bytes are read
    from the store (a delta chain decoded) once, when a merge or the plan needs them, not
    at every step a path takes on its way back.
    """

    def __init__(
        self,
        ws: Workspace,
        v: View,
        path: str,
        start: Version | None,
        entry: Entry | None,
        on_conflict: Policy,
        scratch: str,
    ):
        self.ws, self.v, self.path = ws, v, path
        self.start, self.start_entry = start, entry
        self.version, self.entry = start, entry
        self.stored = False  # the entry is the store's bytes of ``version``, not read yet
        self.spool: Spool | None = None  # where the entry's bytes are: a big merge's result
        self.on_conflict = on_conflict
        self.scratch = scratch
        self.merged = False
        self.gone = False  # a step found the path absent where it would have removed it
        self.rmdirs = 0

    def step(self, step: Step) -> None:
        """Take one step from the current state."""
        src, dst = step.src, step.dst
        if not step.change.done:  # the agent's write was never recorded
            if not step.forward and same(self.version, step.change.before):
                return
            return self._conflict("what the agent wrote was never recorded", step)
        if same(self.version, src):
            if self.version is None and dst is not None and self.gone:
                # an earlier step found the file already gone: someone deleted what the
                # agent had written, so it does not come back from before that
                return self._conflict("the file was deleted after the agent wrote it", step)
            self._become(dst, step, mode=self._mode(src, dst))
        elif same(self.version, dst):
            self.gone = self.gone or (self.version is None and src is not None)
            self._keep_content(src, dst)
        else:
            self._merge(step)

    def _mode(self, src: Version | None, dst: Version | None) -> int | None:
        """Three-way merge of the permission bits: base src, ours current, theirs dst."""
        theirs = None if dst is None else dst.mode
        ours = None if self.version is None else self.version.mode
        base = None if src is None else src.mode
        if theirs is None or ours is None or base is None or ours == base:
            return theirs
        if theirs == base or ours == theirs or self.on_conflict != THEIRS:
            return ours  # the user changed the mode: it stays
        return theirs

    def _become(self, version: Version | None, step: Step, mode: int | None = None) -> None:
        if version is not None and version.kind == FILE and mode is not None:
            version = version._replace(mode=mode)
        self.drop_spool()
        self.version, self.entry, self.stored = version, None, version is not None
        if version is None and not step.forward:
            self.rmdirs = max(self.rmdirs, step.change.mkdirs)

    def _content(self) -> Entry | None:
        """What the path holds at this point of the fold (its bytes verified against the
        version's digest when they come from the store)."""
        if self.stored:
            self.entry, self.stored = self.v.content(self.version), False
        return self.entry

    def _keep_content(self, src: Version | None, dst: Version | None) -> None:
        """The content is already at ``dst``; only the mode may still move."""
        mode = self._mode(src, dst)
        if (
            self.version is not None
            and self.version.kind == FILE
            and mode is not None
            and mode != self.version.mode
        ):
            self.version = self.version._replace(mode=mode)
            if self.entry is not None:
                self.entry = self.entry._replace(mode=mode)

    def drop_spool(self) -> None:
        """Let go of the big merge result the fold's content was (it moved on)."""
        if self.spool is not None:
            self.spool.close()
            self.spool = None

    def _merge(self, step: Step) -> None:
        if self.version is None:
            return self._conflict("the file was deleted after the agent wrote it", step)
        ours = self._content()
        assert ours is not None
        base, theirs = self.v.content(step.src), self.v.content(step.dst)
        from ..text.diff import is_binary  # only a merge needs them
        from ..text.merge import merge3

        sides = [e for e in (base, ours, theirs) if e is not None]
        if any(e.kind == LINK for e in sides):
            return self._conflict("a symlink that was changed after the agent wrote it", step)
        if any(isinstance(e.data, Big) for e in sides):
            return self._merge_big(step, base, ours, theirs)
        if any(is_binary(_text(e)) for e in sides):
            return self._conflict("binary file changed after the agent wrote it", step)
        result = merge3(*(_text(e) for e in (base, ours, theirs)))
        if not result.clean:
            return self._conflict(
                f"{result.conflicts} conflicting region(s) between your edits and the agent's",
                step,
                result.content,
            )
        self._merged(step, ours, result.content)

    def _merge_big(self, step: Step, base: Entry | None, ours: Entry, theirs: Entry | None) -> None:
        """A merge where a side is a big file: streamed, in bounded memory, git's answer or
        a conflict (``text/bigmerge.py``); the result waits in a spool until the journal
        stores it."""
        from ..core.chunked import Spool
        from ..text.bigmerge import merge_big

        spool = Spool(self.scratch)
        try:
            with contextlib.ExitStack() as held:
                b, o, t = (self._source(entry, held) for entry in (base, ours, theirs))
                outcome = merge_big(b, o, t, spool.write, markers=self.on_conflict == MARKERS)
            data = spool.content() if outcome.written else None
            faults.point("plan.big_merged")
        except BaseException:
            spool.close()
            raise
        if data is None or not isinstance(data, Big):
            spool.close()
        if outcome.conflicts:
            return self._conflict(outcome.reason, step, data, spool)
        assert data is not None
        self._merged(step, ours, data, spool)

    def _source(self, entry: Entry | None, held: contextlib.ExitStack) -> Source:
        """One side of a big merge, read where its bytes are: in memory, in the store's
        chunks, in this fold's spool, or in the workspace (which must not change meanwhile)."""
        from ..core.chunked import Stored
        from ..text.bigmerge import Bytes, Handle

        if entry is None:
            return Bytes(b"")
        if not isinstance(entry.data, Big):
            return Bytes(entry.data)
        if entry is self.entry and self.spool is not None:
            return Handle(self.spool.file, entry.data.size)
        if entry.stat is None:
            return Stored(self.v, entry.data.key)
        seen = fingerprint(entry.stat)
        handle = held.enter_context(self.ws.reading(self.path, seen))

        def unchanged(failed: type[BaseException] | None, *_: object) -> None:
            if failed is None and fingerprint(os.fstat(handle.fileno())) != seen:
                raise FileChanged(f"{self.path} changed while it was being merged", path=self.path)

        held.push(unchanged)
        return Handle(handle, entry.data.size)

    def _merged(
        self, step: Step, ours: Entry, content: bytes | Big, spool: Spool | None = None
    ) -> None:
        """The merge was clean: its result is the path's content now."""
        self.merged = True
        self.drop_spool()
        if step.dst is None and not (content.size if isinstance(content, Big) else content):
            self.version, self.entry = None, None
            if not step.forward:
                self.rmdirs = max(self.rmdirs, step.change.mkdirs)
            return
        mode = self._mode(step.src, step.dst)
        self.entry = Entry(FILE, content, ours.mode if mode is None else mode)
        self.version = version_of(self.entry)
        self.spool = spool if isinstance(content, Big) else None

    def _conflict(
        self,
        reason: str,
        step: Step,
        markers: bytes | Big | None = None,
        spool: Spool | None = None,
    ) -> None:
        """Stop the fold with a conflict, unless the policy forces the step's ``dst``."""
        if self.on_conflict == THEIRS:
            self._become(step.dst, step, mode=None if step.dst is None else step.dst.mode)
            return
        plan = PathPlan(self.path, CONFLICT, self.start, self.start_entry, reason=reason)
        if self.on_conflict == MARKERS and markers is not None:
            assert self.version is not None
            content = Entry(FILE, markers, self.version.mode)
            result = version_of(content)
            if differs(self.start, result):  # else the file holds them already: no write
                plan.content, plan.result = content, result
                plan.spool = spool if isinstance(markers, Big) else None
            elif spool is not None:
                spool.close()
            if self.start is None:  # written where nothing is: its undo removes what it brings
                plan.mkdirs = self.ws.missing_parents(self.path)
        raise _Conflict(plan)

    def plan(self) -> PathPlan:
        if not differs(self.start, self.version):  # back where it started: nothing to read
            self.drop_spool()
            return PathPlan(
                self.path,
                KEEP,
                self.start,
                self.start_entry,
                self.start,
                self.start_entry,
                rmdirs=self.rmdirs,
            )
        plan = PathPlan(
            self.path,
            KEEP,
            self.start,
            self.start_entry,
            self.version,
            self._content(),
            rmdirs=self.rmdirs,
        )
        plan.spool, self.spool = self.spool, None
        plan.action = DELETE if self.version is None else MERGE if self.merged else RESTORE
        if self.start is None and self.version is not None:
            plan.mkdirs = self.ws.missing_parents(self.path)
        st = self.start_entry.stat if self.start_entry is not None else None
        if (
            self.version is not None
            and st is not None
            and stat.S_ISREG(st.st_mode)
            and st.st_nlink > 1
        ):
            plan.warning = (
                f"had {st.st_nlink} hard links; it was written as a new file, so "
                "its other names keep the old content"
            )
        return plan


def _text(entry: Entry | None) -> bytes:
    """A merge side's bytes (an absent side is empty; big files take :meth:`_Fold._merge_big`)."""
    if entry is None:
        return b""
    assert not isinstance(entry.data, Big)
    return entry.data
