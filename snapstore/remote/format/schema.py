"""The shape of every record a remote holds, checked where it is read: a remote is untrusted.

Anyone who can write to a remote can write any bytes there, and a record's seal is
only a hash, so a changed record can be sealed again. Each decoded record (turn,
state, gc record, index, pack footer) therefore goes through one function here
before any other code sees it. What is checked: every key is there with its type;
numbers are finite and in range (no huge ints, no NaN); digests are 64 lowercase
hex; ids are what this snapstore makes; paths are canonical workspace paths
(:func:`snapstore.core.fsio.check_relpath`, never ``..``, absolute, or in ``.git``
or a store); modes keep only their permission bits (0o777), so a remote can
never make a pulled file setuid or setgid.

A record that fails raises :class:`Malformed` saying where (``changes[2].path``);
the catalog turns it into a remote error naming the object.
"""

from __future__ import annotations

import math
import re
from typing import Any

from ...core.errors import UnsafePath
from ...core.fsio import check_relpath
from ...core.records import BRANCH_KINDS, CLOSED, FILE, LINK, REWOUND

#: Larger integers are refused: counts, offsets and sizes never come near it.
MAX_INT = 2**53
#: No remote object is larger (a pack closes past 16 MiB, a blob is one file): an offset
#: or length beyond it is a lie.
MAX_OBJECT = 2**32
#: Change numbers are 4-byte keys in the store.
MAX_SEQ = 2**32 - 1
#: A pulled session's name may gain ``@<8 hex>``; a session name is at most 255 bytes
#: (and a remote's has no control character).
MAX_NAME = 255 - 9
_DIGEST = re.compile(r"[0-9a-f]{64}")
_STORE_ID = re.compile(r"[0-9a-f]{32}")
_TURN_ID = re.compile(r"[0-9a-z]{1,64}")
_COMMIT = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


class Malformed(ValueError):
    """A record that is not of the shape this snapstore writes (the message says where)."""


def _need(ok: bool, where: str, what: str) -> None:
    if not ok:
        raise Malformed(f"{where}: {what}")


def _obj(value: Any, where: str, keys: tuple[str, ...]) -> dict[str, Any]:
    _need(isinstance(value, dict), where, "is not an object")
    missing = [k for k in keys if k not in value]
    _need(not missing, where, f"lacks {', '.join(missing)}")
    return value


def _list(value: Any, where: str, size: int | None = None) -> list[Any]:
    _need(isinstance(value, list), where, "is not a list")
    _need(size is None or len(value) == size, where, f"does not have {size} items")
    return value


def _str(value: Any, where: str, pattern: re.Pattern[str] | None = None) -> str:
    _need(isinstance(value, str), where, "is not a string")
    _need(pattern is None or pattern.fullmatch(value) is not None, where, "is not valid")
    return value


def _int(value: Any, where: str, high: int = MAX_INT) -> int:
    ok = isinstance(value, int) and not isinstance(value, bool)
    _need(ok and 0 <= value <= high, where, f"is not a whole number from 0 to {high}")
    return value


def _bool(value: Any, where: str) -> bool:
    _need(isinstance(value, bool), where, "is not true or false")
    return value


def _time(value: Any, where: str) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    _need(ok and math.isfinite(value) and abs(value) <= MAX_INT, where, "is not a time")
    return value


def _maybe(value: Any, where: str, check: Any, *args: Any) -> Any:
    return None if value is None else check(value, where, *args)


def digest(value: Any, where: str) -> str:
    return _str(value, where, _DIGEST)


def turn_id(value: Any, where: str) -> str:
    return _str(value, where, _TURN_ID)


def path(value: Any, where: str) -> str:
    try:
        return check_relpath(value)
    except UnsafePath as exc:
        raise Malformed(f"{where}: {exc}") from None


def version(value: Any, where: str) -> list[Any]:
    """``[digest, mode, kind]``, the mode cut to its permission bits."""
    blob, mode, kind = _list(value, where, 3)
    _need(kind in (FILE, LINK), f"{where}[2]", "is not a file kind")
    return [digest(blob, f"{where}[0]"), _int(mode, f"{where}[1]", 0o7777) & 0o777, kind]


def _session_name(value: Any, where: str) -> str:
    name = _str(value, where)
    try:
        size = len(name.encode())
    except UnicodeEncodeError:
        size = 0
    printable = not any(ord(c) < 32 or ord(c) == 127 for c in name)  # it reaches terminals
    _need(0 < size <= MAX_NAME and printable, where, "is not a session name")
    return name


def _change(value: Any, where: str) -> dict[str, Any]:
    c = _obj(value, where, ("seq", "path", "before", "after", "done", "tool", "source", "time"))
    rel = path(c["path"], f"{where}.path")
    return {
        "seq": _int(c["seq"], f"{where}.seq", MAX_SEQ),
        "path": rel,
        "before": _maybe(c["before"], f"{where}.before", version),
        "after": _maybe(c["after"], f"{where}.after", version),
        "done": _bool(c["done"], f"{where}.done"),
        "tool": _str(c["tool"], f"{where}.tool"),
        "source": _str(c["source"], f"{where}.source"),
        "time": _time(c["time"], f"{where}.time"),
        "mkdirs": _int(c.get("mkdirs", 0), f"{where}.mkdirs", rel.count("/")),
    }


def turn(value: Any) -> dict[str, Any]:
    """A turn record (sync.push.turn_record), checked."""
    keys = ("id", "session", "kind", "parent", "prompt", "message_id", "created", "closed")
    t = _obj(value, "turn", (*keys, "implicit", "changes"))
    session = _obj(t["session"], "session", ("origin", "name"))
    _need(t["kind"] in BRANCH_KINDS, "kind", "is not a kind of turn that is pushed")
    changes = [_change(c, f"changes[{n}]") for n, c in enumerate(_list(t["changes"], "changes"))]
    _need(len({c["seq"] for c in changes}) == len(changes), "changes", "repeat a seq")
    return {
        **t,
        "id": turn_id(t["id"], "id"),
        "session": {
            "origin": _str(session["origin"], "session.origin", _STORE_ID),
            "name": _session_name(session["name"], "session.name"),
        },
        "parent": _maybe(t["parent"], "parent", turn_id),
        "prompt": _str(t["prompt"], "prompt"),
        "message_id": _maybe(t["message_id"], "message_id", _str),
        "created": _time(t["created"], "created"),
        "closed": _maybe(t["closed"], "closed", _time),
        "implicit": _bool(t["implicit"], "implicit"),
        "changes": changes,
    }


def base(value: Any, where: str) -> dict[str, Any] | None:
    """A session's base (ops.session_base), checked; None when it has none."""
    if value is None:
        return None
    b = _obj(value, where, ("commit", "changes"))
    changes = []
    for n, item in enumerate(_list(b["changes"], f"{where}.changes")):
        at = f"{where}.changes[{n}]"
        rel, before, after = _list(item, at, 3)
        changes.append(
            [
                path(rel, f"{at}[0]"),
                _maybe(before, f"{at}[1]", version),
                _maybe(after, f"{at}[2]", version),
            ]
        )
    skipped = _list(b.get("skipped", []), f"{where}.skipped")
    return {
        "commit": _maybe(b["commit"], f"{where}.commit", _str, _COMMIT),
        "changes": changes,
        "skipped": [_str(s, f"{where}.skipped[{n}]") for n, s in enumerate(skipped)],
    }


def state(value: Any) -> dict[str, Any]:
    """A writer's state (sync.push), checked."""
    s = _obj(value, "state", ("writer", "seq", "time", "sessions"))
    sessions = []
    for n, item in enumerate(_list(s["sessions"], "sessions")):
        at = f"sessions[{n}]"
        x = _obj(item, at, ("origin", "name", "created", "base", "head", "turns"))
        turns = []
        for m, pair in enumerate(_list(x["turns"], f"{at}.turns")):
            tid, turn_state = _list(pair, f"{at}.turns[{m}]", 2)
            _need(turn_state in (CLOSED, REWOUND), f"{at}.turns[{m}][1]", "is not a turn state")
            turns.append([turn_id(tid, f"{at}.turns[{m}][0]"), turn_state])
        sessions.append(
            {
                "origin": _str(x["origin"], f"{at}.origin", _STORE_ID),
                "name": _session_name(x["name"], f"{at}.name"),
                "created": _time(x["created"], f"{at}.created"),
                "base": base(x["base"], f"{at}.base"),
                "head": _maybe(x["head"], f"{at}.head", turn_id),
                "turns": turns,
            }
        )
    return {
        **s,
        "writer": _str(s["writer"], "writer", _STORE_ID),
        "seq": _int(s["seq"], "seq"),
        "time": _time(s["time"], "time"),
        "sessions": sessions,
    }


def gc_record(value: Any) -> dict[str, Any]:
    """A remote gc's record (sync.upkeep.gc), checked."""
    g = _obj(value, "gc record", ("time", "turns", "packs"))
    return {
        **g,
        "time": _time(g["time"], "time"),
        "turns": [turn_id(t, f"turns[{n}]") for n, t in enumerate(_list(g["turns"], "turns"))],
        "packs": [digest(p, f"packs[{n}]") for n, p in enumerate(_list(g["packs"], "packs"))],
    }


def index(value: Any) -> list[tuple[str, str, int, int, str | None]]:
    """An index's blobs, each (blob id, pack, offset, length, delta base or None)."""
    i = _obj(value, "index", ("packs", "blobs"))
    packs = [digest(p, f"packs[{n}]") for n, p in enumerate(_list(i["packs"], "packs"))]
    found = []
    for n, item in enumerate(_list(i["blobs"], "blobs")):
        at = f"blobs[{n}]"
        blob, pack, offset, length, delta_base = _list(item, at, 5)
        found.append(
            (
                digest(blob, f"{at}[0]"),
                packs[_int(pack, f"{at}[1]", len(packs) - 1)] if packs else _no_pack(at),
                _int(offset, f"{at}[2]", MAX_OBJECT),
                _int(length, f"{at}[3]", MAX_OBJECT),
                _maybe(delta_base, f"{at}[4]", digest),
            )
        )
    return found


def _no_pack(where: str) -> str:
    raise Malformed(f"{where}[1]: names a pack, but the index lists none")


def pack_footer(value: Any) -> list[tuple[str, int, int]]:
    """A pack footer's entries, each (blob id, offset, length)."""
    entries = []
    for n, item in enumerate(_list(value, "footer")):
        blob, offset, length = _list(item, f"footer[{n}]", 3)
        entries.append(
            (
                digest(blob, f"footer[{n}][0]"),
                _int(offset, f"footer[{n}][1]", MAX_OBJECT),
                _int(length, f"footer[{n}][2]", MAX_OBJECT),
            )
        )
    return entries
