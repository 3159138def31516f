"""Choosing a rewind point when `snapstore rewind` is given no TURN.

On a terminal this is an interactive picker built on prompt_toolkit: arrow keys
(or j/k) move, Enter chooses, Esc cancels; the selected turn's prompt and files
show below the list. The branch's rewind points come first, numbered; the
turns taken back earlier follow, marked, and choosing one switches to it (a
redo). A second menu then shows what the rewind or switch would do (from a dry
run) and offers the modes, each saying what it does to this session's agent's
chat (only the code one while the agent runs the session); the code choices are
hidden when the turns taken back changed no files. Without a terminal it prints
the numbered list, so that `snapstore rewind N` matches what is on screen.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from prompt_toolkit.application import Application
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.layout import Layout, Window
from prompt_toolkit.layout.controls import FormattedTextControl

from snapstore import DEFAULT_SESSION, Store
from snapstore.core.errors import AgentRunning, ConversationRefused
from snapstore.core.records import BOTH, CODE, CONVERSATION, Mode
from snapstore.ops.gitshow import operation_lines as git_lines
from snapstore.ops.history import RewindPoint
from snapstore.ops.plan import RewindResult

from ..operations.context import Context
from ..operations.moves import run
from ..operations.outcome import Outcome
from ..operations.reads import points_json
from ..operations.requests import Move
from ..output.rich import console, first_line, points_table, printable, relative_time
from .click.app import emit

MODE_CHOICES: list[tuple[Mode, str]] = [
    (BOTH, "Rewind code and conversation"),
    (CONVERSATION, "Rewind conversation only"),
    (CODE, "Rewind code only"),
]
PREVIEW_LINES = 6


def mode_choices(
    chat: dict[str, Any] | None, refused: str, n: int | None
) -> list[tuple[Mode, str]]:
    """The second menu's outcomes, each saying what it does to this session's agent's chat:
    ``chat`` is the dry run's ``conversation``, ``refused`` why it cannot move."""
    if refused:
        return [(CODE, f"Rewind code only (the chat cannot go back: {refused})")]
    if chat is None:
        return MODE_CHOICES
    if chat["status"] != "rewound":
        note = chat["note"]
        return [
            (BOTH, f"Rewind code; {note}"),
            (CONVERSATION, f"Rewind snapstore's history only; {note}"),
            (CODE, "Rewind code only"),
        ]
    resume = f"then `{chat['resume_command']}`"
    return [
        (BOTH, f"Rewind code and conversation (the agent forgets turn {n} on; {resume})"),
        (CONVERSATION, f"Rewind conversation only (the files stay; {resume})"),
        (CODE, f"Rewind code only (the agent still remembers turn {n} on)"),
    ]


KEYS_HELP = "↑/↓ move · Enter choose · Esc cancel\n"


def print_points(store: Store, session: str) -> None:
    """The numbered list, so that `rewind N` matches what is on screen."""
    points = store.rewind_points(session)

    def human() -> None:
        if not points:
            console(stderr=True).print(f"no rewind points in session {printable(session)}")
            return
        out = console()
        out.file.write(points_table(points, store.clock(), out.width, out.color_system is not None))
        console(stderr=True).print("rewind with: snapstore rewind N", style="dim")

    emit(points_json(points), human)


def menu(
    title: str,
    items: list[str],
    details: Callable[[int], list[str]] | None = None,
) -> int | None:
    """Show ``items`` under ``title``; the index chosen with Enter, or None on Esc."""
    selected = [0]
    bindings = KeyBindings()

    @bindings.add("up")
    @bindings.add("k")
    def _up(event: KeyPressEvent) -> None:
        selected[0] = (selected[0] - 1) % len(items)

    @bindings.add("down")
    @bindings.add("j")
    def _down(event: KeyPressEvent) -> None:
        selected[0] = (selected[0] + 1) % len(items)

    @bindings.add("enter")
    def _choose(event: KeyPressEvent) -> None:
        event.app.exit(result=selected[0])

    @bindings.add("escape", eager=True)
    @bindings.add("c-c")
    @bindings.add("q")
    def _cancel(event: KeyPressEvent) -> None:
        event.app.exit(result=None)

    def text() -> StyleAndTextTuples:
        lines: StyleAndTextTuples = [("bold", title + "\n"), ("fg:ansibrightblack", KEYS_HELP)]
        for i, item in enumerate(items):
            style = "reverse" if i == selected[0] else ""
            lines.append((style, ("> " if i == selected[0] else "  ") + item))
            lines.append(("", "\n"))
        if details is not None:
            lines += [("fg:ansibrightblack", line + "\n") for line in details(selected[0])]
        return lines

    app: Application[int | None] = Application(
        layout=Layout(Window(FormattedTextControl(text), always_hide_cursor=True)),
        key_bindings=bindings,
        full_screen=False,
        mouse_support=False,
        erase_when_done=True,
    )
    return app.run()


def _point_row(point: RewindPoint, now: float) -> str:
    number = f"{point.n:>2}" if point.n is not None else " ↻"
    return (
        f"{number}  {relative_time(point.turn.created, now):<11} "
        f"{printable(first_line(point.turn.prompt))[:60]:<60}  {len(point.files)} file(s) "
        f"+{point.added} -{point.removed}"
        + ("" if point.n is not None else f"  [{point.turn.state}: switch to it]")
    )


def _point_details(point: RewindPoint) -> list[str]:
    prompt = point.turn.prompt.strip().splitlines() or ["(no prompt)"]
    lines = ["", "Prompt:"] + ["  " + printable(line) for line in prompt[:PREVIEW_LINES]]
    if len(prompt) > PREVIEW_LINES:
        lines.append("  …")
    lines.append("Files:")
    lines += [
        f"  {f.status:<8} {printable(f.path)}  +{f.added} -{f.removed}" for f in point.files[:10]
    ]
    if len(point.files) > 10:
        lines.append(f"  … and {len(point.files) - 10} more")
    if not point.files:
        lines.append("  (none)")
    if point.git:
        lines.append("Git:")
        lines += [f"  {printable(said, quote=False)}" for said in point.git]
    return lines


def _plan_lines(plan: RewindResult) -> list[str]:
    lines = [f"  restore  {printable(p)}" for p in plan.restored]
    lines += [f"  merge    {printable(p)}  (keeps your edits)" for p in plan.merged]
    lines += [f"  delete   {printable(p)}" for p in plan.deleted]
    lines += [
        f"  conflict {printable(c['path'])}: {printable(c['reason'], quote=False)} (left alone)"
        for c in plan.conflicts
    ]
    lines += [
        f"  error    {printable(e['path'])}: {printable(e['reason'], quote=False)}"
        for e in plan.errors
    ]
    lines += [f"  {kind:<8} {printable(text, quote=False)}" for kind, text in git_lines(plan.git)]
    return lines or ["  no files to change"]


def choose(store: Store, ctx: Context, request: Move, interactive: bool) -> Outcome | None:
    """Let the user choose a rewind point, confirm what it does, and make the move through the
    operation layer; its outcome, or None when nothing was chosen (or, without a terminal,
    the numbered list was printed)."""
    session = request.session or DEFAULT_SESSION
    if not interactive:
        print_points(store, session)
        return None
    everything = store.rewind_points(session, all_branches=True)
    points = [p for p in everything if p.n is not None]
    points += [p for p in everything if p.n is None]  # taken back earlier: switch to them
    if not points:
        console(stderr=True).print(f"no rewind points in session {printable(session)}")
        return None
    now = store.clock()
    index = menu(
        "Rewind to before which turn? (↻: taken back earlier; switch to it)",
        [_point_row(p, now) for p in points],
        lambda i: _point_details(points[i]),
    )
    if index is None:
        _cancelled()
        return None
    point = points[index]
    if point.n is None:
        return _confirm_switch(store, ctx, request, point)
    prompt = printable(first_line(point.turn.prompt))
    console(stderr=True).print(f"turn {point.n}: {prompt}", style="bold")
    changed_files = any(p.files or p.git for p in points[: index + 1])
    chosen = request._replace(target=point.turn.id, shown=str(point.n), mode=BOTH)
    refused = ""
    try:
        plan = run(store, ctx, chosen._replace(dry_run=True)).result
    except (AgentRunning, ConversationRefused) as exc:  # the files can still go back
        plan = run(store, ctx, chosen._replace(mode=CODE, dry_run=True)).result
        refused = str(exc)
    assert plan is not None
    choices = [
        c
        for c in mode_choices(plan.conversation, refused, point.n)
        if changed_files or c[0] == CONVERSATION
    ]
    title = (
        f"Rewind to before turn {point.n} ({prompt[:50]}), "
        f"taking back {len(plan.turns_reverted)} turn(s):\n"
        + "\n".join(_plan_lines(plan) if changed_files else ["  no files changed"])
    )
    picked = menu(title, [label for _, label in choices] + ["Cancel"])
    if picked is None or picked == len(choices):
        _cancelled()
        return None
    console(stderr=True).print(choices[picked][1], style="bold")
    return run(store, ctx, chosen._replace(mode=choices[picked][0]))


def _cancelled() -> None:
    console(stderr=True).print("cancelled; nothing changed")


def _confirm_switch(
    store: Store, ctx: Context, request: Move, point: RewindPoint
) -> Outcome | None:
    """What switching to a turn taken back earlier would do, and, confirmed, the switch."""
    prompt = printable(first_line(point.turn.prompt))
    switch = Move(
        "switch",
        point.turn.id,
        request.session,
        on_conflict=request.on_conflict,
        force=request.force,
        git=request.git,
    )
    plan = run(store, ctx, switch._replace(dry_run=True)).result
    assert plan is not None
    title = (
        f"Switch to right after {prompt[:50]} (taken back earlier), taking back "
        f"{len(plan.turns_reverted)} turn(s) on the current branch:\n"
        + "\n".join(_plan_lines(plan))
    )
    if menu(title, ["Switch to it", "Cancel"]) != 0:
        _cancelled()
        return None
    return run(store, ctx, switch)
