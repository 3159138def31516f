"""The timeline page's WebSocket API (docs/api.md), driven by a Python client over a real
``snapstore ui``: every frame, the refusals, and what the server lets through."""

from __future__ import annotations

import base64
import http.client
import json
import os
import socket
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from snapstore_cli.operations.impact import NOT_COVERED, SHELL_UNRECORDED
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from snapstore import Store
from snapstore.ops.gitplan import PUSHED

from ..support import hermetic_env, read, write
from ..support.gitrepo import git
from ..support.ui import (
    FAREWELL,
    GIT_SESSION,
    GREET,
    SHOUT,
    WAIT,
    Ui,
    agent_turns,
    ask,
    git_repo,
    git_turn,
    open_socket,
    running_ui,
    shell_turn,
)


@pytest.fixture
def ui(store: Store, root: Path) -> Iterator[Ui]:
    with running_ui(root) as server:
        yield server


def test_the_read_frames_answer_with_their_session(store: Store, root: Path) -> None:
    turns = agent_turns(store)
    with running_ui(root) as ui, open_socket(ui) as ws:
        listed = ask(ws, {"action": "sessions"})
        assert listed["type"] == "sessions"
        assert listed["data"]["session_id"] is None
        assert [(s["session_id"], s["turns"]) for s in listed["data"]["sessions"]] == [
            ("default", 3)
        ]
        points = ask(ws, {"action": "rewind_list", "session_id": "default"})
        assert points["type"] == "rewind_points"
        assert points["data"]["session_id"] == "default"
        assert [(p["n"], p["id"], p["message_id"]) for p in points["data"]["points"]] == [
            (1, turns[2], "m3"),
            (2, turns[1], "m2"),
            (3, turns[0], "m1"),
        ]
        loaded = ask(ws, {"action": "load_session", "session_id": "default"})
        assert loaded["type"] == "session"
        assert loaded["data"]["head"] == turns[2]
        assert [t["prompt"] for t in loaded["data"]["turns"]] == [
            "shout the greeting",
            "add a farewell",
            "create the greeting",
        ]
        second = loaded["data"]["turns"][1]
        assert [(f["path"], f["added"], f["removed"]) for f in second["files"]] == [
            ("app.py", 4, 0),
            ("notes.txt", 1, 0),
        ]
        diff = ask(ws, {"action": "diff", "session_id": "default", "turn": 1})
        assert diff["type"] == "diff"
        assert diff["data"]["turn"] == turns[2]
        assert "+    return 'HI'" in diff["data"]["files"][0]["lines"]
        ops = ask(ws, {"action": "ops"})
        assert ops["type"] == "ops" and ops["data"]["ops"] == []


@pytest.mark.parametrize(
    ("frame", "code"),
    [
        ("not json", "bad_json"),
        ("[1, 2]", "bad_frame"),
        ('{"session_id": "default"}', "bad_frame"),
        ('{"action": "explode", "session_id": "default"}', "unknown_action"),
        ('{"action": "load_session", "session_id": "nobody"}', "unknown_session"),
        ('{"action": "load_session"}', "bad_frame"),
        ('{"action": "rewind", "session_id": "default", "turn": 9}', "unknown_turn"),
        ('{"action": "rewind", "session_id": "default", "turn": "ffffffff"}', "unknown_turn"),
        ('{"action": "rewind", "session_id": "default", "target_msg_id": "m9"}', "unknown_turn"),
        ('{"action": "rewind", "session_id": "default", "turn": [1]}', "bad_frame"),
        ('{"action": "rewind", "session_id": "default", "turn": 1, "mode": "all"}', "bad_frame"),
        ('{"action": "diff", "session_id": "default", "turn": "../../etc/passwd"}', "unknown_turn"),
        ('{"action": "undo", "session_id": "default"}', "not_found"),
        ('{"action": "undo", "session_id": "default", "operation_id": "abc"}', "unknown_operation"),
        ("[" * 30_000 + "]" * 30_000, "bad_json"),  # nested past Python's stack
        ('{"action": "sessions", "session_id": "default", "request_id": [[1]]}', "bad_frame"),
        ('{"action": "sessions", "request_id": "' + "r" * 300 + '"}', "bad_frame"),
    ],
    ids=lambda value: value[:60] if isinstance(value, str) else value,
)
def test_bad_input_gets_an_error_frame_and_the_socket_stays(
    store: Store, root: Path, ui: Ui, frame: str, code: str
) -> None:
    agent_turns(store)
    before = (read(root, "app.py"), store.rewind_points())
    with open_socket(ui) as ws:
        ws.send(frame)
        answer = json.loads(ws.recv(timeout=WAIT))
        assert answer["type"] == "error"
        assert answer["data"]["code"] == code
        message = answer["data"]["message"]
        assert "\n" not in message and "Traceback" not in message
        assert "request_id" not in answer["data"]  # a bad one is never echoed
        sent = json.loads(frame) if code != "bad_json" else None
        expected = sent.get("session_id") if isinstance(sent, dict) else None
        assert answer["data"]["session_id"] == expected
        assert ask(ws, {"action": "sessions"})["type"] == "sessions"  # still answering
    assert (read(root, "app.py"), store.rewind_points()) == before


def test_rewind_by_message_id_then_undo_then_switch(store: Store, root: Path, ui: Ui) -> None:
    turns = agent_turns(store)
    with open_socket(ui) as ws:
        done = ask(ws, {"action": "rewind", "session_id": "default", "target_msg_id": "m2"})
        assert done["type"] == "rewind_result"
        data = done["data"]
        assert data["session_id"] == "default"
        assert data["user_text"] == "add a farewell"
        assert data["turns_reverted"] == [turns[2], turns[1]]
        assert data["restored_paths"] == ["app.py", "notes.txt"]
        assert data["new_head_id"] == turns[0]
        assert data["errors"] == [] and data["conflicts"] == []
        assert read(root, "app.py") == GREET.encode() and read(root, "notes.txt") is None
        ops = ask(ws, {"action": "ops", "session_id": "default"})["data"]["ops"]
        assert [(o["action"], o["id"], o["target"]) for o in ops] == [
            ("rewind", data["operation_id"], turns[1])
        ]

        undone = ask(ws, {"action": "undo", "session_id": "default"})
        assert undone["type"] == "undo_result"
        assert undone["data"]["new_head_id"] == turns[2]
        assert read(root, "app.py") == SHOUT.encode()
        assert read(root, "notes.txt") == b"bye\n"

        ask(ws, {"action": "rewind", "session_id": "default", "turn": 2})
        switched = ask(ws, {"action": "switch", "session_id": "default", "turn": turns[2]})
        assert switched["type"] == "switch_result"
        assert switched["data"]["new_head_id"] == turns[2]
        assert read(root, "app.py") == SHOUT.encode()
        ops = ask(ws, {"action": "ops"})["data"]["ops"]
        assert [o["action"] for o in ops] == ["switch", "rewind", "undo", "rewind"]
        assert ops[3]["undone_by"] == undone["data"]["operation_id"]


def test_a_running_turn_refuses_a_rewind_and_nothing_changes(
    store: Store, root: Path, ui: Ui
) -> None:
    agent_turns(store)
    running = store.begin_turn("default", "still thinking", "m4")
    before = (read(root, "app.py"), read(root, "notes.txt"), store.rewind_points())
    with open_socket(ui) as ws:
        for frame in (
            {"action": "rewind", "session_id": "default", "turn": 2},
            {"action": "rewind", "session_id": "default", "target_msg_id": "m1"},
        ):
            refused = ask(ws, frame)
            assert refused["type"] == "error"
            assert refused["data"]["code"] == "run_active"
            assert refused["data"]["session_id"] == "default"
            assert running.id in refused["data"]["message"]
            # a sentence for people, with what to do next
            assert refused["data"]["message"].startswith("Turn ")
            assert refused["data"]["message"].endswith(
                "Wait until the agent finishes its turn; the buttons come back then."
            )
        assert ask(ws, {"action": "ops"})["data"]["ops"] == []
    assert (read(root, "app.py"), read(root, "notes.txt"), store.rewind_points()) == before
    assert store.open_turn("default") == running


def test_a_dry_run_rewind_says_what_it_would_do_and_changes_nothing(
    store: Store, root: Path, ui: Ui
) -> None:
    """What the page's confirmation shows: the plan, and the summary the picker shows too."""
    turns = agent_turns(store)
    before = (read(root, "app.py"), read(root, "notes.txt"), store.rewind_points())
    with open_socket(ui) as ws:
        frame = {"action": "rewind", "session_id": "default", "turn": 2, "dry_run": True}
        plan = ask(ws, frame)
        assert plan["type"] == "rewind_result", plan
        data = plan["data"]
        assert data["dry_run"] is True and data["turns_reverted"] == [turns[2], turns[1]]
        assert data["restored"] == ["app.py"] and data["deleted"] == ["notes.txt"]
        points = {p.turn.id: p for p in store.rewind_points()}
        assert data["summary"] == {
            "turns": 2,
            "files": 2,
            "added": points[turns[1]].added + points[turns[2]].added,
            "removed": points[turns[1]].removed + points[turns[2]].removed,
            "time": points[turns[1]].turn.created,
            "uncaptured": [],
            "notes": [NOT_COVERED, SHELL_UNRECORDED],
        }
        refused = ask(ws, {**frame, "dry_run": "yes"})
        assert refused["data"]["code"] == "bad_frame"
        assert ask(ws, {"action": "ops"})["data"]["ops"] == []
    assert (read(root, "app.py"), read(root, "notes.txt"), store.rewind_points()) == before


def test_a_turn_that_moved_git_says_what_it_did_and_each_move_what_moves_in_git(
    cli, root: Path
) -> None:
    """The turn (load_session, rewind_list) says what it did to the repository as `show`
    does; a dry rewind, the rewind, the operation log and the undo say, in the command line's
    lines (`git_lines`), what moves in it and where what moved is kept."""
    x = git_turn(cli, root)
    rewind = {"action": "rewind", "session_id": GIT_SESSION, "turn": 1}
    with running_ui(root) as ui, open_socket(ui) as ws:
        loaded = ask(ws, {"action": "load_session", "session_id": GIT_SESSION})["data"]
        [turn] = loaded["turns"]
        shown = cli("--json", "show", "1", "--session", GIT_SESSION).json["git"]
        assert (
            turn["git"]
            == shown
            == [
                "checked out x",
                f"created branch x at {x[:7]}",
                "updated the index",
            ]
        )
        assert turn["git_note"] is None
        points = ask(ws, {"action": "rewind_list", "session_id": GIT_SESSION})["data"]["points"]
        assert [p["git"] for p in points] == [turn["git"]]

        plan = ask(ws, {**rewind, "dry_run": True})["data"]
        assert plan["git_lines"] == [
            {"kind": "git", "text": "HEAD: x -> main"},
            {"kind": "git", "text": f"refs/heads/x: {x[:7]} -> (none)"},
            {"kind": "git", "text": "the index put back"},
            {
                "kind": "note",
                "text": "what the refs point at now will be kept under "
                "refs/snapstore/<operation>/ (heads/x); `snapstore undo <operation>` moves "
                "them back",
            },
        ]
        assert git(root, "symbolic-ref", "HEAD") == "refs/heads/x"  # the dry run moved nothing

        done = ask(ws, rewind)["data"]
        op = done["operation_id"]
        kept = f"refs/snapstore/{op}/heads/x"
        assert done["git_lines"] == [
            {"kind": "git", "text": "HEAD: x -> main"},
            {"kind": "git", "text": f"refs/heads/x: {x[:7]} -> (none) (kept as {kept})"},
            {"kind": "git", "text": "the index put back"},
            {
                "kind": "note",
                "text": f"what the refs pointed at is kept under refs/snapstore/{op}/ (`git log "
                f"{kept}`); `snapstore undo {op}` moves them back",
            },
        ]
        assert done["git"]["kept"] == [kept] and done["git"]["ok"]
        assert git(root, "symbolic-ref", "HEAD") == "refs/heads/main"
        assert git(root, "rev-parse", kept) == x  # the agent's commit, kept where it says
        ops = ask(ws, {"action": "ops", "session_id": GIT_SESSION})["data"]["ops"]
        assert [o["git_lines"] for o in ops] == [done["git_lines"]]

        undone = ask(ws, {"action": "undo", "session_id": GIT_SESSION})["data"]
        assert (
            undone["git_lines"]
            == [  # x comes back: nothing it moved had a commit to keep
                {"kind": "git", "text": "HEAD: main -> x"},
                {"kind": "git", "text": f"refs/heads/x: (none) -> {x[:7]}"},
                {"kind": "git", "text": "the index put back"},
            ]
        )
        assert git(root, "symbolic-ref", "HEAD") == "refs/heads/x"
        ops = ask(ws, {"action": "ops", "session_id": GIT_SESSION})["data"]["ops"]
        assert [o["git_lines"] for o in ops] == [undone["git_lines"], done["git_lines"]]


def test_a_ref_the_agent_pushed_is_said_as_one_no_rewind_takes_back(
    cli, root: Path, tmp_path: Path
) -> None:
    bare = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    git_repo(cli, root)
    git(root, "remote", "add", "origin", str(bare))
    git(root, "push", "-q", "origin", "main")
    shell_turn(
        cli, root, "echo agent >> a.txt && git commit -qm agent a.txt && git push -q origin main"
    )
    pushed = {"kind": "note", "text": f"refs/remotes/origin/main: {PUSHED}"}
    rewind = {"action": "rewind", "session_id": GIT_SESSION, "turn": 1}
    with running_ui(root) as ui, open_socket(ui) as ws:
        plan = ask(ws, {**rewind, "dry_run": True})["data"]
        assert pushed in plan["git_lines"]
        done = ask(ws, rewind)["data"]
        assert pushed in done["git_lines"]
        assert done["git_lines"][0]["text"].startswith("refs/heads/main: ")  # main went back
    assert git(root, "rev-parse", "origin/main") == git(bare, "rev-parse", "main")  # it stays


def test_a_turn_outside_git_and_its_moves_say_nothing_of_it(store: Store, ui: Ui) -> None:
    agent_turns(store)
    with open_socket(ui) as ws:
        loaded = ask(ws, {"action": "load_session", "session_id": "default"})["data"]
        assert [(t["git"], t["git_note"]) for t in loaded["turns"]] == [([], None)] * 3
        rewind = {"action": "rewind", "session_id": "default", "turn": 1}
        assert ask(ws, {**rewind, "dry_run": True})["data"]["git_lines"] == []
        assert ask(ws, rewind)["data"]["git_lines"] == []
        assert [o["git_lines"] for o in ask(ws, {"action": "ops"})["data"]["ops"]] == [[]]


def test_new_head_id_comes_back_after_a_partial_failure(store: Store, root: Path, ui: Ui) -> None:
    """The user changed the agent's line since: the file stays in conflict, but the head has
    moved, and the reply says where to, so that a client mirroring the head can follow it."""
    turns = agent_turns(store)
    write(root, "app.py", SHOUT.replace("'HI'", "'Hey'"))
    with open_socket(ui) as ws:
        data = ask(ws, {"action": "rewind", "session_id": "default", "turn": 1})["data"]
    assert [c["path"] for c in data["conflicts"]] == ["app.py"]
    assert data["new_head_id"] == turns[1]
    assert store.rewind_points()[0].turn.id == turns[1]  # the store's head is the one said
    assert read(root, "app.py") == SHOUT.replace("'HI'", "'Hey'").encode()  # the user's kept


def test_two_sessions_rewinding_at_once_each_get_their_own_result(
    store: Store, root: Path, ui: Ui
) -> None:
    a = agent_turns(store, "agent-a")
    b_turn = store.begin_turn("agent-b", "write the readme", "b1").id
    store.pre_write(["README.md"], "Write", "agent-b")
    write(root, "README.md", "# readme\n")
    store.post_write(["README.md"], "agent-b")
    store.end_turn("agent-b")
    with open_socket(ui) as first, open_socket(ui) as second:
        first.send(json.dumps({"action": "rewind", "session_id": "agent-a", "turn": 2}))
        second.send(json.dumps({"action": "rewind", "session_id": "agent-b", "turn": 1}))
        answers = [json.loads(first.recv(timeout=WAIT)), json.loads(second.recv(timeout=WAIT))]
    assert [(f["type"], f["data"]["session_id"]) for f in answers] == [
        ("rewind_result", "agent-a"),
        ("rewind_result", "agent-b"),
    ]
    assert answers[0]["data"]["turns_reverted"] == [a[2], a[1]]
    assert answers[1]["data"]["turns_reverted"] == [b_turn]
    assert read(root, "README.md") is None and read(root, "app.py") == GREET.encode()


def test_new_turns_are_pushed_to_a_loaded_session(store: Store, root: Path, ui: Ui) -> None:
    agent_turns(store)
    with open_socket(ui) as ws:
        first = ask(ws, {"action": "load_session", "session_id": "default"})
        turn = store.begin_turn("default", "a fourth prompt", "m4")
        store.end_turn("default")
        pushed = json.loads(ws.recv(timeout=WAIT))
    assert pushed["type"] == "session"
    assert pushed["data"]["session_id"] == "default"
    assert pushed["data"]["request_id"] == first["data"]["request_id"]
    assert [t["id"] for t in pushed["data"]["turns"]][:1] == [turn.id]
    assert len(pushed["data"]["turns"]) == 4


def _get(ui: Ui, path: str, host: str | None = None) -> http.client.HTTPResponse:
    conn = http.client.HTTPConnection("127.0.0.1", ui.port, timeout=WAIT)
    conn.request("GET", path, headers={"Host": host} if host else {})
    return conn.getresponse()


def test_the_page_needs_the_token_and_its_own_host(store: Store, ui: Ui) -> None:
    page = _get(ui, f"/?token={ui.token}")
    assert page.status == 200
    policy = page.getheader("Content-Security-Policy") or ""
    assert "default-src 'none'" in policy and "script-src 'self'" in policy
    assert "unsafe-inline" not in policy
    body = page.read().decode()
    assert "<script src=" in body and "<script>" not in body  # no inline script
    for path in ("/", "/app.js", "/app.css", "/?token=wrong", f"/?token={ui.token[:-1]}"):
        assert _get(ui, path).status == 401, path
    assert _get(ui, f"/app.js?token={ui.token}").status == 200
    assert _get(ui, f"/nothing?token={ui.token}").status == 404
    for host in ("evil.example:80", f"evil.example:{ui.port}", "127.0.0.1"):
        assert _get(ui, f"/?token={ui.token}", host=host).status == 403, host
    assert _get(ui, f"/?token={ui.token}", host=f"localhost:{ui.port}").status == 200


def test_the_socket_needs_the_token_and_the_pages_origin(store: Store, ui: Ui) -> None:
    for url, options, status in (
        (ui.socket_url(token=""), {}, 401),
        (ui.socket_url(token="x" * 43), {}, 401),
        (ui.socket_url(), {"origin": "http://evil.example"}, 403),
        (ui.socket_url(), {"origin": f"http://127.0.0.1:{ui.port + 1}"}, 403),
    ):
        with pytest.raises(InvalidStatus) as refused, connect(url, open_timeout=WAIT, **options):
            pass
        assert refused.value.response.status_code == status, (url, options)
    with open_socket(ui, origin=f"http://localhost:{ui.port}") as ws:
        assert ask(ws, {"action": "sessions"})["type"] == "sessions"


def test_without_the_ui_extra_one_line_says_how_to_install_it(store: Store, root: Path) -> None:
    blocked = (
        "import sys; sys.modules['websockets'] = None; sys.argv = ['snapstore', 'ui', '--no-open']"
        "\nfrom snapstore_cli.launch import main; main()"
    )
    done = subprocess.run(
        [sys.executable, "-c", blocked],
        cwd=root,
        env=hermetic_env(),
        capture_output=True,
        text=True,
        timeout=WAIT,
    )
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        "snapstore: the timeline page needs the ui extra: pip install 'snapstore[ui]'\n"
    )


def test_a_busy_store_answers_locked_and_the_socket_stays(store: Store, root: Path) -> None:
    """Another writer holds the store past the lock timeout: the rewind is refused, nothing
    changes, and the next request is answered once the store is free."""
    agent_turns(store)
    with running_ui(root, "--json", SNAPSTORE_LOCK_TIMEOUT="0.2") as ui, open_socket(ui) as ws:
        with store.repo.lock():
            busy = ask(ws, {"action": "rewind", "session_id": "default", "turn": 1})
        assert busy["type"] == "error"
        assert (busy["data"]["code"], busy["data"]["session_id"]) == ("locked", "default")
        assert read(root, "app.py") == SHOUT.encode()
        done = ask(ws, {"action": "rewind", "session_id": "default", "turn": 1})
        assert done["type"] == "rewind_result"
    assert read(root, "app.py") == FAREWELL.encode()


def _stalled_socket(ui: Ui, frame: dict) -> socket.socket:
    """A WebSocket client that subscribes with ``frame``, then never reads: a tab the browser
    froze, with a small receive buffer so that the server's sends soon block on it."""
    conn = socket.socket()
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    conn.connect(("127.0.0.1", ui.port))
    key = base64.b64encode(os.urandom(16)).decode()
    conn.sendall(
        f"GET /ws?token={ui.token} HTTP/1.1\r\nHost: 127.0.0.1:{ui.port}\r\n"
        f"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
        "Sec-WebSocket-Version: 13\r\n\r\n".encode()
    )
    head = b""
    while b"\r\n\r\n" not in head:
        head += conn.recv(1)
    assert head.startswith(b"HTTP/1.1 101"), head
    payload, mask = json.dumps(frame).encode(), os.urandom(4)
    masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    conn.sendall(bytes([0x81, 0x80 | 126]) + struct.pack("!H", len(payload)) + mask + masked)
    return conn


def test_a_stalled_client_never_delays_another_and_is_dropped_with_a_close_frame(
    store: Store, root: Path, ui: Ui
) -> None:
    big = "x" * 100_000  # prompts are shown whole: each session frame is megabytes
    for n in range(20):
        store.begin_turn("default", f"{n} {big}")
        store.end_turn("default")
    subscribe = {"action": "load_session", "session_id": "default", "request_id": "s"}
    stalled = _stalled_socket(ui, subscribe)
    with open_socket(ui, max_size=None) as live:
        ask(live, {**subscribe, "request_id": "live"})
        for n in range(12):  # each new turn is pushed to both: the stalled one falls behind
            store.begin_turn("default", f"more {n} {big}")
            store.end_turn("default")
            pushed = json.loads(live.recv(timeout=WAIT))
            assert pushed["type"] == "session" and len(pushed["data"]["turns"]) == 21 + n
    stalled.settimeout(WAIT)
    received = b""
    while chunk := stalled.recv(1 << 20):  # read it out: the server ends it with a close frame
        received += chunk
    stalled.close()
    close = bytes([0x88, 2 + len(b"fell too far behind; reconnect")]) + struct.pack("!H", 1008)
    assert close in received[-64:]


def test_redo_does_the_undone_rewind_again(store: Store, root: Path, ui: Ui) -> None:
    """``redo``, as ``snapstore redo``: the newest undo not redone is taken back by doing its
    rewind again; with nothing left to redo, ``not_found``."""
    turns = agent_turns(store)
    with open_socket(ui) as ws:
        rewound = ask(ws, {"action": "rewind", "session_id": "default", "turn": 2})["data"]
        undone = ask(ws, {"action": "undo", "session_id": "default"})["data"]
        assert read(root, "app.py") == SHOUT.encode()
        frame = {"action": "redo", "session_id": "default", "operation_id": ""}
        assert ask(ws, frame)["data"]["code"] == "bad_frame"
        plan = ask(ws, {"action": "redo", "session_id": "default", "dry_run": True})
        assert plan["type"] == "redo_result" and plan["data"]["dry_run"] is True
        assert read(root, "app.py") == SHOUT.encode()  # a dry run changes nothing
        redone = ask(ws, {"action": "redo", "session_id": "default"})
        assert redone["type"] == "redo_result", redone
        data = redone["data"]
        assert data["session_id"] == "default" and data["new_head_id"] == turns[0]
        assert data["turns_reverted"] == [turns[2], turns[1]]
        assert data["restored_paths"] == ["app.py", "notes.txt"] and data["errors"] == []
        assert read(root, "app.py") == GREET.encode() and read(root, "notes.txt") is None
        ops = ask(ws, {"action": "ops", "session_id": "default"})["data"]["ops"]
        assert [o["id"] for o in ops] == [
            data["operation_id"],
            undone["operation_id"],
            rewound["operation_id"],
        ]
        again = ask(ws, {"action": "redo", "session_id": "default"})
        assert again["type"] == "error" and again["data"]["code"] == "not_found"


def test_finish_writes_what_a_rewind_left_in_conflict(store: Store, root: Path, ui: Ui) -> None:
    """``finish``, as ``snapstore rewind --finish``: the paths the session's last move left
    are tried again with ``on_conflict`` (markers keep the user's line, and leave the path to
    resolve; theirs writes the turn's version); the head stays; then nothing is left."""
    turns = agent_turns(store)
    mine = SHOUT.replace("'HI'", "'Hey'")
    write(root, "app.py", mine)  # the user changed the agent's line
    with open_socket(ui) as ws:
        left = ask(ws, {"action": "rewind", "session_id": "default", "turn": 1})["data"]
        assert [e["path"] for e in left["errors"]] == ["app.py"]
        frame = {"action": "finish", "session_id": "default", "on_conflict": "ours"}
        assert ask(ws, frame)["data"]["code"] == "bad_frame"
        finished = ask(ws, {**frame, "on_conflict": "markers"})
        assert finished["type"] == "finish_result", finished
        data = finished["data"]
        assert data["marked"] == ["app.py"] and data["new_head_id"] == turns[1]
        text = read(root, "app.py")
        assert text is not None and b"<<<<<<<" in text and b"'Hey'" in text
        assert store.rewind_points()[0].turn.id == turns[1]  # the head stayed
        forced = ask(ws, {**frame, "on_conflict": "theirs"})["data"]  # the markers are left too
        assert forced["restored"] == ["app.py"] and forced["errors"] == []
        assert read(root, "app.py") == FAREWELL.encode()
        nothing = ask(ws, {"action": "finish", "session_id": "default"})
        assert nothing["type"] == "error" and nothing["data"]["code"] == "not_found"
