"""Claude Code hooks: https://code.claude.com/docs/en/hooks.

Events used: UserPromptSubmit begins a turn, PreToolUse and PostToolUse of the
file tools capture around the write, Stop and SessionEnd end the turn. In scan
mode the Bash tool is hooked too, and PostToolUseFailure (a call that failed)
and PermissionDenied (a call that will not run) end a Bash call's window. A
hook that succeeds prints nothing: on UserPromptSubmit and SessionStart,
stdout would be added to the model's context.
"""

from __future__ import annotations

from typing import Any

from . import BEGIN, DENIED, END, POST, PRE, START, Agent

AGENT = Agent(
    name="claude-code",
    events={"UserPromptSubmit": BEGIN, "PreToolUse": PRE, "PostToolUse": POST,
            "PostToolUseFailure": POST, "PermissionDenied": DENIED, "Stop": END,
            "SessionEnd": END, "SessionStart": START},
    file_tools=("Write", "Edit", "MultiEdit", "NotebookEdit"),
    path_keys=("file_path", "notebook_path"),
    silent="",
    message_id_key="prompt_id",
    shell_tools=("Bash",),
    call_id_key="tool_use_id",
)


def settings_block(command: str, shell: bool = False) -> dict[str, list[dict[str, Any]]]:
    """The hooks to merge into .claude/settings.json; ``shell``: scan mode's Bash hooks."""
    def hook(timeout: int) -> dict[str, Any]:
        return {"type": "command", "command": command, "timeout": timeout}
    tools = "|".join(AGENT.file_tools + (AGENT.shell_tools if shell else ()))
    block = {
        "UserPromptSubmit": [{"hooks": [hook(30)]}],
        "PreToolUse": [{"matcher": tools, "hooks": [hook(30)]}],
        "PostToolUse": [{"matcher": tools, "hooks": [hook(30)]}],
        "Stop": [{"hooks": [hook(30)]}],
        "SessionEnd": [{"hooks": [hook(30)]}],
    }
    if shell:
        block["PostToolUseFailure"] = [{"matcher": tools, "hooks": [hook(30)]}]
        block["PermissionDenied"] = [{"matcher": "|".join(AGENT.shell_tools),
                                      "hooks": [hook(30)]}]
    return block
