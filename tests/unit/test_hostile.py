"""Hostile input: fuzzed paths and hook payloads, swapped symlinks, stores that are not ours.

A sentinel tree outside the workspace is watched with inotify for the whole of
each test: any open, read, write or change of anything in it fails the test.
Canary symlinks inside the workspace point into it. Every input must give
success or a clear one-line error, never a crash.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import io
import json
import os
import sys
import threading
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from snapstore_cli.doors.hook import run_hook

from snapstore import SnapstoreError, Store
from snapstore.core.fsio import Entry

from ..support import agent_turn
from ..support.fuzz import FUZZ, Sentinel, count, hostile_paths

AT_FDCWD, RENAME_EXCHANGE = -100, 2


def test_fuzzed_paths_through_the_library(
    scratch_store: Store, root: Path, tmp_path: Path, sentinel: Sentinel
) -> None:
    store = scratch_store
    agent_turn(store, "t", {"sub/ok.txt": "agent\n"})

    @FUZZ
    @given(path=hostile_paths(tmp_path, root))
    def run(path: str) -> None:
        count("library paths")
        for call in (
            lambda: store.pre_write([path], "Write"),
            lambda: store.post_write([path]),
            lambda: store.rewind(1, paths=[path], dry_run=True, force=True),
        ):
            try:
                call()
            except SnapstoreError as exc:
                assert str(exc) and "\n" not in str(exc)

    run()
    store.end_turn()
    assert store.fsck().ok


def _payload(event: str, tool: str, path: object, cwd: object) -> dict[str, object]:
    return {
        "session_id": "s1",
        "cwd": cwd,
        "hook_event_name": event,
        "tool_name": tool,
        "tool_input": {"file_path": path},
        "prompt": "p",
    }


def _raw_payloads(root: Path, tmp_path: Path) -> st.SearchStrategy[bytes]:
    cwd = st.sampled_from(
        [str(root), str(root / "sub"), "ws", str(root / "nope" / "deeper"), "", str(root) + "\x00"]
    ) | st.text(max_size=8)
    event = st.sampled_from(
        [
            "UserPromptSubmit",
            "PreToolUse",
            "PostToolUse",
            "Stop",
            "SessionEnd",
            "BeforeTool",
            "AfterTool",
            "BeforeAgent",
            "AfterAgent",
            "Nonsense",
        ]
    )
    tool = st.sampled_from(["Write", "Edit", "write_file", "replace", "Bash", ""])
    path = (
        hostile_paths(tmp_path, root)
        | st.integers()
        | st.none()
        | st.lists(st.text(max_size=3), max_size=2)
    )
    structured = st.builds(_payload, event, tool, path, cwd).map(lambda p: json.dumps(p).encode())
    junk = st.sampled_from(
        [
            b"",
            b"{",
            b"[]",
            b"null",
            b'"x"',
            b"\xff\xfe{}",
            b"[" * 100_000 + b"]" * 100_000,
            b'{"session_id": "\\udcff", "cwd": "%s", "hook_event_name": "Stop"}'
            % os.fsencode(root),
            b'{"hook_event_name": 5}',
            b'{"session_id": [], "cwd": {}, "hook_event_name": "Stop"}',
        ]
    ) | st.binary(max_size=64)
    return structured | junk


def test_fuzzed_hook_payloads(
    root: Path,
    tmp_path: Path,
    sentinel: Sentinel,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for key in [k for k in os.environ if k.startswith("SNAPSTORE_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("SNAPSTORE_DAEMON", "off")
    monkeypatch.chdir(root)  # a payload without a working folder is the hook's own: this one
    Store.init(root).close()

    @FUZZ
    @given(
        raw=_raw_payloads(root, tmp_path),
        agent=st.sampled_from(["claude-code", "gemini-cli"]),
        strict=st.booleans(),
    )
    def run(raw: bytes, agent: str, strict: bool) -> None:
        count("hook payloads")
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(raw)))
        if strict:
            monkeypatch.setenv("SNAPSTORE_STRICT", "1")
        else:
            monkeypatch.delenv("SNAPSTORE_STRICT", raising=False)
        code = run_hook(agent, [])
        err = capsys.readouterr().err
        assert code == 0 or (strict and code == 2), err
        assert "internal error" not in err, err
        assert all(line.startswith("snapstore: ") for line in err.splitlines())

    run()
    assert not (root / "nope").exists()  # a payload's missing cwd creates nothing
    with Store.open(root) as store:
        assert store.fsck().ok


def test_a_symlinked_parent_swapped_back_and_forth_never_leads_outside(
    store: Store, root: Path, sentinel: Sentinel
) -> None:
    """TOCTOU: a folder becomes a symlink out of the root between check and use."""
    agent_turn(store, "t", {"d/f.txt": "inside\n"})
    os.symlink(sentinel.path, root / "d.link")
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    stop = threading.Event()

    def swap() -> None:  # renameat2(RENAME_EXCHANGE): d is a folder, then a symlink, ...
        here, there = os.fsencode(root / "d"), os.fsencode(root / "d.link")
        while not stop.is_set():
            assert libc.renameat2(AT_FDCWD, here, AT_FDCWD, there, RENAME_EXCHANGE) == 0

    swapper = threading.Thread(target=swap)
    swapper.start()
    refused = 0
    try:
        for n in range(1000):
            count("symlink swaps")
            entry = Entry("file", f"{n}\n".encode())
            for call in (
                lambda: store.pre_write(["d/f.txt"]),
                lambda: store.ws.read("d/f.txt"),
                lambda e=entry: store.ws.write("d/f.txt", e),
                lambda: store.post_write(["d/f.txt"]),
            ):
                try:
                    call()
                except SnapstoreError:
                    refused += 1
    finally:
        stop.set()
        swapper.join()
    assert refused > 0  # the race was really run


def test_a_symlink_at_the_destination_is_replaced_not_followed(
    store: Store, root: Path, sentinel: Sentinel
) -> None:
    agent_turn(store, "t", {"f.txt": "agent\n"})
    os.unlink(root / "f.txt")
    os.symlink(sentinel.path / "secret.txt", root / "f.txt")
    result = store.rewind(1, on_conflict="theirs")  # the agent created it: it goes
    assert result.deleted == ["f.txt"] and not os.path.lexists(root / "f.txt")
    store.undo()  # and comes back as the link it was, still not followed
    assert os.readlink(root / "f.txt") == str(sentinel.path / "secret.txt")
