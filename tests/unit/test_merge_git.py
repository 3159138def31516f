"""Compare snapstore.text.merge with git, used as a black box, on generated inputs.

* ``merge3`` against ``git merge-file -p ours base theirs``: cleanliness must agree, and when
  both are clean the bytes must agree, on every case. Where git conflicts on a case that lacks
  a final newline, the reference is git's merge of the case with its final newlines restored,
  the final newline then decided apart (see :func:`reference`; the one place where merge3
  departs from git on purpose). Run with ``-s`` to see the agreement report; it is also
  attached to the test as the ``merge_agreement`` property. ``--slow`` runs ten times as many
  cases.
* conflict layout against ``git merge-file --diff3`` for LF files;
* ``line_stats`` against ``git diff --no-index --numstat``;
* ``unified_diff`` against ``git diff --no-index --no-indent-heuristic``;
* large rewrites, where git's search stops at its cost cap, and its tie rule there.

Inputs come from a seeded ``random.Random``, so every run sees the same cases.
"""

from __future__ import annotations

import os
import random
import re
import subprocess
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from snapstore.text import diff as diff_module
from snapstore.text.diff import line_stats
from snapstore.text.merge import merge3
from snapstore.text.unified import unified_diff

SEED = 20250101
CASES = 2000
SLOW_CASES = 20000
VARIANTS = ("lf", "crlf", "no-final-newline", "empty", "mixed")
DISAGREEMENTS = ("we merge, git conflicts", "we conflict, git merges", "clean, bytes differ")
LABELS = ("current", "agent", "before")


@dataclass(frozen=True)
class Case:
    index: int
    variant: str
    base: bytes
    ours: bytes
    theirs: bytes


def _edit(rng: random.Random, lines: list[str], alphabet: list[str]) -> list[str]:
    """Apply up to four random runs of insertions, deletions and replacements."""
    out = list(lines)
    for _ in range(rng.randint(0, 4)):
        pos = rng.randint(0, len(out))
        width = rng.randint(1, 3)
        new = [rng.choice(alphabet) for _ in range(rng.randint(1, 3))]
        kind = rng.choice(("insert", "delete", "replace"))
        if kind == "insert":
            out[pos:pos] = new
        elif kind == "delete":
            del out[pos : pos + width]
        else:
            out[pos : pos + width] = new
    return out


def make_case(rng: random.Random, index: int, variant: str) -> Case:
    """Base: 0..30 lines from a small alphabet (repeats make alignments ambiguous); ours and
    theirs: a few random edits of it."""
    letters = rng.choice(("ab", "abc", "abcd", "abcdefgh"))
    eol = "\r\n" if variant == "crlf" else "\n"
    alphabet = [letter + eol for letter in letters]
    if variant == "mixed":
        alphabet += [letter + "\r\n" for letter in rng.sample(letters, 1)] + ["\n"]
    base = [rng.choice(alphabet) for _ in range(rng.randint(0, 30))]
    ours, theirs = _edit(rng, base, alphabet), _edit(rng, base, alphabet)
    sides = [base, ours, theirs]
    if variant == "empty":
        for side in rng.choice(((0,), (1,), (2,), (0, 1), (0, 2), (1, 2))):
            sides[side] = []
    data = ["".join(side) for side in sides]
    if variant in ("no-final-newline", "mixed"):
        data = [text[:-1] if text and rng.random() < 0.5 else text for text in data]
    return Case(index, variant, *(text.encode() for text in data))


def make_cases(count: int) -> list[Case]:
    rng = random.Random(SEED)
    return [make_case(rng, i, VARIANTS[i % len(VARIANTS)]) for i in range(count)]


@pytest.fixture
def git_env(tmp_path: Path) -> dict[str, str]:
    """Environment for git that ignores any system or user configuration."""
    home = tmp_path / "home"
    home.mkdir()
    return {
        **os.environ,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "HOME": str(home),
        "LC_ALL": "C",
    }


def git_merge_files(
    cases: list[Case], workdir: Path, env: dict[str, str], *options: str
) -> list[tuple[int, bytes]]:
    """Run ``git merge-file -p`` on every case; return (exit status, output) for each."""

    def run(case: Case) -> tuple[int, bytes]:
        names = [f"{case.index}.{side}" for side in ("ours", "base", "theirs")]
        for name, data in zip(names, (case.ours, case.base, case.theirs), strict=True):
            (workdir / name).write_bytes(data)
        labels = [arg for label in LABELS for arg in ("-L", label)]
        proc = subprocess.run(
            ["git", "merge-file", "-p", *options, *labels, *names],
            cwd=workdir,
            env=env,
            capture_output=True,
            check=False,
        )
        return proc.returncode, proc.stdout

    with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as pool:
        return list(pool.map(run, cases))


def lacks_final_newline(case: Case) -> bool:
    """Some input is not empty and does not end with a newline."""
    return any(data and not data.endswith(b"\n") for data in (case.base, case.ours, case.theirs))


def completed(case: Case) -> tuple[Case, bytes, bool | None]:
    """The case with every missing final newline restored (CRLF when the last complete line
    of every input that has one ends with CRLF), that ending, and whether the merge must end
    with a newline: as ours ends if ours changed that from base, else as theirs ends (an
    empty side leaves it as base has it). None when ours and theirs both changed it,
    differently."""
    texts = (case.base, case.ours, case.theirs)
    crlf = [text[: text.rfind(b"\n") + 1].endswith(b"\r\n") for text in texts if b"\n" in text]
    eol = b"\r\n" if crlf and all(crlf) else b"\n"
    base_end = case.base.endswith(b"\n") if case.base else None
    ours_end, theirs_end = (
        text.endswith(b"\n") if text else base_end for text in (case.ours, case.theirs)
    )
    final = None
    if base_end in (ours_end, theirs_end) or ours_end == theirs_end:
        final = (ours_end if ours_end != base_end else theirs_end) is not False
    fixed = [text if not text or text.endswith(b"\n") else text + eol for text in texts]
    return Case(case.index, case.variant, *fixed), eol, final


def reference(
    cases: list[Case], workdir: Path, env: dict[str, str]
) -> tuple[list[tuple[int, bytes]], int]:
    """What merge3 must give for each case, as git's exit status and output; and how many
    cases the final-newline rule turns from a conflict into a clean merge.

    That is ``git merge-file``'s answer on the case, except (the one place where merge3
    departs from git on purpose) where git conflicts and the case lacks a final newline:
    there, if git merges the completed case cleanly, git's output for it, without its final
    newline if the merge must lack one (and if the sides agree on no final newline, git's
    conflict).
    """
    answers = git_merge_files(cases, workdir, env)
    retry = [
        n
        for n, case in enumerate(cases)
        if answers[n][0] and lacks_final_newline(case) and completed(case)[2] is not None
    ]
    fixes = [completed(cases[n]) for n in retry]
    merged = 0
    for n, (_, eol, final), (status, output) in zip(
        retry,
        fixes,
        git_merge_files([case for case, _, _ in fixes], workdir, env),
        strict=True,
    ):
        if status == 0:
            merged += 1
            cut = output[: -len(eol) if output.endswith(eol) else -1]
            answers[n] = 0, output if final or not output else cut
    return answers, merged


def test_merge3_agrees_with_git_merge_file(
    tmp_path: Path,
    git_env: dict[str, str],
    record_property: pytest.RecordProperty,
    slow: bool,
) -> None:
    """Every generated case agrees with git, through :func:`reference`."""
    cases = make_cases(SLOW_CASES if slow else CASES)
    answers, rescued = reference(cases, tmp_path, git_env)
    tally: dict[str, Counter[str]] = {variant: Counter() for variant in VARIANTS}
    disagreements = []
    for case, (status, git_output) in zip(cases, answers, strict=True):
        assert 0 <= status < 128, f"git merge-file failed ({status}) on {case}"
        ours = merge3(case.base, case.ours, case.theirs, labels=LABELS)
        count = tally[case.variant]
        count["cases"] += 1
        count["git clean"] += status == 0
        if ours.clean and status != 0:
            kind = DISAGREEMENTS[0]
        elif not ours.clean and status == 0:
            kind = DISAGREEMENTS[1]
        elif ours.clean and ours.content != git_output:
            kind = DISAGREEMENTS[2]
        else:
            count["agree"] += 1
            continue
        count[kind] += 1
        disagreements.append((kind, case, git_output, ours))

    total = sum(count["cases"] for count in tally.values())
    agree = sum(count["agree"] for count in tally.values())
    report = [f"merge3 vs git merge-file: {agree}/{total} agree ({100 * agree / total:.2f}%)"]
    for variant, count in tally.items():
        extra = ", ".join(f"{kind}: {count[kind]}" for kind in DISAGREEMENTS if count[kind])
        report.append(
            f"  {variant:17} {count['agree']}/{count['cases']} agree"
            f" ({count['git clean']} clean){'; ' + extra if extra else ''}"
        )
    report.append(f"  of which git conflicts, merged by the final-newline rule: {rescued}")
    print("\n" + "\n".join(report))
    record_property("merge_agreement", "\n".join(report))
    assert not disagreements, "\n".join(
        [
            *report,
            *(
                f"{kind}: {case}\n  git: {out!r}\n  ours: {res}"
                for kind, case, out, res in disagreements[:5]
            ),
        ]
    )


def test_conflict_layout_matches_git_diff3(tmp_path: Path, git_env: dict[str, str]) -> None:
    """Where we conflict on LF files, the markers are exactly git's ``--diff3`` output."""
    cases = []
    for case in make_cases(1000):
        if b"\r" not in case.base + case.ours + case.theirs:
            result = merge3(case.base, case.ours, case.theirs, labels=LABELS)
            if not result.clean:
                cases.append((case, result))
    assert len(cases) > 200
    answers = git_merge_files([case for case, _ in cases], tmp_path, git_env, "--diff3")
    for (case, result), (status, git_output) in zip(cases, answers, strict=True):
        assert status > 0, case
        assert result.content == git_output, case


def diff_pairs(count: int) -> list[tuple[bytes, bytes]]:
    """Old/new pairs for the diff tests: code-like lines (some start a git "function", some
    are long or indented), line-ending changes and missing final newlines."""
    rng = random.Random(SEED + 1)
    alphabet = [
        "def f():\n",
        "class C:\n",
        "    return x\n",
        "    pass\n",
        "\n",
        "}\n",
        "_private = 1\n",
        "$var\n",
        "9 lives\n",
        "x\r\n",
        "long " + "word " * 20 + "  \n",
        "caf\u00e9\n",
    ]
    pairs = []
    for _ in range(count):
        letters = rng.sample(alphabet, rng.randint(2, 6))
        old = [rng.choice(letters) for _ in range(rng.randint(0, 40))]
        new = _edit(rng, old, letters)
        texts = ["".join(old), "".join(new)]
        texts = [t[:-1] if t and rng.random() < 0.15 else t for t in texts]
        pairs.append((texts[0].encode(), texts[1].encode()))
    return pairs


def rewrite_pairs(count: int) -> list[tuple[bytes, bytes]]:
    """Longer old/new pairs mixing a few very frequent lines with rare ones, rewritten in
    large runs: the case where git leaves frequent lines in rewritten text out of the search."""
    rng = random.Random(SEED + 2)

    def line(frequent: list[str], share: float) -> str:
        if rng.random() < share:
            return rng.choice(frequent)
        return f"u{rng.randint(0, 300)}\n"

    pairs = []
    for _ in range(count):
        frequent = ["\n", "}\n", "    pass\n", "x\n"][: rng.randint(1, 4)]
        share = rng.choice((0.2, 0.5, 0.8))
        old = [line(frequent, share) for _ in range(rng.randint(0, 150))]
        new = list(old)
        for _ in range(rng.randint(1, 8)):
            pos, width = rng.randint(0, len(new)), rng.randint(0, 12)
            new[pos : pos + width] = [line(frequent, share) for _ in range(rng.randint(0, 12))]
        pairs.append(("".join(old).encode(), "".join(new).encode()))
    return pairs


def write_pairs(pairs: list[tuple[bytes, bytes]], root: Path) -> None:
    (root / "A").mkdir()
    (root / "B").mkdir()
    for i, (old, new) in enumerate(pairs):
        (root / "A" / str(i)).write_bytes(old)
        (root / "B" / str(i)).write_bytes(new)


def git_diff(root: Path, env: dict[str, str], *options: str) -> str:
    proc = subprocess.run(
        ["git", "diff", "--no-index", "--no-color", *options, "A", "B"],
        cwd=root,
        env=env,
        capture_output=True,
        check=False,
    )
    assert proc.returncode in (0, 1), proc.stderr
    return proc.stdout.decode("utf-8", "replace")


def git_unified_diffs(root: Path, env: dict[str, str]) -> dict[int, list[str]]:
    """``git diff --no-indent-heuristic`` of the pairs under root, per pair, from ``---``."""
    diffs: dict[int, list[str]] = {}
    current: list[str] = []
    for line in git_diff(root, env, "--no-indent-heuristic").split("\n")[:-1]:
        header = re.fullmatch(r"diff --git a/A/(\d+) b/B/\d+", line)
        if header:
            current = diffs.setdefault(int(header.group(1)), [])
        elif current or line.startswith("--- "):
            current.append(line)
    return diffs


def test_line_stats_agree_with_git_numstat(tmp_path: Path, git_env: dict[str, str]) -> None:
    pairs = (
        diff_pairs(200)
        + rewrite_pairs(200)
        + [(case.base, case.ours) for case in make_cases(200) if case.variant != "empty"]
    )
    write_pairs(pairs, tmp_path)
    git = {}
    for line in git_diff(tmp_path, git_env, "--numstat").splitlines():
        added, removed, name = line.split("\t")
        index = re.fullmatch(r"\{A => B\}/(\d+)", name)
        assert index, line
        git[int(index.group(1))] = (int(added), int(removed))
    assert len(git) > 400
    for i, (old, new) in enumerate(pairs):
        assert line_stats(old, new) == git.get(i, (0, 0)), (old, new)


def test_unified_diff_agrees_with_git_diff(tmp_path: Path, git_env: dict[str, str]) -> None:
    pairs = diff_pairs(400) + rewrite_pairs(400)
    write_pairs(pairs, tmp_path)
    git = git_unified_diffs(tmp_path, git_env)
    assert len(git) > 600
    for i, (old, new) in enumerate(pairs):
        ours = unified_diff(old, new, f"a/A/{i}", f"b/B/{i}")
        assert ours == git.get(i, []), (old, new)


def heavy_cases(count: int) -> list[Case]:
    """Files of 300 to 900 lines from a small alphabet, rewritten all over by both sides
    (lines replaced, runs moved): diffs that cost more than git's cap of 256 edits, so that
    git cuts its search short. Up to 2,048 lines in all, merge.py cuts it short the same way
    (beyond, its own budget takes over; see test_merge_large.py)."""
    rng = random.Random(SEED + 3)

    def rewrite(lines: list[str], alphabet: int) -> list[str]:
        keep = rng.random()
        out = [line if rng.random() < keep else f"l{rng.randrange(alphabet)}\n" for line in lines]
        for _ in range(rng.randrange(20)):
            at, width = rng.randrange(len(out)), rng.randint(1, 40)
            moved = out[at : at + width]
            del out[at : at + width]
            out[rng.randint(0, len(out)) : 0] = moved
        return out

    cases = []
    for index in range(count):
        alphabet = rng.choice((20, 100, 1000))
        base = [f"l{rng.randrange(alphabet)}\n" for _ in range(rng.randint(300, 900))]
        sides = [base, rewrite(base, alphabet), rewrite(base, alphabet)]
        cases.append(Case(index, "heavy", *("".join(side).encode() for side in sides)))
    return cases


def test_large_rewrites_agree_with_git_past_its_cost_cap(
    tmp_path: Path, git_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where git's search gives up at its cost cap and cuts at the furthest point reached,
    so does merge.py: stats and merges agree."""
    capped = []
    split = diff_module._split

    def counting(*args: object) -> tuple[int, int, bool]:
        cut = split(*args)  # type: ignore[arg-type]
        capped.append(not cut[2])
        return cut

    monkeypatch.setattr(diff_module, "_split", counting)
    cases = heavy_cases(40)
    write_pairs([(case.base, case.ours) for case in cases], tmp_path)
    git = {}
    for line in git_diff(tmp_path, git_env, "--numstat").splitlines():
        added, removed, name = line.split("\t")
        index = re.fullmatch(r"\{A => B\}/(\d+)", name)
        assert index, line
        git[int(index.group(1))] = (int(added), int(removed))
    for case in cases:
        assert line_stats(case.base, case.ours) == git[case.index], case.index
    assert sum(capped) > 20  # the cap was reached, many times
    answers = git_merge_files(cases, tmp_path, git_env)
    for case, (status, output) in zip(cases, answers, strict=True):
        result = merge3(case.base, case.ours, case.theirs, labels=LABELS)
        assert result.clean == (status == 0), case.index
        assert not result.clean or result.content == output, case.index


def test_capped_search_breaks_ties_as_git_does(tmp_path: Path, git_env: dict[str, str]) -> None:
    """At its cap, git cuts at the furthest point of the forward search unless the backward
    one got strictly further. Files that are their own mirror image make both equally far."""
    rng = random.Random(SEED + 4)
    pairs = []
    for _ in range(30):
        alphabet = rng.choice((3, 5, 10))
        halves = [[f"l{rng.randrange(alphabet)}\n" for _ in range(400)] for _ in range(2)]
        pairs.append(tuple("".join(half + half[::-1]).encode() for half in halves))
    write_pairs(pairs, tmp_path)
    git = git_unified_diffs(tmp_path, git_env)
    for i, (old, new) in enumerate(pairs):
        assert unified_diff(old, new, f"a/A/{i}", f"b/B/{i}") == git[i], i
