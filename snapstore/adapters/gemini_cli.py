"""Gemini CLI hooks (google-gemini/gemini-cli, docs/hooks).

Events used: BeforeAgent begins a turn, BeforeTool and AfterTool of
``write_file`` and ``replace`` capture around the write, AfterAgent and
SessionEnd end the turn. In scan mode ``run_shell_command`` is hooked too
(AfterTool also comes after a failed call); Gemini CLI gives no tool call id,
so a session's shell calls are paired in order. Gemini CLI reads stdout as
JSON, so a successful hook prints ``{}``. File paths may be relative to ``cwd``.
Releases before 0.26 run hooks only when told to, each its own way
(:func:`switches`); from 0.26 on, hooks are on by default and the old switch
fails settings validation, so the installer asks ``gemini --version`` first.
"""

from __future__ import annotations

from typing import Any

from . import BEGIN, END, POST, PRE, START, Agent

AGENT = Agent(
    name="gemini-cli",
    events={
        "BeforeAgent": BEGIN,
        "BeforeTool": PRE,
        "AfterTool": POST,
        "AfterAgent": END,
        "SessionEnd": END,
        "SessionStart": START,
    },
    file_tools=("write_file", "replace"),
    path_keys=("file_path",),
    silent="{}",
    shell_tools=("run_shell_command",),
)

CONFIG = {"project": ".gemini/settings.json", "user": "~/.gemini/settings.json"}


def settings_block(command: str, shell: bool = False) -> dict[str, list[dict[str, Any]]]:
    """The hooks to merge into .gemini/settings.json (timeouts in milliseconds);
    ``shell``: scan mode's hooks around ``run_shell_command``."""

    def hook(name: str) -> dict[str, Any]:
        return {
            "type": "command",
            "command": command,
            "name": f"snapstore-{name}",
            "timeout": 30000,
        }

    tools = AGENT.matcher(shell, whole=True)
    block: dict[str, list[dict[str, Any]]] = {
        "BeforeAgent": [{"hooks": [hook("begin")]}],
        "BeforeTool": [{"matcher": tools, "hooks": [hook("pre-write")]}],
        "AfterTool": [{"matcher": tools, "hooks": [hook("post-write")]}],
        "AfterAgent": [{"hooks": [hook("end")]}],
        "SessionEnd": [{"hooks": [hook("end-session")]}],
    }
    if shell:  # a session's start starts the workspace's daemon (its watcher)
        block["SessionStart"] = [{"hooks": [hook("session-start")]}]
    return block


def switches(version: str) -> dict[str, bool]:
    """The settings an older Gemini CLI (``gemini --version``) needs to run hooks at all, as
    dotted keys; none from 0.26 on, where hooks are on by default. Measured with each
    release: 0.20 to 0.22 take ``tools.enableHooks`` and refuse to start with
    ``hooks.enabled``; 0.24 needs both; 0.25 needs ``hooks.enabled``; 0.26 to 0.61 print
    "Invalid configuration" at every start when ``hooks.enabled`` is there."""
    try:
        release = tuple(int(part) for part in version.strip().split(".")[:2])
    except ValueError:
        return {}
    if release >= (0, 26) or len(release) < 2:
        return {}
    if release >= (0, 24):
        return {"tools.enableHooks": True, "hooks.enabled": True}
    return {"tools.enableHooks": True}


def install(
    path: str, command: str, shell: bool = False, switches: dict[str, bool] | None = None
) -> list[str]:
    """``switches``: what an older release needs to run hooks (:func:`switches`)."""
    from .install import merge_hooks

    return merge_hooks(
        path, settings_block(command, shell), AGENT.name, top=switches, drop=("SessionStart",)
    )
