"""A command run on a real terminal of a chosen size: a pseudo-terminal, as a person's shell
gives it, for what a command prints only on a terminal (tables fitted to its width)."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import subprocess
import termios
from collections.abc import Mapping
from pathlib import Path

from .runner import snapstore_bin

#: Seconds a command may go without printing before it is taken to wait for keys no one sends.
SILENT = 120


def on_terminal(
    args: list[str],
    cwd: Path,
    env: Mapping[str, str],
    columns: int = 80,
    rows: int = 50,
    shell: bool = False,
) -> tuple[int, str]:
    """Run ``snapstore ARGS`` (with ``shell``, the shell command line ``ARGS[0]``) with stdin,
    stdout and stderr on a terminal ``columns`` wide (its size set before the command
    starts); its exit code and what it printed, stdout and stderr as the terminal shows
    them, lines ending in ``\\n``."""
    main, side = pty.openpty()
    fcntl.ioctl(side, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    env = {k: v for k, v in env.items() if k not in ("COLUMNS", "LINES")}
    argv = ["bash", "-c", args[0]] if shell else [*snapstore_bin(), *args]
    child = subprocess.Popen(argv, cwd=cwd, env=env, stdin=side, stdout=side, stderr=side)
    os.close(side)
    chunks = []
    while True:
        if not select.select([main], [], [], SILENT)[0]:  # waiting for keys: a prompt, a picker
            child.kill()
            child.wait()
            os.close(main)
            shown = b"".join(chunks).decode("utf-8", "replace")
            raise AssertionError(f"{argv}: silent for {SILENT} s, waiting for keys?\n{shown}")
        try:
            data = os.read(main, 65536)
        except OSError:  # EIO: every holder of the terminal's other side closed it
            break
        if not data:
            break
        chunks.append(data)
    os.close(main)
    code = child.wait(timeout=120)
    return code, b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")
