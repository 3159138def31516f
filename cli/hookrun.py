"""Running one agent hook event: the fast path, without Click or rich.

Agents spawn this for every tool call, so it imports only what capture needs.
A hook must never break the agent: snapstore's own failures print one line on
stderr, go to ``<store>/hook.log``, and exit 0, unless ``SNAPSTORE_STRICT=1``,
which makes them exit 2 (a blocking error for both agents).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable

from snapstore import NotFound, SnapstoreError, Store, find_root
from snapstore.adapters import (
    BEGIN,
    END,
    IGNORE,
    MAX_PAYLOAD,
    START,
    Agent,
    apply,
    load_payload,
    parse,
)


def _agent(name: str) -> Agent:
    if name == "claude-code":
        from snapstore.adapters.claude_code import AGENT
        return AGENT
    from snapstore.adapters.gemini_cli import AGENT
    return AGENT


def _project_root(cwd: str) -> str:
    """Where a hook creates a store when none exists: the git top level, else ``cwd``.

    Never the file system root or the home folder: :func:`_open` refuses those.
    """
    path = cwd
    while True:
        if os.path.exists(os.path.join(path, ".git")):
            return path
        parent = os.path.dirname(path)
        if parent == path:
            return cwd
        path = parent


def _log(store_dir: str | None, agent: str, message: str) -> None:
    if store_dir is None or not os.path.isdir(store_dir):
        return
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
    try:
        with open(os.path.join(store_dir, "hook.log"), "a", encoding="utf-8") as handle:
            handle.write(f"{stamp} {agent}: {message}\n")
    except OSError:
        pass


def _open(cwd: str) -> Store:
    explicit = os.environ.get("SNAPSTORE_DIR")
    timeout = float(os.environ.get("SNAPSTORE_LOCK_TIMEOUT") or 10)
    if explicit:
        return Store.open(None, store_dir=explicit, lock_timeout=timeout)
    root = find_root(cwd)
    if root is not None:
        return Store.open(root, lock_timeout=timeout)
    project = _project_root(cwd)
    home = os.path.realpath(os.path.expanduser("~"))
    if os.path.realpath(project) in (os.path.sep, home):
        raise NotFound(f"no snapstore store for {cwd}, and {project} is too broad to create one",
                       hint="run `snapstore init` in the project folder")
    return Store.init(project, lock_timeout=timeout)


def _scanner(store_dir: str, warnings: list[str]) -> Callable[[Store, str], None] | None:
    """Scan mode, when ``snapstore init --track-shell`` turned it on in the store's config.

    A failed scan is a warning: the turn still begins or ends.
    """
    from .config import Config
    try:
        config = Config.load(store_dir)
    except SnapstoreError as exc:
        warnings.append(str(exc))
        return None
    if not config.track_shell:
        return None

    def scan(store: Store, session: str) -> None:
        try:
            store.scan(session, max_file_size=config.max_file_size)
        except SnapstoreError as exc:
            warnings.append(f"scan failed: {exc}")

    return scan


def run_hook(agent: str, args: list[str]) -> int:
    """Handle one event from stdin; returns the exit code."""
    spec = _agent(agent)
    strict = os.environ.get("SNAPSTORE_STRICT") == "1"
    store_dir = None
    try:
        if args:
            raise SnapstoreError(f"unexpected arguments: {' '.join(args)}")
        action = parse(spec, load_payload(sys.stdin.buffer.read(MAX_PAYLOAD + 1)))
        if action.kind in (IGNORE, START):
            sys.stdout.write(spec.silent)
            return 0
        with _open(action.cwd) as store:
            store_dir = store.store_dir
            if store.pending_operations():
                store.resume()
            scan_warnings: list[str] = []
            scan = _scanner(store_dir, scan_warnings) if action.kind in (BEGIN, END) else None
            outcome = apply(store, action, scan=scan)
            if action.kind == END:
                from . import autogc
                config = autogc.due(store_dir)
                if config is not None:
                    outcome = outcome._replace(
                        warnings=[*outcome.warnings, autogc.run(store, config)])
        for warning in [*scan_warnings, *outcome.warnings]:
            print(f"snapstore: {warning}", file=sys.stderr)
            _log(store_dir, agent, warning)
        sys.stdout.write(spec.silent)
        return 0
    except SnapstoreError as exc:
        message = str(exc) + (f" ({exc.hint})" if exc.hint else "")
    except Exception as exc:  # a hook must not break the agent
        message = f"internal error: {exc!r}"
    print(f"snapstore: {message}", file=sys.stderr)
    _log(store_dir, agent, message)
    if strict:
        return 2
    sys.stdout.write(spec.silent)
    return 0
