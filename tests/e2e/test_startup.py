"""What the fast commands load: the exact set of snapstore's modules, and nothing heavy.

Agents start ``snapstore hook AGENT`` on every tool call, so its start-up is
what every agent waits for (docs/benchmarks.md measures it; this test keeps it
from growing by accident). Each event runs in a fresh interpreter through the
console script's ``main``; the modules it loaded are compared with those of
the bare-import floor, ``import lmdb, blake3, zstandard``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from snapstore import Store

from ..support import hermetic_env

FIXTURES = Path(__file__).parents[1] / "fixtures"

#: snapstore's own modules on the hook path, for every event of every agent.
HOOK_MODULES = {
    "snapstore",
    "snapstore.adapters",
    "snapstore.core",
    "snapstore.ops",
    "snapstore.core.baseline",
    "snapstore.core.blobs",
    "snapstore.ops.capture",
    "snapstore.core.db",
    "snapstore.core.errors",
    "snapstore.core.faults",
    "snapstore.core.folders",
    "snapstore.core.fsio",
    "snapstore.core.locks",
    "snapstore.core.places",
    "snapstore.core.records",
    "snapstore.core.repo",
    "snapstore.core.view",
    "snapstore.store",
    "snapstore_cli",
    "snapstore_cli.doors",
    "snapstore_cli.doors.hook",
    "snapstore_cli.launch",
    "snapstore_cli.operations",
    "snapstore_cli.operations.runner",
    "snapstore_cli.settings",
    "snapstore_cli.settings.config",
    "snapstore_cli.settings.environment",
    "snapstore_cli.settings.trust",
}
#: What a prompt's hook loads besides: the session's live file, which names the agent's process
#: for ``snapstore mcp`` (lifecycle: os, json and fcntl, all on the floor or allowed).
BEGIN_MODULES = {"snapstore_cli.operations.lifecycle"}
#: What a turn's edges load in a git repository, to see what git did (snapstore.ops.gitrecord):
#: its files are read, no process runs; when nothing moved, only the quick look
#: (snapstore.git.stamp) loads.
GIT_MODULES = {
    "snapstore.git",
    "snapstore.git.files",
    "snapstore.git.layout",
    "snapstore.git.stamp",
    "snapstore.ops.gitrecord",
}
#: The capture operation: loaded by the events that capture a file (and the turn edges that do).
CAPTURE_OPS = {"snapstore.ops", "snapstore.ops.capture"}
#: What else a hook may load beyond the floor (which already holds json, os, re, typing, ...);
#: the console script turns the collector off, and ``gc`` is built into the interpreter.
#: ``bisect`` (a C module) finds a path in a group of the baseline (core.baseline).
ALLOWED_BEYOND_FLOOR = {"struct", "_struct", "fcntl", "lmdb._envid", "gc", "bisect", "_bisect"}


_LAUNCH = """
import io, json, os, sys
out = sys.argv[1]
sys.argv = ["snapstore", *sys.argv[2:]]
sys.stdin = io.TextIOWrapper(io.BytesIO(sys.stdin.buffer.read()))
def leave(code):
    sys.stdout.flush()
    with open(out, "w") as handle:
        json.dump({"code": code, "modules": sorted(sys.modules)}, handle)
    real_exit(0)
real_exit, os._exit = os._exit, leave  # the fast paths end with os._exit: see what they loaded
from snapstore_cli.launch import main
try:
    main()
except SystemExit as exc:
    leave(exc.code)
leave(None)
"""


def _launched(args: list[str], cwd: Path, out: Path, stdin: bytes = b"") -> tuple[int, set[str]]:
    done = subprocess.run(
        [sys.executable, "-c", _LAUNCH, str(out), *args],
        input=stdin,
        cwd=cwd,
        env=hermetic_env(),
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    return result["code"], set(result["modules"])


def _loaded(args: list[str], stdin: bytes, cwd: Path, out: Path) -> set[str]:
    code, loaded = _launched(args, cwd, out, stdin)
    assert code == 0, args
    return loaded


@pytest.fixture(scope="module")
def floor(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    out = tmp_path_factory.mktemp("floor") / "modules.json"
    subprocess.run(
        [
            sys.executable,
            "-c",
            "import json, sys, lmdb, blake3, zstandard\n"
            f"json.dump(sorted(sys.modules), open({str(out)!r}, 'w'))",
        ],
        check=True,
    )
    return set(json.loads(out.read_text()))


#: The events of each kind, by agent (tests/fixtures/agents holds what each agent sent).
KINDS = {
    "begin": {
        "UserPromptSubmit",
        "BeforeAgent",
        "userPromptSubmitted",
        "chat.message",
        "beforeSubmitPrompt",
        "pre_user_prompt",
        "PromptSubmit",
    },
    "pre": {"PreToolUse", "BeforeTool", "preToolUse", "tool.execute.before", "pre_write_code"},
    "post": {"PostToolUse", "AfterTool", "postToolUse", "tool.execute.after", "post_write_code"},
    "end": {
        "Stop",
        "AfterAgent",
        "agentStop",
        "session.idle",
        "TaskComplete",
        "stop",
        "post_cascade_response",
    },
}
AGENTS = sorted(p.stem for p in (FIXTURES / "agents").glob("*.json"))


def step(agent: str, kind: str, root: Path) -> tuple[list[str], bytes]:
    """The command-line arguments and payload of the agent's first event of that kind (a
    write's, for tools)."""
    text = (FIXTURES / "agents" / f"{agent}.json").read_text().replace("__CWD__", str(root))
    for event, payload in json.loads(text)["steps"]:
        name = event or payload.get("hook_event_name") or payload.get("agent_action_name")
        if name in KINDS[kind] and (
            kind in ("begin", "end") or "src/new.py" in json.dumps(payload)
        ):
            return ["hook", agent, *([event] if event else [])], json.dumps(payload).encode()
    raise AssertionError(f"{agent} has no {kind} event")


@pytest.mark.parametrize("agent", AGENTS)
@pytest.mark.parametrize("kind", ["begin", "pre", "post", "end"])
def test_a_hook_loads_only_the_capture_path(
    root: Path, tmp_path: Path, floor: set[str], agent: str, kind: str
) -> None:
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "src").mkdir()
    (root / "src" / "new.py").write_text("def new():\n    return 'v1'\n")
    subprocess.run(  # the file tools alone (scan mode: the test below)
        [sys.executable, "-m", "snapstore_cli", "init", "--no-track-shell"],
        cwd=root,
        env=hermetic_env(),
        check=True,
        capture_output=True,
    )
    # HEAD changed since init looked (its stamp is not taken racily then: init more than
    # 2 s after `git init`, on a loaded machine), so the turn's edge reads the repository
    head = root / ".git" / "HEAD"
    st = head.stat()
    os.utime(head, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    for which in ("begin", kind):  # a turn is open before its tools run
        args, raw = step(agent, which, root)
        loaded = _loaded(args, raw, root, tmp_path / f"{which}.json")
    with Store.open(root) as store:  # the hook really ran and captured
        assert store.latest_session() is not None
    ours = {m for m in loaded if m.split(".")[0] in ("snapstore", "snapstore_cli")}
    agent_module = f"snapstore.adapters.{agent.replace('-', '_')}"
    expected = HOOK_MODULES | {agent_module} | (BEGIN_MODULES if kind == "begin" else set())
    if kind in ("pre", "post"):
        assert ours == expected
        assert not ours & GIT_MODULES  # a file tool's hook never reads git
    else:  # an event that captures no file (Cline's end: its turns open with a write) may not
        assert ours - GIT_MODULES - CAPTURE_OPS == expected - CAPTURE_OPS
    if kind == "begin":
        assert ours >= GIT_MODULES  # the repository was looked at
    assert loaded - floor - ours <= ALLOWED_BEYOND_FLOOR
    for heavy in (
        "click",
        "rich",
        "prompt_toolkit",
        "dataclasses",
        "inspect",
        "configparser",
        "pathspec",
        "watchdog",
        "difflib",
        "shutil",
        "concurrent.futures",
        "websockets",
    ):
        assert heavy not in loaded, heavy


@pytest.mark.parametrize(
    ("agent", "event"),
    [
        ("claude-code", "pre-tool-use-edit"),
        ("claude-code", "post-tool-use-edit"),
        ("gemini-cli", "before-tool-write-file"),
        ("gemini-cli", "after-tool-write-file"),
    ],
)
def test_in_scan_mode_a_file_tool_hook_loads_no_more(
    root: Path, tmp_path: Path, floor: set[str], agent: str, event: str
) -> None:
    """Scan mode hooks the shell tool and scans around it; a file tool's hook stays lean."""
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text('def greet(name):\n    return "Hello, " + name\n')
    subprocess.run(
        [sys.executable, "-m", "snapstore_cli", "init", "--track-shell"],
        cwd=root,
        env=hermetic_env(),
        check=True,
        capture_output=True,
    )
    begin = "user-prompt-submit" if agent == "claude-code" else "before-agent"
    for name in (begin, event):
        raw = (FIXTURES / agent / f"{name}.json").read_text()
        raw = raw.replace("__CWD__", str(root)).replace("__TRANSCRIPT__", str(root / "t.jsonl"))
        loaded = _loaded(["hook", agent], raw.encode(), root, tmp_path / f"{name}.json")
        if name == begin:
            assert "snapstore.ops.scan" in loaded  # the turn's edge was scanned
    ours = {m for m in loaded if m.split(".")[0] in ("snapstore", "snapstore_cli")}
    assert ours == HOOK_MODULES | {f"snapstore.adapters.{agent.replace('-', '_')}"}
    # <store>/config exists in scan mode, and configparser reads it (as before shell hooks)
    assert loaded - floor - ours <= ALLOWED_BEYOND_FLOOR | {"configparser"}


# -- the console script (snapstore_cli.launch): capture commands, hooks, reads, rewinds ------


#: snapstore's own modules behind the capture commands: the hook path's, without the adapters.
CAPTURE_MODULES = (HOOK_MODULES - {"snapstore.adapters", "snapstore_cli.doors.hook"}) | {
    "snapstore_cli.operations.autogc",
    "snapstore_cli.doors.fast",
    "snapstore_cli.output",
    "snapstore_cli.output.plain",
    "snapstore_cli.settings.options",
}
#: Never loaded by a command an agent or its wrapper starts for each event.
HEAVY = (
    "click",
    "rich",
    "prompt_toolkit",
    "dataclasses",
    "inspect",
    "configparser",
    "pathspec",
    "watchdog",
    "difflib",
    "shutil",
    "concurrent.futures",
    "threading",
    "websockets",  # the timeline page's server (the ui extra): only `snapstore ui` loads it
)


def _ours(loaded: set[str]) -> set[str]:
    return {m for m in loaded if m.split(".")[0] in ("snapstore", "snapstore_cli")}


def test_the_capture_commands_load_only_the_capture_path(
    root: Path, tmp_path: Path, floor: set[str]
) -> None:
    (root / "app.py").write_text("print('hello')\n")
    subprocess.run(
        [sys.executable, "-m", "snapstore_cli", "init"],
        cwd=root,
        env=hermetic_env(),
        check=True,
        capture_output=True,
    )
    steps = [
        ["begin", "--prompt", "a turn"],
        ["--json", "pre-write", "--tool", "Write", "app.py"],
        ["post-write", "app.py", "--session", "default"],
        ["end", "--json"],
    ]
    for i, args in enumerate(steps):
        if "post-write" in args:  # the agent writes between pre-write and post-write
            (root / "app.py").write_text("print('written')\n")
        code, loaded = _launched(args, root, tmp_path / f"{i}.json")
        assert code == 0, args
        assert _ours(loaded) == CAPTURE_MODULES, args
        assert loaded - floor - _ours(loaded) <= ALLOWED_BEYOND_FLOOR, args
        for heavy in HEAVY:
            assert heavy not in loaded, (args, heavy)
        if args[0] in ("begin", "end"):  # nothing to hash or compress
            assert "zstandard" not in loaded, args
    log = subprocess.run(
        [sys.executable, "-m", "snapstore_cli", "log", "--json"],
        cwd=root,
        env=hermetic_env(),
        check=True,
        capture_output=True,
        text=True,
    )
    assert [p["files"] for p in json.loads(log.stdout)] == [1]  # and they did the work


def test_a_bad_capture_command_line_still_gets_clicks_answer(root: Path, tmp_path: Path) -> None:
    """The fast path takes only what it reads as Click would; the rest goes to Click."""
    code, loaded = _launched(["pre-write"], root, tmp_path / "missing.json")
    assert code == 2 and "click" in loaded  # a usage error: Click says what is missing
    code, loaded = _launched(["begin", "--help"], root, tmp_path / "help.json")
    assert code == 0 and "click" in loaded


def test_a_hook_through_the_console_script_loads_only_the_capture_path(
    root: Path, tmp_path: Path, floor: set[str]
) -> None:
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text('def greet(name):\n    return "Hello, " + name\n')
    for name in ("user-prompt-submit", "pre-tool-use-edit"):
        raw = (FIXTURES / "claude-code" / f"{name}.json").read_text()
        raw = raw.replace("__CWD__", str(root)).replace("__TRANSCRIPT__", str(root / "t.jsonl"))
        code, loaded = _launched(
            ["hook", "claude-code"], root, tmp_path / f"{name}.json", raw.encode()
        )
        assert code == 0
    assert _ours(loaded) == HOOK_MODULES | {"snapstore.adapters.claude_code"}
    assert loaded - floor - _ours(loaded) <= ALLOWED_BEYOND_FLOOR
    for heavy in HEAVY:
        assert heavy not in loaded, heavy


def test_reads_scans_and_rewinds_for_programs_load_no_rich(root: Path, tmp_path: Path) -> None:
    """With --json (or --yes), the read, scan and rewind commands print without rich; scan and
    the JSON reads of history load no compression either; ``rewind TURN`` and ``undo`` load
    no Click, no dataclasses and no threads (the fast path, as for the capture commands)."""
    env = hermetic_env()
    (root / "a.txt").write_text("one\n")
    for args in (["init"], ["begin", "--prompt", "first"], ["pre-write", "a.txt"]):
        subprocess.run(
            [sys.executable, "-m", "snapstore_cli", *args],
            cwd=root,
            env=env,
            check=True,
            capture_output=True,
        )
    (root / "a.txt").write_text("two\n")
    for args in (["post-write", "a.txt"], ["end"]):
        subprocess.run(
            [sys.executable, "-m", "snapstore_cli", *args],
            cwd=root,
            env=env,
            check=True,
            capture_output=True,
        )
    turn = json.loads(
        subprocess.run(
            [sys.executable, "-m", "snapstore_cli", "log", "--json"],
            cwd=root,
            env=env,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    )[0]["turn"]
    commands = [
        ["log", "--json"],
        ["status", "--json"],
        ["show", "1", "--json"],
        ["diff", "1"],
        ["scan", "--json"],
        ["rewind", "1", "--yes"],
        ["undo", "--json"],
        ["switch", turn, "--yes"],
        ["rewind", "1", "--json", "--dry-run"],
    ]
    for i, args in enumerate(commands):
        code, loaded = _launched(args, root, tmp_path / f"{i}.json")
        assert code == 0, args
        assert not any(m == "rich" or m.startswith("rich.") for m in loaded), args
        assert not any(m.split(".")[0] in ("websockets", "asyncio") for m in loaded), args
        assert "snapstore_cli.doors.ui" not in loaded, args
        if args[0] in ("log", "status", "scan"):
            assert "zstandard" not in loaded, args
        if args[0] == "scan":
            assert "click" not in loaded and "dataclasses" not in loaded
        if args[0] in ("rewind", "undo"):  # the fast path: no Click, no thread pool either
            for heavy in ("click", "dataclasses", "inspect", "concurrent.futures", "threading"):
                assert heavy not in loaded, (args, heavy)
            assert "snapstore.ops.history" not in loaded, args
    assert (root / "a.txt").read_text() == "two\n"  # rewound, undone, switched back: all ran


def _imported(stderr: str) -> set[str]:
    """The modules a ``python -X importtime`` run imported, from its report on stderr."""
    return {
        line.rsplit("|", 1)[1].strip()
        for line in stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }


def test_python_dash_m_takes_the_console_scripts_fast_paths(root: Path) -> None:
    """``python -m snapstore_cli`` is the console script: a capture command runs without Click."""
    env = hermetic_env()
    (root / "app.py").write_text("print('hello')\n")
    for args in (["init"], ["begin", "--prompt", "a turn"], ["pre-write", "app.py"]):
        done = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "snapstore_cli", *args],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        imported = _imported(done.stderr)
        assert "snapstore_cli.launch" in imported, args
        if args[0] != "init":  # init is not a capture command: Click runs it
            assert "snapstore_cli.doors.fast" in imported and "click" not in imported, args
    assert "captured 1 path(s) in turn" in done.stdout
