"""Codex CLI hooks: https://developers.openai.com/codex/hooks.

Claude Code's payload and config shape (``.codex/hooks.json``). Events used:
UserPromptSubmit begins a turn (its ``turn_id`` is the prompt's id),
PreToolUse and PostToolUse of ``apply_patch`` capture around the write, Stop
and SessionEnd end the turn. One ``apply_patch`` call carries a whole patch in
``tool_input.command`` that may add, update, move and delete several files;
every one is captured, both ends of a move included, relative to ``cwd``. The
shell tool arrives as ``Bash``. Codex ignores a failing hook silently, and
runs a hook only once it is trusted (``snapstore doctor`` notices when none
of them ever ran).
"""

from __future__ import annotations

from typing import Any

from . import BEGIN, END, POST, PRE, START, Agent

AGENT = Agent(
    name="codex",
    events={
        "UserPromptSubmit": BEGIN,
        "PreToolUse": PRE,
        "PostToolUse": POST,
        "Stop": END,
        "SessionEnd": END,
        "SessionStart": START,
    },
    file_tools=("apply_patch",),
    path_keys=(),
    silent="",
    message_id_key="turn_id",
    shell_tools=("Bash",),
    call_id_key="tool_use_id",
    patch_tools=("apply_patch",),
    patch_keys=("command", "input", "patch"),
)

CONFIG = {"project": ".codex/hooks.json", "user": "~/.codex/hooks.json"}
#: ``$CODEX_HOME`` moves the user's Codex folder (default ``~/.codex``).
USER_DIR_ENV = ("CODEX_HOME", "~/.codex")


def settings_block(command: str, shell: bool = False) -> dict[str, list[dict[str, Any]]]:
    """The hooks to merge into .codex/hooks.json (timeouts in seconds)."""
    from .install import claude_shaped

    return claude_shaped(command, AGENT.matcher(shell))


def install(path: str, command: str, shell: bool = False) -> list[str]:
    from .install import merge_hooks

    return merge_hooks(path, settings_block(command, shell), AGENT.name)
