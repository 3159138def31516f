"""End to end: the gc command's contract, and automatic gc from commands and hooks."""

from __future__ import annotations

import json
import os
from pathlib import Path

from snapstore import Store

from ..support import agent_turn, write


def test_cli_gc_contract_and_auto_gc(cli, root: Path) -> None:
    with Store.init(root) as store:
        for n in range(6):
            agent_turn(store, f"p{n}", {"f.txt": os.urandom(20000).hex()})
    dry = cli("--json", "gc", "--keep-turns", "1", "--dry-run")
    assert dry.code == 0 and {
        "removed_turns",
        "removed_blobs",
        "freed_bytes",
        "store_bytes",
    } <= set(dry.json)
    assert dry.json["removed_turns"] == 5 and len(cli("--json", "log").json) == 6
    done = cli("--json", "gc", "--keep-turns", "1")
    assert done.code == 0 and done.json["removed_turns"] == 5 and done.json["freed_bytes"] > 0
    assert cli("fsck").code == 0
    assert cli("gc", "--max-size", "lots").code == 2

    (root / ".snapstore" / "config").write_text("[gc]\nauto = true\nmax_size = 100KiB\n")
    assert cli("config", "trust").code == 0  # edited by hand: used once the user says so
    data_file = root / ".snapstore" / "db" / "data.mdb"
    noted = 0
    for n in range(5):
        for args in (
            ("begin", "--prompt", f"q{n}"),
            ("pre-write", "f.txt"),
            None,
            ("post-write", "f.txt"),
            ("end",),
        ):
            if args is None:
                write(root, "f.txt", os.urandom(20000).hex())
                continue
            result = cli(*args)
            assert result.code == 0, result.stderr
            if "passed its quota" in result.stderr:
                noted += 1
                assert data_file.stat().st_size <= 100 * 1024
    assert noted and cli("fsck").code == 0
    assert len(cli("--json", "log").json) < 6


def test_the_hook_runs_auto_gc_when_a_turn_ends_and_says_so(cli, root: Path) -> None:
    cli("init")
    (root / ".snapstore" / "config").write_text("[gc]\nauto = true\nmax_size = 16KiB\n")
    assert cli("config", "trust").code == 0

    def hook(event: str, **extra: object) -> str:
        payload = {"session_id": "s", "cwd": str(root), "hook_event_name": event, **extra}
        result = cli("hook", "claude-code", input=json.dumps(payload))
        assert result.code == 0, result.stderr
        return result.stderr

    hook("UserPromptSubmit", prompt="write it")
    hook("PreToolUse", tool_name="Write", tool_input={"file_path": str(root / "f.bin")})
    write(root, "f.bin", os.urandom(40000).hex())
    hook("PostToolUse", tool_name="Write", tool_input={"file_path": str(root / "f.bin")})
    assert "automatic gc" not in hook(
        "PreToolUse", tool_name="Write", tool_input={"file_path": str(root / "g.txt")}
    )
    said = hook("Stop")
    assert "passed its quota" in said and "automatic gc" in said
    assert "passed its quota" in (root / ".snapstore" / "hook.log").read_text()
    assert cli("fsck").code == 0
