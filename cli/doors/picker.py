"""Choosing a rewind point when `snapstore rewind` is given no TURN.

On a terminal this is an interactive picker built on prompt_toolkit, laid out as Gemini
CLI's ``/rewind`` is: the oldest turn at the top, the newest at the bottom, and under it
"Stay at current position", where the cursor starts, so that Enter on the default changes
nothing. Arrow keys (or j/k) move, Enter chooses, Esc cancels; each row shows the turn's
number and short id, how long ago it was, its prompt and its stats, and the selected turn's
prompt and files show below the list. The turns taken back earlier (↻) sit above the
oldest, and choosing one switches to it (a redo). A second menu then confirms with the
summary (the files, the lines added and removed, how long ago the turn was, what a rewind
does not cover: ``operations.impact``) and what the rewind or switch would do to each file
(a dry run), and offers the modes, each saying what it does to this session's agent's chat
(only the code one while the agent runs the session; the code choices are hidden when the
turns taken back changed no files). Its cursor starts on "Do nothing": Enter, Enter never
rewinds. Everything is laid out for the terminal's width at each redraw, cut at a word
with "…". Without a terminal it prints the numbered list, so that `snapstore rewind N`
matches what is on screen.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from prompt_toolkit.application import Application, get_app
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.layout import Layout, Window
from prompt_toolkit.layout.controls import FormattedTextControl
from prompt_toolkit.utils import get_cwidth

from snapstore import DEFAULT_SESSION, Store
from snapstore.core.errors import AgentRunning, ConversationRefused
from snapstore.core.records import BOTH, CODE, CONVERSATION, Mode
from snapstore.ops.gitshow import operation_lines as git_lines
from snapstore.ops.history import RewindPoint
from snapstore.ops.result import RewindResult

from ..operations.context import Context
from ..operations.impact import Impact, impact
from ..operations.moves import run
from ..operations.outcome import Outcome
from ..operations.reads import points_json
from ..operations.requests import Move
from ..output.rich import console, first_line, points_table, printable, relative_time
from .click.app import emit

#: Text laid out for a width: the menu asks again at each redraw, so a resize re-lays it out.
Lines = Callable[[int], list[str]]
#: One choice of the second menu: its mode, its label, and what it does (shown when selected).
Choice = tuple[Mode, str, str]

STAY = "Stay at current position"
DO_NOTHING = "Do nothing (Esc)"
KEYS_HELP = "↑/↓ move · Enter choose · Esc cancel"
PREVIEW_LINES = 4  # of the selected turn's prompt
PREVIEW_FILES = 6  # of the selected turn's files, and of a plan's
PLAN_FILES = 6
PAGE = 10  # rows PgUp and PgDn move
INFO = "\N{INFORMATION SOURCE}"  # before each note of what a rewind does not cover


def mode_choices(chat: dict[str, Any] | None, refused: str, n: int | None) -> list[Choice]:
    """The second menu's outcomes, each saying what it does to this session's agent's chat:
    ``chat`` is the dry run's ``conversation``, ``refused`` why it cannot move."""
    if refused:  # the confirmation says why
        return [(CODE, "Rewind code only", "The files go back; the chat stays as it is.")]
    if chat is None:
        return [
            (
                BOTH,
                "Rewind code and conversation",
                f"The files go back, and turn {n} on leave the branch (this session has no "
                "agent chat to rewind).",
            ),
            (
                CONVERSATION,
                "Rewind conversation only",
                f"The files stay; turn {n} on leave the branch.",
            ),
            (CODE, "Rewind code only", "The files go back; the turns stay on the branch."),
        ]
    if chat["status"] != "rewound":  # the confirmation says why the chat stays
        return [
            (
                BOTH,
                "Rewind code",
                f"The files go back, and turn {n} on leave snapstore's branch; the chat stays.",
            ),
            (
                CONVERSATION,
                "Rewind snapstore's history only",
                f"The files stay; turn {n} on leave snapstore's branch; the chat stays.",
            ),
            (CODE, "Rewind code only", "The files go back; the turns stay on the branch."),
        ]
    resume = f"Then resume it with:\n{chat['resume_command']}"
    return [
        (BOTH, "Rewind code and conversation", f"The agent forgets turn {n} on. {resume}"),
        (CONVERSATION, "Rewind conversation only", f"The files stay. {resume}"),
        (CODE, "Rewind code only", f"The files go back; the agent still remembers turn {n} on."),
    ]


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


# -- fitting text to the terminal -------------------------------------------------------------


def fit(text: str, width: int) -> str:
    """``text`` in at most ``width`` cells: cut at a word where one ends near enough, with
    "…" (a word longer than half the line is cut inside)."""
    if get_cwidth(text) <= width:
        return text
    cut = fit_cells(text, max(1, width - 1))
    space = cut.rfind(" ")
    if text[len(cut)] != " " and space > len(cut) // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:.-—") + "…"


def pad(text: str, width: int) -> str:
    """``text`` padded with spaces to ``width`` cells (a wide character takes two)."""
    return text + " " * max(0, width - get_cwidth(text))


def wrap(text: str, width: int, indent: str = "") -> list[str]:
    """``text`` in lines of at most ``width`` cells, broken between words and at each
    newline; the lines after the first start with ``indent``; a word longer than a line is
    folded."""
    lines: list[str] = []
    for number, paragraph in enumerate(text.split("\n")):
        line = indent if number else ""
        for word in paragraph.split(" "):
            candidate = f"{line} {word}" if line.strip() else line + word
            if get_cwidth(candidate) <= width or not line.strip():
                line = candidate
            else:
                lines.append(line)
                line = indent + word
            while get_cwidth(line) > width:  # a word longer than the line: fold it
                head = fit_cells(line, width)
                lines.append(head)
                line = indent + line[len(head) :]
        lines.append(line)
    return lines


def fit_cells(text: str, width: int) -> str:
    """The longest start of ``text`` that takes at most ``width`` cells (at least one char)."""
    kept = 0
    for i, char in enumerate(text):
        kept += get_cwidth(char)
        if kept > width:
            return text[: max(1, i)]
    return text


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


# -- the menu ---------------------------------------------------------------------------------


def menu(
    title: Lines,
    items: Lines,
    details: Callable[[int, int], list[str]] | None = None,
    start: int = 0,
) -> int | None:
    """Show ``items`` under ``title`` with the cursor on ``start``; the index chosen with
    Enter, or None on Esc. Each is laid out for the terminal's width at each redraw, and the
    list scrolls to keep the cursor in view when it is taller than the terminal."""
    count = len(items(80))
    selected = [start]
    bindings = KeyBindings()

    def move(by: int) -> None:
        selected[0] = min(count - 1, max(0, selected[0] + by))

    @bindings.add("up")
    @bindings.add("k")
    def _up(event: KeyPressEvent) -> None:
        move(-1)

    @bindings.add("down")
    @bindings.add("j")
    def _down(event: KeyPressEvent) -> None:
        move(1)

    @bindings.add("pageup")
    def _page_up(event: KeyPressEvent) -> None:
        move(-PAGE)

    @bindings.add("pagedown")
    def _page_down(event: KeyPressEvent) -> None:
        move(PAGE)

    @bindings.add("enter")
    def _choose(event: KeyPressEvent) -> None:
        event.app.exit(result=selected[0])

    @bindings.add("escape", eager=True)
    @bindings.add("c-c")
    @bindings.add("q")
    def _cancel(event: KeyPressEvent) -> None:
        event.app.exit(result=None)

    def text() -> StyleAndTextTuples:
        size = get_app().output.get_size()
        width = max(20, size.columns - 1)  # the last column would wrap on some terminals
        head = title(width)
        if len(head) > size.rows - 8:  # a terminal too short for it all: the list comes first
            head = [*head[: max(1, size.rows - 9)], "…"]
        below = details(selected[0], width) if details is not None else []
        rows = items(width - 2)
        room = max(3, size.rows - len(head) - len(below) - 3)
        top = 0 if count <= room else min(max(0, selected[0] - room + 1), count - room)
        top = min(top, selected[0])
        shown = range(top, min(count, top + room))
        lines: StyleAndTextTuples = [("bold", line + "\n") for line in head[:1]]
        lines += [("", line + "\n") for line in head[1:]]
        if top:
            lines.append(("fg:ansibrightblack", f"  ⋮ {top} more above\n"))
        for i in shown:
            chosen = i == selected[0]
            lines.append(("reverse" if chosen else "", ("> " if chosen else "  ") + rows[i]))
            lines.append(("", "\n"))
        if shown.stop < count:
            lines.append(("fg:ansibrightblack", f"  ⋮ {count - shown.stop} more below\n"))
        lines += [("fg:ansibrightblack", line + "\n") for line in below]
        lines.append(("fg:ansibrightblack", fit(KEYS_HELP, width)))
        return lines

    app: Application[int | None] = Application(
        layout=Layout(
            Window(FormattedTextControl(text), always_hide_cursor=True, wrap_lines=False)
        ),
        key_bindings=bindings,
        full_screen=False,
        mouse_support=False,
        erase_when_done=True,
    )
    return app.run()


# -- the list of turns ------------------------------------------------------------------------


def _stats(point: RewindPoint) -> str:
    return f"{_count(len(point.files), 'file')} +{point.added} -{point.removed}"


def _rows(points: list[RewindPoint], now: float) -> Lines:
    """The list's rows, top to bottom (``points`` in that order), then "Stay": number (↻
    for a turn taken back earlier), short id, how long ago, the prompt (what is left of the
    width, cut at a word), the stats."""
    cells = [
        (
            f"{p.n}" if p.n is not None else "↻",
            p.turn.id[:8],
            relative_time(p.turn.created, now),
            printable(first_line(p.turn.prompt)),
            _stats(p),
        )
        for p in points
    ]
    numbers = max(len(c[0]) for c in cells)
    when = max(len(c[2]) for c in cells)
    stats = max(len(c[4]) for c in cells)
    longest = max(get_cwidth(c[3]) for c in cells)

    def lay_out(width: int) -> list[str]:
        room = min(longest, max(8, width - numbers - 8 - when - stats - 8))
        rows = [
            f"{n:>{numbers}}  {turn_id}  {ago:<{when}}  {pad(fit(text, room), room)}  {st:>{stats}}"
            for n, turn_id, ago, text, st in cells
        ]
        return [fit(row, width) for row in [*rows, f"{'':>{numbers}}  {STAY}"]]

    return lay_out


def _point_details(point: RewindPoint | None, width: int) -> list[str]:
    if point is None:
        return ["", fit("Cancel rewind and stay here: nothing changes.", width)]
    lines = [""]
    if point.n is None:
        lines += wrap(
            f"Taken back earlier ({point.turn.state}): choosing it switches to right after it.",
            width,
        )
    lines.append("Prompt:")
    prompt = [
        row
        for line in point.turn.prompt.strip().splitlines() or ["(no prompt)"]
        for row in wrap(printable(line), width - 2)
    ]
    lines += ["  " + row for row in prompt[:PREVIEW_LINES]]
    if len(prompt) > PREVIEW_LINES:
        lines.append("  …")
    lines.append("Files:")
    for f in point.files[:PREVIEW_FILES]:
        lines.append(fit(f"  {f.status:<8} {printable(f.path)}  +{f.added} -{f.removed}", width))
    if len(point.files) > PREVIEW_FILES:
        lines.append(f"  … and {len(point.files) - PREVIEW_FILES} more")
    if not point.files:
        lines.append("  (none)")
    if point.git:
        lines.append("Git:")
        lines += [f"  {printable(said, quote=False)}" for said in point.git]
    return lines


# -- the confirmation -------------------------------------------------------------------------


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
    if len(lines) > PLAN_FILES:
        lines = [*lines[: PLAN_FILES - 1], f"  … and {len(lines) - PLAN_FILES + 1} more"]
    return lines or ["  no files to change"]


def _summary(heading: str, prompt: str, summary: Impact, width: int) -> list[str]:
    """The confirmation's head: what is chosen, the seed's figures, what is not covered."""
    lines = [fit(heading, width), fit(f"  {prompt}", width)]
    lines += wrap(
        f"Takes back {_count(summary.turns, 'turn')}: {_count(summary.files, 'file')}, "
        f"+{summary.added} -{summary.removed} lines",
        width,
        "  ",
    )
    return lines


def _notes(summary: Impact, width: int) -> list[str]:
    lines: list[str] = []
    for note in summary.notes:
        lines += wrap(f"{INFO} {note}", width, "  ")
    return lines


def choose(store: Store, ctx: Context, request: Move, interactive: bool) -> Outcome | None:
    """Let the user choose a rewind point, confirm what it does, and make the move through the
    operation layer; its outcome, or None when nothing was chosen (or, without a terminal,
    the numbered list was printed)."""
    session = request.session or DEFAULT_SESSION
    if not interactive:
        print_points(store, session)
        return None
    everything = store.rewind_points(session, all_branches=True)
    branch = [p for p in everything if p.n is not None]  # newest first
    # top to bottom: taken back earlier (switch to them), then the oldest turn to the newest
    shown = [p for p in everything if p.n is None][::-1] + branch[::-1]
    if not shown:
        console(stderr=True).print(f"no rewind points in session {printable(session)}")
        return None
    now = store.clock()
    marked = " (↻: taken back earlier)" if len(shown) > len(branch) else ""

    def title(width: int) -> list[str]:
        return [
            fit(f"Rewind to before which turn?{marked}", width),
            fit(f"session {printable(session)}", width),
        ]

    index = menu(
        title,
        _rows(shown, now),
        lambda i, width: _point_details(shown[i] if i < len(shown) else None, width),
        start=len(shown),
    )
    if index is None or index == len(shown):
        _cancelled(stayed=index is not None)
        return None
    point = shown[index]
    if point.n is None:
        return _confirm_switch(store, ctx, request, point, now)
    prompt = printable(first_line(point.turn.prompt))
    taken = branch[: point.n]
    changed_files = any(p.files or p.git for p in taken)
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
    summary = impact(store, taken)
    chat = plan.conversation
    chat_line = (
        f"The chat cannot go back: {refused}"
        if refused
        else f"The chat: {chat['note']}"
        if chat is not None and chat["status"] != "rewound" and chat["note"]
        else ""
    )
    heading = (
        f"Rewind to before turn {point.n} ({point.turn.id[:8]}, "
        f"{relative_time(point.turn.created, now)}):"
    )

    def confirm_title(width: int) -> list[str]:
        lines = _summary(heading, prompt, summary, width)
        lines += [fit(line, width) for line in _plan_lines(plan)] if changed_files else []
        if chat_line:
            lines += wrap(chat_line, width, "  ")
        return [*lines, *_notes(summary, width), "", "Select an action:"]

    def labels(width: int) -> list[str]:
        return [fit(label, width) for _, label, _ in choices] + [DO_NOTHING]

    def what(i: int, width: int) -> list[str]:
        note = choices[i][2] if i < len(choices) else "The files and the chat stay as they are."
        return ["", *wrap(note, width, "  ")]

    picked = menu(confirm_title, labels, what, start=len(choices))
    if picked is None or picked == len(choices):
        _cancelled()
        return None
    console(stderr=True).print(f"{choices[picked][1]} (turn {point.n})", style="bold")
    return run(store, ctx, chosen._replace(mode=choices[picked][0]))


def _cancelled(stayed: bool = False) -> None:
    how = "stayed at the current position" if stayed else "cancelled"
    console(stderr=True).print(f"{how}; nothing changed")


def _confirm_switch(
    store: Store, ctx: Context, request: Move, point: RewindPoint, now: float
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
    summary = impact(store, [point])
    heading = (
        f"Switch to right after ↻ {point.turn.id[:8]} ({relative_time(point.turn.created, now)}, "
        "taken back earlier):"
    )

    def title(width: int) -> list[str]:
        lines = [fit(heading, width), fit(f"  {prompt}", width)]
        lines += wrap(
            f"Takes back {_count(len(plan.turns_reverted), 'turn')} on the current branch; "
            "the files become what that turn left:",
            width,
            "  ",
        )
        lines += [fit(line, width) for line in _plan_lines(plan)]
        return [*lines, *_notes(summary, width), "", "Select an action:"]

    def what(i: int, width: int) -> list[str]:
        note = "Undo takes it back." if i == 0 else "The files stay as they are."
        return ["", fit(note, width)]

    if menu(title, lambda _w: ["Switch to it", DO_NOTHING], what, start=1) != 0:
        _cancelled()
        return None
    return run(store, ctx, switch)
