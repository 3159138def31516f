"""The line diff engine: git's default (Myers) diff, in pure Python.

It serves the three-way merge (:mod:`snapstore.text.merge`), unified-diff text
(:mod:`snapstore.text.unified`) and the line counts of history. The usual Python
building blocks (patiencediff) are GPL and git's xdiff is LGPL, so this is our own,
written from published algorithms: Myers, "An O(ND) Difference Algorithm and Its
Variations" (1986), linear-space divide and conquer; patience diff's unique-line anchors
(B. Cohen) and Hunt and Szymanski's common subsequence (1977).

Agreement with git. Diffs follow git's default (Myers) diff. The finer points (which lines
take part in the search, the order of diagonals, where ambiguous hunks slide to, git's cost
cap: a search that has spent max(256, ~sqrt(N)) edits, N the lines searched, stops and cuts
at the point furthest from its corner) were matched by observing git as a black box, and the
tests check them against git. They differ in one place only, on purpose:

* **Cost.** Python runs that search 50 to 100 times slower than C, so each search has a
  budget of R = 2**19 / N rounds (at least 64, at most git's cap). Up to 2,048 lines
  searched, R is git's cap and the diff is git's. Beyond, a part of the files whose search
  would outrun R (known in advance when a lower bound on its cost exceeds 2R) is cut at
  anchors instead, and so is every part below it (see :func:`_anchors`). So only dense
  rewrites (over 2R edits in one stretch) of files over 1,024 lines may align differently:
  docs/merge.md says by how much. git's "good snake" heuristic starts after 256 edits of
  one search, so only past that budget, and is left out. The cost is about N * R search
  steps plus N log N for anchors, not N**2: ``python -m bench merge`` measures it.

Only the standard library is used.
"""

from __future__ import annotations

import operator
from bisect import bisect_left
from collections import Counter
from collections.abc import Mapping, Sequence
from itertools import accumulate, chain, compress, count, pairwise
from typing import Any

__all__ = [
    "Counts",
    "Hunk",
    "Whole",
    "align",
    "diff_ids",
    "diff_lines",
    "diff_opcodes",
    "is_binary",
    "line_ids",
    "line_stats",
    "shared_end",
    "shared_start",
    "split_lines",
]


Hunk = tuple[int, int, int, int]  # a[i1:i2] is replaced by b[j1:j2]

_BINARY_SNIFF = 8192
# How far _search_mask looks around a common line, and git's cap on what counts as common.
_SCAN_WINDOW = 100
_MAX_EQUAL = 1024
# git's smallest cap on the edits one middle-snake search may cost.
_COST_MIN = 256
# Our own budget for one search, in rounds: _WORK divided by the lines searched, at least
# _ROUNDS_MIN, at most git's cap (see the module notes).
_WORK = 1 << 19
_ROUNDS_MIN = 64
# Beyond the budget, an exact common subsequence is taken when a box has at most this many
# pairs of equal lines per line.
_PAIRS_PER_LINE = 4
# Boxes this small (lines on both sides) are cut by the search alone.
_SMALL_BOX = 64


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


def _bogosqrt(n: int) -> int:
    """The smallest power of two whose square is at least ``n`` (git's cheap square root)."""
    return 1 << ((n.bit_length() + 1) // 2)


def _find(flags: list[bool], value: bool, start: int) -> int:
    """Index of the first ``value`` in ``flags[start:]``, or ``len(flags)``."""
    try:
        return flags.index(value, start)
    except ValueError:
        return len(flags)


def _unchanged(flags: list[bool]) -> list[int]:
    """Indices of the False entries."""
    return list(compress(range(len(flags)), map(operator.not_, flags)))


def shared_start(a: Sequence[Any], b: Sequence[Any]) -> int:
    """Length of the common prefix of two sequences (lines' ids, bytes), by bisection on
    slice comparisons (done in C)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def shared_end(a: Sequence[Any], b: Sequence[Any], limit: int) -> int:
    """Length of the common suffix of two sequences, at most ``limit``."""
    lo, hi, na, nb = 0, limit, len(a), len(b)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[na - mid : na - lo] == b[nb - mid : nb - lo]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _search_mask(
    lines: list[int], lo: int, hi: int, other: Mapping[int, int] | Counts, size: int
) -> list[bool]:
    """Say which of ``lines[lo:hi]`` take part in the Myers search.

    ``other`` counts the lines in the other file, ``size`` is this file's length in lines.
    A line that does not occur in the other file can never match, so it is left out. A line
    that occurs very often in the other file (at least a power of two between sqrt(n) and
    2 * sqrt(n) times, n being this file's length, and at most 1024) is left out too when it
    sits in a stretch of lines that are all unmatched or common, with unmatched lines on both
    sides of it that outnumber the common ones (counting this line twice) more than three to
    one; at most 100 lines each way are looked at. Such lines would only produce coincidental
    matches in the middle of rewritten text. Linear time: prefix sums replace the scans.
    """
    limit = min(_bogosqrt(size), _MAX_EQUAL)
    count = other.get
    # 0: never matches, 1: ordinary, 2: common
    kinds = [0 if (c := count(line, 0)) == 0 else 2 if c >= limit else 1 for line in lines[lo:hi]]
    keep = [kind == 1 for kind in kinds]
    commons = [i for i, kind in enumerate(kinds) if kind == 2]
    if not commons:
        return keep
    ordinary = list(compress(range(len(kinds)), keep))
    unmatched = list(accumulate(map(operator.not_, kinds), initial=0))
    common = list(accumulate(map((2).__eq__, kinds), initial=0))
    for i in commons:
        r = bisect_left(ordinary, i)
        first = max(ordinary[r - 1] + 1 if r else 0, i - _SCAN_WINDOW)
        stop = min(ordinary[r] if r < len(ordinary) else len(kinds), i + _SCAN_WINDOW + 1)
        before, after = unmatched[i] - unmatched[first], unmatched[stop] - unmatched[i + 1]
        around = common[stop] - common[first] - 1
        keep[i] = not (before and after and before + after > 3 * (around + 2))
    return keep


def _split(
    a: list[int], b: list[int], fwd: list[int], bwd: list[int], box: Hunk, rounds: int
) -> tuple[int, int, bool]:
    """Find where to cut ``a[alo:ahi]`` / ``b[blo:bhi]`` (both ends known to differ) in two.

    This is Myers' bidirectional search: furthest-reaching D-paths are grown alternately from
    both corners until they meet, diagonals k = x - y scanned from the highest to the lowest.
    Returns ``(x, y, True)`` for a point an optimal path crosses. After ``rounds`` rounds
    without a meeting it gives up and returns ``(x, y, False)``, (x, y) being the point
    furthest from its corner among both frontiers (the forward one unless the backward one
    got strictly further), clipped to the box: git's rule at its cost cap.

    ``fwd`` and ``bwd`` are scratch arrays indexed by diagonal; negative diagonals wrap around
    to the end, which is free as long as they are longer than ``len(a) + len(b) + 2``.
    """
    alo, ahi, blo, bhi = box
    kmin, kmax = alo - bhi, ahi - blo
    fmid, bmid = alo - blo, ahi - bhi
    odd = (fmid - bmid) & 1
    fwd[fmid], bwd[bmid] = alo, ahi
    flo = fhi = fmid
    blo_k = bhi_k = bmid
    for _ in range(rounds):
        # Forward: one more edit from the top-left corner.
        if flo > kmin:
            flo -= 1
            fwd[flo - 1] = -1
        else:
            flo += 1
        if fhi < kmax:
            fhi += 1
            fwd[fhi + 1] = -1
        else:
            fhi -= 1
        for k in range(fhi, flo - 1, -2):
            x = fwd[k - 1] + 1
            if x <= fwd[k + 1]:
                x = fwd[k + 1]
            y = x - k
            while x < ahi and y < bhi and a[x] == b[y]:
                x += 1
                y += 1
            fwd[k] = x
            if odd and blo_k <= k <= bhi_k and bwd[k] <= x:
                return x, y, True
        # Backward: one more edit from the bottom-right corner.
        if blo_k > kmin:
            blo_k -= 1
            bwd[blo_k - 1] = ahi + bhi + 1
        else:
            blo_k += 1
        if bhi_k < kmax:
            bhi_k += 1
            bwd[bhi_k + 1] = ahi + bhi + 1
        else:
            bhi_k -= 1
        for k in range(bhi_k, blo_k - 1, -2):
            x = bwd[k + 1] - 1
            if bwd[k - 1] <= x:
                x = bwd[k - 1]
            y = x - k
            while x > alo and y > blo and a[x - 1] == b[y - 1]:
                x -= 1
                y -= 1
            bwd[k] = x
            if not odd and flo <= k <= fhi and x <= fwd[k]:
                return x, y, True
    ahead, fx = -1, alo
    for k in range(fhi, flo - 1, -2):
        x = min(fwd[k], ahi)
        if x - k > bhi:
            x = bhi + k
        if 2 * x - k > ahead:
            ahead, fx = 2 * x - k, x
    behind, bx = ahi + bhi + 1, ahi
    for k in range(bhi_k, blo_k - 1, -2):
        x = max(bwd[k], alo)
        if x - k < blo:
            x = blo + k
        if 2 * x - k < behind:
            behind, bx = 2 * x - k, x
    if ahi + bhi - behind < ahead - alo - blo:
        return fx, ahead - fx, False
    return bx, behind - bx, False


def _chain(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Longest chain of (x, y) pairs increasing in both x and y, by patience sorting.

    ``pairs`` are sorted by x, and by decreasing y where x is equal.
    """
    tops: list[int] = []  # y at the top of each pile
    top_pair: list[int] = []  # index in pairs of each pile's top
    back = [-1] * len(pairs)  # the pair below each one in its chain
    for n, (_, y) in enumerate(pairs):
        if not tops or y > tops[-1]:  # a new pile: the common case, without a search
            if tops:
                back[n] = top_pair[-1]
            tops.append(y)
            top_pair.append(n)
            continue
        pile = bisect_left(tops, y)
        if pile:
            back[n] = top_pair[pile - 1]
        tops[pile], top_pair[pile] = y, n
    chain = []
    n = top_pair[-1] if top_pair else -1
    while n >= 0:
        chain.append(pairs[n])
        n = back[n]
    return chain[::-1]


def _anchors(a: list[int], b: list[int], box: Hunk) -> tuple[list[tuple[int, int]], int]:
    """Anchors to cut a box at, and a lower bound on the cost of any path through it.

    The anchors are the longest chain (see :func:`_chain`) of pairs of equal lines taken
    from, in this order of preference:

    * the lines found exactly once on each side (patience diff's anchors);
    * every pair of equal lines, when there are few (at most ``_PAIRS_PER_LINE`` per line):
      the chain is then a longest common subsequence (Hunt and Szymanski);
    * when less than half of the lines could be matched at all (say, blank lines between
      rewritten ones), each line's n-th copy on one side with its n-th on the other.

    Otherwise (lines from a small set, repeated all over) there are none, and the box is
    left to a bounded search. Every copy of a line that one side has more of must be edited,
    and so must every unique line left out of the patience chain: their count is the bound.
    """
    alo, ahi, blo, bhi = box
    count_a, count_b = Counter(a[alo:ahi]), Counter(b[blo:bhi])
    shared = count_a.keys() & count_b.keys()
    common = sum(map(min, map(count_a.__getitem__, shared), map(count_b.__getitem__, shared)))
    excess = ahi - alo + bhi - blo - 2 * common
    once = {line for line, n in count_a.items() if n == 1}
    once &= {line for line, n in count_b.items() if n == 1}
    where = {line: y for y, line in enumerate(b[blo:bhi], blo) if line in once}
    pairs = [(x, where[line]) for x, line in enumerate(a[alo:ahi], alo) if line in where]
    if pairs:
        chain = _chain(pairs)
        return chain, excess + 2 * (len(pairs) - len(chain))
    places: dict[int, list[int]] = {}
    matches = sum(
        map(operator.mul, map(count_a.__getitem__, shared), map(count_b.__getitem__, shared))
    )
    if matches <= _PAIRS_PER_LINE * (ahi - alo + bhi - blo):
        for y in range(bhi - 1, blo - 1, -1):
            places.setdefault(b[y], []).append(y)
        pairs = [(x, y) for x in range(alo, ahi) for y in places.get(a[x], ())]
    elif 4 * common >= ahi - alo + bhi - blo:
        return [], excess
    else:
        for y in range(blo, bhi):
            places.setdefault(b[y], []).append(y)
        seen: Counter[int] = Counter()
        for x in range(alo, ahi):
            line = a[x]
            if seen[line] < len(copies := places.get(line, ())):
                pairs.append((x, copies[seen[line]]))
                seen[line] += 1
    return _chain(pairs), excess


def _myers(a: list[int], b: list[int], changed_a: list[bool], changed_b: list[bool]) -> bool:
    """Mark in ``changed_a``/``changed_b`` the lines of a and b left out of the common
    subsequence: git's divide and conquer, within a search budget (see the module notes).
    Return whether every box was git's, so that the lines marked are the ones git marks.

    A box is "git's" when git would cut the files the same way up to it. Such a box is cut
    where git cuts it when the search ends within budget. Otherwise, and in every box below
    that, the box is cut at all its anchors (see :func:`_anchors`) at once; a box that is
    small, or has no anchors, is cut by a search within budget (git's rule at its cap when
    the search does not end).
    """
    size = len(a) + len(b) + 3
    cap = max(_COST_MIN, _bogosqrt(size))
    rounds = min(cap, max(_ROUNDS_MIN, _WORK // size))
    fwd, bwd = [0] * size, [0] * size
    stack = [(0, len(a), 0, len(b), True)]
    exact = True
    while stack:
        alo, ahi, blo, bhi, gits = stack.pop()
        while alo < ahi and blo < bhi and a[alo] == b[blo]:
            alo += 1
            blo += 1
        while alo < ahi and blo < bhi and a[ahi - 1] == b[bhi - 1]:
            ahi -= 1
            bhi -= 1
        # With no line in common, every line is changed, however the box would be cut.
        if alo == ahi or blo == bhi or set(a[alo:ahi]).isdisjoint(b[blo:bhi]):
            changed_a[alo:ahi] = [True] * (ahi - alo)
            changed_b[blo:bhi] = [True] * (bhi - blo)
            continue
        box = (alo, ahi, blo, bhi)
        cut = None
        if rounds < cap and ahi - alo + bhi - blo > _SMALL_BOX:
            anchors, floor = _anchors(a, b, box)
            # The search cannot end within budget when the cost is known to exceed 2 rounds.
            if gits and floor <= 2 * rounds:
                cut = _split(a, b, fwd, bwd, box, rounds)
            if not (cut and cut[2]):
                gits = exact = False
                if anchors:
                    for (x0, y0), (x1, y1) in pairwise([(alo - 1, blo - 1), *anchors, (ahi, bhi)]):
                        stack.append((x0 + 1, x1, y0 + 1, y1, False))
                    continue
        x, y, _ = cut or _split(a, b, fwd, bwd, box, rounds)
        stack.append((x, ahi, y, bhi, gits))
        stack.append((alo, x, blo, y, gits))
    return exact


class _Slider:
    """Shift groups of changed lines along runs of equal lines, as git does after a diff.

    Groups slide as far down as they can (merging with groups they bump into), unless at some
    position they sit opposite a change in the other file, in which case the lowest such
    position wins. Unchanged lines pair up between the files, so the group opposite ours is
    known by its index: the number of unchanged lines before it.
    """

    def __init__(self, lines: list[int], changed: list[bool], other: list[bool]) -> None:
        self.lines, self.changed = lines, changed
        self.kept = _unchanged(other)
        self.other_size = len(other)
        self.start = self.end = self.index = 0

    def facing(self) -> bool:
        """Whether the group of the other file opposite ours is not empty."""
        kept, index = self.kept, self.index
        first = kept[index - 1] + 1 if index else 0
        return (kept[index] if index < len(kept) else self.other_size) > first

    def up(self) -> bool:
        lines, changed = self.lines, self.changed
        if self.start == 0 or lines[self.start - 1] != lines[self.end - 1]:
            return False
        self.start -= 1
        self.end -= 1
        changed[self.start], changed[self.end] = True, False
        while self.start > 0 and changed[self.start - 1]:
            self.start -= 1
        self.index -= 1
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
        self.index += 1
        return True

    def run(self) -> None:
        lines, changed = self.lines, self.changed
        end = 0
        while True:
            start = _find(changed, True, end)
            if start == len(lines):
                return
            self.index += start - end
            end = _find(changed, False, start)
            # Most groups cannot move at all.
            if (start and lines[start - 1] == lines[end - 1]) or (
                end < len(lines) and lines[start] == lines[end]
            ):
                self.start, self.end = start, end
                self._place()
                end = self.end

    def _place(self) -> None:
        while True:
            size = self.end - self.start
            while self.up():
                pass
            aligned_end = self.end if self.facing() else -1
            while self.down():
                if self.facing():
                    aligned_end = self.end
            if self.end - self.start == size:
                break
        if aligned_end != -1:
            while self.end != aligned_end and self.up():
                pass


class Counts(list[int]):
    """How often each line, by its id, occurs in a whole file (see :class:`Whole`): a list,
    read as the search reads a Counter. A dict of a window's lines would take several times
    the window's own memory."""

    __slots__ = ()

    def get(self, line: int, default: int = 0) -> int:
        return self[line] if line < len(self) else default


class Whole:
    """The whole files around two windows ``a`` and ``b`` cut from them, as far as git's
    choice of the lines that take part in its search looks at them: each file's length in
    lines, and how often each line of one window occurs in the whole other file. With it, a
    window that holds every line the two files differ in (and the same lines either side)
    is diffed as the whole files are (``text/bigmerge.py``).

    A plain class: a NamedTuple here would cost every process that loads the diff a
    ForwardRef's compile (see ``core/records.py``)."""

    __slots__ = ("in_a", "in_b", "lines_a", "lines_b")

    def __init__(self, lines_a: int, lines_b: int, in_a: Counts, in_b: Counts):
        self.lines_a, self.lines_b = lines_a, lines_b
        self.in_a = in_a  # the lines of window b, counted in the whole of file a
        self.in_b = in_b  # the lines of window a, counted in the whole of file b


def _changes(
    a: list[int], b: list[int], whole: Whole | None
) -> tuple[list[bool], list[bool], bool]:
    """Flag the lines of a and b that are not on the common subsequence git would choose;
    and whether the search stayed git's."""
    changed_a, changed_b = [False] * len(a), [False] * len(b)
    lo = shared_start(a, b)
    ahi = len(a) - shared_end(a, b, min(len(a), len(b)) - lo)
    bhi = ahi + len(b) - len(a)
    if whole is None:
        keep_a = _search_mask(a, lo, ahi, Counter(b), len(a))
        keep_b = _search_mask(b, lo, bhi, Counter(a), len(b))
    else:
        keep_a = _search_mask(a, lo, ahi, whole.in_b, whole.lines_a)
        keep_b = _search_mask(b, lo, bhi, whole.in_a, whole.lines_b)
    changed_a[lo:ahi] = map(operator.not_, keep_a)
    changed_b[lo:bhi] = map(operator.not_, keep_b)
    # Run the search on the remaining lines only, then map its verdicts back.
    pos_a = list(compress(range(lo, ahi), keep_a))
    pos_b = list(compress(range(lo, bhi), keep_b))
    sub_a, sub_b = [False] * len(pos_a), [False] * len(pos_b)
    gits = _myers(list(map(a.__getitem__, pos_a)), list(map(b.__getitem__, pos_b)), sub_a, sub_b)
    for i in compress(pos_a, sub_a):
        changed_a[i] = True
    for j in compress(pos_b, sub_b):
        changed_b[j] = True
    return changed_a, changed_b, gits


def line_ids(*sides: list[bytes]) -> list[list[int]]:
    """Number the distinct lines of all sides, so that the diff compares small integers."""
    table = {line: n for n, line in enumerate(dict.fromkeys(chain.from_iterable(sides)))}
    return [list(map(table.__getitem__, side)) for side in sides]


def align(a: list[int], b: list[int], whole: Whole | None = None) -> tuple[list[Hunk], bool]:
    """Diff two numbered files (or two windows of them: ``whole``) the way git's default
    (Myers) diff does; and whether the alignment is git's by construction (False: past the
    search budget, some stretch was cut at anchors, where git may align it otherwise; see
    the module notes)."""
    changed_a, changed_b, gits = _changes(a, b, whole)
    _Slider(a, changed_a, changed_b).run()
    _Slider(b, changed_b, changed_a).run()
    # The unchanged lines pair up; a hunk sits between two pairs where either side skips.
    kept_a = [-1, *_unchanged(changed_a), len(a)]
    kept_b = [-1, *_unchanged(changed_b), len(b)]
    steps = map(
        operator.add, map(operator.sub, kept_a[1:], kept_a), map(operator.sub, kept_b[1:], kept_b)
    )
    hunks = [
        (kept_a[t] + 1, kept_a[t + 1], kept_b[t] + 1, kept_b[t + 1])
        for t in compress(count(), map((2).__lt__, steps))
    ]
    return hunks, gits


def diff_ids(a: list[int], b: list[int]) -> list[Hunk]:
    """Diff two numbered files the way git's default (Myers) diff does."""
    return align(a, b)[0]


def diff_lines(a: list[bytes], b: list[bytes]) -> list[Hunk]:
    """Diff two lists of lines the way git's default (Myers) diff does."""
    return diff_ids(*line_ids(a, b))


def diff_opcodes(a: list[bytes], b: list[bytes]) -> list[tuple[str, int, int, int, int]]:
    """Diff two lists of lines and return difflib-style opcodes.

    The alignment is the one the merge uses, which follows git's default (Myers) diff.
    """
    ops: list[tuple[str, int, int, int, int]] = []
    i = j = 0
    for i1, i2, j1, j2 in diff_lines(a, b):
        if i < i1:
            ops.append(("equal", i, i1, j, j1))
        tag = "replace" if i1 < i2 and j1 < j2 else "delete" if i1 < i2 else "insert"
        ops.append((tag, i1, i2, j1, j2))
        i, j = i2, j2
    if i < len(a):
        ops.append(("equal", i, len(a), j, len(b)))
    return ops


def line_stats(old: bytes, new: bytes) -> tuple[int, int]:
    """Return (lines added, lines removed) from old to new, as ``git diff --numstat`` counts
    (dense rewrites of large files aside: see the module notes).

    Binary data (see :func:`is_binary`) has no line counts and gives (0, 0).
    """
    if old == new or is_binary(old) or is_binary(new):
        return 0, 0
    hunks = diff_lines(split_lines(old), split_lines(new))
    return sum(j2 - j1 for _, _, j1, j2 in hunks), sum(i2 - i1 for i1, i2, _, _ in hunks)
