"""Registering ``snapstore mcp`` in each agent's MCP settings, keeping everything else there.

Each agent reads its MCP servers from its own file, in its own shape (:data:`PLACES`, one per
scope of the agent's hooks): an object of servers by name inside a JSON settings file (most
agents; Gemini CLI, Qwen Code, opencode and Auggie allow comments in it, which are kept), or a
``[mcp_servers.NAME]`` table of Codex's ``config.toml``. The server is always named
``snapstore``. :func:`register` writes it (idempotent: a second run changes nothing),
:func:`unregister` removes it, :func:`registered` reads it back for ``doctor``. Paths here are
templates (``~/``, an agent's ``$HOME``-like variable); the command line resolves them, as it
does the hooks' (``operations.checks``).

Where an agent has no per-project MCP settings (Cline, Windsurf; Copilot CLI's personal scope),
the registration goes to the user's file: the server serves whatever workspace the agent runs
in, and answers "no store here" elsewhere.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any, Literal, NamedTuple

from ..core.errors import BadInput
from . import jsonc
from .install import read_json, write_text

#: The name of the server in every agent's settings.
NAME = "snapstore"

#: How an agent's settings describe one stdio server.
Shape = Literal["stdio", "plain", "copilot", "opencode", "cline", "toml"]


class Place(NamedTuple):
    """Where an agent reads MCP servers of one scope: the file (relative to the workspace, or
    ``~/`` or ``$VAR/`` for the user's), the keys down to the servers object (``{root}``
    stands for the workspace), the shape of an entry, and whether the file may hold comments.
    ``wide``: the file serves every project, though the hooks' scope is one project."""

    file: str
    keys: tuple[str, ...]
    shape: Shape
    comments: bool = False
    wide: bool = False


_CLAUDE_USER = "~/.claude.json"
_COPILOT_USER = "$COPILOT_HOME/mcp-config.json"
_CLINE = "$CLINE_MCP_SETTINGS_PATH"

#: agent -> hooks' scope -> where its MCP servers of that scope are. Claude Code: its scopes
#: (``claude mcp add --scope``); Copilot CLI reads ``.mcp.json`` first, else ``.github/mcp.json``;
#: Cline's CLI reads ``$CLINE_MCP_SETTINGS_PATH``, else ``~/.cline/data/settings/``.
PLACES: dict[str, dict[str, Place]] = {
    "claude-code": {
        "local": Place(_CLAUDE_USER, ("projects", "{root}", "mcpServers"), "stdio"),
        "project": Place(".mcp.json", ("mcpServers",), "stdio"),
        "user": Place(_CLAUDE_USER, ("mcpServers",), "stdio"),
    },
    "gemini-cli": {
        "project": Place(".gemini/settings.json", ("mcpServers",), "plain", comments=True),
        "user": Place("~/.gemini/settings.json", ("mcpServers",), "plain", comments=True),
    },
    "qwen-code": {
        "project": Place(".qwen/settings.json", ("mcpServers",), "plain", comments=True),
        "user": Place("~/.qwen/settings.json", ("mcpServers",), "plain", comments=True),
    },
    "codex": {
        "project": Place(".codex/config.toml", ("mcp_servers",), "toml"),
        "user": Place("$CODEX_HOME/config.toml", ("mcp_servers",), "toml"),
    },
    "copilot": {
        "local": Place(_COPILOT_USER, ("mcpServers",), "copilot", wide=True),
        "project": Place(".github/mcp.json", ("mcpServers",), "copilot"),
        "user": Place(_COPILOT_USER, ("mcpServers",), "copilot"),
    },
    "opencode": {
        "project": Place(".opencode/opencode.json", ("mcp",), "opencode", comments=True),
        "user": Place("$XDG_CONFIG_HOME/opencode/opencode.json", ("mcp",), "opencode", True),
    },
    "cursor": {
        "project": Place(".cursor/mcp.json", ("mcpServers",), "plain"),
        "user": Place("~/.cursor/mcp.json", ("mcpServers",), "plain"),
    },
    "cline": {
        "project": Place(_CLINE, ("mcpServers",), "cline", wide=True),
        "user": Place(_CLINE, ("mcpServers",), "cline"),
    },
    "windsurf": {
        "project": Place(
            "~/.codeium/windsurf/mcp_config.json", ("mcpServers",), "plain", wide=True
        ),
        "user": Place("~/.codeium/windsurf/mcp_config.json", ("mcpServers",), "plain"),
    },
    "auggie": {
        "local": Place(".augment/settings.local.json", ("mcpServers",), "plain", comments=True),
        "project": Place(".augment/settings.json", ("mcpServers",), "plain", comments=True),
        "user": Place("~/.augment/settings.json", ("mcpServers",), "plain", comments=True),
    },
}
#: The user-wide variables of the templates, and what they default to.
DEFAULTS = {
    "$CODEX_HOME": "~/.codex",
    "$COPILOT_HOME": "~/.copilot",
    "$XDG_CONFIG_HOME": "~/.config",
    "$CLINE_MCP_SETTINGS_PATH": "~/.cline/data/settings/cline_mcp_settings.json",
}


def entry(shape: Shape, words: list[str]) -> dict[str, Any]:
    """One server, ``words`` its command line, as that shape of settings writes it."""
    command, args = words[0], words[1:]
    if shape == "opencode":
        return {"type": "local", "command": list(words), "enabled": True}
    if shape == "copilot":
        return {"type": "local", "command": command, "args": args, "tools": ["*"]}
    if shape == "stdio":
        return {"type": "stdio", "command": command, "args": args}
    if shape == "cline":
        return {"command": command, "args": args, "disabled": False}
    return {"command": command, "args": args}


def words_of(shape: Shape, found: Any) -> list[str] | None:
    """The command line of a registered server, as :func:`entry` wrote it; None when it is
    not one."""
    if not isinstance(found, dict):
        return None
    if shape == "opencode":
        words = found.get("command")
        return (
            list(words)
            if isinstance(words, list) and all(isinstance(w, str) for w in words) and words
            else None
        )
    command, args = found.get("command"), found.get("args", [])
    if not isinstance(command, str) or not isinstance(args, list):
        return None
    if not all(isinstance(a, str) for a in args):
        return None
    return [command, *args]


def _keys(place: Place, root: str) -> list[str]:
    return [root if key == "{root}" else key for key in place.keys]


def register(path: str, place: Place, root: str, words: list[str], write: bool = True) -> bool:
    """Write the server into the file at ``path``; True when the file changed. ``write``
    false: only check that it can be written (what would refuse it is raised), so that an
    install refuses before it changes anything."""
    if place.shape == "toml":
        return _toml_write(path, words, write)
    settings = read_json(path, comments=place.comments)
    old = json.loads(json.dumps(settings))
    holder = settings
    for key in _keys(place, root):
        holder = holder.setdefault(key, {})
        if not isinstance(holder, dict):
            raise BadInput(f"{json.dumps(key)} in {path} is not an object")
    wanted = entry(place.shape, words)
    if holder.get(NAME) == wanted:
        return False
    holder[NAME] = wanted
    _write(path, place, old, settings, write)
    return True


def unregister(path: str, place: Place, root: str) -> bool:
    """Remove the server from the file at ``path``; True when the file changed."""
    if place.shape == "toml":
        return _toml_write(path, None)
    settings = read_json(path, comments=place.comments)
    old = json.loads(json.dumps(settings))
    holder: Any = settings
    for key in _keys(place, root):
        holder = holder.get(key) if isinstance(holder, dict) else None
    if not isinstance(holder, dict) or NAME not in holder:
        return False
    del holder[NAME]
    _write(path, place, old, settings)
    return True


def registered(path: str, place: Place, root: str) -> list[str] | None:
    """The command line of the snapstore server the file holds; None when it holds none."""
    if place.shape == "toml":
        block = _toml_block(_read(path) or "")
        return None if block is None else _toml_words(block[2])
    try:
        holder: Any = read_json(path, comments=place.comments)
    except BadInput:
        return None
    for key in _keys(place, root):
        holder = holder.get(key) if isinstance(holder, dict) else None
    return words_of(place.shape, holder.get(NAME)) if isinstance(holder, dict) else None


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"cannot read {path}: {exc}") from None


def _write(
    path: str, place: Place, old: dict[str, Any], new: dict[str, Any], write: bool = True
) -> None:
    text = _read(path) or ""
    if place.comments and jsonc.has_comments(text):
        text = jsonc.edit(text, old, new, path)
    else:
        text = json.dumps(new, indent=2) + "\n"
    if write:
        write_text(path, text)


# -- Codex's config.toml: one table of our own, edited as lines ------------------------------

_HEADER = re.compile(r'^\s*\[\s*mcp_servers\s*\.\s*(?:snapstore|"snapstore")\s*(\.|\])')
_ANY_HEADER = re.compile(r"^\s*\[")


def _toml_block(text: str) -> tuple[int, int, str] | None:
    """Where the ``[mcp_servers.snapstore]`` table (and its subtables) stands in ``text``, as
    line offsets, and its text; None when there is none."""
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if _HEADER.match(line)), None)
    if start is None:
        return None
    end = start + 1
    while end < len(lines) and not (
        _ANY_HEADER.match(lines[end]) and not _HEADER.match(lines[end])
    ):
        end += 1
    return start, end, "".join(lines[start:end])


def _toml_string(value: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's, with non-ASCII left as it is)."""
    return json.dumps(value, ensure_ascii=False)


#: Seconds Codex waits for the server to start (its default, 10, is short for a Python
#: server on a busy machine: a server that answers later is listed but not called).
CODEX_STARTUP = 60


def _toml_table(words: list[str]) -> str:
    args = ", ".join(_toml_string(w) for w in words[1:])
    return (
        f"[mcp_servers.{NAME}]\ncommand = {_toml_string(words[0])}\nargs = [{args}]\n"
        f"startup_timeout_sec = {CODEX_STARTUP}\n"
    )


def _toml_words(block: str) -> list[str] | None:
    """The command line a table of ours holds (only the two lines it writes)."""
    command = re.search(r"^command\s*=\s*(\".*\")\s*$", block, re.M)
    args = re.search(r"^args\s*=\s*(\[.*\])\s*$", block, re.M)
    try:
        words = [json.loads(command.group(1))] if command else []
        words += json.loads(args.group(1)) if args else []
    except ValueError:
        return None
    return words if words and all(isinstance(w, str) for w in words) else None


def _toml_write(path: str, words: list[str] | None, write: bool = True) -> bool:
    """Put our table in (``words``) or take it out (None); True when the file changed. The
    result is parsed as TOML where Python can (3.11 and newer): a file that defines the
    server another way (an inline table) is refused, unchanged."""
    text = _read(path) or ""
    block = _toml_block(text)
    lines = text.splitlines(keepends=True)
    if block is not None:
        start, end, _ = block
        before, after = "".join(lines[:start]), "".join(lines[end:])
    else:
        before, after = text, ""
    if words is None:
        if block is None:
            return False
        new = before.rstrip("\n") + ("\n" if before.strip() else "") + after.lstrip("\n")
    else:
        table = _toml_table(words)
        if block is not None and block[2].rstrip() == table.rstrip():
            return False
        gap = "\n" if before.strip() and not before.endswith("\n\n") else ""
        lead = "" if not before or before.endswith("\n") else "\n"
        new = before + lead + gap + table + ("\n" + after.lstrip("\n") if after.strip() else "")
    _check_toml(path, new, words)
    if write:
        write_text(path, new)
    return True


def _check_toml(path: str, text: str, words: list[str] | None) -> None:
    if sys.version_info >= (3, 11):
        import tomllib

        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise BadInput(
                f"{path} would not be valid TOML with snapstore's server ({exc}): does it "
                "define mcp_servers.snapstore another way? Nothing changed"
            ) from None
        _check_read_back(path, data, words)
    # Python 3.10 has no TOML reader: the table is ours, written as lines


def _check_read_back(path: str, data: dict[str, Any], words: list[str] | None) -> None:
    servers = data.get("mcp_servers", {})
    found = servers.get(NAME) if isinstance(servers, dict) else None
    if words is None and found is not None:
        raise BadInput(f"{path} defines mcp_servers.snapstore in a way snapstore cannot remove")
    if words is not None and (
        not isinstance(found, dict)
        or [found.get("command"), *found.get("args", [])] != words
        or found.get("startup_timeout_sec") != CODEX_STARTUP
    ):
        raise BadInput(f"{path}: mcp_servers.snapstore did not read back as written; unchanged")
