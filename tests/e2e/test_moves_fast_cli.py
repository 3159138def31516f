"""``rewind TURN``, ``undo`` and ``redo`` answer the same through the fast path as through Click.

The console script runs these command lines without Click (``snapstore_cli.doors.fast``, bodies in
``snapstore_cli.operations.moves``) when it reads them exactly as Click would. Two copies of one
workspace (the same store, so the same turn and operation ids) take the same commands, one
copy through the console script's dispatch and the other through the Click application
alone; each step must print the same bytes on stdout and stderr, exit with the same code and
leave the same files. Conflicts, unknown turns and usage errors are among the steps.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from snapstore_cli.doors import fast

from ..support import hermetic_env, run_snapstore, snapshot

#: (command line, whether the fast path takes it); a user's edit before a step is in EDITS.
STEPS: list[tuple[list[str], bool]] = [
    (["rewind", "9", "--yes"], True),  # no such rewind point
    (["--json", "rewind", "9", "--yes"], True),
    (["rewind", "nope", "-y"], True),  # no such turn id
    (["rewind", "2", "--yes", "--dry-run"], True),
    (["--json", "rewind", "1", "--dry-run"], True),
    (["rewind", "2", "--yes"], True),
    (["undo"], True),
    (["redo", "--json"], True),
    (["undo", "--session", "default", "--json"], True),
    (["rewind", "1", "--yes"], True),  # a conflict with the user's edit: exit 1
    (["undo", "--dry-run"], True),
    (["undo"], True),
    (["--json", "rewind", "1", "--yes", "--on-conflict=markers"], True),
    (["undo", "zzzz"], True),  # no such operation
    (["-s", "other", "undo"], True),  # no such session
    (["rewind", "1", "--yes", "--mode", "sideways"], False),  # Click's usage error
    (["rewind", "1", "2", "--yes"], False),
    (["rewind", "1", "--yes", "--path", "a.txt"], False),
    (["rewind", "--yes", "--force", "--mode=code", "1"], True),
    (["redo"], True),  # the last undo is older than that rewind: nothing to redo here
]
#: Edits a person makes just before the step at that index (the same in both copies).
EDITS = {9: ("a.txt", "alpha\nthe user's own line\n")}


def _history(root: Path) -> None:
    """Three turns: a.txt changed twice, b.txt created, c.txt deleted."""
    (root / "a.txt").write_text("one\n")
    (root / "c.txt").write_text("doomed\n")
    env = hermetic_env()
    turns = [
        ("first", [("a.txt", "two\n")]),
        ("second", [("b.txt", "new file\n"), ("c.txt", None)]),
        ("third", [("a.txt", "alpha\n")]),
    ]
    run = lambda *args: run_snapstore(list(args), cwd=root, env=env)  # noqa: E731
    assert run("init").returncode == 0
    for prompt, writes in turns:
        assert run("begin", "--prompt", prompt).returncode == 0
        for rel, text in writes:
            assert run("pre-write", rel).returncode == 0
            if text is None:
                (root / rel).unlink()
            else:
                (root / rel).write_text(text)
            assert run("post-write", rel).returncode == 0
        assert run("end").returncode == 0


def test_rewind_undo_and_redo_print_the_same_through_both_front_ends(tmp_path: Path) -> None:
    fast_root, click_root = tmp_path / "fast" / "ws", tmp_path / "click" / "ws"
    fast_root.mkdir(parents=True)
    _history(fast_root)
    shutil.copytree(fast_root, click_root, symlinks=True)
    env = hermetic_env()
    for i, (args, taken) in enumerate(STEPS):
        assert (fast.parse(args) is not None) == taken, args
        if i in EDITS:
            rel, text = EDITS[i]
            for root in (fast_root, click_root):
                (root / rel).write_text(text)
        fast_done = run_snapstore(args, cwd=fast_root, env=env)
        click_done = run_snapstore(args, cwd=click_root, env=env, click=True)
        said = [
            (d.returncode, d.stdout, d.stderr.replace(str(root), "ROOT"))
            for d, root in ((fast_done, fast_root), (click_done, click_root))
        ]
        assert said[0] == said[1], args
        assert snapshot(fast_root) == snapshot(click_root), args
    codes = [run_snapstore(a, cwd=fast_root, env=env).returncode for a in (["log"], ["ops"])]
    assert codes == [0, 0]


@pytest.mark.parametrize(
    "args",
    [
        ["rewind"],  # the picker
        ["rewind", "1", "--yes", "--resume"],
        ["rewind", "--finish"],
        ["rewind", "1", "-yn"],
        ["undo", "a", "b"],
        ["undo", "--on-conflict"],
        ["undo", "--on-conflict", "mine"],
        ["rewind", "1", "--yes", "--help"],
        ["--debug", "undo"],
    ],
)
def test_what_the_fast_path_does_not_read_goes_to_click(args: list[str]) -> None:
    assert fast.parse(args) is None
