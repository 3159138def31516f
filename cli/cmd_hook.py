"""The hook command group: `hook claude-code`, `hook gemini-cli`, `hook install`.

`snapstore hook claude-code|gemini-cli` normally never reaches Click: the
console script dispatches it straight to ``entry.run_hook`` to keep agents fast. The
commands here serve `--help`, completion, and calls with global options first.
"""

from __future__ import annotations

import os
import shutil
import sys

import click

from snapstore import find_root
from snapstore.adapters import claude_code, gemini_cli
from snapstore.adapters.install import merge_hooks
from snapstore.db import STORE_DIRNAME

from .app import common_options, emit, options
from .entry import run_hook
from .render import console
from .settings import Config, Environment

AGENTS = {"claude-code": (claude_code, ".claude"), "gemini-cli": (gemini_cli, ".gemini")}


@click.group()
def hook() -> None:
    """Agent hooks: handle one event, or install the hooks into an agent."""


@hook.command("claude-code")
def hook_claude_code() -> None:
    """Handle one Claude Code hook event from stdin."""
    sys.exit(run_hook("claude-code", []))


@hook.command("gemini-cli")
def hook_gemini_cli() -> None:
    """Handle one Gemini CLI hook event from stdin."""
    sys.exit(run_hook("gemini-cli", []))


def _command(agent: str) -> str:
    """The hook command line: the absolute path of this snapstore, so PATH does not matter."""
    exe = shutil.which("snapstore") or (sys.argv[0] if os.path.isabs(sys.argv[0]) else None)
    return f"{exe or 'snapstore'} hook {agent}"


def _scan_mode(env: Environment, start: str) -> bool:
    """Whether the store for ``start`` is in scan mode: its hooks then take the shell tool."""
    root = find_root(start)
    store_dir = env.store_dir or (os.path.join(root, STORE_DIRNAME) if root else None)
    return store_dir is not None and Config.load(store_dir).track_shell


@hook.command("install")
@click.argument("agent", type=click.Choice(sorted(AGENTS)))
@click.option("--scope", type=click.Choice(["project", "user"]), default="project",
              show_default=True, help="The project's settings, or your user settings.")
@common_options
def install(agent: str, scope: str) -> None:
    """Merge snapstore's hooks into AGENT's settings file, keeping what is there."""
    module, folder = AGENTS[agent]
    opts = options()
    base = os.path.expanduser("~") if scope == "user" else os.path.realpath(
        opts.root or os.getcwd())
    settings = os.path.join(base, folder, "settings.json")
    shell = _scan_mode(opts.env, os.path.realpath(opts.root or os.getcwd()))
    added = merge_hooks(settings, module.settings_block(_command(agent), shell=shell),
                        f"hook {agent}")

    def human() -> None:
        out = console(stderr=True)
        if added:
            out.print(f"Added snapstore hooks to {settings}: {', '.join(added)}")
        else:
            out.print(f"{settings} already has snapstore's hooks; nothing changed")
    emit({"file": settings, "added": added}, human)
