"""Start-up of each snapstore command as a whole process.

Agents and their wrappers spawn ``snapstore`` for every event, so what they
wait for is the process: interpreter, imports, opening the store, the work.
Each command runs from the installed environment (:mod:`bench.installed`)
beside the floor that any Python tool on these libraries pays, ``python -c
"import lmdb, blake3, zstandard"`` with the same interpreter. Every command of
a round is paired with one floor run, and the order within the pair flips at
each step, so that drift on a shared machine falls on both sides.

One round, in the order an agent session produces them (writes in between are
not timed): ``begin``, ``pre-write f`` (a 10 KiB file), ``post-write f``,
``end`` (in session ``capture``, named through ``SNAPSTORE_SESSION`` as agent
wrappers do), ``hook claude-code`` PreToolUse and PostToolUse, ``hook
gemini-cli`` BeforeTool (payloads from ``tests/fixtures``; every tenth round
an untimed UserPromptSubmit / BeforeAgent opens a new turn), then ``log``,
``show 1``, ``status``, ``rewind 1 --yes --dry-run`` and ``undo --dry-run``
(and ``log --json``, ``status --json``) on the ``default`` session, which holds a
ten-turn history and one rewind.

Beside the wall times: what each command imports (``-X importtime``: total
import time, module count, the top modules by cumulative time, the modules
the floor does not load, grouped by package), and, when valgrind is
installed, callgrind's instruction count of the hook, of ``pre-write`` and of
the floor: a second figure that machine load does not move.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from .hook import FILE_SIZE, FLOOR, parse_importtime
from .installed import ROOT, Installed, clean_env, run
from .measure import Summary, percentile, ratio

FIXTURES = os.path.join(ROOT, "tests", "fixtures")
CAPTURE_SESSION = "capture"
HISTORY_TURNS = 10
HISTORY_FILES = 3
TURN_CALLS = 10
#: The commands measured under callgrind as well.
CALLGRIND = ("pre-write f", "hook claude-code PreToolUse")
LABELS = (
    "begin",
    "pre-write f",
    "post-write f",
    "end",
    "hook claude-code PreToolUse",
    "hook claude-code PostToolUse",
    "hook gemini-cli BeforeTool",
    "log",
    "log --json",
    "show 1",
    "status",
    "status --json",
    "rewind 1 --yes --dry-run",
    "undo --dry-run",
)


def payload(agent: str, event: str, root: str, rel: str | None = None, **fields: Any) -> bytes:
    """A recorded hook event (``tests/fixtures/AGENT/EVENT.json``) moved to ``root``."""
    with open(os.path.join(FIXTURES, agent, f"{event}.json"), encoding="utf-8") as handle:
        text = handle.read()
    if rel is not None:
        text = text.replace("__CWD__/src/app.py", f"__CWD__/{rel}")
    text = text.replace("__TRANSCRIPT__", os.path.join(root, "transcript.jsonl"))
    data = json.loads(text.replace("__CWD__", root))
    data.update(fields)
    return json.dumps(data).encode()


def ten_kib(rel: str, salt: str = "") -> bytes:
    """A 10 KiB source file, different for every path (and salt)."""
    line = b"# a line of source code, sixty-four bytes long, give or take.\n"
    return (f"# {rel} {salt}\n".encode() + line * 200)[:FILE_SIZE]


def write(root: str, rel: str, data: bytes) -> None:
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(data)


@dataclass
class Step:
    """One command of a round: its label, arguments, stdin and extra environment."""

    label: str
    args: list[str]
    stdin: bytes = b""
    env: dict[str, str] = field(default_factory=dict)

    @property
    def is_hook(self) -> bool:
        return self.args[0] == "hook"


class Cli:
    """The installed ``snapstore`` run as a process in one workspace."""

    def __init__(self, installed: Installed, root: str):
        self.installed = installed
        self.root = root

    def cli(self, args: list[str], **env: str) -> bytes:
        """Run one snapstore command, untimed; its stdout."""
        return self.run(Step(args[0], args, env=env))[1]

    def run(
        self, step: Step, wrap: tuple[str, ...] = (), opts: tuple[str, ...] = ()
    ) -> tuple[float, bytes, bytes]:
        """Run ``step``; wall time, stdout, stderr. ``wrap`` goes before the interpreter
        (valgrind), ``opts`` after it (``-X importtime``); without either the console
        script runs, as agents spawn it.

        A hook runs with SNAPSTORE_STRICT=1, so that a failure is an exit code rather
        than a line in hook.log, and must say nothing on stderr.
        """
        cmd = [self.installed.snapstore, *step.args]
        if wrap or opts:
            cmd = [*wrap, self.installed.python, *opts, *cmd]
        env = clean_env(**step.env, **({"SNAPSTORE_STRICT": "1"} if step.is_hook else {}))
        seconds, proc = run(
            cmd, self.root, step.stdin, env, silent=step.is_hook and not (wrap or opts)
        )
        return seconds, proc.stdout, proc.stderr

    def floor(
        self, wrap: tuple[str, ...] = (), opts: tuple[str, ...] = (), **env: str
    ) -> tuple[float, bytes]:
        """The bare-import floor with the same interpreter; wall time and stderr."""
        seconds, proc = run(
            [*wrap, self.installed.python, *opts, "-c", FLOOR], self.root, env=clean_env(**env)
        )
        return seconds, proc.stderr


class Workspace(Cli):
    """A workspace with a store, files for every round, and a history to read and rewind."""

    def __init__(self, installed: Installed, root: str, rounds: int):
        super().__init__(installed, root)
        for i in range(rounds):
            for kind in ("cap", "cc", "gm"):
                write(root, f"src/{kind}_{i}.py", ten_kib(f"{kind}_{i}"))
        write(root, "transcript.jsonl", b"")
        self.cli(["init"])
        self._history()

    def _history(self) -> None:
        """Ten turns of three files each in session ``default``, then one rewind (for undo)."""
        rels = [f"src/hist_{j}.py" for j in range(HISTORY_FILES)]
        for rel in rels:
            write(self.root, rel, ten_kib(rel))
        for t in range(HISTORY_TURNS):
            self.cli(["begin", "--prompt", f"history turn {t}"])
            self.cli(["pre-write", *rels])
            for rel in rels:
                write(self.root, rel, ten_kib(rel, f"turn {t}"))
            self.cli(["post-write", *rels])
            self.cli(["end"])
        self.cli(["rewind", "1", "--yes"])

    def round(self, i: int) -> Iterator[Step]:
        """The steps of round ``i``; the untimed work between them happens as it resumes."""
        root, env = self.root, {"SNAPSTORE_SESSION": CAPTURE_SESSION}
        cap, cc, gm = (f"src/{kind}_{i}.py" for kind in ("cap", "cc", "gm"))
        if i % TURN_CALLS == 0:
            self.run(
                Step(
                    "open",
                    ["hook", "claude-code"],
                    payload("claude-code", "user-prompt-submit", root, prompt=f"turn {i}"),
                )
            )
            self.run(
                Step(
                    "open",
                    ["hook", "gemini-cli"],
                    payload("gemini-cli", "before-agent", root, prompt=f"turn {i}"),
                )
            )
        yield Step("begin", ["begin", "--prompt", f"round {i}"], env=env)
        yield Step("pre-write f", ["pre-write", cap], env=env)
        write(root, cap, ten_kib(cap, "written"))
        yield Step("post-write f", ["post-write", cap], env=env)
        yield Step("end", ["end"], env=env)
        tool_id = {"tool_use_id": f"toolu_bench_{i}"}
        yield Step(
            "hook claude-code PreToolUse",
            ["hook", "claude-code"],
            payload("claude-code", "pre-tool-use-write", root, cc, **tool_id),
        )
        write(root, cc, ten_kib(cc, "written"))
        yield Step(
            "hook claude-code PostToolUse",
            ["hook", "claude-code"],
            payload("claude-code", "post-tool-use-write", root, cc, **tool_id),
        )
        yield Step(
            "hook gemini-cli BeforeTool",
            ["hook", "gemini-cli"],
            payload("gemini-cli", "before-tool-write-file", root, gm),
        )
        write(root, gm, ten_kib(gm, "written"))
        yield Step("log", ["log"])
        yield Step("log --json", ["log", "--json"])
        yield Step("show 1", ["show", "1"])
        yield Step("status", ["status"])
        yield Step("status --json", ["status", "--json"])
        yield Step("rewind 1 --yes --dry-run", ["rewind", "1", "--yes", "--dry-run"])
        yield Step("undo --dry-run", ["undo", "--dry-run"])


def _summary(samples: list[float]) -> dict[str, Any]:
    return {**Summary.of(samples).to_json(), "p90": percentile(samples, 90)}


def latency(ws: Workspace, rounds: int, tick: Callable[[], None] | None = None) -> dict[str, Any]:
    """Median and p90 wall time of each command and of the floor, paired and interleaved."""
    samples: dict[str, list[float]] = {label: [] for label in LABELS}
    floor: list[float] = []
    for i in range(rounds):
        for j, step in enumerate(ws.round(i)):
            if (i + j) % 2:
                floor.append(ws.floor()[0])
            samples[step.label].append(ws.run(step)[0])
            if (i + j) % 2 == 0:
                floor.append(ws.floor()[0])
        if tick:
            tick()
    base = statistics.median(floor)
    commands = {
        label: {
            **_summary(s),
            "ratio": ratio(statistics.median(s), base),
            "p90_ratio": ratio(percentile(s, 90), base),
        }
        for label, s in samples.items()
    }
    return {"rounds": rounds, "floor": _summary(floor), "commands": commands}


def _profile(runs: list[dict[str, tuple[int, int]]], floor: set[str], top: int) -> dict[str, Any]:
    """Medians over runs of one command's ``-X importtime``, summarised."""
    names = set().union(*runs)
    med = {
        name: (
            statistics.median(r[name][0] for r in runs if name in r),
            statistics.median(r[name][1] for r in runs if name in r),
        )
        for name in names
    }
    extra = {n: v for n, v in med.items() if n not in floor}
    packages: dict[str, float] = {}
    for name, (self_us, _) in extra.items():
        package = name.split(".")[0]
        packages[package] = packages.get(package, 0) + self_us
    by_cumulative = sorted(med.items(), key=lambda kv: -kv[1][1])[:top]
    return {
        "total_us": statistics.median(sum(v[0] for v in r.values()) for r in runs),
        "modules": statistics.median(len(r) for r in runs),
        "extra_modules": len(extra),
        "extra_us": sum(v[0] for v in extra.values()),
        "top_cumulative": [
            {"module": n, "self_us": s, "cumulative_us": c} for n, (s, c) in by_cumulative
        ],
        "extra_by_package": [
            {"package": p, "self_us": us}
            for p, us in sorted(packages.items(), key=lambda kv: -kv[1])[:top]
        ],
        "extra_names": sorted(extra),
    }


def importtime(ws: Workspace, first_round: int, runs: int, top: int = 10) -> dict[str, Any]:
    """What each command imports, from ``runs`` rounds under ``-X importtime``."""
    opts = ("-X", "importtime")
    seen: dict[str, list[dict[str, tuple[int, int]]]] = {label: [] for label in LABELS}
    floors = []
    for r in range(runs):
        for step in ws.round(first_round + r):
            _, _, stderr = ws.run(step, opts=opts)
            seen[step.label].append(parse_importtime(stderr.decode(errors="replace")))
        floors.append(parse_importtime(ws.floor(opts=opts)[1].decode(errors="replace")))
    floor_names = set().union(*floors)
    floor = _profile(floors, set(), top)
    return {
        "runs": runs,
        "floor": {k: floor[k] for k in ("total_us", "modules", "top_cumulative")},
        "commands": {label: _profile(p, floor_names, top) for label, p in seen.items()},
    }


def instructions_in(stderr: bytes) -> int:
    """The instruction count in callgrind's report (its stderr)."""
    found = re.search(rb"Collected\s*:\s*(\d+)", stderr)
    if not found:
        raise RuntimeError(f"no instruction count in callgrind's output: {stderr[-500:]!r}")
    return int(found.group(1))


def instructions(ws: Workspace, first_round: int, runs: int) -> dict[str, Any] | None:
    """Callgrind instruction counts (medians of ``runs``) of the :data:`CALLGRIND` commands and
    the floor; None without valgrind. Hash randomisation is pinned so that runs agree."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        return None
    wrap = (valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null")
    counts: dict[str, list[int]] = {label: [] for label in CALLGRIND}
    floor = []
    pinned = {"PYTHONHASHSEED": "0"}
    for r in range(runs):
        for step in ws.round(first_round + r):
            if step.label in CALLGRIND:
                step.env.update(pinned)
                counts[step.label].append(instructions_in(ws.run(step, wrap)[2]))
            else:
                ws.run(step)
        floor.append(instructions_in(ws.floor(wrap, **pinned)[1]))
    base = statistics.median(floor)
    return {
        "runs": runs,
        "tool": "valgrind --tool=callgrind (instructions executed, Ir)",
        "floor": base,
        "commands": {
            label: {
                "instructions": statistics.median(c),
                "ratio": ratio(statistics.median(c), base),
            }
            for label, c in counts.items()
        },
    }
