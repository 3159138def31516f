"""Rewinding an agent's conversation with its files: the edit of the agent's own transcript.

A rewind to before turn N also takes the agent's memory back, so that the resumed session has
forgotten turns N and later (docs/design.md, "Conversation"). Each supported agent has a module
here (``claude_code``, ``codex``, ``gemini_cli``, ``qwen_code``) with a model of how the agent
loads its transcript: its live history, as a list of the agents' own turn keys. The edit is
always the agent's own rewind record, appended in one write and flushed, so every old record
stays in the file and undo is cutting the appended bytes off again.

Every check comes before any change: the agent must not be running the session (snapstore's
own open turn is checked by the rewind; here, the agent's registry of live sessions), no
compaction may lie after the turn, the transcript's release must be one the module was tested
with, and the live history with the record appended must end just before the turn's prompt.
The library never reads the environment: the caller passes each agent's home folder
(``homes``: agent name -> folder, e.g. ``~/.claude``, ``$CODEX_HOME``).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping
from types import ModuleType
from typing import Any, Literal, NamedTuple

from ..core.errors import AgentRunning, ConversationRefused

#: What a rewind did to the conversation.
Status = Literal["rewound", "unsupported", "unchanged"]
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
    offset: int = 0  # the transcript's size before the append (or after the cut)
    data: str = ""  # the appended record(s), whole JSON lines
    cut: bool = False  # an undo: cut ``data`` off at ``offset``
    key: str = ""  # the agent's key of the turn rewound to before
    source: str = ""  # a fork: the transcript it was cut from (left as it is)
    note: str = ""  # for people: why the chat stays as it is, and what to do instead

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
    return Edit(**value) if value else None


def concerns(session: str) -> bool:
    """Whether ``session`` is an agent's whose chat :func:`plan` knows of (else it plans
    nothing, and a rewind need not gather what it would ask)."""
    agent = _agent(session)[0]
    return agent in MODULES or agent in OWN_REWIND


def _agent(session: str) -> tuple[str, str]:
    agent, _, session_id = session.partition("/")
    return agent, session_id


def _module(agent: str) -> ModuleType:
    return __import__(f"{__name__}.{MODULES[agent]}", fromlist=["NAME"])


def _unsupported(agent: str, note: str, session_id: str = "") -> Edit:
    return Edit(agent or "unknown", "unsupported", session_id=session_id, note=note)


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
    hooks carry no key, the key is the first user message after that offset whose text is
    the turn's ``prompt``, stamped at or after ``when`` (the begin hook's own time).

    Raises :class:`AgentRunning` while the agent runs the session and
    :class:`ConversationRefused` when the edit is unsafe; an agent without a module, a
    release outside the tested ones or a turn recorded without its transcript gives an
    ``unsupported`` edit, which changes nothing. A session no agent's hooks recorded has no
    conversation: None.
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
    plan_edit = getattr(mod, "plan_edit", None)
    if plan_edit is not None and key:  # a history kept in a database, edited by its CLI
        refuse_running(mod, session_id, homes[agent])
        base = Edit(agent, "unchanged", "", session_id, mod.resume_command(session_id), key=key)
        return plan_edit(base, homes[agent], number)
    locate = getattr(mod, "locate", None)
    if not transcript or not (key or (locate is not None and prompt and when)):
        return _unsupported(
            agent,
            f"snapstore did not record where this turn is in {mod.TITLE}'s transcript; "
            f"rewind the chat with {mod.OWN}",
            session_id,
        )
    refuse_running(mod, session_id, homes[agent])
    if not os.path.lexists(transcript):
        return _unsupported(
            agent,
            f"{mod.TITLE}'s transcript {transcript} is gone, so the chat stays as it is",
            session_id,
        )
    raw = _read(transcript)
    records = parse(raw)
    version = mod.version(records)
    tested = version is not None and mod.TESTED[0] <= version <= mod.TESTED[1]
    untested = (
        ""
        if tested
        else f"{mod.TITLE} {'.'.join(map(str, version or ())) or 'unknown'} is not a release "
        f"snapstore was tested with ({_span(mod.TESTED)})"
    )
    always = getattr(mod, "FORK_ALWAYS", False)
    fork = getattr(mod, "fork", None) if version is not None and (always or not tested) else None
    if untested and fork is None:
        return _unsupported(agent, f"{untested}; rewind the chat with {mod.OWN}", session_id)
    if not key:  # the agent's hooks carry none: its message found by prompt and time
        key = (locate(parse(raw[size:]), prompt, when) if locate is not None else None) or ""
    base = Edit(
        agent,
        "unchanged",
        "",
        session_id,
        mod.resume_command(session_id),
        transcript,
        len(raw),
        key=key,
    )
    if not key or not mod.mentions(parse(raw[size:]), key):
        raise ConversationRefused(
            f"turn {number}'s message is not in {mod.TITLE}'s transcript {transcript} "
            "where its prompt was recorded",
            path=transcript,
        )
    if mod.compacted_after(records, key):
        raise ConversationRefused(
            f"{mod.TITLE} compacted the conversation after turn {number}; "
            "a rewind to before the compaction would bring the whole old history back",
            path=transcript,
        )
    live = mod.live(records)
    if key not in live:
        return base._replace(note="the conversation already ends before this turn")
    kept = live[: live.index(key)]
    if not kept:
        return _unsupported(
            agent,
            f"nothing of the conversation comes before turn {number}: start a new "
            f"{mod.TITLE} session rather than resume this one",
            session_id,
        )
    if fork is not None:  # a new session cut before the turn; the old one stays as it is
        import uuid  # a fork's alone: not loaded for every rewind

        new_id = str(uuid.uuid4())
        edit = base._replace(
            status="rewound",
            how="forked",
            session_id=new_id,
            resume_command=mod.resume_command(new_id),
            transcript=_fork_path(mod, transcript, new_id),
            offset=0,
            data=fork(records, key, new_id),
            source=transcript,
            note=f"{untested}: the rewound chat is a new session; the old one is left as it was"
            if untested
            else "",
        )
        after = edit.data.encode()
    else:
        lead = "" if not raw or raw.endswith(b"\n") else "\n"
        data = lead + mod.rewind_record(records, key, session_id)
        edit = base._replace(status="rewound", how="appended", data=data)
        after = raw + data.encode()
    if not _loads_rewound(mod, edit, raw, after):
        raise ConversationRefused(
            f"{mod.TITLE}'s transcript {transcript} does not load as snapstore expects; "
            "left as it is",
            path=transcript,
        )
    return edit


def _fork_path(mod: ModuleType, transcript: str, session_id: str) -> str:
    """Where a fork's transcript goes: by the module's ``fork_path``, else next to the old."""
    where = getattr(mod, "fork_path", None)
    if where is not None:
        return where(transcript, session_id)
    return os.path.join(os.path.dirname(transcript), f"{session_id}.jsonl")


def _loads_rewound(mod: ModuleType, edit: Edit, before: bytes, after: bytes) -> bool:
    """Whether the transcript ``after`` the edit, loaded as the agent loads it, holds the
    live history of the transcript ``before`` it up to just before the edit's turn."""
    then = mod.live(parse(before[: edit.offset] if edit.how == "appended" else before))
    return edit.key in then and mod.live(parse(after)) == then[: then.index(edit.key)]


def plan_undo(edit: Edit, homes: Mapping[str, str] | None) -> Edit:
    """The cut that takes back ``edit``: its bytes, while the agent has not written since."""
    mod = _module(edit.agent)
    if homes is None or edit.agent not in homes:
        return edit._replace(
            status="unchanged",
            note=f"the chat stays as the rewind left it: rewind it with {mod.OWN}",
        )
    refuse_running(mod, edit.session_id, homes[edit.agent], undo=True)
    if not getattr(mod, "holds", holds_append)(edit):
        raise ConversationRefused(
            f"{mod.TITLE} wrote to the conversation since the rewind; the undo would lose "
            f"that, so it leaves the files and the chat as they are ({edit.transcript})",
            path=edit.transcript,
        )
    return edit._replace(cut=True, note="")


def running(session: str, homes: Mapping[str, str] | None) -> str:
    """Which live process of the agent runs ``session``, by the agent's own registry of running
    sessions ("" for none, or for an agent without a module or a home here)."""
    agent, session_id = _agent(session)
    if homes is None or agent not in MODULES or agent not in homes:
        return ""
    return str(_module(agent).running(session_id, homes[agent]))


def refuse_running(mod: ModuleType, session_id: str, home: str, undo: bool = False) -> None:
    """Raise :class:`AgentRunning` when the agent's registry names a live process on the
    session (a rewind can still take the files alone back; an undo cannot)."""
    who = mod.running(session_id, home)
    if who:
        other = "" if undo else ", or use --mode code to rewind the files only"
        raise AgentRunning(
            f"{mod.TITLE} is running session {session_id} ({who}); exit {mod.COMMAND} first"
            + other,
            agent=mod.NAME,
            session=session_id,
        )


def apply(edit: Edit) -> None:
    """Make a planned edit, as one write then one flush; after a crash, call again.

    An append whose bytes are already there is done; a cut whose bytes are gone is done.
    The transcript must still be what the plan saw, else nothing is written. An append is
    verified by loading the transcript as the agent does; when it does not load rewound,
    the appended bytes are cut off again and the edit is refused.
    """
    mod = _module(edit.agent)
    own = getattr(mod, "apply_edit", None)
    if own is not None:  # the agent's own CLI writes it, and verifies it
        own(edit)
        return
    if edit.how == "forked":
        _fork(edit)
    else:
        _edit(edit)
    if edit.cut:
        return
    after = _read(edit.transcript)
    before = _read(edit.source) if edit.how == "forked" else after
    if not _loads_rewound(mod, edit, before, after):
        (_fork if edit.how == "forked" else _edit)(edit._replace(cut=True))
        raise ConversationRefused(
            f"{mod.TITLE}'s transcript {edit.transcript} did not load rewound; "
            "the record was taken out again",
            path=edit.transcript,
        )


def _edit(edit: Edit) -> None:
    """Append or cut the edit's bytes, once: one write (or truncate), then one flush."""
    fd = os.open(edit.transcript, os.O_RDWR | os.O_APPEND)
    try:
        size = os.fstat(fd).st_size
        appended = size == edit.end and _tail(fd, edit) == edit.data.encode()
        if edit.cut:
            if size == edit.offset:
                return
            if not appended:
                raise ConversationRefused(
                    f"{edit.transcript} changed since the rewind; left as it is",
                    path=edit.transcript,
                )
            os.ftruncate(fd, edit.offset)
        else:
            if appended:
                return
            if size != edit.offset:
                raise ConversationRefused(
                    f"{edit.transcript} changed while the rewind ran; left as it is",
                    path=edit.transcript,
                )
            os.write(fd, edit.data.encode())
        os.fsync(fd)
    finally:
        os.close(fd)


def _fork(edit: Edit) -> None:
    """Write a fork's transcript whole (a temp file renamed into place), or for a cut, remove
    it; either at most once, and only while it holds exactly what snapstore wrote."""
    exists = os.path.lexists(edit.transcript)
    if edit.cut and not exists:
        return  # already removed
    if exists and holds_append(edit):
        if not edit.cut:
            return  # already written
    elif exists:
        raise ConversationRefused(
            f"{edit.transcript} changed since the rewind; left as it is", path=edit.transcript
        )
    folder = os.path.dirname(edit.transcript)
    # a fork in a folder of its own (Copilot CLI) has other files: written before the
    # transcript, removed before it, so the transcript says whether the fork is there
    extras = getattr(_module(edit.agent), "fork_files", None)
    files = extras(edit.source, edit.transcript) if extras is not None else {}
    if edit.cut:
        for path in files:
            if os.path.lexists(path):
                os.unlink(path)
        os.unlink(edit.transcript)
        if extras is not None:
            with contextlib.suppress(OSError):  # the agent put something else there: it stays
                os.rmdir(folder)
            folder = os.path.dirname(folder)
    else:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        for path, data in [*files.items(), (edit.transcript, edit.data.encode())]:
            _write_whole(path, data)
    dir_fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def _write_whole(path: str, data: bytes) -> None:
    """Write a file whole: a temp file, flushed, renamed into place."""
    temp = os.path.join(os.path.dirname(path), f".{os.urandom(16).hex()}.snapstore-fork")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.rename(temp, path)


def holds_append(edit: Edit) -> bool:
    """Whether the transcript still ends with the edit's appended bytes, and nothing after."""
    try:
        fd = os.open(edit.transcript, os.O_RDONLY)
    except OSError:
        return False
    try:
        return os.fstat(fd).st_size == edit.end and _tail(fd, edit) == edit.data.encode()
    finally:
        os.close(fd)


def _tail(fd: int, edit: Edit) -> bytes:
    return os.pread(fd, edit.end - edit.offset, edit.offset)


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as exc:
        raise ConversationRefused(
            f"cannot read the agent's transcript {path}: {exc.strerror}", path=path
        ) from None


def parse(raw: bytes) -> list[dict[str, Any]]:
    """A JSONL transcript's records; a line that is no JSON object (a write cut short) is
    skipped, as the agents' own loaders skip it."""
    records = []
    for line in raw.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            records.append(record)
    return records


def release(text: Any) -> tuple[int, ...] | None:
    """A version string such as ``2.1.332`` as numbers (None when it is none)."""
    if not isinstance(text, str):
        return None
    try:
        return tuple(int(part) for part in text.split("-")[0].split("."))
    except ValueError:
        return None


def _span(tested: tuple[tuple[int, ...], tuple[int, ...]]) -> str:
    low, high = (".".join(map(str, v)) for v in tested)
    return low if low == high else f"{low} to {high}"


def branch(by_uuid: Mapping[str, dict[str, Any]], leaf: Any) -> list[dict[str, Any]]:
    """The records from ``leaf`` back along their ``parentUuid``, oldest first (Claude Code
    and Qwen Code link a transcript's messages so); a cycle, or a missing parent, ends it."""
    chain, seen = [], set()
    while leaf in by_uuid and leaf not in seen:
        seen.add(leaf)
        chain.append(by_uuid[leaf])
        leaf = by_uuid[leaf].get("parentUuid")
    return chain[::-1]


def instant(text: Any) -> float | None:
    """An ISO 8601 time such as ``2026-12-01T16:16:11.655Z`` as seconds (None: none)."""
    if not isinstance(text, str):
        return None
    from datetime import datetime  # (uuid and datetime cost a rewind a few ms to load)

    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def iso(seconds: float) -> str:
    """``seconds`` since the epoch as the ISO 8601 time :func:`instant` reads: a turn's own
    time, for an agent whose begin hook stamped none."""
    from datetime import datetime, timezone

    return datetime.fromtimestamp(seconds, timezone.utc).isoformat()


def newest_release(records: list[dict[str, Any]]) -> tuple[int, ...] | None:
    """The newest release named by a record's ``version`` (Claude Code and Qwen Code stamp
    each record with the release that wrote it)."""
    for record in reversed(records):
        found = release(record.get("version"))
        if found is not None:
            return found
    return None


def registered(folder: str, session_id: str) -> str:
    """Which live process a registry of running sessions names on the session: a folder of
    ``<pid>….json`` entries ``{"pid", "sessionId"}`` (Claude Code, Qwen Code); "" for none.
    An entry outlives a killed process: only a pid that is alive counts."""
    try:
        names = os.listdir(folder)
    except OSError:
        return ""
    for name in names:
        if not name.endswith(".json"):
            continue
        try:
            with open(os.path.join(folder, name), "rb") as f:
                entry = json.loads(f.read())
        except (OSError, ValueError):
            continue
        live = isinstance(entry, dict) and pid_alive(entry.get("pid"))
        if live and entry.get("sessionId") == session_id:
            return f"pid {entry['pid']}"
    return ""


def pid_alive(pid: Any) -> bool:
    """Whether a process with this id runs (a signal that outlives its agent counts only
    while the process it names is alive)."""
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
