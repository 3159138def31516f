"""Claude Code hooks: https://code.claude.com/docs/en/hooks.

Events used: UserPromptSubmit begins a turn, PreToolUse and PostToolUse of the
file tools capture around the write, Stop and SessionEnd end the turn. A hook
that succeeds prints nothing: on UserPromptSubmit and SessionStart, stdout
would be added to the model's context.
"""

from __future__ import annotations

from typing import Any

from . import BEGIN, END, IGNORE, POST, PRE, START, HookAction, base_action, field_str, tool_paths

AGENT = "claude-code"
FILE_TOOLS = ("Write", "Edit", "MultiEdit", "NotebookEdit")
PATH_KEYS = ("file_path", "notebook_path")
EVENTS = {"UserPromptSubmit": BEGIN, "PreToolUse": PRE, "PostToolUse": POST, "Stop": END,
          "SessionEnd": END, "SessionStart": START}
#: What a successful hook prints on stdout.
SILENT = ""


def parse(payload: dict[str, Any]) -> HookAction:
    """The action one Claude Code hook event asks for."""
    kind = EVENTS.get(payload.get("hook_event_name", ""), IGNORE)
    if kind == IGNORE:
        return HookAction(IGNORE, event=str(payload.get("hook_event_name", "")))
    action = base_action(payload, AGENT, kind)
    if kind == BEGIN:
        action.prompt = field_str(payload, "prompt", required=False)
        action.message_id = payload.get("prompt_id") if isinstance(
            payload.get("prompt_id"), str) else None
    elif kind in (PRE, POST):
        action.tool = field_str(payload, "tool_name")
        if action.tool not in FILE_TOOLS:
            return HookAction(IGNORE, event=action.event, tool=action.tool)
        action.paths = tool_paths(payload, PATH_KEYS)
    return action


def settings_block(command: str) -> dict[str, list[dict[str, Any]]]:
    """The hooks to merge into .claude/settings.json."""
    def hook(timeout: int) -> dict[str, Any]:
        return {"type": "command", "command": command, "timeout": timeout}
    tools = "|".join(FILE_TOOLS)
    return {
        "UserPromptSubmit": [{"hooks": [hook(30)]}],
        "PreToolUse": [{"matcher": tools, "hooks": [hook(30)]}],
        "PostToolUse": [{"matcher": tools, "hooks": [hook(30)]}],
        "Stop": [{"hooks": [hook(30)]}],
        "SessionEnd": [{"hooks": [hook(30)]}],
    }
