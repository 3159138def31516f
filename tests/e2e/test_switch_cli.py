"""End to end: `snapstore switch` back, forward and across branches, and `undo` that names
the session it chose and keeps every turn on the branch."""

from __future__ import annotations

from pathlib import Path

from ..support import read, snapshot, write
from .test_cli import REWIND_KEYS


def _turn(cli, root: Path, prompt: str, rel: str, data: str, session: str = "default") -> str:
    begin = cli("--json", "begin", "--prompt", prompt, "--session", session)
    assert begin.code == 0, begin.stderr
    assert cli("pre-write", rel, "--session", session).code == 0
    write(root, rel, data)
    assert cli("post-write", rel, "--session", session).code == 0
    assert cli("end", "--session", session).code == 0
    return begin.json["turn"]


def test_switch_back_forward_and_across_through_the_cli(cli, root: Path) -> None:
    assert cli("init").code == 0
    a = _turn(cli, root, "first", "a.txt", "a\n")
    after_a = snapshot(root)
    b = _turn(cli, root, "second", "b.txt", "b\n")
    after_b = snapshot(root)
    back = cli("--json", "switch", "2", "--yes")  # right after the first turn
    assert back.code == 0 and set(back.json) == REWIND_KEYS and back.json["new_head"] == a
    assert snapshot(root) == after_a
    everything = cli("--json", "log", "--all").json
    assert [(p["turn"], p["n"], p["state"]) for p in everything] == [
        (b, None, "rewound"),
        (a, 1, "closed"),
    ]
    forward = cli("switch", b, "--yes")  # by id: redo
    assert forward.code == 0 and "switched" in forward.stdout
    assert snapshot(root) == after_b
    cli("rewind", "1", "--yes")
    c = _turn(cli, root, "another way", "c.txt", "c\n")
    assert cli("--json", "switch", b, "--dry-run").json["dry_run"] is True
    assert read(root, "c.txt") == b"c\n"  # a dry run writes nothing
    across = cli("--json", "switch", b, "--yes")  # back to the fork, then forward
    assert across.code == 0 and across.json["turns_reverted"] == [c]
    assert snapshot(root) == after_b
    unknown = cli("switch", "ffffffffffff", "--yes")
    assert unknown.code == 4 and "unknown turn" in unknown.stderr


def test_undo_names_the_session_it_chose_and_keeps_new_turns(cli, root: Path) -> None:
    assert cli("init").code == 0
    write(root, "f.txt", "0\n")
    _turn(cli, root, "one", "f.txt", "1\n", session="claude-code/abc")
    assert cli("rewind", "1", "--yes", "--session", "claude-code/abc").code == 0
    newer = _turn(cli, root, "two", "g.txt", "g\n", session="claude-code/abc")
    undone = cli("--json", "undo")  # no --session: the newest rewind in the store
    assert undone.code == 0 and undone.json["session"] == "claude-code/abc"
    assert "of session claude-code/abc" in undone.stderr
    assert read(root, "f.txt") == b"1\n" and read(root, "g.txt") == b"g\n"
    points = cli("--json", "log", "--session", "claude-code/abc").json
    assert [p["turn"] for p in points][1] == newer  # the new turn is still a rewind point
    assert points[0]["turn"] == undone.json["new_head"]
    assert cli("rewind", "2", "--yes", "--session", "claude-code/abc").code == 0
    assert read(root, "f.txt") == b"0\n" and read(root, "g.txt") is None
