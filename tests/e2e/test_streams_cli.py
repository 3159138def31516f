"""Where output goes: results on stdout, notes and progress on stderr, and a reader that goes
away (``| head``) ends the command quietly, as git does (docs/cli.md, "Output for people").

A closed pipe is only seen by a real process writing to a real pipe, so these tests run the
console script: its stdout is a pipe whose reader is closed before the command starts (every
write it makes fails with EPIPE, whatever its size), or a shell pipeline into ``head -1``.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from snapstore import Store

from ..support import Clock, agent_turn, hermetic_env, snapstore_bin, write

#: A file long enough that its diff fills a pipe's buffer (64 KiB) several times over.
LINES = 6000


def build(root: Path) -> Path:
    """A store whose turns print pages: a long file changed twice, a rewind and its undo."""
    root.mkdir(exist_ok=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    long = "".join(f"line number {i}\n" for i in range(LINES))
    with Store.init(root, clock=Clock()) as store:
        agent_turn(store, "make the long file", {"long.txt": long})
        agent_turn(store, "shout", {"long.txt": long.upper()})
        agent_turn(store, "a small one", {"small.txt": "x\n"})
        store.rewind(1)
        store.undo()
    return root


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One such store for the tests that only read it (dry runs included)."""
    return build(tmp_path_factory.mktemp("streams") / "ws")


def closed_pipe(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``snapstore ARGS`` whose stdout is a pipe nobody reads: its reader is closed first."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(
            [*snapstore_bin(), *args],
            cwd=cwd,
            env=hermetic_env(),
            stdin=subprocess.DEVNULL,
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    finally:
        os.close(write_end)


#: Every command that can print more than a screen, and its exit code when nobody reads it:
#: the fast path's (``rewind TURN``, ``undo``, ``scan``, the capture commands) and Click's.
PAGERS = [
    (["log"], 0),
    (["log", "--all"], 0),
    (["--json", "log"], 0),
    (["show", "2"], 0),
    (["diff", "2"], 0),
    (["diff", "3..1"], 0),
    (["diff", "2", "--worktree"], 0),
    (["--json", "diff", "2"], 0),
    (["cat", "2", "long.txt"], 0),
    (["ops"], 0),
    (["sessions"], 0),
    (["status"], 0),
    (["doctor"], 0),
    (["fsck"], 0),
    (["rewind", "2", "--dry-run"], 0),
    (["rewind", "2", "--dry-run", "--json"], 0),
    (["switch", "3", "--dry-run"], 0),
    (["redo", "--dry-run"], 0),
    (["--json", "scan"], 0),
    (["--help"], 0),
    (["rewind", "--help"], 0),
    (["hook", "install", "--help"], 0),
]


@pytest.mark.parametrize(("args", "code"), PAGERS, ids=[" ".join(a) for a, _ in PAGERS])
def test_a_reader_that_is_gone_ends_the_command_quietly(ws: Path, args: list[str], code: int):
    """Exit 0 and no word about the pipe (before, it was "internal error: BrokenPipeError",
    or exit 1 and nothing, or Python's "Exception ignored"): stderr holds only the notes the
    command always gives ("redoing ...")."""
    done = closed_pipe(ws, *args)
    assert done.returncode == code, done.stderr
    assert "error" not in done.stderr.lower() and "pipe" not in done.stderr.lower(), done.stderr
    assert all(line.startswith("snapstore: ") for line in done.stderr.splitlines())


def test_a_move_keeps_its_exit_code_when_nobody_reads_it(root: Path) -> None:
    """The move is made before its lines are printed: a rewind that left a conflict exits 1
    with or without a reader."""
    ws = build(root)
    write(ws, "long.txt", "mine\n")  # the user's edit clashes with the turn's
    done = closed_pipe(ws, "rewind", "2", "--yes")
    assert (done.returncode, done.stderr) == (1, "")
    with Store.open(ws) as store:
        assert store.operations()[0].conflicts == ["long.txt"]


@pytest.mark.parametrize("args", ["diff 2", "show 2", "diff 3..1", "cat 2 long.txt", "log"])
def test_head_takes_one_line_and_the_command_ends_quietly(ws: Path, args: str) -> None:
    """What the issue met: `snapstore diff 3 | head -1` printed an internal error, exit 1."""
    script = f'{" ".join(snapstore_bin())} {args} | head -1; echo "exit ${{PIPESTATUS[0]}}" >&2'
    done = subprocess.run(
        ["bash", "-c", script],
        cwd=ws,
        env=hermetic_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.stderr == "exit 0\n"
    assert done.stdout.count("\n") == 1


def test_results_go_to_stdout_and_notes_to_stderr(cli, root: Path) -> None:
    """init, hook install, begin, pre-write, post-write, end, scan, gc and fsck print their
    results on stdout: `snapstore fsck > report.txt` holds the report."""
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    write(root, "app.py", "print('hi')\n")
    expected = {
        ("init",): "Created the snapstore store in",
        ("hook", "install", "claude-code"): "Added snapstore hooks to",
        ("begin", "--prompt", "edit"): "begun in session default",
        ("pre-write", "app.py"): "captured 1 path(s) in turn",
        ("post-write", "app.py"): "recorded 1 path(s) in turn",
        ("end",): " ended with ",
        ("scan",): "no changes (",
        ("gc",): "removed 0 turn(s)",
        ("fsck",): "fsck ok:",
        ("status",): "workspace  ",
    }
    for args, said in expected.items():
        done = cli(*args)
        assert done.code == 0, (args, done.stderr)
        assert said in done.stdout and done.stderr == "", (args, done.stdout, done.stderr)
    report = root / "report.txt"
    subprocess.run(
        f"{' '.join(snapstore_bin())} fsck > {report}",
        shell=True,
        cwd=root,
        env=hermetic_env(),
        check=True,
    )
    assert report.read_text().startswith("fsck ok: ")


def test_a_path_left_out_is_a_warning_on_stderr(cli, root: Path) -> None:
    """What could not be captured is said on stderr, as the hooks say it; the result stays
    on stdout."""
    assert cli("init", "--no-track-shell").code == 0
    write(root.parent, "outside.txt", "x\n")
    write(root, "in.txt", "x\n")
    done = cli("pre-write", "in.txt", "../outside.txt")
    assert done.code == 0
    assert done.stdout.startswith("captured 1 path(s) in turn ")
    assert done.stderr.startswith("snapstore: skipped ") and "outside the workspace" in done.stderr
