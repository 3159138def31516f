"""GitHub Copilot CLI hooks:
https://docs.github.com/en/copilot/reference/copilot-cli-reference/cli-hooks-reference.

Events used: userPromptSubmitted begins a turn, preToolUse and postToolUse of
``create`` and ``edit`` capture around the write (``toolArgs.path``; an object
in 1.0.102, a JSON string in the docs: both are read), agentStop and
sessionEnd end the turn. The payload names no event, so the command the
installer writes carries it: ``snapstore hook copilot preToolUse``. Any
non-zero exit of a preToolUse hook denies the tool call, so the hook exits 0
on its own failures, unless in strict mode.

Copilot also runs Claude Code's hooks from ``.claude/settings*.json`` (see
``snapstore_cli.hooks``): :func:`own_hooks` says whether Copilot's own
snapstore hooks are installed, so that a write is captured once.
"""

from __future__ import annotations

import os
from typing import Any

from . import BEGIN, END, POST, PRE, START, Agent

AGENT = Agent(
    name="copilot",
    events={
        "userPromptSubmitted": BEGIN,
        "preToolUse": PRE,
        "postToolUse": POST,
        "agentStop": END,
        "sessionEnd": END,
        "sessionStart": START,
    },
    file_tools=("create", "edit"),
    path_keys=("path",),
    silent="",
    shell_tools=("bash",),
    event_key=None,
    time_key="timestamp",
    session_keys=("sessionId",),
    tool_keys=("toolName",),
    args_keys=("toolArgs",),
)

#: The personal settings file for this project is Copilot's "local" settings (1.0.8+).
CONFIG = {
    "local": ".github/copilot/settings.local.json",
    "project": ".github/hooks/snapstore.json",
    "user": "~/.copilot/hooks/snapstore.json",
}


def settings_block(command: str, shell: bool = False) -> dict[str, list[dict[str, Any]]]:
    """The hooks for a Copilot hooks file; each command names its event."""
    tools = AGENT.matcher(shell)

    def hook(event: str, matcher: bool = False) -> list[dict[str, Any]]:
        entry = {"type": "command", "bash": f"{command} {event}", "timeoutSec": 30}
        return [{**entry, "matcher": tools} if matcher else entry]

    return {
        "userPromptSubmitted": hook("userPromptSubmitted"),
        "preToolUse": hook("preToolUse", matcher=True),
        "postToolUse": hook("postToolUse", matcher=True),
        "agentStop": hook("agentStop"),
        "sessionEnd": hook("sessionEnd"),
    }


def install(path: str, command: str, shell: bool = False) -> list[str]:
    from .install import merge_hooks

    # a hooks file has a version; the settings files hold hooks among other settings
    version = {} if path.endswith("settings.local.json") else {"version": 1}
    return merge_hooks(path, settings_block(command, shell), AGENT.name, top=version)


def own_hooks(project: str, home: str) -> bool:
    """Whether Copilot's own snapstore hooks are installed for ``project``: then they
    capture, and Claude Code's hooks that Copilot also runs must not."""
    files = [
        os.path.join(project, ".github", "copilot", "settings.json"),
        os.path.join(project, ".github", "copilot", "settings.local.json"),
    ]
    for folder in (
        os.path.join(project, ".github", "hooks"),
        os.path.join(home, ".copilot", "hooks"),
    ):
        try:
            files += [
                os.path.join(folder, name)
                for name in sorted(os.listdir(folder))
                if name.endswith(".json")
            ]
        except OSError:
            continue
    for path in files:
        try:
            with open(path, encoding="utf-8") as handle:
                if "hook copilot" in handle.read():
                    return True
        except (OSError, UnicodeDecodeError):
            continue
    return False
