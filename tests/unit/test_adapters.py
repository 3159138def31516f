"""The agent adapters' tables, read against payloads the agents really sent (or, for Cursor,
Windsurf and Auggie, that their docs and package describe): tests/fixtures/agents/AGENT.json,
each with its source. What every event must become is written out here, on its own."""

from __future__ import annotations

import importlib
import json
import pkgutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import snapstore.adapters
from snapstore import BadInput, Store
from snapstore.adapters import (
    AGENT_NAMES,
    BEGIN,
    END,
    IGNORE,
    POST,
    PRE,
    SHELL_PRE,
    START,
    Agent,
    apply,
    dig,
    parse,
    patch_paths,
)

FIXTURES = Path(__file__).parents[1] / "fixtures" / "agents"
CWD = "/work/project"
P1, P2 = "Add src/new.py", "Make the greeting friendlier"
NEW, APP = (f"{CWD}/src/new.py",), (f"{CWD}/app.py",)
#: Every agent module: all but the config writers.
AGENTS = sorted(
    m.name.replace("_", "-")
    for m in pkgutil.iter_modules(snapstore.adapters.__path__)
    if m.name not in ("install", "jsonc", "mcp")
)


def _agent(name: str) -> Agent:
    return importlib.import_module(f"snapstore.adapters.{name.replace('-', '_')}").AGENT


def steps(agent: str) -> list[tuple[str | None, dict]]:
    text = (FIXTURES / f"{agent}.json").read_text()
    data = json.loads(text.replace("__CWD__", CWD).replace("__HOME__", "/home/me"))
    return [(event, payload) for event, payload in data["steps"]]


def seen(agent: str) -> list[tuple]:
    """Each step as (kind, tool, paths, prompt), with the session checked to be the one."""
    spec = _agent(agent)
    out, sessions = [], set()
    for event, payload in steps(agent):
        action = parse(spec, payload, event, cwd=CWD)
        if action.kind not in (IGNORE, START):
            sessions.add(action.session)
            assert action.cwd == CWD
        out.append((action.kind, action.tool, action.paths, action.prompt))
    per_task = agent == "cline"
    assert len(sessions) == (2 if per_task else 1), sessions
    assert all(s.startswith(f"{agent}/") and len(s) > len(agent) + 1 for s in sessions)
    return out


B1, B2 = (BEGIN, "", (), P1), (BEGIN, "", (), P2)
E = (END, "", (), "")
S = (START, "", (), "")
I = (IGNORE, "", (), "")  # noqa: E741


def tool(kind: str, name: str, paths: tuple[str, ...]) -> tuple:
    return (kind, name, paths, "")


def ignored(name: str) -> tuple:
    return (IGNORE, name, (), "")


def shell(name: str) -> tuple:
    """The agent's shell tool about to run: a shell call's window opens (in scan mode)."""
    return (SHELL_PRE, name, (), "")


EXPECTED = {
    "claude-code": [
        S,
        B1,
        tool(PRE, "Write", NEW),
        tool(POST, "Write", NEW),
        shell("Bash"),
        ignored("Read"),
        E,
        B2,
        tool(PRE, "Edit", APP),
        tool(POST, "Edit", APP),
        E,
        E,
    ],
    "gemini-cli": [
        S,
        B1,
        tool(PRE, "write_file", NEW),
        tool(POST, "write_file", NEW),
        shell("run_shell_command"),
        E,
        B2,
        tool(PRE, "replace", APP),
        tool(POST, "replace", APP),
        E,
        E,
    ],
    "codex": [
        S,
        B1,
        tool(PRE, "apply_patch", NEW),
        tool(POST, "apply_patch", NEW),
        shell("Bash"),
        E,
        B2,
        tool(PRE, "apply_patch", APP),
        tool(POST, "apply_patch", APP),
        E,
        E,
    ],
    # the empty UserPromptSubmit before each continuation is not a turn
    "qwen-code": [
        S,
        B1,
        tool(PRE, "write_file", NEW),
        tool(POST, "write_file", NEW),
        I,
        shell("run_shell_command"),
        ignored("read_file"),
        E,
        B2,
        tool(PRE, "edit", APP),
        tool(POST, "edit", APP),
        I,
        E,
    ],
    "copilot": [
        S,
        B1,
        tool(PRE, "create", NEW),
        tool(POST, "create", NEW),
        shell("bash"),
        ignored("view"),
        E,
        B2,
        tool(PRE, "edit", APP),
        tool(POST, "edit", APP),
        E,
        E,
    ],
    "opencode": [
        B1,
        tool(PRE, "write", NEW),
        tool(POST, "write", NEW),
        shell("bash"),
        E,
        B2,
        tool(PRE, "edit", APP),
        tool(POST, "edit", APP),
        E,
    ],
    # a task per prompt; the first tool call came before TaskStart; no prompt in TaskStart
    "cline": [
        tool(PRE, "editor", NEW),
        S,
        tool(POST, "editor", NEW),
        shell("run_commands"),
        E,
        S,
        B2,
        tool(PRE, "editor", APP),
        tool(POST, "editor", APP),
        E,
    ],
    "cursor": [
        S,
        B1,
        tool(PRE, "Write", NEW),
        tool(POST, "Write", NEW),
        I,
        shell("Shell"),
        E,
        B2,
        tool(PRE, "Write", APP),
        tool(POST, "Write", APP),
        E,
        E,
    ],
    "windsurf": [
        B1,
        tool(PRE, "write_code", NEW),
        tool(POST, "write_code", NEW),
        I,
        shell("run_command"),
        E,
        B2,
        tool(PRE, "write_code", APP),
        tool(POST, "write_code", APP),
        E,
    ],
    "auggie": [
        S,
        B1,
        tool(PRE, "save-file", NEW),
        tool(POST, "save-file", NEW),
        shell("launch-process"),
        E,
        B2,
        tool(PRE, "str-replace-editor", APP),
        tool(POST, "str-replace-editor", APP),
        E,
        E,
    ],
}


def test_every_agent_has_payloads_and_expectations() -> None:
    assert len(AGENTS) == 10
    assert sorted(AGENT_NAMES) == AGENTS  # the hook fast path and `hook install` know each
    assert sorted(EXPECTED) == AGENTS
    assert sorted(p.stem for p in FIXTURES.glob("*.json")) == AGENTS
    assert all(_agent(a).name == a for a in AGENTS)


@pytest.mark.parametrize("agent", sorted(EXPECTED))
def test_each_event_an_agent_sent_becomes_the_right_action(agent: str) -> None:
    got = seen(agent)
    assert [(k, t, p, pr) for k, t, p, pr in got] == EXPECTED[agent]


@pytest.mark.parametrize("agent", [a for a in AGENTS if _agent(a).call_id_key])
def test_a_shell_call_carries_the_agents_call_id(agent: str) -> None:
    """Overlapping shell calls are paired by id, read through the agent's (dotted) key."""
    spec = _agent(agent)
    found = [
        (action, payload)
        for event, payload in steps(agent)
        for action in [parse(spec, payload, event, cwd=CWD)]
        if action.kind == SHELL_PRE
    ]
    assert found
    for action, payload in found:
        assert action.call and action.call == dig(payload, spec.call_id_key)


def test_copilots_tool_arguments_as_a_json_string_as_its_docs_say() -> None:
    spec = _agent("copilot")
    payload = dict(steps("copilot")[2][1])
    payload["toolArgs"] = json.dumps(payload["toolArgs"])
    assert parse(spec, payload, "preToolUse").paths == NEW
    payload["toolArgs"] = "{not json"
    with pytest.raises(BadInput, match="not JSON"):
        parse(spec, payload, "preToolUse")


def test_copilot_events_come_from_the_command_line_and_unknown_ones_do_nothing() -> None:
    spec = _agent("copilot")
    payload = steps("copilot")[2][1]
    assert parse(spec, payload, None).kind == IGNORE
    assert parse(spec, payload, "errorOccurred").kind == IGNORE
    assert parse(spec, payload, "preToolUse").kind == PRE


def test_claude_code_hooks_that_copilot_runs_carry_its_path_key() -> None:
    """Copilot CLI runs .claude/settings*.json hooks with Claude's names and its arguments."""
    payload = {
        "hook_event_name": "PreToolUse",
        "session_id": "e4500134",
        "cwd": CWD,
        "tool_name": "Write",
        "tool_input": {"path": f"{CWD}/notes.txt", "file_text": "alpha\n"},
    }
    action = parse(_agent("claude-code")._replace(name="copilot"), payload)
    assert (action.kind, action.session, action.paths) == (
        PRE,
        "copilot/e4500134",
        (f"{CWD}/notes.txt",),
    )


def test_windsurf_hooks_run_in_the_workspace_root_and_name_no_folder() -> None:
    spec = _agent("windsurf")
    payload = steps("windsurf")[1][1]
    assert parse(spec, payload, cwd="/elsewhere").cwd == "/elsewhere"
    with pytest.raises(BadInput, match="absolute working folder"):
        parse(spec, payload)


def test_relative_paths_resolve_against_the_payloads_folder() -> None:
    spec = _agent("auggie")  # Auggie's save-file path is relative to the workspace root
    assert parse(spec, steps("auggie")[2][1]).paths == NEW


def test_auggie_remove_files_and_apply_patch_name_every_file() -> None:
    spec = _agent("auggie")
    base = steps("auggie")[2][1]
    remove = {**base, "tool_name": "remove-files", "tool_input": {"file_paths": ["a.txt", "b"]}}
    assert parse(spec, remove).paths == (f"{CWD}/a.txt", f"{CWD}/b")
    patch = {
        **base,
        "tool_name": "apply_patch",
        "tool_input": {"input": "*** Begin Patch\n*** Delete File: a.txt\n*** End Patch"},
    }
    assert parse(spec, patch).paths == (f"{CWD}/a.txt",)


@pytest.mark.parametrize("agent", sorted(EXPECTED))
def test_a_payload_without_its_session_or_its_paths_is_bad_input(agent: str) -> None:
    spec = _agent(agent)
    event, payload = next((e, p) for e, p in steps(agent) if parse(spec, p, e, cwd=CWD).kind == PRE)
    broken = json.loads(json.dumps(payload))
    for key in spec.session_keys:
        parent, _, leaf = key.rpartition(".")
        holder = dig(broken, parent) if parent else broken
        if isinstance(holder, dict):
            holder.pop(leaf, None)
    with pytest.raises(BadInput, match="session id"):
        parse(spec, broken, event, cwd=CWD)
    no_path = json.loads(json.dumps(payload))
    args = next(dig(no_path, k) for k in spec.args_keys if isinstance(dig(no_path, k), dict))
    args.clear()
    with pytest.raises(BadInput):
        parse(spec, no_path, event, cwd=CWD)


PATCH = """*** Begin Patch
*** Add File: new.txt
+*** Delete File: not-a-marker.txt
+hello
*** Update File: old.txt
*** Move to: moved.txt
@@
-old
+changed
*** Delete File: gone.txt
*** Update File: old.txt
*** End Patch
"""


def test_an_apply_patch_names_each_file_once_both_ends_of_a_move_included() -> None:
    assert patch_paths(PATCH) == ["new.txt", "old.txt", "moved.txt", "gone.txt"]
    assert patch_paths(PATCH.replace("\n", "\r\n")) == patch_paths(PATCH)
    heredoc = "apply_patch <<'EOF'\n" + PATCH + "EOF\n"  # as the shell tool would carry it
    assert patch_paths(heredoc) == patch_paths(PATCH)
    assert patch_paths("*** Begin Patch\n*** End Patch\n") == []


names = (
    st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), min_size=1, max_size=12)
    .map(str.strip)
    .filter(bool)
)
ops = st.lists(
    st.tuples(
        st.sampled_from(["add", "update", "move", "delete"]),
        names,
        names,
        st.lists(st.text(max_size=20), max_size=3),
    ),
    max_size=8,
)


@given(ops)
def test_patch_paths_finds_exactly_the_files_of_any_patch(operations: list) -> None:
    """Content lines start with +, - or a space, so no content can pass for a marker."""
    lines, want = ["*** Begin Patch"], []
    for op, path, target, content in operations:
        body = [f"{sign}{line}" for line in content for sign in "+- "]
        if op == "add":
            lines += [f"*** Add File: {path}", *("+" + c for c in content)]
            want.append(path)
        elif op == "delete":
            lines.append(f"*** Delete File: {path}")
            want.append(path)
        else:
            lines.append(f"*** Update File: {path}")
            want.append(path)
            if op == "move":
                lines.append(f"*** Move to: {target}")
                want.append(target)
            lines += ["@@", *body]
    lines.append("*** End Patch")
    assert patch_paths("\n".join(lines)) == list(dict.fromkeys(want))


def test_an_end_that_names_an_earlier_prompt_leaves_the_open_turn_alone(tmp_path: Path) -> None:
    """Windsurf runs post_cascade_response asynchronously: a late end of turn 1 must not close
    turn 2."""
    spec = _agent("windsurf")
    data = steps("windsurf")
    with Store.init(tmp_path) as store:

        def run(payload: dict) -> None:
            text = json.dumps(payload).replace(CWD, str(tmp_path))
            apply(store, parse(spec, json.loads(text), cwd=str(tmp_path)))

        run(data[0][1])  # pre_user_prompt, execution 1
        run(data[6][1])  # pre_user_prompt, execution 2 (turn 1 never ended)
        session = "windsurf/" + data[0][1]["trajectory_id"]
        second = store.open_turn(session)
        assert second is not None and second.prompt == P2
        run(data[5][1])  # the late post_cascade_response of execution 1
        assert store.open_turn(session) == second
        run(data[9][1])  # execution 2's own end
        assert store.open_turn(session) is None
