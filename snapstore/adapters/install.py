"""Writing snapstore's hooks into an agent's config, keeping everything already there.

Three shapes of config: a JSON settings file whose ``hooks`` object maps each
event to a list of entries (:func:`merge_hooks`: Claude Code's nested
``{"matcher", "hooks": [...]}`` groups, or the flat ``{"command": ...}``
entries of Copilot, Cursor and Windsurf), one executable per event (Cline), or
a plugin file (opencode), both written by :func:`write_owned`. Every writer is
idempotent and replaces files atomically. :func:`hook_commands` reads back the
snapstore commands a config holds, for ``snapstore doctor``.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from typing import Any

from ..core.errors import BadInput
from . import jsonc

#: The agents whose settings parser allows ``//`` and ``/* */`` comments: Gemini CLI and its fork
#: Qwen Code read settings.json with ``JSON.parse(stripJsonComments(text))`` (strip-json-comments,
#: without its trailingCommas option, so a trailing comma still fails there); Auggie parses its
#: settings with a JSONC parser (0.36: comments, and trailing commas too, which snapstore never
#: writes). Claude Code and the others parse strict JSON and reject a comment.
COMMENTS = ("gemini-cli", "qwen-code", "auggie")
#: The keys of a hook entry that hold its command (Copilot: ``bash``, ``powershell``).
COMMAND_KEYS = ("command", "bash", "powershell", "url")  # url: an HTTP hook (Claude Code)


def claude_shaped(command: str, tools: str) -> dict[str, list[dict[str, Any]]]:
    """The hooks block of Claude Code's config shape, shared by Codex and Qwen Code: a
    turn's begin and end, and ``tools`` (a matcher) around each write; 30 s timeouts."""

    def group() -> list[dict[str, Any]]:  # each entry its own, so none is edited through another
        return [{"type": "command", "command": command, "timeout": 30}]

    return {
        "UserPromptSubmit": [{"hooks": group()}],
        "PreToolUse": [{"matcher": tools, "hooks": group()}],
        "PostToolUse": [{"matcher": tools, "hooks": group()}],
        "Stop": [{"hooks": group()}],
        "SessionEnd": [{"hooks": group()}],
    }


def is_ours(command: Any, agent: str) -> bool:
    """Whether a hook runs snapstore for ``agent``: a command ``snapstore hook AGENT`` (by any
    path, with any event or flags after it), an HTTP hook's URL ``.../snapstore/hook/AGENT``
    (``snapstore serve``), or the ``snapstore serve --detach`` that starts that daemon."""
    if not isinstance(command, str):
        return False
    if re.match(rf"https?://[^/\s]+/snapstore/hook/{re.escape(agent)}$", command):
        return True
    return (
        "snapstore" in command
        and re.search(rf"(^|\s)(hook\s+{re.escape(agent)}|serve\s+--detach)(\s|$)", command)
        is not None
    )


def entry_commands(entry: Any) -> list[str]:
    """The commands of one entry of an event's list: a group's hooks, or a flat entry."""
    if not isinstance(entry, dict):
        return []
    hooks = entry.get("hooks")
    entries = hooks if isinstance(hooks, list) else [entry]
    return [
        h[key]
        for h in entries
        if isinstance(h, dict)
        for key in COMMAND_KEYS
        if isinstance(h.get(key), str)
    ]


def merge_hooks(
    settings_path: str,
    block: dict[str, list[dict[str, Any]]],
    agent: str,
    top: dict[str, Any] | None = None,
    drop: tuple[str, ...] = (),
) -> list[str]:
    """Merge ``block`` (event -> entries) into the ``hooks`` object of a JSON file.

    An event with no snapstore hook for ``agent`` gets the block's entries at its
    end. Entries that are snapstore's alone and differ from the block (another
    path to snapstore, an unquoted command from an older release, scan mode's
    shell tool) are replaced where they stand. Returns the events added or
    replaced; running it again changes nothing. ``top`` holds settings set when
    absent, by dotted key (``version``; an old Gemini CLI's ``tools.enableHooks``
    and ``hooks.enabled``). ``drop`` names events whose snapstore-only entries go (the
    shell's own events, on an install without the shell). Other keys, hooks and their
    order are kept.
    """
    settings = read_json(settings_path, comments=agent in COMMENTS)
    before = json.dumps(settings)
    old = json.loads(before)
    for key, value in (top or {}).items():
        *parents, leaf = key.split(".")
        holder = settings
        for parent in parents:
            holder = holder.setdefault(parent, {})
            if not isinstance(holder, dict):
                raise BadInput(f"'{parent}' in {settings_path} is not an object")
        holder.setdefault(leaf, value)
    hooks = settings.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise BadInput(f"'hooks' in {settings_path} is not an object")
    changed = []
    for event, entries in block.items():
        current = hooks.setdefault(event, [])
        if not isinstance(current, list):
            raise BadInput(f"hooks.{event} in {settings_path} is not a list")
        if not any(is_ours(c, agent) for e in current for c in entry_commands(e)):
            current.extend(entries)
            changed.append(event)
            continue
        ours = [
            i
            for i, e in enumerate(current)
            if entry_commands(e) and all(is_ours(c, agent) for c in entry_commands(e))
        ]
        if ours and [current[i] for i in ours] != entries:
            for i in reversed(ours):
                del current[i]
            current[ours[0] : ours[0]] = entries
            changed.append(event)
    for event in drop:
        current = hooks.get(event)
        if event in block or not isinstance(current, list):
            continue
        kept = [
            e
            for e in current
            if not (entry_commands(e) and all(is_ours(c, agent) for c in entry_commands(e)))
        ]
        if len(kept) != len(current):
            hooks[event] = kept
            changed.append(event)
    if json.dumps(settings) != before:
        text = _read_text(settings_path) or ""
        if agent in COMMENTS and jsonc.has_comments(text):
            write_text(settings_path, jsonc.edit(text, old, settings, settings_path))
        else:
            write_text(settings_path, json.dumps(settings, indent=2) + "\n")
    return changed


def remove_hooks(path: str, agent: str, mark: str = "") -> list[str]:
    """Take snapstore's hooks for ``agent`` out of its config, keeping everything else: from
    a JSON settings file, every entry that runs only snapstore (an event left with none goes);
    a folder's executables and a plugin file that hold ``mark`` (snapstore wrote them) are
    deleted. Returns the events (or files) removed; running it again changes nothing."""
    if os.path.isdir(path) or path.endswith(".js"):
        files = (
            [os.path.join(path, name) for name in sorted(os.listdir(path))]
            if os.path.isdir(path)
            else [path]
        )
        gone = []
        for file in files:
            if os.path.isfile(file) and not foreign([file], mark):
                os.unlink(file)
                gone.append(os.path.basename(file))
        return gone
    settings = read_json(path, comments=agent in COMMENTS)
    old = json.loads(json.dumps(settings))
    hooks = settings.get("hooks")
    if not isinstance(hooks, dict):
        return []
    removed = []
    for event in list(hooks):
        entries = hooks[event]
        if not isinstance(entries, list):
            continue
        kept = [
            e
            for e in entries
            if not (entry_commands(e) and all(is_ours(c, agent) for c in entry_commands(e)))
        ]
        if len(kept) == len(entries):
            continue
        removed.append(event)
        if kept:
            hooks[event] = kept
        else:
            del hooks[event]
    if not removed:
        return []
    if not hooks:
        del settings["hooks"]
    text = _read_text(path) or ""
    if agent in COMMENTS and jsonc.has_comments(text):
        write_text(path, jsonc.edit(text, old, settings, path))
    else:
        write_text(path, json.dumps(settings, indent=2) + "\n")
    return removed


def _read_text(path: str) -> str | None:
    """A settings file's text; None when it is absent."""
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"cannot read {path}: {exc}") from None


def read_json(path: str, comments: bool = False) -> dict[str, Any]:
    """A JSON settings file as an object (empty when the file is absent or blank); with
    ``comments``, ``//`` and ``/* */`` comments are allowed, as the agent that reads it does."""
    text = _read_text(path)
    if text is None:
        return {}
    if comments:
        text = jsonc.blank(text)
    try:
        settings = json.loads(text) if text.strip() else {}
    except ValueError as exc:
        raise BadInput(f"{path} is not valid JSON ({exc}); fix it first") from None
    if not isinstance(settings, dict):
        raise BadInput(f"{path} does not hold a JSON object")
    return settings


def foreign(paths: list[str], mark: str) -> list[str]:
    """Those of ``paths`` that exist and are not snapstore's (do not hold ``mark``)."""
    found = []
    for path in paths:
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                if mark not in handle.read():
                    found.append(path)
        except FileNotFoundError:
            continue
        except OSError:
            found.append(path)
    return found


def write_owned(path: str, text: str, mark: str, mode: int | None = None) -> bool:
    """Write a file snapstore owns (it holds ``mark``): True when it changed. A file of
    the same name that is not snapstore's is left alone, and refused."""
    try:
        with open(path, encoding="utf-8") as handle:
            current = handle.read()
    except FileNotFoundError:
        current = None
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"cannot read {path}: {exc}") from None
    if current is not None and mark not in current:
        raise BadInput(f"{path} exists and is not snapstore's; move it away first")
    if current == text and (mode is None or os.stat(path).st_mode & 0o777 == mode):
        return False
    write_text(path, text, mode)
    return True


def write_text(path: str, text: str, mode: int | None = None) -> None:
    """Replace a file atomically, keeping its mode (or setting ``mode``)."""
    folder = os.path.dirname(path) or "."
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".snapstore-", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        elif os.path.exists(path):
            os.chmod(tmp, os.stat(path).st_mode & 0o7777)
        else:
            os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def hook_commands(path: str, agent: str) -> list[str]:
    """The ``snapstore hook AGENT`` commands a config holds: a JSON settings file, a
    folder of executables (Cline) or a plugin file (opencode). Unreadable: none."""
    if os.path.isdir(path):
        texts = []
        for name in sorted(os.listdir(path)):
            try:
                with open(os.path.join(path, name), encoding="utf-8") as handle:
                    texts.append(handle.read())
            except (OSError, UnicodeDecodeError):
                continue
        return [
            line.removeprefix("exec ")
            for text in texts
            for line in text.splitlines()
            if is_ours(line, agent) and not line.startswith("#")
        ]
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError):
        return []
    if path.endswith(".js"):
        match = re.search(r"^const COMMAND = (\[.*\]);$", text, re.M)
        if not match:
            return []
        import shlex

        command = shlex.join(json.loads(match.group(1)))
        return [command] if is_ours(command, agent) else []
    try:
        settings = json.loads(jsonc.blank(text) if agent in COMMENTS else text)
    except ValueError:
        return []
    hooks = settings.get("hooks") if isinstance(settings, dict) else None
    if not isinstance(hooks, dict):
        return []
    return [
        c
        for entries in hooks.values()
        if isinstance(entries, list)
        for e in entries
        for c in entry_commands(e)
        if is_ours(c, agent)
    ]


def shell_hooked(path: str, agent: str) -> bool:
    """Whether the snapstore hooks a config holds see ``agent``'s shell tool: a matcher of
    theirs that takes it, an event that stands for it (Windsurf), or a plugin whose tools
    list it (opencode). Cline's executables see every tool."""
    from . import PRE, module_of

    spec = module_of(agent).AGENT
    if os.path.isdir(path):
        return bool(hook_commands(path, agent))
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError):
        return False
    if path.endswith(".js"):
        match = re.search(r"^const TOOLS = (\[.*\]);$", text, re.M)
        if match is None:
            return False
        return any(t in json.loads(match.group(1)) for t in spec.shell_tools)
    try:
        settings = json.loads(jsonc.blank(text) if agent in COMMENTS else text)
    except ValueError:
        return False
    hooks = settings.get("hooks") if isinstance(settings, dict) else None
    for event, entries in hooks.items() if isinstance(hooks, dict) else ():
        if spec.events.get(event) != PRE or not isinstance(entries, list):
            continue
        for entry in entries:
            if not any(is_ours(c, agent) for c in entry_commands(entry)):
                continue
            if event in spec.event_tools:  # an event for one tool (Windsurf)
                if spec.event_tools[event] in spec.shell_tools:
                    return True
                continue
            matcher = entry.get("matcher")
            if not isinstance(matcher, str) or not matcher:
                return True  # no matcher: every tool
            try:
                if any(re.fullmatch(matcher, t) for t in spec.shell_tools):
                    return True
            except re.error:
                continue
    return False
