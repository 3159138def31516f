"""Commands that set up a store and capture turns: init, begin, end, pre-write, post-write."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, BinaryIO

import click

from snapstore.db import data_file

if TYPE_CHECKING:
    from snapstore import Store
    from snapstore.scan import ScanResult

from .app import common_options, emit, open_resuming, options
from .render import console, printable


def _abs(paths: tuple[str, ...]) -> list[str]:
    """CLI paths are relative to the current folder, as in git."""
    return [os.path.join(os.getcwd(), p) for p in paths]


@click.command()
@click.option("--track-shell", is_flag=True,
              help="Scan mode: also catch what shell commands change (records the baseline now).")
@common_options
def init(track_shell: bool) -> None:
    """Create the store in the current folder (or --root); safe to run again."""
    opts = options()
    root = os.path.realpath(opts.root or os.getcwd())
    store_dir = opts.env.store_dir_for(root)
    assert store_dir is not None
    created = not os.path.exists(data_file(store_dir))
    with opts.open_store(create=True) as store:
        excluded = store.exclude_from_git()
        data = {"root": store.root, "store": store.store_dir, "created": created}
        baseline = _track_shell(store) if track_shell else None
        if baseline is not None:
            data["scan"] = baseline.to_json()
    def human() -> None:
        out = console(stderr=True)
        out.print(f"{'Created' if created else 'Found'} the snapstore store in "
                  f"{printable(data['store'])}")
        if excluded:
            out.print("Added it to .git/info/exclude", style="dim")
        if baseline is not None:
            from .cmd_scan import scan_summary
            scan_summary(baseline)
            out.print("Scan mode is on: hooks scan around each turn and each shell call. "
                      "Run `snapstore hook install AGENT` (again) so they see the shell tool")
    emit(data, human)


def _track_shell(store: Store) -> ScanResult:
    """Turn scan mode on in the store's config and record the baseline, with a progress bar."""
    from .cmd_scan import scan_progress
    from .settings import Config

    config = Config.load(store.store_dir)
    config.track_shell = True
    config.save(store.store_dir)
    with scan_progress(not options().json) as progress:
        return store.scan(progress=progress, use_watcher=False)


def _prompt_text(prompt: str | None, prompt_file: BinaryIO | None) -> str:
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
        console(stderr=True).print(printable(
            f"snapstore: {source} is not valid UTF-8 (byte {exc.start}); invalid bytes are "
            "kept as U+FFFD", quote=False))
        return raw.decode("utf-8", "replace")


@click.command()
@click.option("--prompt", "prompt", metavar="TEXT", help="The user's message.")
@click.option("--prompt-file", type=click.File("rb"), help="Read the user's message from a file.")
@click.option("--message-id", metavar="ID", help="The agent's id for the message.")
@common_options
def begin(prompt: str | None, prompt_file: BinaryIO | None, message_id: str | None) -> None:
    """Open a turn for the user's message."""
    if prompt is not None and prompt_file is not None:
        raise click.UsageError("give --prompt or --prompt-file, not both")
    text = _prompt_text(prompt, prompt_file)
    opts = options()
    session = opts.session_for()
    with open_resuming() as store:
        turn = store.begin_turn(session, text, message_id)
    emit({"session": session, "turn": turn.id},
         lambda: console(stderr=True).print(
             f"turn {turn.id} begun in session {printable(session)}"))


@click.command()
@common_options
def end() -> None:
    """Close the open turn, recording what any captured file now holds."""
    opts = options()
    session = opts.session_for()
    with open_resuming() as store:
        turn = store.end_turn(session)
        changes = len(store.changes(turn.id))
    emit({"session": session, "turn": turn.id, "changes": changes},
         lambda: console(stderr=True).print(f"turn {turn.id} ended with {changes} change(s)"))


@click.command("pre-write")
@click.option("--tool", default="", metavar="NAME", help="The agent tool about to write.")
@click.argument("paths", nargs=-1, required=True)
@common_options
def pre_write(tool: str, paths: tuple[str, ...]) -> None:
    """Capture the current bytes of PATHS before the agent writes them."""
    opts = options()
    with open_resuming() as store:
        result = store.pre_write(_abs(paths), tool, opts.session_for())
    emit({"session": result.session, "turn": result.turn, "captured": result.paths},
         lambda: console(stderr=True).print(
             f"captured {len(result.paths)} path(s) in turn {result.turn}"))


@click.command("post-write")
@click.argument("paths", nargs=-1, required=True)
@common_options
def post_write(paths: tuple[str, ...]) -> None:
    """Record what the agent wrote to PATHS."""
    opts = options()
    with open_resuming() as store:
        result = store.post_write(_abs(paths), opts.session_for())
    def human() -> None:
        out = console(stderr=True)
        out.print(f"recorded {len(result.paths)} path(s) in turn {result.turn}")
        for path, reason in result.skipped:
            out.print(f"  skipped {printable(path)}: {printable(reason, quote=False)}",
                      style="yellow")
    emit({"session": result.session, "turn": result.turn, "recorded": result.paths,
          "skipped": [{"path": p, "reason": r} for p, r in result.skipped]}, human)
