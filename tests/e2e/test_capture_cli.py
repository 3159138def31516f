"""End to end: capture through the real command when an agent's tool calls run in parallel."""

from __future__ import annotations

from pathlib import Path

from ..support import random_bytes, read, write
from ..support.runner import hermetic_env, run_snapstore

BEFORE = "alpha\nbeta\ngamma\ndelta\n"
FIRST = "ALPHA\nbeta\ngamma\ndelta\n"  # the first tool call's edit
SECOND = "ALPHA\nbeta\ngamma\nDELTA\n"  # the second one's, on top of it


def test_two_parallel_tool_calls_on_one_file_are_both_rewound(cli, root: Path) -> None:
    """pre-write f twice, then each call writes and reports: both writes belong to the turn.

    Before the fix the second post-write was skipped, and the rewind merged the
    second edit in as if the user had made it, and exited 0.
    """
    write(root, "f.txt", BEFORE)
    assert cli("init").code == 0
    assert cli("begin", "--prompt", "two edits at once").code == 0
    assert cli("pre-write", "--tool", "Edit", "f.txt").code == 0
    assert cli("pre-write", "--tool", "Edit", "f.txt").code == 0
    write(root, "f.txt", FIRST)
    first = cli("--json", "post-write", "f.txt")
    assert first.code == 0 and first.json["recorded"] == ["f.txt"], first.stderr
    write(root, "f.txt", SECOND)
    second = cli("--json", "post-write", "f.txt")
    assert second.code == 0 and second.json["skipped"] == [], second.stdout
    assert cli("end").code == 0

    rewound = cli("--json", "rewind", "1", "--yes")
    assert rewound.code == 0, rewound.stderr
    assert rewound.json["conflicts"] == [] and rewound.json["merged"] == []
    assert read(root, "f.txt") == BEFORE.encode()
    undone = cli("--json", "undo")
    assert undone.code == 0, undone.stderr
    assert read(root, "f.txt") == SECOND.encode()


def test_a_post_write_without_a_pre_write_records_against_the_latest_version(
    cli, root: Path
) -> None:
    """A pre-write that never reached the store (a busy store, a hook that failed)."""
    write(root, "f.txt", BEFORE)
    assert cli("init").code == 0
    assert cli("begin", "--prompt", "first").code == 0
    assert cli("pre-write", "f.txt").code == 0
    write(root, "f.txt", FIRST)
    assert cli("post-write", "f.txt").code == 0
    write(root, "f.txt", SECOND)  # its pre-write was lost
    lost = cli("--json", "post-write", "f.txt")
    assert lost.code == 0 and lost.json["recorded"] == ["f.txt"], lost.stdout
    assert cli("end").code == 0
    rewound = cli("--json", "rewind", "1", "--yes")
    assert rewound.code == 0 and rewound.json["merged"] == [], rewound.stdout
    assert read(root, "f.txt") == BEFORE.encode()


def test_pre_write_captures_the_good_paths_and_lists_the_others(cli, root: Path) -> None:
    """`pre-write A ../B` protects A; --json lists B as skipped; strict mode exits 2."""
    write(root, "a.txt", BEFORE)
    assert cli("init").code == 0
    assert cli("begin", "--prompt", "one bad path").code == 0
    captured = cli("--json", "pre-write", "a.txt", "../b.txt")
    assert captured.code == 0, captured.stderr
    assert captured.json["captured"] == ["a.txt"]
    assert [s["path"] for s in captured.json["skipped"]] == [str(root / "../b.txt")]
    assert "outside the workspace" in captured.json["skipped"][0]["reason"]
    plain = cli("pre-write", "a.txt", "../b.txt")
    assert plain.code == 0 and "skipped" in plain.stderr and "outside" in plain.stderr
    strict = cli("pre-write", "a.txt", "../b.txt", env={"SNAPSTORE_STRICT": "1"})
    assert strict.code == 2 and "outside the workspace" in strict.stderr
    write(root, "a.txt", FIRST)
    assert cli("post-write", "a.txt").code == 0
    assert cli("end").code == 0
    assert cli("rewind", "1", "--yes").code == 0
    assert read(root, "a.txt") == BEFORE.encode()


def test_a_big_file_through_the_commands_comes_back_byte_for_byte(cli, root: Path) -> None:
    """A file over the big-file size goes through pre-write, post-write, cat and rewind
    in chunks, and comes back exactly; ``cat --json`` gives its size, not its bytes."""
    original = random_bytes(6 * 1024 * 1024, seed=1)
    edited = original[:3_000_000] + b"the agent's edit" + original[3_000_000:]
    write(root, "big.bin", original)
    assert cli("init").code == 0
    assert cli("begin", "--prompt", "edit the big file").code == 0
    assert cli("pre-write", "big.bin").code == 0
    write(root, "big.bin", edited)
    assert cli("post-write", "big.bin").code == 0
    assert cli("end").code == 0
    before = run_snapstore(
        ["cat", "--before", "1", "big.bin"], cwd=root, env=hermetic_env(), text=False
    )
    assert before.returncode == 0 and before.stdout == original
    shown = cli("--json", "cat", "1", "big.bin")
    assert shown.json["size"] == len(edited) and shown.json["base64"] is None
    rewound = cli("--json", "rewind", "1", "--yes")
    assert rewound.code == 0 and rewound.json["restored"] == ["big.bin"], rewound.stderr
    assert read(root, "big.bin") == original
    assert cli("undo").code == 0
    assert read(root, "big.bin") == edited


def test_a_file_over_the_capture_limit_is_reported_by_the_hook_show_and_rewind(
    cli, root: Path
) -> None:
    write(root, "huge.bin", b"x" * 3 * 1024 * 1024)
    assert cli("init", "--no-track-shell").code == 0
    (root / ".snapstore" / "config").write_text("[capture]\nmax_file_size = 2MiB\n")
    assert cli("config", "trust").code == 0
    assert cli("begin", "--prompt", "touch the huge file").code == 0
    captured = cli("--json", "pre-write", "huge.bin")
    assert captured.code == 0, captured.stderr
    assert captured.json["skipped"] == [
        {"path": "huge.bin", "reason": "huge.bin is larger than the capture limit (2097152 bytes)"}
    ]
    write(root, "huge.bin", b"the agent's")
    assert cli("end").code == 0
    shown = cli("show", "1")
    assert (
        "not captured  huge.bin: larger than the capture limit (2.0 MiB)" in shown.stdout
    )  # JSON: bytes
    rewound = cli("--json", "rewind", "1", "--yes")
    assert rewound.code == 0, rewound.stderr
    assert [w["path"] for w in rewound.json["warnings"]] == ["huge.bin"]
    assert read(root, "huge.bin") == b"the agent's"
