"""A tiny inotify watcher (ctypes, Linux): proof that nothing outside the root is touched.

Every open, read, write, attribute change, create, delete or move of a file or
folder in the watched trees is an event; a test asserts there are none.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import struct

IN_ALL_EVENTS = 0xFFF  # access, modify, attrib, close, open, moves, create, delete, self-events
IN_NONBLOCK = os.O_NONBLOCK
_EVENT = struct.Struct("iIII")


class Watcher:
    """Watches every folder of the given trees (and the files in them)."""

    def __init__(self, *trees: str):
        self._libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        self.fd = self._libc.inotify_init1(IN_NONBLOCK)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")
        self.names: dict[int, str] = {}
        for tree in trees:
            for folder, _, _ in os.walk(tree):
                wd = self._libc.inotify_add_watch(self.fd, os.fsencode(folder), IN_ALL_EVENTS)
                if wd < 0:
                    raise OSError(ctypes.get_errno(), f"inotify_add_watch {folder}")
                self.names[wd] = folder
        self.events()  # walking the trees to watch them is not an event to report

    def events(self) -> list[tuple[str, int]]:
        """The (path, mask) of every event so far."""
        found = []
        while True:
            try:
                data = os.read(self.fd, 65536)
            except BlockingIOError:
                return found
            offset = 0
            while offset < len(data):
                wd, mask, _, size = _EVENT.unpack_from(data, offset)
                name = data[offset + _EVENT.size : offset + _EVENT.size + size].rstrip(b"\0")
                found.append((os.path.join(self.names.get(wd, "?"), os.fsdecode(name)), mask))
                offset += _EVENT.size + size

    def close(self) -> None:
        os.close(self.fd)
