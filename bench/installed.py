"""snapstore installed as users install it, for the process benchmarks.

An editable install finds its modules through a path hook and may compile
them from source in every process; a user's ``pip install snapstore`` puts a
built wheel into site-packages with its ``.pyc`` files. So the process figures
run a virtual environment of their own, made with the interpreter that runs
the benchmark and cached under ``bench/.cache/installed/``:

- a copy of the sources (``snapstore/``, ``cli/``, ``pyproject.toml``, the
  readme and licence) is built and installed with a plain ``pip install``
  (not ``-e``), which compiles the bytecode;
- the cache key is a digest of those sources: when only the Python sources
  changed, snapstore alone is reinstalled; when ``pyproject.toml`` or the
  interpreter changed, the environment is made again.

Every command runs from a temporary folder, never from the checkout, so that
nothing on ``sys.path`` can pick up the source tree instead.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .measure import timed

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CACHE = os.path.join(ROOT, "bench", ".cache", "installed")
SOURCES = ("snapstore", "cli")
FILES = ("pyproject.toml", "README.md", "LICENSE")


def clean_env(**extra: str) -> dict[str, str]:
    """The environment of a measured process: no SNAPSTORE_* and no PYTHON* settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SNAPSTORE_", "PYTHON"))}
    return {**env, **extra}


def run(
    cmd: list[str],
    cwd: str,
    stdin: bytes = b"",
    env: dict[str, str] | None = None,
    ok: Sequence[int] = (0,),
    silent: bool = False,
) -> tuple[float, subprocess.CompletedProcess[bytes]]:
    """Wall time and outcome of one process; an exit code outside ``ok`` (or, with
    ``silent``, anything on stderr) is an error: a figure is only taken of work that was done."""
    seconds, proc = timed(
        lambda: subprocess.run(
            cmd, cwd=cwd, input=stdin, capture_output=True, env=env or clean_env(), check=False
        )
    )
    if proc.returncode not in ok or (silent and proc.stderr.strip()):
        raise RuntimeError(
            f"{' '.join(cmd)} (in {cwd}) failed ({proc.returncode}): "
            f"{proc.stderr.decode(errors='replace').strip()[-2000:]}"
        )
    return seconds, proc


def _digest(paths: list[str]) -> str:
    h = hashlib.blake2b(digest_size=16)
    for path in paths:
        h.update(os.path.relpath(path, ROOT).encode() + b"\0")
        with open(path, "rb") as handle:
            h.update(handle.read())
    return h.hexdigest()


def _sources() -> list[str]:
    found = []
    for package in SOURCES:
        for folder, dirs, names in os.walk(os.path.join(ROOT, package)):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            found += [os.path.join(folder, n) for n in sorted(names) if n.endswith(".py")]
    return found


def _check(cmd: list[str], cwd: str) -> str:
    proc = subprocess.run(
        cmd, cwd=cwd, capture_output=True, text=True, env=clean_env(), check=False
    )
    if proc.returncode != 0:
        raise RuntimeError(
            f"{' '.join(cmd)} failed ({proc.returncode}):\n"
            f"{proc.stdout[-2000:]}{proc.stderr[-2000:]}"
        )
    return proc.stdout


@dataclass(frozen=True)
class Installed:
    """The cached environment: its interpreter and its ``snapstore`` console script."""

    venv: str

    @property
    def python(self) -> str:
        return os.path.join(self.venv, "bin", "python")

    @property
    def snapstore(self) -> str:
        return os.path.join(self.venv, "bin", "snapstore")

    def describe(self) -> dict[str, Any]:
        """Where snapstore was imported from, the interpreter, and every installed version."""
        script = (
            "import json, sys, importlib.metadata as m, snapstore, snapstore_cli;"
            "print(json.dumps({'python': sys.version.split()[0],"
            "'executable': sys.executable, 'snapstore': snapstore.__file__,"
            "'snapstore_cli': snapstore_cli.__file__, 'versions': {d.metadata['Name']:"
            " d.version for d in m.distributions()}}))"
        )
        with tempfile.TemporaryDirectory() as tmp:
            info = json.loads(_check([self.python, "-c", script], tmp))
        for key in ("snapstore", "snapstore_cli"):
            if not info[key].startswith(self.venv + os.sep):
                raise RuntimeError(f"{key} was imported from {info[key]}, not the installed copy")
        info["versions"] = dict(sorted(info["versions"].items()))
        return info


def ensure(log: Any = print) -> Installed:
    """Build (or reuse) the installed environment for the current sources."""
    sources = _sources()
    files = [os.path.join(ROOT, f) for f in FILES if os.path.exists(os.path.join(ROOT, f))]
    meta_key = _digest([os.path.join(ROOT, "pyproject.toml")]) + sys.version
    code_key = _digest(sources + files)
    venv = os.path.join(CACHE, "venv")
    installed = Installed(venv)
    stamp = os.path.join(CACHE, "stamp.json")
    try:
        with open(stamp, encoding="utf-8") as handle:
            old = json.load(handle)
    except (OSError, ValueError):
        old = {}
    if old.get("code") == code_key and os.access(installed.snapstore, os.X_OK):
        return installed
    fresh = old.get("meta") != meta_key or not os.access(installed.python, os.X_OK)
    with tempfile.TemporaryDirectory(prefix="snapstore-install-") as tmp:
        src = os.path.join(tmp, "src")
        os.makedirs(src)
        for package in SOURCES:
            shutil.copytree(
                os.path.join(ROOT, package),
                os.path.join(src, package),
                ignore=shutil.ignore_patterns("__pycache__"),
            )
        for path in files:
            shutil.copy2(path, src)
        if fresh:
            log("processes: making the installed environment (pip install .) ...")
            shutil.rmtree(venv, ignore_errors=True)
            os.makedirs(CACHE, exist_ok=True)
            _check([getattr(sys, "_base_executable", sys.executable), "-m", "venv", venv], tmp)
            _check([installed.python, "-m", "pip", "install", "--quiet", src], tmp)
        else:
            log("processes: the sources changed: reinstalling snapstore (pip install .) ...")
            _check(
                [
                    installed.python,
                    "-m",
                    "pip",
                    "install",
                    "--quiet",
                    "--no-deps",
                    "--force-reinstall",
                    src,
                ],
                tmp,
            )
    site = os.path.dirname(os.path.dirname(installed.describe()["snapstore"]))
    # pip compiles on install; this makes sure even if it was told not to
    _check(
        [
            installed.python,
            "-m",
            "compileall",
            "-q",
            os.path.join(site, "snapstore"),
            os.path.join(site, "snapstore_cli"),
        ],
        CACHE,
    )
    with open(stamp, "w", encoding="utf-8") as handle:
        json.dump({"meta": meta_key, "code": code_key}, handle)
    return installed
