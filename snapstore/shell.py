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
then finds is unattributed too. The windows are kept in ``meta/shell``
(docs/format.md), so every process agrees on them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from .repo import Repo, Tx

OPEN, CLOSE, END = "open", "close", "end"


class WindowAction(NamedTuple):
    """What a scan does to the windows once it has recorded what it found.

    ``open``: a shell call of ``session`` starts; ``close``: it ended; ``end``:
    the session's turn is over (or a new prompt came), so every window of it
    that is still open is closed. ``call`` is the agent's id for the tool call
    ("" when it has none: calls are then matched by order).
    """

    kind: str
    session: str
    call: str = ""

    def to_json(self) -> list[str]:
        return [self.kind, self.session, self.call]

    @classmethod
    def from_json(cls, value: object) -> WindowAction | None:
        """A window action from a watch request; None for anything malformed."""
        if (isinstance(value, list) and len(value) == 3 and value[0] in (OPEN, CLOSE, END)
                and all(isinstance(part, str) for part in value)):
            return cls(*value)
        return None


class Owner(NamedTuple):
    """Who a scan's changes belong to: one session, or the user (maybe unattributed)."""

    session: str | None = None
    shared: tuple[str, ...] = ()  # the sessions whose windows were open, when not one's alone


def owner(windows: dict[str, list[str]], actions: Iterable[WindowAction]) -> Owner:
    """Whose the changes are that a scan commits while ``windows`` are open.

    A session whose turn is ending with a window still open lost track of that
    call: what happened in it is nobody's for certain.
    """
    ending = {a.session for a in actions if a.kind == END and a.session in windows}
    sessions = tuple(sorted(windows))
    if len(sessions) == 1 and not ending:
        return Owner(sessions[0])
    return Owner(None, sessions)


def applied(windows: dict[str, list[str]], actions: Iterable[WindowAction]
            ) -> dict[str, list[str]]:
    """The windows after ``actions``. A call opens once; closing an unknown call of a
    session that has anonymous calls closes one of those."""
    result = {session: list(calls) for session, calls in windows.items()}
    for action in actions:
        calls = result.setdefault(action.session, [])
        if action.kind == OPEN:
            if not action.call or action.call not in calls:
                calls.append(action.call)
        elif action.kind == CLOSE:
            if action.call in calls:
                calls.remove(action.call)
            elif "" in calls:
                calls.remove("")
        else:
            calls.clear()
        if not calls:
            del result[action.session]
    return result


def apply_actions(tx: Tx, actions: Iterable[WindowAction]) -> None:
    """Open or close windows in this commit."""
    tx.set_shell_windows(applied(tx.shell_windows(), actions))


def act_alone(repo: Repo, actions: list[WindowAction]) -> None:
    """Open or close windows without a scan (the scan failed, and was reported)."""
    repo.write(lambda tx: apply_actions(tx, actions))


def open_windows(repo: Repo) -> dict[str, list[str]]:
    """Every session's shell calls in progress (their ids)."""
    with repo.read() as v:
        return v.shell_windows()
