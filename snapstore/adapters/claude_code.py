"""Claude Code hooks: https://code.claude.com/docs/en/hooks.

Events used: UserPromptSubmit begins a turn, PreToolUse and PostToolUse of the
file tools capture around the write, Stop and SessionEnd end the turn. A hook
that succeeds prints nothing: on UserPromptSubmit and SessionStart, stdout
would be added to the model's context.
"""

from __future__ import annotations

from typing import Any

from . import BEGIN, END, POST, PRE, START, Agent

AGENT = Agent(
    name="claude-code",
    events={"UserPromptSubmit": BEGIN, "PreToolUse": PRE, "PostToolUse": POST, "Stop": END,
            "SessionEnd": END, "SessionStart": START},
    file_tools=("Write", "Edit", "MultiEdit", "NotebookEdit"),
    path_keys=("file_path", "notebook_path"),
    silent="",
    message_id_key="prompt_id",
)


def settings_block(command: str) -> dict[str, list[dict[str, Any]]]:
    """The hooks to merge into .claude/settings.json."""
    def hook(timeout: int) -> dict[str, Any]:
        return {"type": "command", "command": command, "timeout": timeout}
    tools = "|".join(AGENT.file_tools)
    return {
        "UserPromptSubmit": [{"hooks": [hook(30)]}],
        "PreToolUse": [{"matcher": tools, "hooks": [hook(30)]}],
        "PostToolUse": [{"matcher": tools, "hooks": [hook(30)]}],
        "Stop": [{"hooks": [hook(30)]}],
        "SessionEnd": [{"hooks": [hook(30)]}],
    }
