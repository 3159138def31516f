"""Commands that set up a store and capture turns: init, begin, end, pre-write, post-write.

The capture commands' work is in ``snapstore_cli.fast``, which runs them without Click
for agents' wrappers; these Click commands serve everything else (``--help``, usage
errors, ``--debug``) with the same output.
"""

from __future__ import annotations

import os
from typing import Any, BinaryIO

import click

from snapstore.core.db import data_file

from ....operations.setup import unrecorded_line
from ....output.plain import say
from ....output.rich import console, printable
from ....settings.config import Config
from ....settings.trust import Unrecorded
from ... import fast
from ..app import common_options, emit, options
from .scan import track_shell_on


@click.command()
@click.option(
    "--track-shell/--no-track-shell",
    default=None,
    help="Scan mode, the default: also catch what shell commands change (records the "
    "baseline now); --no-track-shell leaves it off.",
)
@common_options
def init(track_shell: bool | None) -> None:
    """Create the store in the current folder (or --root); safe to run again."""
    opts = options()
    root = os.path.realpath(opts.root or os.getcwd())
    store_dir = opts.env.store_dir_for(root)
    assert store_dir is not None
    created = not os.path.exists(data_file(store_dir))
    with opts.open_store(create=True) as store:
        excluded = store.exclude_from_git()
        data: dict[str, Any] = {"root": store.root, "store": store.store_dir, "created": created}
        data["not_used"] = unused = _not_used(store.store_dir)
        # by default, a config snapstore did not write here is left as it is (the lines
        # above say why); asked for, scan mode is refused there with the reason
        if track_shell is None:
            track_shell = Config.load(store.store_dir).refused is None
        try:
            baseline = track_shell_on(store) if track_shell else None
        except Unrecorded as exc:  # a read-only HOME, another user's under sudo: the store
            baseline = None  # works, with the defaults; scan mode needs the settings file
            data["warnings"] = [unrecorded_line(exc)]
            say(f"snapstore: {printable(data['warnings'][0], quote=False)}")
        if baseline is not None:
            data["scan"] = baseline.to_json()
        data["track_shell"] = shell = Config.load(store.store_dir).track_shell

    def human() -> None:
        out = console()
        out.print(
            f"{'Created' if created else 'Found'} the snapstore store in {printable(data['store'])}"
        )
        if excluded:
            out.print("Added it to .git/info/exclude", style="dim")
        for line in unused:  # a warning, beside the result
            say(printable(line, quote=False))
        if baseline is not None:
            from .scan import scan_summary

            scan_summary(baseline)
        if shell:
            out.print(
                "Scan mode is on: hooks scan around each turn and each shell call "
                "(`snapstore hook install AGENT` hooks the agent's shell tool)"
            )

    emit(data, human)


def _not_used(store_dir: str) -> list[str]:
    """What the store folder already holds that snapstore will not use (a clone brought it):
    the settings files this user did not write here, one line each."""
    from ....settings.config import Config
    from ....settings.trust import SECRET_FILE, trusted

    lines = []
    config = Config.load(store_dir)
    if config.refused is not None:
        lines.append(
            f"Found {os.path.join(store_dir, 'config')}, not written by snapstore for you here: "
            "not used until you review it and run `snapstore config trust`"
        )
        lines += [f"  not used: {what}" for what in (config.found or config).describe()]
    if not trusted(store_dir, SECRET_FILE):
        lines.append(
            f"Found {os.path.join(store_dir, SECRET_FILE)}, not made by snapstore for you here: "
            "not used (remove it: `snapstore serve` makes a new one)"
        )
    return lines


@click.command()
@click.option("--prompt", "prompt", metavar="TEXT", help="The user's message.")
@click.option("--prompt-file", type=click.File("rb"), help="Read the user's message from a file.")
@click.option("--message-id", metavar="ID", help="The agent's id for the message.")
@common_options
def begin(prompt: str | None, prompt_file: BinaryIO | None, message_id: str | None) -> None:
    """Open a turn for the user's message."""
    if prompt is not None and prompt_file is not None:
        raise click.UsageError("give --prompt or --prompt-file, not both")
    opts = options()
    _show(fast.begin(opts, fast.prompt_text(prompt, prompt_file), message_id))


@click.command()
@common_options
def end() -> None:
    """Close the open turn, recording what any captured file now holds."""
    _show(fast.end(options()))


@click.command("pre-write")
@click.option("--tool", default="", metavar="NAME", help="The agent tool about to write.")
@click.argument("paths", nargs=-1, required=True)
@common_options
def pre_write(tool: str, paths: tuple[str, ...]) -> None:
    """Capture the current bytes of PATHS before the agent writes them."""
    _show(fast.pre_write(options(), tool, paths))


@click.command("post-write")
@click.argument("paths", nargs=-1, required=True)
@common_options
def post_write(paths: tuple[str, ...]) -> None:
    """Record what the agent wrote to PATHS."""
    _show(fast.post_write(options(), paths))


def _show(output: fast.Output) -> None:
    """The capture commands print as their fast path does (snapstore_cli.fast)."""
    fast.show(output, options().json, click.echo)
