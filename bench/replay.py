"""A real repository's history, replayed as agent turns (``python -m bench scale --replay``).

The tree at the commit before the last ``turns`` commits of the first-parent line is the
base; each commit after it is one agent turn, its subject the prompt: the files it changed
are rewritten, the ones it added created, the ones it deleted deleted. Links and
submodules stay as the base has them (a change to one, or between a file and one, is left
out of its turn). The repository is only read: ``read-tree`` and ``checkout-index`` write
the base through an index file of their own, and the turns' bytes come from ``cat-file``.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import tempfile

from .tree import Version, scan_base
from .workloads import SKIP, Edit, TurnPlan, Workload

_FILES = (0o100644, 0o100755)


def _git(git_dir: str, *args: str, data: bytes | None = None, **env: str) -> bytes:
    return subprocess.run(
        ["git", f"--git-dir={git_dir}", *args],
        input=data,
        capture_output=True,
        check=True,
        env={**os.environ, **env},
    ).stdout


def commits(git_dir: str, turns: int) -> list[str]:
    """The base commit and the ``turns`` first-parent commits after it, oldest first."""
    line = _git(git_dir, "rev-list", "--first-parent", f"--max-count={turns + 1}", "HEAD")
    found = line.decode().split()[::-1]
    if len(found) < turns + 1:
        raise ValueError(f"{git_dir}: {len(found)} commits, {turns + 1} needed")
    return found


def _blobs(git_dir: str, oids: list[str]) -> list[bytes]:
    """The bytes of each blob, in order, through one ``cat-file --batch``."""
    if not oids:
        return []
    out = _git(git_dir, "cat-file", "--batch", data="".join(f"{o}\n" for o in oids).encode())
    found, at = [], 0
    for _ in oids:
        header_end = out.index(b"\n", at)
        size = int(out[at:header_end].split()[2])
        found.append(out[header_end + 1 : header_end + 1 + size])
        at = header_end + 1 + size + 1  # the blob, then its newline
    return found


def _turn(git_dir: str, parent: str, commit: str) -> TurnPlan:
    """One commit's changes to regular files, as one agent turn."""
    raw = _git(git_dir, "diff-tree", "-r", "-z", "--no-renames", "--no-commit-id", parent, commit)
    fields = raw.split(b"\0")
    writes: list[tuple[str, str, int]] = []
    deletes: list[str] = []
    for at in range(0, len(fields) - 1, 2):
        old_mode, new_mode, _old, new, _status = fields[at][1:].decode().split()
        path = os.fsdecode(fields[at + 1])
        was, now = int(old_mode, 8), int(new_mode, 8)
        if was not in (0, *_FILES):
            continue  # a link or a submodule in the base: left as it is
        if now == 0:
            deletes.append(path)
        elif now in _FILES:
            writes.append((path, new, now & 0o777))
    data = _blobs(git_dir, [oid for _, oid, _ in writes])
    subject = _git(git_dir, "log", "-1", "--format=%s", commit).decode().strip()
    edits = [Edit(p, d, mode) for (p, _, mode), d in zip(writes, data, strict=True)]
    return TurnPlan(subject or commit, edits + [Edit(p, None) for p in deletes])


def replay_workload(git_dir: str, turns: int) -> Workload:
    """``turns`` commits of the repository at ``git_dir`` (a bare one will do) as a session."""
    line = commits(git_dir, turns)
    name = os.path.basename(os.path.dirname(git_dir.rstrip("/")) or git_dir)

    def materialise(root: str) -> dict[str, Version]:
        os.makedirs(root, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="snapstore-replay-") as tmp:
            index = os.path.join(tmp, "index")  # the repository's own index is never touched
            _git(git_dir, "read-tree", line[0], GIT_INDEX_FILE=index)
            _git(git_dir, f"--work-tree={root}", "checkout-index", "-a", "-f", GIT_INDEX_FILE=index)
        return scan_base(root, SKIP)

    def plan(_root: str, _base: dict[str, Version]) -> list[TurnPlan]:
        return [_turn(git_dir, a, b) for a, b in itertools.pairwise(line)]

    return Workload(
        f"replay-{name}",
        {"workload": "replay", "repository": name, "base": line[0], "head": line[-1]},
        materialise,
        plan,
    )
