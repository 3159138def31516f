"""What the CLI says of the repository an operation moved, through the real hooks and git:
the way back from a rewind that moves a branch (the ref that keeps the agent's commit, a
`git log` to see it, the command that moves it back, in the rewind's output, `ops` and
`show`); and a ref the agent pushed, which no rewind or undo moves, with the rewind saying
that snapstore cannot take back a push. Hermetic: fixed clock (hermetic_env) and fixed git
identity and dates (tests/support/gitrepo.py), so every commit id is the same in every
run; only the operation ids (the store's own random id) are read from `--json`."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

from snapstore.ops.gitplan import PUSHED

from ..support.gitrepo import git, init, state
from .test_git_layouts_cli import _turn

SESSION = ("--session", "claude-code/s")


def _git_block(stdout: str) -> list[str]:
    """The git lines of a rewind's, undo's or redo's output (kinds git, conflict, note)."""
    return [line for line in stdout.splitlines() if line.startswith(("  git ", "  note "))]


def _way_back(op: str, ref: str, command: str) -> str:
    return (
        f"what the refs pointed at is kept under refs/snapstore/{op}/ (`git log "
        f"refs/snapstore/{op}/{ref}`); `snapstore {command} {op}` moves them back"
    )


def _newest_op(cli) -> str:
    return cli("--json", "ops").json[0]["id"]


def _ops_lines(cli, op: str) -> list[str]:
    listed = cli("ops")
    assert listed.code == 0, listed.stderr
    return [line for line in listed.stdout.splitlines() if line.startswith(f"{op[:8]}  git: ")]


def _show_lines(cli, op: str) -> list[str]:
    shown = cli("show", op, *SESSION)
    assert shown.code == 0, shown.stderr
    as_json = cli("--json", "show", op, *SESSION)
    lines = [line for line in shown.stdout.splitlines() if line.startswith("  git  ")]
    assert [f"  git  {text}" for text in as_json.json["git"]] == lines  # JSON says the same
    return lines


def _committed(cli, root: Path) -> tuple[str, str]:
    """A repository whose agent turn committed on main; main before and after the turn."""
    init(root)
    assert cli("init", "--track-shell").code == 0
    (root / "notes.txt").write_text("notes\nuser edit\n")  # the user's uncommitted work
    main = git(root, "rev-parse", "main")
    _turn(cli, root, "echo agent >> a.txt && git commit -qm 'the agent commits' a.txt", {})
    agent = git(root, "rev-parse", "main")
    assert agent != main
    return main, agent


def test_a_rewind_that_moves_a_branch_says_where_its_commits_are_kept(cli, root: Path) -> None:
    main, agent = _committed(cli, root)
    rewound = cli("rewind", "1", "--yes", *SESSION)
    assert rewound.code == 0, rewound.stderr
    op = _newest_op(cli)
    moved = f"refs/heads/main: {agent[:7]} -> {main[:7]} (kept as refs/snapstore/{op}/heads/main)"
    said = [moved, "the index put back", _way_back(op, "heads/main", "undo")]
    assert _git_block(rewound.stdout) == [
        f"  git       {said[0]}",
        f"  git       {said[1]}",
        f"  note      {said[2]}",
    ]
    assert f"undo it with: snapstore undo {op}" in rewound.stdout.splitlines()
    assert _ops_lines(cli, op) == [f"{op[:8]}  git: {text}" for text in said]
    assert _show_lines(cli, op) == [f"  git  {text}" for text in said]
    # The ref named is there, on the agent's commit, and the `git log` named shows it.
    assert git(root, "rev-parse", "main") == main
    assert git(root, "rev-parse", f"refs/snapstore/{op}/heads/main") == agent
    assert git(root, "log", "-1", "--format=%s", f"refs/snapstore/{op}/heads/main") == (
        "the agent commits"
    )
    # And the command named moves it back.
    undone = cli("undo", op)
    assert undone.code == 0, undone.stderr
    assert git(root, "rev-parse", "main") == agent


def test_an_undo_names_the_redo_and_a_redo_the_undo_that_move_the_refs_back(
    cli, root: Path
) -> None:
    """`snapstore undo UNDO` is refused (an undo is no rewind): an undo's way back is redo."""
    main, agent = _committed(cli, root)
    assert cli("rewind", "1", "--yes", *SESSION).code == 0
    undone = cli("undo")
    assert undone.code == 0, undone.stderr
    undo = _newest_op(cli)
    said = [
        f"refs/heads/main: {main[:7]} -> {agent[:7]} (kept as refs/snapstore/{undo}/heads/main)",
        "the index put back",
        _way_back(undo, "heads/main", "redo"),
    ]
    assert _git_block(undone.stdout) == [
        f"  git       {said[0]}",
        f"  git       {said[1]}",
        f"  note      {said[2]}",
    ]
    assert _ops_lines(cli, undo) == [f"{undo[:8]}  git: {text}" for text in said]
    assert _show_lines(cli, undo) == [f"  git  {text}" for text in said]
    assert git(root, "rev-parse", f"refs/snapstore/{undo}/heads/main") == main

    redone = cli("redo", undo)  # the command named
    assert redone.code == 0, redone.stderr
    assert git(root, "rev-parse", "main") == main
    redo = _newest_op(cli)
    assert _git_block(redone.stdout)[-1] == f"  note      {_way_back(redo, 'heads/main', 'undo')}"
    assert git(root, "rev-parse", f"refs/snapstore/{redo}/heads/main") == agent
    assert cli("undo", redo).code == 0  # the command named
    assert git(root, "rev-parse", "main") == agent


def test_an_undo_that_stands_as_a_turn_names_the_rewind_that_takes_it_back(cli, root: Path) -> None:
    main, agent = _committed(cli, root)
    assert cli("rewind", "1", "--yes", *SESSION).code == 0
    _turn(cli, root, "echo more >> b.txt", {})  # the session went on: the undo is a turn
    undone = cli("undo")
    assert undone.code == 0, undone.stderr
    undo = _newest_op(cli)
    way = _way_back(undo, "heads/main", "rewind")
    assert _git_block(undone.stdout)[-1] == f"  note      {way}"
    assert _ops_lines(cli, undo)[-1] == f"{undo[:8]}  git: {way}"
    assert _show_lines(cli, undo)[-1] == f"  git  {way}"
    assert git(root, "rev-parse", "main") == agent
    assert cli("redo", undo).code == 2  # no redo takes this one back
    rewound = cli("rewind", undo, "--yes")  # the command named
    assert rewound.code == 0, rewound.stderr
    assert git(root, "rev-parse", "main") == main


def test_redo_with_no_git_puts_the_files_back_and_leaves_the_repository(cli, root: Path) -> None:
    _, agent = _committed(cli, root)
    assert cli("rewind", "1", "--yes", *SESSION).code == 0
    assert cli("undo").code == 0
    after = state(root)
    redone = cli("--json", "redo", "--no-git")
    assert redone.code == 0, redone.stderr
    assert redone.json["git"] is None and redone.json["restored"] == ["a.txt"]
    assert (root / "a.txt").read_text() == "a1\na2\n"  # the file went back
    now = state(root)
    for key in ("head", "branch", "refs", "index"):  # the repository did not
        assert now[key] == after[key], key
    assert git(root, "rev-parse", "main") == agent
    redo = redone.json["undo_id"]
    assert git(root, "for-each-ref", f"refs/snapstore/{redo}/") == ""  # nothing kept: no move


def _logging_git(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """A `git` first on PATH that logs each command line, then runs the real git."""
    real = shutil.which("git")
    assert real is not None
    folder = tmp_path / "bin"
    folder.mkdir()
    log = tmp_path / "git.log"
    wrapper = folder / "git"
    wrapper.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> {log}\nexec {real} "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    return {"PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"}, log


def _remote(bare: Path) -> dict[str, object]:
    """What a bare remote holds: its refs, and every push it received (its hook's log)."""
    received = bare / "received.log"
    return {
        "refs": git(bare, "for-each-ref", "--format=%(refname) %(objectname)"),
        "received": received.read_text() if received.exists() else "",
    }


def test_a_pushed_ref_stays_and_the_rewind_says_it_cannot_take_back_the_push(
    cli, root: Path, tmp_path: Path
) -> None:
    bare = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    hook = bare / "hooks" / "pre-receive"  # logs every push that reaches the remote
    hook.write_text(f"#!/bin/sh\ncat >> {bare / 'received.log'}\n")
    hook.chmod(0o755)
    init(root)
    git(root, "remote", "add", "origin", str(bare))
    git(root, "push", "-q", "-u", "origin", "main")
    assert cli("init", "--track-shell").code == 0
    (root / "notes.txt").write_text("notes\nuser edit\n")
    before = state(root)
    _turn(
        cli,
        root,
        "echo agent >> a.txt && git commit -qm agent a.txt && git push -q origin main"
        " && git checkout -q -b topic && echo t >> b.txt && git commit -qam topic"
        " && git push -q -u origin topic",
        {},
    )
    after, pushed = state(root), _remote(bare)
    main, topic = git(root, "rev-parse", "main"), git(root, "rev-parse", "topic")
    assert git(bare, "rev-parse", "main") == main and git(bare, "rev-parse", "topic") == topic
    tracking = {"refs/remotes/origin/main": main, "refs/remotes/origin/topic": topic}
    path, calls = _logging_git(tmp_path)

    dry = cli("--json", "rewind", "1", "--yes", "--dry-run", *SESSION, env=path)
    rewound = cli("--json", "rewind", "1", "--yes", *SESSION, env=path)
    assert rewound.code == 0, rewound.stderr
    for result in (dry.json, rewound.json):
        remote = [r for r in result["git"]["refs"] if r["name"].startswith("refs/remotes/")]
        assert remote == [
            {"name": name, "before": oid, "after": oid, "status": "remote", "reason": PUSHED}
            for name, oid in sorted(tracking.items())
        ]
    assert rewound.json["git"]["ok"] and rewound.json["git"]["head_after"] == "refs/heads/main"
    assert not [k for k in rewound.json["git"]["kept"] if "/remotes/" in k]
    for name, oid in tracking.items():  # the remote-tracking refs stay where the push left them
        assert git(root, "rev-parse", name) == oid
    now = state(root)
    refs = dict(line.split() for line in before["refs"]) | tracking  # type: ignore[attr-defined]
    assert now["refs"] == [f"{name} {oid}" for name, oid in sorted(refs.items())]
    assert {k: v for k, v in now.items() if k != "refs"} == {
        k: v for k, v in before.items() if k != "refs"
    }  # the rest is as before the turn: on main, the user's edit uncommitted
    assert _remote(bare) == pushed  # the remote holds what the agent pushed, and got nothing more

    undone = cli("--json", "undo", env=path)
    assert undone.code == 0, undone.stderr
    assert state(root) == after
    assert _remote(bare) == pushed

    # For people: the rewind says it, for each ref the push moved, and `ops` says it too.
    again = cli("rewind", "1", "--yes", *SESSION, env=path)
    assert again.code == 0, again.stderr
    op = _newest_op(cli)
    for name in sorted(tracking):
        assert f"  note      {name}: {PUSHED}" in again.stdout.splitlines()
        assert f"{op[:8]}  git: {name}: {PUSHED}" in _ops_lines(cli, op)
    assert cli("undo", env=path).code == 0
    assert state(root) == after
    assert _remote(bare) == pushed
    ran = [line.split() for line in calls.read_text().splitlines()]
    assert any("update-ref" in args for args in ran), ran  # the log is snapstore's git
    assert not [args for args in ran if "push" in args], ran  # and it never pushed
