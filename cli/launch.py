"""The ``snapstore`` console script: start-up for processes that live a few tens of ms.

Agents and their wrappers start ``snapstore`` on every tool call, so the
process itself is what they wait for, measured against the bare-import floor
(docs/benchmarks.md). Three things here are worth a fifth of that floor:

- the cyclic garbage collector is off while the modules load: its passes over
  the objects that imports make find nothing to free. A command that runs on
  (everything but the hooks and the capture commands) turns it back on, and
  freezes what was loaded so that later passes skip it;
- the capture commands (``begin``, ``end``, ``pre-write``, ``post-write``) run
  without Click (``fast``), and the hooks as before (``hooks``);
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
    if args[:1] == ["hook"]:  # the hook fast path, or a short hook command through Click
        from .hooks import main as entry_main

        try:
            entry_main(args)
        except SystemExit as exc:
            _exit(exc.code)
        _exit(0)
    from .fast import run

    code = run(args)
    if code is not None:
        _exit(code)
    gc.freeze()
    gc.enable()
    from .hooks import main as entry_main

    entry_main(args)


def _exit(code: object) -> None:
    """Leave now, as ``sys.exit(code)`` would but without the interpreter's teardown."""
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:  # sys.exit("message") prints it and exits 1
        sys.stderr.write(f"{code}\n")
        status = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (the reader went away)
            status = status or 1
    os._exit(status)
