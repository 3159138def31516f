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
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import lmdb
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from snapstore_cli.app import cli as cli_app
from snapstore_cli.entry import run_hook

from snapstore import SnapstoreError, Store
from snapstore.db import SCHEMA_VERSION
from snapstore.fsio import Entry

from .conftest import agent_turn, hermetic_env, snapstore_bin, write
from .inotify import Watcher

FUZZ = settings(max_examples=300, deadline=None, derandomize=True,
                suppress_health_check=list(HealthCheck))
COUNTS: dict[str, int] = {}
AT_FDCWD, RENAME_EXCHANGE = -100, 2


@pytest.fixture(scope="module", autouse=True)
def _report_counts() -> Iterator[None]:
    yield
    print(f"\nfuzz cases tried: {sum(COUNTS.values())} {COUNTS}")


def _count(name: str) -> None:
    COUNTS[name] = COUNTS.get(name, 0) + 1


class Sentinel:
    """A tree outside the workspace that nothing may touch, and canaries that lead to it."""

    def __init__(self, base: Path, root: Path):
        self.path = base / "outside"
        (self.path / "sub").mkdir(parents=True)
        (self.path / "secret.txt").write_text("secret\n")
        (self.path / "sub" / "deep.txt").write_text("deep\n")
        (root / "canary").symlink_to(self.path)
        (root / "canary_file").symlink_to(self.path / "secret.txt")
        (root / "sub").mkdir()
        (root / "sub" / "ok.txt").write_text("inside\n")
        self.before = self.state()
        self.watcher = Watcher(str(self.path))

    def state(self) -> dict[str, tuple[bytes, int]]:
        found = {}
        for folder, _, files in os.walk(self.path):
            for name in files:
                path = os.path.join(folder, name)
                with open(path, "rb") as handle:
                    found[path] = (handle.read(), os.stat(path).st_mtime_ns)
        return found

    def check(self) -> None:
        events = self.watcher.events()  # read before looking at the tree ourselves
        assert events == [], f"something outside the root was touched: {events[:5]}"
        assert self.state() == self.before


@pytest.fixture
def sentinel(tmp_path: Path, root: Path) -> Iterator[Sentinel]:
    guard = Sentinel(tmp_path, root)
    yield guard
    guard.check()
    guard.watcher.close()


def _paths(tmp_path: Path, root: Path) -> st.SearchStrategy[str]:
    """Relative and absolute paths made of hostile pieces, and plain random text."""
    outside, root_text = str(tmp_path / "outside"), str(root)
    segment = st.sampled_from([
        "..", ".", "", "a", "sub", "ok.txt", "canary", "canary_file", ".snapstore", "db",
        "x" * 300, "é", "\x00", os.fsdecode(b"\xff\xfe"), "\udcff", "new", " ", "-", "~",
    ]) | st.text(max_size=12)
    joined = st.lists(segment, min_size=1, max_size=6).map("/".join)
    prefix = st.sampled_from(["", "/", "//", outside + "/", root_text + "/",
                              root_text + "/../", "/etc/", "./"])
    return (st.tuples(prefix, joined).map("".join) | st.text(max_size=40)
            | st.just("a/" * 300 + "f"))


def test_fuzzed_paths_through_the_library(store: Store, root: Path, tmp_path: Path,
                                          sentinel: Sentinel) -> None:
    agent_turn(store, "t", {"sub/ok.txt": "agent\n"})

    @FUZZ
    @given(path=_paths(tmp_path, root))
    def run(path: str) -> None:
        _count("library paths")
        for call in (lambda: store.pre_write([path], "Write"),
                     lambda: store.post_write([path]),
                     lambda: store.rewind(1, paths=[path], dry_run=True, force=True)):
            try:
                call()
            except SnapstoreError as exc:
                assert str(exc) and "\n" not in str(exc)

    run()
    store.end_turn()
    assert store.fsck().ok


def test_fuzzed_paths_through_the_cli(root: Path, tmp_path: Path, sentinel: Sentinel,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    for key in [k for k in os.environ if k.startswith("SNAPSTORE_")]:
        monkeypatch.delenv(key)
    monkeypatch.chdir(root)
    runner = CliRunner()
    assert runner.invoke(cli_app, ["init"]).exit_code == 0

    @FUZZ
    @given(path=_paths(tmp_path, root),
           command=st.sampled_from(["pre-write", "post-write", "diff", "rewind"]))
    def run(path: str, command: str) -> None:
        _count("cli paths")
        args = {"pre-write": ["pre-write", path], "post-write": ["post-write", path],
                "diff": ["diff", "1", path],
                "rewind": ["rewind", "1", "--path", path, "--dry-run", "--force"]}[command]
        result = runner.invoke(cli_app, ["--json", *args])
        assert result.exit_code in (0, 1, 2, 3, 4), (args, result.output)
        assert "internal error" not in result.output and "Traceback" not in result.output

    run()
    assert runner.invoke(cli_app, ["fsck"]).exit_code == 0


def _payload(event: str, tool: str, path: object, cwd: object) -> dict[str, object]:
    return {"session_id": "s1", "cwd": cwd, "hook_event_name": event, "tool_name": tool,
            "tool_input": {"file_path": path}, "prompt": "p"}


def _raw_payloads(root: Path, tmp_path: Path) -> st.SearchStrategy[bytes]:
    cwd = st.sampled_from([str(root), str(root / "sub"), "ws", str(root / "nope" / "deeper"),
                           "", str(root) + "\x00"]) | st.text(max_size=8)
    event = st.sampled_from(["UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop",
                             "SessionEnd", "BeforeTool", "AfterTool", "BeforeAgent",
                             "AfterAgent", "Nonsense"])
    tool = st.sampled_from(["Write", "Edit", "write_file", "replace", "Bash", ""])
    path = _paths(tmp_path, root) | st.integers() | st.none() | st.lists(
        st.text(max_size=3), max_size=2)
    structured = st.builds(_payload, event, tool, path, cwd).map(
        lambda p: json.dumps(p).encode())
    junk = st.sampled_from([
        b"", b"{", b"[]", b"null", b'"x"', b"\xff\xfe{}", b"[" * 100_000 + b"]" * 100_000,
        b'{"session_id": "\\udcff", "cwd": "%s", "hook_event_name": "Stop"}'
        % os.fsencode(root),
        b'{"hook_event_name": 5}', b'{"session_id": [], "cwd": {}, "hook_event_name": "Stop"}',
    ]) | st.binary(max_size=64)
    return structured | junk


def test_fuzzed_hook_payloads(root: Path, tmp_path: Path, sentinel: Sentinel,
                              monkeypatch: pytest.MonkeyPatch,
                              capsys: pytest.CaptureFixture[str]) -> None:
    for key in [k for k in os.environ if k.startswith("SNAPSTORE_")]:
        monkeypatch.delenv(key)
    Store.init(root).close()

    @FUZZ
    @given(raw=_raw_payloads(root, tmp_path), agent=st.sampled_from(["claude-code",
                                                                    "gemini-cli"]),
           strict=st.booleans())
    def run(raw: bytes, agent: str, strict: bool) -> None:
        _count("hook payloads")
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


def test_a_huge_hook_payload_is_refused_unread(root: Path, sentinel: Sentinel) -> None:
    proc = subprocess.run([*snapstore_bin(), "hook", "claude-code"], cwd=root,
                          input=b"{" + b" " * (64 * 1024 * 1024), capture_output=True,
                          env=hermetic_env(SNAPSTORE_STRICT="1"))
    assert proc.returncode == 2 and b"too large" in proc.stderr
    assert b"Traceback" not in proc.stderr


def test_a_symlinked_parent_swapped_back_and_forth_never_leads_outside(
        store: Store, root: Path, sentinel: Sentinel) -> None:
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
            _count("symlink swaps")
            entry = Entry("file", f"{n}\n".encode())
            for call in (lambda: store.pre_write(["d/f.txt"]),
                         lambda: store.ws.read("d/f.txt"),
                         lambda e=entry: store.ws.write("d/f.txt", e),
                         lambda: store.post_write(["d/f.txt"])):
                try:
                    call()
                except SnapstoreError:
                    refused += 1
    finally:
        stop.set()
        swapper.join()
    assert refused > 0  # the race was really run


def test_a_symlink_at_the_destination_is_replaced_not_followed(store: Store, root: Path,
                                                               sentinel: Sentinel) -> None:
    agent_turn(store, "t", {"f.txt": "agent\n"})
    os.unlink(root / "f.txt")
    os.symlink(sentinel.path / "secret.txt", root / "f.txt")
    result = store.rewind(1, on_conflict="theirs")  # the agent created it: it goes
    assert result.deleted == ["f.txt"] and not os.path.lexists(root / "f.txt")
    store.undo()  # and comes back as the link it was, still not followed
    assert os.readlink(root / "f.txt") == str(sentinel.path / "secret.txt")


@pytest.mark.parametrize("name", [os.fsdecode(b"caf\xe9.txt"), "x" * 255, "\udcff\udcfe",
                                  "a b\tc\nd.txt"])
def test_odd_but_legal_names_work_end_to_end(cli, root: Path, name: str) -> None:
    cli("init")
    write(root, name, "before\n")
    raw = os.fsencode(name)
    for args in (["begin", "--prompt", "p"], ["pre-write", raw], None, ["post-write", raw],
                 ["end"], ["log"], ["show", "1"], ["diff", "1"], ["--json", "show", "1"],
                 ["rewind", "1", "--yes"], ["status"]):
        if args is None:
            write(root, name, "after\n")
            continue
        proc = subprocess.run([*snapstore_bin(), *args], cwd=root, capture_output=True,
                              env=hermetic_env())
        assert proc.returncode == 0, (args, proc.stderr)
        assert b"Traceback" not in proc.stderr and b"internal error" not in proc.stderr
    assert (root / name).read_text() == "before\n"


@pytest.mark.parametrize("path", ["x" * 256, "d/" + "y" * 300 + "/f", "z/" * 300 + "f"])
def test_names_too_long_are_a_clear_error(cli, root: Path, path: str) -> None:
    cli("init")
    (root / "d").mkdir()
    result = cli("pre-write", path)
    assert result.code == 2 and result.stderr.startswith("snapstore: ")
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr


def _not_ours(root: Path, kind: str) -> None:
    store = root / ".snapstore"
    if kind == "file":
        store.write_bytes(os.urandom(5000))
        return
    (store / "db").mkdir(parents=True)
    data = store / "db" / "data.mdb"
    if kind == "random":
        data.write_bytes(os.urandom(64 * 1024))
    elif kind in ("schema", "foreign"):
        env = lmdb.open(str(store / "db"), max_dbs=20)
        names = ["meta", "blobs", "sessions", "turns", "changes", "heads", "paths", "index",
                 "events"] if kind == "schema" else ["users", "orders"]
        with env.begin(write=True) as txn:
            for name in names:
                env.open_db(name.encode(), txn=txn)
            if kind == "schema":
                newer = str(SCHEMA_VERSION + 1).encode()  # a schema from a future release
                txn.put(b"schema", newer, db=env.open_db(b"meta", txn=txn))
        env.close()
    elif kind == "empty-db":
        data.write_bytes(b"")


@pytest.mark.parametrize("kind", ["file", "random", "schema", "foreign", "empty-db"])
def test_a_store_that_is_not_ours_is_refused_untouched(cli, root: Path, kind: str) -> None:
    _not_ours(root, kind)
    store = root / ".snapstore"
    before = {p: p.read_bytes() for p in ([store] if store.is_file() else store.rglob("*"))
              if p.is_file() and p.name != "lock.mdb"}
    for args in (["log"], ["pre-write", "a.txt"], ["fsck"], ["gc"], ["rewind", "1", "--yes"]):
        result = cli(*args)
        assert result.code == 5, (args, result.stderr)
        assert result.stderr.startswith("snapstore: ") and "Traceback" not in result.stderr
        assert "schema version" in result.stderr or "not a snapstore store" in result.stderr
    after = {p: p.read_bytes() for p in before}
    assert after == before


@pytest.mark.parametrize("kind", ["random", "schema", "foreign", "empty-db"])
def test_init_never_adopts_a_store_that_is_not_ours(cli, root: Path, kind: str) -> None:
    _not_ours(root, kind)
    data = root / ".snapstore" / "db" / "data.mdb"
    before = data.read_bytes()
    result = cli("init")
    assert result.code == 5 and "Traceback" not in result.stderr
    assert data.read_bytes() == before
