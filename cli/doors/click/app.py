"""The Click application: global options, lazily loaded commands, usage errors and output.

Conventions (docs/cli.md): ``--json`` prints exactly one JSON document on stdout;
messages for people go to stderr; errors are one line, ``snapstore: <what
went wrong>``, with the exit code the library error carries; tracebacks only
with ``--debug``. Each command runs in ``runner``'s frame, as on the fast paths;
what is left here is Click's own: its usage errors, ``--help`` and cancelled prompts.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any

import click

from snapstore import SnapstoreError, Store, __version__
from snapstore.adapters import AGENT_NAMES

from ...operations import failures, runner
from ...output.plain import emit as print_document
from ...output.plain import reader_gone
from ...settings.options import Options
from .params import Number


def open_for_write() -> Store:
    """Open the store for a command that writes, first finishing any rewind a crash cut short."""
    return runner.open_for_write(options())


def print_start(first: str) -> None:
    """Tell a person, on stderr, that the store is new and how to start recording."""
    click.echo(
        "\n".join(
            [
                first,
                "To record your agent's turns, install its hooks in this project:",
                "  snapstore hook install AGENT",
                f"AGENT: {', '.join(AGENT_NAMES)}.",
            ]
        ),
        err=True,
    )


#: --session, before the command or after it.
SESSION_HELP = (
    "The session (default: $SNAPSTORE_SESSION, else 'default'; a command that reads or moves "
    "takes the most recently active one when there is no 'default'). A unique prefix of a "
    "session's name names it."
)


def options() -> Options:
    return click.get_current_context().ensure_object(Options)


def _set(name: str) -> Callable[[click.Context, click.Parameter, Any], None]:
    def callback(ctx: click.Context, _param: click.Parameter, value: Any) -> None:
        if value not in (None, False):
            setattr(ctx.ensure_object(Options), name, value)

    return callback


def common_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``--json`` and ``--session`` after the command name, as well as before it."""
    fn = click.option(
        "--json",
        "json_",
        is_flag=True,
        expose_value=False,
        callback=_set("json"),
        is_eager=True,
        help="Print one JSON document on stdout.",
    )(fn)
    return click.option(
        "--session",
        "-s",
        metavar="S",
        expose_value=False,
        callback=_set("session"),
        is_eager=True,
        shell_complete=complete_session,
        help=SESSION_HELP,
    )(fn)


class Failure(click.ClickException):
    """A library error on its way out: one line on stderr, and its exit code."""

    def __init__(self, message: str, exit_code: int, code: str = "error", as_json: bool = False):
        super().__init__(message)
        # click declares exit_code a class variable, yet sets it per instance itself (Exit)
        self.exit_code = exit_code  # type: ignore[misc]
        self.code = code
        self.as_json = as_json

    def show(self, file: Any = None) -> None:
        failures.report(self.message, self.exit_code, self.code, self.as_json)


#: Each command's module and name; a command's module is imported only when it runs.
COMMANDS = {
    "init": "commands.capture:init",
    "begin": "commands.capture:begin",
    "end": "commands.capture:end",
    "pre-write": "commands.capture:pre_write",
    "post-write": "commands.capture:post_write",
    "log": "commands.history:log",
    "show": "commands.history:show",
    "diff": "commands.history:diff",
    "cat": "commands.history:cat",
    "sessions": "commands.sessions:sessions",
    "ops": "commands.sessions:ops",
    "rewind": "commands.rewind:rewind",
    "undo": "commands.rewind:undo",
    "redo": "commands.rewind:redo",
    "switch": "commands.rewind:switch",
    "status": "commands.status:status",
    "scan": "commands.scan:scan_command",
    "watch": "commands.scan:watch",
    "gc": "commands.maintenance:gc",
    "fsck": "commands.maintenance:fsck",
    "hook": "commands.hook:hook",
    "demo": "commands.demo:demo",
    "doctor": "commands.doctor:doctor",
    "remote": "commands.remote:remote",
    "push": "commands.remote:push",
    "pull": "commands.remote:pull",
    "serve": "commands.serve:serve",
    "config": "commands.config:config",
    "ui": "commands.ui:ui",
    "mcp": "commands.mcp:mcp",
}


#: What Click reports itself (usage errors, ``--help``, a cancelled prompt, Ctrl-C as a
#: cancel), so the runner lets it through.
CLICKS_OWN = (click.ClickException, click.exceptions.Exit, click.Abort, KeyboardInterrupt)


class SnapstoreGroup(click.Group):
    """Loads commands lazily, and runs each in the runner's frame (errors, automatic gc)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        module, attr = COMMANDS[name].split(":")
        command: click.Command = getattr(importlib.import_module(f"{__package__}.{module}"), attr)
        return command

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """A mistyped command gets Click's "Did you mean" (it asks ``self.commands``, which a
        lazy group leaves empty)."""
        try:
            return super().resolve_command(ctx, args)
        except click.exceptions.NoSuchCommand as exc:
            raise click.exceptions.NoSuchCommand(
                exc.command_name, possibilities=list(COMMANDS), ctx=ctx
            ) from None

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        """Parse the global options; ``snapstore --help | head -1`` ends quietly, as a command
        in the runner's frame does (Click's own answer to a closed pipe is exit 1)."""
        try:
            return super().make_context(info_name, args, parent, **extra)
        except BrokenPipeError as exc:
            if not reader_gone(exc):
                raise
            raise click.exceptions.Exit(0) from None

    def invoke(self, ctx: click.Context) -> int:
        return runner.run(
            ctx.ensure_object(Options),
            lambda: super(SnapstoreGroup, self).invoke(ctx),
            lambda: ctx.invoked_subcommand,
            passthrough=CLICKS_OWN,
        )


def complete_turn(
    ctx: click.Context, _param: click.Parameter, incomplete: str
) -> list[click.shell_completion.CompletionItem]:
    """Shell completion for TURN: the session's rewind points, with their prompts."""
    from click.shell_completion import CompletionItem

    opts = ctx.find_object(Options) or Options()
    try:
        with opts.open_store() as store:
            points = store.rewind_points(opts.session_for(store))
    except Exception:  # completion must never print a traceback into the shell
        return []
    items = []
    for point in points:
        prompt = (point.turn.prompt.strip().splitlines() or [""])[0][:60]
        for value in (str(point.n), point.turn.id):
            if value.startswith(incomplete):
                items.append(CompletionItem(value, help=prompt))
                break
    return items


def complete_session(
    ctx: click.Context, _param: click.Parameter, incomplete: str
) -> list[click.shell_completion.CompletionItem]:
    """Shell completion for --session: the store's sessions, the most recently active first."""
    from click.shell_completion import CompletionItem

    opts = ctx.find_object(Options) or Options()
    try:
        with opts.open_store() as store:
            listed = store.sessions()
    except Exception:  # completion must never print a traceback into the shell
        return []
    return [
        CompletionItem(s.name, help=f"{s.turns} turn(s)")
        for s in listed
        if s.name.startswith(incomplete)
    ]


def complete_operation(
    ctx: click.Context, _param: click.Parameter, incomplete: str
) -> list[click.shell_completion.CompletionItem]:
    """Shell completion for an operation id: the rewinds and switches not undone yet."""
    return _complete_ops(ctx, incomplete, lambda op: op.undoes is None and op.undone_by is None)


def complete_undo(
    ctx: click.Context, _param: click.Parameter, incomplete: str
) -> list[click.shell_completion.CompletionItem]:
    """Shell completion for an undo id: the undos not redone yet."""
    return _complete_ops(ctx, incomplete, lambda op: op.undoes is not None and not op.redone_by)


def _complete_ops(
    ctx: click.Context, incomplete: str, wanted: Callable[[Any], bool]
) -> list[click.shell_completion.CompletionItem]:
    from click.shell_completion import CompletionItem

    opts = ctx.find_object(Options) or Options()
    try:
        with opts.open_store() as store:
            listed = store.operations(opts.session)
    except Exception:  # completion must never print a traceback into the shell
        return []
    return [
        CompletionItem(op.id, help=f"{op.action} of {op.target or '-'} in {op.session}")
        for op in listed
        if wanted(op) and op.id.startswith(incomplete)
    ]


def emit(data: Any, human: Callable[[], None]) -> None:
    """Print ``data`` as JSON with ``--json``, else call ``human`` to render it."""
    print_document(options().json, data, human)


@click.group(cls=SnapstoreGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--root",
    metavar="DIR",
    type=click.Path(file_okay=False),
    help="The workspace (default: the nearest folder above holding .snapstore/).",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout.")
@click.option(
    "--session",
    "-s",
    metavar="S",
    shell_complete=complete_session,
    help=SESSION_HELP,
)
@click.option(
    "--lock-timeout",
    type=Number("a number of seconds to wait for a busy store"),
    metavar="SECONDS",
    help="How long to wait for a busy store (default 10, or $SNAPSTORE_LOCK_TIMEOUT).",
)
@click.option("--debug", is_flag=True, help="Show tracebacks.")
@click.version_option(__version__, prog_name="snapstore")
@click.pass_context
def cli(
    ctx: click.Context,
    root: str | None,
    as_json: bool,
    session: str | None,
    lock_timeout: float | None,
    debug: bool,
) -> None:
    """snapstore: the undo layer for AI coding agents.

    Capture files before an agent writes them, then rewind any turn: exact
    bytes where the agent's write is intact, a three-way merge that keeps your
    own edits where it is not, and an undo for every rewind.
    """
    opts = ctx.ensure_object(Options)
    opts.root = root
    opts.json = opts.json or as_json
    opts.debug = debug
    if session:
        opts.session = session
    if lock_timeout is not None:
        opts.env.lock_timeout = lock_timeout


def _asks_for_json(args: list[str]) -> bool:
    """Whether the command line holds ``--json`` (before a ``--``), wherever it stands: a usage
    error can stop Click before it reads the option, and still owes one JSON document."""
    return "--json" in (args[: args.index("--")] if "--" in args else args)


def run(args: list[str]) -> None:
    """Run the application; every error ends as one line on stderr and an exit code."""
    try:
        code = cli.main(args=args, prog_name="snapstore", standalone_mode=False)
    except click.UsageError as exc:
        ctx = exc.ctx
        where = ctx.command_path if ctx is not None else "snapstore"
        opts = ctx.find_object(Options) if ctx is not None else None
        as_json = bool(opts and opts.json) or _asks_for_json(args)
        Failure(
            f"{exc.format_message()} (see `{where} --help`)", exc.exit_code, "usage", as_json
        ).show()
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except SnapstoreError as exc:  # before any command: a SNAPSTORE_ variable it cannot use
        text, code, kind = runner.failure(exc)
        Failure(text, code, kind, _asks_for_json(args)).show()
        sys.exit(code)
    except click.Abort:
        click.echo("snapstore: cancelled; nothing changed", err=True)
        sys.exit(1)
    except KeyboardInterrupt:
        click.echo("snapstore: interrupted", err=True)
        sys.exit(130)
    sys.exit(code if isinstance(code, int) else 0)
