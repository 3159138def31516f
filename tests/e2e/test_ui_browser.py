"""The timeline page in a real browser: Debian's chromium, driven by Playwright, against a
real ``snapstore ui``."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, WebSocketRoute, expect, sync_playwright

from snapstore import Store

from ..support import read, write
from ..support.ui import CHROMIUM, CHROMIUM_ARGS, GREET, SHOUT, Ui, agent_turns, running_ui

#: Milliseconds Playwright waits for what must appear (a bound against a hung test).
SHOWN = 30_000


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context()
    yield context.new_page()
    context.close()


@pytest.fixture
def ui(store: Store, root: Path) -> Iterator[Ui]:
    with running_ui(root) as server:
        yield server


def turns_of(page: Page) -> list[str]:
    return page.locator("#turns li.turn .prompt").all_inner_texts()


def test_the_page_shows_three_turns_and_rewinds_turn_two(
    store: Store, root: Path, ui: Ui, page: Page
) -> None:
    agent_turns(store)
    page.goto(ui.url)
    expect(page.locator("#turns li.turn")).to_have_count(3, timeout=SHOWN)
    assert turns_of(page) == ["shout the greeting", "add a farewell", "create the greeting"]
    expect(page.locator("#turns li.turn[data-n='2'] .added")).to_have_text("+5")
    page.select_option("#policy", "markers")
    page.locator("#turns li.turn[data-n='2'] button.rewind").click()
    expect(page.locator("#prompt")).to_have_text("add a farewell", timeout=SHOWN)
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
        buttons = [
            pages[0].locator("#turns li.turn[data-n='2'] button.rewind"),
            pages[1].locator("#turns li.turn[data-n='1'] button.rewind"),
        ]
        for button in buttons:  # both sent before either answer is read
            button.click(no_wait_after=True)
        expect(pages[0].locator("#prompt")).to_have_text("add a farewell", timeout=SHOWN)
        expect(pages[1].locator("#prompt")).to_have_text("write the readme", timeout=SHOWN)
        expect(pages[0].locator("#title")).to_have_text("agent-a")
        expect(pages[1].locator("#title")).to_have_text("agent-b")
    finally:
        for context in contexts:
            context.close()
    assert read(root, "README.md") is None and read(root, "app.py") == GREET.encode()


def test_undo_from_the_page(store: Store, root: Path, ui: Ui, page: Page) -> None:
    agent_turns(store)
    page.goto(ui.url)
    page.locator("#turns li.turn[data-n='1'] button.rewind").click()
    expect(page.locator("#prompt")).to_have_text("shout the greeting", timeout=SHOWN)
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
    page.locator("#turns li.turn[data-n='2'] button.rewind").click()
    expect(page.locator("#rewound li.turn")).to_have_count(2, timeout=SHOWN)
    page.locator("#rewound-box summary").click()
    page.locator(f"#rewound li.turn[data-turn='{turns[2]}'] button.switch").click()
    expect(page.locator("#result-title")).to_contain_text("Switched", timeout=SHOWN)
    assert read(root, "app.py") == SHOUT.encode() and read(root, "notes.txt") == b"bye\n"
    expect(page.locator("#turns li.turn")).to_have_count(3, timeout=SHOWN)
    expect(page.locator("#rewound-box")).to_be_hidden()
