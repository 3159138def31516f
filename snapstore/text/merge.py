"""Three-way merge (diff3) for rewinding agent edits.

When a user edits a file after an agent's turn and then rewinds that turn, snapstore takes out
only the agent's change: a three-way merge with the agent's version as base, the file as it is
now as "ours", and the file as it was before the turn as "theirs". docs/merge.md has the rules.

merge3 is GPL, so this is our own, written from the diff3 merge of Khanna, Kunal and Pierce,
"A Formal Investigation of Diff3" (2007), on the diff engine of :mod:`snapstore.text.diff`.
Merges follow ``git merge-file``'s defaults, as the tests check against git, but for the diff
engine's cost budget (see there) and one point on purpose:

* **The final newline.** Where git conflicts and an input lacks its final newline, the
  lines are merged again with it restored, and the final newline on its own (see
  :func:`merge3`): appending a line to a file without one is then no conflict.

Only the standard library is used.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from itertools import chain

from .diff import Counts, Hunk, Whole, align, is_binary, line_ids, split_lines

__all__ = ["MergeResult", "merge3", "merge_window"]


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


_SIDES = ("ours", "theirs")


@dataclass(frozen=True)
class _Region:
    """A stretch of base that one or both sides changed, and what each side has there."""

    base: tuple[int, int]
    ours: tuple[int, int]
    theirs: tuple[int, int]
    sides: frozenset[str]


def _regions(ours: list[Hunk], theirs: list[Hunk]) -> list[_Region]:
    """Group the changes of both sides; changes that overlap or merely touch share a region."""
    changes = sorted([(*h, 0) for h in ours] + [(*h, 1) for h in theirs])
    regions = []
    shift = [0, 0]  # side line number minus base line number so far, for ours and theirs
    n = 0
    while n < len(changes):
        start = end = changes[n][0]
        before = shift.copy()
        sides = set()
        while n < len(changes) and changes[n][0] <= end:
            i1, i2, j1, j2, side = changes[n]
            end = max(end, i2)
            shift[side] += (j2 - j1) - (i2 - i1)
            sides.add(_SIDES[side])
            n += 1
        regions.append(
            _Region(
                (start, end),
                (start + before[0], end + shift[0]),
                (start + before[1], end + shift[1]),
                frozenset(sides),
            )
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
    sections: tuple[tuple[bytes, str, list[bytes]], ...] = (
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


def _line_ending(*texts: bytes) -> bytes:
    """The ending a merge gives a last line that lacks one: CRLF when the last complete line
    of every input that has one ends with CRLF, else LF."""
    crlf = [text[: text.rfind(b"\n") + 1].endswith(b"\r\n") for text in texts if b"\n" in text]
    return b"\r\n" if crlf and all(crlf) else b"\n"


def _final_newline(base: bytes, ours: bytes, theirs: bytes) -> bool | None:
    """Whether a merge of the three ends with a newline, merged on its own: as ours ends if
    ours changed that from base, else as theirs ends. An empty side has no last line, so it
    leaves that as base has it. None when ours and theirs changed it differently, which only
    an empty base allows."""
    base_end = base.endswith(b"\n") if base else None
    ours_end = ours.endswith(b"\n") if ours else base_end
    theirs_end = theirs.endswith(b"\n") if theirs else base_end
    if base_end not in (ours_end, theirs_end) and ours_end != theirs_end:
        return None
    return ours_end if ours_end != base_end else theirs_end


#: What :func:`merge_window` knows of the whole files: each one's length in lines (base,
#: ours, theirs), and how often lines of the windows occur in each whole file: those of the
#: ours and theirs windows in base, those of the base window in ours, and in theirs.
Wholes = tuple[
    tuple[int, int, int], tuple[Mapping[bytes, int], Mapping[bytes, int], Mapping[bytes, int]]
]


def _merge_lines(
    b: list[bytes],
    o: list[bytes],
    t: list[bytes],
    labels: tuple[str, str, str],
    wholes: Wholes | None = None,
) -> tuple[list[bytes], int, bool]:
    """diff3 of lists of lines: the merged lines, the number of conflicts, and whether both
    diffs are git's by construction (see :func:`~snapstore.text.diff.align`)."""
    ib, io, it = line_ids(b, o, t)
    whole_o = whole_t = None
    if wholes is not None:
        (size_b, size_o, size_t), (in_b, in_o, in_t) = wholes
        ids = 1 + max(chain(ib, io, it), default=-1)

        def counts(numbers: list[int], lines: list[bytes], found: Mapping[bytes, int]) -> Counts:
            out = Counts([0] * ids)
            for n, line in zip(numbers, lines, strict=True):
                out[n] = found.get(line, 0)
            return out

        base_in_b = (counts(io, o, in_b), counts(it, t, in_b))
        whole_o = Whole(size_b, size_o, base_in_b[0], counts(ib, b, in_o))
        whole_t = Whole(size_b, size_t, base_in_b[1], counts(ib, b, in_t))
    (hunks_o, gits_o), (hunks_t, gits_t) = align(ib, io, whole_o), align(ib, it, whole_t)
    out: list[bytes] = []
    conflicts = 0
    pos = 0
    for region in _regions(hunks_o, hunks_t):
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
    return out, conflicts, gits_o and gits_t


def merge_window(
    base: list[bytes],
    ours: list[bytes],
    theirs: list[bytes],
    wholes: Wholes,
    *,
    labels: tuple[str, str, str] = ("current", "agent", "before"),
) -> tuple[list[bytes], int, bool]:
    """git's merge of three windows cut at the same lines from whole files that agree
    outside them, diffed as the whole files are (``wholes``: see :data:`Wholes`): the merged
    lines (conflict markers included), the number of conflicts, and whether both diffs are
    git's by construction. The final newline is git's too: nothing is merged apart."""
    return _merge_lines(base, ours, theirs, labels, wholes)


def merge3(
    base: bytes,
    ours: bytes,
    theirs: bytes,
    *,
    labels: tuple[str, str, str] = ("current", "agent", "before"),
) -> MergeResult:
    """Three-way merge of byte strings, line based.

    The result is ``git merge-file -p ours base theirs``'s, except where git conflicts and an
    input (not empty) lacks its final newline: the final newline is then merged apart. Each
    file that lacks one gets one (CRLF in CRLF files) and the lines are merged again; if that
    is clean, it is the result, ending as :func:`_final_newline` says: as ours ends if ours
    changed that from base, else as theirs ends. So a final newline that one side added or
    removed is never a conflict. Conflicts are written diff3 style::

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
    texts = (base, ours, theirs)
    out, conflicts, _ = _merge_lines(
        split_lines(base), split_lines(ours), split_lines(theirs), labels
    )
    if conflicts and any(text and not text.endswith(b"\n") for text in texts):
        final = _final_newline(*texts)
        if final is not None:
            eol = _line_ending(*texts)
            b, o, t = (
                split_lines(text if not text or text.endswith(b"\n") else text + eol)
                for text in texts
            )
            apart, still, _ = _merge_lines(b, o, t, labels)
            if not still:
                if apart and not final:
                    apart[-1] = apart[-1][: -len(eol) if apart[-1].endswith(eol) else -1]
                return MergeResult(b"".join(apart), 0)
    return MergeResult(b"".join(out), conflicts)
