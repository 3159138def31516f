"""The doctor command: are the agents' hooks installed, and do they run?"""

from __future__ import annotations

import os
import sys

import click

from snapstore.core.errors import NoStore

from ....operations import registration
from ....operations.checks import check, hook_reports
from ....operations.daemons import orphan_line, orphans
from ....output.rich import console, printable
from ....settings.environment import project_root
from ..app import common_options, emit, options


@click.command()
@common_options
def doctor() -> None:
    """Check each agent's snapstore hooks: installed, able to start, trusted, recording;
    and its `snapstore mcp` server: registered, and starting (a note when not).

    Exits 1 only for a problem that will lose a change (a hook that cannot start or will
    not be loaded, a hook failure, a shell the hooks see with a store not in scan mode);
    a hook that has not recorded a turn yet, or a daemon between sessions, is a note.
    """
    opts = options()
    try:
        root = opts.find_root()
    except NoStore:
        root = None
    start = os.path.realpath(opts.root or os.getcwd())
    if root is None and opts.env.store_dir is None:
        reports = check(project_root(start), [], None, os.path.expanduser("~"), os.environ)
        where = project_root(start)
    else:
        with opts.open_store() as store:
            where = store.root
            reports = hook_reports(store, where)
    for report in reports:  # notes: the agent works without its MCP server, and loses nothing
        report["mcp"] = registration.check(report["agent"], report["scope"], where)
    problems = sum(len(r["problems"]) for r in reports)
    stray = orphans()

    def human() -> None:
        out = console()
        if not reports:
            out.print(
                f"No agent hooks name snapstore for {printable(where)}: install them "
                "with `snapstore hook install AGENT`."
            )
        for report in reports:
            mark = "!! " if report["problems"] else "ok "
            recorded = (
                f"{report['sessions']} session(s) recorded"
                if report["sessions"]
                else "no session recorded yet"
            )
            out.print(
                f"{mark} {report['agent']} ({report['scope']}): {printable(report['file'])}, "
                f"{recorded}"
            )
            for problem in report["problems"]:
                out.print(f"     - {printable(problem, quote=False)}")
            for tip in report["advice"]:
                out.print(f"     > {printable(tip, quote=False)}")
            server = report["mcp"]
            if server["registered"] and server["starts"]:
                tools = "reading tools only" if server["read_only"] else "all its tools"
                out.print(f"     mcp: snapstore mcp starts and offers {tools}")
            for note in server["notes"]:
                out.print(f"     note: mcp: {printable(note, quote=False)}")
        for orphan in stray:
            out.print(f"note: {printable(orphan_line(orphan), quote=False)}")

    data = {"root": where, "hooks": reports, "problems": problems, "ok": problems == 0}
    emit({**data, "stray_daemons": [o._asdict() for o in stray]}, human)
    if problems:
        sys.exit(1)
