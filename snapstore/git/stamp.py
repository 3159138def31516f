"""The quick look of the hook path: has any file git would change moved since the last record?

A record of the repository keeps, in the store's ``meta/git``, the stat fingerprint of every
file and folder a git command would touch, and where each is (snapstore.ops.gitrecord).
Most hooks find them all as they were: this module says so with one ``lstat`` each and
nothing else loaded, not even the module that finds the repository.
"""

import os
import time

from ..core.records import FINGERPRINT

#: A file changed this recently may change again within its timestamp's tick ("racily
#: clean", as git says): its fingerprint is kept as one that never matches.
RACY_NS = 2_000_000_000


def fingerprint(path: str, now_ns: int) -> str:
    """A file's or folder's stat fingerprint in hex ("" when absent); one taken racily
    (within :data:`RACY_NS` of its last change) ends with ``~``, and never matches."""
    try:
        st = os.lstat(path)
    except OSError:
        return ""
    found = FINGERPRINT.pack(st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_mode)
    racy = now_ns - max(st.st_mtime_ns, st.st_ctime_ns) < RACY_NS
    return found.hex() + ("~" if racy else "")


def unchanged(stamp: dict) -> bool:
    """Whether every file and folder the last record fingerprinted (``stamp``: its
    ``fp`` and ``paths``) still has that fingerprint, none of them taken racily: then
    nothing of the repository moved since."""
    fps, where = stamp.get("fp"), stamp.get("paths")
    if not isinstance(fps, dict) or not isinstance(where, dict) or fps.keys() != where.keys():
        return False
    now = time.time_ns()
    for name, path in where.items():
        fp = fps[name]
        if fp.endswith("~") or fingerprint(path, now) != fp:
            return False
    return True
