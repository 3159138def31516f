"""``snapstore mcp`` through the MCP SDK's own stdio client, started by a stand-in agent that
runs snapstore's real hooks for its session (tests/support/mcp_agent.py): every tool, bad and
hostile arguments, an oversized diff, a closed stdin, two sessions in one workspace, another
session's shell call, and a kill -9 in the middle of a rewind_files finished by
``rewind --resume``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from snapstore import Store

from ..support import hermetic_env, snapstore, snapstore_bin

S = "one"  # the agent's own id for its session: snapstore names it claude-code/one
SESSION = f"claude-code/{S}"


def write(path: str, content: str) -> list[dict[str, Any]]:
    """A Write tool call of the agent, with its two hooks."""
    call = {"tool_name": "Write", "tool_input": {"file_path": path, "content": content}}
    return [
        {"hook": "PreToolUse", **call},
        {"hook": "PostToolUse", **call, "write": {"path": path, "content": content}},
    ]


def turn(prompt: str, *writes: tuple[str, str]) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = [{"hook": "UserPromptSubmit", "prompt": prompt}]
    for path, content in writes:
        steps += write(path, content)
    return [*steps, {"hook": "Stop"}]


THREE = [
    *turn("make notes", ("notes.txt", "alpha\nbeta\n")),
    *turn("edit notes", ("notes.txt", "alpha\ngamma\n")),
    *turn("make other", ("other.txt", "other\n")),
]


def agent(
    root: Path,
    steps: list[dict[str, Any]],
    session: str = S,
    server: list[str] | None = None,
    env: dict[str, str] | None = None,
    wait: bool = True,
) -> Any:
    """Run the stand-in agent; its JSON report (or, with ``wait=False``, the process)."""
    plan = {
        "workspace": str(root),
        "session": session,
        "snapstore": snapstore_bin(),
        "server": server or [*snapstore_bin(), "mcp"],
        "env": env or {},
        "steps": steps,
    }
    path = root.parent / f"plan-{session}-{len(list(root.parent.glob('plan-*')))}.json"
    path.write_text(json.dumps(plan))
    cmd = [sys.executable, "-m", "tests.support.mcp_agent", str(path)]
    cwd = Path(__file__).parents[2]
    if not wait:
        return subprocess.Popen(cmd, cwd=cwd, env=hermetic_env(), stdout=subprocess.PIPE)
    done = subprocess.run(
        cmd, cwd=cwd, env=hermetic_env(), capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def tree(root: Path) -> dict[str, str]:
    return {
        p.name: p.read_text() for p in root.iterdir() if p.is_file() and not p.name.startswith(".")
    }


@pytest.fixture
def ws(root: Path) -> Path:
    assert snapstore(root, "init").returncode == 0
    return root


def test_every_tool_through_the_sdk_client(ws: Path) -> None:
    report = agent(
        ws,
        [
            *THREE,
            {"hook": "UserPromptSubmit", "prompt": "take back the edit"},
            {"tool": "list_turns"},
            {"tool": "show_turn", "args": {"turn": 3}},
            {"tool": "show_turn", "args": {"turn": "4..2"}},
            {"tool": "file_at", "args": {"turn": "3", "path": "notes.txt"}},
            {"tool": "file_at", "args": {"turn": "3", "path": "notes.txt", "before": True}},
            {"tool": "rewind_files", "args": {"turn": 3, "dry_run": True}},
            {"tool": "rewind_files", "args": {"turn": 3}},
            {"tool": "list_turns", "args": {"limit": 1}},
            {"tool": "undo_last"},
            {"tool": "undo_last"},
        ],
    )
    assert report["tools"] == ["file_at", "list_turns", "rewind_files", "show_turn", "undo_last"]
    listed, diff, span, after, before, dry, back, listed2, undone, none = report["calls"]
    assert not any(c["error"] for c in report["calls"][:-1])
    lines = listed["text"].splitlines()
    assert lines[0].startswith(f"Session {SESSION}: 4 turn(s)")
    assert "1. turn " in lines[1] and "in progress: take back the edit" in lines[1]
    assert "3. turn " in lines[5] and "edit notes" in lines[5]
    assert lines[6] == "   1 file(s), +1/-1: notes.txt (modified, +1/-1)"
    assert "-beta\n+gamma\n" in diff["text"]
    assert "other.txt" in span["text"] and "+gamma" in span["text"]
    assert after["text"].endswith("\n\nalpha\ngamma\n") and before["text"].endswith("alpha\nbeta\n")
    assert "This was a dry run: nothing was written." in dry["text"]
    assert "Restored exactly: notes.txt." in back["text"]
    assert "Deleted (they did not exist then): other.txt." in back["text"]
    assert "Your conversation is not changed" in back["text"]
    assert "this turn took back turns 2\u20133 at the agent's request" in listed2["text"]
    assert "Took back your rewind" in undone["text"]
    assert none["error"] and "no rewind made from inside its turns to undo" in none["text"]
    assert tree(ws) == {"notes.txt": "alpha\ngamma\n", "other.txt": "other\n"}
    # the rewind and its undo are changes of the fourth turn: its net change is none
    log = json.loads(snapstore(ws, "--json", "log", "--session", SESSION).stdout)
    assert [m["action"] for m in log[0]["inside"]] == ["rewind", "undo"]
    assert log[0]["inside"][0]["text"] == "took back turns 2\u20133 at the agent's request"


def test_a_rewind_from_inside_is_undone_by_rewinding_the_turn(ws: Path) -> None:
    agent(
        ws,
        [
            *THREE,
            {"hook": "UserPromptSubmit", "prompt": "take back turn 2"},
            {"tool": "rewind_files", "args": {"turn": "3"}},
            {"hook": "Stop"},
        ],
    )
    assert tree(ws) == {"notes.txt": "alpha\nbeta\n"}
    shown = snapstore(ws, "show", "1", "--session", SESSION)
    assert "turn 1 took back turns 2\u20133 at the agent's request" in shown.stdout
    assert "rewind" in snapstore(ws, "--json", "show", "1", "--session", SESSION).stdout
    done = snapstore(ws, "rewind", "1", "--yes", "--mode", "code", "--session", SESSION)
    assert done.returncode == 0, done.stderr
    assert tree(ws) == {"notes.txt": "alpha\ngamma\n", "other.txt": "other\n"}


def test_read_only_offers_the_reading_tools_alone(ws: Path) -> None:
    report = agent(
        ws,
        [*THREE, {"tool": "list_turns"}],
        server=[*snapstore_bin(), "mcp", "--read-only"],
    )
    assert report["tools"] == ["file_at", "list_turns", "show_turn"]
    assert not report["calls"][0]["error"]


HOSTILE = [
    ({"turn": "../../etc/passwd"}, "show_turn", "is not a turn"),
    ({"turn": "1; rm -rf /"}, "show_turn", "is not a turn"),
    ({"turn": "abcdef123456"}, "show_turn", "call list_turns"),
    ({"turn": "99"}, "show_turn", "call list_turns"),
    ({"turn": "1", "max_chars": 10**9}, "show_turn", "max_chars"),
    ({"turn": "1", "paths": ["../outside.txt"]}, "show_turn", "outside the workspace"),
    ({"turn": "1", "path": "/etc/passwd"}, "file_at", "outside the workspace"),
    ({"turn": "1", "path": ".snapstore/db/data.mdb"}, "file_at", "store"),
    ({"turn": "1", "path": "a\u0000b"}, "file_at", "not a path"),
    ({"turn": "2", "on_conflict": "theirs"}, "rewind_files", "on_conflict"),
    ({"turn": "2", "paths": ["x"] * 65}, "rewind_files", "paths"),
    ({"turn": ["1"]}, "rewind_files", "turn"),
    ({}, "rewind_files", "turn"),
    ({"limit": -1}, "list_turns", "limit"),
]


def test_bad_and_hostile_arguments_are_clear_tool_errors_that_change_nothing(ws: Path) -> None:
    os.symlink("/etc", ws / "escape")
    steps: list[dict[str, Any]] = [*THREE, {"hook": "UserPromptSubmit", "prompt": "four"}]
    steps += [{"tool": tool, "args": args} for args, tool, _ in HOSTILE]
    steps += [{"tool": "file_at", "args": {"turn": "2", "path": "escape/passwd"}}]
    steps += [{"tool": "list_turns"}]
    report = agent(ws, steps)
    *bad, escape, fine = report["calls"]
    for (args, tool, words), call in zip(HOSTILE, bad, strict=True):
        assert call["error"], (tool, args, call)
        assert words in call["text"], (tool, args, call["text"])
        assert "Traceback" not in call["text"]
    assert escape["error"] and "symlink" in escape["text"]
    assert not fine["error"]  # the server is still up and answering
    assert tree(ws) == {"notes.txt": "alpha\ngamma\n", "other.txt": "other\n"}


def test_an_oversized_diff_is_cut_and_says_so(ws: Path) -> None:
    big = "".join(f"line {i} of a long file\n" for i in range(20_000))
    report = agent(
        ws,
        [
            *turn("write a big file", ("big.txt", big)),
            {"tool": "show_turn", "args": {"turn": "1"}},
            {"tool": "show_turn", "args": {"turn": "1", "max_chars": 1000}},
            {"tool": "file_at", "args": {"turn": "1", "path": "big.txt"}},
        ],
    )
    default, small, whole = report["calls"]
    assert len(default["text"]) < 21_000 and "[cut" in default["text"]
    assert len(small["text"]) < 2_000 and "more character(s) not shown" in small["text"]
    assert len(whole["text"]) < 21_000 and "[cut" in whole["text"]


def test_a_closed_stdin_ends_the_server(ws: Path) -> None:
    server = subprocess.Popen(
        [*snapstore_bin(), "mcp"],
        cwd=ws,
        env=hermetic_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    hello = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    out, err = server.communicate(json.dumps(hello).encode() + b"\n", timeout=120)
    assert server.returncode == 0, err
    assert json.loads(out.splitlines()[0])["result"]["serverInfo"]["name"] == "snapstore"


def test_without_a_store_the_tools_say_so(root: Path) -> None:
    report = agent(root, [{"tool": "list_turns"}])
    assert report["calls"][0]["error"]
    assert "no snapstore store for this workspace" in report["calls"][0]["text"]


def test_two_sessions_in_one_workspace_each_see_only_their_own(ws: Path) -> None:
    """Two agent processes, one workspace: each server tells its own session by the agent
    that started it, lists only its turns, refuses the other's turn ids, and takes back only
    its own changes."""
    agent(ws, turn("mine", ("mine.txt", "mine\n")), session="a")
    agent(ws, turn("theirs", ("theirs.txt", "theirs\n")), session="b")
    with Store.open(ws) as store:
        theirs = store.rewind_points("claude-code/b")[0].turn.id
    gate = ws.parent / "both-open"
    a = agent(
        ws,
        [
            {"hook": "UserPromptSubmit", "prompt": "a two"},
            {"touch": str(ws.parent / "a-open")},
            {"wait": str(gate)},
            {"tool": "list_turns"},
            {"tool": "show_turn", "args": {"turn": theirs}},
            {"tool": "rewind_files", "args": {"turn": theirs}},
            {"tool": "rewind_files", "args": {"turn": "2"}},
        ],
        session="a",
        wait=False,
    )
    b = agent(
        ws,
        [
            {"wait": str(ws.parent / "a-open")},
            {"hook": "UserPromptSubmit", "prompt": "b two"},
            {"touch": str(gate)},
            {"tool": "list_turns"},
        ],
        session="b",
        wait=False,
    )
    out_b, _ = b.communicate(timeout=300)
    out_a, _ = a.communicate(timeout=300)
    listed, peek, steal, own = json.loads(out_a)["calls"]
    [listed_b] = json.loads(out_b)["calls"]
    assert "Session claude-code/a:" in listed["text"] and "theirs" not in listed["text"]
    assert "Session claude-code/b:" in listed_b["text"] and "mine" not in listed_b["text"]
    assert peek["error"] and steal["error"] and "call list_turns" in steal["text"]
    assert not own["error"], own
    assert tree(ws) == {"theirs.txt": "theirs\n"}


def test_one_agent_process_with_two_open_sessions_refuses_rather_than_guess(ws: Path) -> None:
    report = agent(
        ws,
        [
            *turn("mine", ("mine.txt", "mine\n")),
            {"hook": "UserPromptSubmit", "prompt": "open"},
            {"hook": "UserPromptSubmit", "prompt": "other", "session_id": "two"},
            {"tool": "rewind_files", "args": {"turn": "2"}},
            {"tool": "list_turns"},
        ],
    )
    for call in report["calls"]:
        assert call["error"] and "refuses rather than guess" in call["text"], call
    assert tree(ws) == {"mine.txt": "mine\n"}
    # the agent's own word settles it: the session its environment names
    report = agent(ws, [{"tool": "list_turns"}], env={"CLAUDE_CODE_SESSION_ID": "one"})
    assert "Session claude-code/one:" in report["calls"][0]["text"]


def test_another_sessions_open_shell_window_refuses_the_rewind(ws: Path) -> None:
    assert snapstore(ws, "init", "--track-shell").returncode == 0
    gate, opened = ws.parent / "go", ws.parent / "shell-open"
    shell = {"tool_name": "Bash", "tool_input": {"command": "sleep 1"}, "tool_use_id": "c1"}
    other = agent(
        ws,
        [
            {"hook": "UserPromptSubmit", "prompt": "run something"},
            {"hook": "PreToolUse", **shell},
            {"touch": str(opened)},
            {"wait": str(gate)},
            {"hook": "PostToolUse", **shell},
            {"hook": "Stop"},
        ],
        session="other",
        wait=False,
    )
    report = agent(
        ws,
        [
            *THREE,
            {"hook": "UserPromptSubmit", "prompt": "take back"},
            {"wait": str(opened)},
            {"tool": "rewind_files", "args": {"turn": "3"}},
            {"touch": str(gate)},
        ],
    )
    other.communicate(timeout=300)
    [refused] = report["calls"]
    assert refused["error"] and "claude-code/other" in refused["text"]
    assert "running a shell command" in refused["text"] and "nothing was changed" in refused["text"]
    assert tree(ws) == {"notes.txt": "alpha\ngamma\n", "other.txt": "other\n"}


KILLED = """
import os, signal, sys
from snapstore.core import faults
def kill(name):
    if name == "journal.wrote_path":
        os.kill(os.getpid(), signal.SIGKILL)
faults.install(kill)
sys.argv = ["snapstore", "mcp"]
from snapstore_cli.launch import main
main()
"""


def test_a_kill_during_rewind_files_is_finished_by_resume(ws: Path) -> None:
    report = agent(
        ws,
        [
            *THREE,
            {"hook": "UserPromptSubmit", "prompt": "take back"},
            {"tool": "rewind_files", "args": {"turn": "3"}},
        ],
        server=[sys.executable, "-c", KILLED],
    )
    assert "crash" in report["calls"][0] or report["calls"][0]["error"], report
    with Store.open(ws) as store:
        assert store.unfinished_operations()
    done = snapstore(ws, "--json", "rewind", "--resume")
    assert done.returncode == 0, done.stderr
    assert tree(ws) == {"notes.txt": "alpha\nbeta\n"}
    with Store.open(ws) as store:
        fourth = store.open_turn(SESSION)
        assert fourth is not None and len(fourth.rewinds) == 1
        assert sorted(c.path for c in store.changes(fourth.id)) == ["notes.txt", "other.txt"]
    # the agent's turn ends; the user takes it back: as after turn 3
    agent(ws, [{"hook": "Stop"}])
    assert (
        snapstore(ws, "rewind", "1", "--yes", "--mode", "code", "--session", SESSION).returncode
        == 0
    )
    assert tree(ws) == {"notes.txt": "alpha\ngamma\n", "other.txt": "other\n"}
