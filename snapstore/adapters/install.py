"""Merging snapstore's hooks into an agent's settings file, keeping what is there."""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any

from ..errors import BadInput


def merge_hooks(settings_path: str, block: dict[str, list[dict[str, Any]]],
                marker: str) -> list[str]:
    """Add each event's hooks unless a hook whose command ends with ``marker`` is there.

    An entry of snapstore's own (every hook in it ends with ``marker``) that
    differs from ``block`` is replaced where it stands: scan mode adds the shell
    tool to the matchers. Returns the events added or replaced; running it
    again changes nothing. Other keys, other hooks and their order are kept.
    The file is replaced atomically.
    """
    try:
        with open(settings_path, encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError:
        text = ""
    try:
        settings = json.loads(text) if text.strip() else {}
    except ValueError as exc:
        raise BadInput(f"{settings_path} is not valid JSON ({exc}); fix it first") from None
    if not isinstance(settings, dict):
        raise BadInput(f"{settings_path} does not hold a JSON object")
    hooks = settings.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise BadInput(f"'hooks' in {settings_path} is not an object")
    added = []
    for event, entries in block.items():
        current = hooks.setdefault(event, [])
        if not isinstance(current, list):
            raise BadInput(f"hooks.{event} in {settings_path} is not a list")
        commands = [h.get("command", "") for entry in current if isinstance(entry, dict)
                    for h in entry.get("hooks", []) if isinstance(h, dict)]
        if not any(isinstance(c, str) and c.endswith(marker) for c in commands):
            current.extend(entries)
            added.append(event)
            continue
        ours = [i for i, entry in enumerate(current) if _only_ours(entry, marker)]
        if ours and [current[i] for i in ours] != entries:
            for i in reversed(ours):
                del current[i]
            current[ours[0]:ours[0]] = entries
            added.append(event)
    if added:
        _write_json(settings_path, settings)
    return added


def _only_ours(entry: Any, marker: str) -> bool:
    """Whether a settings entry holds hooks, and every one is snapstore's."""
    hooks = entry.get("hooks") if isinstance(entry, dict) else None
    return bool(hooks) and isinstance(hooks, list) and all(
        isinstance(h, dict) and isinstance(h.get("command"), str)
        and h["command"].endswith(marker) for h in hooks)


def _write_json(path: str, data: Any) -> None:
    folder = os.path.dirname(path) or "."
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".settings-", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=2)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        if os.path.exists(path):
            os.chmod(tmp, os.stat(path).st_mode & 0o7777)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
