"""The ``snapstore`` console script, and its fast path for agents' hook events.

Agents spawn ``snapstore hook AGENT [EVENT] [--no-create]`` on every tool
call, so that path must not pay for Click or rich: it runs here, before either
is imported, and imports only what capture needs. Every other command goes
through the Click application in ``snapstore_cli.app``.

A hook must never break the agent: snapstore's own failures print one line on
stderr, go to ``<store>/hook.log``, and exit 0, unless ``SNAPSTORE_STRICT=1``,
which makes them block the agent's tool call (exit 2, or the agent's own way to
block: Cline's ``{"cancel": true}``). ``EVENT`` names the event for agents whose
payload does not (Copilot CLI, Cline, opencode's plugin). ``--no-create`` is
what user-wide installs write: in a folder with no store, the hook does nothing.
"""

from __future__ import annotations

import json
import os
import sys
import time

from snapstore import SnapstoreError, Store, find_root
from snapstore.adapters import (
    AGENT_NAMES,
    END,
    IGNORE,
    MAX_PAYLOAD,
    SHELL_POST,
    SHELL_PRE,
    START,
    Agent,
    HookAction,
    apply,
    load_payload,
    module_of,
    parse,
    reply,
)

from .settings import Config, Environment, open_for_hook, strict_hooks

NO_CREATE = "--no-create"


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    # every agent's hook events (opencode's plugin's too) take the fast path
    if (
        len(args) >= 2
        and args[0] == "hook"
        and args[1] in AGENT_NAMES
        and not any(a in ("--help", "-h") for a in args[2:])
    ):
        sys.exit(run_hook(args[1], args[2:]))
    from .app import run

    run(args)


def agent_table(name: str) -> Agent:
    """The agent's table, importing only its own module."""
    return module_of(name).AGENT


def log_line(store_dir: str | None, agent: str, text: str) -> None:
    """One failure or warning of a hook into ``<store>/hook.log`` (`snapstore doctor` reads
    it); nothing when there is no store."""
    if store_dir is None or not os.path.isdir(store_dir):
        return
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
    try:
        with open(os.path.join(store_dir, "hook.log"), "a", encoding="utf-8") as handle:
            handle.write(f"{stamp} {agent}: {text}\n")
    except OSError:
        pass


def _store_here() -> str | None:
    """The store of the hook's working folder, for logging a failure that came before the
    store was opened (a bad payload): ``snapstore doctor`` reads the log."""
    try:
        env = Environment.read()
        root = find_root(os.getcwd())
    except (SnapstoreError, OSError):
        return None
    return env.store_dir_for(root)


def _hook_args(args: list[str]) -> tuple[str | None, bool]:
    """The event named on the command line, and whether ``--no-create`` was given."""
    words = [a for a in args if a != NO_CREATE]
    if len(words) > 1 or any(w.startswith("-") for w in words):
        raise SnapstoreError(f"unexpected arguments: {' '.join(args)}")
    return (words[0] if words else None), NO_CREATE in args


def _via_copilot(spec: Agent, action: HookAction) -> Agent | None:
    """Copilot CLI runs Claude Code's hooks too (``COPILOT_CLI=1``), with Claude's names
    and its own arguments: they capture for Copilot, under its session names, unless
    Copilot's own snapstore hooks are installed and capture the same calls (None)."""
    from snapstore.adapters.copilot import own_hooks

    project = os.environ.get("COPILOT_PROJECT_DIR") or action.cwd
    if own_hooks(project, os.path.expanduser("~")):
        return None
    return spec._replace(name="copilot")


def record(store: Store, config: Config, action: HookAction, strict: bool = False) -> list[str]:
    """Record one hook event (the hook command's and ``snapstore serve``'s alike): finish a
    rewind a crash cut short, apply the event, and at a turn's end run the automatic gc and
    push the store's config asks for. Returns the warnings to show.

    With ``strict``, a path that could not be captured fails the event (raised), once
    every other path of it is captured."""
    if store.unfinished_operations():
        store.resume()
    outcome = apply(store, action, scan=config.track_shell)
    if strict and outcome.refused:
        raise outcome.refused[0]
    warnings = list(outcome.warnings)
    if action.kind == END and config.gc_auto:
        from . import autogc

        note = autogc.run_if_due(store, config)
        if note is not None:
            warnings.append(note)
    if action.kind == END and config.auto_push:
        from . import autopush

        try:
            autopush.start(store.store_dir, store.root, config.auto_push)
        except OSError as exc:
            warnings.append(f"automatic push could not start: {exc}")
    return warnings


def run_hook(agent: str, args: list[str]) -> int:
    """Handle one event from stdin; returns the exit code."""
    spec = agent_table(agent)
    store_dir = None
    strict = strict_hooks()
    event: str | None = None
    try:
        event, no_create = _hook_args(args)
        env = Environment.read()
        payload = load_payload(sys.stdin.buffer.read(MAX_PAYLOAD + 1))
        action = parse(spec, payload, event, os.getcwd())
        event = action.event
        if (
            action.kind not in (IGNORE, START)
            and agent == "claude-code"
            and os.environ.get("COPILOT_CLI") == "1"
        ):
            copilot = _via_copilot(spec, action)
            action = parse(copilot, payload, event, os.getcwd()) if copilot else HookAction(IGNORE)
        # a shell call matters only to a store in scan mode; --no-create: only to a store
        if action.kind in (IGNORE, START) or (
            (no_create or action.kind in (SHELL_PRE, SHELL_POST))
            and not env.store_dir
            and find_root(action.cwd) is None
        ):
            sys.stdout.write(reply(spec, event))
            return 0
        warnings: list[str] = []
        store, config = open_for_hook(env, action.cwd, warnings.append)
        with store:
            store_dir = store.store_dir
            warnings += record(store, config, action, strict)
        for warning in warnings:
            print(f"snapstore: {warning}", file=sys.stderr)
            log_line(store_dir, agent, warning)
        sys.stdout.write(reply(spec, action.event))
        return 0
    except SnapstoreError as exc:
        from .failures import message  # only on the error path

        text = message(exc)
    except Exception as exc:  # a hook must not break the agent
        text = f"internal error: {exc!r}"
    print(f"snapstore: {text}", file=sys.stderr)
    log_line(store_dir or _store_here(), agent, text)
    if strict:
        if spec.deny:
            sys.stdout.write(spec.deny.replace("{reason}", json.dumps(f"snapstore: {text}")))
        return 2
    sys.stdout.write(reply(spec, event or ""))
    return 0


if __name__ == "__main__":
    main()
