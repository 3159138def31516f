"""Fault points: named moments where a test may stop the process.

The crash tests kill a child process with SIGKILL at chosen moments of a
rewind, an undo, a capture or a gc, then check that nothing was lost. To
choose those moments precisely, the library calls :func:`point` at a few
well-named places. By default nothing is installed and a point costs one
global lookup; the library never reads the environment to install one. Only a
test's child process calls :func:`install`.
"""

from __future__ import annotations

from collections.abc import Callable

_handler: Callable[[str], None] | None = None


def point(name: str) -> None:
    """Mark a moment worth interrupting; calls the installed handler, if any."""
    if _handler is not None:
        _handler(name)


def install(handler: Callable[[str], None] | None) -> None:
    """Install (or with None, remove) the handler every :func:`point` calls."""
    global _handler
    _handler = handler
