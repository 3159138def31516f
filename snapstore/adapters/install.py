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

    Returns the events added; running it again adds nothing. Other keys, other
    hooks and their order are kept. The file is replaced atomically.
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
        if any(isinstance(c, str) and c.endswith(marker) for c in commands):
            continue
        current.extend(entries)
        added.append(event)
    if added:
        _write_json(settings_path, settings)
    return added


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
