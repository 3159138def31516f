"""End to end: the scan command, and scan mode through the real hooks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ..support import SHELL_TOOL, make_tree, shell, snapshot, write


def test_scan_cli_and_track_shell_hooks_end_to_end(cli, root: Path) -> None:
    """init --track-shell, then a Claude Code turn whose Bash tool edits files."""
    make_tree(root)
    started = cli("init", "--track-shell", "--json")
    assert started.code == 0 and started.json["scan"]["baseline"], started.stderr
    before = snapshot(root)
    event = {"session_id": "abc", "transcript_path": str(root / "t.jsonl"), "cwd": str(root),
             "permission_mode": "bypassPermissions"}
    begin = cli("hook", "claude-code", input=json.dumps(
        {**event, "hook_event_name": "UserPromptSubmit", "prompt": "clean up with bash"}))
    assert begin.code == 0 and begin.stderr == "", begin.stderr
    shell(root, SHELL_TOOL)
    end = cli("hook", "claude-code", input=json.dumps(
        {**event, "hook_event_name": "Stop", "stop_hook_active": False}))
    assert end.code == 0 and end.stderr == "", end.stderr
    write(root, "src/a.txt", "one\nTWO\nthree\nmine\n")  # the user, between turns
    user = cli("scan", "--json")
    assert user.code == 0 and user.json["changed"] == ["src/a.txt"] and user.json["user"]
    assert set(user.json) >= {"changed", "added", "deleted", "seconds"}
    rewound = cli("rewind", "1", "--yes", "--json", "--session", "claude-code/abc")
    assert rewound.code == 0, rewound.stderr
    assert rewound.json["merged"] == ["src/a.txt"]
    expected = dict(before)
    expected["src/a.txt"] = ("file", b"one\ntwo\nthree\nmine\n", 0o644)
    assert snapshot(root) == expected



@pytest.mark.parametrize("flag", ["--json", ""])
def test_scan_without_a_store_is_not_found(cli, root: Path, flag: str) -> None:
    result = cli(*(a for a in ("scan", flag) if a))
    assert result.code == 4 and "no snapstore store" in result.stderr

