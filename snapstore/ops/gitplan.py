"""The git half of a rewind, switch or undo: what moves in the repository, and how it went.

The turns an operation takes back (or puts back) recorded what git did in them
(snapstore.ops.gitrecord). Per name (HEAD, a ref, the index, the stash's reflog) the
steps are folded from what the repository holds now, as files are
(snapstore.ops.plan), but a ref is never merged:

- now == the step's source: the step is taken;
- now == its destination: it is done already;
- otherwise someone moved it since the agent (the user committed on top, switched
  branches, staged a file): a **conflict**, reported and left alone. The user's git
  work wins as their edits do. An index is compared by what it stages
  (snapstore.git.index), so a refresh of git's stat cache is no move.

HEAD, the branch it names and the index go together: when that branch or HEAD is in
conflict, HEAD and the index are left as they are too, so the repository never
ends on a branch with another branch's index. Remote-tracking refs are never moved:
a ref the agent pushed cannot be taken back, and the result says so. A target
commit that git's object store no longer holds is a conflict too.

The plan is recorded in the operation's journal (``RewindOp.git``) before anything
moves; :mod:`snapstore.git.moves` makes it, after the files, and a resume makes it
again from the journal. Every ref moved away from a commit is kept first under
``refs/snapstore/<operation>/...``, so no commit is ever lost.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..core import blobs
from ..core.errors import GitRefused, SnapstoreError
from ..core.records import GitMove, Turn
from ..core.repo import Repo, Tx
from ..core.view import View
from ..git import files, moves
from ..git.index import same_index
from ..git.layout import Layout, find

#: Public statuses of a ref in a result: moved (planned: move), unchanged, conflict, remote
#: (remote-tracking: never moved), error (git refused).
MOVE, UNCHANGED, CONFLICT, REMOTE = "move", "unchanged", "conflict", "remote"
PUSHED = (
    "moved in the turn (a push or a fetch): snapstore never moves remote-tracking refs, "
    "and cannot take back a push"
)

Steps = dict[str, list[tuple[str | None, str | None]]]  # name -> [(source, destination)]
#: The names whose values are the digests of bytes the store keeps (what they say in errors).
_HELD = {files.INDEX: "the repository's index", files.STASH_LOG: "the stash's reflog"}


def steps(v: View, back: Iterable[Turn], forward: Iterable[Turn] = ()) -> Steps:
    """Each name's steps in fold order: the moves of ``back`` (newest turn first) undone
    newest first, then those of ``forward`` (oldest first) made again in order."""
    found: Steps = {}
    for turn in back:
        for move in reversed(v.git_moves(turn.id)):
            found.setdefault(move.name, []).append((move.new, move.old))
    for turn in forward:
        for move in v.git_moves(turn.id):
            found.setdefault(move.name, []).append((move.old, move.new))
    return found


def undo_steps(record: Turn) -> Steps:
    """The steps that take back what operation ``record`` moved in the repository."""
    found: Steps = {}
    assert record.op is not None
    for entry in record.op.git.get("moves", ()):
        if entry["status"] == "moved":
            found.setdefault(entry["name"], []).append((entry["after"], entry["before"]))
    return found


def notes(turns: Iterable[Turn]) -> list[str]:
    """What the turns could not record of the repository: the rewind cannot put it back."""
    return [
        f"turn {t.id}: the repository's state was not recorded ({t.git_note}); "
        "git is left as it is for it"
        for t in turns
        if t.git_note
    ]


def plan(
    repo: Repo, v: View, git_dir: str | None, found: Steps, said: list[str]
) -> tuple[dict[str, Any] | None, dict[str, bytes]]:
    """The journal's record of the git half (None: no repository, and nothing to say), and
    the bytes of each index or stash list it moves away from: the journal stores those the
    store lacks (an index git refreshed since the last record, or a rewind wrote), so that
    the operation's undo has them to write back."""
    try:
        layout = find(repo.root, git_dir)
    except GitRefused as exc:
        return _refused(str(exc), said, bool(found)), {}
    if layout is None:
        if not found and not said:
            return None, {}
        return _refused("the workspace is no git repository any more", said, bool(found)), {}
    try:
        return _plan(v, layout, found, said)
    except GitRefused as exc:
        return _refused(str(exc), said, bool(found)), {}


def _refused(reason: str, said: list[str], lost: bool) -> dict[str, Any]:
    """A git half that cannot be done; ``lost``: there were moves to make."""
    return {
        "git_dir": None,
        "head": None,
        "moves": [],
        "refused": reason,
        "notes": said,
        "lost": lost,
    }


def _plan(
    v: View, layout: Layout, found: Steps, said: list[str]
) -> tuple[dict[str, Any], dict[str, bytes]]:
    held = sorted({*found} & set(_HELD))  # the index and the stash list: read once, here
    now = moves.current(layout, sorted({files.HEAD, *found} - set(held)))
    disk: dict[str, bytes] = {}
    for name in held:
        data = files.read_file(files.file_path(layout, name), 1 << 40, _HELD[name])
        now[name] = None if data is None else blobs.digest(data).hex()
        if data is not None:
            disk[name] = data

    def content(digest: str) -> bytes | None:
        for name, data in disk.items():
            if digest == now[name]:
                return data
        return v.blob(bytes.fromhex(digest))

    entries: dict[str, dict[str, Any]] = {}
    for name, name_steps in sorted(found.items()):
        entries[name] = _fold(name, now.get(name), name_steps, layout, content)
    _couple(entries, now.get(files.HEAD))
    _gone(layout, entries)
    keep = {
        name: data
        for name, data in disk.items()
        if entries[name]["status"] == MOVE and not v.has_blob(bytes.fromhex(now[name] or ""))
    }
    record = {
        "git_dir": layout.git_dir,
        "head": now.get(files.HEAD),
        "moves": [e for e in entries.values() if e["status"] != UNCHANGED or e["name"] == "HEAD"],
        "refused": "",
        "notes": said,
        "lost": False,
    }
    return record, keep


def _fold(
    name: str,
    here: str | None,
    name_steps: list[tuple[str | None, str | None]],
    layout: Layout,
    content: Any,
) -> dict[str, Any]:
    value = here
    entry = {"name": name, "before": here, "after": here, "status": UNCHANGED, "reason": ""}
    for src, dst in name_steps:
        if value == src:
            value = dst
        elif value == dst:
            continue
        elif name == files.INDEX and _same_index(value, src, layout, content):
            value = dst
        else:
            entry["status"] = CONFLICT
            entry["reason"] = (
                f"moved since the agent: it is {_short(here)}, where the agent left "
                f"{_short(src)}; left alone"
            )
            return entry
    if value == here:
        return entry
    if name.startswith(files.REMOTE):
        return {**entry, "status": REMOTE, "reason": PUSHED}
    return {**entry, "after": value, "status": MOVE}


def _same_index(a: str | None, b: str | None, layout: Layout, content: Any) -> bool:
    if a is None or b is None:
        return False
    try:
        return same_index(content(a), content(b), layout.oid_size // 2)
    except SnapstoreError:
        return False


def _couple(entries: dict[str, dict[str, Any]], head: str | None) -> None:
    """HEAD, the branch it names before and after, and the index move together or not at
    all: a conflict on one of them leaves the others too."""
    head_entry = entries.get(files.HEAD)
    branches = {
        value[len("ref: ") :]
        for value in (head, head_entry["after"] if head_entry else None)
        if value and value.startswith("ref: ")
    }
    stuck = [
        n for n in (files.HEAD, *sorted(branches)) if entries.get(n, {}).get("status") == CONFLICT
    ]
    if not stuck:
        return
    for name in (files.HEAD, files.INDEX):
        entry = entries.get(name)
        if entry is not None and entry["status"] == MOVE:
            entry.update(
                after=entry["before"],
                status=CONFLICT,
                reason=f"{stuck[0]} moved since the agent, and HEAD, its branch and the index "
                "go back together; left alone",
            )


def _gone(layout: Layout, entries: dict[str, dict[str, Any]]) -> None:
    """A ref that would go back to a commit git no longer holds (gc pruned it) stays."""
    targets = {
        e["after"]
        for e in entries.values()
        if e["status"] == MOVE
        and (e["name"] == files.HEAD or e["name"].startswith("refs/"))
        and e["after"] is not None
        and not e["after"].startswith("ref: ")
    }
    lost = moves.missing(layout, sorted(targets))
    for entry in entries.values():
        if entry["status"] == MOVE and entry["after"] in lost:
            entry.update(
                after=entry["before"],
                status=CONFLICT,
                reason=f"commit {_short(entry['after'])} is no longer in the repository "
                "(git gc pruned it); left alone",
            )


def _short(value: str | None) -> str:
    if value is None:
        return "absent"
    if value.startswith("ref: "):
        return value[len("ref: ") :].removeprefix("refs/heads/")
    return value[:8]


def execute(repo: Repo, git: dict[str, Any], op_id: str, message: str) -> dict[str, Any]:
    """Make the planned moves (after the files); the record with each move's outcome."""
    todo = [m for m in git.get("moves", ()) if m["status"] in (MOVE, "moved")]
    if not todo or git.get("refused"):
        return git
    try:
        layout = find(repo.root, git["git_dir"])
        if layout is None:
            raise GitRefused("the workspace is no git repository any more")
    except GitRefused as exc:
        return {**git, "refused": str(exc), "lost": True}

    def content(digest: str) -> bytes:
        with repo.read() as v:
            return v.blob(bytes.fromhex(digest))

    planned = [moves.Move(m["name"], m["before"], m["after"]) for m in todo]
    outcomes = moves.apply(layout, planned, op_id, message, content)
    done = []
    for entry in git["moves"]:
        if entry["name"] in outcomes:
            status, reason = outcomes[entry["name"]]
            entry = {**entry, "status": status, "reason": reason}
            if status != "moved":
                entry["after"] = entry["before"]
        done.append(entry)
    return {**git, "moves": done}


def recorded(tx: Tx, git: dict[str, Any]) -> None:
    """Make what the operation moved the last values recorded of the repository (as a
    rewind's writes become ``paths``), so that the next record does not find them moved."""
    stamp = tx.git_state()
    if not stamp or not stamp.get("layout") or stamp["layout"][0] != git.get("git_dir"):
        return
    for entry in git.get("moves", ()):
        if entry["status"] == "moved":
            tx.set_git_value(entry["name"], entry["after"])


def as_moves(tx: Tx, turn_id: str, git: dict[str, Any]) -> None:
    """Record what an undo that stands on the branch (a ``revert`` turn) moved as the moves
    of that turn, so that rewinding it takes them back as any turn's."""
    moved = [e for e in git.get("moves", ()) if e["status"] == "moved"]
    for seq, entry in enumerate(moved, start=tx.next_git_seq(turn_id)):
        tx.put_git_move(GitMove(turn_id, seq, entry["name"], entry["before"], entry["after"]))


def result(git: dict[str, Any] | None, op_id: str | None) -> dict[str, Any] | None:
    """The ``git`` key of a rewind's result (docs/cli.md): HEAD before and after, each ref
    with its status, the index's, and the refs that keep what moved."""
    if git is None:
        return None
    entries = {m["name"]: m for m in git.get("moves", ())}
    head = entries.get(files.HEAD)
    before = git.get("head") if head is None else head["before"]
    after = before if head is None or head["status"] not in (MOVE, "moved") else head["after"]
    refs = [
        {k: m[k] for k in ("name", "before", "after", "status", "reason")}
        for m in entries.values()
        if m["name"].startswith("refs/")
    ]
    log = entries.get(files.STASH_LOG)
    if log is not None and files.STASH not in entries:
        stash = {"name": files.STASH, "before": None, "after": None}
        refs.append({**stash, "status": log["status"], "reason": f"its reflog: {log['reason']}"})
    elif log is not None and log["status"] in (CONFLICT, "error"):
        for ref in refs:
            if ref["name"] == files.STASH:
                ref["reason"] = ref["reason"] or f"its reflog (the stash list): {log['reason']}"
    index = entries.get(files.INDEX)
    kept = [
        moves.keep_name(op_id, m["name"])
        for m in entries.values()
        if op_id
        and m["status"] == "moved"
        and (m["name"] == files.HEAD or m["name"].startswith("refs/"))
        and m["before"] is not None
        and not m["before"].startswith("ref: ")
    ]
    return {
        "head_before": _head(before),
        "head_after": _head(after),
        "head": "unchanged" if head is None else head["status"],
        "refs": refs,
        "index": _index_status(index),
        "kept": kept,
        "refused": git.get("refused") or None,
        "notes": list(git.get("notes", ())),
        "ok": settled(git),
    }


def _head(value: str | None) -> str | None:
    return value[len("ref: ") :] if value and value.startswith("ref: ") else value


def _index_status(entry: dict[str, Any] | None) -> str:
    if entry is None or entry["status"] == UNCHANGED:
        return "unchanged"
    if entry["status"] in (MOVE, "moved"):
        return "restored"
    return "conflict"


def settled(git: dict[str, Any] | None) -> bool:
    """Whether the git half left nothing undone: no ref, HEAD or index in conflict or
    refused by git, and no turn whose git state is unknown (a refusal with nothing to move
    is only said)."""
    if not git:
        return True
    if any(m["status"] in (CONFLICT, "error") for m in git.get("moves", ())):
        return False
    return not git.get("notes") and not (git.get("refused") and git.get("lost"))
