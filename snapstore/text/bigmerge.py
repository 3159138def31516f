"""Three-way merge of big files, in bounded memory, with git's answer or a conflict.

A file over 4 MiB (``core.blobs.BIG``) is never held whole, so :func:`~.merge.merge3`,
which splits its inputs into lines, cannot take one. This merge reaches the answer of
``git merge-file -p ours base theirs`` without the whole files, from what git's diff of
base and one side can change:

* Before its search, git takes off the lines the two files share at both ends (xdiff's
  ``xdl_trim_ends``). Only the lines in between, the pair's *middle*, are ever marked
  changed; afterwards a run of changed lines only slides along lines equal to its own, so
  onto lines that occur in the middle. Every hunk of diff(base, side) thus lies in the
  side's *zone*: its middle, widened by the lines next to it (at most 4,096 lines or 1 MiB
  each way) that occur in the middle; beyond that bound the zone runs to the file's end.
* Zones apart (an unchanged line between them): git's hunks of the two sides never touch,
  so git merges cleanly, and the merge is ours with theirs' middle in base's place. It is
  streamed; no line is diffed.
* Zones that touch or overlap: one window of base holding both zones, cut at the same
  lines of ours and theirs, is merged by :func:`~.merge.merge_window`, which diffs it as
  git diffs the whole files: the trimmed middle is the same, and git's choice of the lines
  that take part in its search looks only at the whole files' line counts, which one
  streaming pass over each file gives. The result is ours around the merged window. The
  three windows may hold at most :data:`WINDOW` bytes and :data:`WINDOW_LINES` lines
  (the memory budget), and a diff that left git's alignment (a dense rewrite past the
  search budget, ``text/diff.py``) counts as a conflict.

Binary files (a NUL byte in the first 8 KiB) and files over git's own limit (1023 MiB)
are conflicts, as git refuses them; so is anything else that could differ from git's
answer. :func:`~.merge.merge3`'s final-newline rule does not apply: a big merge is git's.
Nothing here opens a file or a store: each side is a :class:`Source`.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass
from typing import BinaryIO, Protocol

from .diff import is_binary, shared_end, shared_start, split_lines
from .merge import merge_window

__all__ = ["WINDOW", "WINDOW_LINES", "BigMerge", "Bytes", "Handle", "Source", "merge_big"]

#: The three windows of a line-by-line merge hold at most this many bytes and lines: the
#: merge's memory goes with the lines, about half a KiB each (docs/merge.md).
WINDOW = 6 * 1024 * 1024
WINDOW_LINES = 75_000
#: How far a zone is widened, each way, at most: beyond, it runs to the file's end.
REACH_LINES = 4096
REACH_BYTES = 1024 * 1024
#: git merge-file refuses files over this size (xdiff's MAX_XDIFF_SIZE).
GIT_LIMIT = 1023 * 1024 * 1024
PIECE = 1024 * 1024
_SNIFF = 8192


class Source(Protocol):
    """One side of a big merge: its bytes, read at any offset, never held whole."""

    @property
    def size(self) -> int: ...

    def read(self, offset: int, length: int) -> bytes:
        """``length`` bytes at ``offset`` (fewer only at the end)."""
        ...

    def chunks(self) -> Sequence[tuple[bytes, int]] | None:
        """The (digest, size) of its content-defined chunks, in order; None if it has none."""
        ...

    def pieces(self) -> Iterator[bytes]:
        """The whole, in order; a stored blob's checked against its digest on the way."""
        ...

    def verify(self) -> None:
        """Check the whole against its digest, where it has one (a stored blob)."""
        ...


class Bytes:
    """A side held in memory: a file under the big-file size, or an absent one (empty)."""

    def __init__(self, data: bytes):
        self.data = data

    @property
    def size(self) -> int:
        return len(self.data)

    def read(self, offset: int, length: int) -> bytes:
        return self.data[offset : offset + length]

    def chunks(self) -> None:
        return None

    def pieces(self) -> Iterator[bytes]:
        yield self.data

    def verify(self) -> None:
        pass


class Handle:
    """A side in an open regular file of ``size`` bytes, read by offset (``pread``)."""

    def __init__(self, handle: BinaryIO, size: int):
        self.fd, self._size = handle.fileno(), size

    @property
    def size(self) -> int:
        return self._size

    def read(self, offset: int, length: int) -> bytes:
        parts, length = [], max(0, min(length, self._size - offset))
        while length:
            part = os.pread(self.fd, length, offset)
            if not part:
                raise OSError(f"file ended {length} bytes short of its size")
            parts.append(part)
            offset, length = offset + len(part), length - len(part)
        return b"".join(parts)

    def chunks(self) -> None:
        return None

    def pieces(self) -> Iterator[bytes]:
        for offset in range(0, self._size, PIECE):
            yield self.read(offset, PIECE)

    def verify(self) -> None:
        pass


@dataclass(frozen=True)
class BigMerge:
    """Outcome of :func:`merge_big`."""

    conflicts: int
    """0: clean. A refusal (binary, too large, too far apart) counts as one conflict."""
    reason: str
    """Why it conflicts, for the report ("" when clean)."""
    written: bool
    """Whether the merge went to ``write``: when clean, or with conflict markers."""
    how: str = ""
    """``apart`` (theirs' middle spliced into ours) or ``window`` (merged line by line)."""


class _Middle:
    """What lies between the lines base and one side share at both ends: ``base[start:end]``
    against ``side[start:end + shift]`` (shift: the side's size minus base's)."""

    __slots__ = ("end", "shift", "start")

    def __init__(self, start: int, end: int, shift: int):
        self.start, self.end, self.shift = start, end, shift


def merge_big(
    base: Source,
    ours: Source,
    theirs: Source,
    write: Callable[[bytes], object],
    *,
    markers: bool,
    labels: tuple[str, str, str] = ("current", "agent", "before"),
) -> BigMerge:
    """Merge as ``git merge-file -p ours base theirs`` does, writing the result to ``write``
    in pieces: only when clean, or with ``markers`` when the conflicts lie in a window
    merged line by line (see the module notes). Sides already equal are the caller's."""
    sides = (base, ours, theirs)
    if any(is_binary(side.read(0, _SNIFF)) for side in sides):
        return BigMerge(1, "binary file changed after the agent wrote it", False)
    if any(side.size > GIT_LIMIT for side in sides):
        return BigMerge(1, "a file over 1023 MiB is never merged (git refuses it too)", False)
    mine, agents = _middle(base, ours), _middle(base, theirs)
    zone_o, zone_t = _zone(base, ours, mine), _zone(base, theirs, agents)
    if zone_t[1] < zone_o[0] or zone_o[1] < zone_t[0]:
        for side in sides:  # what is read of them must be what their digests name
            side.verify()
        at = agents.start + (mine.shift if zone_o[1] < zone_t[0] else 0)
        _copy(ours, 0, at, write)
        _copy(theirs, agents.start, agents.end + agents.shift, write)
        _copy(ours, at + agents.end - agents.start, ours.size, write)
        return BigMerge(0, "", True, "apart")
    return _merge_window(base, ours, theirs, (zone_o, zone_t), write, markers, labels)


def _merge_window(
    base: Source,
    ours: Source,
    theirs: Source,
    zones: tuple[tuple[int, int], tuple[int, int]],
    write: Callable[[bytes], object],
    markers: bool,
    labels: tuple[str, str, str],
) -> BigMerge:
    """Merge line by line the window of base that holds both zones (and a line more each
    way), cut at the same lines of ours and theirs; ours around it."""
    sides = (base, ours, theirs)
    start = _line_start(base, max(0, min(z[0] for z in zones) - 1))
    end = _next_line(base, max(z[1] for z in zones))
    shifts = (0, ours.size - base.size, theirs.size - base.size)
    total = sum(end - start + shift for shift in shifts)
    windows = []
    if total <= WINDOW:
        windows = [
            side.read(start, end - start + shift) for side, shift in zip(sides, shifts, strict=True)
        ]
    if total > WINDOW or sum(w.count(b"\n") for w in windows) > WINDOW_LINES:
        return BigMerge(
            1,
            f"your edits and the agent's in this big file are interleaved over "
            f"{_mib(end - start)}, more than a big file merges line by line "
            f"({_mib(WINDOW)} or {WINDOW_LINES:,} lines for its three versions); "
            "left as it is",
            False,
        )
    b, o, t = (split_lines(window) for window in windows)
    del windows
    lines_b, in_b = _count(base, {*o, *t})
    lines_o, in_o = _count(ours, set(b))
    lines_t, in_t = _count(theirs, set(b))
    wholes = ((lines_b, lines_o, lines_t), (in_b, in_o, in_t))
    merged, conflicts, gits = merge_window(b, o, t, wholes, labels=labels)
    if not gits:
        return BigMerge(
            1,
            "your edits and the agent's meet in a rewrite too dense for the line diff to "
            "align as git does; left as it is",
            False,
        )
    reason = (
        f"{conflicts} conflicting region(s) between your edits and the agent's" if conflicts else ""
    )
    if conflicts and not markers:
        return BigMerge(conflicts, reason, False, "window")
    _copy(ours, 0, start, write)
    write(b"".join(merged))
    _copy(ours, end + shifts[1], ours.size, write)
    return BigMerge(conflicts, reason, True, "window")


def _mib(n: int) -> str:
    return f"{n / (1024 * 1024):.1f} MiB"


def _copy(source: Source, start: int, end: int, write: Callable[[bytes], object]) -> None:
    for offset in range(start, end, PIECE):
        write(source.read(offset, min(PIECE, end - offset)))


# -- where two files differ ------------------------------------------------------------


def _middle(base: Source, side: Source) -> _Middle:
    """The pair's middle: what git's diff has left once it took off the whole lines the two
    share at the start, then at the end (never the same line twice)."""
    start = _line_start(base, _common_prefix(base, side))
    shift = side.size - base.size
    low = max(base.size - _common_suffix(base, side), start, start - shift)

    def begins_line(source: Source, at: int) -> bool:
        return at == 0 or source.read(at - 1, 1) == b"\n"

    if begins_line(base, low) and begins_line(side, low + shift):
        return _Middle(start, low, shift)
    return _Middle(start, _next_line(base, low), shift)


def _common_prefix(a: Source, b: Source) -> int:
    """How many bytes ``a`` and ``b`` share at the start. Chunks with the same digest are
    skipped unread; ``b``'s bytes are hashed against ``a``'s chunks before ``a`` is read."""
    limit = min(a.size, b.size)
    blocks = _blocks(a)
    n = _same_chunks(blocks, b.chunks(), limit)
    pos = sum(size for _, size in blocks[:n])
    for key, size in blocks[n:]:
        if pos >= limit:
            break
        width = min(size, limit - pos)
        here = _differ(a, b, pos, width, key if width == size else None, 0)
        if here is not None:
            return pos + shared_start(*here)
        pos += width
    return limit


def _common_suffix(a: Source, b: Source) -> int:
    """How many bytes ``a`` and ``b`` share at the end (as :func:`_common_prefix`)."""
    limit, shift = min(a.size, b.size), b.size - a.size
    blocks = _blocks(a)[::-1]
    n = _same_chunks(blocks, (b.chunks() or [])[::-1], limit)
    done = sum(size for _, size in blocks[:n])
    for key, size in blocks[n:]:
        if done >= limit:
            break
        width = min(size, limit - done)
        start = a.size - done - width
        there = _differ(a, b, start, width, key if width == size else None, shift)
        if there is not None:
            return done + shared_end(*there, min(map(len, there)))
        done += width
    return limit


def _same_chunks(
    blocks: Sequence[tuple[bytes | None, int]],
    chunks: Sequence[tuple[bytes, int]] | None,
    limit: int,
) -> int:
    """How many blocks, from the first, are the same chunks in the same places (within
    ``limit`` bytes), so that neither needs reading."""
    n = done = 0
    for (key, size), (other, _) in zip(blocks, chunks or (), strict=False):
        if key != other or done + size > limit:
            break
        n, done = n + 1, done + size
    return n


def _differ(
    a: Source, b: Source, start: int, width: int, key: bytes | None, shift: int
) -> tuple[bytes, bytes] | None:
    """``a[start:start + width]`` and the bytes of ``b`` at ``shift`` from there, when they
    differ; None when they are the same (seen from ``key``, the digest of ``a``'s bytes,
    when given, without reading ``a``)."""
    from ..core.blobs import digest  # the one BLAKE3 of the project (its record layer)

    there = b.read(start + shift, width)
    if key is not None and len(there) == width and digest(there) == key:
        return None
    here = a.read(start, width)
    return None if here == there else (here, there)


def _blocks(source: Source) -> list[tuple[bytes | None, int]]:
    """The source cut in blocks: its chunks (digest, size), else pieces of :data:`PIECE`
    bytes (no digest)."""
    chunks = source.chunks()
    if chunks is not None:
        return list(chunks)
    return [(None, min(PIECE, source.size - pos)) for pos in range(0, source.size, PIECE)]


def _line_start(source: Source, at: int) -> int:
    """The start of the line that holds the byte before ``at`` (``at`` itself when that byte
    ends a line): the largest line start at most ``at``."""
    end = at
    while end > 0:
        begin = max(0, end - PIECE)
        found = source.read(begin, end - begin).rfind(b"\n")
        if found >= 0:
            return begin + found + 1
        end = begin
    return 0


def _next_line(source: Source, at: int) -> int:
    """The first line start after ``at`` (the file's size when there is none)."""
    pos = at
    while pos < source.size:
        found = source.read(pos, PIECE).find(b"\n")
        if found >= 0:
            return pos + found + 1
        pos += PIECE
    return source.size


# -- how far git's hunks can reach -----------------------------------------------------


def _zone(base: Source, side: Source, middle: _Middle) -> tuple[int, int]:
    """Where in base diff(base, side) can have hunks: the middle, widened by the lines next
    to it that occur in the middle (of either file), onto which a run of changed lines
    could slide; to the file's end when that runs past :data:`REACH_LINES` lines or
    :data:`REACH_BYTES` bytes."""
    up, up_all = _lines_before(base, middle.start)
    down, down_all = _lines_after(base, middle.end)
    wanted = {*up, *down}
    found: set[bytes] = set()
    if wanted:
        found = {*_count(base, wanted, middle.start, middle.end)[1]}
        found |= {*_count(side, wanted, middle.start, middle.end + middle.shift)[1]}
    start, end = middle.start, middle.end
    for lines, full, step in ((up, up_all, -1), (down, down_all, 1)):
        reach = next((n for n, line in enumerate(lines) if line not in found), None)
        if reach is None and not full:
            start, end = (0, end) if step < 0 else (start, base.size)
            continue
        width = sum(map(len, lines[: len(lines) if reach is None else reach]))
        start, end = (start - width, end) if step < 0 else (start, end + width)
    return start, end


def _lines_before(source: Source, at: int) -> tuple[list[bytes], bool]:
    """The lines that end at line start ``at``, nearest first, within the reach; and whether
    they run to the file's start."""
    begin = max(0, at - REACH_BYTES)
    lines = split_lines(source.read(begin, at - begin))
    if begin > 0:
        lines = lines[1:]  # cut short
    lines.reverse()
    return lines[:REACH_LINES], begin == 0 and len(lines) <= REACH_LINES


def _lines_after(source: Source, at: int) -> tuple[list[bytes], bool]:
    """The lines from line start ``at`` on, within the reach; and whether they run to the
    file's end."""
    data = source.read(at, REACH_BYTES)
    lines = split_lines(data)
    whole = at + len(data) == source.size
    if lines and not whole and not lines[-1].endswith(b"\n"):
        lines.pop()  # cut short
    return lines[:REACH_LINES], whole and len(lines) <= REACH_LINES


def _count(
    source: Source, wanted: Collection[bytes], start: int = 0, end: int | None = None
) -> tuple[int, Counter[bytes]]:
    """The lines of ``source[start:end]`` (from a line start; the whole by default, read by
    :meth:`Source.pieces`): how many, and how often each of ``wanted`` occurs. Lines longer
    than any wanted one are skipped as they stream, so memory stays bounded."""
    ended = {line[:-1] for line in wanted if line.endswith(b"\n")}
    open_ended = {line for line in wanted if not line.endswith(b"\n")}
    longest = max(map(len, wanted), default=0)
    if end is None or (start == 0 and end == source.size):
        pieces: Iterator[bytes] = source.pieces()
    else:
        pieces = (source.read(pos, min(PIECE, end - pos)) for pos in range(start, end, PIECE))
    found: Counter[bytes] = Counter()
    total, carry, skipping = 0, b"", False
    # a chunk (up to 4 MiB) is split a piece at a time: the list of its lines is the peak
    pieces = (chunk[at : at + PIECE] for chunk in pieces for at in range(0, len(chunk), PIECE))
    for piece in pieces:
        total += piece.count(b"\n")
        if skipping:
            cut = piece.find(b"\n")
            if cut < 0:
                continue
            piece, skipping = piece[cut + 1 :], False
        parts = (carry + piece).split(b"\n")
        carry = parts.pop()
        found.update(filter(ended.__contains__, parts))
        if len(carry) > longest:
            carry, skipping = b"", True
    counts: Counter[bytes] = Counter(
        {line: found[line[:-1]] for line in wanted if line.endswith(b"\n") and found[line[:-1]]}
    )
    end = source.size if end is None else end
    if end > start and source.read(end - 1, 1) != b"\n":
        total += 1
        if not skipping and carry in open_ended:
            counts[carry] += 1
    return total, counts
