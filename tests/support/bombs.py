"""Decompression bombs, and the peak memory of a child process that meets one.

A bomb here is a zstd frame of :data:`BOMB` zero bytes (about 24 KiB, built in pieces so
that the test process never holds it decoded), put where a blob's payload goes, under a
header that states its size truthfully or lies about it. What a reader allocates is
measured in a child process of its own (``resource.getrusage`` there: the kernel's high
water mark of that process alone), so nothing else the test run started counts.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import zstandard

from snapstore.core import blobs

MIB = 1024 * 1024
#: What the frame decodes to: the size of the report's bomb.
BOMB = 768 * MIB
#: How much a reader may grow while it refuses one: generous (a blob stored whole may be
#: up to 64 MiB) and far below the bomb.
GROWTH_BOUND = 192 * MIB
REPO = Path(__file__).resolve().parents[2]


@functools.cache
def zero_frame(size: int = BOMB, says: bool = True) -> bytes:
    """One zstd frame of ``size`` zeros whose frame header states that size (or, without
    ``says``, no size: a decoder learns it only by decoding)."""
    compressor = zstandard.ZstdCompressor(level=3, write_content_size=says).compressobj(
        size=size if says else -1
    )
    piece = bytes(MIB)
    out = [compressor.compress(piece) for _ in range(size // MIB)]
    out.append(compressor.flush())
    return b"".join(out)


def lying_value(stated: int, frame: bytes | None = None) -> bytes:
    """A zstd-frame blob value whose header states ``stated`` bytes around ``frame``."""
    return bytes([blobs.ZSTD]) + stated.to_bytes(8, "big") + (frame or zero_frame())


def measured(code: str, **args: Any) -> dict[str, Any]:
    """Run ``code`` in a child Python process, with ``args`` as the dict ``ARGS``; what it
    put in the dict ``OUT``, with ``before`` and ``peak``: its peak resident set (bytes)
    before and after the code ran. ``code`` must not raise."""
    script = (
        "import json, resource, sys\n"
        "ARGS = json.loads(sys.argv[1]); OUT = {}\n"
        "def peak():\n"
        "    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024\n"
        "import snapstore, snapstore.core.blobs, zstandard\n"
        "OUT['before'] = peak()\n"
        f"{code}\n"
        "OUT['peak'] = peak()\n"
        "print(json.dumps(OUT))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, json.dumps(args)],
        cwd=REPO,
        capture_output=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-3000:]
    return json.loads(done.stdout.decode().splitlines()[-1])
