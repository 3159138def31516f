"""Choosing a rewind point when `snapstore rewind` is given no TURN."""

from __future__ import annotations

from snapstore import Store

from .history import points_json
from .main import emit
from .render import console, points_table


def print_points(store: Store, session: str) -> None:
    """The numbered list, so that `rewind N` matches what is on screen."""
    points = store.rewind_points(session)
    def human() -> None:
        if not points:
            console(stderr=True).print(f"no rewind points in session {session}")
            return
        console().print(points_table(points, store.clock()))
        console(stderr=True).print("rewind with: snapstore rewind N", style="dim")
    emit(points_json(points), human)


def choose(store: Store, session: str, mode: str, interactive: bool
           ) -> tuple[str | None, str]:
    """The turn and mode to rewind, or (None, mode) when nothing was chosen."""
    print_points(store, session)
    return None, mode
