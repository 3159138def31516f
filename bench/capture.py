"""In-process capture latency: figure 1 (flat across tree sizes) and ``pre_write`` alone.

Both time the library calls an agent's tool layer makes around one write of a
10 KiB text file, against the plain-copy floor (``shutil.copy2`` of the same
file) timed in the same loop:

- :func:`probe` writes the same probe files in every tree (1k, 10k, 100k
  files) in a deep folder of that tree, round-robin across the trees, so
  machine noise falls on every size alike;
- :func:`pre_write_latency` is the ``pre_write`` call alone, median and p99.
"""

from __future__ import annotations

import os
import random
import shutil
import tempfile
from collections.abc import Callable
from typing import Any

from snapstore import Store

from .measure import Summary, ratio, timed
from .session import SESSION, SessionRun
from .synthetic import Text
from .workloads import mutate

PROBE_FILES = 20
PROBE_SIZE = 10 * 1024
TURN_WRITES = 20  # writes per turn: a long turn would grow each call's bookkeeping


def _texts(seed: int) -> tuple[Text, list[bytes]]:
    text = Text(random.Random(f"probe:{seed}"))
    files = []
    for _ in range(PROBE_FILES):
        data = b""
        while len(data) < PROBE_SIZE:
            data += b"".join(text.lines(32))
        files.append(data[:PROBE_SIZE].rsplit(b"\n", 1)[0] + b"\n")
    return text, files


class _Prober:
    """Probe files in one workspace, written by a simulated tool call at a time."""

    def __init__(self, store: Store, root: str, folder: str, seed: int, backup: str):
        self.store, self.root, self.backup = store, root, backup
        self.text, contents = _texts(seed)
        self.paths = [
            f"{folder}/probe_{i}.txt" if folder else f"probe_{i}.txt" for i in range(PROBE_FILES)
        ]
        self.current = dict(zip(self.paths, contents, strict=True))
        for rel, data in self.current.items():
            with open(os.path.join(root, rel), "wb") as handle:
                handle.write(data)
        os.makedirs(backup, exist_ok=True)
        self.writes = 0

    def write(self) -> tuple[float, float, float]:
        """One tool call: (pre_write seconds, post_write seconds, plain copy seconds)."""
        if self.writes % TURN_WRITES == 0:
            if self.writes:
                self.store.end_turn(SESSION)
            self.store.begin_turn(SESSION, "probe")
        rel = self.paths[self.writes % PROBE_FILES]
        path = os.path.join(self.root, rel)
        copy, _ = timed(lambda: shutil.copy2(path, os.path.join(self.backup, str(self.writes))))
        pre, _ = timed(lambda: self.store.pre_write([rel], "Edit", SESSION))
        data = mutate(self.current[rel], self.text)
        self.current[rel] = data
        with open(path, "wb") as handle:
            handle.write(data)
        post, _ = timed(lambda: self.store.post_write([rel], SESSION))
        self.writes += 1
        return pre, post, copy

    def finish(self) -> None:
        if self.writes:
            self.store.end_turn(SESSION)


def _deep_folder(run: SessionRun) -> str:
    """The deepest folder of the base tree (first in sort order among equals)."""
    folders = {os.path.dirname(rel) for rel in run.tree.base}
    return min(folders, key=lambda f: (-f.count("/") - bool(f), f))


def probe(
    runs: list[SessionRun], rounds: int, seed: int, tick: Callable[[], None] | None = None
) -> dict[str, Any]:
    """Figure 1: per-write capture latency (pre_write + post_write) per tree size."""
    probers = [
        _Prober(
            run.store, run.root, _deep_folder(run), seed, os.path.join(run.workdir, "probe-copy")
        )
        for run in runs
    ]
    samples: list[dict[str, list[float]]] = [
        {"write": [], "pre": [], "post": [], "copy": []} for _ in runs
    ]
    for _ in range(rounds):
        for prober, into in zip(probers, samples, strict=True):
            pre, post, copy = prober.write()
            into["pre"].append(pre)
            into["post"].append(post)
            into["write"].append(pre + post)
            into["copy"].append(copy)
        if tick:
            tick()
    for prober in probers:
        prober.finish()
    sizes = {}
    for run, into in zip(runs, samples, strict=True):
        summary = {name: Summary.of(values).to_json() for name, values in into.items()}
        summary["ratio_to_copy"] = ratio(summary["write"]["median"], summary["copy"]["median"])
        sizes[str(run.info["files"])] = summary
    return {"rounds": rounds, "file_size": PROBE_SIZE, "sizes": sizes}


def pre_write_latency(
    reps: int, seed: int, tick: Callable[[], None] | None = None
) -> dict[str, Any]:
    """The in-process ``pre_write`` call for a 10 KiB file, median and p99."""
    pre: list[float] = []
    post: list[float] = []
    copy: list[float] = []
    with tempfile.TemporaryDirectory(prefix="snapstore-bench-") as tmp:
        root = os.path.join(tmp, "ws")
        os.makedirs(os.path.join(root, "src"))
        with Store.init(root) as store:
            prober = _Prober(store, root, "src", seed, os.path.join(tmp, "copy"))
            for i in range(reps):
                p, q, c = prober.write()
                pre.append(p)
                post.append(q)
                copy.append(c)
                if tick and i % 10 == 9:
                    tick()
            prober.finish()
    result = {
        "reps": reps,
        "file_size": PROBE_SIZE,
        "pre_write": Summary.of(pre).to_json(),
        "post_write": Summary.of(post).to_json(),
        "plain_copy": Summary.of(copy).to_json(),
    }
    result["ratio_to_copy"] = ratio(result["pre_write"]["median"], result["plain_copy"]["median"])
    return result
