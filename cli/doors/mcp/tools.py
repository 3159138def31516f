"""The five tools of ``snapstore mcp``, as plain functions of their checked arguments: each
opens the store, tells which session calls (``caller``), asks the operation layer, and words the
answer for a model, cut to size.

Every argument comes from a model that may have read hostile text (a prompt injection in a
file it opened), so each is checked here before anything is read: turns are numbers or ids of
the caller's own session, paths are relative to the workspace and confined to it, sizes are
bounded, and every reply is cut to :data:`MAX_REPLY` characters. A failure is a tool error
whose text says what to do, never a traceback. docs/integrations/mcp.md has the threat model.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from snapstore import SnapstoreError
from snapstore.core.errors import BadInput, NoStore, RunActive, UnknownTurn
from snapstore.core.records import CODE, Policy

from ...operations.context import Context
from ...operations.moves import run
from ...operations.outcome import Outcome
from ...operations.reads import Cut, file_at, inside_words, own_turn, turn_diff
from ...operations.requests import Move
from ...output.plain import iso, printable
from ...settings.environment import Environment, agent_homes
from .caller import Identity, Unidentified

if TYPE_CHECKING:
    from snapstore import Store

#: No reply is longer than this many characters, whatever was asked.
MAX_REPLY = 60_000
#: What show_turn and file_at give by default, and the most they may be asked for.
DEFAULT_CHARS, MAX_CHARS = 20_000, 50_000
#: The most turns list_turns lists, and the most paths one call may name.
MAX_TURNS, MAX_PATHS = 100, 64
#: A turn as a model may name it: a number from list_turns, or an id (or a prefix of one).
TURN = re.compile(r"[0-9a-z]{1,64}")
#: Files listed per turn by list_turns before "and N more".
FILES_SHOWN = 12


class ToolFailure(Exception):
    """A call that did nothing, with the sentence the model is given (a tool error)."""


def _turn(value: str) -> str:
    text = value.strip()
    if not TURN.fullmatch(text):
        raise ToolFailure(
            f"{printable(value[:80])} is not a turn: give a number from list_turns (1 is the "
            "newest) or a turn id"
        )
    return text


class Tools:
    """The tools, over one workspace's store; calls are served one at a time (the store is
    opened once per call, so a store made after the server started is found)."""

    def __init__(
        self,
        env: Environment,
        start: str,
        identity: Identity,
        read_only: bool = False,
        root: str | None = None,
    ):
        self.env = env  # the store's settings from the server's environment, read once
        self.start = start  # where the workspace is looked for: the agent's folder
        self.root = root  # the workspace, when --root named it
        self.identity = identity
        self.read_only = read_only
        self.homes = agent_homes()
        self.ctx = Context(env, root, self.homes)
        self._lock = threading.Lock()

    # -- the frame of every call -----------------------------------------------------------

    def call(self, meta: Mapping[str, Any] | None, work: Any) -> str:
        """Run ``work(store, session)`` for the caller; its text, or a ToolFailure."""
        with self._lock:
            try:
                root = self.root or self.env.find_root(self.start)
                self.ctx = Context(self.env, root, self.homes)
                store = self.ctx.open()
            except NoStore:
                raise ToolFailure(
                    "there is no snapstore store for this workspace, so there is nothing to "
                    "list or take back (the user can start one with `snapstore init`)"
                ) from None
            except SnapstoreError as exc:
                raise ToolFailure(f"the store could not be opened: {exc}") from None
            with store:
                try:
                    session = self._session(store, meta)
                    text: str = work(store, session)
                except Unidentified as exc:
                    raise ToolFailure(str(exc)) from None
                except ToolFailure:
                    raise
                except SnapstoreError as exc:
                    raise ToolFailure(self._explain(exc)) from None
        if len(text) > MAX_REPLY:
            text = text[:MAX_REPLY] + f"\n[cut: the reply is capped at {MAX_REPLY} characters]"
        return text

    def _session(self, store: Store, meta: Mapping[str, Any] | None) -> str:
        with store.repo.read() as v:
            known = {record.name for record in v.sessions()}
            open_turns = {name for name in known if v.open_turn(name) is not None}
        return self.identity.caller(store.store_dir, meta, known, open_turns).session

    @staticmethod
    def _explain(exc: SnapstoreError) -> str:
        if isinstance(exc, UnknownTurn):
            return f"{exc}: call list_turns to see this session's turns and their ids"
        if isinstance(exc, RunActive):
            return f"{exc}; nothing was changed"
        return str(exc)

    def _paths(self, store: Store, paths: list[str] | None) -> list[str] | None:
        """The workspace paths asked for (relative to the workspace root), each confined to
        it; None for none."""
        if not paths:
            return None
        if len(paths) > MAX_PATHS:
            raise ToolFailure(f"at most {MAX_PATHS} paths a call ({len(paths)} given)")
        found = []
        for path in paths:
            if not path or "\0" in path or len(path) > 1024:
                raise ToolFailure(f"{printable(path[:80])} is not a path")
            try:
                found.append(store.ws.relpath(os.path.join(store.root, path)))
            except BadInput as exc:
                raise ToolFailure(f"{exc}; paths are relative to the workspace root") from None
        return found

    # -- reading -----------------------------------------------------------------------------

    def list_turns(self, meta: Mapping[str, Any] | None, limit: int = 20) -> str:
        def work(store: Store, session: str) -> str:
            every = store.rewind_points(session)
            points = every[: max(1, min(limit, MAX_TURNS))]
            total = len(every)
            lines = [
                f"Session {printable(session)}: {total} turn(s) on its current branch, newest "
                "first (1 is the newest; a turn still open is the one in progress)."
            ]
            for p in points:
                state = "in progress" if p.turn.state == "open" else p.turn.state
                prompt = (
                    printable(p.turn.prompt.strip().splitlines()[0][:200], quote=False)
                    if (p.turn.prompt.strip())
                    else "(no prompt)"
                )
                lines.append(f"{p.n}. turn {p.turn.id}, {iso(p.turn.created)}, {state}: {prompt}")
                if p.files:
                    shown = ", ".join(
                        f"{printable(f.path)} ({f.status}"
                        + ("" if f.binary else f", +{f.added}/-{f.removed}")
                        + ")"
                        for f in p.files[:FILES_SHOWN]
                    )
                    more = len(p.files) - FILES_SHOWN
                    lines.append(
                        f"   {len(p.files)} file(s), +{p.added}/-{p.removed}: {shown}"
                        + (f", and {more} more" if more > 0 else "")
                    )
                else:
                    lines.append("   no files changed")
                for move in p.inside:
                    lines.append(f"   this turn {inside_words(move)}")
            if total > len(points):
                lines.append(f"({total - len(points)} older turn(s) not listed)")
            return "\n".join(lines)

        return self.call(meta, work)

    def show_turn(
        self,
        meta: Mapping[str, Any] | None,
        turn: str,
        paths: list[str] | None = None,
        max_chars: int = DEFAULT_CHARS,
    ) -> str:
        spec = turn.strip()
        start, dots, end = spec.partition("..")
        spec = f"{_turn(start)}..{_turn(end)}" if dots else _turn(spec)

        def work(store: Store, session: str) -> str:
            found = turn_diff(store, session, spec, self._paths(store, paths), _chars(max_chars))
            if dots:
                head = (
                    f"The net change from right after turn {start.strip()} to right after "
                    f"turn {end.strip()}: {len(found.files)} file(s)."
                )
            else:
                t = found.turns[0]
                head = f"Turn {t.id} ({iso(t.created)}): {len(found.files)} file(s)."
            return _with_cut(head, found.text, "ask for fewer paths, or one turn of the range")

        return self.call(meta, work)

    def file_at(
        self,
        meta: Mapping[str, Any] | None,
        turn: str,
        path: str,
        before: bool = False,
        max_chars: int = DEFAULT_CHARS,
    ) -> str:
        ref = _turn(turn)

        def work(store: Store, session: str) -> str:
            [rel] = self._paths(store, [path]) or [""]
            found = file_at(store, session, ref, rel, before, _chars(max_chars))
            how = "found it (before its changes)" if before else "left it"
            head = (
                f"{printable(rel)} as turn {found.turn.id} {how}: {found.kind}, "
                f"{found.size} bytes, mode {found.mode:o}."
            )
            if found.text is None:
                return head + " It is binary (or over 4 MiB), so its bytes are not shown."
            if found.kind == "link":
                return head + f" A symlink to: {printable(found.text.text)}"
            return _with_cut(head, found.text, "ask for a larger max_chars, at most 50000")

        return self.call(meta, work)

    # -- moving --------------------------------------------------------------------------------

    def rewind_files(
        self,
        meta: Mapping[str, Any] | None,
        turn: str,
        paths: list[str] | None = None,
        on_conflict: Policy = "skip",
        dry_run: bool = False,
    ) -> str:
        ref = _turn(turn)
        if on_conflict not in ("skip", "markers"):
            raise ToolFailure("on_conflict is skip or markers")

        def work(store: Store, session: str) -> str:
            target = own_turn(store, session, ref)
            rels = self._paths(store, paths)
            wanted = tuple(os.path.join(store.root, r) for r in rels or ())
            move = Move(
                "rewind",
                target.id,
                session,
                CODE,
                on_conflict,
                wanted,
                dry_run=dry_run,
                inside=True,
            )
            return rewound(run(store, self.ctx, move), store)

        return self.call(meta, work)

    def undo_last(self, meta: Mapping[str, Any] | None, dry_run: bool = False) -> str:
        def work(store: Store, session: str) -> str:
            move = Move("undo", None, session, CODE, dry_run=dry_run, inside=True)
            return rewound(run(store, self.ctx, move), store)

        return self.call(meta, work)


def _chars(asked: int) -> int:
    return max(1000, min(int(asked), MAX_CHARS))


def _with_cut(head: str, text: Cut, how: str) -> str:
    if not text.text:
        return head + "\n(nothing to show)"
    body = f"{head}\n\n{text.text}"
    if text.left_out:
        body += (
            f"\n[cut: {text.left_out} more character(s) not shown; {how}]"
            if body.endswith("\n")
            else f"\n[cut here: {text.left_out} more character(s) not shown; {how}]"
        )
    return body


def _names(items: list[Any]) -> str:
    return ", ".join(printable(i if isinstance(i, str) else i["path"]) for i in items)


def rewound(outcome: Outcome, store: Store) -> str:
    """A rewind's or an undo's outcome, worded for the model that asked for it."""
    data = outcome.to_json()
    move = outcome.move
    verb = "Would take back" if move.dry_run else "Took back"
    if move.action == "undo":
        lines = [
            f"{verb} your rewind {data['target']}: the files it changed are as they were "
            "before it, except where they changed since."
        ]
    else:
        turns = data["turns_reverted"]
        lines = [
            f"{verb} the file changes of {len(turns)} turn(s), from turn {data['target']} on "
            "(files only): the files are as they were before that turn, except edits made "
            "since by someone else, which a merge keeps."
        ]
        prompt = data["user_text"].strip().splitlines()
        if prompt:
            lines.append(f"That turn's prompt: {printable(prompt[0][:200], quote=False)}")
    for key, label in (
        ("restored", "Restored exactly"),
        ("merged", "Merged (later edits by others kept)"),
        ("deleted", "Deleted (they did not exist then)"),
    ):
        if data[key]:
            lines.append(f"{label}: {_names(data[key])}.")
    for item in data["conflicts"]:
        lines.append(
            f"Left as it is (conflict): {printable(item['path'])}: "
            f"{printable(item['reason'], quote=False)}."
        )
    failed = [e for e in data["errors"] if e["kind"] == "failed"]
    for item in failed:
        lines.append(
            f"Not written: {printable(item['path'])}: {printable(item['reason'], quote=False)}."
        )
    for item in data["warnings"]:
        lines.append(f"Note: {printable(item['path'])}: {printable(item['reason'], quote=False)}.")
    if not any(data[k] for k in ("restored", "merged", "deleted", "conflicts")) and not failed:
        lines.append("Nothing needed changing: the files already were that way.")
    if move.dry_run:
        lines.append("This was a dry run: nothing was written.")
        return "\n".join(lines)
    lines.append(
        "This is recorded as part of your current turn: call undo_last to take it back now, "
        "or the user can rewind this turn with `snapstore rewind 1` after you exit."
    )
    if move.action == "rewind":
        lines.append(
            "Your conversation is not changed: what you said and did in those turns is still "
            "in your context, but their edits are gone from the files. To take the "
            "conversation back too, the user can run `snapstore rewind` after you exit."
        )
    for note in outcome.notes:
        lines.append(f"Note: {printable(note, quote=False)}.")
    return "\n".join(lines)
