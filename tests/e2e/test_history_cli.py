"""End to end: reading history from the command line. `sessions`, `ops`, `cat`, `diff A..B`,
`diff TURN --worktree`, id prefixes for turns and operations, and --session completion."""

from __future__ import annotations

import subprocess
from pathlib import Path

from snapstore import Store
from snapstore.core.records import CLOSED, REWIND, RewindOp, Session, Turn

from ..support import FIXED_NOW, hermetic_env, read, snapstore_bin, write
from ..support.transcripts import pose
from .test_cli import _one_error_line


def _turn(cli, root: Path, prompt: str, edits: dict[str, bytes | None], session: str) -> str:
    begin = cli("--json", "begin", "--prompt", prompt, "--session", session)
    assert begin.code == 0, begin.stderr
    for rel, data in edits.items():
        assert cli("pre-write", "--tool", "Write", rel, "--session", session).code == 0
        if data is None:
            (root / rel).unlink()
        else:
            write(root, rel, data)
        assert cli("post-write", rel, "--session", session).code == 0
    assert cli("end", "--session", session).code == 0
    return begin.json["turn"]


def _bytes(root: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    """The real command, its stdout kept as bytes (``cat`` prints a file's exact bytes)."""
    return subprocess.run(
        [*snapstore_bin(), *args], cwd=root, capture_output=True, env=hermetic_env(), timeout=120
    )


def test_sessions_lists_agent_turns_head_and_whether_it_runs(cli, root: Path) -> None:
    assert cli("init").code == 0
    claude = "claude-code/7c1e"
    first = _turn(cli, root, "one", {"a.txt": b"1\n"}, claude)
    second = _turn(cli, root, "two", {"a.txt": b"2\n"}, claude)
    assert cli("rewind", "1", "--yes", "--session", claude).code == 0
    running = cli("--json", "begin", "--prompt", "thinking", "--session", "mine").json["turn"]

    listed = cli("sessions")
    assert listed.code == 0 and listed.stderr == ""
    assert listed.stdout == (
        "session           turns         last active  head        open turn  running\n"
        f"claude-code/7c1e  1 (2 in all)  just now     1 {first[:8]}  -          no\n"
        f"mine              1             just now     1 {running[:8]}  "
        f"{running[:8]}   yes\n"
    )
    data = cli("--json", "sessions").json
    assert data == [
        {
            "session": claude,
            "agent": "claude-code",
            "agent_session": "7c1e",
            "created": "2026-01-01T00:00:00+00:00",
            "last_activity": "2026-01-01T00:00:00+00:00",
            "turns": 1,
            "all_turns": 2,
            "head": first,
            "head_n": 1,
            "open_turn": None,
            "running": False,
        },
        {
            "session": "mine",
            "agent": "",
            "agent_session": "",
            "created": "2026-01-01T00:00:00+00:00",
            "last_activity": "2026-01-01T00:00:00+00:00",
            "turns": 1,
            "all_turns": 1,
            "head": running,
            "head_n": 1,
            "open_turn": running,
            "running": True,
        },
    ]
    assert second not in listed.stdout  # taken back: counted in all, not the head


def test_a_session_its_agent_runs_now_is_running_while_that_process_lives(
    cli, root: Path, tmp_path: Path
) -> None:
    """Claude Code's registry of running sessions (``~/.claude/sessions/<pid>.json``) names
    the session: running while that pid lives, not once the process is gone."""
    assert cli("init").code == 0
    session = "claude-code/7c1e"
    _turn(cli, root, "one", {"a.txt": b"1\n"}, session)
    home = tmp_path / "home"
    registry = home / ".claude" / "sessions"
    registry.mkdir(parents=True)
    agent = pose(tmp_path, "claude")  # a live process the running check takes for Claude Code
    try:
        entry = registry / f"{agent.pid}.json"
        entry.write_text(f'{{"pid": {agent.pid}, "sessionId": "7c1e", "kind": "interactive"}}')
        listed = cli("--json", "sessions", env={"HOME": str(home)})
        assert listed.code == 0 and [s["running"] for s in listed.json] == [True]
    finally:
        agent.kill()
        agent.wait()
    listed = cli("--json", "sessions", env={"HOME": str(home)})
    assert listed.code == 0 and [s["running"] for s in listed.json] == [False]


def test_the_most_recent_session_note_only_when_there_are_several(cli, root: Path) -> None:
    assert cli("init").code == 0
    _turn(cli, root, "one", {"a.txt": b"1\n"}, "claude-code/aaa")
    alone = cli("--json", "log")
    assert alone.code == 0 and alone.stderr == "" and alone.json[0]["session"] == "claude-code/aaa"
    _turn(cli, root, "two", {"b.txt": b"2\n"}, "gemini-cli/bbb")
    several = cli("--json", "log")
    assert several.code == 0 and several.json[0]["session"] == "gemini-cli/bbb"
    assert several.stderr == (
        "snapstore: session gemini-cli/bbb (the most recent; choose one with --session)\n"
    )


def test_session_completion_lists_the_stores_sessions(cli, root: Path) -> None:
    assert cli("init").code == 0
    _turn(cli, root, "one", {"a.txt": b"1\n"}, "claude-code/aaa")
    _turn(cli, root, "two", {"b.txt": b"2\n"}, "codex/bbb")
    for words, index in (("snapstore log --session ", "3"), ("snapstore --session c", "2")):
        done = cli(
            env={"_SNAPSTORE_COMPLETE": "bash_complete", "COMP_WORDS": words, "COMP_CWORD": index}
        )
        assert done.code == 0 and done.stderr == ""
        assert sorted(done.stdout.splitlines()) == ["plain,claude-code/aaa", "plain,codex/bbb"]


def test_ops_lists_rewinds_switches_and_undos_newest_first(cli, root: Path) -> None:
    assert cli("init").code == 0
    write(root, "a.txt", "0\n")
    first = _turn(cli, root, "one", {"a.txt": b"1\n"}, "default")
    second = _turn(cli, root, "two", {"a.txt": b"2\n", "b.txt": b"b\n"}, "default")
    rewound = cli("--json", "rewind", "1", "--yes").json["undo_id"]
    undone = cli("--json", "undo", rewound[:5])  # an operation by a unique prefix
    assert undone.code == 0, undone.stderr
    undo_id = undone.json["new_head"]  # nothing came after: the head went back to `second`
    assert undo_id == second
    switched = cli("--json", "switch", first[:7], "--yes")  # a turn by a unique prefix
    assert switched.code == 0 and switched.json["new_head"] == first
    ops = cli("--json", "ops").json
    assert [(o["action"], o["target"], o["status"]) for o in ops] == [
        ("switch", first, "applied"),
        ("undo", rewound, "applied"),
        ("rewind", second, "applied"),
    ]
    switch_id, undo_op, _ = (o["id"] for o in ops)
    assert ops[0]["target_n"] == 1 and ops[0]["files"] == ["a.txt", "b.txt"]
    assert ops[1]["undoes"] == rewound and ops[2]["undone_by"] == undo_op
    assert set(ops[0]) == {
        "id",
        "action",
        "session",
        "time",
        "target",
        "target_n",
        "mode",
        "status",
        "files",
        "conflicts",
        "errors",
        "new_head",
        "undoes",
        "undone_by",
        "redoes",
        "redone_by",
        "git",
    }
    human = cli("ops")
    assert human.code == 0 and human.stderr == ""
    assert human.stdout == (
        "op        when      action  target    files  left  undone by  session\n"
        f"{switch_id[:8]}  just now  switch  {first[:8]}  2      0     -          default\n"
        f"{undo_op[:8]}  just now  undo    {rewound[:8]}  2      0     -          default\n"
        f"{rewound[:8]}  just now  rewind  {second[:8]}  2      0     {undo_op[:8]}   default\n"
    )
    assert cli("--json", "ops", "--session", "other").code == 4  # an unknown session
    _one_error_line(cli("undo", "zz"), 4, "unknown operation 'zz' (see `snapstore ops`)")


def _crafted(root: Path) -> None:
    """A store whose two turns and two operations have ids that share a prefix."""
    with Store.init(root) as store:

        def put(tx) -> None:
            tx.put_session(Session("default", FIXED_NOW, turns=2))
            tx.put_turn(Turn("abc000000001", "default", 1, state=CLOSED, created=FIXED_NOW))
            tx.put_turn(Turn("abc000000002", "default", 2, parent="abc000000001", state=CLOSED))
            tx.set_head("default", "abc000000002")
            for seq, op_id, status in (
                (3, "fee000000001", "applied"),
                (4, "fee000000002", "planned"),
            ):
                op = RewindOp("default", "abc000000002", "both", status=status)
                tx.put_turn(Turn(op_id, "default", seq, kind=REWIND, state=CLOSED, op=op))

        store.repo.write(put)


def test_an_ambiguous_prefix_lists_the_candidates(cli, root: Path) -> None:
    _crafted(root)
    for args in (("show", "abc"), ("cat", "abc", "x.txt"), ("diff", "abc..1")):
        _one_error_line(cli(*args), 2, "turn prefix 'abc' is ambiguous: abc000000001, abc000000002")
    _one_error_line(
        cli("undo", "fee"), 2, "operation prefix 'fee' is ambiguous: fee000000001, fee000000002"
    )
    listed = cli("ops").stdout.splitlines()
    assert [line.split()[2:5] for line in listed[1:]] == [
        ["rewind", "(unfinished)", "abc00000"],
        ["rewind", "abc00000", "0"],
    ]
    shown = cli("show", "abc000000001")
    assert shown.code == 0 and shown.stdout.startswith("turn 2 abc000000001  [closed]")


def test_cat_prints_a_file_as_a_turn_left_it_or_found_it(cli, root: Path) -> None:
    assert cli("init").code == 0
    write(root, "app.py", "v0\n")
    first = _turn(
        cli, root, "one", {"app.py": b"v1\n", "logo.png": b"\x89PNG\0\x01\xff"}, "default"
    )
    _turn(cli, root, "two", {"notes.md": b"notes\n"}, "default")
    _turn(cli, root, "three", {"app.py": None}, "default")
    assert cli("begin", "--prompt", "four").code == 0  # app.py comes back, with a link to it
    assert cli("pre-write", "app.py", "link").code == 0
    write(root, "app.py", "v4\n")
    (root / "link").symlink_to("app.py")
    assert cli("post-write", "app.py", "link").code == 0
    assert cli("end").code == 0

    def cat(*args: str) -> bytes:
        done = _bytes(root, "cat", *args)
        assert done.returncode == 0 and done.stderr == b"", done.stderr
        return done.stdout

    assert cat(first, "app.py") == b"v1\n"
    assert cat(first, "app.py", "--before") == b"v0\n"  # as the turn found it
    assert cat("3", "app.py") == b"v1\n"  # turn two did not touch it: turn one left it so
    assert cat("2", "app.py", "--before") == b"v1\n"  # the deleted file, as three found it
    assert cat("1", "app.py") == b"v4\n"
    assert cat("2", "logo.png") == b"\x89PNG\0\x01\xff"  # binary, byte for byte
    assert cat("1", "link") == b"app.py"  # a symlink: its target
    deleted = cli("cat", "2", "app.py")
    _one_error_line(deleted, 2, "app.py did not exist after turn")
    assert deleted.stdout == ""
    _one_error_line(cli("cat", "1", "app.py", "--before"), 2, "app.py did not exist before turn")
    _one_error_line(cli("cat", "4", "notes.md"), 2, "notes.md was never recorded at or before turn")
    _one_error_line(cli("cat", "1", "../outside.txt"), 2, "outside the workspace")
    _one_error_line(cli("cat", "ffffffffffff", "app.py"), 4, "unknown turn 'ffffffffffff'")
    data = cli("--json", "cat", "4", "logo.png").json
    assert data == {
        "turn": first,
        "path": "logo.png",
        "before": False,
        "kind": "file",
        "mode": 0o644,
        "size": 7,
        "text": None,
        "base64": "iVBORwAB/w==",
    }


def test_diff_between_two_turns_across_a_rewinds_branches(cli, root: Path) -> None:
    assert cli("init").code == 0
    write(root, "app.py", "a\nb\n")
    base = _turn(cli, root, "base", {"app.py": b"a\nB\n"}, "default")
    left = _turn(cli, root, "left", {"app.py": b"a\nB\nleft\n", "left.txt": b"L\n"}, "default")
    assert cli("rewind", "1", "--yes").code == 0  # take `left` back
    right = _turn(cli, root, "right", {"right.txt": b"R\n"}, "default")

    done = cli("diff", f"{left}..{right}")
    assert done.code == 0 and done.stderr == ""
    assert done.stdout == (
        "diff --git a/app.py b/app.py\n"
        "--- a/app.py\n"
        "+++ b/app.py\n"
        "@@ -1,3 +1,2 @@\n"
        " a\n"
        " B\n"
        "-left\n"
        "diff --git a/left.txt b/left.txt\n"
        "deleted file mode 100644\n"
        "--- a/left.txt\n"
        "+++ /dev/null\n"
        "@@ -1 +0,0 @@\n"
        "-L\n"
        "diff --git a/right.txt b/right.txt\n"
        "new file mode 100644\n"
        "--- /dev/null\n"
        "+++ b/right.txt\n"
        "@@ -0,0 +1 @@\n"
        "+R\n"
    )
    data = cli("--json", "diff", f"{base[:8]}..1").json  # an id prefix and a number
    assert (data["from"], data["to"], data["session"], data["turns"]) == (
        base,
        right,
        "default",
        [right],
    )
    assert [(f["path"], f["status"], f["added"], f["removed"]) for f in data["files"]] == [
        ("right.txt", "added", 1, 0)
    ]
    assert data["files"][0]["diff"].endswith("+R\n")
    only = cli("--json", "diff", f"{left}..{right}", "left.txt").json["files"]
    assert [f["path"] for f in only] == ["left.txt"]
    _one_error_line(cli("diff", f"{base}..{right}", "app.py"), 2, "changed app.py")
    _one_error_line(cli("diff", "1.."), 2, "a range is two turns")
    _one_error_line(cli("diff", "ffffffffffff..1"), 4, "unknown turn")
    assert cli("diff", f"{right}..{right}").stdout == ""  # no change from a turn to itself


def test_diff_worktree_shows_everyones_edits_since_a_turn(cli, root: Path) -> None:
    assert cli("init").code == 0
    write(root, "app.py", "one\n")
    first = _turn(cli, root, "first", {"app.py": b"two\n"}, "default")
    _turn(cli, root, "second", {"new.txt": b"new\n"}, "default")
    write(root, "app.py", "mine\n")  # the user's own edit, never recorded
    write(root, "untracked.txt", "x\n")

    done = cli("diff", "2", "--worktree")
    assert done.code == 0 and done.stderr == ""
    assert done.stdout == (
        "diff --git a/app.py b/app.py\n"
        "--- a/app.py\n"
        "+++ b/app.py\n"
        "@@ -1 +1 @@\n"
        "-two\n"
        "+mine\n"
        "diff --git a/new.txt b/new.txt\n"
        "new file mode 100644\n"
        "--- /dev/null\n"
        "+++ b/new.txt\n"
        "@@ -0,0 +1 @@\n"
        "+new\n"
    )
    data = cli("--json", "diff", first, "--worktree", "app.py").json
    assert (data["turn"], data["worktree"]) == (first, True)
    assert [(f["path"], f["status"], f["added"], f["removed"]) for f in data["files"]] == [
        ("app.py", "modified", 1, 1)
    ]
    assert cli("diff", "1", "--worktree").stdout.startswith("diff --git a/app.py")
    (root / "new.txt").unlink()
    gone = cli("--json", "diff", "1", "--worktree").json["files"]
    assert [(f["path"], f["status"]) for f in gone] == [
        ("app.py", "modified"),
        ("new.txt", "deleted"),
    ]
    _one_error_line(cli("diff", "1", "--worktree", "../escape.txt"), 2, "outside the workspace")
    _one_error_line(cli("diff", "1", "--worktree", "untracked.txt"), 2, "never recorded")
    _one_error_line(cli("diff", "2..1", "--worktree"), 2, "--worktree takes one turn")
    assert read(root, "app.py") == b"mine\n"  # reading never writes
