"""A hostile remote through the real command: `pull` refuses it with one line and exit 6
naming the object, and neither `pull` nor a `switch` after it writes outside the workspace.

The remote is changed the way anyone who can write to it could: a turn record or a
state sealed again with a path that climbs out, a setuid mode, a field of the wrong
type; on a folder remote, an object replaced by a FIFO or a link to /dev/zero. Over a
folder remote and S3 (SeaweedFS).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from snapstore import Store
from snapstore.core.blobs import digest_hex
from snapstore.remote import open_object_store
from snapstore.remote.format import layout

from ..support import agent_turn, snapshot
from ..support.fuzz import Sentinel
from .test_remote_cli import add_remote, one_line, prefix_url, run, workspace

NOISE = ("config", "push.lock", "db/lock.mdb", "remote-cache/")  # and checked remote objects


class Hostile:
    """A workspace that pushed one turn to a remote, and a way to change that remote."""

    def __init__(self, tmp_path: Path, kind: str, seaweed: Any, edits: dict[str, str]):
        if kind == "s3":
            self.url, self.endpoint = prefix_url(), seaweed.endpoint
            self.options = {"endpoint_url": seaweed.endpoint, "credentials": seaweed.credentials}
        else:
            (tmp_path / "remote").mkdir()
            self.url, self.endpoint = (tmp_path / "remote").as_uri(), None
            self.options = {}
        a = workspace(tmp_path / "a")
        self.connect(a)
        with Store.open(a, record_base=True) as store:
            self.turn = agent_turn(store, "edit", edits)
        assert run(a, "push").code == 0

    def connect(self, root: Path) -> None:
        if self.endpoint is not None:
            add_remote(root, self.url, self.endpoint)
        else:
            assert run(root, "remote", "add", "origin", self.url).code == 0

    def reseal(self, key: str, change: Callable[[Any], Any]) -> None:
        with open_object_store(self.url, **self.options) as remote:
            record = layout.unseal(remote.get(key), remote.url, key)
            remote.put(key, layout.seal(change(record)))

    def state_key(self) -> str:
        with open_object_store(self.url, **self.options) as remote:
            (info,) = list(remote.list(layout.STATES))
            return info.key


def victim(root: Path, hostile: Hostile) -> dict[str, bytes]:
    """The workspace that pulls: a store, the remote added; its store's files now."""
    assert run(root, "init").code == 0
    hostile.connect(root)
    return _store_files(root)


def _store_files(root: Path) -> dict[str, bytes]:
    return {k: v for k, v in snapshot(root / ".snapstore").items() if not k.startswith(NOISE)}


def refused_at_pull(root: Path, hostile: Hostile, before: dict[str, bytes], key: str) -> str:
    line = one_line(run(root, "pull"), 6)
    assert key in line, line
    assert _store_files(root) == before  # nothing of it reached the store
    assert run(root, "fsck").code == 0
    return line


@pytest.fixture(params=["file", "s3"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def seaweed_if(kind: str, request: pytest.FixtureRequest) -> Any:
    return request.getfixturevalue("seaweed") if kind == "s3" else None


@pytest.mark.parametrize(
    "bad",
    ["../outside/secret.txt", "a/../../outside/secret.txt", "x/y/../../../outside/sub/deep.txt"],
)
def test_a_turn_whose_path_climbs_out_is_refused_and_switch_writes_nothing(
    tmp_path: Path, root: Path, sentinel: Sentinel, kind: str, seaweed_if: Any, bad: str
) -> None:
    hostile = Hostile(tmp_path, kind, seaweed_if, {"app.py": "owned\n"})
    key = layout.turn_key(hostile.turn)

    def change(record: dict[str, Any]) -> dict[str, Any]:
        record["changes"][0]["path"] = bad
        return record

    hostile.reseal(key, change)
    before = victim(root, hostile)
    tree = snapshot(root)
    line = refused_at_pull(root, hostile, before, key)
    assert "changes[0].path" in line
    assert run(root, "switch", hostile.turn, "--yes", "--force").code != 0  # it never arrived
    assert snapshot(root) == tree


def test_a_session_base_whose_path_climbs_out_is_refused(
    tmp_path: Path, root: Path, sentinel: Sentinel, kind: str, seaweed_if: Any
) -> None:
    hostile = Hostile(tmp_path, kind, seaweed_if, {"app.py": "owned\n"})
    key = hostile.state_key()
    digest = digest_hex(b"owned\n")

    def change(state: dict[str, Any]) -> dict[str, Any]:
        state["sessions"][0]["base"] = {
            "commit": None,
            "changes": [["../outside/secret.txt", None, [digest, 0o644, "file"]]],
            "skipped": [],
        }
        return state

    hostile.reseal(key, change)
    before = victim(root, hostile)
    refused_at_pull(root, hostile, before, key)


def test_a_setuid_mode_from_a_remote_is_never_applied(
    tmp_path: Path, root: Path, kind: str, seaweed_if: Any
) -> None:
    hostile = Hostile(tmp_path, kind, seaweed_if, {"tool.sh": "#!/bin/sh\n"})
    key = layout.turn_key(hostile.turn)

    def change(record: dict[str, Any]) -> dict[str, Any]:
        record["changes"][0]["after"][1] = 0o6777
        return record

    hostile.reseal(key, change)
    victim(root, hostile)
    assert run(root, "pull").code == 0
    assert run(root, "switch", hostile.turn, "--yes", "--force").code == 0
    assert stat.S_IMODE(os.lstat(root / "tool.sh").st_mode) == 0o777


@pytest.mark.parametrize(
    "change",
    [
        lambda r: {**r, "prompt": 7},
        lambda r: {**r, "changes": [{**r["changes"][0], "seq": 10**40}]},
        lambda r: {k: v for k, v in r.items() if k != "changes"},
    ],
    ids=["prompt-int", "huge-int", "missing"],
)
def test_a_record_of_the_wrong_shape_is_exit_6_naming_it(
    tmp_path: Path, root: Path, kind: str, seaweed_if: Any, change: Callable[[Any], Any]
) -> None:
    hostile = Hostile(tmp_path, kind, seaweed_if, {"app.py": "x\n"})
    key = layout.turn_key(hostile.turn)
    hostile.reseal(key, change)
    before = victim(root, hostile)
    line = refused_at_pull(root, hostile, before, key)
    assert "malformed" in line and "internal error" not in line


@pytest.mark.parametrize("which", ["fifo", "config-dev-zero"])
def test_special_files_on_a_folder_remote_are_exit_6_never_a_hang(
    tmp_path: Path, root: Path, which: str
) -> None:
    hostile = Hostile(tmp_path, "file", None, {"app.py": "x\n"})
    folder = tmp_path / "remote"
    key = layout.turn_key(hostile.turn) if which == "fifo" else layout.CONFIG
    before = victim(root, hostile)
    (folder / key).unlink()
    if which == "fifo":
        os.mkfifo(folder / key)
    else:
        (folder / key).symlink_to("/dev/zero")
    line = refused_at_pull(root, hostile, before, key)
    assert "not a regular file" in line
