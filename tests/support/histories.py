"""A realistic little history for fsck and gc tests: deltas, binaries, links, sessions."""

from __future__ import annotations

import os
import random
from pathlib import Path

from snapstore import Store

from . import agent_turn


def text(rng: random.Random, lines: int) -> str:
    return "".join(f"line {n}: {rng.random():.12f}\n" for n in range(lines))


def build_history(
    store: Store, turns: int = 8, seed: int = 0, session: str = "default", tick: float = 3600.0
) -> list[str]:
    """Turns that edit text files (delta chains), rewrite a binary, touch small and empty
    files and a symlink. Returns the turn ids, oldest first."""
    rng = random.Random(seed)
    root = Path(store.root)
    big = text(rng, 1500)
    (root / "src").mkdir(exist_ok=True)
    (root / "src" / "big.py").write_text(big)
    (root / "notes.md").write_text(text(rng, 40))
    ids = []
    for n in range(turns):
        lines = big.splitlines(keepends=True)
        for _ in range(3):
            lines[rng.randrange(len(lines))] = f"edited in turn {n}: {rng.random()}\n"
        big = "".join(lines)
        edits: dict[str, bytes | str | None] = {
            "src/big.py": big,
            "notes.md": text(rng, 40 + n),
            "data.bin": rng.randbytes(rng.randint(500, 5000)),
            f"src/new{n}.py": f"print({n})\n" * (n + 1),
            "empty.txt": "" if n % 2 else "not empty\n",
        }
        if n % 3 == 2:
            edits[f"src/new{n - 1}.py"] = None
        ids.append(agent_turn(store, f"turn {n}", edits, session=session))
        if n == 1:
            os.symlink("notes.md", root / "link")
        clock = store.clock
        if hasattr(clock, "tick"):
            clock.tick(tick)
    return ids
