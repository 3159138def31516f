"""End to end, hostile input through the real command: fuzzed CLI paths, huge hook
payloads, odd and over-long names, stores that are not ours."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import lmdb
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st
from snapstore_cli.doors.click.app import cli as cli_app

from snapstore.core.db import SCHEMA_VERSION

from ..support import hermetic_env, snapstore_bin, write
from ..support.fuzz import FUZZ, Sentinel, count, hostile_paths


def test_fuzzed_paths_through_the_cli(
    root: Path, tmp_path: Path, sentinel: Sentinel, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key in [k for k in os.environ if k.startswith("SNAPSTORE_")]:
        monkeypatch.delenv(key)
    monkeypatch.chdir(root)
    runner = CliRunner()
    assert runner.invoke(cli_app, ["init"]).exit_code == 0

    @FUZZ
    @given(
        path=hostile_paths(tmp_path, root),
        command=st.sampled_from(["pre-write", "post-write", "diff", "rewind"]),
    )
    def run(path: str, command: str) -> None:
        count("cli paths")
        args = {
            "pre-write": ["pre-write", path],
            "post-write": ["post-write", path],
            "diff": ["diff", "1", path],
            "rewind": ["rewind", "1", "--path", path, "--dry-run", "--force"],
        }[command]
        result = runner.invoke(cli_app, ["--json", *args])
        assert result.exit_code in (0, 1, 2, 3, 4), (args, result.output)
        assert "internal error" not in result.output and "Traceback" not in result.output

    run()
    assert runner.invoke(cli_app, ["fsck"]).exit_code == 0


def test_a_huge_hook_payload_is_refused_unread(root: Path, sentinel: Sentinel) -> None:
    proc = subprocess.run(
        [*snapstore_bin(), "hook", "claude-code"],
        cwd=root,
        input=b"{" + b" " * (64 * 1024 * 1024),
        capture_output=True,
        env=hermetic_env(SNAPSTORE_STRICT="1"),
    )
    assert proc.returncode == 2 and b"too large" in proc.stderr
    assert b"Traceback" not in proc.stderr


@pytest.mark.parametrize(
    "name", [os.fsdecode(b"caf\xe9.txt"), "x" * 255, "\udcff\udcfe", "a b\tc\nd.txt"]
)
def test_odd_but_legal_names_work_end_to_end(cli, root: Path, name: str) -> None:
    cli("init")
    write(root, name, "before\n")
    raw = os.fsencode(name)
    for args in (
        ["begin", "--prompt", "p"],
        ["pre-write", raw],
        None,
        ["post-write", raw],
        ["end"],
        ["log"],
        ["show", "1"],
        ["diff", "1"],
        ["--json", "show", "1"],
        ["rewind", "1", "--yes"],
        ["status"],
    ):
        if args is None:
            write(root, name, "after\n")
            continue
        proc = subprocess.run(
            [*snapstore_bin(), *args], cwd=root, capture_output=True, env=hermetic_env()
        )
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
        names = (
            ["meta", "blobs", "sessions", "turns", "changes", "heads", "paths", "index", "events"]
            if kind == "schema"
            else ["users", "orders"]
        )
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
    before = {
        p: p.read_bytes()
        for p in ([store] if store.is_file() else store.rglob("*"))
        if p.is_file() and p.name != "lock.mdb"
    }
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
