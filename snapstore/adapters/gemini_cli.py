"""Gemini CLI hooks (google-gemini/gemini-cli, docs/hooks).

Events used: BeforeAgent begins a turn, BeforeTool and AfterTool of
``write_file`` and ``replace`` capture around the write, AfterAgent and
SessionEnd end the turn. Gemini CLI reads stdout as JSON, so a successful hook
prints ``{}``. File paths may be relative to ``cwd``. Gemini CLI 0.25 and older
run hooks only with ``"hooks": {"enabled": true}``; from 0.26 on, hooks are on
by default and that key fails settings validation ("Invalid configuration ...
Expected array, received boolean" on every run, seen up to 0.61.0), so the
installer writes it only for a Gemini CLI that old.
"""

from __future__ import annotations

from typing import Any

from . import BEGIN, END, POST, PRE, START, Agent

AGENT = Agent(
    name="gemini-cli",
    events={"BeforeAgent": BEGIN, "BeforeTool": PRE, "AfterTool": POST, "AfterAgent": END,
            "SessionEnd": END, "SessionStart": START},
    file_tools=("write_file", "replace"),
    path_keys=("file_path",),
    silent="{}",
    shell_tools=("run_shell_command",),
)

CONFIG = {"project": ".gemini/settings.json", "user": "~/.gemini/settings.json"}
NOTES = ("Gemini CLI runs a project's hooks only in a trusted folder (`--skip-trust` alone "
         "does not run them): trust it once with /permissions, or add it to "
         "~/.gemini/trustedFolders.json.")


def settings_block(command: str, shell: bool = False) -> dict[str, list[dict[str, Any]]]:
    """The hooks to merge into .gemini/settings.json (timeouts in milliseconds);
    ``shell``: scan mode's hooks around ``run_shell_command``."""
    def hook(name: str) -> dict[str, Any]:
        return {"type": "command", "command": command, "name": f"snapstore-{name}",
                "timeout": 30000}
    tools = "^(" + "|".join(AGENT.file_tools + (AGENT.shell_tools if shell else ())) + ")$"
    return {
        "BeforeAgent": [{"hooks": [hook("begin")]}],
        "BeforeTool": [{"matcher": tools, "hooks": [hook("pre-write")]}],
        "AfterTool": [{"matcher": tools, "hooks": [hook("post-write")]}],
        "AfterAgent": [{"hooks": [hook("end")]}],
        "SessionEnd": [{"hooks": [hook("end-session")]}],
    }


def needs_enabled(version: str) -> bool:
    """Whether a Gemini CLI release (``gemini --version``) runs hooks only with
    ``"hooks": {"enabled": true}``: 0.25 and older."""
    try:
        major, minor = (int(part) for part in version.strip().split(".")[:2])
    except ValueError:
        return False
    return (major, minor) <= (0, 25)


def install(path: str, command: str, shell: bool = False, legacy: bool = False) -> list[str]:
    """``legacy``: for Gemini CLI 0.25 and older, switch hooks on."""
    from .install import merge_hooks
    return merge_hooks(path, settings_block(command, shell), AGENT.name,
                       in_hooks={"enabled": True} if legacy else None)
