"""A hypothesis state machine against a reference model: never a silently wrong tree.

Three sessions and the user act on one workspace: turns begin and end; agents write,
delete, change modes, swap a file for a folder, create files in new nested folders,
make folders in shell calls, call tools in parallel on one file; the user edits what
the agents touched and what they did not, and makes and removes folders; sessions
rewind, switch, undo, redo and finish what an operation left, with any conflict policy;
gc runs. After every step the workspace (its files and its empty folders) must be
exactly what ``tests.support.model`` says, fsck must pass, and every session's branch
must be the model's: every turn whose edits are in the workspace is on it and rewinds
by number, every turn taken back is off it. An operation that writes nothing (every
path already as planned, or every path in conflict) is an operation all the same: it
moves the head, and undo and redo take it back and do it again.

The model works in slots (see its docstring) so that the right answer, merges
and conflicts included, is exact. Runs 2,000 examples; ``--slow`` runs 50,000. A second
run stores the binary file in chunks.
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, note, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from snapstore import BadInput, NotFound, RunActive, Store
from snapstore.core import blobs, chunked
from snapstore.core.records import Big
from snapstore.ops.gc import GcPolicy

from ..support import Clock, snapshot
from ..support.model import SLOTS, Model, Operation, Outcome, State

SESSIONS = ("a", "b", "c")
#: ``nest/a/n.txt`` brings two folders; ``nest/u.txt`` fills the outer one.
TEXT = ("t0.txt", "t1.txt", "sub/t2.txt", "nest/a/n.txt")
ALL = (*TEXT, "nest/u.txt", "b.dat", "ln", "cfg", "cfg/x.txt")
FOLDERS = ("sub", "nest", "nest/a", "cfg")
#: The conflict policy of an operation; the default most often.
POLICY = st.sampled_from(["skip", "skip", "markers", "theirs"])
#: What to do at once when an operation left paths: nothing, or finish them with a policy
#: (as the command line suggests: ``snapstore rewind --finish --on-conflict markers``).
THEN = st.sampled_from([None, None, "skip", "markers", "theirs"])
#: Every order of two tool calls' events on one file that an agent can produce: each call's
#: pre-write (P), write (W) and post-write (Q) in that order, the second write after the first.
PARALLEL = [
    order
    for order in itertools.permutations(("P1", "W1", "Q1", "P2", "W2", "Q2"))
    if all(
        order.index(a) < order.index(b)
        for a, b in (("P1", "W1"), ("W1", "Q1"), ("P2", "W2"), ("W2", "Q2"), ("W1", "W2"))
    )
]
#: On a tmpfs, with a store that syncs nothing: thousands of throwaway stores, whose meaning
#: does not depend on durability (the crash tests' does).
TMP = "/dev/shm" if os.path.isdir("/dev/shm") else None


class Workspace(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = tempfile.mkdtemp(dir=TMP, prefix="snapstore-sm-")
        self.root = Path(self.tmp) / "ws"
        self.root.mkdir()
        self.clock = Clock()
        self.model = Model()
        self.store = self._start()

    def _start(self) -> Store:
        """The store of the workspace, empty so far."""
        return Store.init(self.root, clock=self.clock, durable=False)

    def teardown(self) -> None:
        self.store.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    # -- the file system, as an agent's tool or the user changes it ----------------------

    def _put(self, path: str, state: State | None) -> None:
        full = self.root / path
        if full.is_symlink() or full.is_file():
            full.unlink()
        if state is None:
            return
        if full.is_dir():
            full.rmdir()  # an empty folder (one left by a delete) gives way to the file
        full.parent.mkdir(parents=True, exist_ok=True)
        kind, data, mode = state.render()
        if kind == "link":
            os.symlink(data.decode(), full)
            return
        full.write_bytes(data)
        os.chmod(full, mode)

    def _edited(self, path: str, how: str, who: str) -> State | None:
        """What ``path`` holds after an edit of kind ``how``, or None for a delete."""
        cur = self.model.files.get(path)
        if how == "delete":
            return None
        if path == "ln":
            return State("link", self.model.token(who), 0o777)
        if path == "b.dat":
            return State("bin", self.model.token(who), 0o644 if cur is None else cur.mode)
        if cur is None or how == "new" or (cur.kind == "raw" and how.startswith("slot")):
            mode = 0o644 if cur is None else cur.mode
            return State("text", tuple(self.model.token(who) for _ in range(SLOTS)), mode)
        if how == "chmod":
            return cur._replace(mode=0o755 if cur.mode == 0o644 else 0o644)
        slot = int(how[-1]) % SLOTS
        value = list(cur.value)
        value[slot] = self.model.token(who)
        return cur._replace(value=tuple(value))

    def _allowed(self, path: str, state: State | None) -> bool:
        """A file and a folder of the same name cannot both be there."""
        if path == "cfg" and state is not None:
            return "cfg/x.txt" not in self.model.files
        if path == "cfg/x.txt" and state is not None:
            return "cfg" not in self.model.files
        return True

    # -- capture --------------------------------------------------------------------------

    @rule(session=st.sampled_from(SESSIONS), scan=st.booleans())
    def begin(self, session: str, scan: bool) -> None:
        turn_id = self.model.open.get(session)
        if turn_id is not None and not self.model.turns[turn_id].implicit:
            with pytest.raises(RunActive):
                self.store.begin_turn(session, "refused")
            return
        if turn_id is not None:
            self.model.end(session)  # an implicit turn is closed by the next begin
        self.clock.tick()
        # scan mode: what changed since the last scan is recorded first, as the user's
        turn = self.store.begin_turn(session, f"prompt {self.model.token('p')}", scan=scan)
        if scan:
            self.model.scan()  # the folders that came since are the user's
        self.model.begin(turn.id, session)

    @rule(session=st.sampled_from(SESSIONS), scan=st.booleans())
    def end(self, session: str, scan: bool) -> None:
        if session not in self.model.open:
            with pytest.raises(NotFound):
                self.store.end_turn(session, scan=scan)
            return
        self.store.end_turn(session, scan=scan)
        if scan:
            self.model.scan()
        self.model.end(session)

    def _write(self, session: str, path: str, state: State | None, tool: str = "Write") -> None:
        """One tool call: capture, write, record."""
        before = self.model.files.get(path)
        mkdirs = self.model.missing_parents(path)
        self._pre_write(session, path, tool)
        self._put(path, state)
        self.store.post_write([path], session)
        self.model.record(session, path, before, state, mkdirs)

    def _pre_write(self, session: str, path: str, tool: str) -> None:
        """A tool call's pre-write; outside a turn it begins an implicit one."""
        result = self.store.pre_write([path], tool, session)
        if session not in self.model.open:
            self.model.begin(result.turn, session, implicit=True)

    @rule(
        session=st.sampled_from(SESSIONS),
        path=st.sampled_from(ALL),
        how=st.sampled_from(["slot0", "slot1", "slot2", "slot3", "chmod", "delete", "new"]),
    )
    def agent_edit(self, session: str, path: str, how: str) -> None:
        state = self._edited(path, how, "agent")
        if self._allowed(path, state) and not (state is None and path not in self.model.files):
            self._write(session, path, state)

    @rule(session=st.sampled_from(SESSIONS), order=st.sampled_from(PARALLEL))
    def parallel_calls_on_one_file(self, session: str, order: tuple[str, ...]) -> None:
        """Two tool calls on one file at once, their pre-writes, writes and post-writes in
        any order a real agent allows; the second write builds on the first."""
        path = "t0.txt"
        before = self.model.files.get(path)
        first = self._edited(path, "slot1", "agent")
        self.model.set(path, first)
        second = self._edited(path, "slot2", "agent")
        self.model.set(path, before)
        for call in order:
            if call[0] == "P":
                self._pre_write(session, path, "Edit")
            elif call[0] == "W":
                self._put(path, first if call == "W1" else second)
            else:
                self.store.post_write([path], session)
        self.model.record(session, path, before, second)

    @rule(session=st.sampled_from(SESSIONS))
    def agent_swaps_a_file_and_a_folder(self, session: str) -> None:
        """``cfg`` becomes ``cfg/x.txt``, or the other way round: two tool calls."""
        if "cfg" in self.model.files:
            old, new = "cfg", "cfg/x.txt"
        elif "cfg/x.txt" in self.model.files:
            old, new = "cfg/x.txt", "cfg"
        else:
            return
        content = self.model.files[old]
        self._write(session, old, None, "Delete")
        tokens = tuple(self.model.token("agent") for _ in range(SLOTS))
        self._write(session, new, State("text", tokens, content.mode), "Write")

    @rule(
        pair=st.permutations(SESSIONS).map(lambda order: order[:2]),
        path=st.sampled_from(TEXT),
        other=st.sampled_from(TEXT),
        how=st.sampled_from(["slot0", "slot3", "chmod"]),
    )
    def calls_of_two_sessions_interleave(
        self, pair: tuple[str, str], path: str, other: str, how: str
    ) -> None:
        """Session ``first`` captures ``path``; before its write lands, session ``second``'s
        whole tool call on ``other`` (another file) runs."""
        first, second = pair
        state = self._edited(path, how, "agent")
        if other == path or path not in self.model.files:
            return
        before = self.model.files.get(path)
        self._pre_write(first, path, "Edit")
        self.agent_edit(second, other, "slot1")
        self._put(path, state)
        self.store.post_write([path], first)
        self.model.record(first, path, before, state)

    @rule(
        session=st.sampled_from(SESSIONS),
        path=st.sampled_from(TEXT),
        how=st.sampled_from(["slot0", "slot2", "chmod", "delete", "new", "mkdir", "mkdir"]),
    )
    def shell_call(self, session: str, path: str, how: str) -> None:
        """Scan mode: the agent's shell tool changes a file no hook names, or only makes
        its folders (``mkdir -p``); the scans around the call give the change, and the
        folders that came, to the session's turn."""
        if how != "mkdir":
            state = self._edited(path, how, "shell")
            if state is not None or path in self.model.files:
                self._shell_call(session, lambda: self._put(path, state), {path: state})
            return
        folder = path.rpartition("/")[0]

        def mkdir() -> None:
            if folder and self.model.make_folder(folder):
                (self.root / folder).mkdir(parents=True)

        self._shell_call(session, mkdir, {})

    def _shell_call(
        self, session: str, run: Callable[[], None], changes: dict[str, State | None]
    ) -> None:
        """One shell call of ``session`` that runs ``run``, which changes each path of
        ``changes`` to what it holds there (and may make folders, in the model too)."""
        before = {path: self.model.files.get(path) for path in changes}
        mkdirs = {path: self.model.missing_parents(path) for path in changes}
        call = self.model.token("call")
        self.store.shell_begin(session, call)
        self.model.scan()
        if session not in self.model.open:
            self.model.begin(self.store.open_turn(session).id, session, implicit=True)
        run()
        self.store.shell_end(session, call)
        for path, state in changes.items():
            self.model.record(session, path, before[path], state, mkdirs[path])
        self.model.turns[self.model.open[session]].folders += self.model.scan()

    @rule(
        sessions=st.sampled_from([*itertools.combinations(SESSIONS, 2), SESSIONS]),
        path=st.sampled_from(TEXT),
        how=st.sampled_from(["slot1", "chmod", "new"]),
    )
    def shell_calls_of_sessions_overlap(
        self, sessions: tuple[str, ...], path: str, how: str
    ) -> None:
        """Two or three sessions' shell calls run at once: what changed then is nobody's
        turn."""
        state = self._edited(path, how, "shell")
        calls = [self.model.token("call") for _ in sessions]
        for session, call in zip(sessions, calls, strict=True):
            self.store.shell_begin(session, call)
            self.model.scan()
            if session not in self.model.open:
                self.model.begin(self.store.open_turn(session).id, session, implicit=True)
        self._put(path, state)
        self.model.set(path, state)  # the user's, unattributed, and so are its folders
        for session, call in zip(sessions, calls, strict=True):
            self.store.shell_end(session, call)
            self.model.scan()

    # -- the user ---------------------------------------------------------------------------

    @rule(
        path=st.sampled_from(ALL),
        how=st.sampled_from(["slot0", "slot1", "slot2", "slot3", "chmod", "delete", "new"]),
    )
    def user_edit(self, path: str, how: str) -> None:
        state = self._edited(path, how, "user")
        if not self._allowed(path, state) or (state is None and path not in self.model.files):
            return
        self._put(path, state)
        self.model.set(path, state)

    @rule(folder=st.sampled_from(FOLDERS))
    def user_makes_a_folder(self, folder: str) -> None:
        """An empty folder of the user's (``mkdir -p``), where no file stands."""
        if self.model.make_folder(folder):
            (self.root / folder).mkdir(parents=True, exist_ok=True)

    @rule(folder=st.sampled_from(FOLDERS))
    def user_removes_an_empty_folder(self, folder: str) -> None:
        if self.model.remove_folder(folder):
            (self.root / folder).rmdir()

    # -- going back and forth ------------------------------------------------------------------

    def _check_result(self, result, outcome: Outcome, what: str = "") -> None:
        assert {e["path"] for e in result.errors} == outcome.errors, result.errors
        assert {c["path"] for c in result.conflicts} == outcome.conflicts, result.conflicts
        assert set(result.marked) == outcome.marked, result.marked
        for kind, found in (
            ("conflict", result.conflicts),
            ("merge", result.merged),
            ("error", result.errors),
            ("restore", result.restored),
            ("conflict written with markers", result.marked),
        ):
            if found:
                event(f"{what} with a {kind}")

    def _done(
        self, result, op: Operation, outcome: Outcome, what: str, then: str | None = None
    ) -> None:
        """An operation the model carried out: the store reports what the model did, and
        one that wrote nothing is an operation all the same. What it left is finished at
        once with the policy ``then``, if given."""
        self._check_result(result, outcome, what)
        assert not result.dry_run and not result.nothing_done, result
        assert sorted(result.changed) == sorted(op.writes), (result.changed, op.writes)
        assert result.new_head == op.new_head, (result.new_head, op.new_head)
        assert result.folders_created == op.folders_created, result.folders_created
        assert result.folders_removed == op.folders_removed, result.folders_removed
        if op.folders_created or op.folders_removed:
            event(f"{what} that made or removed a turn's folders")
        if op.emptied:
            event(f"{what} that removed folders a write it took back had brought")
        if op.kept_full:
            event(f"{what} that kept such a folder: it holds something")
        if not op.left:  # nothing left: nothing to finish (finished, or nothing to retry)
            with pytest.raises(NotFound):
                self.store.finish(op.session)
        if not op.writes:
            event(f"{what} that wrote nothing" + (" (all in conflict)" if op.left else ""))
            with self.store.repo.read() as v:
                assert v.turn(op.id).op.status == "applied"
        if op.left and then is not None:
            self._finish(op.session, then)

    def _settle(self, session: str, force: bool) -> bool:
        """Whether an operation on ``session`` may go on: with no open turn, or with
        ``force`` (the open turn is ended first); else it is refused, and that is checked."""
        if session not in self.model.open:
            return True
        if not force:
            with pytest.raises(RunActive):
                self.store.rewind(1, session)
            return False
        self.store.end_turn(session)
        self.model.end(session)
        return True

    @rule(
        session=st.sampled_from(SESSIONS),
        n=st.integers(1, 6),
        force=st.booleans(),
        policy=POLICY,
        then=THEN,
    )
    def rewind(self, session: str, n: int, force: bool, policy: str, then: str | None) -> None:
        if not self.model.branch(session) or not self._settle(session, force):
            return
        branch = self.model.branch(session)
        if n > len(branch):
            return
        op, outcome = self.model.plan_rewind(session, branch[n - 1], policy)
        result = self.store.rewind(n, session, on_conflict=policy)
        op.id = result.undo_id
        self._done(result, self.model.rewind(op, outcome), outcome, "rewind", then)

    @rule(data=st.data(), policy=POLICY, then=THEN)
    def switch(self, data: st.DataObject, policy: str, then: str | None) -> None:
        choices = list(self.model.turns)  # in the order they came: the same on every run
        if not choices:
            return
        heads = set(self.model.heads.values())
        elsewhere = [t for t in choices if t not in heads]  # mostly: a switch to the head
        if elsewhere and data.draw(st.integers(0, 3)):  # writes nothing
            choices = elsewhere
        target = data.draw(st.sampled_from(choices))
        note(f"switch to turn #{choices.index(target)} ({self.model.turns[target].session})")
        session = self.model.turns[target].session
        if not self._settle(session, force=True):
            return
        op, outcome = self.model.plan_switch(target, policy)
        result = self.store.switch(target, on_conflict=policy)
        op.id = result.undo_id
        what = (
            ("switch across" if op.forward else "switch back")
            if op.reverted
            else ("switch forward" if op.forward else "switch to the head")
        )
        self._done(result, self.model.switch(op, outcome), outcome, what, then)

    def _undo(self, done: Operation, by_id: bool, policy: str, then: str | None = None) -> None:
        """Take back ``done`` (by its id, or as the newest operation not undone yet)."""
        ref = done.id if by_id else None
        if done.session in self.model.open:
            with pytest.raises(RunActive):
                self.store.undo(ref)
            self._settle(done.session, force=True)
        op, outcome = self.model.plan_undo(done, policy)
        result = self.store.undo(ref, on_conflict=policy)
        assert result.target == done.id and result.session == done.session
        op.id = result.undo_id
        if op.on_branch:
            event("an undo that became a turn on top")
            op.new_head = result.new_head
        what = f"undo of a {done.action}"
        self._done(result, self.model.undo(op, outcome), outcome, what, then)

    def _redo(self, undo: Operation, by_id: bool, policy: str, then: str | None = None) -> None:
        """Take back ``undo`` (by its id, or as the newest undo not redone yet): refused
        once its session moved on, else what it took back is done again, from what the
        files hold now."""
        ref = undo.id if by_id else None
        if undo.session in self.model.open:
            with pytest.raises(RunActive):
                self.store.redo(ref, on_conflict=policy)
            return
        if undo.on_branch or self.model.heads.get(undo.session) != undo.new_head:
            with pytest.raises(BadInput):  # the invariants check that nothing moved
                self.store.redo(ref, on_conflict=policy)
            event("a redo refused: the session moved on, or the undo is a turn of its own")
            return
        op, outcome = self.model.plan_redo(undo, policy)
        result = self.store.redo(ref, on_conflict=policy)
        op.id = result.undo_id
        with self.store.repo.read() as v:
            assert v.turn(op.id).op.redoes == undo.id and v.turn(op.id).op.action == op.action
        what = f"redo of a {op.action}"
        self._done(result, self.model.redo(undo, op, outcome), outcome, what, then)

    @rule(data=st.data(), policy=POLICY, then=THEN)
    def undo(self, data: st.DataObject, policy: str, then: str | None) -> None:
        """Take back the newest operation not undone yet, or (by its id) any of them."""
        undoable = [op for op in self.model.ops if op.undoable]
        if not undoable:
            with pytest.raises(NotFound):
                self.store.undo()
            return
        by_id = data.draw(st.booleans())
        done = data.draw(st.sampled_from(undoable)) if by_id else undoable[-1]
        self._undo(done, by_id, policy, then)

    @rule(data=st.data(), policy=POLICY, then=THEN)
    def redo(self, data: st.DataObject, policy: str, then: str | None) -> None:
        """Take back the newest undo not redone yet, or (by its id) any of them."""
        redoable = [op for op in self.model.ops if op.redoable]
        if not redoable:
            with pytest.raises(NotFound):
                self.store.redo(on_conflict=policy)
            return
        by_id = data.draw(st.booleans())
        undo = data.draw(st.sampled_from(redoable)) if by_id else redoable[-1]
        self._redo(undo, by_id, policy, then)

    @precondition(lambda self: any(op.undoable for op in self.model.ops))
    @rule(undo_policy=POLICY, redo_policy=POLICY)
    def undo_then_redo(self, undo_policy: str, redo_policy: str) -> None:
        """Undo the newest operation (whatever it did, or if it wrote nothing), then redo
        it at once: the redo does it again, from what the undo left."""
        self._undo([op for op in self.model.ops if op.undoable][-1], False, undo_policy)
        self._redo([op for op in self.model.ops if op.redoable][-1], False, redo_policy)

    def _left_something(self) -> list[str]:
        """The sessions whose last operation left paths: finish retries them, unless the
        operation was undone or the head moved since."""
        return [s for s in SESSIONS if s in self.model.last_op and self.model.last_op[s].left]

    @precondition(lambda self: self._left_something())
    @rule(data=st.data(), policy=POLICY)
    def finish(self, data: st.DataObject, policy: str) -> None:
        """Retry, later, what a session's last operation left (the user may have edited
        the paths since), with any policy. (Where the operation left nothing, finish is
        refused: ``_done`` checks it.)"""
        self._finish(data.draw(st.sampled_from(self._left_something())), policy)

    def _finish(self, session: str, policy: str) -> None:
        """Retry what the session's last operation left with ``policy``: the head stays;
        refused once the operation was undone or the head moved since."""
        left = self.model.leftover(session)
        if left is None:
            with pytest.raises(NotFound):
                self.store.finish(session, on_conflict=policy)
            event("finish refused: undone, or the head moved since")
            return
        retry = left.left if policy == "theirs" else left.left - left.marked
        if not retry:  # the markers are the user's to resolve, or to take theirs over
            with pytest.raises(BadInput, match="the conflict markers are in"):
                self.store.finish(session, on_conflict=policy)
            event("finish refused: the paths left hold conflict markers")
            return
        op, outcome = self.model.plan_finish(left, policy, retry)
        result = self.store.finish(session, on_conflict=policy)
        assert result.target == left.id, (result.target, left.id)
        op.id = result.undo_id
        self._done(result, self.model.apply(op, outcome), outcome, f"finish ({policy})")

    @rule(session=st.sampled_from(SESSIONS), n=st.integers(1, 6))
    def every_point_rewinds_as_the_model_says(self, session: str, n: int) -> None:
        """A dry run of rewinding to point n plans exactly the model's tree before it (a
        big file's content by its digest and size: it is streamed, not held)."""
        branch = self.model.branch(session)
        if session in self.model.open or n > len(branch):
            return
        _, outcome = self.model.plan_rewind(session, branch[n - 1])
        result = self.store.rewind(n, session, dry_run=True)
        self._check_result(result, outcome)
        planned = {p.path: p.content for p in result.plans if p.writes}
        for path, state in outcome.results.items():
            if path in planned:
                content = planned[path]
                got = (
                    None
                    if content is None
                    else (
                        ("link", content.data, 0)
                        if content.kind == "link"
                        else ("file", content.data, content.mode)
                    )
                )
                want = None if state is None else state.render()
                if want is not None and content is not None and isinstance(content.data, Big):
                    kind, data, mode = want
                    want = (kind, Big(blobs.digest(data), len(data)), mode)
                assert got == want, path
            else:  # no write: it already holds the result
                assert self.model.files.get(path) == state, path

    @rule()
    def gc(self) -> None:
        """gc keeping every turn only sweeps and compacts: nothing anyone sees changes."""
        result = self.store.gc(GcPolicy(keep_days=None))
        assert result.removed_turns == []

    # -- what must hold after every step ---------------------------------------------------

    def _tree(self) -> dict[str, tuple[str, bytes, int]]:
        """The workspace's files and empty folders, as ``Model.tree`` shows them."""
        return snapshot(self.root, dirs=True)

    @invariant()
    def the_workspace_is_what_the_model_says(self) -> None:
        assert self._tree() == self.model.tree()

    @invariant()
    def every_branch_is_the_models(self) -> None:
        for session in SESSIONS:
            if session in self.model.heads:
                points = [p.turn.id for p in self.store.rewind_points(session)]
                assert points == self.model.branch(session), session
        with self.store.repo.read() as v:
            for turn in self.model.turns.values():
                assert v.turn(turn.id).state == turn.state, turn.id

    @invariant()
    def the_store_verifies(self) -> None:
        report = self.store.fsck()
        assert report.ok, report


def run(machine: type[RuleBasedStateMachine], examples: int, slow: bool, steps: int = 40) -> None:
    """Run ``machine`` (this one, or one built on it) for ``examples`` of ``steps``."""
    machine.TestCase.settings = settings(
        max_examples=examples,
        stateful_step_count=steps,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=not slow,
    )
    machine.TestCase().runTest()


@pytest.mark.long(400)
def test_state_machine(slow: bool) -> None:
    run(Workspace, 50_000 if slow else 2_000, slow)


@pytest.mark.long(60)
def test_state_machine_with_the_binary_file_in_chunks(
    slow: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same machine with the big-file size shrunk to 1 KiB and chunks of 64 bytes to
    1 KiB, so that ``b.dat`` (3 KiB, mostly the same bytes in every version) is stored in
    chunks that its versions share: rewinds, undos, conflicts and gc over chunked blobs."""
    monkeypatch.setattr(blobs, "BIG", 1024)
    monkeypatch.setattr(chunked, "AVERAGE", 256)
    monkeypatch.setattr(chunked, "SMALLEST", 64)
    monkeypatch.setattr(chunked, "LARGEST", 1024)
    run(Workspace, 5_000 if slow else 300, slow)
