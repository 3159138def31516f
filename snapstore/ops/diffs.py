"""Git-style diffs between two states of a path, for ``diff`` and rewind previews."""

from __future__ import annotations

from ..core.records import LINK, Entry, Turn
from ..core.repo import Repo
from ..text.diff import is_binary
from ..text.unified import unified_diff
from .history import (
    FileStat,
    LineCounter,
    file_stats,
    keep_counts,
    refuse_unchanged,
    resolve_turn,
)


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
    if is_binary(old_data) or is_binary(new_data):
        if old_data != new_data:
            lines.append(f"Binary files {old_name} and {new_name} differ")
        return lines
    return lines + unified_diff(old_data, new_data, old_name, new_name)


def turn_diffs(
    repo: Repo, ref: str | int, session: str, paths: list[str] | None = None
) -> tuple[Turn, list[tuple[FileStat, list[str]]]]:
    """One turn, and each path it changed (or each of ``paths``) with its diff lines."""
    wanted = None if paths is None else {repo.ws.relpath(p) for p in paths}
    files: list[tuple[FileStat, list[str]]] = []
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
