"""Unit and property tests for snapstore.text.merge (diff3 three-way merge and diffs)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from snapstore.text.diff import diff_opcodes, is_binary, line_stats, split_lines
from snapstore.text.merge import MergeResult, merge3
from snapstore.text.unified import unified_diff


def text(*lines: str, eol: str = "\n", final_newline: bool = True) -> bytes:
    """Join lines into file bytes."""
    data = "".join(line + eol for line in lines)
    if not final_newline and data:
        data = data[: -len(eol)]
    return data.encode()


BASE = text("one", "two", "three", "four", "five", "six", "seven")


# --------------------------------------------------------------------------------------------
# split_lines / is_binary


@pytest.mark.parametrize(
    ("data", "lines"),
    [
        (b"", []),
        (b"\n", [b"\n"]),
        (b"a", [b"a"]),
        (b"a\nb", [b"a\n", b"b"]),
        (b"a\nb\n", [b"a\n", b"b\n"]),
        (b"a\r\nb\r\n", [b"a\r\n", b"b\r\n"]),
        (b"a\rb\n", [b"a\rb\n"]),
        (b"\n\n", [b"\n", b"\n"]),
    ],
)
def test_split_lines(data: bytes, lines: list[bytes]) -> None:
    assert split_lines(data) == lines
    assert b"".join(lines) == data


def test_is_binary_looks_at_first_8_kib() -> None:
    assert not is_binary(b"")
    assert not is_binary(b"plain text\n")
    assert is_binary(b"\0")
    assert is_binary(b"x" * 8191 + b"\0")
    assert not is_binary(b"x" * 8192 + b"\0")


# --------------------------------------------------------------------------------------------
# merge3


def test_result_type() -> None:
    result = merge3(BASE, BASE, BASE)
    assert result == MergeResult(BASE, 0)
    assert result.clean
    assert not MergeResult(b"", 2).clean
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.conflicts = 1  # type: ignore[misc]


def test_disjoint_edits_keep_both() -> None:
    ours = text("ONE", "two", "three", "four", "five", "six", "seven")
    theirs = text("one", "two", "three", "four", "five", "SIX", "seven", "eight")
    result = merge3(BASE, ours, theirs)
    assert result.clean
    assert result.content == text("ONE", "two", "three", "four", "five", "SIX", "seven", "eight")


def test_same_line_edits_conflict_diff3_style() -> None:
    ours = text("one", "two", "THREE", "four", "five", "six", "seven")
    theirs = text("one", "two", "3", "four", "five", "six", "seven")
    result = merge3(BASE, ours, theirs)
    assert result.conflicts == 1
    assert result.content == text(
        "one",
        "two",
        "<<<<<<< current",
        "THREE",
        "||||||| agent",
        "three",
        "=======",
        "3",
        ">>>>>>> before",
        "four",
        "five",
        "six",
        "seven",
    )


def test_custom_labels() -> None:
    ours = text("one", "TWO", "three", "four", "five", "six", "seven")
    theirs = text("one", "2", "three", "four", "five", "six", "seven")
    content = merge3(BASE, ours, theirs, labels=("mine", "base", "")).content
    assert b"<<<<<<< mine\n" in content
    assert b"||||||| base\n" in content
    assert b"\n>>>>>>>\n" in content


def test_adjacent_line_edits_conflict() -> None:
    ours = text("one", "two", "THREE", "four", "five", "six", "seven")
    theirs = text("one", "two", "three", "FOUR", "five", "six", "seven")
    result = merge3(BASE, ours, theirs)
    assert result.conflicts == 1
    assert b"THREE\nfour\n||||||| agent\nthree\nfour\n=======\nthree\nFOUR\n" in result.content


def test_insertion_touching_other_change_conflicts() -> None:
    ours = text("one", "two", "THREE", "four", "five", "six", "seven")
    theirs = text("one", "two", "three", "new", "four", "five", "six", "seven")
    assert merge3(BASE, ours, theirs).conflicts == 1
    # One untouched line in between is enough to keep them apart.
    theirs = text("one", "two", "three", "four", "new", "five", "six", "seven")
    result = merge3(BASE, ours, theirs)
    assert result.clean
    assert result.content == text("one", "two", "THREE", "four", "new", "five", "six", "seven")


def test_conflicts_are_counted_per_region() -> None:
    ours = text("ONE", "two", "three", "four", "five", "six", "SEVEN")
    theirs = text("1", "two", "three", "four", "five", "six", "7")
    result = merge3(BASE, ours, theirs)
    assert result.conflicts == 2
    assert result.content.count(b"<<<<<<< current\n") == 2


def test_identical_edits_are_clean() -> None:
    ours = text("one", "2", "three", "four", "five", "6", "seven")
    assert merge3(BASE, ours, ours) == MergeResult(ours, 0)
    # The same change on both sides next to a change made by one side only.
    theirs = text("one", "2", "three", "four", "five", "6", "seven", "eight")
    result = merge3(BASE, ours, theirs)
    assert result.clean
    assert result.content == theirs


def test_overlapping_changes_with_equal_outcome_are_clean() -> None:
    base = text("a", "b", "c")
    ours = text("a", "x", "c")
    theirs = text("a", "x", "c")
    assert merge3(base, ours, theirs) == MergeResult(ours, 0)


def test_crlf_is_preserved_in_clean_merge() -> None:
    base = text("one", "two", "three", "four", "five", eol="\r\n")
    ours = text("ONE", "two", "three", "four", "five", eol="\r\n")
    theirs = text("one", "two", "three", "four", "FIVE", eol="\r\n")
    result = merge3(base, ours, theirs)
    assert result.clean
    assert result.content == text("ONE", "two", "three", "four", "FIVE", eol="\r\n")


def test_crlf_conflict_markers() -> None:
    base = text("one", "two", "three", eol="\r\n")
    ours = text("one", "TWO", "three", eol="\r\n")
    theirs = text("one", "2", "three", eol="\r\n")
    result = merge3(base, ours, theirs)
    assert result.conflicts == 1
    assert result.content == text(
        "one",
        "<<<<<<< current",
        "TWO",
        "||||||| agent",
        "two",
        "=======",
        "2",
        ">>>>>>> before",
        "three",
        eol="\r\n",
    )


def test_crlf_markers_when_base_is_empty() -> None:
    result = merge3(b"", b"mine\r\n", b"yours\r\n")
    assert result.conflicts == 1
    assert b"\n" not in result.content.replace(b"\r\n", b"")


def test_line_endings_are_part_of_the_line() -> None:
    base = text("a", "b", "c", "d", "e")
    ours = b"a\nb\r\nc\nd\ne\n"  # only the line ending of "b" changed
    theirs = text("a", "b", "c", "d", "E")
    assert merge3(base, ours, theirs) == MergeResult(b"a\nb\r\nc\nd\nE\n", 0)
    theirs = text("a", "B", "c", "d", "e")
    assert merge3(base, ours, theirs).conflicts == 1


def test_missing_final_newline_is_merged_apart() -> None:
    base = text("a", "b", "c", "d")
    ours = text("a", "b", "c", "d", final_newline=False)
    theirs = text("A", "b", "c", "d")
    assert merge3(base, ours, theirs) == MergeResult(b"A\nb\nc\nd", 0)
    # git conflicts here (both sides changed the last line); see test_merge_newline.py
    theirs = text("a", "b", "c", "D")
    assert merge3(base, ours, theirs) == MergeResult(b"a\nb\nc\nD", 0)


def test_append_after_last_line_without_newline() -> None:
    base = text("a", "b", "c", "d", final_newline=False)
    ours = text("a", "b", "c", "d", "e", final_newline=False)
    theirs = text("A", "b", "c", "d", final_newline=False)
    # Appending rewrites "d" into "d\n": a change of the last line, far from line 1.
    assert merge3(base, ours, theirs) == MergeResult(b"A\nb\nc\nd\ne", 0)
    theirs = text("a", "b", "c", "D", final_newline=False)
    result = merge3(base, ours, theirs)
    assert result.conflicts == 1
    # Sections without a final newline get one before the next marker.
    assert result.content == text(
        "a",
        "b",
        "c",
        "<<<<<<< current",
        "d",
        "e",
        "||||||| agent",
        "d",
        "=======",
        "D",
        ">>>>>>> before",
    )


def test_both_append_different_lines() -> None:
    base = text("a", "b")
    result = merge3(base, text("a", "b", "x"), text("a", "b", "y"))
    assert result.conflicts == 1
    assert result.content.endswith(
        b"b\n<<<<<<< current\nx\n||||||| agent\n=======\ny\n>>>>>>> before\n"
    )


def test_empty_files() -> None:
    assert merge3(b"", b"", b"") == MergeResult(b"", 0)
    assert merge3(b"", b"new\n", b"") == MergeResult(b"new\n", 0)
    assert merge3(b"", b"", b"new\n") == MergeResult(b"new\n", 0)
    assert merge3(BASE, b"", BASE) == MergeResult(b"", 0)
    assert merge3(BASE, BASE, b"") == MergeResult(b"", 0)
    assert merge3(b"", b"same\n", b"same\n") == MergeResult(b"same\n", 0)
    both_new = merge3(b"", b"mine\n", b"yours\n")
    assert both_new.conflicts == 1
    assert both_new.content == (
        b"<<<<<<< current\nmine\n||||||| agent\n=======\nyours\n>>>>>>> before\n"
    )
    deleted_vs_edited = merge3(text("a", "b"), b"", text("a", "B"))
    assert deleted_vs_edited.conflicts == 1
    assert deleted_vs_edited.content == (
        b"<<<<<<< current\n||||||| agent\na\nb\n=======\na\nB\n>>>>>>> before\n"
    )


def test_repeated_lines_slide_like_git() -> None:
    # Inserting a line into a run of equal lines: git places the insertion at the end of the
    # run, so an edit just before the run does not touch it.
    base = text("x", "a", "a", "a", "y")
    ours = text("X", "a", "a", "a", "y")
    theirs = text("x", "a", "a", "a", "a", "y")
    assert merge3(base, ours, theirs) == MergeResult(text("X", "a", "a", "a", "a", "y"), 0)
    # ...while an edit just after it does.
    ours = text("x", "a", "a", "a", "Y")
    assert merge3(base, ours, theirs).conflicts == 1


def test_binary_inputs() -> None:
    blob = b"\0\1\2"
    assert merge3(blob, blob, b"\0new") == MergeResult(b"\0new", 0)
    assert merge3(blob, b"\0mine", blob) == MergeResult(b"\0mine", 0)
    assert merge3(blob, b"\0mine", b"\0yours") == MergeResult(b"\0mine", 1)


# --------------------------------------------------------------------------------------------
# diff_opcodes / line_stats / unified_diff


def test_diff_opcodes_shape() -> None:
    a = split_lines(text("a", "b", "c", "d"))
    b = split_lines(text("a", "B", "c", "d", "e"))
    assert diff_opcodes(a, b) == [
        ("equal", 0, 1, 0, 1),
        ("replace", 1, 2, 1, 2),
        ("equal", 2, 4, 2, 4),
        ("insert", 4, 4, 4, 5),
    ]
    assert diff_opcodes(a, a) == [("equal", 0, 4, 0, 4)]
    assert diff_opcodes([], []) == []
    assert diff_opcodes(a, []) == [("delete", 0, 4, 0, 0)]


def test_line_stats() -> None:
    assert line_stats(BASE, BASE) == (0, 0)
    assert line_stats(b"", b"a\nb\n") == (2, 0)
    assert line_stats(b"a\nb\n", b"") == (0, 2)
    assert line_stats(b"a\nb\nc\n", b"a\nB\nc\nd\n") == (2, 1)
    assert line_stats(b"a\nb", b"a\nb\n") == (1, 1)
    assert line_stats(b"a\r\n", b"a\n") == (1, 1)
    assert line_stats(b"\0old", b"\0new") == (0, 0)


def test_unified_diff_shape() -> None:
    old = text("def f():", "    one", "    two", "    three", "    four", "    five", "    six")
    new = text("def f():", "    one", "    two", "    THREE", "    four", "    five", "    six")
    assert unified_diff(old, new, "a/f.py", "b/f.py") == [
        "--- a/f.py",
        "+++ b/f.py",
        "@@ -1,7 +1,7 @@",
        " def f():",
        "     one",
        "     two",
        "-    three",
        "+    THREE",
        "     four",
        "     five",
        "     six",
    ]
    assert unified_diff(old, new, "a/f.py", "b/f.py", context=1) == [
        "--- a/f.py",
        "+++ b/f.py",
        "@@ -3,3 +3,3 @@ def f():",
        "     two",
        "-    three",
        "+    THREE",
        "     four",
    ]


def test_unified_diff_edges() -> None:
    assert unified_diff(BASE, BASE, "a/x", "b/x") == []
    assert unified_diff(b"", b"a\nb\n", "/dev/null", "b/x") == [
        "--- /dev/null",
        "+++ b/x",
        "@@ -0,0 +1,2 @@",
        "+a",
        "+b",
    ]
    assert unified_diff(b"a\n", b"", "a/x", "/dev/null") == [
        "--- a/x",
        "+++ /dev/null",
        "@@ -1 +0,0 @@",
        "-a",
    ]
    assert unified_diff(b"a\nb", b"a\nc", "a/x", "b/x") == [
        "--- a/x",
        "+++ b/x",
        "@@ -1,2 +1,2 @@",
        " a",
        "-b",
        "\\ No newline at end of file",
        "+c",
        "\\ No newline at end of file",
    ]
    assert unified_diff(b"\0", b"\0\0", "a/x", "b/x") == ["Binary files a/x and b/x differ"]
    assert unified_diff(b"caf\xc3\xa9\n", b"\xff\n", "a/x", "b/x")[-2:] == ["-café", "+\ufffd"]


def test_unified_diff_splits_distant_hunks() -> None:
    old = text(*[f"line {i}" for i in range(20)])
    new = old.replace(b"line 2\n", b"LINE 2\n").replace(b"line 17\n", b"LINE 17\n")
    headers = [h for h in unified_diff(old, new, "a/x", "b/x") if h.startswith("@@")]
    assert headers == ["@@ -1,6 +1,6 @@", "@@ -15,6 +15,6 @@ line 13"]
    new = old.replace(b"line 2\n", b"LINE 2\n").replace(b"line 9\n", b"LINE 9\n")
    headers = [h for h in unified_diff(old, new, "a/x", "b/x") if h.startswith("@@")]
    assert headers == ["@@ -1,13 +1,13 @@"]


# --------------------------------------------------------------------------------------------
# Properties

LINE = st.sampled_from([b"a\n", b"b\n", b"c\n", b"d\n"])


@st.composite
def files(draw: st.DrawFn, may_lack_final_newline: bool = True) -> bytes:
    data = b"".join(draw(st.lists(LINE, max_size=14)))
    if may_lack_final_newline and data and draw(st.booleans()):
        data = data[:-1]
    return data


PROPS = settings(max_examples=150, deadline=None)


@PROPS
@given(files(), files())
def test_prop_only_theirs_changed(base: bytes, theirs: bytes) -> None:
    assert merge3(base, base, theirs) == MergeResult(theirs, 0)


@PROPS
@given(files(), files())
def test_prop_only_ours_changed(base: bytes, ours: bytes) -> None:
    assert merge3(base, ours, base) == MergeResult(ours, 0)


@PROPS
@given(files(), files())
def test_prop_same_change_on_both_sides(base: bytes, both: bytes) -> None:
    assert merge3(base, both, both) == MergeResult(both, 0)


@PROPS
@given(files(), files(), files())
def test_prop_deterministic_and_symmetric(base: bytes, ours: bytes, theirs: bytes) -> None:
    """Same inputs, same result; swapping the sides only changes the conflict layout."""
    result = merge3(base, ours, theirs)
    assert merge3(base, ours, theirs) == result
    swapped = merge3(base, theirs, ours)
    assert result.clean == swapped.clean
    if result.clean:
        assert result.content == swapped.content
    else:
        assert result.content.count(b"<<<<<<< current\n") == result.conflicts
        assert result.content.count(b">>>>>>> before\n") == result.conflicts


@PROPS
@given(*[files(may_lack_final_newline=False)] * 3)
def test_prop_crlf_is_transparent(base: bytes, ours: bytes, theirs: bytes) -> None:
    def crlf(data: bytes) -> bytes:
        return data.replace(b"\n", b"\r\n")

    lf_result = merge3(base, ours, theirs)
    assert merge3(crlf(base), crlf(ours), crlf(theirs)) == MergeResult(
        crlf(lf_result.content), lf_result.conflicts
    )


@PROPS
@given(st.data())
def test_prop_far_apart_edits_merge(data: st.DataObject) -> None:
    n = data.draw(st.integers(4, 20))
    base = [f"L{i}\n".encode() for i in range(n)]
    cut = data.draw(st.integers(1, n - 3))  # ours edits base[:cut], theirs base[cut + 2:]
    new_lines = st.lists(st.integers(0, 99), max_size=3)

    def edit(lines: list[bytes], lo: int, hi: int, tag: str) -> list[bytes]:
        i = data.draw(st.integers(lo, hi))
        j = data.draw(st.integers(i, hi))
        return [*lines[:i], *(f"{tag}{k}\n".encode() for k in data.draw(new_lines)), *lines[j:]]

    ours = edit(base, 0, cut, "O")
    theirs = edit(base, cut + 2, n, "T")
    expected = [*ours[: len(ours) - (n - cut)], *theirs[cut:]]
    assert merge3(b"".join(base), b"".join(ours), b"".join(theirs)) == MergeResult(
        b"".join(expected), 0
    )


@PROPS
@given(files(), files())
def test_prop_diff_opcodes_rebuild(old: bytes, new: bytes) -> None:
    a, b = split_lines(old), split_lines(new)
    rebuilt: list[bytes] = []
    i = j = 0
    for tag, i1, i2, j1, j2 in diff_opcodes(a, b):
        assert (i, j) == (i1, j1)
        if tag == "equal":
            assert a[i1:i2] == b[j1:j2]
        rebuilt += a[i1:i2] if tag == "equal" else b[j1:j2]
        i, j = i2, j2
    assert (i, j) == (len(a), len(b))
    assert rebuilt == b


@PROPS
@given(files(), files())
def test_prop_stats_match_diff(old: bytes, new: bytes) -> None:
    added, removed = line_stats(old, new)
    lines = unified_diff(old, new, "a/x", "b/x")
    body = lines[2:]
    assert sum(line.startswith("+") for line in body) == added
    assert sum(line.startswith("-") for line in body) == removed
    assert (lines == []) == (old == new)
