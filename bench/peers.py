"""The peers snapstore is measured against, on the same workspace in the same run.

- :class:`ShadowGit`: what Cline, Roo Code and Gemini CLI's ``/restore`` do: a
  separate ``GIT_DIR`` whose work tree is the workspace, ``git add -A && git
  commit`` per checkpoint, ``git reset --hard <commit>`` to restore. Automatic
  gc is off so that the "before gc" size is what accumulates between gcs.
- :class:`PlainCopy`: copy each file before the agent writes it, copy it back
  to restore, no fsync: the floor that any undo tool pays.
- :class:`Restic`: a deduplicating backup tool, one snapshot per turn, for the
  store size only; used when ``restic`` is installed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field

from .tree import disk_usage


def _run(cmd: list[str], env: dict[str, str] | None = None, cwd: str | None = None) -> str:
    proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.strip()}")
    return proc.stdout


class ShadowGit:
    """A shadow git repository over the workspace."""

    def __init__(self, worktree: str, git_dir: str, exclude: tuple[str, ...]):
        self.worktree = worktree
        self.git_dir = git_dir
        self.env = {
            **os.environ,
            "GIT_DIR": git_dir,
            "GIT_WORK_TREE": worktree,
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_AUTHOR_NAME": "bench",
            "GIT_AUTHOR_EMAIL": "bench@localhost",
            "GIT_COMMITTER_NAME": "bench",
            "GIT_COMMITTER_EMAIL": "bench@localhost",
        }
        self.git("init", "-q")
        for key, value in (
            ("gc.auto", "0"),
            ("core.autocrlf", "false"),
            ("commit.gpgsign", "false"),
        ):
            self.git("config", key, value)
        with open(os.path.join(git_dir, "info", "exclude"), "a", encoding="utf-8") as handle:
            handle.writelines(f"/{name}/\n" for name in exclude)

    @staticmethod
    def version() -> str:
        return _run(["git", "--version"]).strip()

    def git(self, *args: str) -> str:
        return _run(["git", *args], env=self.env, cwd=self.worktree)

    def checkpoint(self, message: str) -> None:
        """What the agents do per checkpoint."""
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "--no-verify", "-m", message)

    def commit_paths(self, message: str, paths: set[str]) -> None:
        """The commit :meth:`checkpoint` would make when only ``paths`` changed since the last
        one, without its walk of the whole tree: an untimed checkpoint of a long session."""
        proc = subprocess.run(
            ["git", "update-index", "--add", "--remove", "-z", "--stdin"],
            input=b"".join(os.fsencode(rel) + b"\0" for rel in sorted(paths)),
            env=self.env,
            cwd=self.worktree,
            capture_output=True,
            check=False,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"git update-index failed: {proc.stderr.decode().strip()}")
        tree = self.git("write-tree").strip()
        commit = self.git("commit-tree", tree, "-p", "HEAD", "-m", message).strip()
        self.git("update-ref", "HEAD", commit)

    def head(self) -> str:
        return self.git("rev-parse", "HEAD").strip()

    def reset_hard(self, commit: str) -> None:
        self.git("reset", "-q", "--hard", commit)

    def size(self) -> int:
        return disk_usage(self.git_dir)

    def gc_aggressive(self) -> None:
        self.git("gc", "-q", "--aggressive", "--prune=now")


@dataclass
class PlainCopy:
    """Copies of each file's bytes from before the turn that first wrote it."""

    worktree: str
    backup: str
    saved: dict[int, dict[str, bool]] = field(default_factory=dict)  # turn -> path -> existed

    def save(self, turn: int, rel: str) -> None:
        """Keep the path's current bytes (once per turn), before the agent writes it."""
        seen = self.saved.setdefault(turn, {})
        if rel in seen:
            return
        source = os.path.join(self.worktree, rel)
        seen[rel] = os.path.lexists(source)
        if seen[rel]:
            target = os.path.join(self.backup, str(turn), rel)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copy2(source, target, follow_symlinks=False)

    def restore(self, first_turn: int) -> None:
        """Put back every path as it was before ``first_turn``: the oldest copy wins."""
        oldest: dict[str, tuple[int, bool]] = {}
        for turn in sorted((t for t in self.saved if t >= first_turn), reverse=True):
            for rel, existed in self.saved[turn].items():
                oldest[rel] = (turn, existed)
        for rel, (turn, existed) in oldest.items():
            target = os.path.join(self.worktree, rel)
            if existed:
                os.makedirs(os.path.dirname(target), exist_ok=True)
                shutil.copy2(
                    os.path.join(self.backup, str(turn), rel), target, follow_symlinks=False
                )
            elif os.path.lexists(target):
                os.unlink(target)

    def size(self) -> int:
        return disk_usage(self.backup)


class Restic:
    """A restic repository holding one snapshot of the workspace per turn."""

    PASSWORD = "snapstore-bench"

    def __init__(self, worktree: str, repo: str, exclude: tuple[str, ...]):
        self.worktree = worktree
        self.repo = repo
        self.exclude = exclude
        self.env = {
            **os.environ,
            "RESTIC_REPOSITORY": repo,
            "RESTIC_PASSWORD": self.PASSWORD,
            "RESTIC_CACHE_DIR": repo + ".cache",
        }
        _run(["restic", "init", "--quiet"], env=self.env)

    @staticmethod
    def available() -> bool:
        return shutil.which("restic") is not None

    @staticmethod
    def version() -> str:
        return _run(["restic", "version"]).strip()

    def snapshot(self) -> None:
        excludes = [
            arg for name in self.exclude for arg in ("--exclude", os.path.join(self.worktree, name))
        ]
        _run(["restic", "backup", "--quiet", ".", *excludes], env=self.env, cwd=self.worktree)

    def size(self) -> int:
        return disk_usage(self.repo)
