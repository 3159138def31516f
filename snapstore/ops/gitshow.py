"""What a turn, or an operation, did to the repository, in words (for show, log and ops).

A turn's moves (snapstore.ops.gitrecord) say that ``refs/heads/feature`` went from one
commit to another; a person wants "committed 2 commits on feature", "checked out
feature", "reset main from 1a2b3c4 to 3c4d5e6". Whether a branch went forward, and by
how many commits, is git's to say (one ``git rev-list --left-right --count`` per
branch that moved): reading history is not the hook path. Without a repository (or
without the commits, gc'd since), a move is said without its count.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.errors import GitRefused, SnapstoreError
from ..core.records import GitMove
from ..git import files, moves
from ..git.layout import Layout, find

if TYPE_CHECKING:  # what a move's lines read loads no database: a routed client prints them
    from ..core.repo import Repo
    from ..core.view import View


def describe(repo: Repo, v: View, turn_moves: list[GitMove], git_dir: str | None) -> list[str]:
    """One line per thing the moves did, HEAD first, the index last."""
    if not turn_moves:
        return []
    try:
        layout = find(repo.root, git_dir)
    except GitRefused:
        layout = None
    net: dict[str, tuple[str | None, str | None]] = {}
    for move in turn_moves:
        old = net[move.name][0] if move.name in net else move.old
        net[move.name] = (old, move.new)
    lines = []
    head = net.pop(files.HEAD, None)
    if head is not None and head[0] != head[1]:
        lines.append(_head(head[1]))
    index = net.pop(files.INDEX, None)
    log = net.pop(files.STASH_LOG, None)
    stash = net.pop(files.STASH, None)
    for name, (old, new) in sorted(net.items()):
        if old != new:
            lines.append(_ref(layout, name, old, new))
    if stash is not None or log is not None:
        lines.append(_stash(v, stash, log))
    if index is not None and index[0] != index[1]:
        lines.append("updated the index")
    return lines


def _head(value: str | None) -> str:
    if value is None:
        return "removed HEAD"
    if value.startswith("ref: "):
        return f"checked out {_branch(value[len('ref: ') :])}"
    return f"detached HEAD at {value[:7]}"


def _branch(name: str) -> str:
    for prefix in ("refs/heads/", "refs/tags/", "refs/remotes/"):
        if name.startswith(prefix):
            return name[len(prefix) :]
    return name


def _ref(layout: Layout | None, name: str, old: str | None, new: str | None) -> str:
    kind = "tag" if name.startswith("refs/tags/") else "branch"
    short = _branch(name)
    if name.startswith(files.REMOTE):
        return f"moved {short} (remote-tracking: a push or a fetch)"
    if not name.startswith(("refs/heads/", "refs/tags/")):
        kind, short = "ref", name
    if old is None:
        return f"created {kind} {short} at {(new or '')[:7]}"
    if new is None:
        return f"deleted {kind} {short} (was {old[:7]})"
    ahead = _ahead(layout, old, new) if kind == "branch" else None
    if ahead is not None:
        return f"committed {ahead} commit{'s' if ahead != 1 else ''} on {short}"
    if kind == "branch":
        return f"reset {short} from {old[:7]} to {new[:7]}"
    return f"moved {kind} {short} from {old[:7]} to {new[:7]}"


def _ahead(layout: Layout | None, old: str, new: str) -> int | None:
    """How many commits ``new`` is ahead of ``old`` when it descends from it (None: it does
    not, or git cannot say)."""
    if layout is None or old.startswith("ref: ") or new.startswith("ref: "):
        return None
    try:
        done = moves.git(layout, "rev-list", "--left-right", "--count", f"{old}...{new}")
    except OSError:
        return None
    counts = done.stdout.split()
    if done.returncode != 0 or len(counts) != 2 or counts[0] != b"0":
        return None
    return int(counts[1])


def _stash(
    v: View, stash: tuple[str | None, str | None] | None, log: tuple[str | None, str | None] | None
) -> str:
    """A move of the stash, by how many entries its list has before and after."""
    if log is not None:
        before, after = (_entries(v, digest) for digest in log)
    else:
        assert stash is not None
        before, after = int(stash[0] is not None), int(stash[1] is not None)
    if after > before:
        return f"stashed changes (the stash list: {before} -> {after})"
    if after < before:
        return f"popped or dropped a stash (the stash list: {before} -> {after})"
    return "changed the stash"


def _entries(v: View, digest: str | None) -> int:
    if digest is None:
        return 0
    try:
        return len(v.blob(bytes.fromhex(digest)).splitlines())
    except SnapstoreError:
        return 0


def way_back(action: str, on_branch: bool = False) -> str:
    """The command that moves back what an operation moved: ``undo`` for a rewind, switch or
    redo; ``redo`` for an undo, or ``rewind`` for an undo that stands on the branch as a turn
    of its own (no redo takes that one back)."""
    if action == "undo":
        return "rewind" if on_branch else "redo"
    return "undo"


def operation_lines(git: dict[str, Any] | None, way: str = "undo") -> list[tuple[str, str]]:
    """What an operation did to the repository (its result's ``git``), as (kind, text)
    lines: kind ``git`` (done), ``conflict`` (left alone), ``note`` (said); ``way``: the
    snapstore command that moves the refs back (:func:`way_back`)."""
    if git is None:
        return []
    lines: list[tuple[str, str]] = []
    if git.get("refused"):
        kind = "note" if git.get("ok", True) else "conflict"
        lines.append((kind, f"git left alone: {git['refused']}"))
    if git.get("head") in ("moved", "move") and git["head_before"] != git["head_after"]:
        lines.append(("git", f"HEAD: {_shown(git['head_before'])} -> {_shown(git['head_after'])}"))
    elif git.get("head") in ("conflict", "error"):
        lines.append(("conflict", f"HEAD stays at {_shown(git['head_before'])}"))
    kept = {k.split("/", 3)[3]: k for k in git.get("kept", ())}
    for ref in git.get("refs", ()):
        name = ref["name"]
        if ref["status"] in ("moved", "move"):
            text = f"{name}: {_shown(ref['before'])} -> {_shown(ref['after'])}"
            keep = kept.get(name.removeprefix("refs/"))
            lines.append(("git", text + (f" (kept as {keep})" if keep else "")))
        elif ref["status"] == "remote":
            lines.append(("note", f"{name}: {ref['reason']}"))
        elif ref["status"] in ("conflict", "error"):
            lines.append(("conflict", f"{name}: {ref['reason']}"))
    if git.get("index") == "restored":
        lines.append(("git", "the index put back"))
    elif git.get("index") == "conflict":
        lines.append(("conflict", "the index stays as it is"))
    lines += [("note", note) for note in git.get("notes", ())]
    keeps = list(git.get("kept", ()))
    if keeps:
        op = keeps[0].split("/")[2]
        lines.append(
            (
                "note",
                f"what the refs pointed at is kept under refs/snapstore/{op}/ (`git log "
                f"{keeps[0]}`); `snapstore {way} {op}` moves them back",
            )
        )
    elif planned := _planned_keeps(git):  # a dry run: the operation has no id yet
        lines.append(
            (
                "note",
                "what the refs point at now will be kept under refs/snapstore/<operation>/ "
                f"({', '.join(planned)}); `snapstore {way} <operation>` moves them back",
            )
        )
    return lines


def _planned_keeps(git: dict[str, Any]) -> list[str]:
    """What a planned (dry) move will keep under refs/snapstore/<operation>/, as
    ``gitplan.result`` names what a made one kept: HEAD when it is detached, and each ref that
    moves from a commit."""
    found = []
    head = git.get("head_before")
    if git.get("head") == "move" and head is not None and not head.startswith("refs/"):
        found.append(files.HEAD)
    found += [
        ref["name"].removeprefix("refs/")
        for ref in git.get("refs", ())
        if ref["status"] == "move"
        and ref["before"] is not None
        and not ref["before"].startswith("ref: ")
    ]
    return found


def _shown(value: str | None) -> str:
    if value is None:
        return "(none)"
    if value.startswith("refs/"):
        return _branch(value)
    return value[:7]
