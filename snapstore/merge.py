"""Line-based diff and three-way merge (diff3) for rewinding agent edits.

When a user edits a file after an agent's turn and then rewinds that turn, snapstore takes out
only the agent's change: a three-way merge with the agent's version as base, the file as it is
now as "ours", and the file as it was before the turn as "theirs".

The usual Python building blocks for this (merge3, patiencediff) are GPL, and git's xdiff is
LGPL, so this module is our own implementation, written from the published algorithms:

* E. W. Myers, "An O(ND) Difference Algorithm and Its Variations" (1986), using the
  linear-space "middle snake" divide and conquer;
* the diff3 merge described by Khanna, Kunal and Pierce, "A Formal Investigation of Diff3"
  (2007).

Results are meant to agree with ``git merge-file`` (default settings). The finer points that
decide between equally short diffs (which lines take part in the search, the order in which
diagonals are tried, where ambiguous hunks slide to) were matched by observing git as a black
box, and are checked against it by the test suite. One known difference: for diffs costing
more than about 256 edits, git trades minimality for speed, while this module stays exact, so
alignments of very large rewrites can differ.

Only the standard library is used.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

__all__ = [
    "MergeResult",
    "diff_opcodes",
    "is_binary",
    "line_stats",
    "merge3",
    "split_lines",
    "unified_diff",
]

Hunk = tuple[int, int, int, int]  # a[i1:i2] is replaced by b[j1:j2]

_BINARY_SNIFF = 8192
# How far _search_mask looks around a common line.
_SCAN_WINDOW = 100
# Longest prefix of a line shown after a hunk header, as git does.
_FUNCNAME_MAX = 80


@dataclass(frozen=True)
class MergeResult:
    """Outcome of :func:`merge3`."""

    content: bytes
    """Merged bytes; with conflicts it holds diff3-style conflict markers."""
    conflicts: int
    """Number of conflict regions (0 means the merge is clean). git's default conflict style
    may split one such region in several, so git's count can differ; cleanliness does not."""

    @property
    def clean(self) -> bool:
        """True when the merge has no conflicts."""
        return self.conflicts == 0


def is_binary(data: bytes) -> bool:
    """Return True when a NUL byte occurs in the first 8 KiB (git's rule)."""
    return b"\0" in data[:_BINARY_SNIFF]


def split_lines(data: bytes) -> list[bytes]:
    """Split into lines that keep their endings; only ``\\n`` ends a line.

    The last line may lack a newline. ``b""`` has no lines.
    """
    parts = data.split(b"\n")
    lines = [part + b"\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


# --------------------------------------------------------------------------------------------
# Diff


def _search_mask(lines: list[int], lo: int, hi: int, other: Counter[int]) -> list[bool]:
    """Say which of ``lines[lo:hi]`` take part in the Myers search.

    A line that does not occur in the other file can never match, so it is left out. A line
    that occurs very often in the other file (at least a power of two between sqrt(n) and
    2 * sqrt(n) times, n being this file's length) is left out too when it sits in a stretch
    of lines that are all unmatched or common, with unmatched lines on both sides of it that
    outnumber the common ones (counting this line twice) more than three to one; at most 100
    lines each way are looked at. Such lines would only produce coincidental matches in the
    middle of rewritten text.
    """
    limit = 2 ** ((len(lines).bit_length() + 1) // 2)
    # 0: never matches, 1: ordinary, 2: common
    kinds = []
    for line in lines[lo:hi]:
        count = other[line]
        kinds.append(0 if count == 0 else 2 if count >= limit else 1)

    def run(start: int, stop: int, step: int) -> tuple[int, int]:
        unmatched = common = 0
        for k in range(start, stop, step):
            if kinds[k] == 1:
                break
            if kinds[k] == 0:
                unmatched += 1
            else:
                common += 1
        return unmatched, common

    keep = []
    for i, kind in enumerate(kinds):
        if kind != 2:
            keep.append(kind == 1)
            continue
        before = run(i - 1, max(i - _SCAN_WINDOW, 0) - 1, -1)
        after = run(i + 1, min(i + _SCAN_WINDOW + 1, len(kinds)), 1)
        common = before[1] + after[1] + 2
        unmatched = before[0] + after[0]
        drop = before[0] > 0 and after[0] > 0 and unmatched > 3 * common
        keep.append(not drop)
    return keep


def _middle(a: list[int], b: list[int], alo: int, ahi: int, blo: int, bhi: int) -> tuple[int, int]:
    """Return a point (x, y) that an optimal edit path from (alo, blo) to (ahi, bhi) crosses.

    This is Myers' bidirectional search: furthest-reaching D-paths are grown alternately from
    both corners until they meet. Diagonals are numbered k = x - y and scanned from the highest
    to the lowest; both ends of the box are already known to differ.
    """
    kmin, kmax = alo - bhi, ahi - blo
    fmid, bmid = alo - blo, ahi - bhi
    odd = (fmid - bmid) % 2 == 1
    shift = 1 - kmin  # index of diagonal k is k + shift; one sentinel slot at each end
    fwd = [0] * (kmax - kmin + 3)
    bwd = [0] * (kmax - kmin + 3)
    fwd[fmid + shift] = alo
    bwd[bmid + shift] = ahi
    flo = fhi = fmid
    blo_k = bhi_k = bmid
    lowest, highest = -1, ahi + bhi + 1  # "unreached" for the forward / backward search
    while True:
        # Forward: one more edit from the top-left corner.
        if flo > kmin:
            flo -= 1
            fwd[flo - 1 + shift] = lowest
        else:
            flo += 1
        if fhi < kmax:
            fhi += 1
            fwd[fhi + 1 + shift] = lowest
        else:
            fhi -= 1
        for k in range(fhi, flo - 1, -2):
            right, down = fwd[k - 1 + shift], fwd[k + 1 + shift]
            x = right + 1 if right >= down else down
            y = x - k
            while x < ahi and y < bhi and a[x] == b[y]:
                x += 1
                y += 1
            fwd[k + shift] = x
            if odd and blo_k <= k <= bhi_k and bwd[k + shift] <= x:
                return x, y
        # Backward: one more edit from the bottom-right corner.
        if blo_k > kmin:
            blo_k -= 1
            bwd[blo_k - 1 + shift] = highest
        else:
            blo_k += 1
        if bhi_k < kmax:
            bhi_k += 1
            bwd[bhi_k + 1 + shift] = highest
        else:
            bhi_k -= 1
        for k in range(bhi_k, blo_k - 1, -2):
            up, left = bwd[k - 1 + shift], bwd[k + 1 + shift]
            x = up if up < left else left - 1
            y = x - k
            while x > alo and y > blo and a[x - 1] == b[y - 1]:
                x -= 1
                y -= 1
            bwd[k + shift] = x
            if not odd and flo <= k <= fhi and x <= fwd[k + shift]:
                return x, y


def _myers(a: list[int], b: list[int], ca: list[bool], cb: list[bool]) -> None:
    """Mark in ``ca``/``cb`` the lines of a and b outside a longest common subsequence."""
    stack = [(0, len(a), 0, len(b))]
    while stack:
        alo, ahi, blo, bhi = stack.pop()
        while alo < ahi and blo < bhi and a[alo] == b[blo]:
            alo += 1
            blo += 1
        while alo < ahi and blo < bhi and a[ahi - 1] == b[bhi - 1]:
            ahi -= 1
            bhi -= 1
        if alo == ahi or blo == bhi:
            ca[alo:ahi] = [True] * (ahi - alo)
            cb[blo:bhi] = [True] * (bhi - blo)
            continue
        x, y = _middle(a, b, alo, ahi, blo, bhi)
        stack.append((x, ahi, y, bhi))
        stack.append((alo, x, blo, y))


class _Slider:
    """Shift groups of changed lines along runs of equal lines.

    Groups slide as far down as they can (merging with groups they bump into), unless at some
    position they sit opposite a change in the other file, in which case the lowest such
    position wins. The position opposite a group is tracked as the gap [gs, ge) of changed
    lines in the other file.
    """

    def __init__(self, lines: list[int], changed: list[bool], other: list[bool]) -> None:
        self.lines, self.changed, self.other = lines, changed, other
        self.start = self.end = self.gs = self.ge = 0

    def _extend_gap_down(self) -> None:
        self.ge = self.gs
        while self.ge < len(self.other) and self.other[self.ge]:
            self.ge += 1

    def up(self) -> bool:
        lines, changed = self.lines, self.changed
        if self.start == 0 or lines[self.start - 1] != lines[self.end - 1]:
            return False
        self.start -= 1
        self.end -= 1
        changed[self.start], changed[self.end] = True, False
        while self.start > 0 and changed[self.start - 1]:
            self.start -= 1
        self.ge = self.gs - 1
        self.gs = self.ge
        while self.gs > 0 and self.other[self.gs - 1]:
            self.gs -= 1
        return True

    def down(self) -> bool:
        lines, changed = self.lines, self.changed
        if self.end == len(lines) or lines[self.start] != lines[self.end]:
            return False
        changed[self.start], changed[self.end] = False, True
        self.start += 1
        self.end += 1
        while self.end < len(lines) and changed[self.end]:
            self.end += 1
        self.gs = self.ge + 1
        self._extend_gap_down()
        return True

    def run(self) -> None:
        changed, n = self.changed, len(self.lines)
        pos = other_pos = 0
        while True:
            self.gs = other_pos
            self._extend_gap_down()
            while pos < n and not changed[pos]:
                pos += 1
                self.gs = self.ge + 1
                self._extend_gap_down()
            if pos == n:
                return
            self.start = self.end = pos
            while self.end < n and changed[self.end]:
                self.end += 1
            self._place()
            pos, other_pos = self.end, self.ge

    def _place(self) -> None:
        while True:
            size = self.end - self.start
            while self.up():
                pass
            aligned_end = self.end if self.ge > self.gs else -1
            while self.down():
                if self.ge > self.gs:
                    aligned_end = self.end
            if self.end - self.start == size:
                break
        if aligned_end != -1:
            while self.end != aligned_end and self.up():
                pass


def _changes(a: list[int], b: list[int]) -> tuple[list[bool], list[bool]]:
    """Flag the lines of a and b that are not on the common subsequence git would choose."""
    changed_a, changed_b = [False] * len(a), [False] * len(b)
    lo = 0
    while lo < len(a) and lo < len(b) and a[lo] == b[lo]:
        lo += 1
    ahi, bhi = len(a), len(b)
    while ahi > lo and bhi > lo and a[ahi - 1] == b[bhi - 1]:
        ahi -= 1
        bhi -= 1
    keep_a = _search_mask(a, lo, ahi, Counter(b))
    keep_b = _search_mask(b, lo, bhi, Counter(a))
    changed_a[lo:ahi] = [not keep for keep in keep_a]
    changed_b[lo:bhi] = [not keep for keep in keep_b]
    # Run the search on the remaining lines only, then map its verdicts back.
    pos_a = [i for i, keep in enumerate(keep_a, lo) if keep]
    pos_b = [j for j, keep in enumerate(keep_b, lo) if keep]
    sub_a, sub_b = [False] * len(pos_a), [False] * len(pos_b)
    _myers([a[i] for i in pos_a], [b[j] for j in pos_b], sub_a, sub_b)
    for i, flag in zip(pos_a, sub_a, strict=True):
        changed_a[i] = flag
    for j, flag in zip(pos_b, sub_b, strict=True):
        changed_b[j] = flag
    return changed_a, changed_b


def _hunks(a: list[bytes], b: list[bytes]) -> list[Hunk]:
    """Diff two lists of lines the way git's default (Myers) diff does."""
    ids: dict[bytes, int] = {}
    ia = [ids.setdefault(line, len(ids)) for line in a]
    ib = [ids.setdefault(line, len(ids)) for line in b]
    changed_a, changed_b = _changes(ia, ib)
    _Slider(ia, changed_a, changed_b).run()
    _Slider(ib, changed_b, changed_a).run()
    hunks: list[Hunk] = []
    i = j = 0
    while i < len(a) or j < len(b):
        if i < len(a) and j < len(b) and not changed_a[i] and not changed_b[j]:
            i += 1
            j += 1
            continue
        i1, j1 = i, j
        while i < len(a) and changed_a[i]:
            i += 1
        while j < len(b) and changed_b[j]:
            j += 1
        hunks.append((i1, i, j1, j))
    return hunks


def diff_opcodes(a: list[bytes], b: list[bytes]) -> list[tuple[str, int, int, int, int]]:
    """Diff two lists of lines and return difflib-style opcodes.

    The alignment is the one the merge uses, which follows git's default (Myers) diff.
    """
    ops: list[tuple[str, int, int, int, int]] = []
    i = j = 0
    for i1, i2, j1, j2 in _hunks(a, b):
        if i < i1:
            ops.append(("equal", i, i1, j, j1))
        tag = "replace" if i1 < i2 and j1 < j2 else "delete" if i1 < i2 else "insert"
        ops.append((tag, i1, i2, j1, j2))
        i, j = i2, j2
    if i < len(a):
        ops.append(("equal", i, len(a), j, len(b)))
    return ops


def line_stats(old: bytes, new: bytes) -> tuple[int, int]:
    """Return (lines added, lines removed) from old to new, as ``git diff --numstat`` counts.

    Binary data (see :func:`is_binary`) has no line counts and gives (0, 0).
    """
    if old == new or is_binary(old) or is_binary(new):
        return 0, 0
    hunks = _hunks(split_lines(old), split_lines(new))
    return sum(j2 - j1 for _, _, j1, j2 in hunks), sum(i2 - i1 for i1, i2, _, _ in hunks)


# --------------------------------------------------------------------------------------------
# Merge


@dataclass(frozen=True)
class _Region:
    """A stretch of base that one or both sides changed, and what each side has there."""

    base: tuple[int, int]
    ours: tuple[int, int]
    theirs: tuple[int, int]
    sides: frozenset[str]


def _regions(ours: list[Hunk], theirs: list[Hunk]) -> list[_Region]:
    """Group the changes of both sides; changes that overlap or merely touch share a region."""
    changes = sorted([(h, "ours") for h in ours] + [(h, "theirs") for h in theirs])
    grouped: list[tuple[int, int, list[tuple[Hunk, str]]]] = []
    for hunk, side in changes:
        if grouped and hunk[0] <= grouped[-1][1]:
            start, end, members = grouped[-1]
            grouped[-1] = (start, max(end, hunk[1]), [*members, (hunk, side)])
        else:
            grouped.append((hunk[0], hunk[1], [(hunk, side)]))
    regions = []
    shift = {"ours": 0, "theirs": 0}  # side line number minus base line number so far
    for start, end, members in grouped:
        before = dict(shift)
        for (i1, i2, j1, j2), side in members:
            shift[side] += (j2 - j1) - (i2 - i1)
        span = {side: (start + before[side], end + shift[side]) for side in shift}
        regions.append(
            _Region((start, end), span["ours"], span["theirs"], frozenset(s for _, s in members))
        )
    return regions


def _eol(lines: list[bytes], index: int) -> bool | None:
    """True for a CRLF line, False for a bare LF line, None when there is nothing to go by."""
    if not 0 <= index < len(lines) or not lines[index].endswith(b"\n"):
        return None
    return lines[index].endswith(b"\r\n")


def _marker_eol(
    base: list[bytes], ours: list[bytes], theirs: list[bytes], region: _Region
) -> bytes:
    """Line ending for conflict markers: CRLF when the surrounding lines use it.

    Looked at: the line before the conflict (or the first line) on each side, and the first
    line of the base; any bare LF among them means LF. (git looks at the same lines but also
    falls back to LF when the base gives no answer, e.g. when it is empty.)
    """
    votes = {
        _eol(ours, max(region.ours[0] - 1, 0)),
        _eol(theirs, max(region.theirs[0] - 1, 0)),
        _eol(base, 0),
    }
    return b"\r\n" if True in votes and False not in votes else b"\n"


def _conflict(
    ours: list[bytes],
    base: list[bytes],
    theirs: list[bytes],
    labels: tuple[str, str, str],
    eol: bytes,
) -> list[bytes]:
    """Lay out one conflict region, ending every section's last line before a marker."""
    out: list[bytes] = []
    sections = (
        (b"<<<<<<<", labels[0], ours),
        (b"|||||||", labels[1], base),
        (b"=======", "", theirs),
        (b">>>>>>>", labels[2], []),
    )
    for marker, label, lines in sections:
        if out and not out[-1].endswith(b"\n"):
            out.append(eol)
        out.append(marker + (b" " + label.encode() if label else b"") + eol)
        out.extend(lines)
    return out


def merge3(
    base: bytes,
    ours: bytes,
    theirs: bytes,
    *,
    labels: tuple[str, str, str] = ("current", "agent", "before"),
) -> MergeResult:
    """Three-way merge of byte strings, line based.

    Matches ``git merge-file -p ours base theirs`` on cleanliness and, when clean, on bytes.
    Conflicts are written diff3 style::

        <<<<<<< {labels[0]}
        ours lines
        ||||||| {labels[1]}
        base lines
        =======
        theirs lines
        >>>>>>> {labels[2]}

    with CRLF marker lines when the inputs use CRLF. Binary inputs (see :func:`is_binary`) are
    not merged line by line: unless two of the three are equal, the result is one conflict and
    the content is ``ours`` unchanged.
    """
    if ours == theirs or theirs == base:
        return MergeResult(ours, 0)
    if ours == base:
        return MergeResult(theirs, 0)
    if is_binary(base) or is_binary(ours) or is_binary(theirs):
        return MergeResult(ours, 1)
    b, o, t = split_lines(base), split_lines(ours), split_lines(theirs)
    out: list[bytes] = []
    conflicts = 0
    pos = 0
    for region in _regions(_hunks(b, o), _hunks(b, t)):
        out.extend(b[pos : region.base[0]])
        pos = region.base[1]
        ours_part, theirs_part = o[slice(*region.ours)], t[slice(*region.theirs)]
        if region.sides == {"ours"} or ours_part == theirs_part:
            out.extend(ours_part)
        elif region.sides == {"theirs"}:
            out.extend(theirs_part)
        else:
            conflicts += 1
            eol = _marker_eol(b, o, t, region)
            out.extend(_conflict(ours_part, b[slice(*region.base)], theirs_part, labels, eol))
    out.extend(b[pos:])
    return MergeResult(b"".join(out), conflicts)


# --------------------------------------------------------------------------------------------
# Unified diff


def _hunk_range(start: int, count: int) -> str:
    if count == 1:
        return str(start + 1)
    return f"{start + (count > 0)},{count}"


def _funcname(lines: list[bytes], before: int) -> str:
    """git's default hunk-header context: the nearest earlier line starting with a letter,
    ``_`` or ``$``, cut to 80 bytes and stripped of trailing whitespace."""
    for index in range(before - 1, -1, -1):
        first = lines[index][:1]
        if first.isalpha() or first in (b"_", b"$"):
            return " " + lines[index][:_FUNCNAME_MAX].rstrip().decode("utf-8", "replace")
    return ""


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
    hunks = _hunks(a, b)
    groups: list[list[Hunk]] = []
    for hunk in hunks:
        if groups and hunk[0] - groups[-1][-1][1] <= 2 * context:
            groups[-1].append(hunk)
        else:
            groups.append([hunk])
    out = [f"--- {old_name}", f"+++ {new_name}"]
    for group in groups:
        first, last = group[0], group[-1]
        lead = min(context, first[0])
        trail = min(context, len(a) - last[1])
        a1, b1 = first[0] - lead, first[2] - lead
        a2, b2 = last[1] + trail, last[3] + trail
        out.append(
            f"@@ -{_hunk_range(a1, a2 - a1)} +{_hunk_range(b1, b2 - b1)} @@" + _funcname(a, a1)
        )
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
