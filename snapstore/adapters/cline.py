"""Cline hooks: https://docs.cline.bot/features/hooks/hook-reference.

One executable per event, named after it, in ``.clinerules/hooks/`` (the CLI's
user folder is ``~/.cline/hooks/``); the installer writes each one to run
``snapstore hook cline EVENT``, since the payload's ``hookName`` is the SDK's
name (``tool_call``), not the event's. Events used: UserPromptSubmit begins a
turn (``userPromptSubmit.prompt``), PreToolUse and PostToolUse of the file
tools capture around the write (``preToolUse.parameters.path``), TaskComplete
and TaskCancel end it.

A session is a task (``taskId``): the headless CLI starts a task per prompt and
sends no UserPromptSubmit, so its turn opens with the first write. Cline does
not wait for TaskStart (a tool's PreToolUse can come first) nor for
TaskComplete (it may still run, or never run, after the CLI exits). Exit codes
never block a tool: ``{"cancel": true}`` on stdout does, which is what strict
mode prints. ``run_commands`` sends its commands as a JSON string.
"""

from __future__ import annotations

from ..core.errors import BadInput
from . import BEGIN, END, POST, PRE, START, Agent

AGENT = Agent(
    name="cline",
    events={
        "UserPromptSubmit": BEGIN,
        "PreToolUse": PRE,
        "PostToolUse": POST,
        "TaskComplete": END,
        "TaskCancel": END,
        "TaskStart": START,
        "TaskResume": START,
    },
    file_tools=("editor", "write_to_file", "replace_in_file", "apply_patch"),
    path_keys=("path",),
    silent="",
    shell_tools=("run_commands", "execute_command"),
    call_id_key="tool_call.id",
    event_key=None,
    session_keys=("taskId",),
    cwd_keys=("workspaceRoots.0", "workspaceInfo.rootPath"),
    tool_keys=("preToolUse.toolName", "postToolUse.toolName"),
    args_keys=("preToolUse.parameters", "postToolUse.parameters"),
    prompt_keys=("userPromptSubmit.prompt",),
    patch_tools=("apply_patch",),
    patch_keys=("input", "patch"),
    deny='{"cancel": true, "errorMessage": {reason}}',
)

CONFIG = {"project": ".clinerules/hooks", "user": "~/.cline/hooks"}
EVENTS = ("UserPromptSubmit", "PreToolUse", "PostToolUse", "TaskComplete", "TaskCancel")
MARK = "Written by `snapstore hook install cline`"


def script(command: str, event: str) -> str:
    return f"#!/bin/sh\n# snapstore: {MARK}.\nexec {command} {event}\n"


def install(path: str, command: str, shell: bool = False) -> list[str]:
    """Write one executable per event into the folder ``path``; ``shell`` changes
    nothing (the commands reach the same PreToolUse executable)."""
    from .install import foreign, write_owned

    theirs = foreign([f"{path}/{event}" for event in EVENTS], MARK)
    if theirs:  # one executable per event: a hook of someone else's cannot share it
        raise BadInput(
            f"{', '.join(theirs)} already exist and are not snapstore's: add "
            f"`snapstore hook cline EVENT` to them yourself, or move them away"
        )
    return [
        event
        for event in EVENTS
        if write_owned(f"{path}/{event}", script(command, event), MARK, mode=0o755)
    ]
