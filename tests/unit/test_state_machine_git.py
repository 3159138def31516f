"""A hypothesis state machine of refs beside files: HEAD and a few branches, against a model.

An agent's turns run git in their shell calls (commit, check out, make and delete
branches, reset, detach HEAD) and write files through the hooks; the user commits and
switches branches between turns; the session rewinds and undoes. After every step the
repository's HEAD and branches, and the agent's files, must be exactly what the model
says, and fsck must pass.

The model is the specification restated (docs/design.md, "Git state in a turn"): a
rewind folds each name's moves newest first (now == the agent's result: back to where
the agent found it; now == where it found it: done; anything else: the user moved it,
a conflict, left alone), and HEAD stays, with its branch, when either is in conflict;
an undo folds the rewind's moves back the same way. Commits are empty (``--allow-empty``),
so a checkout never touches a file: what the files do is the hooks' alone. A rewind and an
undo never make a commit unreachable that was reachable before them. Runs 25
examples of 12 steps; ``--slow`` 400 of 25.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, note, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from snapstore import Store

from ..support import Clock
from ..support.gitrepo import git, sh

SESSION = "claude-code/m"
BRANCHES = ("refs/heads/main", "refs/heads/b1", "refs/heads/b2")
FILES = ("x.txt", "y.txt")
Values = dict[str, str | None]  # HEAD and each branch -> its value (None: absent)


class Op:
    """A rewind in the model: what it moved (for its undo), and the turns it took back."""

    def __init__(self, moved: dict[str, tuple[str | None, str | None]], turns: list[dict]):
        self.moved = moved
        self.turns = turns
        self.files: dict[str, tuple[str | None, str | None]] = {}


class GitWorkspace(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = tempfile.mkdtemp(prefix="snapstore-smg-")
        self.root = Path(self.tmp) / "ws"
        self.root.mkdir()
        git(self.root, "init", "-q", "-b", "main")
        git(self.root, "commit", "-q", "--allow-empty", "-m", "c0")
        self.commits = [git(self.root, "rev-parse", "HEAD")]
        self.values: Values = {"HEAD": "ref: refs/heads/main", "refs/heads/main": self.commits[0]}
        self.files: dict[str, str | None] = dict.fromkeys(FILES)
        self.turns: list[dict] = []  # the branch's agent turns, oldest first: moves, files
        self.ops: list[Op] = []
        self.tokens = 0
        self.store = Store.init(self.root, clock=Clock(), durable=False)
        self.store.exclude_from_git()
        self.store.scan()

    def teardown(self) -> None:
        self.store.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    # -- git, as the agent's shell or the user runs it -----------------------------------

    def _token(self) -> str:
        self.tokens += 1
        return f"t{self.tokens}"

    def _branch(self) -> str | None:
        head = self.values["HEAD"]
        return head[len("ref: ") :] if head and head.startswith("ref: ") else None

    def _do(self, action: str, pick: int) -> None:
        """One git action on the repository, and on the model's values."""
        v = self.values
        branch = self._branch()
        existing = sorted(b for b in BRANCHES if v.get(b))
        commit = self.commits[pick % len(self.commits)]
        if action == "commit":
            sh(self.root, f"git commit -q --allow-empty -m {self._token()}")
            new = git(self.root, "rev-parse", "HEAD")
            self.commits.append(new)
            v[branch or "HEAD"] = new
        elif action == "checkout":
            if not existing:  # every branch deleted while HEAD was detached
                return
            target = existing[pick % len(existing)]
            sh(self.root, f"git checkout -q {target.removeprefix('refs/heads/')}")
            v["HEAD"] = f"ref: {target}"
        elif action == "branch":
            free = [b for b in BRANCHES if not v.get(b)]
            if not free:
                return
            target = free[pick % len(free)]
            sh(self.root, f"git checkout -q -b {target.removeprefix('refs/heads/')}")
            v[target] = git(self.root, "rev-parse", "HEAD")
            v["HEAD"] = f"ref: {target}"
        elif action == "delete":
            others = [b for b in existing if b != branch]
            if not others:
                return
            target = others[pick % len(others)]
            sh(self.root, f"git branch -q -D {target.removeprefix('refs/heads/')}")
            v[target] = None
        elif action == "reset":
            sh(self.root, f"git reset -q --hard {commit}")
            v[branch or "HEAD"] = commit
        else:  # detach
            sh(self.root, f"git checkout -q --detach {commit}")
            v["HEAD"] = commit

    # -- turns, the user, rewinds, undos ---------------------------------------------------

    @rule(
        action=st.sampled_from(["commit", "checkout", "branch", "delete", "reset", "detach"]),
        pick=st.integers(0, 7),
        write=st.sampled_from([None, *FILES]),
    )
    def agent_turn(self, action: str, pick: int, write: str | None) -> None:
        before, files_before = dict(self.values), dict(self.files)
        self.store.begin_turn(SESSION, f"{action} {pick}", scan=True, close_open=True)
        self.store.shell_begin(SESSION, "c")
        self._do(action, pick)
        self.store.shell_end(SESSION, "c")
        if write is not None:
            token = self._token()
            self.store.pre_write([write], "Write", SESSION)
            (self.root / write).write_text(f"{token}\n")
            self.store.post_write([write], SESSION)
            self.files[write] = token
        self.store.end_turn(SESSION, scan=True)
        moves = {
            name: (before.get(name), self.values.get(name))
            for name in before.keys() | self.values.keys()
            if before.get(name) != self.values.get(name)
        }
        changed = {
            p: (files_before[p], self.files[p]) for p in FILES if files_before[p] != self.files[p]
        }
        self.turns.append({"moves": moves, "files": changed})
        self.ops.clear()  # an undo now would be a turn of its own on top: not modelled here
        note(f"turn {len(self.turns)}: {action} {pick}, wrote {write}: {moves}")

    @rule(action=st.sampled_from(["commit", "checkout", "branch"]), pick=st.integers(0, 7))
    def user_git(self, action: str, pick: int) -> None:
        """The user's own git, between turns: never the agent's to take back."""
        self._do(action, pick)
        note(f"user: {action} {pick}")

    @precondition(lambda self: self.turns)
    @rule(data=st.data())
    def rewind(self, data: st.DataObject) -> None:
        n = data.draw(st.integers(1, len(self.turns)))
        taken = self.turns[-n:]
        moves = [
            (name, new, old) for t in reversed(taken) for name, (old, new) in t["moves"].items()
        ]
        expected = self._fold(self._steps(moves))
        reachable = self._reachable()
        result = self.store.rewind(n, SESSION)
        assert reachable <= self._reachable()  # a rewind never loses a commit
        note(f"rewind {n}: {result.git}")
        op = Op(expected, taken)
        for turn in reversed(taken):
            for path, (old, _) in turn["files"].items():
                op.files.setdefault(path, (self.files[path], old))  # what the undo puts back
                self.files[path] = old
        self._apply(expected)
        self.turns = self.turns[:-n]
        self.ops.append(op)

    @precondition(lambda self: self.ops)
    @rule()
    def undo(self) -> None:
        op = self.ops.pop()
        moves = [(name, after, before) for name, (before, after) in op.moved.items()]
        expected = self._fold(self._steps(moves))
        reachable = self._reachable()
        result = self.store.undo()
        assert reachable <= self._reachable()  # nor does an undo
        note(f"undo: {result.git}")
        self._apply(expected)
        for path, (before, _) in op.files.items():
            self.files[path] = before
        self.turns += op.turns

    # -- the model's fold ------------------------------------------------------------------

    @staticmethod
    def _steps(moves: list[tuple[str, str | None, str | None]]) -> dict[str, list[tuple]]:
        steps: dict[str, list[tuple]] = {}
        for name, src, dst in moves:
            steps.setdefault(name, []).append((src, dst))
        return steps

    def _fold(self, steps: dict[str, list[tuple]]) -> dict[str, tuple[str | None, str | None]]:
        """What moves: name -> (now, where it goes), conflicts left out."""
        moving: dict[str, tuple[str | None, str | None]] = {}
        stuck: set[str] = set()
        for name, name_steps in steps.items():
            value = self.values.get(name)
            for src, dst in name_steps:
                if value == src:
                    value = dst
                elif value != dst:
                    stuck.add(name)
                    break
            else:
                if value != self.values.get(name):
                    moving[name] = (self.values.get(name), value)
        head = moving.get("HEAD", (self.values["HEAD"], self.values["HEAD"]))
        named = {v[len("ref: ") :] for v in head if v and v.startswith("ref: ")}
        if stuck & ({"HEAD"} | named):
            moving.pop("HEAD", None)
        return moving

    def _apply(self, moving: dict[str, tuple[str | None, str | None]]) -> None:
        for name, (_, after) in moving.items():
            self.values[name] = after

    # -- what must hold after every step ---------------------------------------------------

    @invariant()
    def the_repository_is_what_the_model_says(self) -> None:
        head = (self.root / ".git" / "HEAD").read_text().strip()
        refs = git(self.root, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads/")
        found = dict(line.split() for line in refs.splitlines())
        assert head == self.values["HEAD"]
        assert found == {b: v for b in BRANCHES if (v := self.values.get(b))}

    @invariant()
    def the_agents_files_are_what_the_model_says(self) -> None:
        for path in FILES:
            full = self.root / path
            expected = self.files[path]
            assert (full.read_text() if full.exists() else None) == (
                None if expected is None else f"{expected}\n"
            ), path

    def _reachable(self) -> set[str]:
        """The commits some ref reaches (snapstore's keeps included; reflogs not)."""
        return set(git(self.root, "rev-list", "--all").split())

    @invariant()
    def the_store_verifies(self) -> None:
        assert self.store.fsck().ok


def test_refs_beside_files(slow: bool) -> None:
    GitWorkspace.TestCase.settings = settings(
        max_examples=400 if slow else 25,
        stateful_step_count=25 if slow else 12,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=not slow,
    )
    GitWorkspace.TestCase().runTest()
