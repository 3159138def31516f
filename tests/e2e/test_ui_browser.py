"""The timeline page in a real browser: Debian's chromium, driven by Playwright, against a
real ``snapstore ui``."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, WebSocketRoute, expect, sync_playwright
from snapstore_cli.operations.impact import NOT_COVERED, SHELL_UNRECORDED

from snapstore import Store

from ..support import Clock, agent_write, read, write
from ..support.gitrepo import git, sh
from ..support.ui import (
    CHROMIUM,
    CHROMIUM_ARGS,
    FAREWELL,
    GIT_SESSION,
    GREET,
    SHOUT,
    Ui,
    agent_turns,
    git_turn,
    running_ui,
)

#: Milliseconds Playwright waits for what must appear (a bound against a hung test).
SHOWN = 30_000
#: A folder where the layout test also leaves its screenshot, to look at the page as a user
#: would (by default it stays in the test's own temporary folder).
SHOTS = os.environ.get("SNAPSTORE_TEST_SHOTS")


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.grant_permissions(["clipboard-read", "clipboard-write"])
    yield context.new_page()
    context.close()


@pytest.fixture
def ui(store: Store, root: Path) -> Iterator[Ui]:
    with running_ui(root) as server:
        yield server


def turns_of(page: Page) -> list[str]:
    return page.locator("#turns li.turn .prompt").all_inner_texts()


def rewind(page: Page, n: int) -> None:
    """Press turn ``n``'s rewind button, and confirm when the page asks."""
    page.locator(f"#turns li.turn[data-n='{n}'] button.rewind").click()
    expect(page.locator("#confirm")).to_be_visible(timeout=SHOWN)
    page.locator("#confirm-go").click()


def test_the_page_shows_three_turns_and_rewinds_turn_two(
    store: Store, root: Path, ui: Ui, page: Page
) -> None:
    agent_turns(store)
    page.goto(ui.url)
    expect(page.locator("#turns li.turn")).to_have_count(3, timeout=SHOWN)
    assert turns_of(page) == ["shout the greeting", "add a farewell", "create the greeting"]
    expect(page.locator("#turns li.turn[data-n='2'] .added")).to_have_text("+5")
    page.select_option("#policy", "markers")
    rewind(page, 2)
    expect(page.locator("#prompt")).to_have_value("add a farewell", timeout=SHOWN)
    expect(page.locator("#copy")).to_be_visible()
    expect(page.locator("#result-title")).to_contain_text("Rewound: 2 turns, 2 files written")
    assert read(root, "app.py") == GREET.encode() and read(root, "notes.txt") is None
    # pushed after the rewind: one turn on the branch, the two taken back listed apart
    expect(page.locator("#turns li.turn")).to_have_count(1, timeout=SHOWN)
    expect(page.locator("#rewound li.turn")).to_have_count(2)
    expect(page.locator("#ops li")).to_contain_text(["rewind"])


def test_a_turn_that_arrives_appears_and_its_diff_shows(
    store: Store, root: Path, ui: Ui, page: Page
) -> None:
    agent_turns(store)
    page.goto(ui.url)
    expect(page.locator("#turns li.turn")).to_have_count(3, timeout=SHOWN)
    store.begin_turn("default", "a fourth prompt", "m4")
    write(root, "build.log", "x" * 8192)
    store.max_file_size = 4096  # build.log is over the capture limit: never captured
    store.pre_write(["app.py", "build.log"], "Write", "default")
    write(root, "app.py", SHOUT + "# four\n")
    store.post_write(["app.py"], "default")
    store.end_turn("default")
    expect(page.locator("#turns li.turn")).to_have_count(4, timeout=SHOWN)
    assert turns_of(page)[0] == "a fourth prompt"
    page.locator("#turns li.turn[data-n='1'] button", has_text="diff").click()
    expect(page.locator("#diff .patch .add")).to_have_text(["+++ b/app.py", "+# four"])
    expect(page.locator("#diff .uncaptured")).to_have_text(
        "build.log: never captured (larger than the capture limit (4096 bytes)); "
        "no rewind can restore it"
    )


def test_two_pages_on_two_sessions_rewind_at_once(
    store: Store, root: Path, ui: Ui, browser: Browser
) -> None:
    agent_turns(store, "agent-a")
    store.begin_turn("agent-b", "write the readme", "b1")
    store.pre_write(["README.md"], "Write", "agent-b")
    write(root, "README.md", "# readme\n")
    store.post_write(["README.md"], "agent-b")
    store.end_turn("agent-b")
    contexts = [browser.new_context() for _ in range(2)]
    try:
        pages = [context.new_page() for context in contexts]
        for page, session, count in zip(pages, ("agent-a", "agent-b"), (3, 1), strict=True):
            page.goto(ui.page(session=session))
            expect(page.locator("#turns li.turn")).to_have_count(count, timeout=SHOWN)
        for page, n in zip(pages, (2, 1), strict=True):
            page.locator(f"#turns li.turn[data-n='{n}'] button.rewind").click()
            expect(page.locator("#confirm")).to_be_visible(timeout=SHOWN)
        for page in pages:  # both sent before either answer is read
            page.locator("#confirm-go").click(no_wait_after=True)
        expect(pages[0].locator("#prompt")).to_have_value("add a farewell", timeout=SHOWN)
        expect(pages[1].locator("#prompt")).to_have_value("write the readme", timeout=SHOWN)
        expect(pages[0].locator("#title")).to_have_text("agent-a")
        expect(pages[1].locator("#title")).to_have_text("agent-b")
    finally:
        for context in contexts:
            context.close()
    assert read(root, "README.md") is None and read(root, "app.py") == GREET.encode()


def test_undo_from_the_page(store: Store, root: Path, ui: Ui, page: Page) -> None:
    agent_turns(store)
    page.goto(ui.url)
    rewind(page, 1)
    expect(page.locator("#prompt")).to_have_value("shout the greeting", timeout=SHOWN)
    assert read(root, "app.py") != SHOUT.encode()
    page.locator("#undo").click()
    expect(page.locator("#result-title")).to_contain_text("Undone", timeout=SHOWN)
    assert read(root, "app.py") == SHOUT.encode()
    expect(page.locator("#turns li.turn")).to_have_count(3, timeout=SHOWN)
    expect(page.locator("#ops li.undone")).to_have_count(1, timeout=SHOWN)


EVIL = """<!doctype html><title>waiting</title><script>
const socket = new WebSocket(%r);
socket.onopen = () => { document.title = "opened"; };
socket.onclose = () => { if (document.title !== "opened") document.title = "refused"; };
</script>"""


def test_another_sites_socket_is_refused_and_no_token_gets_401(
    store: Store, root: Path, ui: Ui, page: Page
) -> None:
    agent_turns(store)
    page.route(
        "http://evil.example/**",
        lambda route: route.fulfill(content_type="text/html", body=EVIL % ui.socket_url()),
    )
    page.goto("http://evil.example/")  # even with the token, a page of another site
    expect(page).to_have_title("refused", timeout=SHOWN)
    response = page.goto(ui.url.split("?")[0])
    assert response is not None and response.status == 401
    assert "timeline" not in page.content()
    page.goto(ui.url)  # the page's own origin is let in
    expect(page.locator("#link")).to_have_text("live", timeout=SHOWN)


def test_a_button_comes_back_when_the_server_never_answers(
    store: Store, root: Path, ui: Ui, page: Page
) -> None:
    """Between the page and the server, the rewind frames are lost: no answer ever comes."""
    agent_turns(store)

    def lose_rewinds(socket: WebSocketRoute) -> None:
        server = socket.connect_to_server()
        socket.on_message(lambda m: None if '"action":"rewind"' in str(m) else server.send(m))

    page.route_web_socket(re.compile(r"/ws\?"), lose_rewinds)
    page.goto(ui.page(patience="1500"))
    button = page.locator("#turns li.turn[data-n='2'] button.rewind")
    expect(button).to_be_enabled(timeout=SHOWN)
    button.click()
    expect(button).to_be_disabled()
    expect(button).to_be_enabled(timeout=SHOWN)
    expect(page.locator("#notice")).to_contain_text("No answer after 2 s")
    assert read(root, "app.py") == SHOUT.encode()  # the rewind never reached the server
    expect(page.locator("#result")).to_be_hidden()


def test_switch_back_to_a_rewound_turn_from_the_page(
    store: Store, root: Path, ui: Ui, page: Page
) -> None:
    turns = agent_turns(store)
    page.goto(ui.url)
    rewind(page, 2)
    expect(page.locator("#rewound li.turn")).to_have_count(2, timeout=SHOWN)
    page.locator("#rewound-box summary").click()
    page.locator(f"#rewound li.turn[data-turn='{turns[2]}'] button.switch").click()
    expect(page.locator("#result-title")).to_contain_text("Switched", timeout=SHOWN)
    assert read(root, "app.py") == SHOUT.encode() and read(root, "notes.txt") == b"bye\n"
    expect(page.locator("#turns li.turn")).to_have_count(3, timeout=SHOWN)
    expect(page.locator("#rewound-box")).to_be_hidden()


# -- turns that touch git ---------------------------------------------------------------------


def test_a_git_turn_says_what_it_did_and_its_rewind_what_moves_and_where_it_is_kept(
    cli, root: Path, page: Page
) -> None:
    """A Claude Code turn whose Bash call made branch x and committed on it, through the real
    hooks: its card and its diff say what it did to the repository, as `show` does; its
    rewind is confirmed, even of its files alone, and the confirmation says what will move in
    git; the result, and the operation log, that x went back and where its commit is kept."""
    x = git_turn(cli, root)
    did = ["gitchecked out x", f"gitcreated branch x at {x[:7]}", "gitupdated the index"]
    with running_ui(root) as ui:
        page.goto(ui.page(session=GIT_SESSION))
        card = page.locator("#turns li.turn[data-n='1']")
        expect(card.locator(".git li")).to_have_text(did, timeout=SHOWN)
        card.locator("button", has_text="diff").click()
        expect(page.locator("#diff .git li")).to_have_text(did, timeout=SHOWN)

        page.select_option("#mode", "code")  # one turn's files alone, but it moved git: asked
        card.locator("button.rewind").click()
        expect(page.locator("#confirm")).to_be_visible(timeout=SHOWN)
        expect(page.locator("#confirm-go")).to_have_text("Rewind files only")
        expect(page.locator("#confirm-plan li")).to_have_text(
            [
                "restorea.txt",
                "gitHEAD: x -> main",
                f"gitrefs/heads/x: {x[:7]} -> (none)",
                "gitthe index put back",
                "notewhat the refs point at now will be kept under refs/snapstore/<operation>/ "
                "(heads/x); `snapstore undo <operation>` moves them back",
            ]
        )
        assert git(root, "symbolic-ref", "HEAD") == "refs/heads/x"  # asking moved nothing
        page.locator("#confirm-go").click()

        expect(page.locator("#result-title")).to_contain_text("Rewound: 1 turn", timeout=SHOWN)
        [op] = [o.id for o in _operations(root)]
        kept = f"refs/snapstore/{op}/heads/x"
        moved = [
            "gitHEAD: x -> main",
            f"gitrefs/heads/x: {x[:7]} -> (none) (kept as {kept})",
            "gitthe index put back",
            f"notewhat the refs pointed at is kept under refs/snapstore/{op}/ (`git log {kept}`); "
            f"`snapstore undo {op}` moves them back",
        ]
        expect(page.locator("#result-git li")).to_have_text(moved)
        expect(page.locator("#result")).to_have_attribute("data-kind", "ok")
        expect(page.locator("#ops li .git li")).to_have_text(moved, timeout=SHOWN)
    assert git(root, "symbolic-ref", "HEAD") == "refs/heads/main"
    assert git(root, "rev-parse", kept) == x  # the agent's commit, where the page says


def test_a_branch_the_user_moved_since_is_a_conflict_on_the_page(
    cli, root: Path, page: Page
) -> None:
    """The user committed on x after the agent: the confirmation says HEAD, x and the index
    stay, and why; the files still rewind, and the result says what was left in git."""
    git_turn(cli, root)
    sh(root, "echo user >> b.txt && git commit -qm 'the user commits' b.txt")
    user = git(root, "rev-parse", "x")
    left = [
        "conflictHEAD stays at x",
        "conflictrefs/heads/x: moved since the agent: it is "
        f"{user[:8]}, where the agent left {git(root, 'rev-parse', 'x~1')[:8]}; left alone",
        "conflictthe index stays as it is",
    ]
    with running_ui(root) as ui:
        page.goto(ui.page(session=GIT_SESSION))
        page.locator("#turns li.turn[data-n='1'] button.rewind").click()
        expect(page.locator("#confirm")).to_be_visible(timeout=SHOWN)
        expect(page.locator("#confirm-plan li.plan-conflict")).to_have_text(left)
        page.locator("#confirm-go").click()
        expect(page.locator("#result-git li")).to_have_text(left, timeout=SHOWN)
        expect(page.locator("#result")).to_have_attribute("data-kind", "partial")
    assert (
        git(root, "symbolic-ref", "HEAD") == "refs/heads/x" and git(root, "rev-parse", "x") == user
    )
    assert (root / "a.txt").read_text() == "a1\na2\n"  # the file went back all the same


def _operations(root: Path) -> list:
    with Store.open(root) as store:
        return store.operations()


# -- the composer, the confirmation, the running turn, the errors, the log, the layout -------


def test_the_prompt_comes_back_to_edit_and_copy(store: Store, ui: Ui, page: Page) -> None:
    agent_turns(store)
    page.goto(ui.url)
    rewind(page, 2)
    box = page.locator("#prompt")
    expect(box).to_have_value("add a farewell", timeout=SHOWN)
    expect(box).to_be_editable()
    box.fill("add a farewell, in French this time")
    page.locator("#copy").click()
    expect(page.locator("#notice")).to_have_text("Prompt copied: paste it into the agent.")
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied == "add a farewell, in French this time"


def test_a_rewind_of_several_turns_is_confirmed_with_the_pickers_summary(
    store: Store, root: Path, ui: Ui, page: Page, clock: Clock
) -> None:
    """The summary of the picker's confirmation (operations.impact), and Enter on its
    default cancels; one turn's files alone go back at once."""
    clock.now -= 3 * 3600  # the turns were made 3 h before the page's clock
    turns = agent_turns(store)
    points = {p.turn.id: p for p in store.rewind_points()}
    page.goto(ui.url)
    page.locator("#turns li.turn[data-n='3'] button.rewind").click()
    dialog = page.locator("#confirm")
    expect(dialog).to_be_visible(timeout=SHOWN)
    expect(page.locator("#confirm-title")).to_have_text(
        f"Rewind to before turn #3 ({turns[0][:8]}, 3 h ago)?"
    )
    added = sum(p.added for p in points.values())
    removed = sum(p.removed for p in points.values())
    expect(page.locator("#confirm-summary")).to_have_text(
        f"Takes back 3 turns: 2 files, +{added} \N{MINUS SIGN}{removed} lines"
    )
    expect(page.locator("#confirm-plan li")).to_have_text(["deleteapp.py", "deletenotes.txt"])
    expect(page.locator("#confirm-notes li")).to_have_text([NOT_COVERED, SHELL_UNRECORDED])
    expect(page.locator("#confirm-go")).to_have_text("Rewind files and chat")
    expect(page.locator("#confirm-cancel")).to_be_focused()
    page.keyboard.press("Enter")  # the default: nothing changes
    expect(dialog).to_be_hidden()
    page.locator("#turns li.turn[data-n='2'] button.rewind").click()
    expect(dialog).to_be_visible(timeout=SHOWN)
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    assert read(root, "app.py") == SHOUT.encode() and read(root, "notes.txt") == b"bye\n"
    assert store.operations() == []
    page.select_option("#mode", "code")  # the newest turn's files: no question asked
    page.locator("#turns li.turn[data-n='1'] button.rewind").click()
    expect(page.locator("#result-title")).to_contain_text("Rewound: 1 turn", timeout=SHOWN)
    expect(dialog).to_be_hidden()
    assert read(root, "app.py") == FAREWELL.encode()


def test_the_buttons_wait_while_a_turn_runs(store: Store, root: Path, ui: Ui, page: Page) -> None:
    """A turn opened between two loads of the page: its buttons follow it, live."""
    agent_turns(store)
    page.goto(ui.url)
    moves = page.locator("button.move")
    expect(page.locator("#turns li.turn")).to_have_count(3, timeout=SHOWN)
    expect(moves).to_have_count(4)
    for i in range(4):
        expect(moves.nth(i)).to_be_enabled()
    store.begin_turn("default", "still thinking", "m4")  # the agent starts a turn
    expect(page.locator("#running")).to_be_visible(timeout=SHOWN)
    for i in range(4):
        expect(moves.nth(i)).to_be_disabled()
    expect(page.locator("#turns li.turn button", has_text="diff").first).to_be_enabled()
    expect(page.locator("#sessions .running")).to_have_text("a turn is running")
    store.end_turn("default")  # it ends: the buttons come back
    expect(page.locator("#running")).to_be_hidden(timeout=SHOWN)
    expect(page.locator("#turns li.turn")).to_have_count(4)
    for i in range(5):
        expect(moves.nth(i)).to_be_enabled()


def test_progress_shows_while_a_move_waits(store: Store, ui: Ui, page: Page) -> None:
    """The answer to the rewind is held back: the page says what it waits for, and every
    move button waits with it."""
    agent_turns(store)
    held: list[tuple[WebSocketRoute, str]] = []

    def hold_moves(socket: WebSocketRoute) -> None:
        server = socket.connect_to_server()

        def to_server(message: str | bytes) -> None:
            server.send(message)

        def to_page(message: str | bytes) -> None:
            if '"type": "rewind_result"' in str(message) and '"dry_run": false' in str(message):
                held.append((socket, str(message)))
            else:
                socket.send(message)

        socket.on_message(to_server)
        server.on_message(to_page)

    page.route_web_socket(re.compile(r"/ws\?"), hold_moves)
    page.goto(ui.url)
    rewind(page, 2)
    expect(page.locator("#progress")).to_have_text("Rewinding to before turn #2…", timeout=SHOWN)
    expect(page.locator("#undo")).to_be_disabled()
    # whatever list the server's pushes left (the rewound turns may be gone from it already)
    expect(page.locator("#turns li.turn button.rewind").first).to_be_disabled()
    for _ in range(600):  # the held answer reaches the route (a bound, not a timing)
        if held:
            break
        page.wait_for_timeout(50)
    assert len(held) == 1
    socket, message = held[0]
    socket.send(message)
    expect(page.locator("#progress")).to_be_hidden(timeout=SHOWN)
    expect(page.locator("#prompt")).to_have_value("add a farewell")


def test_a_file_the_system_will_not_replace_is_said_in_a_sentence(
    store: Store, root: Path, ui: Ui, page: Page
) -> None:
    """An immutable file (chattr +i): the write fails with EPERM, and the page says what
    that means, never the operating system's text with its temporary file."""
    agent_turns(store)
    subprocess.run(["chattr", "+i", str(root / "app.py")], check=True)
    try:
        page.goto(ui.url)
        page.select_option("#mode", "code")
        page.locator("#turns li.turn[data-n='1'] button.rewind").click()
        problems = page.locator("#problems li")
        expect(problems).to_have_text(
            [
                "app.py was not put back: the system does not let it be replaced (operation "
                "not permitted: is the file immutable, or held by another program?)."
            ],
            timeout=SHOWN,
        )
        expect(page.locator("#result")).to_have_attribute("data-kind", "partial")
        assert "Errno" not in page.locator("#result").inner_text()
    finally:
        subprocess.run(["chattr", "-i", str(root / "app.py")], check=True)
    assert read(root, "app.py") == SHOUT.encode()


def test_the_log_shows_this_sessions_operations_with_a_switch_for_all(
    store: Store, ui: Ui, page: Page
) -> None:
    agent_turns(store, "agent-a")
    agent_turns(store, B_SESSION)
    store.rewind(1, B_SESSION)  # another session's rewind, made elsewhere
    page.goto(ui.page(session="agent-a"))
    expect(page.locator("#ops li")).to_have_text(["No rewind in this session yet."], timeout=SHOWN)
    page.locator("#ops-all").check()
    expect(page.locator("#ops li")).to_have_count(1)
    expect(page.locator("#ops li .who")).to_have_text(B_SESSION)
    page.locator("#ops-all").uncheck()
    rewind(page, 2)
    expect(page.locator("#ops li")).to_have_count(1, timeout=SHOWN)
    expect(page.locator("#ops li")).to_contain_text("rewind to before")
    expect(page.locator("#ops li .who")).to_have_count(0)


#: Real session names, as the agents' hooks make them (48 and 47 characters).
A_SESSION = "claude-code/7c1e0a52-3f4b-4c1e-9d7e-0a523f4b4c1e"
B_SESSION = "gemini-cli/41ab9f03-8e2d-4c5b-a1f0-6d7e8f9a0b1c"


def _one_line(page: Page, selector: str) -> list[dict[str, float]]:
    """The boxes of what ``selector`` matches; each must hold one line of its text."""
    boxes = page.eval_on_selector_all(
        selector,
        """nodes => nodes.map(n => {
            const box = n.getBoundingClientRect();
            const line = parseFloat(getComputedStyle(n).lineHeight) ||
                1.45 * parseFloat(getComputedStyle(n).fontSize);
            const tops = [...n.children].map(c => c.getBoundingClientRect().top);
            return {left: box.left, right: box.right, height: box.height, line: line,
                    spread: tops.length ? Math.max(...tops) - Math.min(...tops) : 0};
        })""",
    )
    assert boxes, selector
    for box in boxes:
        assert box["height"] < 1.5 * box["line"] and box["spread"] < 4, (selector, box)
    return boxes


def test_at_1024_px_nothing_wraps(
    store: Store, ui: Ui, browser: Browser, clock: Clock, tmp_path: Path
) -> None:
    """Real session names and a turn of many files: the stats stay on one line in a turn
    column that keeps its room, the session names within the sidebar, and each turn says
    how long ago it was."""
    clock.now -= 5 * 3600
    store.begin_turn(B_SESSION, "write the readme", "b1")
    store.end_turn(B_SESSION)
    clock.tick(3600)
    for n, prompt in enumerate(["create the greeting", "add a farewell", "shout it"], start=1):
        store.begin_turn(A_SESSION, prompt, f"m{n}")
        for i in range(n * 6):
            agent_write(store, f"src/module_{i}.py", f"x = {n}\n" * (n * 40), session=A_SESSION)
        store.end_turn(A_SESSION)
        clock.tick(3600)
    context = browser.new_context(viewport={"width": 1024, "height": 800})
    try:
        page = context.new_page()
        page.goto(ui.page(session=A_SESSION))
        expect(page.locator("#turns li.turn")).to_have_count(3, timeout=SHOWN)
        page.screenshot(path=str(Path(SHOTS or tmp_path) / "timeline-1024.png"))
        expect(page.locator("#turns li.turn .time")).to_have_text(["2 h ago", "3 h ago", "4 h ago"])
        assert page.locator("#turns .time").first.get_attribute("title")  # the date, on hover
        heads = _one_line(page, "#turns li.turn .head")
        cards = page.eval_on_selector_all(
            "#turns li.turn", "ns => ns.map(n => n.getBoundingClientRect().right)"
        )
        stats = _one_line(page, "#turns li.turn .stats")
        for head, card, stat in zip(heads, cards, stats, strict=True):
            assert stat["right"] <= head["right"] <= card
        column = page.locator("#timeline").bounding_box()
        assert column is not None and column["width"] >= 400  # not squeezed
        sidebar = page.locator("nav").bounding_box()
        assert sidebar is not None
        for name in _one_line(page, "#sessions .session .name > span"):
            assert sidebar["x"] <= name["left"] and name["right"] <= sidebar["x"] + sidebar["width"]
        for button in page.eval_on_selector_all(
            "#sessions .session", "ns => ns.map(n => n.getBoundingClientRect().height)"
        ):
            assert button < 3 * 20  # the agent, then its id: two lines, never three
    finally:
        context.close()
