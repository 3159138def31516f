"""Hook process latency (figure 3's hook figure).

Agents spawn ``snapstore hook claude-code`` on every tool call, so what a user
waits for is the whole process: interpreter start, imports, opening the store,
the capture and its commit. It is measured as a PreToolUse of a 10 KiB file
(each call a new file, a UserPromptSubmit opening a turn every ten calls),
against the floor of any hook written in Python on these libraries,
``python -c "import lmdb, blake3, zstandard"`` with the same interpreter. The
two alternate (the order flips every repetition) so machine noise falls on both.

:func:`import_breakdown` says where the difference goes: ``-X importtime`` of
both, the modules only the hook loads (self and cumulative time, medians of a
few runs), and the in-process time of the hook's work with imports warm.
"""

from __future__ import annotations

import compileall
import contextlib
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from typing import Any

from snapstore import Store

from .measure import Summary, ratio, timed

FLOOR = "import lmdb, blake3, zstandard"
FILE_SIZE = 10 * 1024
TURN_CALLS = 10
SESSION_ID = "bench-hook"


def hook_command() -> list[str]:
    """The venv's console script (what agents run), else the module."""
    exe = os.path.join(os.path.dirname(sys.executable), "snapstore")
    return [exe] if os.access(exe, os.X_OK) else [sys.executable, "-m", "snapstore_cli"]


def _env() -> dict[str, str]:
    """The hook alone: no daemon starts at a prompt (the shell-hooks suite measures one), so
    none outlives the workspace this suite removes."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SNAPSTORE_")}
    return {**env, "SNAPSTORE_DAEMON": "off"}


def _payload(root: str, event: str, **fields: Any) -> bytes:
    return json.dumps(
        {
            "session_id": SESSION_ID,
            "transcript_path": os.path.join(root, "t.jsonl"),
            "cwd": root,
            "permission_mode": "default",
            "hook_event_name": event,
            **fields,
        }
    ).encode()


def _pre_tool_use(root: str, rel: str) -> bytes:
    return _payload(
        root,
        "PreToolUse",
        tool_name="Write",
        tool_use_id=f"toolu_{rel}",
        tool_input={"file_path": os.path.join(root, rel), "content": "x"},
    )


def _run(cmd: list[str], stdin: bytes = b"", silent: bool = True) -> float:
    """Wall time of one process; a hook that fails or says anything on stderr is an error."""
    seconds, proc = timed(
        lambda: subprocess.run(cmd, input=stdin, capture_output=True, env=_env(), check=False)
    )
    if proc.returncode != 0 or (silent and proc.stderr.strip()):
        raise RuntimeError(
            f"{' '.join(cmd)} failed ({proc.returncode}): "
            f"{proc.stderr.decode(errors='replace').strip()}"
        )
    return seconds


def compile_bytecode() -> None:
    """Write the ``.pyc`` files of snapstore and its CLI, as installing a wheel does.

    With PYTHONDONTWRITEBYTECODE set (or a read-only checkout) an editable install
    would otherwise compile every module from source in every hook process.
    """
    import snapstore_cli

    import snapstore

    for package in (snapstore, snapstore_cli):
        compileall.compile_dir(os.path.dirname(package.__file__), quiet=1)


def _workspace(tmp: str, files: int) -> str:
    root = os.path.join(tmp, "ws")
    os.makedirs(os.path.join(root, "src"))
    line = b"# a line of source code, sixty-four bytes long, give or take.\n"
    for i in range(files):
        with open(os.path.join(root, "src", f"file_{i}.py"), "wb") as handle:
            handle.write((f"# file {i}\n".encode() + line * 200)[:FILE_SIZE])
    _run([*hook_command(), "--root", root, "init"], silent=False)
    return root


def latency(reps: int, tick: Callable[[], None] | None = None) -> dict[str, Any]:
    """Median wall time of the hook process and of the bare-import floor, interleaved."""
    compile_bytecode()
    hook, floor = hook_command(), [sys.executable, "-c", FLOOR]
    samples: dict[str, list[float]] = {"hook": [], "floor": []}
    with tempfile.TemporaryDirectory(prefix="snapstore-bench-hook-") as tmp:
        root = _workspace(tmp, reps)
        for i in range(reps):
            if i % TURN_CALLS == 0:
                _run(
                    [*hook, "hook", "claude-code"],
                    _payload(root, "UserPromptSubmit", prompt=f"turn {i}"),
                )
            runs = [
                ("hook", [*hook, "hook", "claude-code"], _pre_tool_use(root, f"src/file_{i}.py")),
                ("floor", floor, b""),
            ]
            for name, cmd, stdin in runs if i % 2 == 0 else reversed(runs):
                samples[name].append(_run(cmd, stdin))
            if tick:
                tick()
        captured = _captured(root)
    if captured != reps:
        raise AssertionError(f"the hook captured {captured} file(s) of {reps}")
    out = {name: Summary.of(values).to_json() for name, values in samples.items()}
    out.update(
        reps=reps,
        captured=captured,
        command=" ".join(hook) + " hook claude-code",
        floor_command=f"{sys.executable} -c {FLOOR!r}",
        ratio=ratio(out["hook"]["median"], out["floor"]["median"]),
    )
    return out


def _captured(root: str) -> int:
    """How many PreToolUse calls the store recorded (its audit log has one event each)."""
    with Store.open(root) as store:
        return sum(
            1
            for event in store.events()
            if event["type"] == "pre_write"
            and event["session"].endswith(SESSION_ID)
            and event["paths"]
        )


def _importtime(cmd: list[str], stdin: bytes) -> dict[str, tuple[int, int]]:
    proc = subprocess.run(cmd, input=stdin, capture_output=True, env=_env(), check=False)
    return parse_importtime(proc.stderr.decode(errors="replace"))


def parse_importtime(stderr: str) -> dict[str, tuple[int, int]]:
    """``-X importtime`` output: module -> (self, cumulative) microseconds."""
    modules = {}
    for line in stderr.splitlines():
        if line.startswith("import time:") and "|" in line and "self [us]" not in line:
            self_us, cumulative, name = (p.strip() for p in line[12:].split("|"))
            modules[name] = (int(self_us), int(cumulative))
    return modules


def import_breakdown(runs: int = 5, top: int = 25) -> dict[str, Any]:
    """What the hook process imports beyond the floor, and what its work costs in-process."""
    cmd = hook_command()
    hook = [
        sys.executable,
        "-X",
        "importtime",
        *(cmd[1:] if cmd[0] == sys.executable else cmd),
        "hook",
        "claude-code",
    ]
    with tempfile.TemporaryDirectory(prefix="snapstore-bench-hook-") as tmp:
        root = _workspace(tmp, 2 * runs)
        _run([*cmd, "hook", "claude-code"], _payload(root, "UserPromptSubmit", prompt="imports"))
        hooks = [_importtime(hook, _pre_tool_use(root, f"src/file_{i}.py")) for i in range(runs)]
        floors = [
            _importtime([sys.executable, "-X", "importtime", "-c", FLOOR], b"") for _ in range(runs)
        ]
        work = _work_in_process(root, [f"src/file_{runs + i}.py" for i in range(runs)])
    floor_names = set().union(*floors)
    extra = {}
    for name in set().union(*hooks) - floor_names:
        values = [h[name] for h in hooks if name in h]
        extra[name] = (
            statistics.median(v[0] for v in values),
            statistics.median(v[1] for v in values),
        )
    ranked = sorted(extra.items(), key=lambda kv: -kv[1][0])
    return {
        "extra_modules": len(extra),
        "extra_self_us": sum(v[0] for v in extra.values()),
        "floor_self_us": statistics.median(sum(v[0] for v in f.values()) for f in floors),
        "top": [
            {"module": name, "self_us": s, "cumulative_us": c} for name, (s, c) in ranked[:top]
        ],
        "work_in_process": work,
    }


def _work_in_process(root: str, rels: list[str]) -> dict[str, Any]:
    """The hook's own work with every import already loaded: run_hook, called in-process."""
    from snapstore_cli.doors.hook import run_hook

    samples = []
    for rel in rels:
        payload = _pre_tool_use(root, rel)
        stdin = io.TextIOWrapper(io.BytesIO(payload))
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            saved, sys.stdin = sys.stdin, stdin
            try:
                seconds, _ = timed(lambda: run_hook("claude-code", []))
            finally:
                sys.stdin = saved
        samples.append(seconds)
    return Summary.of(samples).to_json()
