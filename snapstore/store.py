"""The Store: the library's facade over one workspace and its store.

A ``Store`` holds a :class:`~snapstore.core.repo.Repo` (the record layer) and offers
each operation as a method that delegates to the module holding that concept:
``capture`` (the hooks), ``history`` (rewind points, status), ``rewind`` (with
``plan`` and ``journal`` below it), ``scan`` and ``watch``, ``gc`` and
``fsck``. The data flows one way: this facade imports the operations, the
operations import the record layer, and nothing below imports this module.
The operations are imported lazily, so the hook path loads only capture.

Orchestration that spans operations lives here and nowhere else: scanning
before and after a turn (asking a running watcher, else walking the tree, with
one file-size cap), and closing a turn whose end never came when the agent's
next prompt arrives.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from .core.db import INITIAL_MAP_SIZE, keep_out_of_git
from .core.errors import NotFound, SnapstoreError
from .core.fsio import DEFAULT_MAX_FILE_SIZE, exclude_from_git
from .core.places import STORE_DIRNAME, find_root
from .core.records import BOTH, DEFAULT_SESSION, SKIP, Change, Entry, Mode, Policy, Turn
from .core.repo import Repo

if TYPE_CHECKING:
    from .core.fsio import Workspace
    from .ops.capture import CaptureResult
    from .ops.diffs import FileDiff, RangeDiff
    from .ops.fsck import FsckReport
    from .ops.gc import GcPolicy, GcResult
    from .ops.gitrecord import Moment as GitMoment
    from .ops.history import Operation, RewindPoint, SessionInfo, StoreStatus, TurnDetail
    from .ops.plan import RewindResult
    from .ops.rewind import Git as GitScope
    from .ops.scanrecord import ScanResult
    from .ops.session_base import Base
    from .ops.shell import WindowAction
    from .ops.watch import Report, Watcher
    from .remote.format.catalog import Catalog
    from .remote.sync.push import SyncResult
    from .remote.sync.upkeep import LogEntry, RemoteFsck, RemoteGc
    from .remote.transport.backend import ObjectStore

__all__ = ["DEFAULT_SESSION", "STORE_DIRNAME", "Store", "find_root", "tracked"]

F = TypeVar("F", bound=Callable[..., Any])


class Store:
    """A snapstore store for one workspace.

    Open one with :meth:`Store.open` (or create one with :meth:`Store.init`) and
    close it when done, or use it as a context manager. A Store must not be used
    across ``fork()``. ``max_file_size`` caps what captures and scans record (a
    file over it is skipped and reported). ``warn`` receives what
    went wrong without stopping the operation (a scan at a turn's edge that
    failed); without it, such a failure is raised. ``record_base`` records, at each
    session's first capture, the git commit and what differed from it (snapstore.ops.session_base:
    git runs once per new session), so that another machine can rebuild its turns.
    ``durable=False`` syncs nothing, neither commits nor workspace writes: a crash of the
    machine may then lose or corrupt the store. It exists for tests that create thousands
    of throwaway stores (property tests); never for a store whose history matters.
    ``git`` records the repository's HEAD, refs and index with the turns, and puts them
    back with the files (snapstore.ops.gitrecord, snapstore.ops.gitplan); ``git_dir`` is
    the agent's ``GIT_DIR``, when its environment names one (the library reads none).
    """

    def __init__(
        self,
        root: str | os.PathLike[str] | None,
        *,
        store_dir: str | None = None,
        create: bool = False,
        clock: Callable[[], float] | None = None,
        lock_timeout: float = 10.0,
        map_size: int = INITIAL_MAP_SIZE,
        max_file_size: int = DEFAULT_MAX_FILE_SIZE,
        warn: Callable[[str], None] | None = None,
        record_base: bool = False,
        durable: bool = True,
        git: bool = True,
        git_dir: str | None = None,
    ):
        self.repo = Repo(
            root,
            store_dir=store_dir,
            create=create,
            clock=clock,
            lock_timeout=lock_timeout,
            map_size=map_size,
            durable=durable,
        )
        self.max_file_size = max_file_size
        self.warn = warn
        self.record_base = record_base
        self.git = git
        self.git_dir = git_dir

    @classmethod
    def init(cls, root: str | os.PathLike[str] | None, **options: Any) -> Store:
        """Create the store for ``root`` (idempotent) and open it."""
        return cls(root, create=True, **options)

    @classmethod
    def open(cls, root: str | os.PathLike[str] | None, **options: Any) -> Store:
        """Open the existing store of ``root``."""
        return cls(root, **options)

    @property
    def root(self) -> str:
        return self.repo.root

    @property
    def store_dir(self) -> str:
        return self.repo.store_dir

    @property
    def ws(self) -> Workspace:
        """The workspace, every read and write confined to its root."""
        return self.repo.ws

    @property
    def clock(self) -> Callable[[], float]:
        return self.repo.clock

    def close(self) -> None:
        self.repo.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def exclude_from_git(self) -> bool:
        """Keep the store out of git: a ``.gitignore`` holding ``*`` in its folder, and its
        line in the repository's ``info/exclude`` when the workspace is one (the common
        folder's, for a linked worktree); whether the exclude line was added."""
        keep_out_of_git(self.store_dir)
        if self.ws.store_rel is None:
            return False
        return exclude_from_git(self.root, f"{self.ws.store_rel}/", self.git_dir)

    # -- capture (snapstore.ops.capture) ---------------------------------------------

    def begin_turn(
        self,
        session: str = DEFAULT_SESSION,
        prompt: str = "",
        message_id: str | None = None,
        *,
        scan: bool = False,
        close_open: bool = False,
        transcript: str | None = None,
        prompt_time: str = "",
    ) -> Turn:
        """Open a turn for one user message, as a child of the session's head.

        An open turn of the session is refused (``RunActive``), unless it was
        opened implicitly by a capture, or ``close_open`` is set (an agent's
        next prompt: the turn whose end never came is over); either is closed
        first, in the commit that begins the new turn. ``scan`` first records
        what changed since the last scan, as the user's, and closes the
        session's shell windows still open. Scanning and reading (and a new
        session's base) happen before the lock is taken; one commit then closes
        the open turn, begins the new one and stores the base. ``transcript`` is
        the agent's transcript file: the turn keeps it with its size now, which
        maps the turn to the agent's message for a conversation rewind, with
        ``prompt_time`` (the begin hook's own time) for agents whose hooks carry no id.
        """
        from .ops.capture import begin_turn, refuse_run_active

        if scan and not close_open:
            refuse_run_active(self.repo, session)  # before anything is recorded
        self._record_git(session, "begin", windows=scan)
        if scan:
            self._edge_scan(session)
        base = self._base_of_new(session)
        return begin_turn(
            self.repo,
            session,
            prompt,
            message_id,
            close_open,
            base,
            transcript=transcript,
            prompt_time=prompt_time,
        )

    def _base_of_new(self, session: str) -> Base | None:
        """A new session's base, read before its first capture (None: not asked, or not new)."""
        if not self.record_base or self.has_session(session):
            return None
        from .ops.session_base import capture_base

        return capture_base(self.repo, self.max_file_size)

    def shell_begin(self, session: str = DEFAULT_SESSION, call: str = "") -> None:
        """Scan mode: the agent's shell tool is about to run (its call id, if it has one).

        What changed before is recorded (whose it is: see snapstore.ops.shell), then
        the call's window opens; until it closes, what changes belongs to the
        session's open turn (an implicit one if none is open), unless another
        session's shell call runs at the same time.
        """
        from .ops.capture import open_implicit_turn
        from .ops.shell import OPEN, WindowAction

        self._record_git(session, "shell-begin", call, windows=True)
        open_implicit_turn(self.repo, session)
        self._window_scan(session, WindowAction(OPEN, session, call))

    def shell_end(self, session: str = DEFAULT_SESSION, call: str = "") -> None:
        """Scan mode: the agent's shell call has ended; what it changed is recorded."""
        from .ops.shell import CLOSE, WindowAction

        self._record_git(session, "shell-end", call, windows=True)
        self._window_scan(session, WindowAction(CLOSE, session, call))

    def open_turn(self, session: str = DEFAULT_SESSION) -> Turn | None:
        """The session's open turn, if it has one."""
        with self.repo.read() as v:
            return v.open_turn(session)

    def pre_write(
        self,
        paths: Iterable[str | os.PathLike[str]],
        tool: str = "",
        session: str = DEFAULT_SESSION,
    ) -> CaptureResult:
        """Capture the current bytes of ``paths`` before the agent writes them."""
        from .ops.capture import pre_write

        return pre_write(
            self.repo,
            paths,
            tool,
            session,
            base=self._base_of_new(session),
            limit=self.max_file_size,
        )

    def post_write(
        self,
        paths: Iterable[str | os.PathLike[str]],
        session: str = DEFAULT_SESSION,
        tool: str = "",
    ) -> CaptureResult:
        """Record what the agent wrote to ``paths``.

        ``tool`` names the tool of a change this opens itself, when the path's
        pre-write never reached the store.
        """
        from .ops.capture import post_write

        return post_write(self.repo, paths, session, tool, self.max_file_size)

    def end_turn(self, session: str = DEFAULT_SESSION, *, scan: bool = False) -> Turn:
        """Close the session's open turn, recording any ``after`` still missing.

        ``scan`` first records what changed since the last scan: the user's
        (snapstore.ops.shell), and it closes the session's shell windows still open.
        """
        from .ops.capture import end_turn

        if scan and self.open_turn(session) is None:
            raise NotFound(f"session {session!r} has no open turn", session=session)
        self._record_git(session, "end", windows=scan)
        if scan:
            self._edge_scan(session)
        return end_turn(self.repo, session)

    def _record_git(
        self, session: str, moment: GitMoment, call: str = "", *, windows: bool
    ) -> None:
        """Record what moved in the repository (snapstore.ops.gitrecord): the hook path,
        where a workspace that is no repository loads nothing of git's. Why git was left
        alone, and a failure, go to ``warn`` (without it, a failure is raised)."""
        if not self.git:
            return
        with self.repo.read() as v:
            stamp = v.git_state()
        if stamp is None:
            if self.git_dir is None and not os.path.lexists(os.path.join(self.root, ".git")):
                return  # no repository now, and none recorded before
        elif not stamp.get("refused"):
            dot = self.git_dir or os.path.join(self.root, ".git")  # the repository it names
            if stamp.get("paths", {}).get(".git") == dot:
                from .git.stamp import unchanged  # the quick look: one lstat a file

                if unchanged(stamp):
                    return
        from .ops.gitrecord import record

        try:
            note = record(
                self.repo, self.git_dir, session, moment, self.max_file_size, call, windows
            )
        except (SnapstoreError, OSError) as exc:
            if self.warn is None:
                raise
            note = f"the repository's state was not recorded: {exc}"
        if note and self.warn is not None:
            self.warn(f"git: {note}")

    def _edge_scan(self, session: str) -> None:
        """The scan at a turn's edge; it closes the session's shell windows still open (an
        agent that died inside a shell call). A failure goes to ``warn``, the turn goes on."""
        from .ops.shell import END, WindowAction

        self._window_scan(session, WindowAction(END, session))

    def _window_scan(self, session: str, action: WindowAction) -> None:
        """Scan, then open or close windows; a failed scan still does the latter. A file the
        scan could not capture goes to ``warn``: no rewind can bring back what it holds."""
        try:
            result = self.scan(session, window=[action])
            warn = self.warn
            if warn is not None:
                for item in result.uncaptured:
                    warn(
                        f"{item['path']} was not captured, {item['reason']}: "
                        "no rewind can restore it"
                    )
        except SnapstoreError as exc:
            from .ops.shell import act_alone

            act_alone(self.repo, [action])
            if self.warn is None:
                raise
            self.warn(f"scan failed: {exc}")

    @contextmanager
    def writing(
        self,
        paths: Iterable[str | os.PathLike[str]],
        tool: str = "",
        session: str = DEFAULT_SESSION,
    ) -> Iterator[CaptureResult]:
        """Capture ``paths`` before the block and record them after it, even if it raises."""
        paths = list(paths)
        result = self.pre_write(paths, tool, session)
        try:
            yield result
        finally:
            self.post_write(paths, session, tool)

    # -- scan mode (snapstore.ops.scan, snapstore.ops.watch) -------------------------------

    def scan(
        self,
        session: str | None = None,
        paths: Iterable[str | os.PathLike[str]] | None = None,
        progress: Callable[[str, int, int], None] | None = None,
        use_watcher: bool = True,
        window: Iterable[WindowAction] = (),
    ) -> ScanResult:
        """Record what changed on disk since the last scan (see snapstore.ops.scan).

        Whose the changes are depends on the agents' shell calls running
        (snapstore.ops.shell); ``session`` names the user turn otherwise. ``window``
        opens or closes shell windows once the changes are recorded. A running
        ``snapstore watch`` already knows what changed; a scan of the whole
        workspace asks it instead of walking, unless ``use_watcher`` is false.
        """
        from .ops.scan import scan

        window = list(window)
        if paths is None and use_watcher:
            from .ops.watchlink import ask_watcher

            answer = ask_watcher(self.repo, session, window=window)
            if answer is not None:
                return answer
        return scan(
            self.repo,
            session,
            paths,
            progress=progress,
            max_file_size=self.max_file_size,
            window=window,
        )

    def watcher(self, *, debounce: float | None = None, report: Report | None = None) -> Watcher:
        """A watch daemon for this workspace (see snapstore.ops.watch), with this Store's cap."""
        from .ops.watch import DEFAULT_DEBOUNCE, Watcher

        return Watcher(
            self.repo,
            debounce=DEFAULT_DEBOUNCE if debounce is None else debounce,
            max_file_size=self.max_file_size,
            report=report,
        )

    # -- history (snapstore.ops.history, snapstore.ops.diffs) ------------------------------

    def rewind_points(
        self, session: str = DEFAULT_SESSION, all_branches: bool = False
    ) -> list[RewindPoint]:
        """Rewind points, newest first, numbered 1..N on the current branch."""
        from .ops.history import rewind_points

        return rewind_points(self.repo, session, all_branches, self.git_dir)

    def resolve_turn(self, ref: str | int, session: str = DEFAULT_SESSION) -> Turn:
        """A turn from a number shown by ``log`` or an id (or unique id prefix)."""
        from .ops.branches import resolve_turn

        with self.repo.read() as v:
            return resolve_turn(v, ref, session)

    def show(self, ref: str | int, session: str = DEFAULT_SESSION) -> TurnDetail:
        """One turn with per-file stats."""
        from .ops.history import show

        return show(self.repo, ref, session, self.git_dir)

    def diff(
        self, ref: str | int, session: str = DEFAULT_SESSION, paths: list[str] | None = None
    ) -> list[str]:
        """The lines of a git-style diff of one turn's changes (or only ``paths``)."""
        from .ops.diffs import turn_diff

        return turn_diff(self.repo, ref, session, paths)

    def diffs(
        self, ref: str | int, session: str = DEFAULT_SESSION, paths: list[str] | None = None
    ) -> tuple[Turn, list[FileDiff]]:
        """One turn, and each file it changed (or only ``paths``) with its diff lines."""
        from .ops.diffs import turn_diffs

        return turn_diffs(self.repo, ref, session, paths)

    def range_diff(
        self,
        start: str | int,
        end: str | int,
        session: str = DEFAULT_SESSION,
        paths: list[str] | None = None,
    ) -> RangeDiff:
        """The net change from the state right after ``start`` to the state right after
        ``end`` (two turns, on one branch or two), file by file with diff lines (or only
        ``paths``)."""
        from .ops.diffs import range_diffs

        return range_diffs(self.repo, start, end, session, paths)

    def worktree_diff(
        self, ref: str | int, session: str = DEFAULT_SESSION, paths: list[str] | None = None
    ) -> tuple[Turn, list[FileDiff]]:
        """From the state right after a turn to the files now, for the paths its session
        ever recorded (or only ``paths``)."""
        from .ops.diffs import worktree_diffs

        return worktree_diffs(self.repo, ref, session, paths)

    def cat(
        self, ref: str | int, path: str, session: str = DEFAULT_SESSION, *, before: bool = False
    ) -> Entry:
        """A file as a turn left it (``before``: as it found it): its bytes (a symlink's
        target), kind and mode, verified against the digest recorded."""
        from .ops.diffs import cat

        return cat(self.repo, ref, session, path, before)

    def pieces(self, key: bytes) -> Iterator[bytes]:
        """A blob's verified bytes in pieces: what :meth:`cat` gives as
        :class:`~snapstore.core.records.Big` (a big file) is read this way, a chunk at a time."""
        with self.repo.read() as v:
            yield from v.pieces(key)

    def operations(self, session: str | None = None) -> list[Operation]:
        """Every rewind, switch and undo (of ``session``, or of the store), newest first."""
        from .ops.history import operations

        return operations(self.repo, session)

    def resolve_operation(self, ref: str) -> str:
        """The id of a rewind, switch or undo from its id or a unique prefix."""
        from .ops.branches import resolve_operation

        with self.repo.read() as v:
            return resolve_operation(v, ref).id

    def sessions(self, homes: Mapping[str, str] | None = None) -> list[SessionInfo]:
        """Every session with its agent, turns, head, open turn and whether it is running,
        the most recently active first; ``homes`` (each agent's home folder, as for
        :meth:`rewind`) lets the agents' own registries of running sessions count too."""
        from .ops.history import sessions

        return sessions(self.repo, homes)

    def changes(self, turn_id: str) -> list[Change]:
        """The changes one turn recorded, in order."""
        with self.repo.read() as v:
            return v.changes(turn_id)

    def status(self, session: str = DEFAULT_SESSION) -> StoreStatus:
        """What the store holds."""
        from .ops.history import status

        return status(self.repo, session)

    def latest_session(self) -> str | None:
        """The session whose newest agent turn is the most recent in the store."""
        from .ops.history import latest_session

        return latest_session(self.repo)

    def session_count(self) -> int:
        with self.repo.read() as v:
            return v.session_count()

    def has_session(self, session: str) -> bool:
        with self.repo.read() as v:
            return v.session(session) is not None

    def events(self) -> list[dict[str, Any]]:
        """The whole audit log, oldest first."""
        with self.repo.read() as v:
            return v.events()

    # -- rewind (snapstore.ops.rewind, snapstore.ops.journal) -----------------------------

    def rewind(
        self,
        target: str | int,
        session: str = DEFAULT_SESSION,
        *,
        mode: Mode = BOTH,
        on_conflict: Policy = SKIP,
        paths: Iterable[str] | None = None,
        dry_run: bool = False,
        force: bool = False,
        homes: Mapping[str, str] | None = None,
        inside: bool = False,
        git: bool = True,
        expect_head: str | None = None,
    ) -> RewindResult:
        """Take back ``target`` and every later turn on the session's branch.

        Unless ``mode`` is ``code``, the agent's conversation goes back too where the
        agent has a conversation module: ``homes`` maps each agent to its home folder
        (``{"claude-code": "~/.claude", "codex": "$CODEX_HOME"}``, expanded), where its
        registry of running sessions is. Without it, the chat stays in the agent
        (``result.conversation["status"]`` is ``unsupported``); when the transcript, or a
        file beside it, cannot be read safely, the chat stays too (``refused``, with the
        reason as ``note``) and the files still go back. Unless ``mode`` is
        ``conversation`` (or ``git`` is false), the repository's HEAD, the refs the turns
        moved and the index go back too (``result.git``).

        ``inside``: the agent asks from inside its open turn (``snapstore mcp``): files
        only (``mode`` code), recorded as changes of that turn, so that a rewind of the
        turn takes them back; refused while another session's shell call runs. The
        repository is not moved under the running agent.
        ``expect_head``: the head a turn number was counted from; when the session's head
        is another once the write lock is held (a rewind or a turn came in between),
        ``HeadMoved`` is raised and nothing changes.
        """
        from .ops.rewind import rewind

        return rewind(
            self.repo,
            target,
            session,
            mode=mode,
            on_conflict=on_conflict,
            paths=paths,
            dry_run=dry_run,
            force=force,
            homes=homes,
            inside=inside,
            git=self._git(git),
            expect_head=expect_head,
        )

    def _git(self, wanted: bool) -> GitScope:
        """The repository's half of an operation: moved unless this store or the call says
        not (``--no-git``)."""
        from .ops.rewind import NO_GIT, Git

        return Git(True, self.git_dir) if self.git and wanted else NO_GIT

    def finish(
        self, session: str = DEFAULT_SESSION, *, on_conflict: Policy = SKIP, dry_run: bool = False
    ) -> RewindResult:
        """Retry the paths the session's last rewind, switch, undo or finish left in conflict
        or failed to write, with ``on_conflict``; the head stays."""
        from .ops.rewind import finish

        return finish(self.repo, session, on_conflict=on_conflict, dry_run=dry_run)

    def switch(
        self,
        target: str | int,
        session: str | None = None,
        *,
        on_conflict: Policy = SKIP,
        dry_run: bool = False,
        force: bool = False,
        git: bool = True,
        expect_head: str | None = None,
    ) -> RewindResult:
        """Make the workspace what it was right after ``target``: back, forward (redo) or on
        another branch of its session. A number needs ``session``; an id does not. The
        repository goes to the target's state too, unless ``git`` is false.
        ``expect_head``: as for :meth:`rewind`."""
        from .ops.rewind import switch

        return switch(
            self.repo,
            target,
            session,
            on_conflict=on_conflict,
            dry_run=dry_run,
            force=force,
            git=self._git(git),
            expect_head=expect_head,
        )

    def undo(
        self,
        rewind_id: str | None = None,
        session: str | None = None,
        *,
        on_conflict: Policy = SKIP,
        dry_run: bool = False,
        homes: Mapping[str, str] | None = None,
        mode: Mode = BOTH,
        inside: bool = False,
        git: bool = True,
    ) -> RewindResult:
        """Take back a rewind or switch: the one given, else the newest of ``session``, else
        the newest in the store. The result names the session it acted on. A conversation
        the rewind changed goes back too (``homes``: as for :meth:`rewind`), unless ``mode``
        is ``code``: the files only; and so do the refs, HEAD and index it moved, unless
        ``git`` is false. ``inside``: from inside the session's open turn, the newest rewind
        made from inside one of its turns (or the one given), recorded as changes of the
        open turn."""
        from .ops.rewind import undo

        return undo(
            self.repo,
            rewind_id,
            session,
            on_conflict=on_conflict,
            dry_run=dry_run,
            homes=homes,
            mode=mode,
            inside=inside,
            git=self._git(git),
        )

    def redo(
        self,
        undo_id: str | None = None,
        session: str | None = None,
        *,
        on_conflict: Policy = SKIP,
        dry_run: bool = False,
        homes: Mapping[str, str] | None = None,
        git: bool = True,
    ) -> RewindResult:
        """Take back an undo (the one given, else the newest of ``session``, else the newest
        in the store) by doing its rewind, switch or finish again, merged with what the files
        hold now; itself undoable. Refused once the session's head moved since the undo."""
        from .ops.rewind import redo

        return redo(
            self.repo,
            undo_id,
            session,
            on_conflict=on_conflict,
            dry_run=dry_run,
            homes=homes,
            git=self._git(git),
        )

    def unfinished_operations(self) -> list[str]:
        """Rewinds or undos that were interrupted before they finished."""
        return self.repo.unfinished()

    def resume(self, run_agents: bool = True) -> list[RewindResult]:
        """Finish every interrupted rewind or undo; without ``run_agents``, leave one whose
        conversation edit runs the agent's own CLI (opencode's import) for a later call, so
        that this one ends in bounded time (a hook's, before it records its event)."""
        from .ops.journal import resume

        return resume(self.repo, run_agents)

    # -- maintenance (snapstore.ops.fsck, snapstore.ops.gc) -------------------------------

    def fsck(self, repair: bool = False) -> FsckReport:
        """Verify every blob and reference; with ``repair``, drop what cannot be recovered."""
        from .ops.fsck import fsck

        return fsck(self.repo, repair)

    def gc(
        self, policy: GcPolicy | None = None, *, dry_run: bool = False, compact: bool = True
    ) -> GcResult:
        """Drop turns the policy does not keep, sweep unneeded blobs, compact the file."""
        from .ops.gc import GcPolicy, gc

        return gc(self.repo, policy or GcPolicy(), dry_run=dry_run, compact=compact)

    # -- remotes (snapstore.remote: push, pull, upkeep) ----------------------------------

    def catalog(self, remote: ObjectStore) -> Catalog:
        """The remote read through its layout, with this store's cache of its indexes."""
        from .core.blobs import digest_hex
        from .remote.format.catalog import Catalog

        return Catalog(
            remote,
            os.path.join(self.store_dir, "remote-cache", digest_hex(remote.url.encode())[:16]),
        )

    def push(self, remote: ObjectStore, sessions: list[str] | None = None) -> SyncResult:
        """Upload ``sessions`` (None: all) and the blobs they need that the remote lacks."""
        from .remote.sync.push import push

        return push(self.repo, self.catalog(remote), sessions)

    def pull(
        self,
        remote: ObjectStore,
        sessions: list[str] | None = None,
        progress: Callable[[str], None] | None = None,
    ) -> SyncResult:
        """Fetch the remote's sessions named ``sessions`` (None: all) and what they need;
        the workspace is not touched."""
        from .remote.sync.pull import pull

        return pull(self.repo, self.catalog(remote), sessions, progress)

    def remote_log(self, remote: ObjectStore) -> list[LogEntry]:
        from .remote.sync.upkeep import remote_log

        return remote_log(self.catalog(remote))

    def remote_fsck(self, remote: ObjectStore) -> RemoteFsck:
        from .remote.sync.upkeep import remote_fsck

        return remote_fsck(self.catalog(remote))

    def remote_gc(
        self, remote: ObjectStore, keep_days: float | None, grace: float | None = None
    ) -> RemoteGc:
        from .remote.sync.upkeep import DEFAULT_GRACE, remote_gc

        return remote_gc(
            self.catalog(remote),
            keep_days,
            grace=DEFAULT_GRACE if grace is None else grace,
            now=self.clock(),
        )


def tracked(
    store: Store,
    paths: str | Callable[..., Iterable[str | os.PathLike[str]]],
    *,
    tool: str | None = None,
    session: str = DEFAULT_SESSION,
) -> Callable[[F], F]:
    """Decorate an agent's tool function so every call is captured.

    ``paths`` names the parameter that holds the path (or a list of paths), or
    is a function given the call's arguments that returns the paths.
    """
    import inspect

    def decorate(fn: F) -> F:
        signature = inspect.signature(fn)
        name = tool or fn.__name__

        def targets(args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
            if callable(paths):
                return list(paths(*args, **kwargs))
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            value = bound.arguments[paths]
            return [value] if isinstance(value, (str, os.PathLike)) else list(value)

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with store.writing(targets(args, kwargs), name, session):
                return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate
