"""Big text files merge in bounded memory, with ``git merge-file``'s answer or a conflict.

* The merge against git, as a black box, on generated cases with the big-file size shrunk
  to 2 KiB and chunks of 64 bytes to 1 KiB (as test_state_machine.py shrinks them), so that
  files of a few KiB are stored and read in chunks: whenever the big merge is clean, git is
  clean with the same bytes. Where the zones of the two sides meet, the window merged line
  by line holds the whole of such small files, so there the verdicts agree both ways; with
  the window shrunk as well, the merge refuses instead, and never disagrees.
* Rewinds of big files at the real size (over 4 MiB): the user's edit far from the agent's
  (merged, byte for byte git's), both in one region (a conflict, the file left alone, undo
  works), markers, two merges in a row, CRLF and a missing final newline; and SIGKILL at
  every step of such a rewind.
"""

from __future__ import annotations

import random
import subprocess
import sys
import textwrap
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from snapstore import Store
from snapstore.core import blobs, chunked
from snapstore.core.chunked import Stored, store_big
from snapstore.core.records import Big, fingerprint
from snapstore.core.repo import Repo
from snapstore.text import bigmerge
from snapstore.text.bigmerge import BigMerge, Bytes, Handle, Source, merge_big
from snapstore.text.diff import Whole, align, line_ids
from snapstore.text.merge import merge3

from ..support import agent_turn, read, write
from .test_merge_git import LABELS, Case, git_env, git_merge_files
from .test_merge_large import git_merge_file

__all__ = ["git_env"]  # a fixture, used by name

SEED = 20260301
CASES = 400
SLOW_CASES = 5000
VARIANTS = ("lf", "crlf", "no-final-newline", "mixed")
MIB = 1024 * 1024


@pytest.fixture
def shrunk(monkeypatch: pytest.MonkeyPatch) -> None:
    """Files over 2 KiB are big, cut in chunks of 64 bytes to 1 KiB."""
    monkeypatch.setattr(blobs, "BIG", 2048)
    monkeypatch.setattr(chunked, "AVERAGE", 256)
    monkeypatch.setattr(chunked, "SMALLEST", 64)
    monkeypatch.setattr(chunked, "LARGEST", 1024)


# -- generated cases against git --------------------------------------------------------


def _runs(rng: random.Random, lines: list[str], alphabet: list[str], lo: int, hi: int) -> list[str]:
    """Up to three runs of insertions, deletions and replacements between lines lo and hi."""
    out = list(lines)
    for _ in range(rng.randint(1, 3)):
        hi = min(hi, len(out))
        pos = rng.randint(min(lo, hi), hi)
        new = [rng.choice(alphabet) for _ in range(rng.randint(1, 4))]
        width = rng.randint(1, 4)
        kind = rng.choice(("insert", "delete", "replace"))
        if kind == "insert":
            out[pos:pos] = new
        elif kind == "delete":
            del out[pos : pos + width]
        else:
            out[pos : pos + width] = new
    return out


def make_case(rng: random.Random, index: int) -> Case:
    """Base: 60 to 600 lines, from a few letters (repeats make alignments ambiguous), code-like
    (frequent lines among rare ones) or all distinct; each side edits it in a few runs, half
    the time in halves of its own (so that they lie apart), else anywhere."""
    variant = VARIANTS[index % len(VARIANTS)]
    eol = "\r\n" if variant == "crlf" else "\n"
    kind = rng.choice(("letters", "code", "distinct"))
    if kind == "letters":
        alphabet = [c + eol for c in rng.choice(("ab", "abcd", "abcdefgh"))]
    elif kind == "code":
        alphabet = ["\n", "}\n", "    return x;\n"] + [
            f"    v{n} = f({n});{eol}" for n in range(40)
        ]
    else:
        alphabet = [f"new line {n}{eol}" for n in range(20)]
    if variant == "mixed":
        alphabet += ["x\r\n", "\n"]
    count = rng.randint(60, 600)
    base = (
        [f"row {n}, value {rng.randrange(999)}{eol}" for n in range(count)]
        if kind == "distinct"
        else [rng.choice(alphabet) for _ in range(count)]
    )
    half = len(base) // 2
    split = rng.random() < 0.5
    ours = _runs(rng, base, alphabet, half if split else 0, len(base))
    theirs = _runs(rng, base, alphabet, 0, half if split else len(base))
    texts = ["".join(side).encode() for side in (base, ours, theirs)]
    if variant in ("no-final-newline", "mixed"):
        texts = [text[:-1] if text and rng.random() < 0.5 else text for text in texts]
    return Case(index, variant, *texts)


def make_cases(count: int) -> list[Case]:
    rng = random.Random(SEED)
    cases = [make_case(rng, n) for n in range(count)]
    return [c for c in cases if len({c.base, c.ours, c.theirs}) == 3]


@contextmanager
def sides(repo: Repo, case: Case) -> Iterator[tuple[Source, Source, Source]]:
    """The case as a rewind's merge reads it: base and theirs from the store (in chunks when
    big), ours from its file in the workspace."""
    rels = [f"c{case.index}/{name}" for name in ("base", "ours", "theirs")]
    for rel, data in zip(rels, (case.base, case.ours, case.theirs), strict=True):
        write(Path(repo.root), rel, data)
    with repo.lock() as w:
        entries = [repo.ws.read(rel) for rel in rels]
        for rel, entry in zip(rels, entries, strict=True):
            assert entry is not None and entry.stat is not None
            if isinstance(entry.data, Big):
                store_big(w, repo.ws, rel, entry.data, fingerprint(entry.stat))
    with repo.read() as v, open(repo.ws.abspath(rels[1]), "rb") as handle:

        def stored(data: bytes) -> Source:
            return Stored(v, blobs.digest(data)) if len(data) > blobs.BIG else Bytes(data)

        yield stored(case.base), Handle(handle, len(case.ours)), stored(case.theirs)


def big_merge(repo: Repo, case: Case, markers: bool = False) -> tuple[BigMerge, bytes]:
    out: list[bytes] = []
    with sides(repo, case) as (base, ours, theirs):
        result = merge_big(base, ours, theirs, out.append, markers=markers, labels=LABELS)
    return result, b"".join(out)


def _compare(
    repo: Repo, cases: list[Case], tmp: Path, env: dict[str, str], both_ways: bool
) -> Counter[str]:
    """Run every case both ways; fail on a disagreement; the tally."""
    tally: Counter[str] = Counter()
    answers = git_merge_files(cases, tmp, env)
    for case, (status, git_out) in zip(cases, answers, strict=True):
        assert 0 <= status < 128, case
        result, out = big_merge(repo, case)
        tally["cases"] += 1
        tally["git clean"] += status == 0
        if result.conflicts == 0:
            assert status == 0, f"we merge, git conflicts: {case}"
            assert out == git_out, f"clean, bytes differ: {case}\n{out!r}\n{git_out!r}"
            tally[f"merged, {result.how}"] += 1
        else:
            assert not result.written and out == b""
            assert status != 0 or not both_ways, f"we conflict, git merges: {case}"
            tally["conflict, git clean" if status == 0 else "conflict, git too"] += 1
    return tally


def test_big_merges_agree_with_git_merge_file(
    shrunk: None,
    store: Store,
    tmp_path: Path,
    git_env: dict[str, str],
    record_property: pytest.RecordProperty,
    slow: bool,
) -> None:
    """Files of a few KiB over the (shrunk) big-file size: same verdict as git, same bytes."""
    cases = make_cases(SLOW_CASES if slow else CASES)
    tally = _compare(store.repo, cases, tmp_path, git_env, both_ways=True)
    report = f"big merge vs git merge-file: {dict(tally)}"
    print("\n" + report)
    record_property("big_merge_agreement", report)
    # both ways of merging are taken often, and most of git's clean merges are ours too
    assert tally["merged, apart"] > len(cases) // 10
    assert tally["merged, window"] > len(cases) // 10


def test_with_a_small_window_the_big_merge_refuses_rather_than_differs(
    shrunk: None,
    store: Store,
    tmp_path: Path,
    git_env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where the zones meet over more than the window, or a zone's reach is cut short, the
    merge is a conflict; where it merges, it is still git's merge, byte for byte."""
    monkeypatch.setattr(bigmerge, "WINDOW", 3000)
    monkeypatch.setattr(bigmerge, "REACH_LINES", 6)
    monkeypatch.setattr(bigmerge, "PIECE", 97)  # reads cut across lines and chunks
    tally = _compare(store.repo, make_cases(250), tmp_path, git_env, both_ways=False)
    assert tally["conflict, git clean"] > 20  # it refused
    assert tally["merged, apart"] > 20 and tally["merged, window"] > 20


def rewrite_pair(rng: random.Random) -> tuple[list[bytes], list[bytes]]:
    """A file of frequent lines among rare ones, and a rewrite of one stretch of it."""
    frequent = [b"\n", b"}\n", b"    pass\n", b"x\n"][: rng.randint(1, 4)]
    share = rng.choice((0.2, 0.5, 0.8))

    def lines(count: int) -> list[bytes]:
        return [
            rng.choice(frequent) if rng.random() < share else b"u%d\n" % rng.randint(0, 300)
            for _ in range(count)
        ]

    a = lines(rng.randint(300, 3000))
    b, at = list(a), rng.randrange(len(a))
    for _ in range(rng.randint(1, 8)):
        pos = min(len(b), max(0, at + rng.randint(-40, 40)))
        b[pos : pos + rng.randint(0, 12)] = lines(rng.randint(0, 12))
    return a, b


def window_around_the_middle(a: list[bytes], b: list[bytes]) -> tuple[int, int]:
    """Lines lo:hi of ``a``: the middle of the pair, the lines next to it that occur in it,
    and one more line each way."""
    top = 0
    while top < min(len(a), len(b)) and a[top] == b[top]:
        top += 1
    tail = 0
    while tail < min(len(a), len(b)) - top and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    middle = {*a[top : len(a) - tail], *b[top : len(b) - tail]}
    lo, hi = top, len(a) - tail
    while lo > 0 and a[lo - 1] in middle:
        lo -= 1
    while hi < len(a) and a[hi] in middle:
        hi += 1
    return max(0, lo - 1), min(len(a), hi + 1)


def test_a_window_around_the_middle_is_diffed_as_the_whole_files() -> None:
    """What the line-by-line merge of a big file rests on: a window of two files that holds
    their middle and the lines a changed run could slide onto gets the whole files' hunks,
    given the whole files' line counts (diff.Whole). Frequent lines among rewritten ones are
    where git's choice of the lines it searches looks at those counts: with the window's
    own counts, about a quarter of these pairs would be diffed otherwise."""
    rng = random.Random(SEED + 1)
    for _ in range(150):
        a, b = rewrite_pair(rng)
        ia, ib = line_ids(a, b)
        lo, hi = window_around_the_middle(a, b)
        whole = Whole(len(a), len(b), Counter(ia), Counter(ib))
        hunks, _ = align(ia[lo:hi], ib[lo : hi + len(b) - len(a)], whole)
        shifted = [(i1 + lo, i2 + lo, j1 + lo, j2 + lo) for i1, i2, j1, j2 in hunks]
        assert shifted == align(ia, ib)[0]


_LINES = st.sampled_from(
    [b"a\n", b"b\n", b"c\n", b"\n", b"}\n", b"x\r\n", b"long line " * 9 + b"\n"]
)


@st.composite
def edited(draw: st.DrawFn, base: list[bytes]) -> list[bytes]:
    out = list(base)
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(out)))
        width = draw(st.integers(0, 5))
        out[at : at + width] = draw(st.lists(_LINES, max_size=5))
    return out


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.data())
def test_prop_a_big_merge_is_gits_or_a_conflict(
    shrunk: None, store: Store, tmp_path: Path, git_env: dict[str, str], data: st.DataObject
) -> None:
    base = data.draw(st.lists(_LINES, min_size=150, max_size=700))
    ours, theirs = data.draw(edited(base)), data.draw(edited(base))
    texts = [b"".join(side) for side in (base, ours, theirs)]
    if data.draw(st.booleans()):  # a missing final newline somewhere
        which = data.draw(st.integers(0, 2))
        texts[which] = texts[which].rstrip(b"\n")
    index = len(list(Path(store.root).iterdir()))  # a folder of its own per example
    case = Case(index, "hypothesis", *texts)
    if len(set(texts)) < 3:
        return
    result, out = big_merge(store.repo, case)
    status, git_out = git_merge_file(tmp_path, case.base, case.ours, case.theirs)
    if result.conflicts == 0:
        assert status == 0 and out == git_out
    else:
        assert status != 0  # files this small always fit in the window


def test_a_window_of_too_many_lines_is_refused(
    shrunk: None, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The window is bounded in lines as well as bytes: the merge's memory goes with them."""
    base = [b"%d\n" % n for n in range(2000)]
    ours, theirs = list(base), list(base)
    ours[1000], theirs[1001] = b"mine\n", b"the agent's\n"  # adjacent: they meet
    case = Case(2, "lf", *(b"".join(side) for side in (base, ours, theirs)))
    assert big_merge(store.repo, case)[0].how == "window"
    monkeypatch.setattr(bigmerge, "WINDOW_LINES", 10)
    result, out = big_merge(store.repo, Case(3, "lf", case.base, case.ours, case.theirs))
    assert (result.conflicts, result.written, out) == (1, False, b"")
    assert "10 lines" in result.reason


def test_markers_in_a_big_window_are_merge3s(shrunk: None, store: Store) -> None:
    """Both sides changed one line differently: the big merge writes merge3's conflict,
    around it the file as it is, in bounded memory."""
    rng = random.Random(5)
    base = [f"line {n} {rng.randrange(99)}\n".encode() for n in range(400)]
    ours, theirs = list(base), list(base)
    ours[200], theirs[200] = b"mine\n", b"the agent's\n"
    case = Case(1, "lf", *(b"".join(side) for side in (base, ours, theirs)))
    result, out = big_merge(store.repo, case, markers=True)
    expected = merge3(case.base, case.ours, case.theirs, labels=LABELS)
    assert (result.conflicts, result.written, result.how) == (1, True, "window")
    assert out == expected.content and expected.conflicts == 1


# -- rewinds of big files at the real size -----------------------------------------------


def dump(rows: int, seed: int, eol: bytes = b"\n") -> list[bytes]:
    """The lines of an SQL dump (about 45 bytes a row)."""
    rng = random.Random(seed)
    return [
        b"INSERT INTO t VALUES (%d, 'name %d', %d);%s" % (n, rng.randrange(10**6), n % 97, eol)
        for n in range(rows)
    ]


ROWS = 130_000  # 5.8 MiB: over the big-file size


def _replace(lines: list[bytes], at: int, text: bytes) -> bytes:
    out = list(lines)
    out[at] = text + (b"\r\n" if out[at].endswith(b"\r\n") else b"\n")
    return b"".join(out)


@pytest.mark.parametrize("variant", ["lf", "crlf", "no-final-newline"])
def test_rewind_merges_a_big_text_file_the_user_edited_far_from_the_agent(
    store: Store, root: Path, tmp_path: Path, variant: str
) -> None:
    lines = dump(ROWS, 1, b"\r\n" if variant == "crlf" else b"\n")
    before = b"".join(lines)
    if variant == "no-final-newline":
        before = before[:-1]
        lines[-1] = lines[-1][:-1]
    assert len(before) > blobs.BIG
    write(root, "dump.sql", before)
    agent = _replace(lines, 10, b"-- the agent's line 10")
    agent_turn(store, "edit line 10", {"dump.sql": agent})
    mine = agent.splitlines(keepends=True)
    mine[-3] = b"-- my own line" + mine[-3][-1:]
    current = b"".join(mine)
    write(root, "dump.sql", current)
    result = store.rewind(1)
    assert result.ok and result.merged == ["dump.sql"]
    status, expected = git_merge_file(tmp_path, agent, current, before)
    assert status == 0 and read(root, "dump.sql") == expected
    assert b"-- my own line" in expected and b"the agent's" not in expected
    with store.repo.read() as v:  # the merge is stored in chunks, as a big file is
        assert v.chunks(blobs.digest(expected)) is not None
    assert store.undo().ok
    assert read(root, "dump.sql") == current
    assert store.fsck().ok


def test_edits_in_one_region_of_a_big_file_conflict_and_leave_it(store: Store, root: Path) -> None:
    lines = dump(ROWS, 2)
    before = b"".join(lines)
    write(root, "dump.sql", before)
    agent = _replace(lines, 70_000, b"-- the agent's")
    agent_turn(store, "edit", {"dump.sql": agent})
    current = _replace(agent.splitlines(keepends=True), 70_000, b"-- mine")
    write(root, "dump.sql", current)
    result = store.rewind(1)
    assert [c["path"] for c in result.conflicts] == ["dump.sql"] and not result.merged
    assert "1 conflicting region" in result.conflicts[0]["reason"]
    assert read(root, "dump.sql") == current
    assert store.undo().ok  # takes back the rewind (the head), the file stays
    assert read(root, "dump.sql") == current
    assert [p.n for p in store.rewind_points()] == [1] and store.fsck().ok


def test_markers_in_a_big_file_and_undo(store: Store, root: Path) -> None:
    lines = dump(ROWS, 3)
    before = b"".join(lines)
    write(root, "dump.sql", before)
    agent = _replace(lines, 500, b"-- the agent's")
    agent_turn(store, "edit", {"dump.sql": agent})
    current = _replace(agent.splitlines(keepends=True), 501, b"-- mine, next to it")
    write(root, "dump.sql", current)
    result = store.rewind(1, on_conflict="markers")
    assert result.marked == ["dump.sql"]
    expected = merge3(agent, current, before)
    assert expected.conflicts == 1 and read(root, "dump.sql") == expected.content
    assert store.undo().ok
    assert read(root, "dump.sql") == current


def test_far_interleaved_edits_are_a_conflict_without_markers(
    store: Store, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent edited above and below the user's edit, further apart than the window: no
    guess, no markers; the reason says why."""
    monkeypatch.setattr(bigmerge, "WINDOW", 1 * MIB)
    lines = dump(ROWS, 4)
    before = b"".join(lines)
    write(root, "dump.sql", before)
    agent = lines.copy()
    agent[100], agent[-100] = b"-- top\n", b"-- bottom\n"
    agent_turn(store, "edit", {"dump.sql": b"".join(agent)})
    current = _replace(agent, 60_000, b"-- mine")
    write(root, "dump.sql", current)
    result = store.rewind(1, on_conflict="markers")
    assert [c["path"] for c in result.conflicts] == ["dump.sql"] and not result.marked
    assert "interleaved" in result.conflicts[0]["reason"]
    assert read(root, "dump.sql") == current


def test_two_turns_on_a_big_file_merge_one_after_the_other(
    store: Store, root: Path, tmp_path: Path
) -> None:
    """Rewinding two turns takes each out in turn: the first merge's result (in its spool)
    is the second's current version. The reference is git merge-file twice."""
    lines = dump(ROWS, 5)
    before = b"".join(lines)
    write(root, "dump.sql", before)
    first = _replace(lines, 10, b"-- first turn")
    agent_turn(store, "one", {"dump.sql": first})
    second = _replace(first.splitlines(keepends=True), 40_000, b"-- second turn")
    agent_turn(store, "two", {"dump.sql": second})
    current = _replace(second.splitlines(keepends=True), ROWS - 2, b"-- mine")
    write(root, "dump.sql", current)
    result = store.rewind(2)
    assert result.ok and result.merged == ["dump.sql"]
    status, step = git_merge_file(tmp_path, second, current, first)
    assert status == 0
    status, expected = git_merge_file(tmp_path, first, step, before)
    assert status == 0 and read(root, "dump.sql") == expected
    assert store.undo().ok and read(root, "dump.sql") == current


_KILLED_REWIND = textwrap.dedent(
    """
    import os, signal, sys
    from snapstore import Store
    from snapstore.core import faults

    def kill(name):
        if name == sys.argv[2]:
            os.kill(os.getpid(), signal.SIGKILL)

    faults.install(kill)
    with Store.open(sys.argv[1]) as store:
        store.rewind(1)
    """
)


@pytest.mark.parametrize(
    "point", ["plan.big_merged", "journal.journaled", "fsio.before_rename", "journal.before_finish"]
)
def test_a_big_merge_killed_at_any_step_loses_nothing(
    store: Store, root: Path, tmp_path: Path, point: str
) -> None:
    """SIGKILL while merging leaves nothing behind (the spool has no name); after the journal,
    the merge is in the store, and resuming the rewind writes it."""
    lines = dump(ROWS, 6)
    before = b"".join(lines)
    write(root, "dump.sql", before)
    agent = _replace(lines, 10, b"-- the agent's")
    agent_turn(store, "edit", {"dump.sql": agent})
    current = _replace(agent.splitlines(keepends=True), ROWS - 3, b"-- mine")
    write(root, "dump.sql", current)
    store_files = sorted(p.name for p in (root / ".snapstore").iterdir())
    child = subprocess.run([sys.executable, "-c", _KILLED_REWIND, str(root), point], check=False)
    assert child.returncode == -9
    assert sorted(p.name for p in (root / ".snapstore").iterdir()) == store_files
    status, expected = git_merge_file(tmp_path, agent, current, before)
    assert status == 0
    resumed = store.resume()
    if point == "plan.big_merged":  # nothing was journaled: the file is as it was
        assert resumed == [] and read(root, "dump.sql") == current
        assert store.rewind(1).merged == ["dump.sql"]
    assert read(root, "dump.sql") == expected
    assert sorted(p.name for p in root.iterdir()) == [".snapstore", "dump.sql"]
    assert store.undo().ok and read(root, "dump.sql") == current
    assert store.fsck().ok
