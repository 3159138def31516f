"""Where each agent keeps its transcripts and its registry of running sessions, by the
environment's variables as the agents' own CLIs read them (Gemini CLI 0.61.0's
``GEMINI_CLI_HOME`` stands for the home folder, Qwen Code 0.24.4's ``QWEN_HOME`` for its own)."""

from __future__ import annotations

from snapstore_cli.settings.environment import agent_homes


def test_each_agents_variable_moves_its_folder() -> None:
    env = {
        "HOME": "/h",
        "CLAUDE_CONFIG_DIR": "/c",
        "CODEX_HOME": "/x",
        "GEMINI_CLI_HOME": "/g",
        "QWEN_HOME": "/q",
        "COPILOT_HOME": "/p",
        "XDG_DATA_HOME": "/d",
    }
    assert agent_homes(env) == {
        "claude-code": "/c",
        "codex": "/x",
        "gemini-cli": "/g/.gemini",
        "qwen-code": "/q",
        "copilot": "/p",
        "opencode": "/d/opencode",
    }


def test_without_them_each_folder_is_in_the_home() -> None:
    assert agent_homes({"HOME": "/h"}) == {
        "claude-code": "/h/.claude",
        "codex": "/h/.codex",
        "gemini-cli": "/h/.gemini",
        "qwen-code": "/h/.qwen",
        "copilot": "/h/.copilot",
        "opencode": "/h/.local/share/opencode",
    }
