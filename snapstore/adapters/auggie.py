"""Auggie (Augment's CLI) hooks: https://docs.augmentcode.com/cli/hooks.

Claude Code's config shape in ``.augment/settings.json``, with Augment's own
payload: ``conversation_id``, ``workspace_roots``, ``tool_name`` and
``tool_input``. Events used: PromptSubmit begins a turn (``user_prompt``),
PreToolUse and PostToolUse of the file tools capture around the write
(``save-file`` and ``str-replace-editor``: ``path``; ``remove-files``:
``file_paths``; ``apply_patch``: every file of the patch in ``input``), Stop
and SessionEnd end the turn. Read from the installed package (0.36.0), whose
model protocol is Augment's own, so it is not driven here.
"""

from __future__ import annotations

from typing import Any

from . import BEGIN, END, POST, PRE, START, Agent

AGENT = Agent(
    name="auggie",
    events={
        "PromptSubmit": BEGIN,
        "PreToolUse": PRE,
        "PostToolUse": POST,
        "Stop": END,
        "SessionEnd": END,
        "SessionStart": START,
    },
    file_tools=("save-file", "str-replace-editor", "remove-files", "apply_patch"),
    path_keys=("path", "file_paths"),
    silent="",
    shell_tools=("launch-process",),
    session_keys=("conversation_id",),
    cwd_keys=("workspace_roots.0",),
    prompt_keys=("user_prompt",),
    patch_tools=("apply_patch",),
    patch_keys=("input",),
)

#: Auggie reads ``.augment/settings.local.json`` before the shared settings.
CONFIG = {
    "local": ".augment/settings.local.json",
    "project": ".augment/settings.json",
    "user": "~/.augment/settings.json",
}


def settings_block(command: str, shell: bool = False) -> dict[str, list[dict[str, Any]]]:
    """The hooks to merge into .augment/settings.json (the matcher is a regular expression)."""

    def hook() -> list[dict[str, Any]]:
        return [{"type": "command", "command": command}]

    tools = AGENT.matcher(shell, whole=True)
    return {
        "PromptSubmit": [{"hooks": hook()}],
        "PreToolUse": [{"matcher": tools, "hooks": hook()}],
        "PostToolUse": [{"matcher": tools, "hooks": hook()}],
        "Stop": [{"hooks": hook()}],
        "SessionEnd": [{"hooks": hook()}],
    }


def install(path: str, command: str, shell: bool = False) -> list[str]:
    from .install import merge_hooks

    return merge_hooks(path, settings_block(command, shell), AGENT.name)
