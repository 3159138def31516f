"""Schema versions: a store of schema 1 to 4 is upgraded in place; an unknown one is
refused untouched."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from snapstore import Store, StoreCorrupt
from snapstore.core.db import SCHEMA_VERSION

from ..support import Clock, agent_turn, read, write
from ..support.rawdb import drop_table, raw_put, raw_values
from ..support.transcripts import session_of, transcript_in


def _as_schema_1(store: Store) -> None:
    """Rewrite the records the way schema 1 stored them (docs/format.md, history)."""
    for key, raw in raw_values(store, "turns").items():
        data = json.loads(raw)
        data["pending"] = data.pop("open_changes")
        raw_put(store, key, json.dumps(data).encode(), "turns")
    meta = raw_values(store, "meta")
    raw_put(store, b"pending", meta[b"unfinished"], "meta")
    raw_put(store, b"unfinished", None, "meta")
    raw_put(store, b"schema", b"1", "meta")
    drop_table(store, "counts")  # schema 2 added it
    drop_table(store, "git")  # schema 5 this one
    drop_table(store, "gitrefs")  # schema 6 this one
    drop_table(store, "baseline")  # and schema 7 this one


def test_a_schema_1_store_is_upgraded_and_keeps_its_history(root: Path, clock: Clock) -> None:
    write(root, "f.txt", "one\n")
    with Store.init(root, clock=clock) as store:
        agent_turn(store, "first", {"f.txt": "two\n"})
        store.pre_write(["g.txt"])  # an implicit turn with a change awaiting its after
        store.repo.write(lambda tx: tx.set_unfinished("0123456789ab", True))
        _as_schema_1(store)
    with Store.open(root, clock=clock) as store:
        meta = raw_values(store, "meta")
        assert meta[b"schema"] == str(SCHEMA_VERSION).encode()
        assert b"pending" not in meta and json.loads(meta[b"unfinished"]) == ["0123456789ab"]
        turns = [json.loads(raw) for raw in raw_values(store, "turns").values()]
        assert all("pending" not in t for t in turns)
        assert {"g.txt": 0} in [t["open_changes"] for t in turns]
        assert any(e["type"] == "upgrade" for e in store.events())
        store.repo.write(lambda tx: tx.set_unfinished("0123456789ab", False))
        write(root, "g.txt", "new\n")
        store.post_write(["g.txt"])  # the awaiting change survived the upgrade
        store.end_turn()
        assert [p.added for p in store.rewind_points()] == [1, 1]  # counts kept in the new table
        store.rewind(2)
        assert read(root, "f.txt") == b"one\n" and read(root, "g.txt") is None
        assert store.fsck().ok


def test_a_schema_2_store_is_upgraded_and_its_turns_read_without_a_transcript(
    root: Path, clock: Clock
) -> None:
    """Schema 3 added optional fields (a turn's transcript, an operation's conversation):
    records written before have none, and read as having none."""
    write(root, "f.txt", "one\n")
    with Store.init(root, clock=clock) as store:
        agent_turn(store, "first", {"f.txt": "two\n"})
        raw_put(store, b"schema", b"2", "meta")
    with Store.open(root, clock=clock) as store:
        assert raw_values(store, "meta")[b"schema"] == str(SCHEMA_VERSION).encode()
        [point] = store.rewind_points()
        assert point.turn.transcript is None and point.turn.transcript_size == 0
        assert store.rewind(1).conversation is None
        assert read(root, "f.txt") == b"one\n"


def test_a_newer_schema_is_refused_and_left_as_it_is(root: Path) -> None:
    with Store.init(root) as store:
        raw_put(store, b"schema", str(SCHEMA_VERSION + 1).encode(), "meta")
    data = root / ".snapstore" / "db" / "data.mdb"
    before = data.read_bytes()
    with pytest.raises(StoreCorrupt) as failure:
        Store.open(root)
    assert failure.value.found == SCHEMA_VERSION + 1 and failure.value.known == SCHEMA_VERSION
    assert f"schema version {SCHEMA_VERSION + 1}" in str(failure.value)
    assert data.read_bytes() == before


def test_a_store_whose_turns_hold_an_earlier_releases_nulls_works_on(
    root: Path, clock: Clock
) -> None:
    """Earlier releases wrote null for a turn's empty collections; the schema is the same."""
    write(root, "f.txt", "one\n")
    with Store.init(root, clock=clock) as store:
        agent_turn(store, "first", {"f.txt": "two\n"})
        store.pre_write(["g.txt"])  # an implicit turn with a change awaiting its after
        for key, raw in raw_values(store, "turns").items():
            data = json.loads(raw)
            for name in ("open_changes", "open_calls", "unattributed"):
                if not data[name]:
                    data[name] = None
            raw_put(store, key, json.dumps(data).encode(), "turns")
        nulls = [json.loads(raw)["open_calls"] for raw in raw_values(store, "turns").values()]
        assert nulls == [None, None]
    with Store.open(root, clock=clock) as store:
        write(root, "g.txt", "new\n")
        store.post_write(["g.txt"])
        store.end_turn()
        assert [p.added for p in store.rewind_points()] == [1, 1]
        store.rewind(2)
        assert read(root, "f.txt") == b"one\n" and read(root, "g.txt") is None
        assert store.fsck().ok


def test_a_schema_3_store_is_upgraded_and_its_whole_blobs_still_read(
    root: Path, clock: Clock
) -> None:
    """Schema 4 added the chunked blob encoding; blobs stored whole before read as ever,
    and a big file captured after the upgrade is chunked."""
    write(root, "f.txt", "one\n")
    with Store.init(root, clock=clock) as store:
        agent_turn(store, "first", {"f.txt": "two\n"})
        raw_put(store, b"schema", b"3", "meta")
    with Store.open(root, clock=clock) as store:
        assert raw_values(store, "meta")[b"schema"] == str(SCHEMA_VERSION).encode()
        assert [e["schema"] for e in store.events() if e["type"] == "upgrade"] == [SCHEMA_VERSION]
        agent_turn(store, "big", {"big.bin": os.urandom(5 * 1024 * 1024)})
        assert store.rewind(2).ok
        assert read(root, "f.txt") == b"one\n" and read(root, "big.bin") is None
        assert store.fsck().ok


def test_a_schema_4_stores_conversation_edits_are_taken_back_as_they_were_made(
    root: Path, clock: Clock, tmp_path: Path
) -> None:
    """Schema 5 added a conversation edit's ``ident``, ``digest``, ``length``, ``old_id`` and
    ``files``: a fork recorded by an earlier release held its whole log in ``data`` (and an
    append had no identity). After the upgrade their undo still takes each back whole."""
    homes = {"copilot": str(tmp_path / "copilot"), "claude-code": str(tmp_path / "claude")}
    with Store.init(root, clock=clock) as store:
        log = transcript_in(homes, "copilot")
        (log.parent / "workspace.yaml").write_text("id: sid\ncwd: /w\n")
        copilot = session_of(store, "copilot", log)
        fork = Path(store.rewind(2, copilot, homes=homes).conversation["transcript"])
        transcript = transcript_in(homes, "claude-code")
        whole = transcript_of(store, transcript)
        store.rewind(2, "claude-code/sid", homes=homes)
        for key, raw in raw_values(store, "turns").items():  # the records as schema 4 had them
            data = json.loads(raw)
            edit = (data.get("op") or {}).get("conversation")
            if edit:
                for name in ("ident", "digest", "length", "old_id", "files"):
                    del edit[name]
                if edit["how"] == "forked":
                    edit.update(offset=0, data=fork.read_text())
                raw_put(store, key, json.dumps(data).encode(), "turns")
        raw_put(store, b"schema", b"4", "meta")
    with Store.open(root, clock=clock) as store:
        assert raw_values(store, "meta")[b"schema"] == str(SCHEMA_VERSION).encode()
        assert store.undo(session="claude-code/sid", homes=homes).conversation["status"] == (
            "rewound"
        )
        assert transcript.read_bytes() == whole
        store.undo(session=copilot, homes=homes)
    assert sorted(os.listdir(log.parent.parent)) == ["sid"]


def transcript_of(store: Store, transcript: Path) -> bytes:
    """A Claude Code session of three turns in ``transcript``; its bytes."""
    session_of(store, "claude-code", transcript)
    return transcript.read_bytes()


def test_a_schema_5_store_is_upgraded_with_the_gitrefs_table(root: Path, clock: Clock) -> None:
    """Schema 6 added the ``gitrefs`` table (the baseline by reference): a schema-5 store
    gets it empty, and its blobs still bring a file back."""
    write(root, "f.txt", "one\n")
    with Store.init(root, clock=clock, git=False) as store:
        agent_turn(store, "first", {"f.txt": "two\n"})
        raw_put(store, b"schema", b"5", "meta")
        drop_table(store, "gitrefs")
    with Store.open(root, clock=clock, git=False) as store:
        assert raw_values(store, "meta")[b"schema"] == str(SCHEMA_VERSION).encode()
        assert [e["schema"] for e in store.events() if e["type"] == "upgrade"] == [SCHEMA_VERSION]
        assert raw_values(store, "gitrefs") == {}
        assert store.rewind(1).ok and read(root, "f.txt") == b"one\n"
        assert store.fsck().ok
