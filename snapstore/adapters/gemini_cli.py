"""Gemini CLI hooks (google-gemini/gemini-cli, docs/hooks).

Events used: BeforeAgent begins a turn, BeforeTool and AfterTool of
``write_file`` and ``replace`` capture around the write, AfterAgent and
SessionEnd end the turn. Gemini CLI reads stdout as JSON, so a successful hook
prints ``{}``. File paths may be relative to ``cwd``.
"""

from __future__ import annotations

from typing import Any

from . import BEGIN, END, IGNORE, POST, PRE, START, HookAction, base_action, field_str, tool_paths

AGENT = "gemini-cli"
FILE_TOOLS = ("write_file", "replace")
PATH_KEYS = ("file_path",)
EVENTS = {"BeforeAgent": BEGIN, "BeforeTool": PRE, "AfterTool": POST, "AfterAgent": END,
          "SessionEnd": END, "SessionStart": START}
SILENT = "{}"


def parse(payload: dict[str, Any]) -> HookAction:
    """The action one Gemini CLI hook event asks for."""
    kind = EVENTS.get(payload.get("hook_event_name", ""), IGNORE)
    if kind == IGNORE:
        return HookAction(IGNORE, event=str(payload.get("hook_event_name", "")))
    action = base_action(payload, AGENT, kind)
    if kind == BEGIN:
        action.prompt = field_str(payload, "prompt", required=False)
    elif kind in (PRE, POST):
        action.tool = field_str(payload, "tool_name")
        if action.tool not in FILE_TOOLS:
            return HookAction(IGNORE, event=action.event, tool=action.tool)
        action.paths = tool_paths(payload, PATH_KEYS)
    return action


def settings_block(command: str) -> dict[str, list[dict[str, Any]]]:
    """The hooks to merge into .gemini/settings.json (timeouts in milliseconds)."""
    def hook(name: str) -> dict[str, Any]:
        return {"type": "command", "command": command, "name": f"snapstore-{name}",
                "timeout": 30000}
    tools = "^(" + "|".join(FILE_TOOLS) + ")$"
    return {
        "BeforeAgent": [{"hooks": [hook("begin")]}],
        "BeforeTool": [{"matcher": tools, "hooks": [hook("pre-write")]}],
        "AfterTool": [{"matcher": tools, "hooks": [hook("post-write")]}],
        "AfterAgent": [{"hooks": [hook("end")]}],
        "SessionEnd": [{"hooks": [hook("end-session")]}],
    }
