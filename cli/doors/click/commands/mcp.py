"""The mcp command: ``snapstore mcp [--read-only]``, a stdio Model Context Protocol server
for the agent session that starts it (snapstore_cli.doors.mcp).

The agent starts it (``hook install`` registers it in the agent's MCP settings); it talks
JSON-RPC on stdin and stdout and ends when stdin closes. The SDK is the ``mcp`` extra; without
it, one line says how to install it.
"""

from __future__ import annotations

import os

import click

from ..app import Failure, common_options, options

MISSING = "snapstore mcp needs the mcp extra: pip install 'snapstore[mcp]'"


@click.command()
@click.option(
    "--read-only",
    is_flag=True,
    help="Offer the reading tools only (list_turns, show_turn, file_at).",
)
@common_options
def mcp(read_only: bool) -> None:
    """Serve this workspace's turns to the agent that starts it, over MCP on stdio.

    Tools: list_turns, show_turn, file_at, and (unless --read-only) rewind_files and
    undo_last, for the calling session only. A rewind made through it is recorded as a
    change of the agent's open turn, so `snapstore rewind` can take it back.
    """
    try:
        from ...mcp.server import serve
    except ImportError as exc:
        if exc.name is None or not exc.name.startswith(("mcp", "pydantic", "anyio")):
            raise
        raise Failure(MISSING, 1, "missing_extra", options().json) from None
    opts = options()
    root = os.path.realpath(opts.root) if opts.root is not None else None
    serve(opts.env, os.getcwd(), root, read_only)
