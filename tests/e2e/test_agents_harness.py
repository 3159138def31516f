"""The harness that drives the real agent CLIs: its installer, its scripted model and its checks
that nothing left loopback. These run in seconds and need no agent installed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from ..support.agents import install as installer
from ..support.agents.egress import Blackhole, off_loopback, strace_connects
from ..support.agents.events import patch_paths
from ..support.agents.fake_model import Edit, FakeModel, Shell, ToolCall, Turn, Write
from ..support.agents.wire import Message, fill_schema

TURNS = [
    Turn("first prompt", (Write("a.txt", "A"), Edit("a.txt", "A", "B")), "one"),
    Turn("second prompt", (Shell("true"),), "two"),
]


def calls(step, ws: str) -> ToolCall:
    return ToolCall(type(step).__name__, {"ws": ws})


def test_the_model_answers_each_step_then_the_final_text() -> None:
    model = FakeModel(TURNS, calls, "/ws")
    user = Message("user", "<context/>\nfirst prompt")
    assert model.reply([user], True).call == ToolCall("Write", {"ws": "/ws"})
    done = [user, Message("assistant", ""), Message("tool", "", 1)]
    assert model.reply(done, True).call.name == "Edit"
    done += [Message("assistant", ""), Message("tool", "", 1)]
    assert model.reply(done, True).text == "one"
    # a resumed session sends the whole history: the latest scripted prompt wins
    resumed = [*done, Message("assistant", "one"), Message("user", "second prompt")]
    assert model.reply(resumed, True).call.name == "Shell"


def test_side_requests_without_tools_get_text_and_unknown_prompts_get_no_tool() -> None:
    model = FakeModel(TURNS, calls, "/ws")
    assert model.reply([Message("user", "first prompt")], False).text == "OK"
    assert model.reply([Message("user", "something else")], True).call is None


def test_schema_answers_fit_the_schema() -> None:
    schema = {
        "type": "OBJECT",
        "properties": {
            "next_speaker": {"type": "STRING", "enum": ["user", "model"]},
            "score": {"type": "INTEGER"},
            "low": {"type": "number", "minimum": 5},
            "why": {"type": "STRING"},
            "ok": {"type": "BOOLEAN"},
            "list": {"type": "ARRAY"},
        },
    }
    assert fill_schema(schema) == {
        "next_speaker": "user",
        "score": 1,
        "low": 5,
        "why": "",
        "ok": False,
        "list": [],
    }


@pytest.mark.parametrize(
    ("path", "body", "kind"),
    [
        (
            "/v1/messages",
            {
                "stream": True,
                "tools": [{}],
                "messages": [{"role": "user", "content": "first prompt"}],
            },
            "anthropic",
        ),
        (
            "/v1/chat/completions",
            {
                "stream": True,
                "tools": [{}],
                "messages": [{"role": "user", "content": "first prompt"}],
            },
            "chat",
        ),
        (
            "/v1/responses",
            {
                "stream": True,
                "tools": [{}],
                "input": [
                    {
                        "type": "message",
                        "role": "user",
                        "content": [{"type": "input_text", "text": "first prompt"}],
                    }
                ],
            },
            "responses",
        ),
        (
            "/v1beta/models/m:streamGenerateContent",
            {
                "tools": [{"functionDeclarations": [{}]}],
                "contents": [{"role": "user", "parts": [{"text": "first prompt"}]}],
            },
            "gemini",
        ),
    ],
)
def test_every_protocol_streams_the_scripted_tool_call(path: str, body: dict, kind: str) -> None:
    with FakeModel(TURNS, calls, "/ws") as model:
        req = urllib.request.Request(
            model.url + path,
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=10) as resp:
            assert resp.headers["Content-Type"] == "text/event-stream"
            events = [
                json.loads(line[6:])
                for line in resp.read().decode().splitlines()
                if line.startswith("data: {")
            ]
    text = json.dumps(events)
    assert '"Write"' in text and "/ws" in text, (kind, text)
    assert model.requests[0].path == path and model.requests[0].body == body


def test_unknown_routes_are_recorded_and_refused() -> None:
    with FakeModel(TURNS, calls, "/ws") as model:
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(model.url + "/telemetry", data=b"{}", timeout=10)
        assert err.value.code == 404
        assert model.paths() == ["POST /telemetry"]


def test_apply_patch_paths_include_every_add_update_move_and_delete() -> None:
    patch = (
        "*** Begin Patch\n*** Add File: new.txt\n+x\n*** Update File: a/old.py\n"
        "*** Move to: b/new.py\n@@\n-1\n+2\n*** Delete File: gone.md\n*** End Patch\n"
    )
    assert patch_paths(patch) == ["new.txt", "a/old.py", "b/new.py", "gone.md"]


def test_only_loopback_counts_as_staying_home(tmp_path: Path) -> None:
    trace = tmp_path / "strace.1"
    trace.write_text(
        "12 connect(3, {sa_family=AF_INET, sin_port=htons(4000), "
        'sin_addr=inet_addr("127.0.0.1")}, 16) = 0\n'
        "12 connect(4, {sa_family=AF_INET, sin_port=htons(53), "
        'sin_addr=inet_addr("10.255.255.53")}, 16) = 0\n'
        "13 connect(5, {sa_family=AF_INET6, sin6_port=htons(443), sin6_flowinfo=htonl(0), "
        'inet_pton(AF_INET6, "2606:4700::1", &sin6_addr), sin6_scope_id=0}, 28) = -1\n'
        "13 connect(6, {sa_family=AF_INET6, sin6_port=htons(80), sin6_flowinfo=htonl(0), "
        'inet_pton(AF_INET6, "::ffff:127.0.0.1", &sin6_addr), sin6_scope_id=0}, 28) = 0\n'
        '14 connect(7, {sa_family=AF_UNIX, sun_path="/run/x.sock"}, 110) = 0\n'
    )
    found = strace_connects(trace)
    assert found == [
        "127.0.0.1:4000",
        "10.255.255.53:53",
        "2606:4700::1:443",
        "::ffff:127.0.0.1:80",
    ]
    assert off_loopback(found) == ["10.255.255.53:53", "2606:4700::1:443"]


def test_the_dead_end_proxy_names_what_tried_to_leave() -> None:
    proxy = Blackhole().start()
    try:
        env = {**os.environ, "HTTPS_PROXY": proxy.url, "NO_PROXY": ""}
        code = (
            "import urllib.request\n"
            "try: urllib.request.urlopen('https://example.invalid/', timeout=5)\n"
            "except Exception: pass\n"
        )
        subprocess.run([sys.executable, "-c", code], env=env, timeout=30, check=True)
    finally:
        proxy.stop()
    assert proxy.requests == ["CONNECT example.invalid:443 HTTP/1.0"]


def test_an_unreachable_registry_is_one_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    proxy = Blackhole().start()  # a registry that hangs up at once
    try:
        monkeypatch.setenv("npm_config_registry", proxy.url + "/")
        monkeypatch.setenv("npm_config_fetch_retry_mintimeout", "100")
        monkeypatch.setenv("npm_config_fetch_retry_maxtimeout", "200")
        monkeypatch.setenv("npm_config_cache", str(tmp_path / "npm-cache"))
        with pytest.raises(installer.InstallError) as err:
            installer.install("auggie", cache=tmp_path / "agents", timeout=120)
    finally:
        proxy.stop()
    assert "npm install @augmentcode/auggie@" in str(err.value)
    assert "registry" in str(err.value)
    assert "\n" not in str(err.value)
    assert [p.name for p in (tmp_path / "agents").iterdir()] == [
        f"{installer.PINS['auggie'].slug}.lock"
    ]  # no half-installed tree left


RACE = """
import sys, time
sys.path.insert(0, {root!r})
from tests.support.agents import install as m
def fake(pin, prefix, timeout):
    with open({log!r}, "a") as f:
        f.write("start\\n")
    time.sleep(1)
    bin_dir = prefix / "node_modules" / ".bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / pin.bin).write_text("")
m._npm_install = fake
print(m.install("auggie", cache=m.Path({cache!r})))
"""


def test_two_processes_install_once(tmp_path: Path) -> None:
    log, cache = tmp_path / "log", tmp_path / "agents"
    code = RACE.format(root=str(Path(__file__).parents[2]), log=str(log), cache=str(cache))
    procs = [
        subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=60)[0].strip() for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert log.read_text() == "start\n"  # the second waited for the lock, then reused it
    assert outs[0] == outs[1] and outs[0].endswith("/node_modules/.bin/auggie")
