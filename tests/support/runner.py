"""Running the `snapstore` command for a test: in this process, or as a real process.

A process costs a Python start-up and every import, a tenth of a second or more on a busy
machine, and most commands gain nothing from it. So, as borg runs its archiver tests, a
command runs in this process by default: the console script's dispatch, with the command's
own environment, working folder and standard streams (file descriptors 0, 1 and 2, so that
what the command or its children write at the descriptor level is caught too), and the exit
code that the process would have had. What only a process shows (start-up, signals, locks
between processes, daemons, ``os._exit``) runs as one: ``process=True``. So does a command
run from a worker thread: the environment, folder and descriptors are the whole process's.
"""

from __future__ import annotations

import contextlib
import io
import locale
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import traceback
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

FIXED_NOW = 1_767_225_600.0  # 2026-01-01T00:00:00Z


def hermetic_env(**extra: str) -> dict[str, str]:
    """This environment without snapstore's own settings, a fixed clock, no colour, 120
    columns, a dumb terminal, and no daemon started by hooks (but in the daemon's own tests);
    then ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SNAPSTORE_")}
    env.update({"SNAPSTORE_NOW": str(FIXED_NOW), "NO_COLOR": "1", "COLUMNS": "120", "TERM": "dumb"})
    env["SNAPSTORE_DAEMON"] = "off"
    env.update(extra)
    return env


def snapstore_bin() -> list[str]:
    """The console script of this environment (or ``python -m snapstore_cli``)."""
    exe = shutil.which("snapstore", path=os.path.dirname(sys.executable))
    return [exe] if exe else [sys.executable, "-m", "snapstore_cli"]


def run_snapstore(
    args: list[str | bytes],
    *,
    cwd: Path | str,
    env: Mapping[str, str],
    input: str | bytes | None = None,
    text: bool = True,
    process: bool = False,
    timeout: float = 120,
    click: bool = False,
) -> subprocess.CompletedProcess[Any]:
    """Run ``snapstore ARGS`` in ``cwd`` with exactly ``env``, as ``subprocess.run`` with
    ``capture_output=True`` would report it (``text`` decodes the streams as it does). With
    ``click`` (in this process only), the Click application runs it, never a fast path."""
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
    if threading.current_thread() is not threading.main_thread():
        raise RuntimeError("run snapstore in-process from the main thread only (process=True)")
    data = input.encode(locale.getpreferredencoding(False)) if isinstance(input, str) else input
    argv = [os.fsdecode(arg) for arg in args]  # what Python makes of a process's argv
    with _environment(cwd, env, [snapstore_bin()[0], *argv]):
        code, stdout, stderr = _captured(data or b"", lambda: _dispatch(argv, click))
    if text:
        return subprocess.CompletedProcess(args, code, _decode(stdout), _decode(stderr))
    return subprocess.CompletedProcess(args, code, stdout, stderr)


def snapstore(
    cwd: Path | str,
    *args: str | bytes,
    env: Mapping[str, str] | None = None,
    input: str | bytes | None = None,
    process: bool = False,
) -> subprocess.CompletedProcess[str]:
    """``snapstore ARGS`` in ``cwd``, its output as text; with :func:`hermetic_env` unless
    ``env`` is given."""
    return run_snapstore(
        list(args),
        cwd=cwd,
        env=hermetic_env() if env is None else env,
        input=input,
        process=process,
    )


def _dispatch(args: list[str], click: bool = False) -> int:
    """What ``snapstore_cli.launch.main`` does with ``args``, without its process-wide
    start-up tweaks (the collector off, ``os._exit``), ending in the exit code. Its hook
    branch is launch's own; tests/e2e/test_runner.py compares the rest with a process.
    With ``click``, the Click application runs every command line."""
    from snapstore_cli import launch
    from snapstore_cli.doors import fast
    from snapstore_cli.doors.click import app

    try:
        if click:  # the Click application alone
            code = None
        elif args[:1] == ["hook"]:
            code = launch._hook(args)
        else:
            code = fast.run(args)
        if code is None:
            app.run(args)
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
def _environment(cwd: Path | str, env: Mapping[str, str], argv: list[str]) -> Iterator[None]:
    """``os.environ`` is exactly ``env``, the working folder ``cwd`` and ``sys.argv`` the
    console script's (`hook install` names the executable it runs as), until the end."""
    saved_env, saved_cwd, saved_argv = dict(os.environ), os.getcwd(), sys.argv
    os.environ.clear()
    os.environ.update(env)
    sys.argv = argv
    try:
        os.chdir(cwd)
        yield
    finally:
        os.chdir(saved_cwd)
        sys.argv = saved_argv
        os.environ.clear()
        os.environ.update(saved_env)


@contextmanager
def _on_fd(fd: int, data: bytes = b"") -> Iterator[IO[bytes]]:
    """Descriptor ``fd`` on a temp file (holding ``data``) until the end."""
    with tempfile.TemporaryFile() as file:
        file.write(data)
        file.seek(0)
        saved = os.dup(fd)
        os.dup2(file.fileno(), fd)
        try:
            yield file
        finally:
            os.dup2(saved, fd)
            os.close(saved)


def _captured(data: bytes, run: Callable[[], int]) -> tuple[int, bytes, bytes]:
    """``run()`` with descriptors 0, 1 and 2 on temp files (0 holding ``data``), and
    ``sys.stdin``, ``sys.stdout`` and ``sys.stderr`` on them as a process would have them;
    its result, and what it wrote to 1 and 2."""
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    with _on_fd(0, data), _on_fd(1) as out, _on_fd(2) as err:
        saved = sys.stdin, sys.stdout, sys.stderr
        sys.stdin = _wrap(0, "r", sys.__stdin__)
        sys.stdout = _wrap(1, "w", sys.__stdout__)
        sys.stderr = _wrap(2, "w", sys.__stderr__)
        try:
            code = run()
        finally:
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(OSError, ValueError):  # closed by the command
                    stream.flush()
            sys.stdin, sys.stdout, sys.stderr = saved
        out.seek(0)
        err.seek(0)
        return code, out.read(), err.read()


def _wrap(fd: int, mode: str, like: IO[str] | None) -> IO[str]:
    """A text stream on ``fd`` with the encoding and error handler of the process's own."""
    raw = io.FileIO(fd, mode, closefd=False)
    buffered: Any = io.BufferedReader(raw) if mode == "r" else io.BufferedWriter(raw)
    return io.TextIOWrapper(
        buffered,
        encoding=getattr(like, "encoding", None) or locale.getpreferredencoding(False),
        errors=getattr(like, "errors", None) or "strict",
    )
