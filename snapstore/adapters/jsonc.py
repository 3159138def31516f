"""JSON with comments, as Gemini CLI and Qwen Code read their settings: read it, and change it
without dropping the user's comments.

Those agents parse ``JSON.parse(stripJsonComments(text))``: ``//`` and ``/* */`` comments
outside strings are allowed, a trailing comma is not. :func:`edit` rewrites only the values
that change and appends new keys after the last one, so every comment outside a changed value
stays where it was; a comment inside a value that must be rewritten is refused, never dropped.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..core.errors import BadInput

#: A JSON string, or a comment (what strip-json-comments removes), from where it starts.
_STRING_OR_COMMENT = re.compile(r'"(?:[^"\\]|\\.)*"|//[^\n]*|/\*.*?(?:\*/|\Z)', re.S)
_SPACE = re.compile(r"[ \t\r\n]*")
_DECODER = json.JSONDecoder()


def _skip_space(text: str, at: int) -> int:
    """Where the JSON white space that starts at ``at`` ends."""
    found = _SPACE.match(text, at)  # always matches (``*``); the check is for the type
    return found.end() if found else at


def blank(text: str) -> str:
    """``text`` with each comment's characters (but its newlines) made spaces: the same JSON,
    at the same offsets."""

    def keep_strings(match: re.Match[str]) -> str:
        found = match.group()
        return found if found[0] == '"' else re.sub(r"[^\n]", " ", found)

    return _STRING_OR_COMMENT.sub(keep_strings, text)


def has_comments(text: str) -> bool:
    return blank(text) != text


def edit(text: str, old: dict[str, Any], new: dict[str, Any], path: str) -> str:
    """``text``, which holds the object ``old``, changed to hold ``new`` with its comments kept
    (``new`` adds keys, changes values or drops keys, as installs and uninstalls do; a
    comment inside what is dropped is refused, never lost)."""
    spaced = blank(text)
    if not spaced.strip():  # comments only: the object goes below them
        return text + ("" if text.endswith("\n") else "\n") + json.dumps(new, indent=2) + "\n"
    changes = _edits(text, spaced, _skip_space(spaced, 0), old, new, path)
    for start, end, replacement in sorted(changes, reverse=True):
        text = text[:start] + replacement + text[end:]
    return text


def _edits(
    text: str, spaced: str, start: int, old: dict[str, Any], new: dict[str, Any], path: str
) -> list[tuple[int, int, str]]:
    """The (start, end, replacement) edits that turn the object at ``start`` from ``old``
    into ``new``."""
    members, last_end = _members(spaced, start)
    changes = [_removal(text, spaced, members, key, path) for key in old if key not in new]
    for key, value in new.items():
        if key not in old or value == old[key]:
            continue
        _, value_start, value_end = members[key]
        if isinstance(value, dict) and isinstance(old[key], dict):
            changes += _edits(text, spaced, value_start, old[key], value, path)
            continue
        if spaced[value_start:value_end] != text[value_start:value_end]:
            raise BadInput(
                f"{path}: the comments inside {json.dumps(key)} would be lost when snapstore "
                "rewrites it; nothing changed: move them out of it and run this again"
            )
        changes.append((value_start, value_end, _dump(value, _indent(text, value_start))))
    added = [key for key in new if key not in old]
    if added:
        changes.append(_insertion(text, spaced, start, bool(members), last_end, added, new))
    return changes


def _members(spaced: str, start: int) -> tuple[dict[str, tuple[int, int, int]], int]:
    """Each member's key start and value span in the object at ``start``, and where the last
    value ends (just after the opening brace when there is none)."""
    members: dict[str, tuple[int, int, int]] = {}
    i = _skip_space(spaced, start + 1)  # after the '{'
    last_end = start + 1
    while spaced[i] != "}":
        key_start = i
        key, i = _DECODER.raw_decode(spaced, i)
        i = _skip_space(spaced, i) + 1  # the ':'
        value_start = _skip_space(spaced, i)
        _, last_end = _DECODER.raw_decode(spaced, value_start)
        members[key] = (key_start, value_start, last_end)
        i = _skip_space(spaced, last_end)
        if spaced[i] == ",":
            i = _skip_space(spaced, i + 1)
    return members, last_end


def _removal(
    text: str, spaced: str, members: dict[str, tuple[int, int, int]], key: str, path: str
) -> tuple[int, int, str]:
    """The edit that drops member ``key`` with its comma (the one after it, or for the last
    member the one before it), and the indentation that led to it."""
    order = sorted(members.values())
    key_start, _, value_end = members[key]
    at = order.index(members[key])
    if at + 1 < len(order):  # up to the next member: its comma goes with it
        start, end = _line_start(text, key_start), _line_start(text, order[at + 1][0])
    elif at > 0:  # the last one: from the end of the one before it, whose comma goes
        start, end = order[at - 1][2], value_end
    else:  # the only one
        start, end = key_start, value_end
    if spaced[start:end] != text[start:end]:
        raise BadInput(
            f"{path}: the comments around {json.dumps(key)} would be lost when snapstore "
            "removes it; nothing changed: move them and run this again"
        )
    return start, end, ""


def _line_start(text: str, at: int) -> int:
    """The start of the line holding ``at`` when only white space comes before it there;
    else ``at``."""
    line = text.rfind("\n", 0, at) + 1
    return line if not text[line:at].strip() else at


def _insertion(
    text: str,
    spaced: str,
    start: int,
    any_member: bool,
    last_end: int,
    added: list[str],
    new: dict[str, Any],
) -> tuple[int, int, str]:
    """New members after the last one: below it, past a comment that ends its line."""
    if any_member:
        inner = _indent(text, last_end)
        line_end = text.find("\n", last_end)
        rest = spaced[last_end:line_end] if line_end >= 0 else ""
        at = line_end if line_end >= 0 and not rest.strip() else last_end
        members = "".join(f",\n{inner}{json.dumps(k)}: {_dump(new[k], inner)}" for k in added)
        if at != last_end:  # the comma goes after the value, the members after the comment
            return last_end, at, "," + text[last_end:at] + members[1:]
        return at, at, members
    inner = _indent(text, start) + "  "
    members = ",".join(f"\n{inner}{json.dumps(k)}: {_dump(new[k], inner)}" for k in added)
    return start + 1, start + 1, members + "\n" + _indent(text, start)


def _indent(text: str, at: int) -> str:
    """The leading white space of the line holding ``at``."""
    line = text[text.rfind("\n", 0, at) + 1 :]
    return line[: len(line) - len(line.lstrip(" \t"))]


def _dump(value: Any, indent: str) -> str:
    return json.dumps(value, indent=2).replace("\n", "\n" + indent)
