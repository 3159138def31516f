"""Read what each agent sent its hooks into one shape, so that a test can compare agents.

`describe(agent, record, workspace)` turns one recorder line into a `Seen`: the kind of moment
(turn begins, before a tool, after a tool, turn ends), the tool, what kind of tool it is, the
files it names (relative to the workspace) and the agent's session id. The tables below are what
the real CLIs sent (see docs/integrations/agents-research.md); phase B's adapters need the same.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

# hook event -> kind, per agent
KINDS: dict[str, dict[str, str]] = {
    "claude-code": {
        "UserPromptSubmit": "begin",
        "PreToolUse": "pre",
        "PostToolUse": "post",
        "Stop": "end",
    },
    "gemini-cli": {
        "BeforeAgent": "begin",
        "BeforeTool": "pre",
        "AfterTool": "post",
        "AfterAgent": "end",
    },
    "codex": {
        "UserPromptSubmit": "begin",
        "PreToolUse": "pre",
        "PostToolUse": "post",
        "Stop": "end",
    },
    "qwen-code": {
        "UserPromptSubmit": "begin",
        "PreToolUse": "pre",
        "PostToolUse": "post",
        "Stop": "end",
    },
    "copilot": {
        "userPromptSubmitted": "begin",
        "preToolUse": "pre",
        "postToolUse": "post",
        "agentStop": "end",
    },
    "opencode": {
        "chat.message": "begin",
        "tool.execute.before": "pre",
        "tool.execute.after": "post",
        "session.idle": "end",
    },
    "cline": {
        "TaskStart": "begin",
        "UserPromptSubmit": "begin",
        "PreToolUse": "pre",
        "PostToolUse": "post",
        "TaskComplete": "end",
    },
}

# tool name -> category, per agent
TOOLS: dict[str, dict[str, str]] = {
    "claude-code": {
        "Write": "write",
        "Edit": "edit",
        "MultiEdit": "edit",
        "Bash": "shell",
        "Read": "read",
    },
    "gemini-cli": {
        "write_file": "write",
        "replace": "edit",
        "run_shell_command": "shell",
        "read_file": "read",
    },
    "codex": {"apply_patch": "patch", "Bash": "shell"},
    "qwen-code": {
        "write_file": "write",
        "edit": "edit",
        "run_shell_command": "shell",
        "read_file": "read",
    },
    "copilot": {"create": "write", "edit": "edit", "bash": "shell", "view": "read"},
    "opencode": {
        "write": "write",
        "edit": "edit",
        "apply_patch": "patch",
        "bash": "shell",
        "read": "read",
    },
    "cline": {
        "editor": "edit",
        "apply_patch": "patch",
        "run_commands": "shell",
        "read_files": "read",
    },
}

PATCH_MARKERS = ("*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: ")


@dataclass(frozen=True)
class Seen:
    kind: str  # begin, pre, post, end, or other (session start/end, a continuation prompt)
    tool: str = ""
    category: str = ""  # write, edit, patch, shell, read
    paths: tuple[str, ...] = ()
    command: str = ""  # the shell tool's command
    session: str = ""
    prompt: str = ""


def patch_paths(patch: str) -> list[str]:
    """Every path an apply_patch text names, in order: added, updated, deleted, and both ends
    of a move (`*** Update File: a` followed by `*** Move to: b`)."""
    out = []
    for line in patch.splitlines():
        for marker in PATCH_MARKERS:
            if line.startswith(marker):
                out.append(line[len(marker) :].strip())
    return out


def _rel(path: str, cwd: str, workspace: str) -> str:
    full = os.path.normpath(os.path.join(cwd or workspace, path))
    return os.path.relpath(full, workspace) if full.startswith(workspace + os.sep) else full


def _args(agent: str, p: dict[str, Any]) -> dict[str, Any]:
    """The tool's input: `tool_input`; Copilot's `toolArgs` (an object, or a JSON string as its
    docs say); opencode's `output.args` before and `input.args` after."""
    if agent == "copilot":
        args = p.get("toolArgs")
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except ValueError:
                args = {}
        return args if isinstance(args, dict) else {}
    if agent == "opencode":
        return (p.get("output") or {}).get("args") or (p.get("input") or {}).get("args") or {}
    if agent == "cline":
        call = p.get("preToolUse") or p.get("postToolUse") or {}
        return call.get("parameters") or (p.get("tool_result") or {}).get("input") or {}
    return p.get("tool_input") or {}


def _session(agent: str, p: dict[str, Any]) -> str:
    if agent == "copilot":
        return str(p.get("sessionId", ""))
    if agent == "cline":
        return str((p.get("sessionContext") or {}).get("rootSessionId") or p.get("taskId", ""))
    if agent == "opencode":
        event = p.get("event") or {}
        return str(
            (p.get("input") or {}).get("sessionID")
            or (event.get("properties") or {}).get("sessionID", "")
        )
    return str(p.get("session_id", ""))


def _prompt(agent: str, p: dict[str, Any]) -> str:
    if agent == "opencode":
        parts = (p.get("output") or {}).get("parts") or []
        return "".join(x.get("text", "") for x in parts if x.get("type") == "text")
    return str(p.get("prompt") or "")


def describe(agent: str, record: dict[str, Any], workspace: str) -> Seen:
    """One recorder line as a `Seen`. The event name is the one the hook was configured for
    (Copilot's payload names none)."""
    agent = agent.removesuffix("-gpt")  # opencode-gpt: opencode with a GPT model
    p = record["payload"] if isinstance(record["payload"], dict) else {}
    kind = KINDS[agent].get(record["event"], "other")
    session = _session(agent, p)
    if kind in ("begin", "end"):
        prompt = _prompt(agent, p)
        if kind == "begin" and not prompt.strip() and agent != "cline":
            kind = "other"  # Qwen Code re-fires UserPromptSubmit, empty, after tool results
        return Seen(kind, session=session, prompt=prompt)
    if kind == "other":
        return Seen("other", session=session)
    tool = str(
        p.get("tool_name")
        or p.get("toolName")
        or (p.get("input") or {}).get("tool", "")
        or (p.get("preToolUse") or p.get("postToolUse") or {}).get("toolName", "")
    )
    category = TOOLS[agent].get(tool, "")
    args = _args(agent, p)
    cwd = str(p.get("cwd") or p.get("directory") or workspace)
    if category == "shell":
        commands = args.get("commands") or []
        if isinstance(commands, str):  # Cline's hook payload: the array as a JSON string
            try:
                commands = json.loads(commands)
            except ValueError:
                commands = [commands]
        command = args.get("command") or " && ".join(map(str, commands))
        return Seen(kind, tool, category, command=str(command), session=session)
    if category == "patch":
        text = args.get("command") or args.get("patchText") or args.get("input") or ""
        paths = patch_paths(text)
    else:
        path = args.get("file_path") or args.get("path") or args.get("filePath")
        paths = [path] if path else []
    return Seen(
        kind, tool, category, tuple(_rel(x, cwd, workspace) for x in paths), session=session
    )
