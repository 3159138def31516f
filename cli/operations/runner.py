"""One command's frame, the same for every front end: the Click application (``app``), the
capture commands without Click (``fast``), the hook command (``hooks``) and ``snapstore
serve`` (``daemon``). Each front end parses its own input and prints its own output; what a
command owes around its work is here, once:

- a reader that goes away (``| head``) ends the command quietly, exit 0, as git does;
- a failure is one line, ``snapstore: <what went wrong>`` with its hint, and the exit code of
  ``failures`` (docs/cli.md); with ``--json`` also one JSON document on stdout saying so. An
  error that is not snapstore's is an internal error, with a traceback only under ``--debug``;
- a command that writes first finishes any rewind a crash cut short (:func:`open_for_write`);
- after a command that adds to the store, the automatic gc runs when the store passed its
  quota; after an agent's turn ends, the automatic gc and the automatic push
  (:func:`record`).

Click-free, and light to load: the hook and capture paths import it (tests/e2e/test_startup.py
pins what they load), and ``failures``, ``autogc`` and ``autopush`` only when they are needed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from snapstore import SnapstoreError

if TYPE_CHECKING:
    from snapstore import Store
    from snapstore.adapters import HookAction

    from ..settings.config import Config
    from ..settings.options import Options

#: Commands after which the store may have grown past its quota.
WRITES = frozenset({"begin", "end", "pre-write", "post-write", "rewind", "undo", "switch", "scan"})
#: What an internal error adds on a command line, where ``--debug`` exists.
DEBUG_HINT = " (run with --debug for the traceback)"


class Relayed(Exception):
    """A failure another process worded (``snapstore serve``, for a move it was handed): what
    it says, its exit code and its JSON code, reported here as that process found them."""

    def __init__(self, text: str, exit_code: int, code: str):
        super().__init__(text)
        self.text, self.exit_code, self.code = text, exit_code, code


def failure(exc: BaseException, command: str | None = None) -> tuple[str, int, str]:
    """What an error says after ``snapstore: `` (worded for ``command``), its exit code, and
    its code in a JSON error document. An error that is not snapstore's is an internal one."""
    from . import failures

    if isinstance(exc, Relayed):
        return exc.text, exc.exit_code, exc.code
    if isinstance(exc, SnapstoreError):
        return failures.message(exc, command), failures.exit_code(exc), exc.code
    return f"internal error: {exc!r}", 1, "internal"


def run(
    opts: Options,
    work: Callable[[], object],
    command: Callable[[], str | None],
    passthrough: tuple[type[BaseException], ...] = (),
    here: Callable[[], bool] = lambda: True,
) -> int:
    """Run one command line's ``work``; its exit code.

    ``command`` names the command once the front end knows it (for the hint's wording and the
    automatic gc). Errors in ``passthrough`` are the front end's to report. ``here`` says
    whether the work was done in this process: a move ``snapstore serve`` made ran its
    automatic gc there.
    """
    try:
        work()
    except passthrough:
        raise
    except KeyboardInterrupt:
        tell("interrupted")
        return 130
    except Exception as exc:
        from ..output.plain import reader_gone

        if reader_gone(exc):  # `| head` went away: what was printed stands, quietly
            return 0
        if opts.debug:
            raise
        from . import failures

        text, code, kind = failure(exc, command())
        failures.report(text + DEBUG_HINT if kind == "internal" else text, code, kind, opts.json)
        return code
    if command() in WRITES and here():
        from . import autogc

        note = autogc.after_command(opts)
        if note is not None:
            tell(note)
    return 0


def resume(store: Store, run_agents: bool = True) -> list[str]:
    """Finish the rewinds a crash cut short (before anything else writes); a note for each.
    Without ``run_agents`` (a hook event), one that must run an agent's CLI waits for the
    next command."""
    if not store.unfinished_operations():
        return []
    return [
        f"finished interrupted operation {result.undo_id} "
        f"({len(result.restored) + len(result.merged) + len(result.deleted)} file(s), "
        f"{len(result.errors)} left alone)"
        for result in store.resume(run_agents)
    ]


def open_for_write(opts: Options) -> Store:
    """Open the store for a command that writes, first finishing any rewind a crash cut
    short, and saying so on stderr."""
    store = opts.open_store()
    try:
        for note in resume(store):
            tell(note)
    except BaseException:
        store.close()
        raise
    return store


def tell(text: str) -> None:
    """One line for people on stderr, after ``snapstore: `` (its output module is not loaded
    on the hook path)."""
    from ..output.plain import say

    say(f"snapstore: {text}")


def record(
    store: Store,
    config: Config,
    action: HookAction,
    strict: bool = False,
    agent: tuple[int, int] | None = None,
) -> list[str]:
    """Record one hook event (the hook command's and ``snapstore serve``'s alike): finish a
    rewind a crash cut short, apply the event, and at a turn's end run the automatic gc and
    push that the store's config asks for. Returns the warnings to show.

    With ``strict``, a path that could not be captured fails the event (raised), once
    every other path of it is captured. ``agent``: the process that runs the hook's agent
    (a command hook's; the daemon has none), kept with the session at each prompt."""
    from snapstore.adapters import BEGIN, END, apply  # loaded: the event was parsed with it

    resume(store, run_agents=False)  # the user did not ask for it: nothing to tell them
    outcome = apply(store, action, scan=config.track_shell)
    if strict and outcome.refused:
        raise outcome.refused[0]
    warnings = list(outcome.warnings)
    if action.kind == BEGIN and (config.track_shell or agent is not None):
        from .lifecycle import session_started  # the daemon lives while sessions do

        session_started(store.store_dir, action.session, agent)
    elif action.kind == END and action.event in ("SessionEnd", "sessionEnd"):  # not a turn end
        from .lifecycle import session_ended

        session_ended(store.store_dir, action.session)
    if action.kind == END and config.gc_auto:
        from . import autogc

        note = autogc.run_if_due(store, config)
        if note is not None:
            warnings.append(note)
    if action.kind == END and config.auto_push:
        from . import autopush

        try:
            autopush.start(store.store_dir, store.root, config.auto_push)
        except OSError as exc:
            warnings.append(f"automatic push could not start: {exc}")
    return warnings
