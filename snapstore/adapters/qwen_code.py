"""Qwen Code hooks (QwenLM/qwen-code, docs/users/features/hooks.md): Claude Code's shape.

Events used: UserPromptSubmit begins a turn, PreToolUse and PostToolUse of
``write_file`` and ``edit`` capture around the write (``tool_input.file_path``),
Stop and SessionEnd end the turn. Qwen Code fires UserPromptSubmit again, with
an empty prompt, before each continuation after tool results: those are not new
turns. Headless runs send no SessionEnd. Timeouts are in seconds.
"""

from __future__ import annotations

from typing import Any

from . import BEGIN, END, POST, PRE, START, Agent

AGENT = Agent(
    name="qwen-code",
    events={
        "UserPromptSubmit": BEGIN,
        "PreToolUse": PRE,
        "PostToolUse": POST,
        "Stop": END,
        "SessionEnd": END,
        "SessionStart": START,
    },
    file_tools=("write_file", "edit"),
    path_keys=("file_path",),
    silent="",
    shell_tools=("run_shell_command",),
    call_id_key="tool_call_id",
    continuations=True,
)

CONFIG = {"project": ".qwen/settings.json", "user": "~/.qwen/settings.json"}


def settings_block(command: str, shell: bool = False) -> dict[str, list[dict[str, Any]]]:
    """The hooks to merge into .qwen/settings.json (timeouts in seconds)."""
    from .install import claude_shaped

    # anchored: Qwen Code tests an unanchored alternation as a regex (`edit` in `multi_edit`)
    return claude_shaped(command, AGENT.matcher(shell, whole=True))


def install(path: str, command: str, shell: bool = False) -> list[str]:
    from .install import merge_hooks

    return merge_hooks(path, settings_block(command, shell), AGENT.name)
