"""The ``snapstore`` console script (and ``python -m snapstore_cli``): start-up for processes
that live a few tens of ms, and which front end runs the command line.

Agents and their wrappers start ``snapstore`` on every tool call, so the
process itself is what they wait for, measured against the bare-import floor
(docs/benchmarks.md). Three things here are worth a fifth of that floor:

- the cyclic garbage collector is off while the modules load: its passes over
  the objects that imports make find nothing to free. A command that runs on
  (everything but the hooks and the capture commands) turns it back on, and
  freezes what was loaded so that later passes skip it;
- an agent's hook event runs without Click (``hooks``), and so do the capture commands
  (``begin``, ``end``, ``pre-write``, ``post-write``, ``scan``: ``fast``) when their
  command line is one the fast path reads exactly as Click would; everything else goes to
  the Click application (``app``). All of them run a command in ``runner``'s frame;
- those two paths end with ``os._exit`` once their output is flushed: tearing
  down the interpreter (a last collection, every module's dict) is work for a
  process whose store is closed and whose files are written. Every other
  command exits as Python does, so that its threads and ``atexit`` handlers
  finish.
"""

from __future__ import annotations

import gc
import os
import sys


def main() -> None:
    gc.disable()
    args = sys.argv[1:]
    if args[:1] == ["hook"]:  # an agent's event, or a short hook command through Click
        _exit(_hook(args))
    from .doors.fast import run

    code = run(args)
    if code is not None:
        _exit(code)
    gc.freeze()
    gc.enable()
    from .doors.click.app import run as run_click

    try:
        run_click(args)
    except SystemExit:
        _flush(0)  # here, not in the interpreter's teardown: a closed pipe ends it quietly
        raise


def _hook(args: list[str]) -> object:
    """Run ``snapstore hook ...``; its exit code. Every agent's events (opencode's plugin's
    too) take the hook command's own path; ``install``, ``--help`` and the rest go to Click."""
    from snapstore.adapters import AGENT_NAMES

    if len(args) >= 2 and args[1] in AGENT_NAMES and not {"--help", "-h"} & set(args[2:]):
        from .doors.hook import run_hook

        return run_hook(args[1], args[2:])
    from .doors.click.app import run as run_click

    try:
        run_click(args)
    except SystemExit as exc:
        return exc.code
    return 0


def _exit(code: object) -> None:
    """Leave now, as ``sys.exit(code)`` would but without the interpreter's teardown."""
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:  # sys.exit("message") prints it and exits 1
        sys.stderr.write(f"{code}\n")
        status = 1
    os._exit(_flush(status))


def _flush(status: int) -> int:
    """Flush stdout and stderr; the exit status then. A reader that went away (``| head``)
    leaves it as it is (what was printed stands); any other failure to write makes it 1."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError) as exc:
            from .output.plain import reader_gone  # not at start-up: the hook path skips it

            if not reader_gone(exc):
                status = status or 1
    return status
