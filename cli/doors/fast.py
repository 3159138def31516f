"""The capture commands without Click or rich: ``begin``, ``end``, ``pre-write``, ``post-write``,
and ``scan``; and ``rewind TURN``, ``undo`` and ``redo`` (their bodies are ``moves``).

Agent wrappers and plugins spawn one of these for every event, so what they wait
for is the whole process, measured against the bare-import floor
(docs/benchmarks.md): these commands must load no more than an agent's hook.
One implementation serves both front ends. The console script
(``snapstore_cli.launch``) runs a command line here when it holds only what
:func:`parse` reads exactly as Click would; anything else (``--help``,
``--version``, ``--debug``, an unknown option, a usage error, a ``--prompt-file``
that cannot be opened) goes to the Click application, whose commands
(``commands.capture``) call the same functions below and print the same output. The
contract is docs/cli.md's: options before or after the command, ``--json`` and
``--session``; the frame around a command (one-line errors with their exit codes,
finishing an interrupted rewind, gc after a command that added to the store) is
``runner``'s, as for every front end. A move goes to the workspace's daemon when one runs
(``route``), and is made here otherwise.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, BinaryIO, cast

from snapstore import SnapstoreError
from snapstore.core.records import BOTH, MODES, POLICIES, SKIP

from ..operations import runner
from ..output.plain import printable, reason, say, tell
from ..settings.environment import lock_timeout, strict_hooks
from ..settings.options import Options

if TYPE_CHECKING:
    from snapstore.core.records import Mode, Policy
    from snapstore.ops.capture import CaptureResult
    from snapstore.ops.scanrecord import ScanResult

    from ..operations.requests import Action

#: What a command returns: its ``--json`` document, and for people the lines (text, style) to
#: print on stdout, or what prints them, and the warnings to print on stderr.
Output = tuple[dict, "list[tuple[str, str]] | Callable[[], None]", list[str]]

#: Global options that take a value (before the command), and the attribute they set.
GLOBAL_VALUES = {
    "--root": "root",
    "--session": "session",
    "-s": "session",
    "--lock-timeout": "lock_timeout",
}
#: Each command's own options that take a value; ``--json`` and ``--session`` go with all.
COMMAND_VALUES = {
    "begin": ("--prompt", "--prompt-file", "--message-id"),
    "end": (),
    "pre-write": ("--tool",),
    "post-write": (),
    "scan": ("--max-file-size",),
    "rewind": ("--mode", "--on-conflict"),
    "undo": ("--on-conflict",),
    "redo": ("--on-conflict",),
}
#: Each command's own flags.
COMMAND_FLAGS = {
    "scan": ("--no-watcher",),
    "rewind": ("--dry-run", "--yes", "-y", "--force", "--no-git"),
    "undo": ("--dry-run", "--no-git"),
    "redo": ("--dry-run", "--no-git"),
}
#: Short names, and the long option each stands for.
SHORT = {"-y": "--yes"}
#: Options the fast path leaves to Click: a command line holding one goes there (the
#: picker's and the rarer forms of ``rewind``).
CLICK_ONLY = {
    "rewind": ("--path", "--resume", "--finish", "--diff"),
    "undo": ("--mode", "--diff"),
    "redo": ("--diff",),
}
#: Options whose value is one of a few words; any other value is Click's usage error.
CHOICES = {"--mode": MODES, "--on-conflict": POLICIES}
#: The commands that take PATHS (one or more).
WITH_PATHS = ("pre-write", "post-write")
#: The commands that take one argument, its name in Click, and whether the fast path needs
#: it (``rewind`` without TURN is the picker, Click's).
ONE_ARGUMENT = {"rewind": ("turn", True), "undo": ("rewind_id", False), "redo": ("undo_id", False)}


class Parsed:
    """A command line the fast path runs: the command, global and command options, paths."""

    __slots__ = ("command", "options", "paths", "values")

    def __init__(self, command: str, options: Options, values: dict[str, str], paths: list[str]):
        self.command = command
        self.options = options
        self.values = values  # the command's own options, by name without dashes
        self.paths = paths


def _option(
    args: list[str], i: int, names: tuple[str, ...] | dict[str, str]
) -> tuple[str, str, int] | None:
    """The option at ``args[i]`` taking a value, its value and the next index; None when it is
    not one of ``names`` or its value is one that Click might read otherwise (empty, or
    starting with a dash)."""
    name, eq, value = args[i].partition("=")
    if name not in names or (eq and not name.startswith("--")):
        return None
    if not eq:
        if i + 1 >= len(args):
            return None
        value = args[i + 1]
        i += 1
    if not value or value.startswith("-"):
        return None
    return name, value, i + 1


def parse(args: list[str]) -> Parsed | None:
    """The command line when the fast path runs it as Click would, else None (Click runs it)."""
    found: dict[str, str] = {}
    as_json = False
    i = 0
    while i < len(args) and args[i].startswith("-"):
        if args[i] == "--json":
            as_json, i = True, i + 1
            continue
        got = _option(args, i, GLOBAL_VALUES)
        if got is None:  # --help, --version, --debug, or anything Click must judge
            return None
        found[GLOBAL_VALUES[got[0]]], i = got[1], got[2]
    if i >= len(args) or args[i] not in COMMAND_VALUES:
        return None
    command, rest = args[i], args[i + 1 :]
    own = COMMAND_VALUES[command]
    values: dict[str, str] = {}
    paths: list[str] = []
    j = 0
    while j < len(rest):
        arg = rest[j]
        if arg == "--":
            paths += rest[j + 1 :]
            break
        if not arg.startswith("-") or arg == "-":
            paths.append(arg)
            j += 1
            continue
        if arg == "--json":
            as_json, j = True, j + 1
            continue
        if arg in COMMAND_FLAGS.get(command, ()):
            values[SHORT.get(arg, arg).lstrip("-").replace("-", "_")] = "1"
            j += 1
            continue
        got = _option(rest, j, ("--session", "-s", *own))
        if got is None:
            return None
        name, value, j = got
        if name in ("--session", "-s"):
            found["session"] = value  # after the command, it wins (as in Click)
        elif value not in CHOICES.get(name, (value,)):
            return None  # Click says which values it takes
        else:
            values[name.lstrip("-").replace("-", "_")] = value
    if command in ONE_ARGUMENT:
        if len(paths) > 1 or (ONE_ARGUMENT[command][1] and not paths):
            return None
    elif bool(paths) != (command in WITH_PATHS):
        return None
    if "prompt" in values and "prompt_file" in values:
        return None
    root = found.get("root")
    if root is not None and os.path.isfile(root):  # Click's "is a file" usage error
        return None
    try:
        opts = Options(root=root, json=as_json, session=found.get("session"))
        if "lock_timeout" in found:
            opts.env.lock_timeout = lock_timeout(found["lock_timeout"], "--lock-timeout")
    except SnapstoreError:  # a bad SNAPSTORE_ variable or number: Click says
        return None
    return Parsed(command, opts, values, paths)


# -- the commands (the Click commands in commands.capture call these too) -------------------------


def _abs(paths: list[str] | tuple[str, ...]) -> list[str]:
    """CLI paths are relative to the current folder, as in git."""
    return [os.path.join(os.getcwd(), p) for p in paths]


def prompt_text(prompt: str | None, prompt_file: BinaryIO | None) -> str:
    """The prompt as text. Bytes that are not UTF-8 (in the file, or in the command line's
    argument) become U+FFFD, with a one-line warning: a prompt is only shown and handed back,
    and refusing it would lose the turn's start (docs/cli.md, `begin`)."""
    if prompt_file is not None:
        raw, source = prompt_file.read(), f"--prompt-file {prompt_file.name}"
    elif prompt is not None:
        raw, source = prompt.encode("utf-8", "surrogateescape"), "--prompt"
    else:
        return ""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        say(
            printable(
                f"snapstore: {source} is not valid UTF-8 (byte {exc.start}); invalid "
                "bytes are kept as U+FFFD",
                quote=False,
            )
        )
        return raw.decode("utf-8", "replace")


def begin(opts: Options, text: str, message_id: str | None) -> Output:
    session = opts.session_for()
    with runner.open_for_write(opts) as store:
        turn = store.begin_turn(session, text, message_id)
    return (
        {"session": session, "turn": turn.id},
        [(f"turn {turn.id} begun in session {printable(session)}", "")],
        [],
    )


def end(opts: Options) -> Output:
    session = opts.session_for()
    with runner.open_for_write(opts) as store:
        turn = store.end_turn(session)
        changes = len(store.changes(turn.id))
    return (
        {"session": session, "turn": turn.id, "changes": changes},
        [(f"turn {turn.id} ended with {changes} change(s)", "")],
        [],
    )


def pre_write(opts: Options, tool: str, paths: list[str] | tuple[str, ...]) -> Output:
    with runner.open_for_write(opts) as store:
        result = store.pre_write(_abs(paths), tool, opts.session_for())
    return _captured(result, "captured", "captured")


def post_write(opts: Options, paths: list[str] | tuple[str, ...]) -> Output:
    with runner.open_for_write(opts) as store:
        result = store.post_write(_abs(paths), opts.session_for())
    return _captured(result, "recorded", "recorded")


def _captured(result: CaptureResult, verb: str, key: str) -> Output:
    """A capture's output; in strict mode a path it could not capture fails the command,
    once the others are captured."""
    if result.refused and strict_hooks():
        raise result.refused[0]
    lines = [(f"{verb} {len(result.paths)} path(s) in turn {result.turn}", "")]
    warnings = [f"skipped {printable(path)}: {reason(why)}" for path, why in result.skipped]
    return (
        {
            "session": result.session,
            "turn": result.turn,
            key: result.paths,
            "skipped": [{"path": p, "reason": r} for p, r in result.skipped],
        },
        lines,
        warnings,
    )


def scan(
    opts: Options,
    max_file_size: str | None,
    no_watcher: bool,
    progress: Callable[[str, int, int], None] | None = None,
) -> ScanResult:
    """``snapstore scan``: record what changed in the workspace since the last scan."""
    from ..settings.values import parse_size

    with runner.open_for_write(opts) as store:
        if max_file_size:
            store.max_file_size = parse_size(max_file_size, "--max-file-size")
        return store.scan(opts.session, progress=progress, use_watcher=not no_watcher)


def show(output: Output, as_json: bool, echo: Callable[[str], None] | None = None) -> None:
    """Print a command's output on stdout: its JSON document, or its lines for people (and
    its warnings on stderr)."""
    data, lines, warnings = output
    if as_json:
        text = json.dumps(data, indent=2, default=str)
        if echo is not None:
            echo(text)
        else:
            sys.stdout.write(text + "\n")
        return
    if callable(lines):
        lines()
    else:
        for text, style in lines:
            tell(text, style)
    for warning in warnings:
        say(f"snapstore: {warning}", "yellow")


# -- running one -------------------------------------------------------------------------


def _run(parsed: Parsed) -> Output:
    opts, values = parsed.options, parsed.values
    if parsed.command == "begin":
        prompt_file = values.get("prompt_file")
        if prompt_file is None:
            return begin(opts, prompt_text(values.get("prompt"), None), values.get("message_id"))
        with (
            open(sys.stdin.fileno(), "rb", closefd=False)
            if prompt_file == "-"
            else open(prompt_file, "rb")
        ) as handle:
            return begin(opts, prompt_text(None, handle), values.get("message_id"))
    if parsed.command == "end":
        return end(opts)
    if parsed.command == "scan":
        result = scan(opts, values.get("max_file_size"), "no_watcher" in values)
        from ..output.results import scan_summary

        return result.to_json(), lambda: scan_summary(result), []
    if parsed.command == "pre-write":
        return pre_write(opts, values.get("tool", ""), parsed.paths)
    return post_write(opts, parsed.paths)


def _openable(parsed: Parsed) -> bool:
    """Whether ``--prompt-file`` opens (else Click reports it, as a usage error)."""
    path = parsed.values.get("prompt_file")
    if path is None or path == "-":
        return True
    try:
        os.close(os.open(path, os.O_RDONLY))
    except OSError:
        return False
    return not os.path.isdir(path)


def _move(parsed: Parsed) -> tuple[int, bool]:
    """``rewind TURN``, ``undo`` or ``redo``, through the operation layer: the exit code, and
    whether the workspace's daemon made the move (``route``: then neither the store nor the
    rewind is loaded here)."""
    from ..operations.requests import Move
    from ..output.results import report
    from . import route

    opts, values = parsed.options, parsed.values
    move = Move(
        cast("Action", parsed.command),
        next(iter(parsed.paths), None),
        opts.session,
        mode=cast("Mode", values.get("mode", BOTH)),
        on_conflict=cast("Policy", values.get("on_conflict", SKIP)),
        dry_run="dry_run" in values,
        force="force" in values,
        git="no_git" not in values,
    )
    routed = route.perform(opts, move)
    if routed is not None:
        code = report(routed[0], opts.json)
        for note in routed[1]:
            runner.tell(note)
        return code, True
    from ..operations.context import Context
    from ..operations.moves import perform

    return report(perform(Context.of(opts), move), opts.json), False


def _asks(parsed: Parsed) -> bool:
    """Whether Click's command would ask a person first (a rewind without --yes or --dry-run,
    on a terminal): its confirmation prompt is Click's."""
    values = parsed.values
    if parsed.command != "rewind" or "yes" in values or "dry_run" in values:
        return False
    return sys.stdin.isatty() and sys.stdout.isatty() and not parsed.options.json


def run(args: list[str]) -> int | None:
    """Run the command line when the fast path can; its exit code, or None for Click."""
    parsed = parse(args)
    if parsed is None or not _openable(parsed) or _asks(parsed):
        return None
    if parsed.command == "scan" and not parsed.options.json and sys.stderr.isatty():
        return None  # a person may watch a long scan: Click's command draws its progress
    opts = parsed.options
    code = [0]  # a move's own: 1 when it left a path not put back
    routed = [False]  # made by the workspace's daemon, which ran the automatic gc

    def work() -> None:
        if parsed.command in ONE_ARGUMENT:
            code[0], routed[0] = _move(parsed)
        else:
            show(_run(parsed), opts.json)

    return runner.run(opts, work, lambda: parsed.command, here=lambda: not routed[0]) or code[0]
