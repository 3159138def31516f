"""Cursor hooks: https://cursor.com/docs/agent/hooks (``.cursor/hooks.json``).

Events used: beforeSubmitPrompt begins a turn, preToolUse and postToolUse of
the ``Write`` and ``Delete`` tools capture around the change
(``tool_input.file_path``; Cursor has no other before-edit event), stop and
sessionEnd end the turn. A session is a ``conversation_id``; the working folder
is ``cwd``, else the first of ``workspace_roots``. Cursor reads stdout as JSON:
``{}`` leaves every decision to Cursor (``"permission": "allow"`` would skip
the user's approval), and beforeSubmitPrompt gets ``{"continue": true}``.
Taken from Cursor's documentation: Cursor cannot be run here.
"""

from __future__ import annotations

from typing import Any

from . import BEGIN, END, POST, PRE, START, Agent

AGENT = Agent(
    name="cursor",
    events={
        "beforeSubmitPrompt": BEGIN,
        "preToolUse": PRE,
        "postToolUse": POST,
        "stop": END,
        "sessionEnd": END,
        "sessionStart": START,
    },
    file_tools=("Write", "Delete"),
    path_keys=("file_path", "path"),
    silent="{}",
    message_id_key="generation_id",
    shell_tools=("Shell",),
    call_id_key="tool_use_id",
    session_keys=("conversation_id",),
    cwd_keys=("cwd", "workspace_roots.0"),
    replies={"beforeSubmitPrompt": '{"continue": true}'},
)

CONFIG = {"project": ".cursor/hooks.json", "user": "~/.cursor/hooks.json"}


def settings_block(command: str, shell: bool = False) -> dict[str, list[dict[str, Any]]]:
    """The hooks for .cursor/hooks.json: flat entries (timeouts in seconds)."""
    tools = AGENT.matcher(shell)

    def hook(matcher: bool = False) -> list[dict[str, Any]]:
        entry: dict[str, Any] = {"command": command, "timeout": 30}
        return [{**entry, "matcher": tools} if matcher else entry]

    return {
        "beforeSubmitPrompt": hook(),
        "preToolUse": hook(matcher=True),
        "postToolUse": hook(matcher=True),
        "stop": hook(),
        "sessionEnd": hook(),
    }


def install(path: str, command: str, shell: bool = False) -> list[str]:
    from .install import merge_hooks

    return merge_hooks(path, settings_block(command, shell), AGENT.name, top={"version": 1})
