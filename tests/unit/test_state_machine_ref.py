"""The state machine of test_state_machine.py over a git-backed baseline.

The workspace is a git repository whose first commit holds text files (one executable, one
in a subfolder), an empty file and a binary one, so the first scan records all of them by
reference to git's blobs (docs/design.md, "The baseline in a git repository"). On top of
the agents, the shells, the user and the rewinds of the first machine, the user and the
agents' shell calls run git: commit, ``git rm``, make and delete a branch, forget the
history (a new root commit in place of main) and ``git gc --prune=now``.

The model adds which committed files the store still knows only by reference, and which of
their objects git no longer has (git itself says, after each git action). Once a turn
changed a file its earlier bytes are the store's own: a rewind needs nothing of git. A
scan that finds a referenced file changed or gone after git lost its object cannot
capture the change: it says so, naming the file, and the file's new state is its
baseline (no rewind touches it). fsck passes, except that it reports exactly the
references whose object is gone, each with its file. Runs 25 examples of 12 steps;
``--slow`` 400 of 25; once more over a baseline cut into several groups, and once under an
end-of-line conversion (``.gitattributes``), where the first scan reads the files git would
convert and stores the one whose bytes are not its blob's.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import ClassVar

import pytest
from hypothesis import event
from hypothesis import strategies as st
from hypothesis.stateful import invariant, rule

from snapstore import Store
from snapstore.core import baseline

from ..support.gitrepo import env, git, sh
from ..support.model import Model, State, identical, same
from ..support.retried import commits_run_twice
from .test_state_machine import ALL, SESSIONS, Workspace, run

#: The first commit, as the model writes it: every one of them is referenced.
COMMITTED = {
    "t0.txt": State("text", ("c0", "c1", "c2", "c3")),
    "t1.txt": State("text", ("c4", "c5", "c6", "c7"), 0o755),
    "sub/t2.txt": State("text", ("c8", "c9", "c10", "c11")),
    "nest/u.txt": State("raw", b""),
    "b.dat": State("bin", "c12"),
}
#: Older than git's index, so that no committed file is racily clean.
SETTLED_NS = 1_700_000_000 * 10**9
#: A new root commit of the work tree takes main's place: the old history is unreachable.
FORGET = (
    "git checkout -q --orphan fresh && git add -A && git commit -q --allow-empty -m {token}"
    " && git branch -M fresh main"
)
PRUNE = "git reflog expire --expire=now --all && git gc -q --prune=now"
GIT = {
    "commit": "git add -A && git commit -q --allow-empty -m {token}",
    "branch": "git branch -f side",
    "drop": "git branch -D side || true",
    "forget": FORGET,
    "gc": PRUNE,
    "forget and gc": f"{FORGET} && {PRUNE}",
}


class RefModel(Model):
    """The model, with the committed files the store knows only by reference to git."""

    def __init__(self, committed: dict[str, State]) -> None:
        super().__init__()
        self.committed = committed  # the first commit's files, as the model wrote them
        self.refs: dict[str, str] = {}  # path -> its git blob id, while only referenced
        self.pruned: set[str] = set()  # the committed blob ids git no longer has
        self.lost: set[str] = set()  # paths a scan could not capture: git lost their base

    def _settle(self, path: str) -> None:
        """A scan recorded ``path``, changed or gone: its referenced version is brought in
        from git, unless git lost it and the file no longer holds those bytes."""
        if self.refs.pop(path) in self.pruned and not same(
            self.files.get(path), self.committed[path]
        ):
            self.lost.add(path)

    def record(
        self, session: str, path: str, before: State | None, after: State | None, mkdirs: int = 0
    ) -> None:
        """A write a pre-write saw (the path is no reference any more), or one a scan
        found: a change from the referenced version, when git still gives it back."""
        if path in self.refs:
            self.set(path, after)
            self._settle(path)
            if path in self.lost:
                return  # not captured: no rewind takes it back
        super().record(session, path, before, after, mkdirs)

    def scan(self) -> list[str]:
        for path in [p for p in self.refs if not identical(self.files.get(p), self.committed[p])]:
            self._settle(path)
        return super().scan()


class RefWorkspace(Workspace):
    model: RefModel
    #: The first commit's files; those the first scan reads, and those it stores (all the
    #: rest it references).
    COMMITTED: ClassVar[dict[str, State]] = COMMITTED
    READ: ClassVar[frozenset[str]] = frozenset()
    STORED: ClassVar[frozenset[str]] = frozenset()

    def _start(self) -> Store:
        """A repository whose first commit holds ``COMMITTED``, and the store's first scan,
        which references every file of it but ``STORED``."""
        self.model = RefModel(self.COMMITTED)
        self.warnings: list[str] = []
        git(self.root, "init", "-q", "-b", "main")
        for path, state in self.COMMITTED.items():
            self._put(path, state)
            os.utime(self.root / path, ns=(SETTLED_NS, SETTLED_NS))
            self.model.set(path, state)
        git(self.root, "add", "-A")
        git(self.root, "commit", "-q", "-m", "first")
        self.oids = {path: git(self.root, "rev-parse", f"HEAD:{path}") for path in self.COMMITTED}
        self.model.refs = {p: oid for p, oid in self.oids.items() if p not in self.STORED}
        store = Store.init(self.root, clock=self.clock, durable=False, warn=self.warnings.append)
        store.exclude_from_git()
        result = store.scan()
        assert result.baseline and result.read == len(self.READ), result
        with store.repo.read() as v:
            keys = {p: v.path_digest(p) for p in self.COMMITTED}
            refs = {p: v.git_ref(key, p) for p, key in keys.items() if key is not None}
        assert refs.keys() == self.COMMITTED.keys(), keys  # every file recorded
        stored = {p for p, ref in refs.items() if ref is None}
        assert stored == self.STORED, stored
        self.model.scan()
        return store

    def _tree(self) -> dict[str, tuple[str, bytes, int]]:
        return {k: v for k, v in super()._tree().items() if not k.startswith(".git/")}

    def _pre_write(self, session: str, path: str, tool: str) -> None:
        super()._pre_write(session, path, tool)
        self.model.refs.pop(path, None)  # read from the file: the store's own now

    # -- git -------------------------------------------------------------------------------

    def _git(self, actions: list[str], removed: list[str]) -> None:
        """Run git ``actions`` after ``git rm`` of ``removed``; then ask git which committed
        objects it still has."""
        script = [f"git rm -q --cached --ignore-unmatch -- {p} && rm -f -- {p}" for p in removed]
        script += [GIT[a].format(token=self.model.token("commit")) for a in actions]
        sh(self.root, " && ".join(script))
        self.model.pruned = _missing(self.root, list(self.oids.values()))
        if self.model.pruned:
            event("git pruned a committed object")

    def _removable(self, path: str) -> list[str]:
        return [path] if path in self.model.files else []

    @rule(
        session=st.sampled_from([None, *SESSIONS]),
        actions=st.lists(st.sampled_from(sorted(GIT)), min_size=1, max_size=3),
        rm=st.sampled_from([None, *ALL]),
    )
    def run_git(self, session: str | None, actions: list[str], rm: str | None) -> None:
        """The user, or an agent's shell call, runs git (``git rm`` of a file first)."""
        removed = self._removable(rm) if rm is not None else []
        if session is not None:
            run = lambda: self._git(actions, removed)  # noqa: E731
            self._shell_call(session, run, dict.fromkeys(removed))
            return
        self._git(actions, removed)
        for path in removed:
            self.model.set(path, None)

    @rule(
        path=st.sampled_from(sorted(COMMITTED)),
        how=st.sampled_from(["slot0", "chmod", "delete"]),
        session=st.sampled_from([None, *SESSIONS]),
    )
    def change_a_file_and_forget_its_history(
        self, path: str, how: str, session: str | None
    ) -> None:
        """The user changes a committed file, then (or an agent's shell call) commits it in
        a new root commit in place of main and prunes: the object the baseline referenced
        may be gone before any scan saw the change."""
        if path not in self.model.files and how == "delete":
            return
        self.user_edit(path, how)
        self.run_git(session, ["forget and gc"], None)

    @rule(data=st.data())
    def cat_what_a_turn_found(self, data: st.DataObject) -> None:
        """``cat --before`` of a committed file, at a turn that changed it first: the
        committed bytes, from the store's own blob, whatever git pruned since."""
        found = [
            (turn, path)
            for turn in self.model.turns.values()
            if turn.kind == "agent"
            for path, runs in turn.changes.items()
            if path in self.COMMITTED and identical(runs[0].before, self.COMMITTED[path])
        ]
        if not found:
            return
        turn, path = data.draw(st.sampled_from(found))
        entry = self.store.cat(turn.id, path, turn.session, before=True)
        assert (entry.kind, entry.data, entry.mode) == self.COMMITTED[path].render(), path
        if self.oids[path] in self.model.pruned:
            event("cat of a committed version git pruned since")

    # -- what must hold after every step ------------------------------------------------

    @invariant()
    def the_store_verifies(self) -> None:
        """fsck passes, but for the references whose object git lost: each is reported."""
        report = self.store.fsck()
        assert not report.corrupt, report
        expected = {(p, oid) for p, oid in self.model.refs.items() if oid in self.model.pruned}
        found = {(d["key"], d["missing"]) for d in report.dangling if d["kind"] == "path"}
        assert found == expected and len(report.dangling) == len(expected), report
        if expected:
            event("fsck reports a reference whose object git lost")

    @invariant()
    def every_capture_git_lost_is_reported(self) -> None:
        """A scan that could not capture a change because git lost the version it started
        from says so, naming the file; nothing else is refused."""
        uncaptured = {w.split(" was not captured")[0] for w in self.warnings if "captured" in w}
        assert all("captured" in w or w.startswith("git: ") for w in self.warnings)
        assert uncaptured == self.model.lost, (self.warnings, self.model.lost)
        assert all("missing" in w for w in self.warnings if "captured" in w), self.warnings
        if self.model.lost:
            event("a scan could not capture a file: git had lost its earlier version")
        self.warnings.clear()
        self.model.lost.clear()


def _missing(root: Path, oids: list[str]) -> set[str]:
    """The objects of ``oids`` the repository does not have (``git cat-file --batch-check``)."""
    done = subprocess.run(
        ["git", "cat-file", "--batch-check"],
        cwd=root,
        env=env(),
        input="".join(f"{oid}\n" for oid in oids),
        capture_output=True,
        text=True,
        check=True,
    )
    return {line.split()[0] for line in done.stdout.splitlines() if line.endswith(" missing")}


def test_state_machine_over_a_git_baseline(slow: bool) -> None:
    run(RefWorkspace, 400 if slow else 25, slow, steps=25 if slow else 12)


class SmallGroupsWorkspace(RefWorkspace):
    """The same over a baseline of several groups (core.baseline), a file or two each, so
    that the record layer moves files out of groups that hold others, in folders that span
    two groups."""

    def _start(self) -> Store:
        store = super()._start()
        with store.repo.read() as v:
            assert len(list(v.groups())) > 1, "the baseline fits one group"
        return store


def test_the_same_over_several_groups(slow: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(baseline, "TARGET", 120)
    monkeypatch.setattr(baseline, "FIRST", 2)
    run(SmallGroupsWorkspace, 400 if slow else 25, slow, steps=25 if slow else 12)


#: The same first commit under an end-of-line conversion: git's blobs hold LF, and the tree
#: what its files were written with (``nest/u.txt``: CRLF, which no blob holds).
CONVERTING = b"*.txt text eol=crlf\n"
CONVERTED = {
    **COMMITTED,
    "nest/u.txt": State("raw", b"one\r\ntwo\r\n"),
    ".gitattributes": State("raw", CONVERTING),
}


class ConvertedWorkspace(RefWorkspace):
    """The same under ``*.txt text eol=crlf``: the first scan reads each ``.txt`` file, as
    git would convert it, and references those whose bytes are their blob's; the CRLF file is
    stored. A rewind that brought a referenced file back through git's conversion, or a
    reference to the CRLF file, would leave a tree the model does not have."""

    COMMITTED = CONVERTED
    READ = frozenset(p for p in CONVERTED if p.endswith(".txt"))
    STORED = frozenset({"nest/u.txt"})


def test_the_same_under_an_end_of_line_conversion(slow: bool) -> None:
    run(ConvertedWorkspace, 400 if slow else 25, slow, steps=25 if slow else 12)


def test_the_same_with_every_commit_run_twice(slow: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every commit's function runs, is thrown away and runs again, as LMDB makes a commit
    that must grow the map do (core.db): a scan's commit that kept what it settled in the
    item it was given once recorded, on its second run, a change to a git reference."""
    ran = commits_run_twice(monkeypatch)
    run(RefWorkspace, 100 if slow else 15, slow, steps=12)
    assert ran[0] > 0
