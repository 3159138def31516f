"""The hook command group: `hook AGENT [EVENT]` and `hook install AGENT`.

`snapstore hook AGENT` normally never reaches Click: the console script
dispatches it straight to ``entry.run_hook`` to keep agents fast. The commands
here serve `--help`, completion, and calls with global options first.

`hook install` writes each agent's hooks in that agent's own format (see
``snapstore.adapters.install``) into one of three scopes, and says which file
and why:

- ``local``: the agent's personal settings for this project, where it has them
  (Claude Code, Copilot CLI, Auggie). The command names this machine's
  snapstore by its absolute path, shell-quoted; the file stays out of git.
- ``project``: the project's shared settings, committed with the code. The
  command is ``snapstore`` from PATH, so it works on every teammate's machine.
- ``user``: the user's own settings, for every project. The command names this
  machine's snapstore and carries ``--no-create``: in a folder without a store
  the hook does nothing.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from typing import TYPE_CHECKING

import click

from snapstore import find_root
from snapstore.adapters import AGENT_NAMES, module_of
from snapstore.adapters.install import merge_hooks, remove_hooks
from snapstore.core.fsio import exclude_from_git

from ....operations import registration
from ....operations.checks import config_path, gemini_version
from ....operations.registration import snapstore_words
from ....output.plain import say
from ....output.results import scan_summary
from ....output.rich import console
from ....settings.environment import project_root
from ...hook import NO_CREATE, run_hook
from ..app import common_options, emit, options
from .scan import track_shell_on

if TYPE_CHECKING:
    from snapstore.ops.scanrecord import ScanResult

#: Every agent ``hook install`` knows, by its command-line name.
AGENTS = AGENT_NAMES
SCOPES = ("local", "project", "user")


@click.group()
def hook() -> None:
    """Agent hooks: handle one event, or install the hooks into an agent."""


def _event_command(agent: str) -> click.Command:
    @click.argument("event", required=False)
    @click.option(
        "--no-create",
        is_flag=True,
        help="Do nothing in a folder with no store (user-wide installs).",
    )
    def command(event: str | None, no_create: bool) -> None:
        sys.exit(
            run_hook(agent, [*([event] if event else []), *([NO_CREATE] if no_create else [])])
        )

    command.__doc__ = (
        f"Handle one {agent} hook event from stdin (EVENT: the event's name, "
        "for agents whose payload does not name it)."
    )
    return hook.command(agent)(command)


for _agent_name in AGENTS:
    _event_command(_agent_name)


def hook_command(agent: str, scope: str) -> str:
    """The shell command the agent runs: snapstore from PATH in shared project settings,
    this machine's snapstore elsewhere; always shell-quoted (a path may hold spaces)."""
    if scope == "project":
        if agent == "copilot":  # Copilot denies a tool call whose hook fails: no snapstore,
            # no hook, on a teammate's machine
            return "command -v snapstore >/dev/null 2>&1 || exit 0; snapstore hook copilot"
        return f"snapstore hook {agent}"
    return shlex.join(
        [*snapstore_words(), "hook", agent, *([NO_CREATE] if scope == "user" else [])]
    )


def _why(agent: str, scope: str, command: str) -> str:
    """One sentence: why this file, and what the command is."""
    if scope == "local":
        return (
            "your personal settings for this project, which stay out of git: the hooks "
            f"name this machine's snapstore ({command.split(' hook ')[0]})"
        )
    if scope == "user":
        return (
            "your own settings, for every project: the hooks name this machine's "
            "snapstore, and do nothing in a folder without a store (`snapstore init` "
            "there to record it)"
        )
    personal = (
        ""
        if "local" in module_of(agent).CONFIG
        else f" ({agent} has no personal settings file per project)"
    )
    return (
        f"the project's shared settings{personal}: the hooks call `snapstore` from PATH, "
        "so they work on every machine that has it"
    )


def _gemini_release() -> tuple[dict[str, bool], str]:
    """What this machine's Gemini CLI needs to run hooks (releases before 0.26 each want a
    switch that later ones reject), and a sentence saying so."""
    from snapstore.adapters.gemini_cli import switches

    version = gemini_version()
    if not version:
        return {}, (
            'Gemini CLI 0.25 and older run hooks only when switched on ("hooks": '
            '{"enabled": true}, and before 0.25 "tools": {"enableHooks": true}), '
            "which newer releases reject; `gemini --version` did not answer here, so "
            "nothing was switched."
        )
    needed = switches(version)
    if needed:
        return needed, (
            f"Gemini CLI {version} runs hooks only when switched on: set {', '.join(needed)} too."
        )
    return {}, f"Gemini CLI {version} runs hooks without being switched on."


def _shell_on(start: str, root: str, scope: str) -> tuple[bool, ScanResult | None]:
    """Put the workspace's store in scan mode (created if need be; a user-wide install
    changes only a store already there): whether it is in scan mode now, and the baseline
    scan when this turned it on."""
    if scope == "user" and find_root(start) is None:
        return False, None
    with options().env.open(root, create=True) as store:
        return True, track_shell_on(store)


def coverage(agent: str, shell: bool, scan_mode: bool) -> tuple[str, str]:
    """What the hooks cover and what they do not, one sentence each."""
    spec = module_of(agent).AGENT
    files = f"file tools ({', '.join(spec.file_tools)})"
    tools = ", ".join(spec.shell_tools)
    if shell and scan_mode:
        return (
            f"{files} and the shell ({tools})",
            "paths a .gitignore or .snapstoreignore ignores, and files over the size cap "
            "(skipped and reported by each scan)",
        )
    if shell:
        return (
            f"{files}; the shell ({tools}) once the workspace's store is in scan mode",
            "the shell, in a folder whose store is not in scan mode (`snapstore init` there "
            "turns it on)",
        )
    return files, f"the shell ({tools}): what its commands change (install without --no-shell)"


#: What each agent needs before it runs the hooks `hook install` wrote (said after it).
INSTALL_NOTES = {
    "cline": (
        "Cline runs TaskComplete after the CLI exits: if `snapstore rewind` says the turn is "
        "still open, wait a moment (or pass --force if Cline was killed)."
    ),
    "codex": (
        "Codex runs a project's hooks only in a trusted project, and each hook only once you "
        'trust it: start `codex` here and choose "Trust all and continue" (or review them '
        "with /hooks). Until then Codex skips them without a word; `snapstore doctor` tells "
        "you when no Codex turn was recorded."
    ),
    "copilot": (
        "Copilot CLI loads a repository's hooks only in a trusted folder: answer its trust "
        "prompt, or pass --trust-folder."
    ),
    "cursor": (
        "Cursor runs a project's hooks only in a trusted workspace; Cursor Settings > Hooks "
        "lists them and their runs."
    ),
    "gemini-cli": (
        "Gemini CLI runs a project's hooks only in a trusted folder (`--skip-trust` alone "
        "does not run them): trust it once with /permissions, or add it to "
        "~/.gemini/trustedFolders.json."
    ),
    "opencode": (
        "On its next start opencode installs @opencode-ai/plugin next to the plugin with npm "
        "(once; it needs the network). The plugin itself needs nothing from it."
    ),
    "qwen-code": (
        "Qwen Code runs a project's hooks only in a trusted folder: trust it when Qwen Code "
        "asks, or add it to ~/.qwen/trustedFolders.json."
    ),
}


#: Agents whose HTTP hooks can block a write when ``snapstore serve`` does not answer.
HTTP_AGENTS = ("claude-code",)


def _install_http(
    agent: str, scope: str, root: str, path: str, shell: bool
) -> tuple[list[str], str]:
    """Write HTTP hooks that post to this workspace's ``snapstore serve``: the events, the
    daemon's start at each session's start, and the secret the header carries. Returns
    what was added and the daemon's URL."""
    from snapstore.adapters.install import read_json, write_text

    from ... import daemon as serve

    if agent not in HTTP_AGENTS:
        raise click.BadParameter(
            f"{agent}'s HTTP hooks let a tool call go ahead when nothing answers, so a write "
            "could go uncaptured; install its command hooks (without --http)",
            param_hint="--http",
        )
    if scope != "local":
        raise click.BadParameter(
            "HTTP hooks name this machine's port and this workspace's "
            "secret: they go in --scope local",
            param_hint="--scope",
        )
    with options().env.open(root, create=True) as store:  # the store holds port and secret
        store_dir = store.store_dir
    key = serve.secret(store_dir)  # first: a secret that is not ours stops the install here
    url = f"http://127.0.0.1:{serve.port(store_dir)}/snapstore/hook/{agent}"
    start = shlex.join([*snapstore_words(), "serve", "--detach"])
    block = module_of(agent).http_block(
        url, {serve.HEADER: f"${{{serve.SECRET_VAR}}}"}, [serve.SECRET_VAR], start, shell
    )
    added = merge_hooks(path, block, agent)
    settings = read_json(path)  # Claude Code fills the header from its environment: the
    env = settings.setdefault("env", {})  # settings' env, in this git-ignored file (0600)
    if not isinstance(env, dict):
        raise click.ClickException(f"'env' in {path} is not an object")
    if env.get(serve.SECRET_VAR) != key:
        env[serve.SECRET_VAR] = key
        added.append("env")
    write_text(path, json.dumps(settings, indent=2) + "\n", mode=0o600)
    return added, url


def _agent_list(width: int = 56) -> str:
    """The agents, a few to a line, never cut inside a name (Click's wrapping breaks at the
    hyphen of "gemini-cli"); a ``\b`` paragraph, which Click leaves as it is."""
    lines, line = [], ""
    for name in AGENTS:
        item = f"{name}, " if name != AGENTS[-1] else f"{name}."
        if line and len(line) + len(item) > width:
            lines.append(line.rstrip())
            line = ""
        line += item
    return "\b\nAGENT is one of:\n" + "\n".join([*lines, line])


@hook.command(
    "install",
    help="Write snapstore's hooks into AGENT's config, keeping what is there.\n\n" + _agent_list(),
)
@click.argument("agent", type=click.Choice(AGENTS), metavar="AGENT")
@click.option(
    "--scope",
    type=click.Choice(SCOPES),
    default=None,
    help="local: your personal settings for this project (the default where the "
    "agent has them); project: the shared project settings (the default "
    "elsewhere); user: your settings for every project.",
)
@click.option(
    "--http",
    "http",
    is_flag=True,
    help="HTTP hooks that post to `snapstore serve` (Claude Code; --scope local): "
    "no process per event, and a write is blocked while the daemon is down.",
)
@click.option(
    "--no-shell",
    is_flag=True,
    help="Hook the file tools only: what the agent's shell commands change is not recorded "
    "(by default the shell tool is hooked too, and the store is put in scan mode).",
)
@click.option(
    "--no-mcp",
    is_flag=True,
    help="Do not register `snapstore mcp` in the agent's MCP settings (by default the "
    "agent gets tools to list, read and take back its own turns).",
)
@click.option(
    "--mcp-read-only",
    is_flag=True,
    help="Register `snapstore mcp --read-only`: the reading tools only, no rewind_files.",
)
@common_options
def install(
    agent: str,
    scope: str | None,
    http: bool,
    no_shell: bool,
    no_mcp: bool,
    mcp_read_only: bool,
) -> None:
    """Write snapstore's hooks into AGENT's config, keeping what is there, and register
    `snapstore mcp` in its MCP settings at the same scope."""
    opts = options()
    mod = module_of(agent)
    scope = _scope(agent, scope)
    if no_mcp and mcp_read_only:
        raise click.BadParameter("--mcp-read-only registers the server; --no-mcp does not")
    start = os.path.realpath(opts.root or os.getcwd())
    root = find_root(start) or project_root(start)
    path = config_path(agent, scope, root)
    if not no_mcp:  # what would refuse the server refuses the install, before any write
        registration.can_register(agent, scope, root, mcp_read_only)
    command = hook_command(agent, scope)
    scan_mode, baseline = _shell_on(start, root, scope) if not no_shell else (False, None)
    notes = [INSTALL_NOTES[agent]] if agent in INSTALL_NOTES else []
    extra = {}
    if agent == "gemini-cli":
        extra["switches"], note = _gemini_release()
        notes.append(note)
    if http:
        added, command = _install_http(agent, scope, root, path, not no_shell)
        notes.append(
            "Each session starts `snapstore serve` if it is not running; while it is "
            "down, Claude Code blocks prompts and writes (onFailure: block) and says "
            "so: run `snapstore serve --detach` to go on."
        )
    else:
        added = mod.install(path, command, not no_shell, **extra)
    registered = None if no_mcp else registration.register(agent, scope, root, mcp_read_only)
    if registered is not None:
        registered["can"] = registration.can_do(mcp_read_only)
        if registered["wide"]:
            notes.append(
                f"{agent} has no MCP settings of its own per project: `snapstore mcp` is "
                f"registered for all your projects in {registered['file']} (elsewhere its "
                "tools say there is no store)."
            )
        if agent in MCP_NOTES:
            notes.append(MCP_NOTES[agent](scope))
    covers, uncovered = coverage(agent, not no_shell, scan_mode)
    excluded = scope == "local" and exclude_from_git(root, os.path.relpath(path, root))
    warnings = []
    if scope == "project" and shutil.which("snapstore") is None:
        warnings.append(
            "`snapstore` is not on your PATH, so these hooks will not find it: "
            "put it there, or install with --scope local or --scope user"
        )
    why = (
        _why(agent, scope, command)
        if not http
        else (
            f"your personal settings for this project, which stay out of git (mode 0600: it holds "
            f"the workspace's secret): the hooks post to snapstore serve at {command}"
        )
    )

    def human() -> None:
        out = console()
        if added:
            out.print(f"Added snapstore hooks to {path}: {', '.join(added)}")
        else:
            out.print(f"{path} already has snapstore's hooks; nothing changed")
        out.print(f"  That file is {why}.")
        if excluded:
            out.print(f"  Added it to {os.path.join(root, '.git', 'info', 'exclude')}.")
        if baseline is not None:
            scan_summary(baseline)
        out.print(f"  Covers: {covers}; not covered: {uncovered}.")
        if registered is not None:
            verb = "Registered" if registered["added"] else "Already registered:"
            out.print(f"  {verb} `snapstore mcp` in {registered['file']}: {registered['can']}.")
        for line in notes:
            out.print(f"  {line}")
        for warning in warnings:
            say(f"snapstore: {warning}")

    emit(
        {
            "file": path,
            "added": added,
            "scope": scope,
            "command": command,
            "why": why,
            "shell": not no_shell,
            "track_shell": scan_mode,
            "covers": covers,
            "not_covered": uncovered,
            **({"scan": baseline.to_json()} if baseline is not None else {}),
            "notes": notes,
            "warnings": warnings,
            "mcp": registered,
        },
        human,
    )


def _scope(agent: str, scope: str | None) -> str:
    """The scope asked for, or the agent's default one; refused where the agent has none."""
    mod = module_of(agent)
    scope = scope or ("local" if "local" in mod.CONFIG else "project")
    if scope not in mod.CONFIG:
        raise click.BadParameter(
            f"{agent} has no {scope} settings; use {' or '.join(mod.CONFIG)}", param_hint="--scope"
        )
    return scope


#: What an agent needs before it starts a registered MCP server, said after the install.
MCP_NOTES = {
    "claude-code": lambda scope: (
        "Claude Code asks once before it starts the servers of a project's .mcp.json: "
        "approve snapstore (or list it in enabledMcpjsonServers)."
        if scope == "project"
        else "In Claude Code the tools are mcp__snapstore__list_turns and so on; allow them "
        "in /permissions to skip the prompt for each call."
    ),
    "codex": lambda scope: (
        "Codex starts a project's MCP servers (.codex/config.toml) only in a trusted project."
        if scope == "project"
        else "Codex starts the server at each session's start (`codex mcp list` shows it)."
    ),
}


@hook.command("uninstall")
@click.argument("agent", type=click.Choice(AGENTS))
@click.option(
    "--scope",
    type=click.Choice(SCOPES),
    default=None,
    help="The scope `hook install` wrote (its default when not given).",
)
@common_options
def uninstall(agent: str, scope: str | None) -> None:
    """Take snapstore's hooks and its MCP server out of AGENT's config, keeping the rest."""
    opts = options()
    scope = _scope(agent, scope)
    start = os.path.realpath(opts.root or os.getcwd())
    root = find_root(start) or project_root(start)
    path = config_path(agent, scope, root)
    mark = getattr(module_of(agent), "MARK", "")
    removed = remove_hooks(path, agent, mark) if os.path.exists(path) else []
    server = registration.unregister(agent, scope, root)

    def human() -> None:
        out = console(stderr=True)
        if removed:
            out.print(f"Removed snapstore's hooks from {path}: {', '.join(removed)}")
        else:
            out.print(f"{path} has no snapstore hooks; nothing changed there")
        if server["removed"]:
            out.print(f"Removed `snapstore mcp` from {server['file']}")
        out.print("  The store and its history stay; `snapstore hook install` puts them back.")

    emit({"file": path, "removed": removed, "scope": scope, "mcp": server}, human)
