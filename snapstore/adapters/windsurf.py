"""Windsurf (Cascade) hooks: https://docs.windsurf.com/windsurf/cascade/hooks.

Every payload names its event in ``agent_action_name``, its conversation in
``trajectory_id`` and its turn in ``execution_id``; what the event is about is
in ``tool_info``. Events used: pre_user_prompt begins a turn
(``tool_info.user_prompt``), pre_write_code and post_write_code capture around
the write (``tool_info.file_path``), post_cascade_response ends the turn. That
one runs asynchronously, so an end carrying another turn's id leaves the open
turn alone. Hooks run in the workspace root; exit 2 blocks a pre-hook.
Taken from Windsurf's documentation: Windsurf cannot be run here.
"""

from __future__ import annotations

from typing import Any

from . import BEGIN, END, POST, PRE, Agent

AGENT = Agent(
    name="windsurf",
    events={
        "pre_user_prompt": BEGIN,
        "pre_write_code": PRE,
        "post_write_code": POST,
        "pre_run_command": PRE,
        "post_run_command": POST,
        "post_cascade_response": END,
    },
    file_tools=("write_code",),
    path_keys=("file_path",),
    silent="",
    message_id_key="execution_id",
    shell_tools=("run_command",),
    event_key="agent_action_name",
    session_keys=("trajectory_id",),
    cwd_keys=("tool_info.cwd",),
    tool_keys=(),
    args_keys=("tool_info",),
    prompt_keys=("tool_info.user_prompt",),
    event_tools={
        "pre_write_code": "write_code",
        "post_write_code": "write_code",
        "pre_run_command": "run_command",
        "post_run_command": "run_command",
    },
)

#: The events that stand for the shell tool.
SHELL_EVENTS = ("pre_run_command", "post_run_command")
CONFIG = {"project": ".windsurf/hooks.json", "user": "~/.codeium/windsurf/hooks.json"}


def settings_block(command: str, shell: bool = False) -> dict[str, list[dict[str, Any]]]:
    """The hooks for .windsurf/hooks.json: one flat entry per event; in scan mode the
    command hooks too."""
    events = ["pre_user_prompt", "pre_write_code", "post_write_code", "post_cascade_response"]
    if shell:
        events[3:3] = SHELL_EVENTS
    return {event: [{"command": command, "show_output": False}] for event in events}


def install(path: str, command: str, shell: bool = False) -> list[str]:
    from .install import merge_hooks

    return merge_hooks(path, settings_block(command, shell), AGENT.name, drop=SHELL_EVENTS)
