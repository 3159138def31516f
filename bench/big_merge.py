"""``python -m bench big-merge``: rewinds that merge a big text file, against git merge-file.

For each size (10, 100 and 500 MB; ``--quick``: 10 and 100 MB) an SQL dump of that size
is generated (one ``INSERT`` a line, about 50 bytes, every line distinct), and four
rewinds are run on it, each in a workspace of its own, every command a process of its own
(the console script, daemon off, as ``bench/big_files.py`` runs them):

- **apart**: the agent edits row 10, then the user edits a row near the end; the rewind
  takes the agent's edit out by splicing (``text/bigmerge.py``);
- **window**: the agent edits two rows 200 apart in the middle, the user the row halfway
  between; the rewind merges that stretch line by line;
- **wide window**: the same with the agent's rows 24,000 apart, so that the window holds
  72,000 lines, near the most a big merge takes line by line (its memory goes with them);
- **conflict**: both edit the same row: a conflict, and the file is left alone.

The agent's turn is ``begin``, ``pre-write``, ``post-write``, ``end``; then the user's
version is copied in and ``rewind 1 --yes`` runs (the figure: its wall time and peak
``RssAnon`` over the floor, polled as ``bench/big_files.py`` polls it; target at most
64 MiB, whatever the size); then ``undo --yes``. ``git merge-file -p current agent
before`` runs on the same three files, measured the same way (its output streamed into
BLAKE3; it holds the files in memory, so its peak is the reference's, not a target).

Checked, and a mismatch fails the run: the rewind merged exactly when git merges cleanly;
the merged file's BLAKE3 is that of git's output; a conflict leaves the user's file as it
was; the undo gives the user's file back.

Results: ``bench/results/big-merge.json`` (``quick/`` with ``--quick``); docs/benchmarks.md.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Mapping
from typing import Any

import blake3

from .big_files import (
    FLOOR,
    TARGET_OVER_FLOOR,
    Capped,
    Peak,
    digest,
    environment,
    floor,
    measure,
    workspace,
)
from .report import Charts, Figure, size
from .suites import Config, Outcome, Step
from .tree import CorrectnessError

MB = 10**6
SIZES = {"10 MB": 10 * MB, "100 MB": 100 * MB, "500 MB": 500 * MB}
QUICK_SIZES = ("10 MB", "100 MB")
FILE = "dump.sql"
SESSION = "bench-big-merge"
ROWS_PER_WRITE = 100_000
GIT = shutil.which("git") or "git"  # the spawner execs a path
#: Rows between the agent's two edits of the wide window: its three versions then hold
#: 72,000 lines, near the 75,000 a big merge takes line by line (text/bigmerge.py).
WIDE = 24_000


def row(n: int) -> bytes:
    return b"INSERT INTO t VALUES (%d, 'name %d', %d);\n" % (n, n * 7919 % 1_000_003, n % 97)


ROW = len(row(5_000_000))


def write_dump(path: str, nbytes: int, edits: Mapping[int, bytes]) -> None:
    """The dump of about ``nbytes``, with the rows of ``edits`` replaced."""
    rows = nbytes // ROW
    with open(path, "wb") as handle:
        for start in range(0, rows, ROWS_PER_WRITE):
            stop = min(rows, start + ROWS_PER_WRITE)
            handle.write(b"".join(edits.get(n) or row(n) for n in range(start, stop)))


Edits = tuple[dict[int, bytes], dict[int, bytes]]


def scenarios(nbytes: int) -> dict[str, Edits]:
    """Per scenario, the agent's edits and the user's (rows replaced)."""
    rows, middle = nbytes // ROW, nbytes // ROW // 2
    return {
        "apart": ({10: b"-- the agent's row\n"}, {rows - 10: b"-- my row\n"}),
        "window": (
            {middle: b"-- the agent's row\n", middle + 200: b"-- and another\n"},
            {middle + 100: b"-- my row\n"},
        ),
        "wide window": (
            {middle: b"-- the agent's row\n", middle + WIDE: b"-- and another\n"},
            {middle + WIDE // 2: b"-- my row\n"},
        ),
        "conflict": ({middle: b"-- the agent's row\n"}, {middle: b"-- my row\n"}),
    }


def one(base: str, before: str, nbytes: int, name: str, edits: Edits) -> dict[str, Any]:
    """One scenario: the agent's turn, the user's edit, the rewind, git, the undo."""
    agent_edits, user_edits = edits
    agent, current = os.path.join(base, "agent.sql"), os.path.join(base, "current.sql")
    write_dump(agent, nbytes, agent_edits)
    write_dump(current, nbytes, {**agent_edits, **user_edits})
    ws = workspace(base, name, track_shell=False)
    path = os.path.join(ws.root, FILE)
    out: dict[str, Any] = {"scenario": name, "bytes": os.path.getsize(before), "steps": ws.steps}
    try:
        shutil.copyfile(before, path)
        ws.run("begin", ["--session", SESSION, "begin", "--prompt", "edit the dump"])
        ws.run("pre-write", ["--session", SESSION, "pre-write", "--tool", "Edit", FILE])
        shutil.copyfile(agent, path)
        ws.run("post-write", ["--session", SESSION, "post-write", FILE])
        ws.run("end", ["--session", SESSION, "end"])
        shutil.copyfile(current, path)
        mine = digest(path)
        result = ws.json("rewind", ["--session", SESSION, "rewind", "1", "--yes"], codes=(0, 1))
        hasher = blake3.blake3()
        argv = [GIT, "merge-file", "-p", current, agent, before]
        git, _, err = measure(argv, base, ws.env, sink=hasher.update)
        if not 0 <= git.exit_code < 128:
            raise CorrectnessError(f"git merge-file failed: {err.decode(errors='replace')}")
        out["git"], out["git_clean"] = git, git.exit_code == 0
        out["merged"] = result["merged"] == [FILE]
        out["reason"] = result["conflicts"][0]["reason"] if result["conflicts"] else ""
        if out["git_clean"] != (name != "conflict"):
            raise CorrectnessError(f"{name}: git merge-file exited {git.exit_code}")
        if out["merged"] != out["git_clean"] or (not out["merged"] and not out["reason"]):
            raise CorrectnessError(f"{name}: the rewind did not do what git does: {result}")
        want = hasher.hexdigest() if out["merged"] else mine
        if digest(path) != want:
            raise CorrectnessError(f"{name}: the rewound {FILE} is not git's merge")
        ws.run("undo", ["--session", SESSION, "undo"])
        if digest(path) != mine:
            raise CorrectnessError(f"{name}: the undo did not give the user's {FILE} back")
    except Capped as exc:
        out["capped"] = {"step": exc.label, "at": exc.peak.capped}
    finally:
        for path in (agent, current):
            os.unlink(path)
        shutil.rmtree(ws.root)
    return out


def suite(cfg: Config, step: Step, charts: Charts) -> Outcome:
    labels = QUICK_SIZES if cfg.quick else tuple(SIZES)
    tick = step("big merge: rewinds of a big text file", len(labels) * len(scenarios(MB)))
    results: dict[str, Any] = {"runs": {}}
    with tempfile.TemporaryDirectory(prefix="snapstore-bench-merge-", dir=cfg.tmp) as tmp:
        results["floor"] = floor(environment(tmp), tmp)
        for label in labels:
            nbytes = SIZES[label]
            base = os.path.join(tmp, str(nbytes))
            os.makedirs(base)
            before = os.path.join(base, "before.sql")
            write_dump(before, nbytes, {})
            for name, edits in scenarios(nbytes).items():
                results["runs"][f"{name}, {label}"] = one(base, before, nbytes, name, edits)
                tick()
            shutil.rmtree(base)
    results = json.loads(json.dumps(results, default=_plain))
    params = {
        "sizes": {label: SIZES[label] for label in labels},
        "row_bytes": ROW,
        "target_over_floor_bytes": TARGET_OVER_FLOOR,
        "floor": FLOOR,
    }
    return Outcome("big-merge", params, results, figures(results))


def _plain(value: Any) -> Any:
    if isinstance(value, Peak):
        return {k: getattr(value, k) for k in Peak.__dataclass_fields__}
    raise TypeError(f"not JSON: {value!r}")


def figures(results: dict[str, Any]) -> list[Figure]:
    base = results["floor"]
    out = []
    for label, run in results["runs"].items():
        peak, git = run["steps"].get("rewind"), run.get("git")
        if peak is None or git is None:
            why = f"capped at {run['capped']['step']}" if "capped" in run else "not run"
            out.append(Figure("merge", f"rewind, {label}", why, "", float("nan")))
            continue
        anon = peak["anon"] - base["anon"]
        verdict = "merged" if run["merged"] else "conflict"
        out.append(
            Figure(
                "merge",
                f"rewind, {label} ({verdict}, as git)",
                f"{peak['seconds']:.2f} s, anon {size(anon)} over the floor",
                f"git merge-file {git['seconds']:.2f} s, maxrss {size(git['maxrss'])}",
                peak["seconds"] / git["seconds"],
                "anon ≤ 64 MiB over the floor",
                anon <= TARGET_OVER_FLOOR and not peak["capped"],
            )
        )
    return out
