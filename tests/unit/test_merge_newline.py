"""The final newline is merged apart from the lines.

Where git conflicts only because one side added or removed the final newline next to the
other side's change, merge3 merges the lines with the final newline restored, and decides
the final newline as a three-way merge of its own. Everywhere else it is git's merge.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from snapstore import Store
from snapstore.text.merge import MergeResult, merge3

from ..support import agent_turn, read, write

BEFORE = b"LINE1\nLINE2\nLINE3"
AGENT = b"LINE1\nLINE2-agent\nLINE3"
CURRENT = b"LINE1\nLINE2-agent\nLINE3\nNEWLINE"
WANTED = b"LINE1\nLINE2\nLINE3\nNEWLINE"


def crlf(data: bytes) -> bytes:
    return data.replace(b"\n", b"\r\n")


def test_append_to_a_file_without_final_newline_is_not_a_conflict() -> None:
    """The user appended a line to a file that lacked a final newline, which turned its last
    line into a complete one, right next to the agent's edit: git conflicts there."""
    assert merge3(AGENT, CURRENT, BEFORE) == MergeResult(WANTED, 0)
    # The user ended the file with a newline: so does the result.
    assert merge3(AGENT, CURRENT + b"\n", BEFORE) == MergeResult(WANTED + b"\n", 0)
    # CRLF files stay CRLF, and the result still lacks the final newline.
    assert merge3(crlf(AGENT), crlf(CURRENT), crlf(BEFORE)) == MergeResult(crlf(WANTED), 0)


def test_rewind_keeps_the_users_appended_line(store: Store, root: Path) -> None:
    write(root, "f.txt", BEFORE)
    turn = agent_turn(store, "edit line 2", {"f.txt": AGENT})
    write(root, "f.txt", CURRENT)
    result = store.rewind(turn)
    assert result.ok and result.merged == ["f.txt"]
    assert read(root, "f.txt") == WANTED


def test_one_side_changes_only_the_final_newline() -> None:
    base = b"a\nb\nc\nd\n"
    # ours drops the final newline, theirs edits the last line: git conflicts, we merge.
    assert merge3(base, b"a\nb\nc\nd", b"a\nb\nc\nD\n") == MergeResult(b"a\nb\nc\nD", 0)
    # ours adds the final newline, theirs edits the line before the last one.
    base = b"a\nb\nc"
    assert merge3(base, b"a\nb\nc\n", b"a\nB\nc") == MergeResult(b"a\nB\nc\n", 0)
    # Files that are only the final newline apart.
    assert merge3(b"x", b"x\n", b"x") == MergeResult(b"x\n", 0)
    assert merge3(b"x\n", b"x\n", b"x") == MergeResult(b"x", 0)
    # A line ending is a change of its line, and conflicts as one.
    assert merge3(b"a\nb", b"a\r\nb", b"a\nB").conflicts == 1
    assert merge3(b"x\r\ny", b"x\r\ny\r\n", b"X\r\ny") == MergeResult(b"X\r\ny\r\n", 0)


def test_empty_files_have_no_last_line() -> None:
    # An emptied side leaves the final newline to the other side.
    assert merge3(b"a", b"", b"a\n") == MergeResult(b"", 0)
    # From an empty base, both sides wrote the same lines, ending them differently: that is
    # no agreement, and stays git's conflict, whichever side is ours.
    assert merge3(b"", b"x\ny", b"x\ny\n").conflicts == 1
    assert merge3(b"", b"x\ny\n", b"x\ny").conflicts == 1
    # ...while the same lines, ended the same way, are no conflict at all.
    assert merge3(b"", b"x\ny", b"x\ny") == MergeResult(b"x\ny", 0)


def test_real_conflicts_stay_conflicts() -> None:
    base = b"a\nb\nc"
    result = merge3(base, b"a\nb\nC\nd", b"a\nb\nc2")
    assert result.conflicts == 1
    # The conflict is git's: the last line of each side ends before the next marker.
    assert result.content == (
        b"a\nb\n<<<<<<< current\nC\nd\n||||||| agent\nc\n=======\nc2\n>>>>>>> before\n"
    )


# --------------------------------------------------------------------------------------------
# Properties

LINES = st.lists(st.sampled_from(["a", "b", "c", "d"]), max_size=10)


def join(lines: list[str], final: bool, eol: str = "\n") -> bytes:
    """File bytes; ``final`` says whether a non-empty file ends with a newline."""
    data = "".join(line + eol for line in lines)
    return (data if final or not data else data[: -len(eol)]).encode()


@st.composite
def far_apart(draw: st.DrawFn) -> tuple[list[str], list[str], list[str]]:
    """Base lines, and ours and theirs editing them far apart (ours near the start, theirs
    near the end, two untouched lines between), so that the lines merge cleanly."""
    n = draw(st.integers(4, 12))
    base = [f"L{i}" for i in range(n)]
    cut = draw(st.integers(1, n - 3))

    def edit(lo: int, hi: int, tag: str) -> list[str]:
        i = draw(st.integers(lo, hi))
        j = draw(st.integers(i, hi))
        new = [f"{tag}{k}" for k in draw(st.lists(st.integers(0, 9), max_size=3))]
        return [*base[:i], *new, *base[j:]]

    ours, theirs = edit(0, cut, "O"), edit(cut + 2, n, "T")
    merged = [*ours[: len(ours) - (n - cut)], *theirs[cut:]]
    return base, ours, theirs, merged


PROPS = settings(max_examples=200, deadline=None)


@PROPS
@given(far_apart(), st.booleans(), st.booleans(), st.booleans(), st.sampled_from(["\n", "\r\n"]))
def test_prop_final_newline_is_a_three_way_merge_of_its_own(
    sides: tuple[list[str], ...], base_final: bool, ours_final: bool, theirs_final: bool, eol: str
) -> None:
    """Far-apart edits always merge, whatever either side did to the final newline: the side
    that changed it wins (ours when both did, which is then the same change)."""
    base, ours, theirs, merged = sides
    result = merge3(
        join(base, base_final, eol), join(ours, ours_final, eol), join(theirs, theirs_final, eol)
    )
    final = ours_final if ours_final != base_final else theirs_final
    assert result == MergeResult(join(merged, final, eol), 0)


@PROPS
@given(LINES, LINES, st.booleans(), st.booleans(), st.booleans())
def test_prop_same_lines_other_final_newline(
    base: list[str], theirs: list[str], base_final: bool, ours_final: bool, theirs_final: bool
) -> None:
    """When ours only changed the final newline, the result is theirs' lines with the final
    newline as ours has it if ours changed it, else as theirs has it."""
    result = merge3(join(base, base_final), join(base, ours_final), join(theirs, theirs_final))
    final = ours_final if base and ours_final != base_final else theirs_final
    assert result == MergeResult(join(theirs, final), 0)


FINALS = st.tuples(st.booleans(), st.booleans(), st.booleans())


@PROPS
@given(LINES, LINES, LINES, FINALS)
def test_prop_crlf_is_transparent(
    base: list[str], ours: list[str], theirs: list[str], finals: tuple[bool, bool, bool]
) -> None:
    """CRLF files merge as LF files do, final newlines and conflict markers included."""
    lf = [join(lines, final) for lines, final in zip((base, ours, theirs), finals, strict=True)]
    if not any(b"\n" in data for data in lf):
        return  # nothing says which line ending these files use
    result = merge3(*lf)
    assert merge3(*map(crlf, lf)) == MergeResult(crlf(result.content), result.conflicts)


@settings(max_examples=150, deadline=None)
@given(LINES, LINES, LINES, FINALS)
def test_prop_lines_merge_as_git_merges_them_completed(
    tmp_path_factory: pytest.TempPathFactory,
    base: list[str],
    ours: list[str],
    theirs: list[str],
    finals: tuple[bool, bool, bool],
) -> None:
    """Where merge3 merges what git conflicts on, the lines are git's merge of the inputs
    with their final newline restored; elsewhere the result is git's."""
    texts = [join(lines, final) for lines, final in zip((base, ours, theirs), finals, strict=True)]
    result = merge3(*texts)
    raw = git_merge(tmp_path_factory, *texts)
    if raw[0] == 0 or result.conflicts:
        assert result.clean == (raw[0] == 0)
        if result.clean:
            assert result.content == raw[1]
        return
    ended = [text.endswith(b"\n") if text else None for text in texts]
    assert False in ended
    status, output = git_merge(
        tmp_path_factory, *(join(lines, True) for lines in (base, ours, theirs))
    )
    assert status == 0
    final = ended[1] if ended[1] != ended[0] else ended[2]
    assert result.content == (output[:-1] if final is False and output else output)


def git_merge(
    factory: pytest.TempPathFactory, base: bytes, ours: bytes, theirs: bytes
) -> tuple[int, bytes]:
    """``git merge-file -p ours base theirs``: exit status and output."""
    work = factory.mktemp("git")
    for name, data in (("ours", ours), ("base", base), ("theirs", theirs)):
        (work / name).write_bytes(data)
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "LC_ALL": "C"}
    proc = subprocess.run(
        ["git", "merge-file", "-p", "ours", "base", "theirs"],
        cwd=work,
        env=env,
        capture_output=True,
        check=False,
    )
    assert 0 <= proc.returncode < 128, proc.stderr
    return proc.returncode, proc.stdout
