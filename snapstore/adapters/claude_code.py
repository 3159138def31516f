"""Claude Code hooks: https://code.claude.com/docs/en/hooks.

Events used: UserPromptSubmit begins a turn, PreToolUse and PostToolUse of the
file tools capture around the write, Stop and SessionEnd end the turn. In scan
mode the Bash tool is hooked too, and PostToolUseFailure (a call that failed)
and PermissionDenied (a call that will not run) end a Bash call's window. A
hook that succeeds prints nothing: on UserPromptSubmit and SessionStart,
stdout would be added to the model's context. ``MultiEdit`` stays in the matcher for
Claude Code before 2.0, which still sends it (2.0 removed the tool).

Copilot CLI runs these same hooks from ``.claude/settings*.json`` with Claude's
event and tool names but its own arguments (``tool_input.path``), hence
``path`` among the path keys (see ``snapstore_cli.hooks``).
"""

from __future__ import annotations

from typing import Any

from . import BEGIN, DENIED, END, POST, PRE, START, Agent

AGENT = Agent(
    name="claude-code",
    events={
        "UserPromptSubmit": BEGIN,
        "PreToolUse": PRE,
        "PostToolUse": POST,
        "PostToolUseFailure": POST,
        "PermissionDenied": DENIED,
        "Stop": END,
        "SessionEnd": END,
        "SessionStart": START,
    },
    file_tools=("Write", "Edit", "MultiEdit", "NotebookEdit"),
    path_keys=("file_path", "notebook_path", "path"),
    silent="",
    message_id_key="prompt_id",
    shell_tools=("Bash",),
    call_id_key="tool_use_id",
)

#: Where the hooks go: this machine's personal settings for the project (git-ignored),
#: the project's shared settings, and the user's own.
CONFIG = {
    "local": ".claude/settings.local.json",
    "project": ".claude/settings.json",
    "user": "~/.claude/settings.json",
}


#: The events hooked for the shell alone: a failed or refused call, and a session's start
#: (it starts the workspace's daemon, whose watcher makes the shell's scans cheap).
SHELL_EVENTS = ("PostToolUseFailure", "PermissionDenied", "SessionStart")


def settings_block(command: str, shell: bool = False) -> dict[str, list[dict[str, Any]]]:
    """The hooks to merge into .claude/settings.json; ``shell``: scan mode's Bash hooks."""
    from .install import claude_shaped

    tools = AGENT.matcher(shell)
    block = claude_shaped(command, tools)
    if shell:
        block["PostToolUseFailure"] = claude_shaped(command, tools)["PostToolUse"]
        block["PermissionDenied"] = claude_shaped(command, "|".join(AGENT.shell_tools))[
            "PreToolUse"
        ]
        block["SessionStart"] = claude_shaped(command, "")["UserPromptSubmit"]  # the daemon
    return block


def http_block(
    url: str, headers: dict[str, str], env_vars: list[str], start: str, shell: bool = False
) -> dict[str, list[dict[str, Any]]]:
    """The hooks block with HTTP hooks (Claude Code 2.1.63 and newer) posting to ``url``
    instead of starting a process per event, where the command block has commands.

    ``onFailure: block``: when nothing answers at ``url`` a prompt or a write is blocked,
    never let through uncaptured. ``headers`` may name ``env_vars`` ($VAR), which Claude
    Code fills in from its environment. ``start`` is a command run when a session starts
    (the daemon's start; once per session, not per event).
    """

    def http(entry: dict[str, Any]) -> dict[str, Any]:
        hooks = [
            {
                "type": "http",
                "url": url,
                "headers": dict(headers),
                "allowedEnvVars": list(env_vars),
                "onFailure": "block",
                "timeout": h.get("timeout", 30),
            }
            for h in entry["hooks"]
        ]
        return {**entry, "hooks": hooks}

    block = {
        event: [http(entry) for entry in entries]
        for event, entries in settings_block("", shell).items()
    }
    block["SessionStart"] = [{"hooks": [{"type": "command", "command": start, "timeout": 30}]}]
    return block


def install(path: str, command: str, shell: bool = False) -> list[str]:
    from .install import merge_hooks

    return merge_hooks(
        path,
        settings_block(command, shell),
        AGENT.name,
        drop=SHELL_EVENTS,
    )
