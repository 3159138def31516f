"""Shell windows: whose change a scan has found, in scan mode.

An agent's shell tool changes files that no hook names. In scan mode the
agent's hooks scan just before and just after each shell call; the time in
between is the call's *window*. A change belongs to an agent's turn only when
it happened inside that agent's own window:

- a scan sees what changed since the scan before it, and every window opens
  and closes inside a scan's last commit, so the windows open at a scan's
  commit are exactly those that were open since the scan before it;
- when the windows open then are one session's (one call or several parallel
  ones), what the scan found goes to that session's open turn;
- when they are several sessions', the change happened while their calls ran
  side by side: it is the user's, marked *unattributed* with those sessions,
  and never given to one of them;
- with no window open it is the user's, as everything seen between turns.

A window whose end never comes (the agent died, or refused the call) is
closed when the session's turn ends or its next prompt comes; what the scan
then finds is unattributed too. A session that never comes back would keep
its window open for good, and every other session's changes unattributed:
so a window open for longer than :data:`STALE_AFTER` is closed the same way
by the next scan. The windows are kept in ``meta/shell`` (docs/format.md),
so every process agrees on them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final, Literal, NamedTuple

from ..core.repo import Repo, Tx

#: What a scan does to a session's windows (see ``WindowAction``).
WindowKind = Literal["open", "close", "end"]
OPEN: Final = "open"
CLOSE: Final = "close"
END: Final = "end"
#: Seconds after which an open window is taken for a call whose end never came. Claude
#: Code stops a Bash call after 10 minutes at most; a longer job runs in the background,
#: and its call has returned.
STALE_AFTER = 3600.0
#: session -> its shell calls in progress, each (call id, when its window opened)
Windows = dict[str, list[tuple[str, float]]]


class WindowAction(NamedTuple):
    """What a scan does to the windows once it has recorded what it found.

    ``open``: a shell call of ``session`` starts; ``close``: it ended; ``end``:
    the session's turn is over (or a new prompt came), so every window of it
    that is still open is closed. ``call`` is the agent's id for the tool call
    ("" when it has none: calls are then matched by order).
    """

    kind: WindowKind
    session: str
    call: str = ""

    def to_json(self) -> list[str]:
        return [self.kind, self.session, self.call]

    @classmethod
    def from_json(cls, value: object) -> WindowAction | None:
        """A window action from a watch request; None for anything malformed."""
        if (
            isinstance(value, list)
            and len(value) == 3
            and value[0] in (OPEN, CLOSE, END)
            and all(isinstance(part, str) for part in value)
        ):
            return cls(*value)
        return None


class Owner(NamedTuple):
    """Who a scan's changes belong to: one session, or the user (maybe unattributed)."""

    session: str | None = None
    shared: tuple[str, ...] = ()  # the sessions whose windows were open, when not one's alone


def owner(windows: Windows, actions: Iterable[WindowAction], now: float) -> Owner:
    """Whose the changes are that a scan commits at ``now`` while ``windows`` are open.

    A session whose turn is ending with a window still open lost track of that
    call, as did one whose every window is stale: what happened in them is
    nobody's for certain.
    """
    lost = {a.session for a in actions if a.kind == END} | {
        session for session, calls in windows.items() if not _live(calls, now)
    }
    sessions = tuple(sorted(windows))
    if len(sessions) == 1 and sessions[0] not in lost:
        return Owner(sessions[0])
    return Owner(None, sessions)


def applied(windows: Windows, actions: Iterable[WindowAction], now: float) -> Windows:
    """The windows after ``actions`` at ``now``, stale ones dropped. A call opens once;
    closing an unknown call of a session that has anonymous calls closes one of those."""
    result = {session: _live(calls, now) for session, calls in windows.items()}
    for action in actions:
        calls = result.setdefault(action.session, [])
        ids = [call for call, _ in calls]
        if action.kind == OPEN:
            if not action.call or action.call not in ids:
                calls.append((action.call, now))
        elif action.kind == CLOSE:
            if action.call in ids:
                del calls[ids.index(action.call)]
            elif "" in ids:
                del calls[ids.index("")]
        else:
            calls.clear()
    return {session: calls for session, calls in result.items() if calls}


def _live(calls: list[tuple[str, float]], now: float) -> list[tuple[str, float]]:
    return [(call, opened) for call, opened in calls if now - opened <= STALE_AFTER]


def apply_actions(tx: Tx, actions: Iterable[WindowAction]) -> None:
    """Open or close windows in this commit (and drop stale ones)."""
    windows = tx.shell_windows()
    after = applied(windows, actions, tx.clock())
    if after != windows:
        tx.set_shell_windows(after)


def act_alone(repo: Repo, actions: list[WindowAction]) -> None:
    """Open or close windows without a scan (the scan failed, and was reported)."""
    repo.write(lambda tx: apply_actions(tx, actions))


def open_windows(repo: Repo) -> Windows:
    """Every session's shell calls in progress; stale ones count as closed."""
    with repo.read() as v:
        return applied(v.shell_windows(), (), repo.clock())
