"""The hook command: ``snapstore hook AGENT [EVENT] [--no-create]``, one agent event from stdin.

Agents spawn it on every tool call, so it must not pay for Click or rich: the console
script (``snapstore_cli.launch``) runs it before either is imported, and it imports only
what capture needs. What the event does to the store (resume, apply, automatic gc and
push) is ``runner.record``, which ``snapstore serve`` shares.

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
from typing import TYPE_CHECKING

from snapstore import SnapstoreError, find_root
from snapstore.adapters import (
    BEGIN,
    IGNORE,
    MAX_PAYLOAD,
    SHELL_POST,
    SHELL_PRE,
    START,
    Agent,
    HookAction,
    load_payload,
    module_of,
    parse,
    reply,
)
from snapstore.core.db import append_private

from ..operations.runner import failure, record
from ..settings.config import Config

if TYPE_CHECKING:
    from snapstore import Store
from ..settings.environment import Environment, agent_homes, open_for_hook, strict_hooks

NO_CREATE = "--no-create"


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
        with append_private(os.path.join(store_dir, "hook.log")) as handle:
            handle.write(f"{stamp} {agent}: {text}\n".encode())
    except OSError:
        pass


def _store_here() -> str | None:
    """The store of the hook's working folder, for logging a failure that came before the
    store was opened (a bad payload): ``snapstore doctor`` reads the log."""
    store_dir = os.environ.get("SNAPSTORE_DIR")  # only it: another variable may be the failure
    try:
        root = find_root(os.getcwd())
    except (SnapstoreError, OSError):
        return None
    return Environment(os.path.abspath(store_dir) if store_dir else None).store_dir_for(root)


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


def _own_transcript(session: str) -> str:
    """The transcript of an agent whose begin event does not name it (Copilot CLI's log, in
    its home folder); "" for the others."""
    agent, _, session_id = session.partition("/")
    if agent != "copilot" or not session_id or "/" in session_id or session_id in (".", ".."):
        return ""
    return os.path.join(agent_homes()["copilot"], "session-state", session_id, "events.jsonl")


def _session_start(env: Environment, action: HookAction) -> None:
    """A session starts: in a store in scan mode, mark it live and start the workspace's
    daemon if none runs (detached: the hook does not wait for it). No store is made."""
    from ..operations.lifecycle import session_started, start_daemon
    from ..settings.config import Config

    root = action.cwd if env.store_dir else find_root(action.cwd)  # SNAPSTORE_DIR: the store
    store_dir = env.store_dir_for(root)  # knows its workspace
    if root is None or store_dir is None or not os.path.isdir(store_dir):
        return
    if Config.load(store_dir).track_shell:
        session_started(store_dir, action.session)
        start_daemon(store_dir, root)


def _set_up(store: Store, config: Config, warnings: list[str]) -> Config:
    """A store this hook just made gets init's defaults (``operations.setup``): its settings
    now, and the one line saying why scan mode is off, when it is."""
    from ..operations.setup import new_store

    _, why = new_store(store)
    if why is not None:
        warnings.append(why)
        return config
    return Config.load(store.store_dir)


def run_hook(agent: str, args: list[str]) -> int:
    """Handle one event from stdin; returns the exit code."""
    spec = agent_table(agent)
    store_dir = None
    event: str | None = None
    strict = True  # until SNAPSTORE_STRICT is read: a value it does not take blocks, as it asks
    try:
        strict = strict_hooks()
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
        if action.kind == BEGIN and not action.transcript and action.session:
            action = action._replace(transcript=_own_transcript(action.session))
        if action.kind == START:
            _session_start(env, action)
        # a shell call matters only to a store in scan mode; --no-create: only to a store
        if action.kind in (IGNORE, START) or (
            (no_create or action.kind in (SHELL_PRE, SHELL_POST))
            and not env.store_dir
            and find_root(action.cwd) is None
        ):
            sys.stdout.write(reply(spec, event))
            return 0
        warnings: list[str] = []
        store, config, made = open_for_hook(env, action.cwd, warnings.append)
        with store:
            store_dir = store.store_dir
            if made:  # what init gives a store: scan mode and the baseline, or why not
                config = _set_up(store, config, warnings)
            runs_it = None
            if action.kind == BEGIN:
                from ..operations.lifecycle import agent_process

                runs_it = agent_process()  # the agent's process: snapstore mcp asks for it
            warnings += record(store, config, action, strict, runs_it)
            if action.kind == BEGIN and config.track_shell:
                from ..operations.lifecycle import start_daemon

                start_daemon(store_dir, store.root)  # after the prompt's scan: never waited for
        for warning in warnings:
            if " bytes)" in warning:  # a size the library gives in bytes, as people read it
                from ..settings.values import readable_sizes

                warning = readable_sizes(warning)
            print(f"snapstore: {warning}", file=sys.stderr)
            log_line(store_dir, agent, warning)
        sys.stdout.write(reply(spec, action.event))
        return 0
    except Exception as exc:  # a hook must not break the agent
        text = failure(exc)[0]
    print(f"snapstore: {text}", file=sys.stderr)
    log_line(store_dir or _store_here(), agent, text)
    if strict:
        if spec.deny:
            sys.stdout.write(spec.deny.replace("{reason}", json.dumps(f"snapstore: {text}")))
        return 2
    sys.stdout.write(reply(spec, event or ""))
    return 0
