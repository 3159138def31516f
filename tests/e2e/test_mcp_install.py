"""`snapstore hook install AGENT` registers `snapstore mcp` in the agent's MCP settings, for all
ten agents and each of their scopes: in the file and shape the agent reads (the six real CLIs
were seen to start it from there, tests/e2e/test_agents_mcp.py), keeping the user's servers and
comments, changing nothing the second time; `--mcp-read-only`, `--no-mcp`, and `hook uninstall`
taking it out again with the hooks."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from snapstore.adapters import jsonc
from snapstore.adapters.install import hook_commands

from ..support import snapstore_bin
from .test_hook_install import WHERE, install, run

#: Where each agent reads MCP servers for the hooks' scope, and the keys down to the servers.
MCP_WHERE: dict[str, dict[str, tuple[str, tuple[str, ...]]]] = {
    "claude-code": {
        "local": ("~/.claude.json", ("projects", "{root}", "mcpServers")),
        "project": (".mcp.json", ("mcpServers",)),
        "user": ("~/.claude.json", ("mcpServers",)),
    },
    "gemini-cli": {
        "project": (".gemini/settings.json", ("mcpServers",)),
        "user": ("~/.gemini/settings.json", ("mcpServers",)),
    },
    "qwen-code": {
        "project": (".qwen/settings.json", ("mcpServers",)),
        "user": ("~/.qwen/settings.json", ("mcpServers",)),
    },
    "codex": {"project": (".codex/config.toml", ()), "user": ("~/.codex/config.toml", ())},
    "copilot": {
        "local": ("~/.copilot/mcp-config.json", ("mcpServers",)),
        "project": (".github/mcp.json", ("mcpServers",)),
        "user": ("~/.copilot/mcp-config.json", ("mcpServers",)),
    },
    "opencode": {
        "project": (".opencode/opencode.json", ("mcp",)),
        "user": ("~/.config/opencode/opencode.json", ("mcp",)),
    },
    "cursor": {
        "project": (".cursor/mcp.json", ("mcpServers",)),
        "user": ("~/.cursor/mcp.json", ("mcpServers",)),
    },
    "cline": {
        "project": ("~/.cline/data/settings/cline_mcp_settings.json", ("mcpServers",)),
        "user": ("~/.cline/data/settings/cline_mcp_settings.json", ("mcpServers",)),
    },
    "windsurf": {
        "project": ("~/.codeium/windsurf/mcp_config.json", ("mcpServers",)),
        "user": ("~/.codeium/windsurf/mcp_config.json", ("mcpServers",)),
    },
    "auggie": {
        "local": (".augment/settings.local.json", ("mcpServers",)),
        "project": (".augment/settings.json", ("mcpServers",)),
        "user": ("~/.augment/settings.json", ("mcpServers",)),
    },
}
#: The agents whose MCP settings allow comments (JSONC).
COMMENTED = {"gemini-cli", "qwen-code", "opencode", "auggie"}
CASES = [(agent, scope) for agent, scopes in MCP_WHERE.items() for scope in scopes]


def path_of(root: Path, where: str) -> Path:
    return root.parent / "home" / where[2:] if where.startswith("~/") else root / where


def theirs(agent: str) -> dict[str, Any]:
    """A server of the user's own, in the agent's shape."""
    if agent == "opencode":
        return {"type": "local", "command": ["my-server"], "enabled": True}
    return {"command": "my-server", "args": ["--flag"]}


def servers(root: Path, agent: str, scope: str) -> dict[str, Any]:
    where, keys = MCP_WHERE[agent][scope]
    text = path_of(root, where).read_text()
    if agent == "codex":
        if sys.version_info < (3, 11):
            pytest.skip("reading TOML needs Python 3.11")
        import tomllib

        found: dict[str, Any] = tomllib.loads(text).get("mcp_servers", {})
        return found
    data: Any = json.loads(jsonc.blank(text) if agent in COMMENTED else text)
    for key in keys:
        data = data.get(str(root) if key == "{root}" else key, {})
    return data


def seed(root: Path, agent: str, scope: str) -> Path:
    """The MCP file as a user left it: a server of their own, and comments where allowed."""
    where, keys = MCP_WHERE[agent][scope]
    path = path_of(root, where)
    path.parent.mkdir(parents=True, exist_ok=True)
    if agent == "codex":
        path.write_text(
            '# my settings\nmodel = "gpt-5.5"\n\n[mcp_servers.theirs]\ncommand = "my-server"\n'
            'args = ["--flag"]  # keep me\n'
        )
        return path
    data: dict[str, Any] = {}
    holder = data
    for key in keys:
        holder = holder.setdefault(str(root) if key == "{root}" else key, {})
    holder["theirs"] = theirs(agent)
    text = json.dumps(data, indent=2)
    if agent in COMMENTED:
        text = "// my settings\n" + text.replace('"theirs"', '// mine\n    "theirs"', 1)
    path.write_text(text + "\n")
    return path


@pytest.mark.parametrize(("agent", "scope"), CASES, ids=[f"{a}-{s}" for a, s in CASES])
def test_install_registers_keeps_the_rest_and_twice_changes_nothing(
    root: Path, agent: str, scope: str
) -> None:
    path = seed(root, agent, scope)
    done = install(root, agent, "--scope", scope)
    assert done["mcp"]["file"] == str(path)
    assert done["mcp"]["read_only"] is False and done["mcp"]["added"] is True
    found = servers(root, agent, scope)
    assert found["theirs"] == theirs(agent)
    ours = found["snapstore"]
    words = ours["command"] if agent == "opencode" else [ours["command"], *ours["args"]]
    assert words[-1] == "mcp" and ("snapstore" in words[0] or "snapstore_cli" in words)
    if scope == "project":
        assert words == ["snapstore", "mcp"]  # from PATH: it works on every teammate's machine
    text = path.read_text()
    if agent in COMMENTED or agent == "codex":
        assert "my settings" in text and ("mine" in text or "keep me" in text)
    again = install(root, agent, "--scope", scope)
    assert again["mcp"]["added"] is False and path.read_text() == text

    read_only = install(root, agent, "--scope", scope, "--mcp-read-only")
    assert read_only["mcp"]["read_only"] is True
    ours = servers(root, agent, scope)["snapstore"]
    words = ours["command"] if agent == "opencode" else [ours["command"], *ours["args"]]
    assert words[-2:] == ["mcp", "--read-only"]

    hooks = Path(done["file"])
    gone = run(root, "--json", "hook", "uninstall", agent, "--scope", scope)
    assert gone.returncode == 0, gone.stderr
    report = json.loads(gone.stdout)
    assert report["mcp"] == {"file": str(path), "removed": True}
    left = servers(root, agent, scope)
    assert "snapstore" not in left and left["theirs"] == theirs(agent)
    assert not hook_commands(str(hooks), agent)
    if agent in COMMENTED or agent == "codex":
        assert "my settings" in path.read_text()
    twice = run(root, "--json", "hook", "uninstall", agent, "--scope", scope)
    assert json.loads(twice.stdout)["mcp"]["removed"] is False


@pytest.mark.parametrize("agent", sorted(MCP_WHERE))
def test_no_mcp_registers_nothing(root: Path, agent: str) -> None:
    scope = "project"
    done = install(root, agent, "--scope", scope, "--no-mcp")
    assert done["mcp"] is None
    where, _ = MCP_WHERE[agent][scope]
    path = path_of(root, where)
    assert not path.exists() or "snapstore" not in servers(root, agent, scope)
    assert WHERE[agent][scope]  # the hooks themselves are installed as ever


def test_the_install_says_what_the_agent_can_do(root: Path) -> None:
    done = run(root, "hook", "install", "gemini-cli")
    assert done.returncode == 0, done.stderr
    assert "Registered `snapstore mcp` in" in done.stdout  # a result: on stdout
    assert "take its own turns' file changes back (rewind_files, undo_last)" in done.stdout
    wide = install(root, "windsurf")
    assert any("registered for all your projects" in n for n in wide["notes"])


def test_a_comment_inside_what_would_change_is_refused_and_nothing_changes(root: Path) -> None:
    path = root / ".gemini" / "settings.json"
    path.parent.mkdir()
    original = (
        '{\n  "mcpServers": {\n    "snapstore": {"command": "old", "args": ["x" /* mine */]}\n'
        "  }\n}\n"
    )
    path.write_text(original)
    done = run(root, "--json", "hook", "install", "gemini-cli", "--no-shell")
    assert done.returncode == 2, done.stdout
    assert "comments" in done.stderr and path.read_text() == original


def test_codex_refuses_a_server_it_cannot_edit_as_a_table(root: Path) -> None:
    if sys.version_info < (3, 11):
        pytest.skip("checking TOML needs Python 3.11")
    path = root / ".codex" / "config.toml"
    path.parent.mkdir()
    original = 'mcp_servers = { snapstore = { command = "old" } }\n'
    path.write_text(original)
    done = run(root, "--json", "hook", "install", "codex", "--scope", "project")
    assert done.returncode == 2 and path.read_text() == original, done.stderr


def test_doctor_checks_the_registration_and_that_the_server_starts(root: Path) -> None:
    install(root, "gemini-cli")  # project scope: `snapstore` from PATH
    install(root, "codex", "--mcp-read-only")
    done = run(root, "--json", "doctor")
    reports = {r["agent"]: r["mcp"] for r in json.loads(done.stdout)["hooks"]}
    assert reports["gemini-cli"]["registered"] and not reports["gemini-cli"]["starts"]
    assert "`snapstore` is not found" in reports["gemini-cli"]["notes"][0] or (
        "snapstore is not found" in reports["gemini-cli"]["notes"][0]
    )
    path = os.path.dirname(snapstore_bin()[0]) + os.pathsep + os.environ.get("PATH", "")
    done = run(root, "--json", "doctor", PATH=path)
    reports = {r["agent"]: r["mcp"] for r in json.loads(done.stdout)["hooks"]}
    assert reports["gemini-cli"]["registered"] and reports["gemini-cli"]["starts"]
    assert reports["gemini-cli"]["tools"] == [
        "file_at",
        "list_turns",
        "rewind_files",
        "show_turn",
        "undo_last",
    ]
    assert reports["codex"]["read_only"] and reports["codex"]["tools"] == [
        "file_at",
        "list_turns",
        "show_turn",
    ]
    assert run(root, "hook", "uninstall", "gemini-cli").returncode == 0
    install(root, "gemini-cli", "--no-mcp")
    reports = {
        r["agent"]: r["mcp"] for r in json.loads(run(root, "--json", "doctor").stdout)["hooks"]
    }
    assert not reports["gemini-cli"]["registered"]
    assert "not registered" in reports["gemini-cli"]["notes"][0]
