"""The ui command: the timeline page on 127.0.0.1 (snapstore_cli.ui.server).

The server library is the ``ui`` extra; without it, one line says how to install it.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

import click

from ....operations.context import Context
from ....output.plain import printable, say
from ..app import Failure, common_options, options

if TYPE_CHECKING:
    from ...ui.server import UiServer

MISSING = "the timeline page needs the ui extra: pip install 'snapstore[ui]'"


@click.command()
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=0,
    metavar="N",
    help="Listen on this port (default: a free one).",
)
@click.option("--no-open", is_flag=True, help="Print the address; do not open a browser.")
@common_options
def ui(port: int, no_open: bool) -> None:
    """Serve the timeline page on 127.0.0.1 until Ctrl-C.

    The page lists the sessions and their turns, shows a turn's diff and the
    operation log, updates as turns arrive, and rewinds, switches and undoes.
    Its address holds a token: only who has it can open the page.
    """
    try:
        from ...ui.server import UiServer
    except ImportError as exc:
        if exc.name is None or not exc.name.startswith("websockets"):
            raise
        raise Failure(MISSING, 1, "missing_extra", options().json) from None
    opts = options()
    with opts.open_store() as store:
        store_dir, root = store.store_dir, store.root
    server = UiServer(Context.of(opts), store_dir, port)

    def ready(server: UiServer) -> None:
        if opts.json:
            print(json.dumps({"url": server.url, "port": server.port, "root": root}), flush=True)
        else:
            print(server.url, flush=True)
            say(f"snapstore ui: the timeline of {printable(root)}; Ctrl-C to stop")
        if not no_open:
            import webbrowser

            webbrowser.open(server.url)

    asyncio.run(_serve(server, ready))
    say("snapstore ui: stopped")


async def _serve(server: UiServer, ready: Callable[[UiServer], None]) -> None:
    """Run until SIGINT or SIGTERM."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    await server.run(ready, stop)
    sys.stdout.flush()
