"""opencode's sessions: rows of its SQLite database, read and written through its own CLI.

opencode keeps sessions in ``opencode.db`` (with event and sync tables beside the messages),
so snapstore never edits the database: it forks through opencode's own ``export`` and
``import``. The fork is the session's export cut before the turn's user message, under a new
session id, with new message and part ids (``import`` skips ids that exist; the 12 hex of
each id's time part are kept, so the order is) and the title marked; ``opencode -s <new id>``
resumes it, and the old session is left as it was. The plugin's ``chat.message`` gives the
user message's id, the turn's key. Proved with 1.18.33 (docs/integrations/opencode.md).
opencode has no registry of running sessions: snapstore's own open turn is the signal.
"""

from __future__ import annotations

import json
import os
import secrets
import string
import subprocess
import tempfile
from typing import Any

from ..core.errors import ConversationRefused, ConversationUnreadable
from . import Edit
from .jsonl import release

NAME = "opencode"
TITLE = "opencode"
COMMAND = "opencode"
OWN = "/undo in opencode"
TESTED = ((1, 18, 33), (1, 18, 33))
#: How long one opencode command may take (it starts the whole program).
TIMEOUT = 300
#: The largest export read (64 MiB): a bigger session's chat is left as it is.
EXPORT_CAP = 64 << 20
_TAIL = string.ascii_letters + string.digits


def resume_command(session_id: str) -> str:
    return f"opencode -s {session_id}"


def running(session_id: str, folders: list[str], transcript: str | None) -> str:
    """opencode keeps no registry of running sessions: nothing to add to snapstore's own
    open turn."""
    return ""


class Missing(ConversationRefused):
    """opencode cannot be run here (not on PATH): a rewind leaves the chat as it is."""


def _opencode(*args: str) -> subprocess.CompletedProcess[str]:
    """Run an opencode command without its plugins (snapstore's own would record it). Its
    output goes to a file and is read only up to :data:`EXPORT_CAP`."""
    with tempfile.TemporaryFile() as out:
        try:
            done = subprocess.run(
                ["opencode", *args, "--pure"],
                stdout=out,
                stderr=subprocess.PIPE,
                timeout=TIMEOUT,
                stdin=subprocess.DEVNULL,
                check=False,
            )
        except OSError as exc:
            raise Missing(f"cannot run opencode: {exc.strerror}") from None
        except subprocess.TimeoutExpired:
            raise ConversationRefused(f"opencode {args[0]} took over {TIMEOUT} s") from None
        if out.tell() > EXPORT_CAP:
            raise ConversationUnreadable(
                f"opencode {args[0]} gave over {EXPORT_CAP >> 20} MiB, so the chat is left as it is"
            )
        out.seek(0)
        text = out.read().decode("utf-8", "replace")
    return subprocess.CompletedProcess(
        done.args, done.returncode, text, done.stderr.decode("utf-8", "replace")
    )


def export(session_id: str) -> dict[str, Any] | None:
    """The session as ``opencode export`` gives it; None when opencode has no such session."""
    done = _opencode("export", session_id)
    if done.returncode != 0:
        if "Session not found" in done.stderr:
            return None
        raise ConversationRefused(f"opencode export {session_id} failed: {_last(done.stderr)}")
    try:
        found = json.loads(done.stdout)
    except (ValueError, RecursionError):
        raise ConversationUnreadable(f"opencode export {session_id} gave no JSON") from None
    return checked(found, session_id)


def checked(found: Any, session_id: str) -> dict[str, Any]:
    """An export whose ids and links have the types opencode writes (every message's and
    part's ``id`` a string, ``parentID`` a string or absent), else refused: a fork renames
    every id."""

    def bad(what: str) -> ConversationUnreadable:
        return ConversationUnreadable(
            f"opencode export {session_id} has {what}, so the chat is left as it is"
        )

    if not isinstance(found, dict) or not isinstance(found.get("messages"), list):
        raise bad("no session")
    if not isinstance(found.get("info"), dict) or not isinstance(found["info"].get("id"), str):
        raise bad("no session id")
    for message in found["messages"]:
        info = message.get("info") if isinstance(message, dict) else None
        if not isinstance(info, dict) or not isinstance(info.get("id"), str):
            raise bad("a message without an id")
        if not isinstance(info.get("parentID", ""), str):
            raise bad(f"a message {info['id']} whose parent is no id")
        parts = message.get("parts", [])
        if not isinstance(parts, list) or not all(
            isinstance(p, dict) and isinstance(p.get("id"), str) for p in parts
        ):
            raise bad(f"a message {info['id']} with a part without an id")
    return found


def _last(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1][:200] if lines else "no message"


def _ids(session: dict[str, Any], role: str | None = None) -> list[str]:
    return [m["info"]["id"] for m in session["messages"] if role in (None, m["info"].get("role"))]


def live(session: dict[str, Any]) -> list[str]:
    """The prompts a resumed session holds, as their user message ids, oldest first."""
    return _ids(session, "user")


def compacted_after(session: dict[str, Any], key: str) -> bool:
    """Whether opencode compacted the session after the turn: a compaction part or a summary
    message after the turn's user message."""
    ids = _ids(session)
    for message in session["messages"][ids.index(key) + 1 :] if key in ids else ():
        if message["info"].get("summary") is True:
            return True
        if any(p.get("type") == "compaction" for p in message.get("parts", [])):
            return True
    return False


def _new_id(old: str) -> str:
    """A new id like ``old``: its prefix and time part kept, its random tail replaced."""
    prefix, _, rest = old.partition("_")
    tail = "".join(secrets.choice(_TAIL) for _ in rest[12:])
    return f"{prefix}_{rest[:12]}{tail}"


def fork(session: dict[str, Any], key: str, number: str) -> dict[str, Any]:
    """The export of a new session: the messages before the turn's, every id new."""
    new_session = _new_id(session["info"]["id"])
    kept = session["messages"][: _ids(session).index(key)]
    renamed = {m["info"]["id"]: _new_id(m["info"]["id"]) for m in kept}
    messages = []
    for message in kept:
        info = {**message["info"], "id": renamed[message["info"]["id"]]}
        info["sessionID"] = new_session
        if info.get("parentID") in renamed:
            info["parentID"] = renamed[info["parentID"]]
        parts = [
            {**p, "id": _new_id(p["id"]), "sessionID": new_session, "messageID": info["id"]}
            for p in message.get("parts", [])
        ]
        messages.append({"info": info, "parts": parts})
    title = f"{session['info'].get('title') or 'session'} (rewound before turn {number})"
    return {"info": {**session["info"], "id": new_session, "title": title}, "messages": messages}


def plan_edit(base: Edit, home: str, number: str) -> Edit:
    """The fork that rewinds the session to before ``base.key``; refused as the other agents'
    edits are (a compaction after the turn), or ``unsupported``/``unchanged``."""
    database = os.path.join(home, "opencode.db")
    base = base._replace(transcript=database)
    try:
        session = export(base.session_id)
    except Missing as exc:
        return base._replace(
            status="unsupported", note=f"{exc}, so the chat stays as it is; rewind it with {OWN}"
        )
    if session is None:
        return base._replace(
            status="unsupported",
            note=f"opencode has no session {base.session_id} any more, so the chat stays as it is",
        )
    found = release(session["info"].get("version"))
    if found is None or not TESTED[0] <= found <= TESTED[1]:
        shown = session["info"].get("version") or "unknown"
        return base._replace(
            status="unsupported",
            note=f"opencode {shown} is not a release snapstore was tested with "
            f"({'.'.join(map(str, TESTED[0]))}); rewind the chat with {OWN}",
        )
    if base.key not in _ids(session):
        raise ConversationRefused(
            f"turn {number}'s message is not in opencode's session {base.session_id}",
            path=database,
        )
    if compacted_after(session, base.key):
        raise ConversationRefused(
            f"opencode compacted the conversation after turn {number}; a rewind to before "
            "the compaction would bring the whole old history back",
            path=database,
        )
    prompts = live(session)
    if base.key not in prompts:
        return base._replace(note="the conversation already ends before this turn")
    if not prompts.index(base.key):
        return base._replace(
            status="unsupported",
            note=f"nothing of the conversation comes before turn {number}: start a new "
            "opencode session rather than resume this one",
        )
    data = fork(session, base.key, number)
    new_id = data["info"]["id"]
    return base._replace(
        status="rewound",
        how="forked",
        session_id=new_id,
        resume_command=resume_command(new_id),
        data=json.dumps(data, ensure_ascii=False),
        source=base.session_id,
    )


def holds(edit: Edit) -> bool:
    """Whether the fork is in opencode with exactly the messages snapstore imported."""
    found = export(edit.session_id)
    return found is not None and _ids(found) == _ids(json.loads(edit.data))


def apply_edit(edit: Edit) -> None:
    """Import the fork (or, for a cut, delete it), at most once; an import is verified by
    exporting the fork again: it must hold the messages before the turn, else it is deleted
    and the edit refused."""
    found = export(edit.session_id)
    wanted = _ids(json.loads(edit.data))
    if found is not None and _ids(found) != wanted:
        raise ConversationRefused(
            f"opencode's session {edit.session_id} changed since the rewind; left as it is",
            path=edit.transcript,
        )
    if edit.cut:
        if found is not None:
            _check(_opencode("session", "delete", edit.session_id), "session delete")
        return
    if found is None:
        with tempfile.NamedTemporaryFile("w", suffix=".json", encoding="utf-8") as f:
            f.write(edit.data)
            f.flush()
            _check(_opencode("import", f.name), "import")
        found = export(edit.session_id)
    if found is None or _ids(found) != wanted or live(found) != live(json.loads(edit.data)):
        if found is not None:
            _check(_opencode("session", "delete", edit.session_id), "session delete")
        raise ConversationRefused(
            f"opencode's fork {edit.session_id} did not load rewound; it was removed again",
            path=edit.transcript,
        )


def _check(done: subprocess.CompletedProcess[str], what: str) -> None:
    if done.returncode != 0:
        raise ConversationRefused(f"opencode {what} failed: {_last(done.stderr)}")
