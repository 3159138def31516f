"""A real git repository for the tests of turns that touch git, and its state as git tells it.

Every command runs the system's git (Debian's) with a fixed identity and clock, so that two
runs make the same commits; the state compared before and after a rewind is what the issue
names (``git status --porcelain``, ``rev-parse HEAD``, ``symbolic-ref HEAD``, the stash list,
the index) and every ref but snapstore's own keeps, with the working files.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from .trees import snapshot

#: A fixed author, committer and date: the same commands make the same commits.
GIT_ENV = {
    "GIT_AUTHOR_NAME": "Agent",
    "GIT_AUTHOR_EMAIL": "agent@example.com",
    "GIT_COMMITTER_NAME": "Agent",
    "GIT_COMMITTER_EMAIL": "agent@example.com",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00+00:00",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00+00:00",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}


def env() -> dict[str, str]:
    """This environment with git's identity fixed and no user or system config."""
    found = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return {**found, **GIT_ENV}


def git(root: Path, *args: str, check: bool = True, extra: dict[str, str] | None = None) -> str:
    """Run git in ``root`` (``extra``: more environment, ``GIT_DIR``); its stdout, stripped."""
    done = subprocess.run(
        ["git", *args],
        cwd=root,
        env={**env(), **(extra or {})},
        capture_output=True,
        text=True,
        check=False,
    )
    if check and done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {done.stderr}")
    return done.stdout.strip()


def sh(root: Path, script: str, extra: dict[str, str] | None = None) -> None:
    """A shell script in ``root``, as an agent's shell tool runs it (git's identity fixed)."""
    done = subprocess.run(
        ["sh", "-ec", script],
        cwd=root,
        env={**env(), **(extra or {})},
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise AssertionError(f"{script!r} failed: {done.stdout}{done.stderr}")


def init(root: Path) -> None:
    """A repository on ``main`` with two commits (a.txt, b.txt, notes.txt), a ``feature``
    branch one commit ahead of main, an ``old`` branch and a tag ``v1``."""
    git(root, "init", "-q", "-b", "main")
    (root / "a.txt").write_text("a1\n")
    (root / "b.txt").write_text("b1\n")
    (root / "notes.txt").write_text("notes\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "first")
    git(root, "tag", "v1")
    git(root, "branch", "old")
    (root / "a.txt").write_text("a1\na2\n")
    git(root, "commit", "-qam", "second")
    git(root, "checkout", "-q", "-b", "feature")
    (root / "b.txt").write_text("b1\nb-feature\n")
    git(root, "commit", "-qam", "feature work")
    git(root, "checkout", "-q", "main")


def state(root: Path, extra: dict[str, str] | None = None) -> dict[str, object]:
    """The repository and its files as git and the disk say (snapstore's keeps aside)."""
    refs = git(root, "for-each-ref", "--format=%(refname) %(objectname)", extra=extra)
    return {
        "status": git(root, "status", "--porcelain", "--untracked-files=all", extra=extra),
        "head": git(root, "rev-parse", "-q", "--verify", "HEAD", check=False, extra=extra),
        "branch": git(root, "symbolic-ref", "-q", "HEAD", check=False, extra=extra),
        "stash": git(root, "stash", "list", "--format=%H %gs", extra=extra),
        "index": git(root, "ls-files", "--stage", extra=extra),
        "refs": [r for r in refs.splitlines() if not r.startswith("refs/snapstore/")],
        "files": {k: v for k, v in snapshot(root).items() if not k.startswith(".git/")},
    }


def keeps(root: Path) -> list[str]:
    """The refs snapstore made to keep what a rewind moved away from."""
    return git(root, "for-each-ref", "--format=%(refname)", "refs/snapstore/").splitlines()
