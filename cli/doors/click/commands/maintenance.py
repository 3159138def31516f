"""Commands that keep a store healthy: gc (retention, compaction) and fsck (verification)."""

from __future__ import annotations

import sys
from typing import NoReturn

import click

from snapstore.core.errors import StoreDamaged
from snapstore.ops.fsck import FsckReport
from snapstore.ops.gc import GcPolicy, GcResult

from ....operations import failures
from ....output.rich import console, printable
from ....settings.config import Config
from ....settings.values import format_size
from ..app import Failure, common_options, emit, open_for_write, options
from ..params import Number, Size


@click.command()
@click.option(
    "--keep-days",
    type=Number("a number of days"),
    metavar="N",
    help="Drop turns older than N days (default 30, or [gc] keep_days).",
)
@click.option(
    "--keep-turns",
    type=Number("a number of turns", whole=True),
    metavar="N",
    help="Keep only the N newest turns of each session.",
)
@click.option(
    "--max-size",
    type=Size(),
    metavar="SIZE",
    help="A quota, e.g. 2GiB: drop the oldest turns until the store fits.",
)
@click.option("--dry-run", is_flag=True, help="Say what would go; change nothing.")
@common_options
def gc(
    keep_days: float | None, keep_turns: int | None, max_size: int | None, dry_run: bool
) -> None:
    """Drop old turns, delete the blobs nothing needs, and shrink the store file.

    Never dropped: an open turn, an interrupted rewind, and what the last
    rewind of each session needs to be undone.
    """
    with open_for_write() as store:
        config = Config.load(store.store_dir)
        policy = GcPolicy(
            keep_days=config.gc_keep_days if keep_days is None else keep_days,
            keep_turns=config.gc_keep_turns if keep_turns is None else keep_turns,
            max_size=config.gc_max_size if max_size is None else max_size,
        )
        result = store.gc(policy, dry_run=dry_run)
    emit(result.to_json(), lambda: _gc_human(result))


def _gc_human(result: GcResult) -> None:
    out = console()
    verb = "would remove" if result.dry_run else "removed"
    out.print(
        f"{verb} {len(result.removed_turns)} turn(s), {result.removed_blobs} blob(s); "
        f"{'about ' if result.dry_run else ''}{format_size(result.freed_bytes)} freed; "
        f"the store is {format_size(result.store_bytes)}"
    )
    for note in result.notes:
        out.print(f"note: {printable(note, quote=False)}", style="yellow")


@click.command()
@click.option(
    "--repair", is_flag=True, help="Drop what cannot be recovered, saying exactly what is lost."
)
@common_options
def fsck(repair: bool) -> None:
    """Verify every blob against its digest and every reference between records.

    Exits 5 when anything is wrong (also after --repair, which lists what it dropped).
    """
    try:
        store = options().open_store()
    except StoreDamaged as exc:
        _damaged(exc)
    with store:
        report = store.fsck(repair)
    emit(report.to_json(), lambda: _fsck_human(report))
    if not report.ok:
        sys.exit(5)


def _damaged(exc: StoreDamaged) -> NoReturn:
    """A data file LMDB must not map: the report names it (with --json), and the one line says
    what is wrong; nothing in the file is read."""
    path = exc.path
    report = FsckReport(corrupt=[{"kind": "data file", "key": path, "reason": str(exc)}])
    emit(report.to_json(), lambda: None)
    raise Failure(failures.message(exc, "fsck"), failures.exit_code(exc), exc.code)


def _fsck_human(report: FsckReport) -> None:
    out = console()
    for item in report.corrupt:
        out.print(
            printable(f"corrupt {item['kind']} {item['key'][:24]}: {item['reason']}", quote=False),
            style="red",
        )
    for item in report.dangling:
        out.print(
            printable(
                f"dangling {item['kind']} {item['key'][:40]}: {item['reason']} "
                f"({item['missing'][:24]})",
                quote=False,
            ),
            style="red",
        )
    for line in report.repaired:
        out.print(f"repaired: {printable(line, quote=False)}", style="yellow")
    for op in report.pending:
        out.print(
            f"interrupted rewind {op}: finish it with `snapstore rewind --resume`", style="yellow"
        )
    state = "ok" if report.ok else "FAILED"
    out.print(
        f"fsck {state}: {report.blobs_checked} blob(s) checked, {len(report.corrupt)} "
        f"corrupt, {len(report.dangling)} dangling"
    )
