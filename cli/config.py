"""The store's settings file, ``<store>/config`` (INI). Only the CLI reads it.

The library takes every setting as an argument; this module turns the file
into those arguments. Unknown sections and keys are kept when the file is
rewritten, so a newer snapstore's settings survive an older one.
"""

from __future__ import annotations

import configparser
import os
import re
from dataclasses import dataclass

from snapstore import BadInput

FILENAME = "config"
_UNITS = {"": 1, "b": 1, "k": 1024, "kb": 1024, "kib": 1024, "m": 1024**2, "mb": 1024**2,
          "mib": 1024**2, "g": 1024**3, "gb": 1024**3, "gib": 1024**3}


def parse_size(text: str) -> int:
    """'10MiB', '512k', '2G' or a plain number of bytes."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text)
    if not match or match.group(2).lower() not in _UNITS:
        raise BadInput(f"not a size: {text!r} (use e.g. 500MiB or 2GiB)")
    return int(float(match.group(1)) * _UNITS[match.group(2).lower()])


def format_mib(n: int) -> str:
    """A size in messages: '12.3 MiB'."""
    return f"{n / 2**20:.1f} MiB"


@dataclass
class Config:
    """Settings from ``<store>/config``; defaults when the file is absent."""

    track_shell: bool = False
    max_file_size: int = 10 * 1024 * 1024
    gc_auto: bool = False  # [gc] auto: run gc after a command once the store passes max_size
    gc_max_size: int | None = None
    gc_keep_days: float | None = 30.0
    gc_keep_turns: int | None = None

    @classmethod
    def load(cls, store_dir: str) -> Config:
        parser = _read(store_dir)
        try:
            max_size = parser.get("gc", "max_size", fallback=None)
            keep_days = parser.get("gc", "keep_days", fallback=None)
            keep_turns = parser.get("gc", "keep_turns", fallback=None)
            return cls(
                track_shell=parser.getboolean("capture", "track_shell", fallback=False),
                max_file_size=parse_size(parser.get("capture", "max_file_size",
                                                    fallback=str(cls.max_file_size))),
                gc_auto=parser.getboolean("gc", "auto", fallback=False),
                gc_max_size=None if max_size is None else parse_size(max_size),
                gc_keep_days=cls.gc_keep_days if keep_days is None else float(keep_days),
                gc_keep_turns=None if keep_turns is None else int(keep_turns),
            )
        except ValueError as exc:
            raise BadInput(f"{os.path.join(store_dir, FILENAME)}: {exc}") from None

    def save(self, store_dir: str) -> None:
        parser = _read(store_dir)
        for section, key, value in (
                ("capture", "track_shell", str(self.track_shell).lower()),
                ("capture", "max_file_size", str(self.max_file_size))):
            if not parser.has_section(section):
                parser.add_section(section)
            parser.set(section, key, value)
        path = os.path.join(store_dir, FILENAME)
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as handle:
            parser.write(handle)
        os.replace(tmp, path)


def _read(store_dir: str) -> configparser.ConfigParser:
    parser = configparser.ConfigParser()
    path = os.path.join(store_dir, FILENAME)
    try:
        parser.read(path, encoding="utf-8")
    except configparser.Error as exc:
        raise BadInput(f"{path} is not a valid settings file: {exc}") from None
    return parser
