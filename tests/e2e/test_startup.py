"""What the fast commands load: the exact set of snapstore's modules, and nothing heavy.

Agents start ``snapstore hook AGENT`` on every tool call, so its start-up is
what every agent waits for (docs/benchmarks.md measures it; this test keeps it
from growing by accident). Each event runs in a fresh interpreter through the
console script's ``main``; the modules it loaded are compared with those of
the bare-import floor, ``import lmdb, blake3, zstandard``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ..support import hermetic_env

FIXTURES = Path(__file__).parents[1] / "fixtures"

#: snapstore's own modules on the hook path, for every event of every agent.
HOOK_MODULES = {
    "snapstore", "snapstore.adapters", "snapstore.blobs", "snapstore.capture", "snapstore.db",
    "snapstore.errors", "snapstore.faults", "snapstore.fsio", "snapstore.records",
    "snapstore.repo", "snapstore.store", "snapstore_cli", "snapstore_cli.entry",
    "snapstore_cli.settings",
}
#: What else a hook may load beyond the floor (which already holds json, os, re, typing, ...).
ALLOWED_BEYOND_FLOOR = {"struct", "_struct", "fcntl", "lmdb._envid"}

_RUN = """
import io, json, sys
out = sys.argv[1]
sys.argv = ["snapstore", *sys.argv[2:]]
sys.stdin = io.TextIOWrapper(io.BytesIO(sys.stdin.buffer.read()))
from snapstore_cli.entry import main
try:
    main()
except SystemExit:
    pass
with open(out, "w") as handle:
    json.dump(sorted(sys.modules), handle)
"""


def _loaded(args: list[str], stdin: bytes, cwd: Path, out: Path) -> set[str]:
    done = subprocess.run([sys.executable, "-c", _RUN, str(out), *args], input=stdin, cwd=cwd,
                          env=hermetic_env(), capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return set(json.loads(out.read_text()))


@pytest.fixture(scope="module")
def floor(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    out = tmp_path_factory.mktemp("floor") / "modules.json"
    subprocess.run([sys.executable, "-c", "import json, sys, lmdb, blake3, zstandard\n"
                    f"json.dump(sorted(sys.modules), open({str(out)!r}, 'w'))"], check=True)
    return set(json.loads(out.read_text()))


#: The events of each kind, by agent (tests/fixtures/agents holds what each agent sent).
KINDS = {"begin": {"UserPromptSubmit", "BeforeAgent", "userPromptSubmitted", "chat.message",
                   "beforeSubmitPrompt", "pre_user_prompt", "PromptSubmit"},
         "pre": {"PreToolUse", "BeforeTool", "preToolUse", "tool.execute.before",
                 "pre_write_code"},
         "post": {"PostToolUse", "AfterTool", "postToolUse", "tool.execute.after",
                  "post_write_code"},
         "end": {"Stop", "AfterAgent", "agentStop", "session.idle", "TaskComplete", "stop",
                 "post_cascade_response"}}
AGENTS = sorted(p.stem for p in (FIXTURES / "agents").glob("*.json"))


def step(agent: str, kind: str, root: Path) -> tuple[list[str], bytes]:
    """The command-line arguments and payload of the agent's first event of that kind (a
    write's, for tools)."""
    text = (FIXTURES / "agents" / f"{agent}.json").read_text().replace("__CWD__", str(root))
    for event, payload in json.loads(text)["steps"]:
        name = event or payload.get("hook_event_name") or payload.get("agent_action_name")
        if name in KINDS[kind] and (kind in ("begin", "end") or "src/new.py" in json.dumps(
                payload)):
            return ["hook", agent, *([event] if event else [])], json.dumps(payload).encode()
    raise AssertionError(f"{agent} has no {kind} event")


@pytest.mark.parametrize("agent", AGENTS)
@pytest.mark.parametrize("kind", ["begin", "pre", "post", "end"])
def test_a_hook_loads_only_the_capture_path(root: Path, tmp_path: Path, floor: set[str],
                                            agent: str, kind: str) -> None:
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "src").mkdir()
    (root / "src" / "new.py").write_text("def new():\n    return 'v1'\n")
    for which in ("begin", kind):  # a turn is open before its tools run
        args, raw = step(agent, which, root)
        loaded = _loaded(args, raw, root, tmp_path / f"{which}.json")
    assert (root / ".snapstore").is_dir()  # the hook really ran and captured
    ours = {m for m in loaded if m.split(".")[0] in ("snapstore", "snapstore_cli")}
    agent_module = f"snapstore.adapters.{agent.replace('-', '_')}"
    assert ours == HOOK_MODULES | {agent_module}
    assert loaded - floor - ours <= ALLOWED_BEYOND_FLOOR
    for heavy in ("click", "rich", "prompt_toolkit", "dataclasses", "inspect", "configparser",
                  "pathspec", "watchdog", "difflib", "shutil", "concurrent.futures"):
        assert heavy not in loaded, heavy


@pytest.mark.parametrize(("agent", "event"), [
    ("claude-code", "pre-tool-use-edit"), ("claude-code", "post-tool-use-edit"),
    ("gemini-cli", "before-tool-write-file"), ("gemini-cli", "after-tool-write-file"),
])
def test_in_scan_mode_a_file_tool_hook_loads_no_more(root: Path, tmp_path: Path,
                                                     floor: set[str], agent: str,
                                                     event: str) -> None:
    """Scan mode hooks the shell tool and scans around it; a file tool's hook stays lean."""
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text('def greet(name):\n    return "Hello, " + name\n')
    subprocess.run([sys.executable, "-m", "snapstore_cli", "init", "--track-shell"], cwd=root,
                   env=hermetic_env(), check=True, capture_output=True)
    begin = "user-prompt-submit" if agent == "claude-code" else "before-agent"
    for name in (begin, event):
        raw = (FIXTURES / agent / f"{name}.json").read_text()
        raw = raw.replace("__CWD__", str(root)).replace("__TRANSCRIPT__", str(root / "t.jsonl"))
        loaded = _loaded(["hook", agent], raw.encode(), root, tmp_path / f"{name}.json")
        if name == begin:
            assert "snapstore.scan" in loaded  # the turn's edge was scanned
    ours = {m for m in loaded if m.split(".")[0] in ("snapstore", "snapstore_cli")}
    assert ours == HOOK_MODULES | {f"snapstore.adapters.{agent.replace('-', '_')}"}
    # <store>/config exists in scan mode, and configparser reads it (as before shell hooks)
    assert loaded - floor - ours <= ALLOWED_BEYOND_FLOOR | {"configparser"}
