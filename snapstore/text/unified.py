"""Unified-diff text, as ``git diff`` prints it, from the diff engine of
:mod:`snapstore.text.diff`."""

from __future__ import annotations

from .diff import Hunk, diff_lines, is_binary, split_lines

__all__ = ["unified_diff"]

# Longest prefix of a line shown after a hunk header, as git does.
_FUNCNAME_MAX = 80


def _hunk_range(start: int, count: int) -> str:
    if count == 1:
        return str(start + 1)
    return f"{start + (count > 0)},{count}"


def _funcname(lines: list[bytes], before: int, since: int, found: str) -> str:
    """git's default hunk-header context: the nearest line before ``before`` starting with a
    letter, ``_`` or ``$``, cut to 80 bytes and stripped of trailing whitespace. Only lines
    from ``since`` on are looked at; ``found`` is the answer for ``since``."""
    for index in range(before - 1, since - 1, -1):
        first = lines[index][:1]
        if first.isalpha() or first in (b"_", b"$"):
            return " " + lines[index][:_FUNCNAME_MAX].rstrip().decode("utf-8", "replace")
    return found


def _text(prefix: str, line: bytes) -> list[str]:
    body = line[:-1] if line.endswith(b"\n") else line
    out = [prefix + body.decode("utf-8", "replace")]
    if not line.endswith(b"\n"):
        out.append("\\ No newline at end of file")
    return out


def unified_diff(
    old: bytes, new: bytes, old_name: str, new_name: str, context: int = 3
) -> list[str]:
    """Return a git-style unified diff as lines without their trailing newline.

    Starts at the ``--- old_name`` / ``+++ new_name`` lines (no ``diff --git`` header; pass
    ``/dev/null`` names yourself). Hunk headers carry git's default function context and a
    last line without a newline is followed by ``\\ No newline at end of file``. Bytes are
    decoded as UTF-8 with replacement. Equal inputs give ``[]``; binary inputs give git's one
    line ``Binary files ... differ``. ``"\\n".join(lines) + "\\n"`` is the diff text. Hunks
    sit where ``git diff --no-indent-heuristic`` puts them (git's indent heuristic, on by
    default in ``git diff``, is not applied).
    """
    if old == new:
        return []
    if is_binary(old) or is_binary(new):
        return [f"Binary files {old_name} and {new_name} differ"]
    a, b = split_lines(old), split_lines(new)
    hunks = diff_lines(a, b)
    groups: list[list[Hunk]] = []
    for hunk in hunks:
        if groups and hunk[0] - groups[-1][-1][1] <= 2 * context:
            groups[-1].append(hunk)
        else:
            groups.append([hunk])
    out = [f"--- {old_name}", f"+++ {new_name}"]
    since, name = 0, ""  # each header's search stops where the previous one started
    for group in groups:
        first, last = group[0], group[-1]
        lead = min(context, first[0])
        trail = min(context, len(a) - last[1])
        a1, b1 = first[0] - lead, first[2] - lead
        a2, b2 = last[1] + trail, last[3] + trail
        since, name = a1, _funcname(a, a1, since, name)
        out.append(f"@@ -{_hunk_range(a1, a2 - a1)} +{_hunk_range(b1, b2 - b1)} @@" + name)
        pos = a1
        for i1, i2, j1, j2 in group:
            for line in a[pos:i1]:
                out.extend(_text(" ", line))
            for line in a[i1:i2]:
                out.extend(_text("-", line))
            for line in b[j1:j2]:
                out.extend(_text("+", line))
            pos = i2
        for line in a[pos:a2]:
            out.extend(_text(" ", line))
    return out
