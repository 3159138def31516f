"""A generated source tree: N files with a realistic size mix and folder depth.

Everything is derived from one seed, so a given (files, seed) pair always
makes the same tree, byte for byte. Sizes follow a log-normal distribution
(median about 2.5 KB, a long tail to a few hundred KB, as in real
repositories); about 2% of files are incompressible binaries, a few are
executable scripts and a few are symlinks. Folders nest up to eight deep.

Text is cut from a seeded corpus of code-like lines: fast to produce for 100k
files, compressible like real source, and different in every file (each file
starts with its own path), so deduplication is not flattered.
"""

from __future__ import annotations

import math
import os
import random
from collections.abc import Callable, Iterator

from .tree import FILE, LINK, Version

WORDS = (
    "core",
    "utils",
    "api",
    "models",
    "views",
    "tests",
    "handlers",
    "config",
    "db",
    "auth",
    "cache",
    "client",
    "server",
    "schema",
    "io",
    "net",
    "ui",
    "widgets",
    "parser",
    "lexer",
    "runtime",
    "plugins",
    "docs",
    "scripts",
    "assets",
    "lib",
    "internal",
    "common",
    "services",
    "storage",
    "jobs",
    "events",
    "metrics",
    "http",
)
#: Extension, relative weight. ``.png`` and ``.bin`` files are random bytes.
EXTENSIONS = (
    (".py", 30),
    (".ts", 14),
    (".js", 10),
    (".md", 8),
    (".json", 8),
    (".go", 5),
    (".rs", 4),
    (".txt", 5),
    (".yaml", 5),
    (".html", 4),
    (".css", 3),
    (".sh", 2),
    (".png", 1.5),
    (".bin", 0.5),
)
BINARY = (".png", ".bin")
MAX_DEPTH = 8
FILES_PER_DIR = 12
LINK_SHARE = 0.002
MEDIAN_SIZE, SIGMA, MAX_SIZE = 2500, 1.1, 400_000
CORPUS_SIZE = 1 << 21


class Text:
    """Seeded code-like text: single lines for edits, and a corpus to cut files from."""

    IDENTS = tuple(
        f"{a}_{b}"
        for a in WORDS[:16]
        for b in ("id", "name", "value", "items", "count", "path", "state", "result")
    )

    def __init__(self, rng: random.Random):
        self.rng = rng

    def line(self) -> str:
        rng, ident = self.rng, self.rng.choice
        kind = rng.randrange(8)
        indent = " " * (4 * rng.randrange(3))
        if kind == 0:
            return f"def {ident(self.IDENTS)}({ident(self.IDENTS)}, {ident(self.IDENTS)}):"
        if kind == 1:
            return f"{indent}# {' '.join(rng.choices(WORDS, k=rng.randrange(3, 9)))}"
        if kind == 2:
            return f"{indent}return {ident(self.IDENTS)} + {rng.randrange(1000)}"
        if kind == 3:
            return f"{indent}if {ident(self.IDENTS)} > {rng.randrange(100)}:"
        if kind == 4:
            return ""
        return (
            f"{indent}{ident(self.IDENTS)} = {ident(self.IDENTS)}({ident(self.IDENTS)}, "
            f"{rng.randrange(10_000)})"
        )

    def lines(self, count: int) -> list[bytes]:
        return [self.line().encode() + b"\n" for _ in range(count)]

    def corpus(self, size: int) -> bytes:
        parts: list[bytes] = []
        total = 0
        while total < size:
            chunk = b"".join(self.lines(256))
            parts.append(chunk)
            total += len(chunk)
        return b"".join(parts)


def _folders(rng: random.Random, count: int) -> list[str]:
    """A random recursive folder tree: each new folder goes under a random existing one."""
    folders = [""]
    depth = {"": 0}
    names: dict[str, set[str]] = {"": set()}
    while len(folders) < count:
        parent = rng.choice(folders)
        if depth[parent] >= MAX_DEPTH:
            continue
        name = rng.choice(WORDS)
        if name in names[parent]:
            name = f"{name}{len(names[parent])}"
        names[parent].add(name)
        path = f"{parent}/{name}" if parent else name
        folders.append(path)
        depth[path], names[path] = depth[parent] + 1, set()
    return folders


def _size(rng: random.Random) -> int:
    return max(16, min(MAX_SIZE, int(rng.lognormvariate(math.log(MEDIAN_SIZE), SIGMA))))


#: Draws one file's size from the generator's random source.
Sizes = Callable[[random.Random], int]


def generate(
    files: int, seed: int, per_folder: int = FILES_PER_DIR, sizes: Sizes = _size
) -> Iterator[tuple[str, str, bytes, int]]:
    """Yield ``(path, kind, data, mode)`` for every entry of the tree, folders first implied:
    ``files // per_folder`` folders, each file's size from ``sizes``."""
    rng = random.Random(f"tree:{files}:{seed}")
    text = Text(rng)
    corpus = text.corpus(CORPUS_SIZE)
    folders = _folders(rng, max(1, files // per_folder))
    exts, weights = zip(*EXTENSIONS, strict=True)
    last_in_folder: dict[str, str] = {}
    for i in range(files):
        folder = rng.choice(folders)
        ext = rng.choices(exts, weights)[0]
        name = f"{rng.choice(WORDS)}_{i}{ext}"
        path = f"{folder}/{name}" if folder else name
        sibling = last_in_folder.get(folder)
        last_in_folder[folder] = name
        if sibling is not None and rng.random() < LINK_SHARE:
            yield path, LINK, sibling.encode(), 0o777
            continue
        size = sizes(rng)
        if ext in BINARY:
            yield path, FILE, rng.randbytes(size), 0o644
            continue
        start = corpus.find(b"\n", rng.randrange(len(corpus) - size)) + 1
        data = f"# {path}\n".encode() + corpus[start : start + size]
        yield path, FILE, data, 0o755 if ext == ".sh" else 0o644


def materialise(
    root: str, files: int, seed: int, per_folder: int = FILES_PER_DIR, sizes: Sizes = _size
) -> dict[str, Version]:
    """Write the tree under ``root`` and return its base state."""
    base: dict[str, Version] = {}
    made: set[str] = set()
    for path, kind, data, mode in generate(files, seed, per_folder, sizes):
        folder = os.path.dirname(path)
        if folder and folder not in made:
            os.makedirs(os.path.join(root, folder), exist_ok=True)
            made.add(folder)
        full = os.path.join(root, path)
        if kind == LINK:
            os.symlink(data.decode(), full)
        else:
            with open(full, "wb") as handle:
                handle.write(data)
            os.chmod(full, mode)  # whatever the umask, the tree is the same
        base[path] = Version.of(kind, data, mode)
    return base
