"""The ``snapstore`` console script, and its fast path for agents' hook events.

Agents spawn ``snapstore hook AGENT`` on every tool call, so that path must not
pay for Click or rich: it runs here, before either is imported, and imports
only what capture needs. Every other command goes through the Click
application in ``snapstore_cli.app``.

A hook must never break the agent: snapstore's own failures print one line on
stderr, go to ``<store>/hook.log``, and exit 0, unless ``SNAPSTORE_STRICT=1``,
which makes them exit 2 (a blocking error for both agents).
"""

from __future__ import annotations

import os
import sys
import time

from snapstore import SnapstoreError, find_root
from snapstore.adapters import (
    END,
    IGNORE,
    MAX_PAYLOAD,
    SHELL_POST,
    SHELL_PRE,
    START,
    Agent,
    apply,
    load_payload,
    parse,
)

from .settings import Environment, open_for_hook, strict_hooks

#: Agents whose hook events run on the fast path.
HOOK_AGENTS = ("claude-code", "gemini-cli")


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if len(args) >= 2 and args[0] == "hook" and args[1] in HOOK_AGENTS \
            and not any(a in ("--help", "-h") for a in args[2:]):
        sys.exit(run_hook(args[1], args[2:]))
    from .app import run
    run(args)


def _agent(name: str) -> Agent:
    if name == "claude-code":
        from snapstore.adapters.claude_code import AGENT
        return AGENT
    from snapstore.adapters.gemini_cli import AGENT
    return AGENT


def _log(store_dir: str | None, agent: str, text: str) -> None:
    if store_dir is None or not os.path.isdir(store_dir):
        return
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
    try:
        with open(os.path.join(store_dir, "hook.log"), "a", encoding="utf-8") as handle:
            handle.write(f"{stamp} {agent}: {text}\n")
    except OSError:
        pass


def run_hook(agent: str, args: list[str]) -> int:
    """Handle one event from stdin; returns the exit code."""
    spec = _agent(agent)
    store_dir = None
    strict = strict_hooks()
    try:
        if args:
            raise SnapstoreError(f"unexpected arguments: {' '.join(args)}")
        env = Environment.read()
        action = parse(spec, load_payload(sys.stdin.buffer.read(MAX_PAYLOAD + 1)))
        if action.kind in (IGNORE, START) or (action.kind in (SHELL_PRE, SHELL_POST)
                                               and not (env.store_dir or find_root(action.cwd))):
            sys.stdout.write(spec.silent)  # a shell call matters only to a store in scan mode
            return 0
        warnings: list[str] = []
        store, config = open_for_hook(env, action.cwd, warnings.append)
        with store:
            store_dir = store.store_dir
            if store.unfinished_operations():
                store.resume()
            outcome = apply(store, action, scan=config.track_shell)
            warnings += outcome.warnings
            if action.kind == END and config.gc_auto:
                from . import autogc
                note = autogc.run_if_due(store, config)
                if note is not None:
                    warnings.append(note)
            if action.kind == END and config.auto_push:
                from . import autopush
                try:
                    autopush.start(store_dir, store.root, config.auto_push)
                except OSError as exc:
                    warnings.append(f"automatic push could not start: {exc}")
        for warning in warnings:
            print(f"snapstore: {warning}", file=sys.stderr)
            _log(store_dir, agent, warning)
        sys.stdout.write(spec.silent)
        return 0
    except SnapstoreError as exc:
        from .failures import message  # only on the error path
        text = message(exc)
    except Exception as exc:  # a hook must not break the agent
        text = f"internal error: {exc!r}"
    print(f"snapstore: {text}", file=sys.stderr)
    _log(store_dir, agent, text)
    if strict:
        return 2
    sys.stdout.write(spec.silent)
    return 0


if __name__ == "__main__":
    main()
