"""How to drive each agent CLI: its tool vocabulary, its model endpoint, its hook config, its
headless command line and how it continues a session.

A driver never runs anything itself; `session.Session` calls it. Each one says, for its agent:
- `tool_call`: the concrete tool call for an abstract step (write, edit, shell);
- `env` and `setup`: how the CLI finds the fake model and stays off the network, and what its
  home folder needs (trust, provider config) before the first run;
- `hook_config`: where hooks live (project scope, and the personal scope for this machine's
  commands) and `install_hooks`: writing one command per event in the agent's own format;
- `command` and `after_run`: one headless turn, and what it must remember for the next one.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from .fake_model import Edit, Mcp, Patch, Read, Step, ToolCall, Turn, Write
from .install import PINS, cache_env

if TYPE_CHECKING:
    from .session import Run, Session

RECORDER = Path(__file__).with_name("recorder.py")
Command = Callable[[str], str]  # event name -> the shell command a hook runs for it


def recorder_command(log: Path, stdout: str = "") -> Command:
    """The hook command that records each event to LOG and prints STDOUT."""

    def command(event: str) -> str:
        args = [sys.executable, str(RECORDER), str(log), event]
        return shlex.join([*args, stdout] if stdout else args)

    return command


def merge_json(path: Path, update: Callable[[dict[str, Any]], None]) -> None:
    """Load a JSON config file (or start one), let `update` change it, write it back."""
    data = json.loads(path.read_text()) if path.exists() else {}
    update(data)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n")


class Driver:
    """The parts every agent shares; subclasses fill in the rest."""

    name = ""
    pin = ""  # the npm package (install.PINS key) when it is not `name`
    events: tuple[str, ...] = ()  # every hook event the recorder listens to
    allow_stdout = ""  # what a hook prints to let the agent go on
    # scope name -> hook config file: relative to the workspace, or to the home folder (~/)
    scopes: ClassVar[dict[str, str]] = {}
    read_before_edit = False  # the agent refuses to edit a file it has not read this session
    daemons: tuple[str, ...] = ()  # command-line marks of processes it leaves running on purpose

    def script(self, turns: list[Turn]) -> list[Turn]:
        """The turns as this agent needs them: a read before each edit where it insists."""
        if not self.read_before_edit:
            return turns
        return [
            Turn(
                t.prompt,
                tuple(
                    x
                    for step in t.steps
                    for x in ((Read(step.path), step) if isinstance(step, Edit) else (step,))
                ),
                t.answer,
            )
            for t in turns
        ]

    def tool_call(self, step: Step, ws: str) -> ToolCall:
        raise NotImplementedError

    def env(self, s: Session) -> dict[str, str]:
        return {}

    def setup(self, s: Session) -> None:
        """Prepare the home folder before the first run."""

    def install_hooks(self, s: Session, command: Command, scope: str = "project") -> Path:
        raise NotImplementedError

    def config_path(self, s: Session, scope: str) -> Path:
        where = self.scopes[scope]
        return s.home / where[2:] if where.startswith("~/") else s.workspace / where

    def command(self, s: Session, prompt: str, first: bool) -> list[str]:
        raise NotImplementedError

    def after_run(self, s: Session, run: Run) -> None:
        """Remember what the next turn needs (a session id)."""


def _abs(ws: str, rel: str) -> str:
    return rel if os.path.isabs(rel) else os.path.join(ws, rel)


def _claude_style_hooks(
    path: Path,
    events: tuple[str, ...],
    command: Command,
    with_matcher: set[str],
    extra: dict[str, Any] | None = None,
) -> None:
    """`{"hooks": {EVENT: [{"matcher": "*", "hooks": [{"type": "command", ...}]}]}}`, the format
    Claude Code started and Gemini CLI, Qwen Code and Codex CLI share."""

    def update(cfg: dict[str, Any]) -> None:
        hooks = cfg.setdefault("hooks", {})
        for event in events:
            group: dict[str, Any] = {
                "hooks": [{"type": "command", "command": command(event), **(extra or {})}]
            }
            if event in with_matcher:
                group = {"matcher": "*", **group}
            hooks.setdefault(event, []).append(group)

    merge_json(path, update)


class ClaudeCode(Driver):
    name = "claude-code"
    events = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "SessionEnd")
    scopes: ClassVar[dict[str, str]] = {
        "project": ".claude/settings.json",
        "local": ".claude/settings.local.json",
    }

    def tool_call(self, step: Step, ws: str) -> ToolCall:
        if isinstance(step, Mcp):
            return ToolCall(f"mcp__{step.server}__{step.tool}", step.args)
        if isinstance(step, Write):
            return ToolCall("Write", {"file_path": _abs(ws, step.path), "content": step.content})
        if isinstance(step, Edit):
            return ToolCall(
                "Edit",
                {"file_path": _abs(ws, step.path), "old_string": step.old, "new_string": step.new},
            )
        if isinstance(step, Read):
            return ToolCall("Read", {"file_path": _abs(ws, step.path)})
        return ToolCall("Bash", {"command": step.command, "description": "Run a command"})

    def env(self, s: Session) -> dict[str, str]:
        return {
            "ANTHROPIC_BASE_URL": s.model.url,
            "ANTHROPIC_API_KEY": "sk-ant-fake",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
        }

    def install_hooks(self, s: Session, command: Command, scope: str = "project") -> Path:
        path = self.config_path(s, scope)
        _claude_style_hooks(path, self.events, command, {"PreToolUse", "PostToolUse"})
        return path

    def command(self, s: Session, prompt: str, first: bool) -> list[str]:
        # --allowedTools, not bypassPermissions: that one refuses to run as root (CI is root)
        cmd = [
            str(s.exe),
            "-p",
            prompt,
            "--output-format",
            "json",
            "--allowedTools",
            "Write,Edit,Bash,mcp__snapstore",
        ]
        return cmd if first else [*cmd, "--resume", s.state["session_id"]]

    def after_run(self, s: Session, run: Run) -> None:
        with contextlib.suppress(ValueError, KeyError, TypeError):
            s.state.setdefault("session_id", json.loads(run.stdout)["session_id"])


class GeminiCli(Driver):
    name = "gemini-cli"
    events = ("SessionStart", "BeforeAgent", "BeforeTool", "AfterTool", "AfterAgent", "SessionEnd")
    scopes: ClassVar[dict[str, str]] = {
        "project": ".gemini/settings.json",
        "user": "~/.gemini/settings.json",
    }

    def tool_call(self, step: Step, ws: str) -> ToolCall:
        if isinstance(step, Mcp):
            return ToolCall(f"mcp_{step.server}_{step.tool}", step.args)
        if isinstance(step, Write):
            return ToolCall(
                "write_file", {"file_path": _abs(ws, step.path), "content": step.content}
            )
        if isinstance(step, Edit):
            return ToolCall(
                "replace",
                {
                    "file_path": _abs(ws, step.path),
                    "old_string": step.old,
                    "new_string": step.new,
                    "instruction": "Edit it",
                },
            )
        if isinstance(step, Read):
            return ToolCall("read_file", {"file_path": _abs(ws, step.path)})
        return ToolCall(
            "run_shell_command", {"command": step.command, "description": "Run a command"}
        )

    def env(self, s: Session) -> dict[str, str]:
        return {
            "GEMINI_API_KEY": "fake-key",
            "GOOGLE_GEMINI_BASE_URL": s.model.url,
            "GEMINI_CLI_NO_RELAUNCH": "true",
        }

    def setup(self, s: Session) -> None:
        # Project hooks run only in a trusted folder: trust the workspace as a user would
        gemini = s.home / ".gemini"
        merge_json(
            gemini / "trustedFolders.json",
            lambda cfg: cfg.update({str(s.workspace): "TRUST_FOLDER"}),
        )
        merge_json(
            gemini / "settings.json",
            lambda cfg: cfg.update(
                {
                    "privacy": {"usageStatisticsEnabled": False},
                    "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
                    "telemetry": {"enabled": False},
                    # with only GOOGLE_GEMINI_BASE_URL set, 0.61.0 picks the "gateway" auth type,
                    # which
                    # its headless check then rejects ("Invalid auth method selected."); the API-key
                    # type still sends every request to GOOGLE_GEMINI_BASE_URL
                    "security": {"auth": {"selectedType": "gemini-api-key"}},
                }
            ),
        )

    def install_hooks(self, s: Session, command: Command, scope: str = "project") -> Path:
        path = self.config_path(s, scope)
        _claude_style_hooks(path, self.events, command, {"BeforeTool", "AfterTool"})
        return path

    def command(self, s: Session, prompt: str, first: bool) -> list[str]:
        cmd = [str(s.exe), "-p", prompt, "--output-format", "json", "--approval-mode", "yolo"]
        return cmd if first else [*cmd, "--resume", "latest"]


class CodexCli(Driver):
    name = "codex"
    events = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "SessionEnd")
    scopes: ClassVar[dict[str, str]] = {
        "project": ".codex/hooks.json",
        "user": "~/.codex/hooks.json",
    }

    def tool_call(self, step: Step, ws: str) -> ToolCall:
        if isinstance(step, Mcp):  # deferred: called in its server's namespace
            return ToolCall(step.tool, step.args, namespace=f"mcp__{step.server}")
        if isinstance(step, Write):
            body = "".join(f"+{line}\n" for line in step.content.splitlines())
            return ToolCall(
                "apply_patch", f"*** Begin Patch\n*** Add File: {step.path}\n{body}*** End Patch\n"
            )
        if isinstance(step, Edit):
            return ToolCall(
                "apply_patch",
                f"*** Begin Patch\n*** Update File: {step.path}\n@@\n"
                f"-{step.old}\n+{step.new}\n*** End Patch\n",
            )
        if isinstance(step, Read):
            return ToolCall("exec_command", {"cmd": f"cat {shlex.quote(step.path)}"})
        if isinstance(step, Patch):
            return ToolCall("apply_patch", step.text)
        return ToolCall("exec_command", {"cmd": step.command})

    def env(self, s: Session) -> dict[str, str]:
        return {"CODEX_HOME": str(s.home / ".codex"), "FAKE_MODEL_KEY": "sk-fake"}

    def setup(self, s: Session) -> None:
        home = s.home / ".codex"
        home.mkdir(parents=True, exist_ok=True)
        (home / "config.toml").write_text(
            # a model Codex knows, so that it offers its apply_patch (freeform) tool
            'model = "gpt-5.5"\nmodel_provider = "fake"\n'
            "check_for_update_on_startup = false\n"
            "[analytics]\nenabled = false\n"
            # these reach github.com and chatgpt.com at start-up
            "[features]\napps = false\nplugins = false\nremote_plugin = false\n"
            "plugin_sharing = false\nin_app_updates = false\n"
            "[model_providers.fake]\n"
            f'name = "fake"\nbase_url = "{s.model.url}/v1"\nenv_key = "FAKE_MODEL_KEY"\n'
            'wire_api = "responses"\n'
            f'[projects."{s.workspace}"]\ntrust_level = "trusted"\n'
        )

    def install_hooks(self, s: Session, command: Command, scope: str = "project") -> Path:
        path = self.config_path(s, scope)
        _claude_style_hooks(path, self.events, command, {"PreToolUse", "PostToolUse"})
        return path

    def command(self, s: Session, prompt: str, first: bool) -> list[str]:
        opts = [
            "--json",
            "--skip-git-repo-check",
            "--dangerously-bypass-approvals-and-sandbox",
            "--dangerously-bypass-hook-trust",
        ]
        if first:
            return [str(s.exe), "exec", *opts, prompt]
        # a test may name the thread to resume (the id a rewind printed); else the newest
        thread = s.state.get("resume_id")
        return [str(s.exe), "exec", "resume", *opts, *([thread] if thread else ["--last"]), prompt]


class QwenCode(Driver):
    name = "qwen-code"
    read_before_edit = True
    events = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "SessionEnd")
    scopes: ClassVar[dict[str, str]] = {
        "project": ".qwen/settings.json",
        "user": "~/.qwen/settings.json",
    }

    def tool_call(self, step: Step, ws: str) -> ToolCall:
        if isinstance(step, Mcp):
            return ToolCall(f"mcp__{step.server}__{step.tool}", step.args)
        if isinstance(step, Write):
            return ToolCall(
                "write_file", {"file_path": _abs(ws, step.path), "content": step.content}
            )
        if isinstance(step, Edit):
            return ToolCall(
                "edit",
                {"file_path": _abs(ws, step.path), "old_string": step.old, "new_string": step.new},
            )
        if isinstance(step, Read):
            return ToolCall("read_file", {"file_path": _abs(ws, step.path)})
        return ToolCall(
            "run_shell_command",
            {"command": step.command, "is_background": False, "description": "Run a command"},
        )

    def env(self, s: Session) -> dict[str, str]:
        return {
            "OPENAI_BASE_URL": f"{s.model.url}/v1",
            "OPENAI_API_KEY": "sk-fake",
            "OPENAI_MODEL": "fake-model",
        }

    def setup(self, s: Session) -> None:
        qwen = s.home / ".qwen"
        merge_json(
            qwen / "trustedFolders.json", lambda cfg: cfg.update({str(s.workspace): "TRUST_FOLDER"})
        )
        merge_json(
            qwen / "settings.json",
            lambda cfg: cfg.update(
                {
                    "privacy": {"usageStatisticsEnabled": False},
                    "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
                    "telemetry": {"enabled": False},
                    "security": {"auth": {"selectedType": "openai"}},
                }
            ),
        )

    def install_hooks(self, s: Session, command: Command, scope: str = "project") -> Path:
        path = self.config_path(s, scope)
        _claude_style_hooks(path, self.events, command, {"PreToolUse", "PostToolUse"})
        return path

    def command(self, s: Session, prompt: str, first: bool) -> list[str]:
        cmd = [
            str(s.exe),
            "--output-format",
            "json",
            "--approval-mode",
            "yolo",
            "--auth-type",
            "openai",
            prompt,
        ]
        return cmd if first else [*cmd, "--continue"]


class CopilotCli(Driver):
    name = "copilot"
    events = (
        "sessionStart",
        "userPromptSubmitted",
        "preToolUse",
        "postToolUse",
        "agentStop",
        "sessionEnd",
    )
    scopes: ClassVar[dict[str, str]] = {
        "project": ".github/hooks/snapstore.json",
        "local": ".github/copilot/settings.local.json",
        "user": "~/.copilot/hooks/snapstore.json",
    }
    read_before_edit = True

    def tool_call(self, step: Step, ws: str) -> ToolCall:
        if isinstance(step, Mcp):
            return ToolCall(f"{step.server}-{step.tool}", step.args)
        if isinstance(step, Write):
            return ToolCall("create", {"path": _abs(ws, step.path), "file_text": step.content})
        if isinstance(step, Edit):
            return ToolCall(
                "edit", {"path": _abs(ws, step.path), "old_str": step.old, "new_str": step.new}
            )
        if isinstance(step, Read):
            return ToolCall("view", {"path": _abs(ws, step.path)})
        return ToolCall("bash", {"command": step.command, "description": "Run a command"})

    def env(self, s: Session) -> dict[str, str]:
        return {
            "COPILOT_PROVIDER_BASE_URL": f"{s.model.url}/v1",
            "COPILOT_PROVIDER_TYPE": "openai",
            "COPILOT_PROVIDER_API_KEY": "sk-fake",
            "COPILOT_MODEL": "fake-model",
            "COPILOT_OFFLINE": "true",
            "COPILOT_AUTO_UPDATE": "false",
            # exactly "true" also trusts the folder, so that .github/hooks loads
            "COPILOT_ALLOW_ALL": "true",
            **cache_env(PINS["copilot"], s.exe),
        }

    def install_hooks(self, s: Session, command: Command, scope: str = "project") -> Path:
        path = self.config_path(s, scope)

        def update(cfg: dict[str, Any]) -> None:
            if scope != "local":  # a hooks file has a version; settings.local.json does not
                cfg.setdefault("version", 1)
            hooks = cfg.setdefault("hooks", {})
            for event in self.events:
                hooks.setdefault(event, []).append(
                    {"type": "command", "bash": command(event), "timeoutSec": 30}
                )

        merge_json(path, update)
        return path

    def command(self, s: Session, prompt: str, first: bool) -> list[str]:
        cmd = [
            str(s.exe),
            "-p",
            prompt,
            "--output-format",
            "json",
            "--allow-all-tools",
            "--disable-client-telemetry",
            "--no-auto-update",
        ]
        if first:
            return cmd
        resume = s.state.get("resume_id")  # a session to resume by id, e.g. a rewind's fork
        return [*cmd, "--resume", resume] if resume else [*cmd, "--continue"]


OPENCODE_PLUGIN = """\
// Runs one shell command per opencode plugin event, with the event as JSON on its stdin.
import { spawnSync } from "node:child_process";
const COMMANDS = %s;
function fire(name, payload) {
  const cmd = COMMANDS[name];
  if (cmd) spawnSync("/bin/sh", ["-c", cmd], {input: JSON.stringify(payload),
                                             stdio: ["pipe", "ignore", "inherit"]});
}
export const HookBridge = async ({ directory, worktree }) => ({
  "tool.execute.before": async (input, output) =>
    fire("tool.execute.before", { input, output, directory, worktree }),
  "tool.execute.after": async (input, output) =>
    fire("tool.execute.after", { input, output, directory, worktree }),
  "chat.message": async (input, output) =>
    fire("chat.message", { input, output, directory, worktree }),
  event: async ({ event }) => fire(event.type, { event, directory, worktree }),
});
"""


class Opencode(Driver):
    name = "opencode"
    model = "fake-model"  # opencode offers write and edit to most models
    events = (
        "session.created",
        "chat.message",
        "tool.execute.before",
        "tool.execute.after",
        "file.edited",
        "session.idle",
    )
    scopes: ClassVar[dict[str, str]] = {
        "project": ".opencode/plugin/snapstore-hooks.js",
        "user": "~/.config/opencode/plugin/snapstore-hooks.js",
    }
    read_before_edit = True

    def tool_call(self, step: Step, ws: str) -> ToolCall:
        if isinstance(step, Mcp):
            return ToolCall(f"{step.server}_{step.tool}", step.args)
        if isinstance(step, Write):
            return ToolCall("write", {"filePath": _abs(ws, step.path), "content": step.content})
        if isinstance(step, Edit):
            return ToolCall(
                "edit",
                {"filePath": _abs(ws, step.path), "oldString": step.old, "newString": step.new},
            )
        if isinstance(step, Read):
            return ToolCall("read", {"filePath": _abs(ws, step.path)})
        if isinstance(step, Patch):
            return ToolCall("apply_patch", {"patchText": step.text})
        return ToolCall("bash", {"command": step.command, "description": "Run a command"})

    def env(self, s: Session) -> dict[str, str]:
        return {
            "OPENCODE_DISABLE_AUTOUPDATE": "1",
            "OPENCODE_DISABLE_MODELS_FETCH": "1",
            "OPENCODE_DISABLE_SHARE": "1",
            "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
            "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
        }

    @staticmethod
    def _deps_installed(config_dir: Path) -> None:
        """At start-up opencode installs `@opencode-ai/plugin` from npm into every config folder
        (~/.config/opencode, .opencode) and, where there is a plugin, waits for it: over a minute
        of retries with no network. It skips a folder whose node_modules exists and whose
        package-lock.json lists the package; our plugin imports nothing from it."""
        (config_dir / "node_modules").mkdir(parents=True, exist_ok=True)
        lock = {
            "lockfileVersion": 3,
            "packages": {"": {"dependencies": {"@opencode-ai/plugin": PINS["opencode"].version}}},
        }
        (config_dir / "package-lock.json").write_text(json.dumps(lock))

    def setup(self, s: Session) -> None:
        self._deps_installed(s.home / ".config/opencode")
        merge_json(
            s.home / ".config/opencode/opencode.json",
            lambda cfg: cfg.update(
                {
                    "autoupdate": False,
                    "share": "disabled",
                    "model": f"fake/{self.model}",
                    "permission": {"edit": "allow", "bash": "allow", "read": "allow"},
                    "provider": {
                        "fake": {
                            "npm": "@ai-sdk/openai-compatible",
                            "name": "Fake",
                            "options": {"baseURL": f"{s.model.url}/v1", "apiKey": "sk-fake"},
                            "models": {self.model: {"name": "Fake model", "tool_call": True}},
                        }
                    },
                }
            ),
        )

    def install_hooks(self, s: Session, command: Command, scope: str = "project") -> Path:
        path = self.config_path(s, scope)
        self._deps_installed(path.parent.parent)
        path.parent.mkdir(parents=True, exist_ok=True)
        commands = {event: command(event) for event in self.events}
        path.write_text(OPENCODE_PLUGIN % json.dumps(commands, indent=2))
        return path

    def command(self, s: Session, prompt: str, first: bool) -> list[str]:
        cmd = [str(s.exe), "run", "--format", "json", "--model", f"fake/{self.model}", prompt]
        if first:
            return cmd
        resume = s.state.get("resume_id")  # a session to resume by id, e.g. a rewind's fork
        return [*cmd, "--session", resume] if resume else [*cmd, "--continue"]


class OpencodeGpt(Opencode):
    """opencode with a GPT model: it offers apply_patch instead of write and edit."""

    name = "opencode-gpt"
    pin = "opencode"
    model = "gpt-5.5"


class ClineCli(Driver):
    name = "cline"
    events = (
        "TaskStart",
        "TaskResume",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "TaskComplete",
    )
    scopes: ClassVar[dict[str, str]] = {"project": ".clinerules/hooks", "user": "~/.cline/hooks"}
    daemons = ("--cline-hub-daemon",)

    def tool_call(self, step: Step, ws: str) -> ToolCall:
        if isinstance(step, Write):
            return ToolCall("editor", {"path": _abs(ws, step.path), "new_text": step.content})
        if isinstance(step, Edit):
            return ToolCall(
                "editor", {"path": _abs(ws, step.path), "old_text": step.old, "new_text": step.new}
            )
        if isinstance(step, Read):
            return ToolCall("read_files", {"files": [{"path": _abs(ws, step.path)}]})
        return ToolCall("run_commands", {"commands": [step.command]})

    def env(self, s: Session) -> dict[str, str]:
        # its OTLP telemetry has no off switch; a short export timeout stops it waiting 10 s at
        # exit for the dead-end proxy
        return {"OTEL_EXPORTER_OTLP_TIMEOUT": "200"}

    def setup(self, s: Session) -> None:
        subprocess.run(
            [
                str(s.exe),
                "auth",
                "-p",
                "openai",
                "-k",
                "sk-fake",
                "-m",
                "fake-model",
                "-b",
                f"{s.model.url}/v1",
            ],
            cwd=s.workspace,
            env=s.env(),
            capture_output=True,
            check=True,
            timeout=60,
        )

    def install_hooks(self, s: Session, command: Command, scope: str = "project") -> Path:
        folder = self.config_path(s, scope)
        folder.mkdir(parents=True, exist_ok=True)
        for event in self.events:
            hook = folder / event
            hook.write_text(f"#!/bin/sh\n{command(event)}\n")
            hook.chmod(0o755)
        return folder

    def command(self, s: Session, prompt: str, first: bool) -> list[str]:
        # `--id SESSION` resumes only in the interactive TUI ("interactive mode requires a
        # TTY"), so each headless prompt is a task of its own
        return [str(s.exe), "--json", "-t", "120", prompt]


DRIVERS: dict[str, type[Driver]] = {
    d.name: d
    for d in (
        ClaudeCode,
        GeminiCli,
        CodexCli,
        QwenCode,
        CopilotCli,
        Opencode,
        OpencodeGpt,
        ClineCli,
    )
}
