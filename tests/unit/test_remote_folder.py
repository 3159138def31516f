"""Remote URLs, object keys, and what only a folder remote has to get right."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from snapstore_cli.operations.failures import exit_code

from snapstore.core.errors import BadInput
from snapstore.remote import ObjectMissing, RemoteURL, open_object_store, parse_url
from snapstore.remote.transport.backend import check_key
from snapstore.remote.transport.folder import FolderObjectStore


@pytest.mark.parametrize(
    ("url", "parsed"),
    [
        ("s3://my-bucket", RemoteURL("s3", bucket="my-bucket")),
        ("s3://my.bucket/team/agent-1", RemoteURL("s3", bucket="my.bucket", prefix="team/agent-1")),
        ("s3://bkt/deep/prefix/", RemoteURL("s3", bucket="bkt", prefix="deep/prefix")),
        ("file:///srv/snapstore", RemoteURL("file", path="/srv/snapstore")),
        ("file://localhost/srv/a%20b/", RemoteURL("file", path="/srv/a b")),
    ],
)
def test_remote_urls(url: str, parsed: RemoteURL):
    assert parse_url(url) == parsed
    assert parse_url(str(parsed)) == parsed


@pytest.mark.parametrize(
    "url",
    [
        "s3://",
        "s3://UPPER",
        "s3://ab",
        "s3://a..b",
        "s3://-x-/p",
        "s3://bkt/a//b",
        "s3://bkt/../x",
        "s3://bkt/p?versionId=1",
        "file://server/share",
        "file:relative/path",
        "https://bucket.s3.amazonaws.com",
        "gs://bucket",
        "/just/a/path",
        "",
    ],
)
def test_bad_remote_urls_are_one_clear_line(url: str):
    with pytest.raises(BadInput) as caught:
        parse_url(url)
    assert exit_code(caught.value) == 2 and "\n" not in str(caught.value)


def test_an_endpoint_is_for_s3_only(tmp_path: Path):
    with pytest.raises(BadInput, match="s3:// remotes only"):
        open_object_store(tmp_path.as_uri(), endpoint_url="http://127.0.0.1:9000")
    with pytest.raises(BadInput, match="http:// or https://"):
        open_object_store("s3://bucket", endpoint_url="ftp://127.0.0.1")


_segment = st.from_regex(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,20}", fullmatch=True)


@settings(max_examples=60, deadline=None)
@given(segments=st.lists(_segment, min_size=1, max_size=4), data=st.binary(max_size=300))
def test_any_valid_key_round_trips_inside_the_folder(tmp_path_factory, segments, data):
    root = tmp_path_factory.mktemp("remote")
    key = "/".join(segments)
    assert check_key(key) == key
    store = FolderObjectStore(root)
    assert store.put_if_absent(key, data)
    assert store.get(key) == data
    assert (root / key).resolve().is_relative_to(root.resolve())
    assert [i.key for i in store.list()] == [key]


def test_leftover_temporary_files_are_invisible(tmp_path: Path):
    """A writer killed mid-write leaves a temporary file: never listed, never in the way."""
    store = FolderObjectStore(tmp_path)
    (tmp_path / "packs").mkdir()
    (tmp_path / "packs" / ".tmp-deadbeef").write_bytes(b"half a pa")
    assert list(store.list()) == []
    assert store.put_if_absent("packs/p1", b"whole")
    assert [i.key for i in store.list("packs")] == ["packs/p1"]
    assert not [
        p
        for p in (tmp_path / "packs").iterdir()
        if p.name.startswith(".tmp-") and p.name != ".tmp-deadbeef"
    ]


def test_a_lost_nfs_reply_still_counts_as_created(tmp_path: Path, monkeypatch):
    """On NFS a retransmitted link() can fail with EEXIST although the first one worked;
    the temporary file's link count tells."""
    store = FolderObjectStore(tmp_path)
    real_link = os.link

    def link_then_lose_the_reply(src, dst):
        real_link(src, dst)
        raise FileExistsError(17, "File exists")

    monkeypatch.setattr(os, "link", link_then_lose_the_reply)
    assert store.put_if_absent("config", b"mine") is True
    monkeypatch.setattr(os, "link", real_link)
    assert store.get("config") == b"mine"
    assert store.put_if_absent("config", b"theirs") is False


def test_errors_name_the_remote(tmp_path: Path):
    store = open_object_store(tmp_path.as_uri(), name="origin")
    with pytest.raises(ObjectMissing) as caught:
        store.get("packs/none")
    err = caught.value
    assert str(err) == f"remote origin ({tmp_path.as_uri()}): packs/none: no such object"
    assert (err.name, err.remote, err.key, err.code) == (
        "origin",
        tmp_path.as_uri(),
        "packs/none",
        "remote_object_missing",
    )
