"""Reading a workspace tree, for tests and for the crash tests' child process.

Kept apart from conftest so that the child imports it without pytest.
"""

from __future__ import annotations

import os


def snapshot(root: str | os.PathLike[str], dirs: bool = False) -> dict[str, tuple[str, bytes, int]]:
    """Every path under ``root`` except the store: kind, bytes, and permission bits.

    Empty folders are not versioned content; ``dirs`` lists them too.
    """
    result = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".snapstore"]
        rel_dir = os.path.relpath(dirpath, root)
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            path = os.path.join(dirpath, name)
            rel = os.path.normpath(os.path.join(rel_dir, name))
            if os.path.islink(path):
                result[rel] = ("link", os.fsencode(os.readlink(path)), 0)
            else:
                with open(path, "rb") as handle:
                    result[rel] = ("file", handle.read(), os.stat(path).st_mode & 0o777)
        if dirs and rel_dir != "." and not os.listdir(dirpath):
            result[rel_dir + "/"] = ("dir", b"", 0)
    return result
