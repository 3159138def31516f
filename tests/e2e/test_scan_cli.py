"""End to end: the scan command, and scan mode through the real hooks."""

from __future__ import annotations

import configparser
import json
from pathlib import Path

import pytest

from ..support import SHELL_TOOL, make_tree, read, shell, snapshot, write


def _claude(cli, session: str, root: Path, event: str, **fields: object) -> None:
    """One Claude Code hook event for ``session``, through the real hook command."""
    payload = {
        "session_id": session,
        "transcript_path": str(root / "t.jsonl"),
        "cwd": str(root),
        "permission_mode": "bypassPermissions",
        "hook_event_name": event,
        **fields,
    }
    done = cli("hook", "claude-code", input=json.dumps(payload))
    assert done.code == 0 and done.stderr == "", done.stderr


def _bash(cli, session: str, root: Path, call: str, script: str) -> None:
    """The agent's shell tool: PreToolUse, the command itself, PostToolUse."""
    tool = {"tool_name": "Bash", "tool_input": {"command": script}, "tool_use_id": call}
    _claude(cli, session, root, "PreToolUse", **tool)
    shell(root, script)
    _claude(cli, session, root, "PostToolUse", **tool, tool_response={"stdout": ""})


def test_scan_cli_and_track_shell_hooks_end_to_end(cli, root: Path) -> None:
    """init --track-shell, then a Claude Code turn whose Bash tool edits files."""
    make_tree(root)
    started = cli("init", "--track-shell", "--json")
    assert started.code == 0 and started.json["scan"]["baseline"], started.stderr
    before = snapshot(root)
    _claude(cli, "abc", root, "UserPromptSubmit", prompt="clean up with bash")
    _bash(cli, "abc", root, "toolu_1", SHELL_TOOL)
    _claude(cli, "abc", root, "Stop", stop_hook_active=False)
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


def test_one_sessions_shell_edit_stays_out_of_another_sessions_turn(cli, root: Path) -> None:
    """Two agents in scan mode: A's end-of-turn scan must not take B's shell edit."""
    write(root, "a.txt", "for agent A\n")
    write(root, "b.txt", "for agent B\n")
    assert cli("init", "--track-shell").code == 0
    _claude(cli, "A", root, "UserPromptSubmit", prompt="A: edit a.txt")
    _claude(cli, "B", root, "UserPromptSubmit", prompt="B: edit b.txt")
    _bash(cli, "A", root, "toolu_A1", "echo 'A was here' >> a.txt")
    _bash(cli, "B", root, "toolu_B1", "echo 'B was here' >> b.txt")
    _claude(cli, "A", root, "Stop", stop_hook_active=False)
    _claude(cli, "B", root, "Stop", stop_hook_active=False)

    rewound = cli("--json", "rewind", "1", "--yes", "--session", "claude-code/A")
    assert rewound.code == 0, rewound.stderr
    assert rewound.json["restored"] == ["a.txt"]
    assert read(root, "a.txt") == b"for agent A\n"
    assert read(root, "b.txt") == b"for agent B\nB was here\n"  # B's work is B's
    rewound = cli("--json", "rewind", "1", "--yes", "--session", "claude-code/B")
    assert rewound.code == 0 and rewound.json["restored"] == ["b.txt"], rewound.stderr
    assert read(root, "b.txt") == b"for agent B\n"


def test_the_users_edit_during_a_long_turn_is_not_the_agents(cli, root: Path) -> None:
    write(root, "code.py", "print('v1')\n")
    write(root, "notes.txt", "mine\n")
    assert cli("init", "--track-shell").code == 0
    _claude(cli, "A", root, "UserPromptSubmit", prompt="update the code")
    _bash(cli, "A", root, "toolu_1", "sed -i s/v1/v2/ code.py")
    write(root, "notes.txt", "mine, edited while the agent works\n")  # between tool calls
    _claude(cli, "A", root, "Stop", stop_hook_active=False)
    rewound = cli("--json", "rewind", "1", "--yes", "--session", "claude-code/A")
    assert rewound.code == 0 and rewound.json["restored"] == ["code.py"], rewound.stdout
    assert read(root, "code.py") == b"print('v1')\n"
    assert read(root, "notes.txt") == b"mine, edited while the agent works\n"


def test_an_outer_rewind_never_touches_an_inner_store(cli, root: Path) -> None:
    """A workspace inside the workspace, with its own store: the outer scan skips it."""
    write(root, "outer.txt", "outer\n")
    inner = root / "inner"
    write(inner, "inner.txt", "inner v1\n")
    assert cli("init", "--track-shell").code == 0
    assert cli("init", cwd=inner).code == 0
    _claude(cli, "A", root, "UserPromptSubmit", prompt="work in both")
    tool = {"tool_name": "Bash", "tool_input": {"command": "..."}, "tool_use_id": "toolu_1"}
    _claude(cli, "A", root, "PreToolUse", **tool)
    write(root, "outer.txt", "outer, edited\n")
    for args in (("begin", "--prompt", "inner turn"), ("pre-write", "inner.txt")):
        assert cli(*args, cwd=inner).code == 0
    write(inner, "inner.txt", "inner v2\n")
    for args in (("post-write", "inner.txt"), ("end",)):
        assert cli(*args, cwd=inner).code == 0
    _claude(cli, "A", root, "PostToolUse", **tool, tool_response={"stdout": ""})
    _claude(cli, "A", root, "Stop", stop_hook_active=False)
    store_files = snapshot(inner / ".snapstore")
    shown = cli("--json", "show", "1", "--session", "claude-code/A")
    assert sorted(c["path"] for c in shown.json["changes"]) == ["inner/inner.txt", "outer.txt"]

    rewound = cli("--json", "rewind", "1", "--yes", "--session", "claude-code/A")
    assert rewound.code == 0, rewound.stderr
    assert read(root, "outer.txt") == b"outer\n"
    assert snapshot(inner / ".snapstore") == store_files  # byte for byte
    inner_log = cli("--json", "log", cwd=inner)
    assert inner_log.code == 0 and [p["prompt"] for p in inner_log.json] == ["inner turn"]


def test_calls_that_overlap_across_sessions_are_reported_unattributed(cli, root: Path) -> None:
    write(root, "shared.txt", "before\n")
    assert cli("init", "--track-shell").code == 0
    for session in ("A", "B"):
        _claude(cli, session, root, "UserPromptSubmit", prompt=f"{session} works")
    a = {"tool_name": "Bash", "tool_input": {"command": "make"}, "tool_use_id": "toolu_A"}
    b = {"tool_name": "Bash", "tool_input": {"command": "make"}, "tool_use_id": "toolu_B"}
    _claude(cli, "A", root, "PreToolUse", **a)
    _claude(cli, "B", root, "PreToolUse", **b)
    write(root, "shared.txt", "who did this?\n")
    _claude(cli, "A", root, "PostToolUseFailure", **a, error="exit status 2")
    _claude(cli, "B", root, "PostToolUse", **b, tool_response={"stdout": ""})
    for session in ("A", "B"):
        _claude(cli, session, root, "Stop", stop_hook_active=False)
    status = cli("--json", "status", "--session", "claude-code/A")
    assert status.code == 0, status.stderr
    assert {"root", "store", "sessions", "turns", "open_turn", "head"} <= set(status.json)
    (item,) = status.json["unattributed"]
    assert item["sessions"] == ["claude-code/A", "claude-code/B"]
    assert item["paths"] == ["shared.txt"]
    human = cli("status", "--session", "claude-code/A")
    assert "unattributed" in human.stdout and "shared.txt" in human.stdout
    for session in ("A", "B"):
        log = cli("--json", "log", "--session", f"claude-code/{session}")
        assert [p["files"] for p in log.json] == [0]


def test_gemini_shell_calls_pair_in_order_without_ids(cli, root: Path) -> None:
    write(root, "data.txt", "alpha\n")
    assert cli("init", "--track-shell").code == 0
    base = {
        "session_id": "g1",
        "transcript_path": "",
        "cwd": str(root),
        "timestamp": "2026-11-30T14:37:54Z",
    }

    def gemini(event: str, **fields: object) -> None:
        done = cli(
            "hook", "gemini-cli", input=json.dumps({**base, "hook_event_name": event, **fields})
        )
        assert done.code == 0 and done.stdout == "{}" and done.stderr == "", done.stderr

    shell_tool = {"tool_name": "run_shell_command", "tool_input": {"command": "sed"}}
    gemini("BeforeAgent", prompt="edit with sed")
    gemini("BeforeTool", **shell_tool)
    shell(root, "sed -i s/alpha/beta/ data.txt")
    gemini("AfterTool", **shell_tool, tool_response={"llmContent": "", "returnDisplay": ""})
    write(root, "notes.txt", "the user's\n")
    gemini("AfterAgent", prompt="edit with sed", prompt_response="done")
    shown = cli("--json", "show", "1", "--session", "gemini-cli/g1")
    assert [c["path"] for c in shown.json["changes"]] == ["data.txt"]
    assert cli("rewind", "1", "--yes", "--session", "gemini-cli/g1").code == 0
    assert read(root, "data.txt") == b"alpha\n" and read(root, "notes.txt") == b"the user's\n"


def test_a_folder_the_turn_made_goes_with_its_rewind_and_comes_back_with_undo(
    cli, root: Path
) -> None:
    """`mkdir -p notes/drafts` in the agent's shell: the rewind removes the empty folders,
    keeps one the user put a file in, and undo makes them again."""
    write(root, "a.txt", "a\n")
    assert cli("init", "--track-shell").code == 0
    _claude(cli, "abc", root, "UserPromptSubmit", prompt="make folders")
    _bash(cli, "abc", root, "toolu_1", "mkdir -p notes/drafts keep/inner")
    _claude(cli, "abc", root, "Stop", stop_hook_active=False)
    write(root, "keep/mine.txt", "the user's\n")
    rewound = cli("--json", "--session", "claude-code/abc", "rewind", "1", "--yes")
    assert rewound.code == 0, rewound.stderr
    assert rewound.json["folders_removed"] == ["keep/inner", "notes/drafts", "notes"]
    assert not (root / "notes").exists() and (root / "keep/mine.txt").exists()
    undone = cli("--json", "undo")
    assert undone.code == 0 and (root / "notes/drafts").is_dir() and (root / "keep/inner").is_dir()
    assert undone.json["folders_created"] == ["notes", "keep/inner", "notes/drafts"]


def test_a_file_over_the_size_cap_the_shell_changed_is_reported_everywhere(cli, root: Path) -> None:
    """A file the scan cannot capture: the hook says so (stderr, hook.log), show, log and
    status list it, and the rewind says it could not be restored, and why."""
    write(root, "big.bin", b"x" * 100)
    assert cli("init", "--track-shell").code == 0
    config = configparser.ConfigParser()
    config.read(root / ".snapstore" / "config")
    config["capture"]["max_file_size"] = "50"
    with open(root / ".snapstore" / "config", "w") as handle:
        config.write(handle)
    assert cli("config", "trust").code == 0  # edited by hand: trusted here first
    payload = {
        "session_id": "abc",
        "transcript_path": str(root / "t.jsonl"),
        "cwd": str(root),
        "hook_event_name": "UserPromptSubmit",
        "prompt": "grow it",
    }

    def hook(event: str, **fields: object):
        data = {**payload, "hook_event_name": event, **fields}
        return cli("hook", "claude-code", input=json.dumps(data))

    assert hook("UserPromptSubmit").code == 0
    tool = {"tool_name": "Bash", "tool_input": {"command": "grow"}, "tool_use_id": "toolu_1"}
    assert hook("PreToolUse", **tool).stderr == ""  # unchanged since the last scan: no news
    write(root, "big.bin", b"y" * 200)
    post = hook("PostToolUse", **tool, tool_response={"stdout": ""})
    assert (
        post.code == 0
        and "big.bin was not captured, larger than the size cap (50 B)" in post.stderr
    )
    assert "big.bin was not captured" in (root / ".snapstore" / "hook.log").read_text()
    assert hook("Stop", stop_hook_active=False).stderr == ""  # said once, not at every scan
    session = ("--session", "claude-code/abc")
    shown = cli("--json", *session, "show", "1")
    assert [s["path"] for s in shown.json["skipped"]] == ["big.bin"]
    assert "size cap" in shown.json["skipped"][0]["reason"]
    assert "not captured  big.bin" in cli(*session, "show", "1").stdout
    assert cli("--json", *session, "log").json[0]["skipped"][0]["path"] == "big.bin"
    assert "1 file(s) never captured" in cli(*session, "log").stdout
    assert cli("--json", *session, "status").json["uncaptured"][0]["path"] == "big.bin"
    rewound = cli("--json", *session, "rewind", "1", "--yes")
    assert rewound.code == 0
    assert rewound.json["warnings"][0]["path"] == "big.bin"
    assert "could not be restored" in rewound.json["warnings"][0]["reason"]
    assert read(root, "big.bin") == b"y" * 200
