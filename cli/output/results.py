"""What a rewind, switch, undo or scan did, and unified diffs, printed for people without rich.

``rewind --yes``, ``undo`` and ``switch`` print a few lines, and ``diff`` and
``--dry-run`` print diffs: neither needs a layout engine, so these commands load
no rich (docs/benchmarks.md measures their start-up). Colour appears only on a
terminal without ``NO_COLOR``, in git's colours for diffs. Names pass through
:func:`~snapstore_cli.output.plain.printable`; a diff's content is printed as it is, as
git prints it, and lines are never wrapped.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, TextIO

from .plain import Segment, colour, emit, paint, printable, reader_gone, reason, say, tell

if TYPE_CHECKING:
    from snapstore.ops.result import RewindResult
    from snapstore.ops.scanrecord import ScanResult

    from ..operations.outcome import Outcome


def diff(path: str, lines: list[str], stream: TextIO | None = None) -> None:
    """One file's unified diff coloured the git way, its name quoted as git quotes it in the
    header lines when it holds what a terminal would act on."""
    out = stream or sys.stdout
    styled = colour(out)
    quoted = printable(path)
    header = True
    for line in lines:
        header = header and not line.startswith("@@")
        if header and quoted != path:
            line = line.replace(f"a/{path}", printable(f"a/{path}")).replace(
                f"b/{path}", printable(f"b/{path}")
            )
        if header:  # diff --git, modes, ---/+++ or Binary: everything before the first hunk
            style = "bold"
        elif line.startswith("@@"):
            style = "cyan"
        elif line.startswith("+"):
            style = "green"
        elif line.startswith("-"):
            style = "red"
        else:
            style = ""
        out.write(paint(((line.rstrip("\n"), style),), styled) + "\n")


def report(outcome: Outcome, as_json: bool, diffs: bool = False) -> int:
    """Print a move's outcome: its notes on stderr, then its JSON document or its lines for
    people on stdout: a dry run's plan, then (``diffs``, ``--diff``) what each file would
    become. The exit code: 1 when it left (or, dry, would leave) a path not put back,
    whether or not the reader stayed to the end."""
    for note in outcome.notes:
        say(f"snapstore: {printable(note, quote=False)}")

    def human() -> None:
        for result in outcome.resumed:
            summary(result, outcome.verb)
        if outcome.result is None:
            if not outcome.resumed:
                tell("no interrupted rewind to resume")
            return
        result = outcome.result
        summary(
            result,
            outcome.verb,
            turn=outcome.turn,
            finish=outcome.finish,
            prompt=outcome.prompt,
            by_hand=outcome.by_hand,
        )
        writes = outcome.writes()
        if writes and not diffs:
            say(f"snapstore: add --diff to see what the {writes} file(s) would become")
        elif writes:
            for path, lines in outcome.diffs():
                diff(path, lines)

    try:
        emit(as_json, outcome.to_json(), human)
    except BrokenPipeError as exc:  # `| head` went away: the move is made, its code stands
        if not reader_gone(exc):
            raise
    return 0 if outcome.ok else 1


def summary(
    result: RewindResult,
    verb: str,
    stream: TextIO | None = None,
    turn: str | None = None,
    finish: str | None = None,
    prompt: str | None = None,
    by_hand: str = "",
) -> None:
    """What a rewind, switch or undo restored, merged, deleted, left in conflict and failed,
    what it warns of (a hard link it split), and where the head is; ``finish`` is the
    command that retries what it left (``by_hand``: what is left for the user, when no
    command finishes it without losing an edit); then what it did to the agent's conversation
    (``turn``: the turn as the user named it), and the ``prompt`` it hands back."""
    out = stream or sys.stdout
    styled = colour(out)
    prefix = "would be " if result.dry_run else ""
    lines: list[list[Segment]] = []
    for name, paths, style in (
        ("restored", result.restored, "green"),
        ("merged", result.merged, "cyan"),
        ("deleted", result.deleted, "red"),
    ):
        lines += [[(f"  {prefix}{name:<9}", style), (f" {printable(path)}", "")] for path in paths]
    for name, paths in (("removed", result.folders_removed), ("made", result.folders_created)):
        lines += [
            [(f"  {name:<9}", "dim"), (f" {printable(path)}/ (empty folder)", "")] for path in paths
        ]
    for items, name, style in (
        (result.conflicts, "conflict", "yellow"),
        (result.errors, "failed", "red"),
        (result.warnings, "warning", "yellow"),
    ):
        lines += [
            [
                (f"  {name:<9}", f"bold {style}"),
                (f" {printable(item['path'])}: ", ""),
                (reason(item["reason"]), style),
            ]
            for item in items
        ]
    on_branch = result.new_head is not None and result.new_head == result.undo_id
    lines += git_lines(result.git, prefix, verb == "undone", on_branch)
    changed = len(result.changed)
    if not (changed or result.conflicts or result.errors):
        lines.append([("  no files to change", "")])
    head = result.new_head[:8] if result.new_head else "(start of the session)"
    if result.nothing_done:
        lines.append(
            [
                (
                    f"nothing was {verb}: every write failed, so the head and the turns did "
                    f"not move; once the cause is fixed, run the same command again",
                    "bold red",
                )
            ]
        )
    elif result.dry_run:
        lines.append([(f"dry run: nothing was written; the head would be {head}", "")])
    else:
        lines.append([(f"{verb}: {changed} file(s) changed; head is now {head}", "")])
        if finish:
            lines.append([(f"{len(result.left)} path(s) left; finish with: {finish}", "yellow")])
        elif by_hand:  # no policy keeps both sides there: the user's to resolve
            lines.append([(f"{len(result.left)} path(s) left for you: {by_hand}", "yellow")])
        if result.undo_id and verb in ("rewound", "redone"):
            lines.append([(f"undo it with: snapstore undo {result.undo_id}", "dim")])
    lines += _conversation(result, verb, turn or result.target or "", prompt)
    for segments in lines:
        out.write(paint(segments, styled) + "\n")


def git_lines(
    git: dict | None, prefix: str = "", undone: bool = False, on_branch: bool = False
) -> list[list[Segment]]:
    """What an operation did (or, dry, would do) to the repository: HEAD, each ref (and the
    ref that keeps where it was), the index; what it left alone and why. ``undone``: the
    operation is an undo (``on_branch``: one that stands as a turn of its own), which names
    another command to move the refs back."""
    if git is None:  # no repository, or not asked: nothing of git's to load
        return []
    from snapstore.ops.gitshow import operation_lines, way_back

    way = way_back("undo" if undone else "rewind", on_branch)

    styles = {
        "git": ("git", "green"),
        "conflict": ("conflict", "bold yellow"),
        "note": ("note", "dim"),
    }
    found = []
    for kind, text in operation_lines(git, way):
        name, style = styles[kind]
        said = f"{prefix}{text}" if kind == "git" else text
        found.append([(f"  {name:<9}", style), (f" {printable(said, quote=False)}", "")])
    return found


def _conversation(
    result: RewindResult, verb: str, turn: str, prompt: str | None
) -> list[list[Segment]]:
    """The conversation's lines: what happened to the chat, the prompt to edit and send again
    (for every session that had one), and the command that resumes the session."""
    chat = result.conversation
    lines: list[list[Segment]] = []
    if chat is not None and chat["status"] != "rewound":
        state = "unchanged" if chat["status"] == "unchanged" else "not rewound"
        lines = [[(f"conversation {state}: ", "bold"), (printable(chat["note"], quote=False), "")]]
    if prompt:
        lines.append([(f"your prompt from turn {turn}, to edit and send again:", "bold")])
        lines += [[(f"  > {printable(line, quote=False)}", "")] for line in prompt.splitlines()]
    if chat is None or chat["status"] != "rewound":
        return lines
    if verb == "undone":
        said = "would be put back" if result.dry_run else "put back as it was before the rewind"
    else:
        said = ("would be rewound" if result.dry_run else "rewound") + f" to before turn {turn}"
    lines.insert(0, [("conversation: ", "bold"), (said, "")])
    lines.append([("resume it with: ", ""), (chat["resume_command"], "bold")])
    return lines


def scan_summary(result: ScanResult) -> None:
    """What a scan recorded, for people (on stdout, with the command's other results)."""
    out = sys.stdout
    if result.baseline:
        tell(f"baseline recorded: {result.read} file(s) stored in {result.seconds:.2f} s")
    elif not result.count:
        tell(f"no changes ({result.files} file(s) looked at, {result.seconds:.3f} s)")
    else:
        where = f"user changes, turn {result.turn}" if result.user else f"turn {result.turn}"
        tell(
            f"{len(result.changed)} changed, {len(result.added)} added, "
            f"{len(result.deleted)} deleted in {result.seconds:.3f} s -> {where}"
        )
        styled = colour(out)
        for name, paths, style in (
            ("changed", result.changed, "yellow"),
            ("added", result.added, "green"),
            ("deleted", result.deleted, "red"),
        ):
            for path in paths:
                out.write(
                    paint((("  ", ""), (f"{name:<8}", style), (f" {printable(path)}", "")), styled)
                    + "\n"
                )
    for item in result.skipped:  # warnings, beside the result
        say(
            f"snapstore: skipped {printable(item['path'])}: {reason(item['reason'])}",
            "yellow",
        )
