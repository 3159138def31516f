"""A truncated data file, end to end: every command says the store is damaged, exit 5, one
line, and never dies of SIGBUS; fsck reports it; the recovery path in docs/reliability.md works.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from snapstore import Store

from ..support import Clock, agent_turn, read, snapshot, write

#: Every command that opens the store, as a user or an integration would call it.
COMMANDS = [
    ["log"],
    ["log", "--all"],
    ["show", "1"],
    ["diff", "1"],
    ["status"],
    ["fsck"],
    ["fsck", "--repair"],
    ["init"],
    ["begin", "--prompt", "p"],
    ["end"],
    ["pre-write", "a.txt"],
    ["post-write", "a.txt"],
    ["rewind"],
    ["rewind", "1", "--yes"],
    ["rewind", "--resume"],
    ["undo"],
    ["gc"],
    ["scan"],
    ["watch"],
]


def _page_size(data: Path) -> int:
    with open(data, "rb") as handle:
        head = handle.read(44)
    return struct.unpack_from("<I", head, 40)[0]


@pytest.fixture
def template(root: Path, tmp_path: Path) -> Path:
    """A store of several turns, many pages long, kept aside to be truncated copy by copy."""
    with Store.init(root, clock=Clock()) as store:
        for i in range(6):
            agent_turn(
                store, f"turn {i}", {f"f{i}.txt": os.urandom(6000).hex(), "a.txt": f"version {i}\n"}
            )
    saved = tmp_path / "template"
    shutil.copytree(root / ".snapstore", saved)
    return saved


def _truncated(root: Path, template: Path, size: int) -> Path:
    store = root / ".snapstore"
    shutil.rmtree(store, ignore_errors=True)
    shutil.copytree(template, store)
    data = store / "db" / "data.mdb"
    os.truncate(data, size)
    return data


def _damaged(result, args) -> None:
    """Exit 5 and one line that says the store is damaged; never a signal, never a traceback."""
    assert result.code == 5, (args, result.code, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, (args, result.stderr)
    assert lines[0].startswith("snapstore: ") and "damaged" in lines[0], (args, lines)
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr


def test_every_command_refuses_a_truncated_store(cli, root: Path, template: Path) -> None:
    data = template / "db" / "data.mdb"
    size, page = data.stat().st_size, _page_size(data)
    assert size >= 8 * page  # the sweep below cuts inside the tree, not only the metas
    workspace = snapshot(root)
    # Inside the first meta page, the meta pages alone, mid-file, one page short, one byte.
    for cut in (100, 2 * page, size // 2, size - page, size - 1):
        for args in COMMANDS:
            damaged = _truncated(root, template, cut)
            _damaged(cli(*args), args)
            assert damaged.stat().st_size == cut, args  # nothing wrote to it or grew it
        assert snapshot(root) == workspace


def test_a_hook_on_a_truncated_store_says_so_and_lets_the_agent_go_on(
    cli, root: Path, template: Path
) -> None:
    data = template / "db" / "data.mdb"
    _truncated(root, template, 2 * _page_size(data))
    event = {
        "session_id": "s1",
        "transcript_path": str(root / "t.jsonl"),
        "cwd": str(root),
        "hook_event_name": "PreToolUse",
        "tool_name": "Write",
        "tool_input": {"file_path": str(root / "a.txt"), "content": "x"},
    }
    result = cli("hook", "claude-code", input=json.dumps(event))
    assert result.code == 0, result.stderr  # a hook never breaks the agent
    assert result.stderr.count("\n") == 1 and "damaged" in result.stderr
    strict = cli("hook", "claude-code", input=json.dumps(event), env={"SNAPSTORE_STRICT": "1"})
    assert strict.code == 2 and "damaged" in strict.stderr


def test_truncated_anywhere_never_kills_a_command(cli, root: Path, template: Path) -> None:
    """A sweep over every cut, hypothesis choosing where (the template ends at its last used
    page, so every cut takes a page LMDB needs): exit 5 and one line, every time."""
    data = template / "db" / "data.mdb"
    size = data.stat().st_size

    @settings(
        max_examples=25, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck)
    )
    @given(cut=st.integers(0, size - 1), args=st.sampled_from([["log"], ["--json", "fsck"]]))
    def run(cut: int, args: list[str]) -> None:
        _truncated(root, template, cut)
        result = cli(*args)
        _damaged(result, (cut, args))
        if args[0] == "--json":
            report = result.json  # fsck --json: its own report, naming the data file
            assert report["ok"] is False and report["corrupt"][0]["kind"] == "data file"
            assert report["corrupt"][0]["key"].endswith("data.mdb")

    run()


def test_fsck_reports_the_truncation(cli, root: Path, template: Path) -> None:
    data = template / "db" / "data.mdb"
    size, page = data.stat().st_size, _page_size(data)
    _truncated(root, template, 2 * page)  # only the meta pages are left
    result = cli("--json", "fsck")
    assert result.code == 5
    (item,) = result.json["corrupt"]
    assert f"truncated: {2 * page} bytes, but its last commit needs {size}" in item["reason"]
    assert result.json["blobs_checked"] == 0
    human = cli("fsck")
    _damaged(human, "fsck")
    assert "docs/reliability.md" in human.stderr


def test_the_recovery_path_in_the_docs_works(cli, root: Path, template: Path) -> None:
    """docs/reliability.md, 'A damaged store': keep it aside, start a new store, go on."""
    _truncated(root, template, 3 * _page_size(template / "db" / "data.mdb"))
    write(root, "a.txt", "the user's latest\n")
    assert cli("log").code == 5
    (root / ".snapstore").rename(root / ".snapstore.damaged")
    assert cli("init").code == 0
    assert cli("fsck").code == 0
    # The workspace was never the store's to lose; capture and rewind work again.
    assert read(root, "a.txt") == b"the user's latest\n"
    assert cli("begin", "--prompt", "after the damage").code == 0
    assert cli("pre-write", "a.txt").code == 0
    write(root, "a.txt", "agent\n")
    assert cli("post-write", "a.txt").code == 0 and cli("end").code == 0
    assert cli("rewind", "1", "--yes").code == 0
    assert read(root, "a.txt") == b"the user's latest\n"
    # The damaged copy is still refused, wherever it is kept.
    aside = cli("log", env={"SNAPSTORE_DIR": str(root / ".snapstore.damaged")})
    _damaged(aside, "log of the copy kept aside")
