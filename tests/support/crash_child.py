"""The child process of the crash tests: a seeded scenario that survives SIGKILL.

    python -m tests.support.crash_child WORKDIR SEED

runs a scenario of agent turns (two sessions), user edits, rewinds, undos and
gc against ``WORKDIR/ws``, picking up after the last operation it finished.
Run it again after a kill and it first resumes an interrupted rewind (as the
CLI does), then finishes the interrupted operation and goes on.

Only this test program reads ``SNAPSTORE_FAULT`` and installs a fault handler
(the library never reads the environment): ``hit:N`` kills the process with
SIGKILL at the N-th fault point the library passes, ``NAME:N`` at the N-th
pass of that point; ``WORKDIR/faults`` records where each kill happened.

Every operation is idempotent given its plan, which is saved durably before
the operation starts: the bytes each path gets (turns, edits), or the target
and the number of rewind records before it (rewinds, undos), so a re-run can
tell whether the journal commit happened. ``WORKDIR/progress`` gets ``begin I``
before operation I and ``end I HASH`` after it, HASH naming the whole tree.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import random
import signal
import sys
from collections.abc import Callable
from typing import Any

from snapstore import NotFound, Store
from snapstore.core import faults
from snapstore.ops.gc import GcPolicy

from .trees import snapshot

BASE_TIME = 1_767_225_600.0
SESSIONS = ("a", "b")
TEXT_FILES = ("t0.txt", "t1.txt", "t2.txt", "pkg/sub/m.py", "pkg/util.py", "new/deep/n.txt")
PATHS = (*TEXT_FILES, "bin.dat", "run.sh", "link")
OPS = 60

Plan = dict[str, Any]


def scenario(seed: int) -> list[dict[str, Any]]:
    """The operations of one seeded scenario (their effect depends on the tree at run time)."""
    rng = random.Random(seed)
    ops: list[dict[str, Any]] = [
        {
            "kind": "edit",
            "edits": [{"path": p, "do": "line", "at": 0, "text": "base"} for p in TEXT_FILES[:3]],
        }
    ]
    for _ in range(OPS - 1):
        kind = rng.choices(["turn", "edit", "rewind", "undo", "gc"], [45, 12, 20, 13, 10])[0]
        op: dict[str, Any] = {"kind": kind, "session": rng.choice(SESSIONS)}
        if kind in ("turn", "edit"):
            op["edits"] = [_edit(rng) for _ in range(rng.randint(1, 4 if kind == "turn" else 2))]
        elif kind == "rewind":
            op.update(
                k=rng.randrange(6),
                mode=rng.choice(["both", "both", "code"]),
                on_conflict=rng.choice(["skip", "markers", "theirs"]),
            )
        elif kind == "gc":
            op["keep_turns"] = rng.randint(2, 5)
        ops.append(op)
    return ops


def _edit(rng: random.Random) -> dict[str, Any]:
    path = rng.choice(PATHS)
    if path == "link":
        return {"path": path, "do": "link", "target": rng.choice(["t0.txt", "../outside", "gone"])}
    if path == "bin.dat":
        return {
            "path": path,
            "do": "binary",
            "seed": rng.randrange(1 << 30),
            "size": rng.randint(2000, 60000),
        }
    do = rng.choices(["line", "delete", "mode"], [8, 1, 1])[0]
    return {"path": path, "do": do, "at": rng.randrange(1000), "text": f"v{rng.randrange(10**6)}"}


def plan_edits(ws: str, edits: list[dict[str, Any]]) -> Plan:
    """What each path will hold after these edits, from what the tree holds now."""
    tree = snapshot(ws)
    plan: Plan = {}
    for edit in edits:
        path = edit["path"]
        kind, data, mode = tree.get(path, ("file", None, 0o644))
        if edit["do"] == "delete":
            plan[path] = None
            continue
        if edit["do"] == "link":
            plan[path] = {"kind": "link", "data": _b64(edit["target"].encode()), "mode": 0o777}
            continue
        if edit["do"] == "binary":
            data = random.Random(edit["seed"]).randbytes(edit["size"])
        elif edit["do"] == "mode":
            data = data if kind == "file" and data is not None else b"#!/bin/sh\nexit 0\n"
            mode = 0o755 if mode != 0o755 else 0o644
        else:
            lines = (
                (data or b"").decode(errors="replace").splitlines(keepends=True)
                if kind == "file"
                else []
            )
            lines = lines or [f"{path} line {n}\n" for n in range(60)]
            lines[edit["at"] % len(lines)] = f"{edit['text']}\n"
            data = "".join(lines).encode()
        plan[path] = {"kind": "file", "data": _b64(data), "mode": mode}
    return plan


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def put(ws: str, tmp_dir: str, path: str, target: dict[str, Any] | None) -> None:
    """Make ``path`` hold ``target`` atomically, as an agent's tool or an editor would."""
    full = os.path.join(ws, path)
    if target is None:
        if os.path.lexists(full):
            os.unlink(full)
        return
    os.makedirs(os.path.dirname(full), exist_ok=True)
    tmp = os.path.join(tmp_dir, "put.tmp")
    if os.path.lexists(tmp):
        os.unlink(tmp)
    data = base64.b64decode(target["data"])
    if target["kind"] == "link":
        os.symlink(data.decode(), tmp)
    else:
        with open(tmp, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, target["mode"])
    os.replace(tmp, full)


def tree_hash(ws: str) -> str:
    digest = hashlib.sha256()
    for rel, (kind, data, mode) in sorted(snapshot(ws, dirs=True).items()):
        digest.update(f"{rel}\0{kind}\0{mode}\0{len(data)}\0".encode() + data)
    return digest.hexdigest()


class Runner:
    """Runs the scenario's operations from where the progress file says it stopped."""

    def __init__(self, workdir: str, seed: int):
        self.workdir = workdir
        self.ws = os.path.join(workdir, "ws")
        self.tmp = os.path.join(workdir, "tmp")
        self.plans = os.path.join(workdir, "plans")
        for folder in (self.ws, self.tmp, self.plans):
            os.makedirs(folder, exist_ok=True)
        self.ops = scenario(seed)
        self.now = BASE_TIME

    def run(self, on_end: Callable[[int, str], None] | None = None) -> None:
        first = self._finished() + 1
        with Store.init(self.ws, clock=lambda: self.now) as store:
            if store.unfinished_operations():
                store.resume()
            for index in range(first, len(self.ops)):
                self.now = BASE_TIME + index * 600
                self._log(f"begin {index}")
                getattr(self, "_" + self.ops[index]["kind"])(store, index, self.ops[index])
                digest = tree_hash(self.ws)
                self._log(f"end {index} {digest}")
                if on_end is not None:
                    on_end(index, digest)

    def _finished(self) -> int:
        done = -1
        try:
            with open(os.path.join(self.workdir, "progress"), encoding="utf-8") as handle:
                for line in handle:
                    if line.startswith("end "):
                        done = int(line.split()[1])
        except FileNotFoundError:
            pass
        return done

    def _log(self, line: str) -> None:
        with open(os.path.join(self.workdir, "progress"), "a", encoding="utf-8") as handle:
            handle.write(line + "\n")

    def _plan(self, index: int, make: Callable[[], Any]) -> Any:
        """The operation's plan: saved before it starts, so a re-run repeats it exactly."""
        path = os.path.join(self.plans, f"{index}.json")
        try:
            with open(path, encoding="utf-8") as handle:
                return json.load(handle)
        except FileNotFoundError:
            pass
        plan = make()
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as handle:
            json.dump(plan, handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
        return plan

    def _edit(self, store: Store, index: int, op: dict[str, Any]) -> None:
        plan = self._plan(index, lambda: plan_edits(self.ws, op["edits"]))
        for path, target in plan.items():
            put(self.ws, self.tmp, path, target)

    def _turn(self, store: Store, index: int, op: dict[str, Any]) -> None:
        plan = self._plan(index, lambda: plan_edits(self.ws, op["edits"]))
        session, prompt = op["session"], f"op{index}"
        with store.repo.read() as v:
            turn = next((t for t in v.turns() if t.prompt == prompt), None)
        if turn is not None and turn.state != "open":
            return  # the turn ended before the crash
        if turn is None:
            store.begin_turn(session, prompt)
        for path, target in plan.items():
            store.pre_write([path], "Write", session)
            put(self.ws, self.tmp, path, target)
            store.post_write([path], session)
        store.end_turn(session)

    def _operations(self, store: Store) -> int:
        """How many operations (rewinds, undos, switches) the store has journaled."""
        with store.repo.read() as v:
            return sum(1 for t in v.turns() if t.op is not None)

    def _rewind(self, store: Store, index: int, op: dict[str, Any]) -> None:
        def make() -> dict[str, Any]:
            try:
                points = store.rewind_points(op["session"])
            except NotFound:
                points = []
            target = points[op["k"] % len(points)].turn.id if points else None
            return {"target": target, "before": self._operations(store)}

        plan = self._plan(index, make)
        if plan["target"] is None or self._operations(store) > plan["before"]:
            return  # nothing to rewind, or the journal commit happened and resume finished it
        store.rewind(plan["target"], op["session"], mode=op["mode"], on_conflict=op["on_conflict"])

    def _undo(self, store: Store, index: int, op: dict[str, Any]) -> None:
        plan = self._plan(index, lambda: {"before": self._operations(store)})
        if self._operations(store) > plan["before"]:
            return
        with contextlib.suppress(NotFound):  # nothing to undo in this session
            store.undo(None, op["session"])

    def _gc(self, store: Store, index: int, op: dict[str, Any]) -> None:
        store.gc(GcPolicy(keep_days=None, keep_turns=op["keep_turns"]))


def install_fault(spec: str, record: str) -> None:
    """Kill this process with SIGKILL at the chosen fault point, noting which in ``record``.

    ``spec`` is a comma-separated list of ``NAME:N`` (or ``hit:N``, any point);
    the first to come true kills.
    """
    counts = [[name, int(n)] for name, _, n in (part.rpartition(":") for part in spec.split(","))]

    def handler(point: str) -> None:
        for condition in counts:
            if condition[0] in ("hit", point):
                condition[1] -= 1
                if condition[1] <= 0:
                    with open(record, "a", encoding="utf-8") as handle:
                        handle.write(point + "\n")
                    os.kill(os.getpid(), signal.SIGKILL)

    faults.install(handler)


def main(argv: list[str]) -> None:
    workdir, seed = argv[0], int(argv[1])
    spec = os.environ.get("SNAPSTORE_FAULT")
    if spec:
        install_fault(spec, os.path.join(workdir, "faults"))
    Runner(workdir, seed).run()


if __name__ == "__main__":
    main(sys.argv[1:])
