"""Running the `snapstore` command for a test: in this process, or as a real process.

A process costs a Python start-up and every import, a tenth of a second or more on a busy
machine, and most commands gain nothing from it. So, as borg runs its archiver tests, a
command runs in this process by default: the console script's dispatch, with the command's
own environment, working folder and standard streams (file descriptors 0, 1 and 2, so that
what the command or its children write at the descriptor level is caught too), and the exit
code that the process would have had. What only a process shows (start-up, signals, locks
between processes, daemons, ``os._exit``) runs as one: ``process=True``.
"""

from __future__ import annotations

import io
import locale
import os
import shutil
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any


def snapstore_bin() -> list[str]:
    """The console script of this environment (or ``python -m snapstore_cli``)."""
    exe = shutil.which("snapstore", path=os.path.dirname(sys.executable))
    return [exe] if exe else [sys.executable, "-m", "snapstore_cli"]


def run_snapstore(
    args: list[str],
    *,
    cwd: Path | str,
    env: Mapping[str, str],
    input: str | bytes | None = None,
    text: bool = True,
    process: bool = False,
    timeout: float = 120,
) -> subprocess.CompletedProcess[Any]:
    """Run ``snapstore ARGS`` in ``cwd`` with exactly ``env``, as ``subprocess.run`` with
    ``capture_output=True`` would report it (``text`` decodes the streams as it does)."""
    if process:
        return subprocess.run(
            [*snapstore_bin(), *args],
            cwd=cwd,
            env=dict(env),
            input=input,
            capture_output=True,
            text=text,
            timeout=timeout,
        )
    data = input.encode(locale.getpreferredencoding(False)) if isinstance(input, str) else input
    with _environment(cwd, env), _streams(data or b"") as (out, err):
        code = _dispatch(args)
    stdout, stderr = out.getvalue(), err.getvalue()
    if text:
        return subprocess.CompletedProcess(args, code, _decode(stdout), _decode(stderr))
    return subprocess.CompletedProcess(args, code, stdout, stderr)


def _dispatch(args: list[str]) -> int:
    """What ``snapstore_cli.launch.main`` does with ``args``, without its process-wide
    start-up tweaks (the collector off, ``os._exit``), ending in the exit code."""
    from snapstore_cli import fast, hooks

    try:
        code = None if args[:1] == ["hook"] else fast.run(args)
        if code is None:
            hooks.main(args)
            code = 0
    except SystemExit as exc:
        code = exc.code
    except Exception:  # what Python prints before a process dies of it
        traceback.print_exc()
        code = 1
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)  # sys.exit("message")
    return 1


def _decode(data: bytes) -> str:
    """As ``subprocess.run(text=True)`` does: the locale's encoding, universal newlines."""
    wrapper = io.TextIOWrapper(io.BytesIO(data), encoding=locale.getpreferredencoding(False))
    return wrapper.read()


@contextmanager
def _environment(cwd: Path | str, env: Mapping[str, str]) -> Iterator[None]:
    """``os.environ`` is exactly ``env`` and the working folder ``cwd``, until the end."""
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    os.environ.clear()
    os.environ.update(env)
    try:
        os.chdir(cwd)
        yield
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)


class _Captured:
    """A temp file on one standard descriptor, read back once the command is done."""

    def __init__(self, fd: int, data: bytes | None = None):
        self.fd, self.file = fd, tempfile.TemporaryFile()
        if data is not None:
            self.file.write(data)
            self.file.seek(0)
        self.saved = os.dup(fd)
        os.dup2(self.file.fileno(), fd)

    def restore(self) -> None:
        os.dup2(self.saved, self.fd)
        os.close(self.saved)

    def getvalue(self) -> bytes:
        self.file.seek(0)
        data = self.file.read()
        self.file.close()
        return data


@contextmanager
def _streams(data: bytes) -> Iterator[tuple[_Captured, _Captured]]:
    """Descriptors 0, 1 and 2 on temp files (0 holding ``data``), and ``sys.stdin``,
    ``sys.stdout`` and ``sys.stderr`` on them as a process would have them."""
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    captured = [_Captured(0, data), _Captured(1), _Captured(2)]
    saved = sys.stdin, sys.stdout, sys.stderr
    wrappers: list[IO[str]] = [
        _wrap(0, "r", sys.__stdin__),
        _wrap(1, "w", sys.__stdout__),
        _wrap(2, "w", sys.__stderr__),
    ]
    sys.stdin, sys.stdout, sys.stderr = wrappers
    try:
        yield captured[1], captured[2]
    finally:
        for wrapper in wrappers[1:]:
            try:
                wrapper.flush()
            except (OSError, ValueError):  # closed by the command
                pass
        sys.stdin, sys.stdout, sys.stderr = saved
        for item in captured:
            item.restore()


def _wrap(fd: int, mode: str, like: IO[str] | None) -> IO[str]:
    """A text stream on ``fd`` with the encoding and error handler of the process's own."""
    raw = io.FileIO(fd, mode, closefd=False)
    buffered: Any = io.BufferedReader(raw) if mode == "r" else io.BufferedWriter(raw)
    return io.TextIOWrapper(
        buffered,
        encoding=getattr(like, "encoding", None) or locale.getpreferredencoding(False),
        errors=getattr(like, "errors", None) or "strict",
    )
