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


@dataclass
class Config:
    """Settings from ``<store>/config``; defaults when the file is absent."""

    track_shell: bool = False
    max_file_size: int = 10 * 1024 * 1024

    @classmethod
    def load(cls, store_dir: str) -> Config:
        parser = _read(store_dir)
        try:
            return cls(
                track_shell=parser.getboolean("capture", "track_shell", fallback=False),
                max_file_size=parse_size(parser.get("capture", "max_file_size",
                                                    fallback=str(cls.max_file_size))),
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
