"""Hooks installed but nothing captured: find each agent's snapstore hooks and say why
they may not run.

An agent that cannot run its hook mostly carries on without a word (exit 127 from
an unquoted path with a space, a Codex hook never trusted, a Gemini CLI folder
never trusted), and the user finds out at the first rewind that nothing was
recorded. For every agent config (local, project and user scope) that names
``snapstore hook AGENT``, this checks that the command can start, that the agent
will load it (trust and enable settings), that the store has that agent's
sessions, and what ``hook.log`` says. ``snapstore doctor`` prints it all;
``snapstore status`` counts the problems.

A problem is what will lose a change: a hook that cannot start or that its agent will not
load, a failure in ``hook.log``, hooks that see the agent's shell tool with a store that is
not in scan mode. Everything else is a note: no turn recorded yet (right after an install),
a daemon that is not running between sessions (the next session starts it), a shell that
``--no-shell`` left out on purpose.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Iterable, Mapping
from typing import Any

from snapstore.adapters import AGENT_NAMES, jsonc, module_of
from snapstore.adapters.install import hook_commands, shell_hooked

#: What to do when an agent's hooks have never recorded a turn, per agent.
NEVER_RAN = {
    "codex": "Codex skips a hook it has not trusted, without a word: start `codex` here and "
    'choose "Trust all and continue" (or review them with /hooks)',
    "gemini-cli": "Gemini CLI runs a project's hooks only in a trusted folder (`--skip-trust` "
    "is not enough): trust it with /permissions",
    "qwen-code": "Qwen Code runs a project's hooks only in a trusted folder: trust it when it asks",
    "copilot": "Copilot CLI loads a repository's hooks only in a trusted folder: answer its "
    "trust prompt, or pass --trust-folder",
    "cursor": "Cursor runs a project's hooks only in a trusted workspace; see Cursor "
    "Settings > Hooks",
    "opencode": "opencode loads plugins when it starts: restart it",
}


def config_path(agent: str, scope: str, root: str) -> str:
    """Where the agent reads hooks of that scope."""
    mod = module_of(agent)
    where = mod.CONFIG[scope]
    if not where.startswith("~/"):
        return os.path.join(root, where)
    env = getattr(mod, "USER_DIR_ENV", None)  # Codex: $CODEX_HOME instead of ~/.codex
    if env and os.environ.get(env[0]) and where.startswith(env[1] + "/"):
        return os.path.join(os.environ[env[0]], where[len(env[1]) + 1 :])
    return os.path.expanduser(where)


def mcp_path(agent: str, scope: str, root: str, environ: Mapping[str, str] | None = None) -> str:
    """Where the agent reads MCP servers of that scope (snapstore.adapters.mcp.PLACES), with
    the user's variables (``$CODEX_HOME``, ``$COPILOT_HOME``, ...) read here."""
    from snapstore.adapters.mcp import DEFAULTS, PLACES

    env = os.environ if environ is None else environ
    where = PLACES[agent][scope].file
    var, slash, rest = where.partition("/")
    if var.startswith("$"):
        base = env.get(var[1:]) or os.path.expanduser(DEFAULTS[var])
        return os.path.join(base, rest) if slash else base
    if where.startswith("~/"):
        return os.path.expanduser(where)
    return os.path.join(root, where)


def gemini_version() -> str:
    """What ``gemini --version`` says on this machine ("" when no Gemini CLI answers)."""
    exe = shutil.which("gemini")
    if not exe:
        return ""
    try:
        return subprocess.run(
            [exe, "--version"], capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def hook_reports(store: Any | None, root: str) -> list[dict[str, Any]]:
    """:func:`check` for ``root``, with the store's sessions and hook log."""
    sessions: list[str] = []
    if store is not None:
        with store.repo.read() as v:
            sessions = [record.name for record in v.sessions()]
    return check(
        root, sessions, store.store_dir if store else None, os.path.expanduser("~"), os.environ
    )


def check(
    root: str,
    sessions: Iterable[str],
    store_dir: str | None,
    home: str,
    environ: dict[str, str] | os._Environ[str],
) -> list[dict[str, Any]]:
    """One report per installed config: agent, scope, file, commands, sessions (how many
    of that agent's sessions the store has), problems (what will lose a change), unrecorded
    (no session and no failure: never ran, or never used yet: a note) and advice (notes and
    what to do)."""
    names = list(sessions)
    scan_mode = store_dir is not None and _scan_mode(store_dir)
    hook_log = os.path.join(store_dir, "hook.log") if store_dir is not None else None
    failures = _failures(hook_log)
    reports = []
    for agent in AGENT_NAMES:
        for scope in module_of(agent).CONFIG:
            path = config_path(agent, scope, root)
            commands = sorted(set(hook_commands(path, agent)))
            if not commands:
                continue
            count = sum(name.startswith(f"{agent}/") for name in names)
            problems = [p for c in commands for p in _runnable(c)]
            problems += _loaded(agent, scope, path, root, home, environ)
            advice = []
            if any(c.startswith(("http://", "https://")) for c in commands):
                advice += _served(store_dir)
            logged = failures.get(agent, [])
            if logged:
                problems.append(
                    f"{len(logged)} hook failure(s) in {hook_log}; the last: {logged[-1]}"
                )
            if any(p.startswith("the hook command cannot start: /") for p in problems):
                advice.append(
                    f"run `snapstore hook install {agent}` again: it writes a command that starts"
                )
            shell = shell_hooked(path, agent)
            if shell and not scan_mode and store_dir is not None:  # the shell's changes: lost
                problems.append(_shell_advice(agent, scope, shell, scan_mode, commands))
            elif not (shell and scan_mode):  # --no-shell is a choice
                advice.append(_shell_advice(agent, scope, shell, scan_mode, commands))
            unrecorded = count == 0 and not logged
            if unrecorded:
                advice.append(
                    NEVER_RAN.get(
                        agent,
                        f"if you have used {agent} here since installing, its hooks do not run",
                    )
                )
            reports.append(
                {
                    "agent": agent,
                    "scope": scope,
                    "file": path,
                    "commands": commands,
                    "sessions": count,
                    "shell": shell and scan_mode,
                    "problems": list(dict.fromkeys(problems)),
                    "unrecorded": unrecorded,
                    "advice": advice,
                }
            )
    return reports


def _scan_mode(store_dir: str) -> bool:
    """Whether the store is in scan mode (its config, as snapstore uses it)."""
    from ..settings.config import Config

    return Config.load(store_dir).track_shell


def _shell_advice(
    agent: str, scope: str, hooked: bool, scan_mode: bool, commands: list[str]
) -> str:
    """Why the agent's shell commands go unrecorded, and the one command that fixes it."""
    tools = ", ".join(module_of(agent).AGENT.shell_tools)
    why = [] if hooked else [f"these hooks do not see its shell tool, {tools}"]
    if not scan_mode:
        why.append("the store is not in scan mode")
    default = "local" if "local" in module_of(agent).CONFIG else "project"
    words = ["snapstore hook install", agent]
    if scope != default:
        words.append(f"--scope {scope}")
    if any(c.startswith(("http://", "https://")) for c in commands):
        words.append("--http")
    return (
        f"the shell is not covered ({'; '.join(why)}), so what {agent}'s shell commands "
        f"change is not recorded: turn it on with `{' '.join(words)}`"
    )


def _served(store_dir: str | None) -> list[str]:
    """A note when no ``snapstore serve`` runs for the HTTP hooks: between sessions that is
    as it should be (each session's start starts it), and while it is down the agent blocks
    its prompts and writes rather than lose one."""
    if store_dir is not None:
        from ..doors.daemon import info

        if info(store_dir) is not None:
            return []
    return [
        "snapstore serve is not running now: the SessionStart hook starts it when a session "
        "starts (until it runs, Claude Code blocks prompts and writes and says so; "
        "`snapstore serve --detach` starts it by hand)"
    ]


def _failures(hook_log: str | None) -> dict[str, list[str]]:
    """hook.log's lines, ``STAMP AGENT: TEXT``, by agent."""
    found: dict[str, list[str]] = {}
    if hook_log is None:
        return found
    try:
        with open(hook_log, encoding="utf-8", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return found
    for line in lines:
        match = re.match(r"\S+ ([a-z-]+): (.*)", line)
        if match:
            found.setdefault(match.group(1), []).append(match.group(2))
    return found


def _runnable(command: str) -> list[str]:
    """Why the shell could not start this command (exit 127), if it could not."""
    if command.startswith(("http://", "https://")):  # an HTTP hook: no command to start
        return []
    if command.startswith("command -v snapstore "):  # Copilot's portable guard
        return (
            []
            if shutil.which("snapstore")
            else [
                "`snapstore` is not on PATH, so the hooks do nothing (put it there, or install "
                "with --scope local or --scope user)"
            ]
        )
    try:
        program = shlex.split(command)[0]
    except (ValueError, IndexError):
        return [f"the hook command cannot start: it does not parse as a shell command: {command}"]
    if "/" in program:
        if os.path.isfile(program) and os.access(program, os.X_OK):
            return []
        return [
            f"the hook command cannot start: {program} is not an executable file "
            f"(command: {command})"
        ]
    if shutil.which(program):
        return []
    return [
        f"the hook command cannot start: `{program}` is not on PATH (put it there, or "
        "install with --scope local or --scope user)"
    ]


def _loaded(
    agent: str,
    scope: str,
    path: str,
    root: str,
    home: str,
    environ: dict[str, str] | os._Environ[str],
) -> list[str]:
    """Why the agent would not load these hooks (its trust and enable settings)."""
    if agent in ("gemini-cli", "qwen-code") and scope == "project":
        folder = ".gemini" if agent == "gemini-cli" else ".qwen"
        trust = os.path.join(home, folder, "trustedFolders.json")
        if agent == "gemini-cli" and environ.get("GEMINI_CLI_TRUST_WORKSPACE") == "true":
            return _disabled(path)
        if not _trusted(_json(trust), root):
            return [
                f"this folder is not trusted in {trust}, so {agent} skips the project's hooks"
            ] + (_disabled(path) if agent == "gemini-cli" else [])
        return _disabled(path) if agent == "gemini-cli" else []
    if agent == "codex":
        codex_home = environ.get("CODEX_HOME") or os.path.join(home, ".codex")
        config = os.path.join(codex_home, "config.toml")
        try:
            with open(config, encoding="utf-8") as handle:
                text = handle.read()
        except OSError:
            text = ""
        problems = []
        if scope == "project" and not re.search(
            rf'\[projects\."{re.escape(root)}"\][^\[]*trust_level\s*=\s*"trusted"', text
        ):
            problems.append(
                f"Codex does not trust this project ({config}), so it skips the project's hooks"
            )
        if f'"{path}:' not in text:
            problems.append(
                f"Codex has not trusted these hooks ({config} has no hooks.state for {path})"
            )
        return problems
    return []


def _disabled(path: str) -> list[str]:
    """Gemini CLI's switches: ``hooks.enabled`` (0.25 and older), ``hooksConfig.enabled``."""
    settings = _json(path)
    hooks, config = _section(settings, "hooks"), _section(settings, "hooksConfig")
    if hooks.get("enabled") is False or config.get("enabled") is False:
        return [f"hooks are switched off in {path}"]
    if hooks.get("enabled") is True:
        from snapstore.adapters.gemini_cli import switches

        version = gemini_version()
        if version and "hooks.enabled" not in switches(version):
            return [
                f'"hooks": {{"enabled": true}} in {path} makes Gemini CLI {version} print '
                '"Invalid configuration" at every start (only 0.24 and 0.25 need it): '
                "remove it"
            ]
    return []


def _trusted(folders: dict[str, Any], root: str) -> bool:
    """Whether a trustedFolders.json trusts ``root``: a TRUST_FOLDER entry for it or a
    folder above it, or a TRUST_PARENT entry for a folder whose parent is that."""
    rules: dict[str, bool] = {}
    for folder, rule in folders.items():
        if rule == "TRUST_FOLDER":
            rules.setdefault(os.path.realpath(folder), True)
        elif rule == "TRUST_PARENT":
            rules.setdefault(os.path.dirname(os.path.realpath(folder)), True)
        elif rule == "DO_NOT_TRUST":
            rules[os.path.realpath(folder)] = False
    path = os.path.realpath(root)
    while True:
        if path in rules:
            return rules[path]
        parent = os.path.dirname(path)
        if parent == path:
            return False
        path = parent


def _section(settings: dict[str, Any], key: str) -> dict[str, Any]:
    """One object of a settings file; an empty one when it is missing or no object."""
    value = settings.get(key)
    return value if isinstance(value, dict) else {}


def _json(path: str) -> dict[str, Any]:
    """Gemini CLI's or Qwen Code's settings or trusted folders, read as they read them: JSON
    with comments."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.loads(jsonc.blank(handle.read()))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
