"""What a rewind would take back, in the figures a person weighs before confirming it.

The summary Gemini CLI's ``/rewind`` shows before it acts: how many files, how many lines
added and removed, how long ago the turn was, and what a rewind does not cover. The picker's
confirmation and the page's both show it, so it is worked out here, once, from the turns the
rewind would take back (the stats come from the store, as ``log``'s do) and the store's
settings (whether the shell's changes were recorded at all).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from snapstore import Store
    from snapstore.ops.history import RewindPoint

#: What no rewind takes back, said the same way by every door that confirms one.
NOT_COVERED = (
    "Not taken back: what the agent did beyond this workspace's files and git state, such as "
    "files elsewhere, a push to a remote, messages it sent, or what its commands installed or "
    "started."
)
#: Said as well when the store does not record the shell's changes (not in scan mode).
SHELL_UNRECORDED = (
    "Shell commands' changes were not recorded (the store is not in scan mode; see "
    "`snapstore doctor`), so they stay."
)


class Impact(NamedTuple):
    """A rewind's summary: the turns it takes back, the distinct files they changed, their
    lines added and removed, when the first of them (the target) was made, the files they
    changed that were never captured, and what the rewind does not cover (``notes``)."""

    turns: int
    files: int
    added: int
    removed: int
    created: float
    uncaptured: tuple[str, ...]
    notes: tuple[str, ...]

    def to_json(self) -> dict[str, object]:
        return {
            "turns": self.turns,
            "files": self.files,
            "added": self.added,
            "removed": self.removed,
            "time": self.created,
            "uncaptured": list(self.uncaptured),
            "notes": list(self.notes),
        }


def impact(store: Store, taken: list[RewindPoint]) -> Impact:
    """The summary of a rewind that takes back ``taken`` (newest first, the target last)."""
    from ..settings.config import Config

    paths = {f.path for point in taken for f in point.files}
    uncaptured = sorted({path for point in taken for path, _ in point.turn.skipped})
    notes = [NOT_COVERED]
    if not Config.load(store.store_dir).track_shell:
        notes.append(SHELL_UNRECORDED)
    if uncaptured:
        shown = ", ".join(uncaptured[:3]) + (", …" if len(uncaptured) > 3 else "")
        notes.append(
            f"Never captured (over the size limit, or unreadable), so not put back: {shown}"
        )
    return Impact(
        turns=len(taken),
        files=len(paths),
        added=sum(p.added for p in taken),
        removed=sum(p.removed for p in taken),
        created=taken[-1].turn.created,
        uncaptured=tuple(uncaptured),
        notes=tuple(notes),
    )


def taken_back(points: list[RewindPoint], turn_id: str) -> list[RewindPoint]:
    """The rewind points a rewind to before ``turn_id`` takes back: it and every later one
    on the branch (``points`` newest first, as ``rewind_points`` gives them); empty when the
    turn is not on the branch."""
    for i, point in enumerate(points):
        if point.turn.id == turn_id:
            return points[: i + 1]
    return []
