"""End to end: what a rewind, switch or undo leaves in conflict can be finished later.

The rewind moves the head, so its numbers shift: the command that retries the paths
left is printed, ``status`` lists them, and it needs no turn number.
"""

from __future__ import annotations

from pathlib import Path

from ..support import read, write

BEFORE = "a\nb\nc\n"
AGENT = "a\nB\nc\n"
USER = "a\nX\nc\n"  # the user's edit of the agent's line: a conflict


def _turn(cli, root: Path) -> None:
    write(root, "f.txt", BEFORE)
    assert cli("init").code == 0
    assert cli("begin", "--prompt", "edit").code == 0
    assert cli("pre-write", "f.txt", "g.txt").code == 0
    write(root, "f.txt", AGENT)
    write(root, "g.txt", "new\n")
    assert cli("post-write", "f.txt", "g.txt").code == 0 and cli("end").code == 0
    write(root, "f.txt", USER)


def test_a_rewind_with_conflicts_is_finished_with_the_printed_command(cli, root: Path) -> None:
    _turn(cli, root)
    dry = cli("rewind", "1", "--dry-run")
    assert dry.code == 1 and "conflict  f.txt" in dry.stdout  # as the real run will
    rewound = cli("rewind", "1", "--yes")
    assert rewound.code == 1 and read(root, "g.txt") is None
    command = "snapstore rewind --finish --on-conflict markers"
    assert f"1 path(s) left; finish with: {command}" in rewound.stdout
    assert cli("rewind", "1", "--on-conflict", "markers", "--yes").code == 4  # numbers shifted

    status = cli("--json", "status")
    left = status.json["left"]
    assert [p["path"] for p in left["paths"]] == ["f.txt"] and left["finish"] == command
    assert left["action"] == "rewind"
    assert "finish with: " + command in cli("status").stdout

    marked = cli(*command.split()[1:])
    assert marked.code == 1 and "conflict  f.txt" in marked.stdout
    assert "finished: 1 file(s) changed" in marked.stdout  # the markers were written
    # what follows markers is the user's to resolve: `theirs` would overwrite their edit
    assert "theirs" not in marked.stdout and "finish with" not in marked.stdout
    assert "1 path(s) left for you: the conflict markers are in f.txt: edit them" in marked.stdout
    assert b"<<<<<<<" in read(root, "f.txt")
    assert "theirs" not in cli("status").stdout
    assert cli("--json", "status").json["left"]["finish"] is None
    [finish, _] = cli("--json", "ops").json
    assert finish["action"] == "finish" and finish["files"] == ["f.txt"]  # as it said: 1 file
    assert cli("ops").stdout.splitlines()[1].split()[5] == "1"
    # a second finish would merge the markers again, and nest them: it names them instead
    with_markers = read(root, "f.txt")
    for again in ((), ("--on-conflict", "markers")):
        refused = cli("rewind", "--finish", *again)
        assert refused.code == 2 and refused.stdout == "", refused.stdout
        assert refused.stderr == (
            "snapstore: the conflict markers are in f.txt: edit them "
            "(`--on-conflict theirs` takes the other side instead)\n"
        )
        assert read(root, "f.txt") == with_markers
    dry = cli("rewind", "--finish", "--on-conflict", "theirs", "--dry-run")
    assert dry.code == 0 and "would be restored  f.txt" in dry.stdout

    theirs = cli("--json", "rewind", "--finish", "--on-conflict", "theirs")
    assert theirs.code == 0 and theirs.json["restored"] == ["f.txt"], theirs.stderr
    assert read(root, "f.txt") == BEFORE.encode()
    assert cli("--json", "status").json["left"] is None
    nothing = cli("rewind", "--finish")
    assert nothing.code == 4 and "nothing left to finish" in nothing.stderr

    assert cli("undo").code == 0  # takes back the finish: the markers come back
    assert b"<<<<<<<" in read(root, "f.txt")


def test_what_an_undo_leaves_can_be_finished(cli, root: Path) -> None:
    _turn(cli, root)
    write(root, "f.txt", AGENT)
    assert cli("rewind", "1", "--yes").code == 0
    write(root, "g.txt", "the user's own g\n")  # the undo conflicts on g.txt
    undone = cli("undo")
    assert undone.code == 1 and "finish with:" in undone.stdout
    assert read(root, "f.txt") == AGENT.encode()
    assert cli("--json", "status").json["left"]["action"] == "undo"
    forced = cli("rewind", "--finish", "--on-conflict", "theirs")
    assert forced.code == 0, forced.stdout
    assert read(root, "g.txt") == b"new\n"


def test_a_file_that_cannot_take_markers_is_never_sent_to_markers(cli, root: Path) -> None:
    """A binary file, or one the user deleted, cannot hold conflict markers: no command is
    suggested for it (`theirs` would lose the user's bytes); a text conflict beside it still
    gets markers."""
    write(root, "logo.bin", b"PNG\0one")
    write(root, "gone.txt", "a\n")
    assert cli("init", "--no-track-shell").code == 0
    assert cli("begin", "--prompt", "edit both").code == 0
    assert cli("pre-write", "logo.bin", "gone.txt").code == 0
    write(root, "logo.bin", b"PNG\0agent")
    write(root, "gone.txt", "a\nagent\n")
    assert cli("post-write", "logo.bin", "gone.txt").code == 0 and cli("end").code == 0
    write(root, "logo.bin", b"PNG\0mine")  # the user's own bytes
    (root / "gone.txt").unlink()  # and the user deleted the other
    rewound = cli("--json", "rewind", "1", "--yes")
    assert rewound.code == 1
    assert sorted(c["path"] for c in rewound.json["conflicts"]) == ["gone.txt", "logo.bin"]
    assert "finish" not in rewound.json
    human = cli("status").stdout
    assert "markers" not in human and "theirs" not in human
    assert "for you: gone.txt, logo.bin: keep yours, or take the other side by hand" in human
    assert read(root, "logo.bin") == b"PNG\0mine" and read(root, "gone.txt") is None
