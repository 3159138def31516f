"""``python -m bench big-files``: peak memory and bytes stored for one big file.

A workspace holds one file of 100 MB or 1 GB of random bytes (incompressible: the worst
case for the store's size and for memory) and snapstore is driven as an agent drives it,
every command a process of its own (the console script next to this interpreter), in two
modes:

- **hook**: ``snapstore init --no-track-shell``; ``hook claude-code`` UserPromptSubmit,
  then PreToolUse of a Write to the file (*capture*), 1 MiB rewritten in its middle,
  PostToolUse (*record*), Stop; then ``rewind 1 --yes`` (*rewind*) and ``push`` to a
  folder remote (*push*);
- **scan**: ``snapstore init`` (scan mode) with ``[capture] max_file_size`` raised to
  4 GiB in ``.snapstore/config`` (then ``config trust``): the default cap, 10 MiB, would
  skip the file; ``snapstore scan`` finds the new file (*capture*); a turn whose one
  shell call (PreToolUse and PostToolUse of Bash, each a scan) rewrites the same 1 MiB
  (*record*: the PostToolUse scan); then the same rewind and push.

Every process's peak memory is taken two ways: the kernel's ``ru_maxrss`` (``wait4``),
and the peak of ``RssAnon`` in ``/proc/PID/status`` polled every 2 ms. LMDB reads the
store through a memory map, so every page of it a command reads counts in its RSS as
file-backed page cache (shared, reclaimable); ``RssAnon`` is the memory the process
itself holds. Both are printed against the floor, ``python -c "import lmdb, blake3,
zstandard"`` measured the same way; the target (at most 64 MiB over the floor for any
file size) is checked on ``RssAnon``. A step over 3 minutes or 6 GiB of anonymous memory
is killed and recorded as capped, and the steps after it are not run.

Every step is checked: a hook must exit 0 in strict mode and say nothing; after the
rewind the file's BLAKE3 must be the original's; the push is checked by pulling it into
a fresh workspace and reading the file back (``cat TURN --before`` and ``cat TURN``, both
BLAKE3-checked; their memory is reported too). A wrong result fails the run.

Bytes stored: ten edits of a 100 MB random file, one turn each (``begin``, ``pre-write``,
``post-write``, ``end``): one to three runs of 1-4 KiB overwritten at random places,
and in the fifth edit 4 KiB inserted near the start, which shifts every byte after it.
After each edit restic backs the workspace up into its own repository
(:class:`bench.peers.Restic`). The figure is the store's LMDB data file against restic's
repository on disk. Then ``rewind 10 --yes`` must give back the original bytes.

Reproduce::

    python -m bench big-files --quick    # 100 MB only (about a minute, ~1.5 GB under --tmp)
    python -m bench big-files            # 100 MB and 1 GB (about 4 minutes, ~7 GB free)

Results: ``bench/results/big-files.json`` (``quick/`` with ``--quick``). See
docs/benchmarks.md.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import blake3

from . import hook
from .installed import clean_env
from .peers import Restic
from .report import Charts, Figure, size
from .shell_hooks import SESSION as HOOKS_SESSION
from .shell_hooks import bash, event
from .suites import Config, Outcome, Step
from .tree import CorrectnessError, disk_usage

MB, MIB = 10**6, 2**20
SIZES = {"100 MB": 100 * MB, "1 GB": 1000 * MB}
QUICK_SIZES = ("100 MB",)
TARGET_OVER_FLOOR = 64 * MIB
CAP_ANON, CAP_SECONDS = 6 * 2**30, 180.0
SNAPSTORE = os.path.join(os.path.dirname(sys.executable), "snapstore")
FLOOR = [sys.executable, "-c", hook.FLOOR]
FILE = "big.bin"
SESSION = "bench-big-files"  # of the bytes-stored run's commands
HOOK_SESSION = f"claude-code/{HOOKS_SESSION}"  # the hook payloads' session
EDITS, CHUNK = 10, 8 * MIB
Mode = Literal["hook", "scan"]
#: The steps the target is about, in the order they run.
TARGET_STEPS = ("capture", "record", "rewind", "push")


class Capped(Exception):
    """A step killed at the time or memory cap: what it reached is in ``peak``."""

    def __init__(self, label: str, peak: Peak):
        super().__init__(f"{label}: killed at the {peak.capped} cap")
        self.label = label
        self.peak = peak


@dataclass
class Peak:
    """One process: its wall time, exit, and peak memory (bytes) seen both ways."""

    seconds: float
    exit_code: int
    maxrss: int  # ru_maxrss from wait4
    anon: int = 0  # peak RssAnon, polled
    rss: int = 0  # peak VmRSS, polled
    file: int = 0  # peak RssFile (the store's map and other files), polled
    capped: Literal["", "time", "memory"] = ""
    samples: int = 0


def _status(pid: int) -> dict[str, int] | None:
    """RssAnon, VmRSS, RssFile (bytes) of a live process; None once it has exited."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as handle:
            text = handle.read()
    except (FileNotFoundError, ProcessLookupError):
        return None
    out: dict[str, int] = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key == "State" and value.split()[0] in ("Z", "X"):
            return None
        if key in ("RssAnon", "VmRSS", "RssFile"):
            out[key] = int(value.split()[0]) * 1024
    return out


def _poll(pid: int, peak: Peak, began: float) -> None:
    """Follow the process until it exits, keeping its peaks; kill it at a cap."""
    while (now := _status(pid)) is not None:
        peak.samples += 1
        peak.anon = max(peak.anon, now.get("RssAnon", 0))
        peak.rss = max(peak.rss, now.get("VmRSS", 0))
        peak.file = max(peak.file, now.get("RssFile", 0))
        over = "memory" if peak.anon > CAP_ANON else ""
        over = over or ("time" if time.perf_counter() - began > CAP_SECONDS else "")
        if over and not peak.capped:
            peak.capped = over
            os.kill(pid, signal.SIGKILL)
        time.sleep(0.002)


#: Forks the measured command and reports its pid, then its exit code and ru_maxrss (wait4).
#: A process's ru_maxrss starts from the peak RSS of the memory image it was exec'd from
#: (the kernel keeps the larger): spawned straight from this harness (tens of MiB, matplotlib
#: and all), every command would report at least the harness's size. This spawner is a bare
#: interpreter (-S), so what it hands on is smaller than any command measured.
SPAWN = """
import os, sys
fd = int(sys.argv[1])
pid = os.fork()
if pid == 0:
    try:
        os.close(fd)
        os.execv(sys.argv[2], sys.argv[2:])
    finally:
        os._exit(127)
os.write(fd, b"%d\\n" % pid)
_, status, usage = os.wait4(pid, 0)
os.write(fd, b"%d %d\\n" % (os.waitstatus_to_exitcode(status), usage.ru_maxrss))
"""


def measure(
    argv: list[str],
    cwd: str,
    env: dict[str, str],
    stdin: bytes = b"",
    sink: Callable[[bytes], object] | None = None,
) -> tuple[Peak, bytes, bytes]:
    """Run one process to its end, polling its memory; its peak, stdout (unless streamed
    to ``sink``) and stderr."""
    read, write = os.pipe()
    with tempfile.TemporaryFile() as err, os.fdopen(read, "rb") as report:
        began = time.perf_counter()
        spawner = subprocess.Popen(
            [sys.executable, "-S", "-c", SPAWN, str(write), *argv],
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            pass_fds=(write,),
        )
        os.close(write)
        pid = int(report.readline())
        peak = Peak(0.0, 0, 0)
        poller = threading.Thread(target=_poll, args=(pid, peak, began), daemon=True)
        poller.start()
        assert spawner.stdin is not None and spawner.stdout is not None
        try:
            spawner.stdin.write(stdin)
            spawner.stdin.close()
        except BrokenPipeError:
            pass
        out = bytearray()
        while chunk := spawner.stdout.read(MIB):
            if sink is None:
                out += chunk
            else:
                sink(chunk)
        poller.join()
        code, maxrss = (int(n) for n in report.readline().split())
        spawner.wait()
        peak.seconds = time.perf_counter() - began
        peak.exit_code, peak.maxrss = code, maxrss * 1024  # kilobytes on Linux
        err.seek(0)
        return peak, bytes(out), err.read()


def floor(env: dict[str, str], tmp: str, runs: int = 5) -> dict[str, int]:
    """The bare-import process's memory, both ways: the median of ``runs``."""
    peaks = [measure(FLOOR, tmp, env)[0] for _ in range(runs)]
    return {
        "maxrss": int(statistics.median(p.maxrss for p in peaks)),
        "anon": int(statistics.median(p.anon for p in peaks)),
    }


# -- files ----------------------------------------------------------------------------


def digest(path: str) -> str:
    hasher = blake3.blake3()
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK):
            hasher.update(chunk)
    return hasher.hexdigest()


def write_random(path: str, nbytes: int, seed: str) -> str:
    """``nbytes`` of seeded random bytes at ``path``; their BLAKE3."""
    rng, hasher = random.Random(seed), blake3.blake3()
    with open(path, "wb") as handle:
        for start in range(0, nbytes, CHUNK):
            chunk = rng.randbytes(min(CHUNK, nbytes - start))
            hasher.update(chunk)
            handle.write(chunk)
    return hasher.hexdigest()


@dataclass(frozen=True)
class Patch:
    """``data`` written over the bytes at ``offset``, or inserted there."""

    offset: int
    data: bytes
    insert: bool = False


def apply(path: str, patches: list[Patch]) -> None:
    with open(path, "r+b") as handle:
        for patch in patches:
            handle.seek(patch.offset)
            rest = handle.read() if patch.insert else b""
            handle.seek(patch.offset)
            handle.write(patch.data + rest)


def edits(nbytes: int, seed: int) -> list[list[Patch]]:
    """The ten edits of the bytes-stored run: overwrites, and one insertion in the fifth."""
    rng = random.Random(f"big-files-edits:{seed}")
    out = []
    for n in range(EDITS):
        if n == 4:
            at = rng.randrange(nbytes // 10, nbytes // 5)
            out.append([Patch(at, rng.randbytes(4096), insert=True)])
            continue
        runs = [rng.randrange(1024, 4097) for _ in range(rng.randint(1, 3))]
        out.append([Patch(rng.randrange(0, nbytes - r), rng.randbytes(r)) for r in runs])
    return out


# -- one workspace, driven through the CLI --------------------------------------------


@dataclass
class Workspace:
    """A workspace and its store, each command a measured process."""

    root: str
    env: dict[str, str]
    steps: dict[str, Peak] = field(default_factory=dict)

    def run(
        self,
        label: str,
        args: list[str],
        stdin: bytes = b"",
        sink: Callable[[bytes], object] | None = None,
        codes: tuple[int, ...] = (0,),
    ) -> bytes:
        """One snapstore command; kept under ``label`` (the last run wins). It must exit
        with one of ``codes``; a hook must also say nothing (strict mode makes its failures
        an exit code)."""
        is_hook = args[:1] == ["hook"]
        env = {**self.env, "SNAPSTORE_STRICT": "1"} if is_hook else self.env
        peak, out, err = measure([SNAPSTORE, *args], self.root, env, stdin, sink)
        self.steps[label] = peak
        if peak.capped:
            raise Capped(label, peak)
        if peak.exit_code not in codes or (is_hook and err.strip()):
            raise CorrectnessError(
                f"snapstore {' '.join(args)} exited {peak.exit_code}: "
                f"{err.decode(errors='replace').strip()[-1000:]}"
            )
        return out

    def hook(self, label: str, payload: bytes) -> None:
        self.run(label, ["hook", "claude-code"], payload)

    def json(self, label: str, args: list[str], codes: tuple[int, ...] = (0,)) -> Any:
        return json.loads(self.run(label, ["--json", *args], codes=codes))

    @property
    def path(self) -> str:
        return os.path.join(self.root, FILE)


def environment(home: str) -> dict[str, str]:
    """No daemon (everything happens in the measured process), trust records under ``home``."""
    return clean_env(
        HOME=home, XDG_STATE_HOME=os.path.join(home, "state"), SNAPSTORE_DAEMON="off", NO_COLOR="1"
    )


def workspace(base: str, name: str, track_shell: bool) -> Workspace:
    root = os.path.join(base, name)
    os.makedirs(root)
    ws = Workspace(root, environment(base))
    ws.run("init", ["init"] if track_shell else ["init", "--no-track-shell"])
    if track_shell:  # raise the scan's size cap, as a user does: edit the config, trust it
        config = os.path.join(root, ".snapstore", "config")
        with open(config, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
        lines = [
            "max_file_size = 4GiB" if line.startswith("max_file_size") else line for line in lines
        ]
        with open(config, "w", encoding="utf-8") as handle:
            handle.write("\n".join(lines) + "\n")
        ws.run("config trust", ["config", "trust"])
    return ws


def _write_call(root: str, name: str) -> bytes:
    path = os.path.join(root, FILE)
    return event(
        root,
        name,
        tool_name="Write",
        tool_input={"file_path": path, "content": ""},
        tool_use_id="toolu_write",
        **({"tool_response": {"type": "update", "filePath": path}} if name != "PreToolUse" else {}),
    )


def _check(path: str, expected: str, what: str) -> None:
    if digest(path) != expected:
        raise CorrectnessError(f"{what}: {path} does not hold the bytes it must")


def memory(mode: Mode, nbytes: int, base: str, seed: int) -> dict[str, Any]:
    """One file of ``nbytes`` through capture, record, rewind and push (then the checks:
    pull and cat in a fresh workspace); every process's peak memory."""
    ws = workspace(base, "w", track_shell=mode == "scan")
    original = write_random(ws.path, nbytes, f"big-files:{seed}:{nbytes}")
    out: dict[str, Any] = {"mode": mode, "bytes": nbytes, "steps": ws.steps}
    try:
        if mode == "scan":
            found = ws.json("capture", ["scan"])
            if found["added"] != [FILE]:
                raise CorrectnessError(f"the scan did not record {FILE}: {found}")
        ws.hook("begin", event(ws.root, "UserPromptSubmit", prompt="rewrite the middle"))
        if mode == "hook":
            ws.hook("capture", _write_call(ws.root, "PreToolUse"))
        else:
            ws.hook("shell call begins", bash(ws.root, "PreToolUse", "toolu_shell"))
        middle = Patch(nbytes // 2 - MIB // 2, random.Random(seed).randbytes(MIB))
        apply(ws.path, [middle])
        changed = digest(ws.path)
        if mode == "hook":
            ws.hook("record", _write_call(ws.root, "PostToolUse"))
        else:
            ws.hook("record", bash(ws.root, "PostToolUse", "toolu_shell"))
        ws.hook("end", event(ws.root, "Stop"))
        ws.run("rewind", ["--session", HOOK_SESSION, "rewind", "1", "--yes"])
        _check(ws.path, original, "rewind 1")
        remote = os.path.join(base, "remote")
        os.makedirs(remote)
        ws.run("remote add", ["remote", "add", "origin", f"file://{remote}"])
        pushed = ws.json("push", ["--session", HOOK_SESSION, "push"])
        if pushed["turns"] < 1:
            raise CorrectnessError(f"the push sent no turn: {pushed}")
        out["pushed_bytes"], out["remote_bytes"] = pushed["bytes"], disk_usage(remote)
        _check_pulled(base, remote, original, changed, ws.steps)
        out["store_bytes"] = disk_usage(os.path.join(ws.root, ".snapstore"))
    except Capped as exc:
        out["capped"] = {"step": exc.label, "at": exc.peak.capped}
    return out


def _check_pulled(
    base: str, remote: str, original: str, changed: str, steps: dict[str, Peak]
) -> None:
    """A fresh workspace pulls the push; the turn's file, before and after, read back."""
    clone = workspace(base, "clone", track_shell=False)
    clone.steps = steps
    clone.run("remote add", ["remote", "add", "origin", f"file://{remote}"])
    clone.json("pull", ["pull"])
    turns = clone.json("log", ["--session", HOOK_SESSION, "log", "--all"])
    if len(turns) != 1:
        raise CorrectnessError(f"the pulled session has {len(turns)} turns, not 1")
    for label, flag, expected in (("cat --before", ["--before"], original), ("cat", [], changed)):
        hasher = blake3.blake3()
        args = ["--session", HOOK_SESSION, "cat", turns[0]["turn"], FILE, *flag]
        clone.run(label, args, sink=hasher.update)
        if hasher.hexdigest() != expected:
            raise CorrectnessError(f"snapstore {' '.join(args)} in a fresh clone: wrong bytes")


def stored(nbytes: int, base: str, seed: int, with_restic: bool) -> dict[str, Any]:
    """Ten edits of one file, a turn each: the store's size against restic's repository."""
    ws = workspace(base, "w", track_shell=False)
    original = write_random(ws.path, nbytes, f"big-files:{seed}:{nbytes}")
    peer = Restic(ws.root, os.path.join(base, "restic"), (".snapstore",)) if with_restic else None
    if peer:
        peer.snapshot()
    rows = []
    data = os.path.join(ws.root, ".snapstore", "db", "data.mdb")
    for n, patches in enumerate(edits(nbytes, seed), 1):
        ws.run("begin", ["--session", SESSION, "begin", "--prompt", f"edit {n}"])
        ws.run("pre-write", ["--session", SESSION, "pre-write", "--tool", "Edit", FILE])
        apply(ws.path, patches)
        ws.run("post-write", ["--session", SESSION, "post-write", FILE])
        ws.run("end", ["--session", SESSION, "end"])
        if peer:
            peer.snapshot()
        status = ws.json("status", ["--session", SESSION, "status"])
        rows.append(
            {
                "edit": n,
                "inserted": any(p.insert for p in patches),
                "changed_bytes": sum(len(p.data) for p in patches),
                "data_file_bytes": os.path.getsize(data),
                "stored_bytes": status["stored_bytes"],
                "logical_bytes": status["logical_bytes"],
                "restic_bytes": peer.size() if peer else None,
            }
        )
    ws.run("rewind", ["--session", SESSION, "rewind", str(EDITS), "--yes"])
    _check(ws.path, original, f"rewind {EDITS}")
    last = rows[-1]
    return {
        "bytes": nbytes,
        "edits": rows,
        "file_versions_bytes": nbytes * (EDITS + 1),
        "data_file_bytes": last["data_file_bytes"],
        "stored_bytes": last["stored_bytes"],
        "restic_bytes": last["restic_bytes"],
        "restic_version": Restic.version() if peer else None,
        "steps": ws.steps,
    }


# -- the suite ------------------------------------------------------------------------


def suite(cfg: Config, step: Step, charts: Charts) -> Outcome:
    labels = QUICK_SIZES if cfg.quick else tuple(SIZES)
    # --quick leaves restic out of the session suites for their time; here it is the peer of
    # the bytes-stored figure and costs seconds, so only --no-restic without --quick drops it
    with_restic = (cfg.restic or cfg.quick) and Restic.available()
    tick = step("big files: memory, then bytes stored", 2 * len(labels) + 1)
    results: dict[str, Any] = {"memory": {}, "restic": with_restic}
    with tempfile.TemporaryDirectory(prefix="snapstore-bench-big-", dir=cfg.tmp) as tmp:
        results["floor"] = floor(environment(tmp), tmp)
        for label in labels:
            for mode in ("hook", "scan"):
                base = os.path.join(tmp, f"{mode}-{SIZES[label]}")
                os.makedirs(base)
                results["memory"][f"{mode}, {label}"] = memory(mode, SIZES[label], base, cfg.seed)
                shutil.rmtree(base)
                tick()
        base = os.path.join(tmp, "stored")
        os.makedirs(base)
        results["stored"] = stored(SIZES["100 MB"], base, cfg.seed, with_restic)
        tick()
    results = json.loads(json.dumps(results, default=_plain))
    _chart(charts, results)
    params = {
        "sizes": {label: SIZES[label] for label in labels},
        "seed": cfg.seed,
        "target_over_floor_bytes": TARGET_OVER_FLOOR,
        "caps": {"anon_bytes": CAP_ANON, "seconds": CAP_SECONDS},
        "data": "random bytes (incompressible)",
    }
    return Outcome("big-files", params, results, figures(results))


def _plain(value: Any) -> Any:
    if isinstance(value, Peak):
        return asdict(value)
    raise TypeError(f"not JSON: {value!r}")


def figures(results: dict[str, Any]) -> list[Figure]:
    base = results["floor"]
    out = []
    for label, run in results["memory"].items():
        for name in TARGET_STEPS:
            peak = run["steps"].get(name)
            if peak is None:
                why = f"not run: {run['capped']['step']} was capped" if "capped" in run else ""
                out.append(Figure("big", f"{name}, {label}", why or "not run", "", float("nan")))
                continue
            anon = peak["anon"] - base["anon"]
            rss = peak["maxrss"] - base["maxrss"]
            cap = f", killed at the {peak['capped']} cap" if peak["capped"] else ""
            out.append(
                Figure(
                    "big",
                    f"peak memory over the floor, {name}, {label}",
                    f"anon {size(anon)} in {peak['seconds']:.1f} s{cap}",
                    f"ru_maxrss {size(rss)} (floor: anon {size(base['anon'])}, "
                    f"ru_maxrss {size(base['maxrss'])})",
                    anon / run["bytes"],
                    "anon ≤ 64 MiB over the floor",
                    anon <= TARGET_OVER_FLOOR and not peak["capped"],
                )
            )
    s = results["stored"]
    if s["restic_bytes"]:
        for key, what in (("data_file_bytes", "LMDB data file"), ("stored_bytes", "blob bytes")):
            out.append(
                Figure(
                    "big",
                    f"store after {EDITS} edits of a 100 MB random file ({what})",
                    size(s[key]),
                    f"restic repository {size(s['restic_bytes'])}",
                    s[key] / s["restic_bytes"],
                )
            )
    return out


def _chart(charts: Charts, results: dict[str, Any]) -> None:
    base = results["floor"]["anon"]
    series = {
        label: [
            (run["steps"][name]["anon"] - base) / MIB if name in run["steps"] else float("nan")
            for name in TARGET_STEPS
        ]
        for label, run in results["memory"].items()
    }
    charts.bars(
        "big-files-memory",
        "Peak anonymous memory over the floor",
        list(TARGET_STEPS),
        series,
        "MiB",
        log=True,
    )
