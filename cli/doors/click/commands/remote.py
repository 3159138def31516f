"""Remotes: `remote add|list|remove|log|fsck|gc`, `push` and `pull` (docs/remote.md).

Credentials come from AWS's standard chain: the environment's keys are passed to
the library here (it reads no environment), and without them botocore resolves
profiles and roles. snapstore never stores or prints one. A remote at fault is
exit 6, with the local store and the workspace untouched.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys

import click

from snapstore import BadInput, NotFound, Store
from snapstore.remote import ObjectStore
from snapstore.remote.sync.push import SyncResult

from ....output.plain import printable
from ....output.rich import console
from ....settings.config import Config, set_remote
from ....settings.values import format_size
from ..app import common_options, emit, open_for_write, options
from ..params import Number

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def open_remote(config: Config, name: str, check_writes: bool = True) -> ObjectStore:
    """The object store behind the configured remote ``name``."""
    from snapstore.remote import (
        AwsChain,
        from_environment,
        open_object_store,
        region_from_environment,
    )

    settings = config.remotes.get(name)
    if settings is None:
        known = ", ".join(sorted(config.remotes)) or "none"
        raise NotFound(f"no remote named {name!r} (configured: {known})", remote=name)
    url = settings["url"]
    credentials = None
    if url.startswith("s3://"):
        credentials = from_environment(os.environ) or AwsChain(os.environ.get("AWS_PROFILE"))
    return open_object_store(
        url,
        endpoint_url=settings.get("endpoint_url") or None,
        region=region_from_environment(os.environ),
        credentials=credentials,
        name=name,
        conditional_writes=settings.get("conditional_writes", "true") == "true",
    )


def _choose(config: Config, name: str | None) -> str:
    """NAME, or the only remote when there is one (of a config written here)."""
    config.require_trusted()
    if name is not None:
        return name
    if len(config.remotes) == 1:
        return next(iter(config.remotes))
    if not config.remotes:
        raise NotFound("no remote is configured (add one with `snapstore remote add NAME URL`)")
    raise BadInput(f"name the remote: {', '.join(sorted(config.remotes))}")


@click.group()
def remote() -> None:
    """Remotes: S3 buckets or folders that turns are pushed to and pulled from."""


@remote.command("add")
@click.argument("name")
@click.argument("url")
@click.option("--endpoint-url", metavar="U", help="An S3-compatible server (MinIO, R2, ...).")
@click.option("--no-check", is_flag=True, help="Do not contact the remote now.")
@click.option(
    "--auto-push", is_flag=True, help="Push there at every turn's end ([remote] auto_push)."
)
@common_options
def add(name: str, url: str, endpoint_url: str | None, no_check: bool, auto_push: bool) -> None:
    """Register a remote: s3://BUCKET[/PREFIX] or file:///PATH."""
    from snapstore.remote import parse_url

    if not _NAME.fullmatch(name):
        raise BadInput(f"a remote name is letters, digits, '.', '_' and '-': {name!r}")
    parsed = str(parse_url(url))
    store_dir = options().store_dir()
    with options().open_store():
        pass  # the store must exist
    assert store_dir is not None
    settings = {"url": parsed, "conditional_writes": "true"}
    if endpoint_url:
        settings["endpoint_url"] = endpoint_url
    probe = Config(remotes={name: settings})
    if not no_check:
        with open_remote(probe, name) as store:
            capabilities = store.check()
        settings["conditional_writes"] = str(capabilities.conditional_writes).lower()
    set_remote(store_dir, name, settings, auto_push=auto_push)
    note = (
        ""
        if settings["conditional_writes"] == "true"
        else " (it ignores create-only writes; snapstore checks by reading back)"
    )
    emit(
        {
            "name": name,
            "url": parsed,
            "conditional_writes": settings["conditional_writes"] == "true",
            "auto_push": auto_push,
        },
        lambda: console().print(
            f"remote {name} → {parsed}{note}{'; pushed to at every turn end' if auto_push else ''}"
        ),
    )


@remote.command("list")
@common_options
def list_remotes() -> None:
    """The configured remotes."""
    store_dir = options().store_dir()
    config = Config.load(store_dir) if store_dir else Config()
    config.require_trusted()
    rows = [
        {
            "name": n,
            "url": s["url"],
            "endpoint_url": s.get("endpoint_url"),
            "auto_push": config.auto_push == n,
        }
        for n, s in sorted(config.remotes.items())
    ]

    def human() -> None:
        out = console()
        for row in rows:
            extra = f" ({row['endpoint_url']})" if row["endpoint_url"] else ""
            out.print(
                f"{row['name']}\t{row['url']}{extra}{'  [auto push]' if row['auto_push'] else ''}",
                markup=False,
            )

    emit(rows, human)


@remote.command("remove")
@click.argument("name")
@common_options
def remove(name: str) -> None:
    """Forget a remote (its data stays where it is)."""
    store_dir = options().store_dir()
    assert store_dir is not None
    config = Config.load(store_dir)
    config.require_trusted()
    if name not in config.remotes:
        raise NotFound(f"no remote named {name!r}", remote=name)
    set_remote(store_dir, name, None)
    emit({"name": name}, lambda: console().print(f"forgot remote {name}"))


@remote.command("log")
@click.argument("name", required=False)
@common_options
def remote_log(name: str | None) -> None:
    """The remote's sessions and turns, newest first."""
    with options().open_store() as store:
        config = Config.load(store.store_dir)
        with open_remote(config, _choose(config, name)) as remote_store:
            entries = store.remote_log(remote_store)

    def human() -> None:
        out = console()
        for e in entries:
            prompt = printable((e.prompt.strip().splitlines() or [""])[0][:60], quote=False)
            out.print(
                f"{e.turn}  {printable(e.session)}@{e.origin[:8]}  {e.files} file(s)  "
                f"{e.state}  {prompt}",
                markup=False,
            )
        if not entries:
            out.print("the remote holds no turns")

    emit([e.to_json() for e in entries], human)


@remote.command("fsck")
@click.argument("name", required=False)
@common_options
def remote_fsck(name: str | None) -> None:
    """Verify every object on the remote against its digest, and every reference.

    Exits 6 when anything is wrong: the remote is at fault.
    """
    with options().open_store() as store:
        config = Config.load(store.store_dir)
        with open_remote(config, _choose(config, name)) as remote_store:
            report = store.remote_fsck(remote_store)

    def human() -> None:
        out = console()
        for item in report.corrupt:
            out.print(f"corrupt {item['key']}: {item['reason']}", style="red", markup=False)
        for item in report.dangling:
            out.print(f"dangling {item['key']}: {item['reason']}", style="red", markup=False)
        out.print(
            f"remote fsck {'ok' if report.ok else 'FAILED'}: {report.packs} pack(s), "
            f"{report.blobs} blob(s), {report.turns} turn(s), {report.states} state(s); "
            f"{report.unreferenced} unreferenced pack(s) for `remote gc`"
        )

    emit(report.to_json(), human)
    if not report.ok:
        sys.exit(6)


@remote.command("gc")
@click.argument("name", required=False)
@click.option(
    "--keep-days",
    type=Number("a number of days"),
    metavar="N",
    help="Drop the remote's turns older than N days (default: keep every turn).",
)
@click.option(
    "--grace-hours",
    type=Number("a number of hours"),
    default=24.0,
    show_default=True,
    metavar="H",
    help="Unreferenced packs are condemned after H hours, deleted H "
    "hours later (longer than any push).",
)
@common_options
def remote_gc(name: str | None, keep_days: float | None, grace_hours: float) -> None:
    """Drop old turns from the remote and reclaim what nothing needs."""
    with options().open_store() as store:
        config = Config.load(store.store_dir)
        with open_remote(config, _choose(config, name)) as remote_store:
            result = store.remote_gc(remote_store, keep_days, grace_hours * 3600)
    emit(
        result.to_json(),
        lambda: console().print(
            f"removed {result.removed_turns} turn(s) and {result.removed_packs} pack(s), "
            f"{format_size(result.removed_bytes)}; condemned {result.condemned_packs} pack(s)"
        ),
    )


def _heap_returns_big_blocks() -> None:
    """Keep glibc handing blocks of 1 MiB and more (packs, chunks) to mmap, so that each
    goes back to the system when freed. By default glibc raises that threshold after the
    first such block is freed, and a pull's freed packs and chunks then stay resident in
    the heap: a pull of a 1 GB file held 79 MiB over the floor. Fresh mappings cost page
    faults (a 300 MB pull: 1.0 s and 80 MB of anonymous memory without this, 1.5 s and
    58 MB with it); a push, well within the bound, keeps the default."""
    import ctypes  # pull only: the hooks never pay for it

    with contextlib.suppress(OSError, AttributeError):  # not glibc: nothing to set
        ctypes.CDLL(None).mallopt(-3, 1024 * 1024)  # M_MMAP_THRESHOLD (glibc's malloc.h)


def _sessions(store: Store, everything: bool) -> list[str] | None:
    if everything:
        return None
    return [options().session_for(store)]


def _sync_human(verb: str, result: SyncResult) -> None:
    out = console()
    out.print(
        f"{verb} {result.turns} turn(s) and {result.blobs} blob(s) "
        f"({format_size(result.bytes)}, {result.requests} request(s)) for "
        f"{len(result.sessions)} session(s): {result.remote}",
        markup=False,
    )
    for warning in result.warnings:
        out.print(f"warning: {warning}", style="yellow", markup=False)


@click.command()
@click.argument("name", required=False)
@click.option("--all", "everything", is_flag=True, help="Every session, not just one.")
@common_options
def push(name: str | None, everything: bool) -> None:
    """Upload the session's turns (or every session's) and the blobs the remote lacks."""
    with open_for_write() as store:
        config = Config.load(store.store_dir)
        sessions = _sessions(store, everything)
        with open_remote(config, _choose(config, name)) as remote_store:
            result = store.push(remote_store, sessions)
    emit(result.to_json(), lambda: _sync_human("pushed", result))


@click.command()
@click.argument("name", required=False)
@click.option(
    "--all",
    "everything",
    is_flag=True,
    help="Every session (the default unless --session is given).",
)
@common_options
def pull(name: str | None, everything: bool) -> None:
    """Download the remote's sessions (or one, by its name there) and what they need.

    Pulled sessions keep their names; one whose name is taken here by another
    machine's session gets NAME@<origin>. The workspace is not touched: `switch`
    applies a pulled turn.
    """
    _heap_returns_big_blocks()
    with open_for_write() as store:
        config = Config.load(store.store_dir)
        session = options().session
        sessions = None if everything or not session else [session]
        with open_remote(config, _choose(config, name)) as remote_store:
            result = store.pull(remote_store, sessions)
    emit(result.to_json(), lambda: _sync_human("pulled", result))
