"""Rewinding an agent's conversation with its files: the edit of the agent's own transcript.

A rewind to before turn N also takes the agent's memory back, so that the resumed session has
forgotten turns N and later (docs/design.md, "Conversation"). Each supported agent has a module
here (``claude_code``, ``codex``, ``gemini_cli``, ``qwen_code``, ``copilot``, ``opencode``)
with a model of how the agent loads its transcript (its ``Chat``: the live history, as the
agent's own message ids). The edit is the agent's own rewind record, appended in one write
and flushed, so every old record stays in the file and undo is cutting the appended bytes off
again; an agent without one gets a fork, a new session cut before the turn.

The transcript and every file beside it are untrusted (``files``): read once, line by line,
capped, only as regular files in the agent's folder, each field only with its type
(``jsonl``). What cannot be read safely leaves the chat as it is (status ``refused``) and the
files still go back. Every check, and every read, comes before any change: the agent must
not be running the session (``liveness``; snapstore's own open turn is checked by the
rewind), no compaction may lie after the turn, the transcript's release must be one the
module was tested with, and the live history with the record appended must end just before
the turn's message. The apply only writes what the plan decided. The library never reads
the environment: the caller passes each agent's home folder (``homes``: agent name -> folder,
e.g. ``~/.claude``, ``$CODEX_HOME``); the folder a transcript's own path lies in counts too.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator, Mapping
from types import ModuleType
from typing import Any, Literal, NamedTuple

from ..core.errors import AgentRunning, ConversationRefused, ConversationUnreadable
from . import files
from .jsonl import iso, records
from .liveness import Undecided

__all__ = ["Edit", "apply", "concerns", "from_record", "iso", "plan", "plan_undo", "running"]

#: What a rewind did to the conversation: ``refused`` when a file it must read cannot be read
#: safely or understood (``note`` says why); the chat is then left as it is.
Status = Literal["rewound", "unsupported", "unchanged", "refused"]
#: How the conversation was rewound: a record appended to the transcript, or a fork.
How = Literal["appended", "forked", ""]

#: The agents with a conversation module, by the name their hooks give sessions.
MODULES = {
    "claude-code": "claude_code",
    "codex": "codex",
    "gemini-cli": "gemini_cli",
    "qwen-code": "qwen_code",
    "copilot": "copilot",
    "opencode": "opencode",
}

#: Each other agent's own command to rewind its chat (docs/integrations/).
OWN_REWIND = {
    "gemini-cli": "/rewind in Gemini CLI",
    "qwen-code": "/rewind in Qwen Code",
    "copilot": "/rewind in Copilot CLI",
    "opencode": "/undo in opencode",
    "cursor": "restore a checkpoint in Cursor's chat",
    "windsurf": "revert to a step in Windsurf's Cascade panel",
    "cline": "restore a checkpoint in Cline's task",
    "auggie": "the agent's own history",
}


class Edit(NamedTuple):
    """A planned (or made) edit of one agent's transcript; stored with the operation."""

    agent: str
    status: Status
    how: How = ""
    session_id: str = ""
    resume_command: str = ""
    transcript: str = ""
    offset: int = 0  # the transcript's size before the append (or after the cut); a fork:
    # the length of the source's part it is made from
    data: str = ""  # the appended record(s), whole JSON lines
    cut: bool = False  # an undo: cut ``data`` off at ``offset``
    key: str = ""  # the agent's id of the message rewound to before
    source: str = ""  # a fork: the transcript it was cut from (left as it is)
    note: str = ""  # for people: why the chat stays as it is, and what to do instead
    ident: str = ""  # the file read ("device:inode"): the transcript, or a fork's source
    digest: str = ""  # a fork: the BLAKE3 of its bytes, made again from ``source``
    length: int = 0  # a fork: its size
    old_id: str = ""  # a fork: the id each of its lines has replaced by ``session_id``
    files: tuple[tuple[str, str], ...] = ()  # a fork: its other files (path, text)

    def to_json(self) -> dict[str, Any]:
        """The ``conversation`` object of ``--json`` (docs/cli.md)."""
        keys = ("agent", "status", "how", "session_id", "resume_command", "transcript", "note")
        return {key: getattr(self, key) for key in keys}

    @property
    def end(self) -> int:
        """The transcript's size once the record is appended."""
        return self.offset + len(self.data.encode())


def from_record(value: Mapping[str, Any]) -> Edit | None:
    """The edit an operation record holds (None: the operation had none)."""
    if not value:
        return None
    return Edit(**{**value, "files": tuple(tuple(pair) for pair in value.get("files", ()))})


def concerns(session: str) -> bool:
    """Whether ``session`` is an agent's whose chat :func:`plan` knows of (else it plans
    nothing, and a rewind need not gather what it would ask)."""
    agent = _agent(session)[0]
    return agent in MODULES or agent in OWN_REWIND


def needs_agent(edit: Edit) -> bool:
    """Whether making ``edit`` runs the agent's own CLI (opencode's import), which may take
    minutes: the rest only writes files."""
    return edit.status == "rewound" and hasattr(_module(edit.agent), "apply_edit")


def _agent(session: str) -> tuple[str, str]:
    agent, _, session_id = session.partition("/")
    return agent, session_id


def _module(agent: str) -> ModuleType:
    return __import__(f"{__name__}.{MODULES[agent]}", fromlist=["NAME"])


def _unsupported(agent: str, note: str, session_id: str = "") -> Edit:
    return Edit(agent or "unknown", "unsupported", session_id=session_id, note=note)


def folders(mod: ModuleType, transcript: str | None, home: str) -> list[str]:
    """The agent's folders: the one its transcript's path lies in (by the agent's layout:
    the agent may run with a folder of its own the caller's environment does not name),
    then its home as the caller names it."""
    found = [home]
    layout = getattr(mod, "LAYOUT", None)
    if transcript and layout is not None:
        depth, name = layout
        top = os.path.abspath(transcript)
        for _ in range(depth):
            top = os.path.dirname(top)
        if os.path.basename(top) == name:
            found.insert(0, os.path.dirname(top))
    return list(dict.fromkeys(found))


def plan(
    session: str,
    key: str | None,
    transcript: str | None,
    homes: Mapping[str, str] | None,
    number: str,
    size: int = 0,
    prompt: str = "",
    when: str = "",
) -> Edit | None:
    """The edit that rewinds ``session``'s conversation to before the turn whose agent key is
    ``key`` (the ``number`` the user gave, for the messages); ``size`` is the transcript's
    size at the turn's begin hook, after which the turn's message must be. For agents whose
    hooks carry no key, the turn's message is the first user message after that offset whose
    text is the turn's ``prompt``, stamped at or after ``when`` (the begin hook's own time).

    Raises :class:`AgentRunning` while the agent runs the session (or when that cannot be
    told) and :class:`ConversationRefused` when the edit is unsafe; a file that cannot be read
    safely gives a ``refused`` edit, and an agent without a module, a release outside the
    tested ones or a turn recorded without its transcript an ``unsupported`` one: both change
    nothing. A session no agent's hooks recorded has no conversation: None.
    """
    if not concerns(session):
        return None
    agent, session_id = _agent(session)
    if agent not in MODULES:
        own = OWN_REWIND.get(agent, "the agent's own rewind")
        return _unsupported(agent, f"the chat stays in the agent: rewind it with {own}")
    mod = _module(agent)
    if homes is None or agent not in homes:
        return _unsupported(
            agent, f"the chat stays in the agent: rewind it with {mod.OWN}", session_id
        )
    where = folders(mod, transcript, homes[agent])
    base = Edit(agent, "unchanged", "", session_id, mod.resume_command(session_id), key=key or "")
    try:
        plan_edit = getattr(mod, "plan_edit", None)
        if plan_edit is not None and key:  # a history kept in a database, edited by its CLI
            refuse_running(mod, session_id, where, None)
            return plan_edit(base, homes[agent], number)
        keyless = getattr(mod, "KEYLESS", False)  # its hooks carry no key: prompt and time
        if not transcript or not (key or (keyless and prompt and when)):
            return _unsupported(
                agent,
                f"snapstore did not record where this turn is in {mod.TITLE}'s transcript; "
                f"rewind the chat with {mod.OWN}",
                session_id,
            )
        refuse_running(mod, session_id, where, transcript)
        if not os.path.lexists(transcript):
            return _unsupported(
                agent,
                f"{mod.TITLE}'s transcript {transcript} is gone, so the chat stays as it is",
                session_id,
            )
        with files.open_regular(transcript, where, files.TRANSCRIPT_CAP) as source:
            edit = base._replace(transcript=transcript)
            return _plan(mod, source, edit, where, number, (size, prompt, when))
    except ConversationUnreadable as exc:
        return base._replace(status="refused", transcript=transcript or "", note=str(exc))


def _plan(
    mod: ModuleType,
    source: files.Opened,
    base: Edit,
    where: list[str],
    number: str,
    turn: tuple[int, str, str],
) -> Edit:
    """The edit of one transcript, read once: fed record by record to the agent's model
    (``turn``: the transcript's size at the turn's begin hook, its prompt and time)."""
    chat = mod.Chat(base.key, *turn)
    if hasattr(chat, "opened"):
        chat.opened = source  # to read one record again, rather than keep every one
    for at, record in records(source):
        chat.feed(record, at)
    version = chat.version
    tested = version is not None and mod.TESTED[0] <= version <= mod.TESTED[1]
    untested = (
        ""
        if tested
        else f"{mod.TITLE} {'.'.join(map(str, version or ())) or 'unknown'} is not a release "
        f"snapstore was tested with ({_span(mod.TESTED)})"
    )
    always = getattr(mod, "FORK_ALWAYS", False)
    fork = version is not None and (always or not tested) and hasattr(chat, "fork_cut")
    if untested and not fork:
        return _unsupported(
            mod.NAME, f"{untested}; rewind the chat with {mod.OWN}", base.session_id
        )
    base = base._replace(offset=source.size, key=chat.target or "", ident=source.ident)
    if chat.target is None:
        raise ConversationRefused(
            f"turn {number}'s message is not in {mod.TITLE}'s transcript {source.path} "
            "where its prompt was recorded",
            path=source.path,
        )
    if chat.compacted():
        raise ConversationRefused(
            f"{mod.TITLE} compacted the conversation after turn {number}; "
            "a rewind to before the compaction would bring the whole old history back",
            path=source.path,
        )
    live = chat.live()
    if chat.target not in live:
        return base._replace(note="the conversation already ends before this turn")
    kept = live[: live.index(chat.target)]
    if not kept:
        return _unsupported(
            mod.NAME,
            f"nothing of the conversation comes before turn {number}: start a new "
            f"{mod.TITLE} session rather than resume this one",
            base.session_id,
        )
    if fork:
        return _plan_fork(mod, source, chat, base, kept, where, untested)
    data = ("" if source.ends_with_newline() else "\n") + chat.rewind_record(base.session_id)
    for line in data.splitlines():
        if line:
            chat.feed(json.loads(line), source.size)  # loaded as the agent will load it
    if chat.live() != kept:
        raise _unexpected(mod, source.path)
    return base._replace(status="rewound", how="appended", data=data)


def _plan_fork(
    mod: ModuleType,
    source: files.Opened,
    chat: Any,
    base: Edit,
    kept: list[str],
    where: list[str],
    untested: str,
) -> Edit:
    """A new session cut before the turn (the old one stays as it is): its bytes are made
    once now, streamed, to check that it loads rewound and to take their hash; the apply
    makes them again from the same part of the same file."""
    import uuid  # a fork's alone: not loaded for every rewind

    import blake3

    new_id = str(uuid.uuid4())
    end, old = chat.fork_cut()
    loaded = mod.Chat("", 0, "", "")
    hasher, length = blake3.blake3(), 0
    for line in _fork_lines(mod, source, end, old, new_id):
        hasher.update(line)
        length += len(line)
        loaded.feed(json.loads(line), length)
    if loaded.live() != kept:
        raise _unexpected(mod, source.path)
    path = _fork_path(mod, base.transcript, new_id)
    extra = mod.fork_files(base.transcript, path, where) if hasattr(mod, "fork_files") else ()
    return base._replace(
        status="rewound",
        how="forked",
        session_id=new_id,
        resume_command=mod.resume_command(new_id),
        transcript=path,
        offset=end,
        source=base.transcript,
        digest=hasher.hexdigest(),
        length=length,
        old_id=old,
        files=extra,
        note=f"{untested}: the rewound chat is a new session; the old one is left as it was"
        if untested
        else "",
    )


def _unexpected(mod: ModuleType, path: str) -> ConversationRefused:
    return ConversationRefused(
        f"{mod.TITLE}'s transcript {path} does not load as snapstore expects; left as it is",
        path=path,
    )


def _span(tested: tuple[tuple[int, ...], tuple[int, ...]]) -> str:
    low, high = (".".join(map(str, v)) for v in tested)
    return low if low == high else f"{low} to {high}"


def _fork_lines(
    mod: ModuleType, source: files.Opened, end: int, old: str, new: str
) -> Iterator[bytes]:
    """A fork's bytes, line by line: the source's records before ``end``, each under the new
    session id (made the same way at the plan and at the apply)."""
    for _, record in records(source, 0, end):
        yield mod.fork_line(record, old, new).encode()


def _fork_path(mod: ModuleType, transcript: str, session_id: str) -> str:
    """Where a fork's transcript goes: by the module's ``fork_path``, else next to the old."""
    where = getattr(mod, "fork_path", None)
    if where is not None:
        return where(transcript, session_id)
    return os.path.join(os.path.dirname(transcript), f"{session_id}.jsonl")


def plan_undo(edit: Edit, homes: Mapping[str, str] | None) -> Edit:
    """The cut that takes back ``edit``: its bytes, while the agent has not written since."""
    mod = _module(edit.agent)
    if homes is None or edit.agent not in homes:
        return edit._replace(
            status="unchanged",
            note=f"the chat stays as the rewind left it: rewind it with {mod.OWN}",
        )
    refuse_running(
        mod, edit.session_id, folders(mod, edit.transcript, homes[edit.agent]), None, undo=True
    )
    if not getattr(mod, "holds", _holds)(edit):
        raise ConversationRefused(
            f"{mod.TITLE} wrote to the conversation since the rewind; the undo would lose "
            f"that, so it leaves the files and the chat as they are ({edit.transcript})",
            path=edit.transcript,
        )
    return edit._replace(cut=True, note="")


def running(session: str, homes: Mapping[str, str] | None) -> str:
    """Which live process of the agent runs ``session``, by the agent's own registry of running
    sessions ("" for none, or for an agent without a module or a home here); a sign that
    cannot be read, or a process that cannot be looked at, counts (the reason is given)."""
    agent, session_id = _agent(session)
    if homes is None or agent not in MODULES or agent not in homes:
        return ""
    mod = _module(agent)
    try:
        return str(mod.running(session_id, [homes[agent]], None))
    except (ConversationUnreadable, Undecided) as exc:
        return f"cannot tell: {exc}"


def refuse_running(
    mod: ModuleType, session_id: str, where: list[str], transcript: str | None, undo: bool = False
) -> None:
    """Raise :class:`AgentRunning` when the agent's registry names a live process on the
    session, or when whether it does cannot be told (a rewind can still take the files alone
    back; an undo cannot)."""
    other = "" if undo else ", or use --mode code to rewind the files only"
    try:
        who = mod.running(session_id, where, transcript)
    except Undecided as exc:
        raise AgentRunning(
            f"cannot tell whether {mod.TITLE} is running session {session_id} ({exc}); "
            f"exit {mod.COMMAND} if it runs{other}",
            agent=mod.NAME,
            session=session_id,
        ) from None
    if who:
        raise AgentRunning(
            f"{mod.TITLE} is running session {session_id} ({who}); exit {mod.COMMAND} first"
            + other,
            agent=mod.NAME,
            session=session_id,
        )


def apply(edit: Edit) -> None:
    """Make a planned edit; after a crash, call again. It only writes what the plan decided,
    to the files the plan read (the same inode, the size it saw), never waiting on one.

    An append whose bytes are already there is done; a cut whose bytes are gone is done.
    The transcript must still be what the plan saw, else nothing is written. A fork is made
    again from its source's part the plan read, and written only when it hashes as planned.
    """
    mod = _module(edit.agent)
    own = getattr(mod, "apply_edit", None)
    if own is not None:  # the agent's own CLI writes it, and verifies it
        own(edit)
    elif edit.how == "forked":
        _fork(mod, edit)
    else:
        _edit(edit)


def _edit(edit: Edit) -> None:
    """Append or cut the edit's bytes, once: one write (or truncate), then one flush."""
    data = edit.data.encode()
    with files.Appending(edit.transcript, edit.ident) as transcript:
        appended = transcript.ends_with(data, edit.offset)
        if edit.cut:
            if transcript.size == edit.offset:
                return
            if not appended:
                raise ConversationRefused(
                    f"{edit.transcript} changed since the rewind; left as it is",
                    path=edit.transcript,
                )
            transcript.cut(edit.offset)
        elif not appended:
            if transcript.size != edit.offset:
                raise ConversationRefused(
                    f"{edit.transcript} changed while the rewind ran; left as it is",
                    path=edit.transcript,
                )
            transcript.append(data)


def _fork(mod: ModuleType, edit: Edit) -> None:
    """Write a fork's transcript whole (a temp file renamed into place), or for a cut, remove
    it; either at most once, and only while it holds exactly what snapstore wrote. A fork in
    a folder of its own (Copilot CLI) has other files: written before the transcript,
    removed before it, so the transcript says whether the fork is there."""
    held = _holds(edit) if os.path.lexists(edit.transcript) else None
    if held is False:
        raise ConversationRefused(
            f"{edit.transcript} changed since the rewind; left as it is", path=edit.transcript
        )
    folder = os.path.dirname(edit.transcript)
    own = getattr(mod, "FORK_FILES", ())  # a fork in a folder of its own, with these files
    extras = [os.path.join(folder, name) for name in own]
    if edit.cut:
        for path in [*extras, edit.transcript]:
            files.remove(path)
        if own:
            with contextlib.suppress(OSError):  # the agent put something else there: it stays
                os.rmdir(folder)
            folder = os.path.dirname(folder)
    elif held:
        return  # already written
    else:
        written = edit.files
        if own and not edit.digest:  # recorded by an earlier release, which read them now
            written = mod.fork_files(edit.source, edit.transcript, [_above(edit.source)])
        os.makedirs(folder, mode=0o700, exist_ok=True)
        try:
            for path, text in written:
                files.write_whole(path, [text.encode()])
            files.write_whole(edit.transcript, _fork_bytes(mod, edit))
        except BaseException:  # a refusal: nothing of the fork stays (a kill -9 is resumed)
            for path in extras:
                files.remove(path)
            if own:
                with contextlib.suppress(OSError):
                    os.rmdir(folder)
            raise
    files.flush_folder(folder)


def _above(path: str) -> str:
    return os.path.dirname(os.path.dirname(path))


def _fork_bytes(mod: ModuleType, edit: Edit) -> Iterator[bytes]:
    """A fork's bytes as the plan made them (from its source's part, checked by hash), or as
    an earlier release recorded them whole (``data``)."""
    if not edit.digest:
        yield edit.data.encode()
        return
    import blake3  # a fork's alone

    hasher = blake3.blake3()
    with files.reopen(edit.source, edit.ident) as source:
        for line in _fork_lines(mod, source, edit.offset, edit.old_id, edit.session_id):
            hasher.update(line)
            yield line
    if hasher.hexdigest() != edit.digest:
        raise ConversationRefused(
            f"{edit.source} changed since the rewind was planned; the fork is not written",
            path=edit.source,
        )


def _holds(edit: Edit) -> bool:
    """Whether the transcript still ends with the edit's appended bytes and nothing after, or
    for a fork, holds exactly what snapstore wrote."""
    try:
        opened = files.reopen(edit.transcript, "" if edit.how == "forked" else edit.ident)
    except ConversationUnreadable:
        return False
    with opened:
        if edit.how != "forked":
            return (
                opened.size == edit.end
                and opened.read(edit.end - edit.offset, edit.offset) == edit.data.encode()
            )
        if not edit.digest:
            return (
                opened.size == len(edit.data.encode())
                and opened.read(opened.size, 0) == edit.data.encode()
            )
        if opened.size != edit.length:
            return False
        import blake3

        hasher = blake3.blake3()
        at = 0
        while at < opened.size:
            chunk = opened.read(files.CHUNK, at)
            if not chunk:
                break
            hasher.update(chunk)
            at += len(chunk)
        return hasher.hexdigest() == edit.digest
