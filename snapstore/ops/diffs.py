"""Git-style diffs between two states of a path, for ``diff`` and rewind previews, and the
state of the workspace as a turn left it (``cat``, ``diff A..B``, ``diff TURN --worktree``).

The state right after a turn is read along its branch: for each path, the last
version recorded by the turn or its ancestors. Nothing else is guessed: a path
none of them recorded has no known state there.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.errors import BadInput
from ..core.records import LINK, SCAN, Big, Entry, Source, Turn, Version, differs, version_of
from ..core.repo import Repo
from ..core.view import View
from ..text.diff import is_binary
from ..text.unified import unified_diff
from .branches import ancestors, refuse_unchanged, resolve_turn
from .history import (
    FileStat,
    FileStatus,
    LineCounter,
    file_stats,
    keep_counts,
    net_changes,
    session_turns,
)

#: One file of a diff: its stats and its diff lines.
FileDiff = tuple[FileStat, list[str]]


def _git_mode(entry: Entry) -> str:
    if entry.kind == LINK:
        return "120000"
    return "100755" if entry.mode & 0o111 else "100644"


def entry_diff(path: str, old: Entry | None, new: Entry | None) -> list[str]:
    """The lines of ``git diff`` for one path going from ``old`` to ``new``."""
    lines = [f"diff --git a/{path} b/{path}"]
    if old is None and new is not None:
        lines.append(f"new file mode {_git_mode(new)}")
    elif new is None and old is not None:
        lines.append(f"deleted file mode {_git_mode(old)}")
    elif old is not None and new is not None and _git_mode(old) != _git_mode(new):
        lines += [f"old mode {_git_mode(old)}", f"new mode {_git_mode(new)}"]
    old_data = old.data if old else b""
    new_data = new.data if new else b""
    old_name = f"a/{path}" if old is not None else "/dev/null"
    new_name = f"b/{path}" if new is not None else "/dev/null"
    if (  # a big file is never diffed line by line
        isinstance(old_data, Big)
        or isinstance(new_data, Big)
        or is_binary(old_data)
        or is_binary(new_data)
    ):
        if old_data != new_data:
            lines.append(f"Binary files {old_name} and {new_name} differ")
        return lines
    return lines + unified_diff(old_data, new_data, old_name, new_name)


def turn_diffs(
    repo: Repo, ref: str | int, session: str, paths: list[str] | None = None
) -> tuple[Turn, list[FileDiff]]:
    """One turn, and each path it changed (or each of ``paths``) with its diff lines."""
    wanted = None if paths is None else {repo.ws.relpath(p) for p in paths}
    files: list[FileDiff] = []
    with repo.read() as v:
        turn = resolve_turn(v, ref, session)
        count = LineCounter(v)
        stats = file_stats(v, v.changes(turn.id), count)
        if wanted is not None:
            refuse_unchanged(turn, wanted, {stat.path for stat in stats}, f"turn {turn.id}")
        for stat in stats:
            if wanted is None or stat.path in wanted:
                files.append(
                    (stat, entry_diff(stat.path, v.content(stat.before), v.content(stat.after)))
                )
    keep_counts(repo, count)
    return turn, files


def turn_diff(
    repo: Repo, ref: str | int, session: str, paths: list[str] | None = None
) -> list[str]:
    """The diff of everything one turn changed (or only ``paths``)."""
    return [line for _, lines in turn_diffs(repo, ref, session, paths)[1] for line in lines]


def state_after(v: View, turn_id: str | None) -> dict[str, Version | None]:
    """Each path the turn or its ancestors recorded, with its version right after the turn
    (None: deleted)."""
    state: dict[str, Version | None] = {}
    for turn in ancestors(v, turn_id):
        for net in net_changes(v.changes(turn.id)):
            state.setdefault(net.path, net.after)
    return state


def state_before(v: View, turn: Turn) -> dict[str, Version | None]:
    """Each path as ``turn`` found it: what it recorded before writing, else the state
    right after its parent."""
    state = state_after(v, turn.parent)
    for net in net_changes(v.changes(turn.id)):
        state[net.path] = net.before
    return state


def cat(repo: Repo, ref: str | int, session: str, path: str, before: bool = False) -> Entry:
    """A file as a turn left it (``before``: as the turn found it), read from the store and
    verified against its digest. A path with no recorded state there, or absent then, is
    BadInput saying which."""
    rel = repo.ws.relpath(path)
    with repo.read() as v:
        turn = resolve_turn(v, ref, session)
        state = state_before(v, turn) if before else state_after(v, turn.id)
        when = f"{'before' if before else 'after'} turn {turn.id}"
        if rel not in state:
            raise BadInput(
                f"{rel} was never recorded at or before turn {turn.id}", turn=turn.id, path=rel
            )
        entry = v.content(state[rel])
    if entry is None:
        raise BadInput(f"{rel} did not exist {when}", turn=turn.id, path=rel)
    return entry


def _status(old: Entry | None, new: Entry | None) -> FileStatus:
    if old is None:
        return "added"
    if new is None:
        return "deleted"
    if LINK in (old.kind, new.kind):
        return "link"
    return "mode" if old.data == new.data else "modified"


def entry_file_diff(
    path: str, old: Entry | None, new: Entry | None, tool: str, source: Source
) -> FileDiff | None:
    """One path's stats and diff lines between two entries; None when they are the same."""
    if (old and old[:3]) == (new and new[:3]):  # kind, bytes and mode (not the stat)
        return None
    lines = entry_diff(path, old, new)
    body = lines[next((i for i, line in enumerate(lines) if line.startswith("@@")), len(lines)) :]
    binary = any(isinstance(e.data, Big) or is_binary(e.data) for e in (old, new) if e is not None)
    stat = FileStat(
        path,
        _status(old, new),
        sum(line.startswith("+") for line in body),
        sum(line.startswith("-") for line in body),
        tool,
        source,
        binary,
        version_of(old),
        version_of(new),
    )
    return stat, lines


@dataclass
class RangeDiff:
    """The net change between the states right after two turns."""

    start: Turn
    end: Turn
    turns: list[Turn]  # the turns between them, on either side of where their branches part
    files: list[FileDiff]


def range_diffs(
    repo: Repo,
    start_ref: str | int,
    end_ref: str | int,
    session: str,
    paths: list[str] | None = None,
) -> RangeDiff:
    """From the state right after ``start`` to the state right after ``end``, for every path
    a turn between them recorded (or only ``paths``); the two may stand on different
    branches (then the turns between are those after their common ancestor, on both
    sides)."""
    wanted = None if paths is None else {repo.ws.relpath(p) for p in paths}
    with repo.read() as v:
        start = resolve_turn(v, start_ref, session)
        end = resolve_turn(v, end_ref, session)
        start_chain, end_chain = ancestors(v, start.id), ancestors(v, end.id)
        shared = {t.id for t in start_chain} & {t.id for t in end_chain}
        between = sorted(
            (t for t in {t.id: t for t in start_chain + end_chain}.values() if t.id not in shared),
            key=lambda t: t.seq,
        )
        old_at, new_at = state_after(v, start.id), state_after(v, end.id)
        nets = sorted(net_changes([c for t in between for c in v.changes(t.id)]))
        missing = sorted((wanted or set()) - {net.path for net in nets})
        if missing:
            raise BadInput(
                f"no turn from {start.id} to {end.id} changed {', '.join(missing)}",
                path=missing[0],
            )
        files = []
        for net in nets:
            if wanted is not None and net.path not in wanted:
                continue
            # a path no turn up to one end recorded is as the first turn between found it
            old = old_at.get(net.path, net.before)
            new = new_at.get(net.path, net.before)
            if differs(old, new):
                found = entry_file_diff(
                    net.path, v.content(old), v.content(new), net.tools, net.last.source
                )
                if found is not None:
                    files.append(found)
    return RangeDiff(start, end, between[::-1], files)


def worktree_diffs(
    repo: Repo, ref: str | int, session: str, paths: list[str] | None = None
) -> tuple[Turn, list[FileDiff]]:
    """From the state right after a turn to the files on disk now, whoever edited them: for
    every path the turn's session ever recorded, or only ``paths`` (which it need not have
    recorded, if a turn up to this one did)."""
    wanted = None if paths is None else sorted({repo.ws.relpath(p) for p in paths})
    with repo.read() as v:
        turn = resolve_turn(v, ref, session)
        at = state_after(v, turn.id)
        ever = session_turns(v, turn.session)[::-1]
        first = {n.path: n.before for n in net_changes([c for t in ever for c in v.changes(t.id)])}
        old: dict[str, Entry | None] = {}
        for rel in sorted(first) if wanted is None else wanted:
            if rel in at:
                old[rel] = v.content(at[rel])
            elif rel in first:  # first recorded after this turn: as that turn found it
                old[rel] = v.content(first[rel])
            else:
                raise BadInput(
                    f"{rel} was never recorded at or before turn {turn.id}",
                    turn=turn.id,
                    path=rel,
                )
    files = []
    for rel, entry in old.items():
        found = entry_file_diff(rel, entry, repo.ws.read_state(rel)[0], "", SCAN)
        if found is not None:
            files.append(found)
    return turn, files
