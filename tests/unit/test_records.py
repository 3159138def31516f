"""Records: their named constructors, and their encoding, round trip and nulls of old releases."""

from __future__ import annotations

import json

import pytest

from snapstore.core.records import (
    APPLIED,
    CODE,
    REWIND,
    SCAN,
    SWITCH,
    Change,
    RewindOp,
    Session,
    Turn,
    Version,
    dumps,
    loads,
)

V1, V2 = Version("aa" * 32), Version("bb" * 32, 0o755)


def test_an_opened_change_awaits_its_after_and_a_recorded_one_has_it() -> None:
    opened = Change.opened(
        turn="t1", seq=0, path="f.txt", before=V1, tool="Edit", source=SCAN, time=5.0, mkdirs=1
    )
    assert (opened.after, opened.done, opened.source, opened.mkdirs) == (None, False, SCAN, 1)
    recorded = Change.recorded(
        turn="t1", seq=1, path="f.txt", before=V1, after=V2, tool="", source=REWIND, time=6.0
    )
    assert (recorded.before, recorded.after, recorded.done) == (V1, V2, True)
    with pytest.raises(TypeError):
        Change.recorded("t1", 1, "f.txt", V1, V2, "", REWIND, 6.0)  # keyword-only


def test_a_turn_and_its_operation_come_back_as_they_were_written() -> None:
    op = RewindOp(
        "s",
        "t1",
        CODE,
        status=APPLIED,
        reverted=("t1", "t2"),
        paths=("f.txt",),
        result={"restored": ["f.txt"]},
        action=SWITCH,
    )
    turn = Turn(
        "r1",
        "s",
        3,
        kind=REWIND,
        open_changes={"f.txt": 0},
        open_calls={"f.txt": 2},
        unattributed=("a", "b"),
        op=op,
    )
    back = loads(Turn, dumps(turn))
    assert back == turn
    assert back.op is not None and back.op.reverted == ("t1", "t2")


def test_the_nulls_an_earlier_release_wrote_read_as_empty_collections() -> None:
    old = {
        "id": "t1",
        "session": "s",
        "seq": 1,
        "open_changes": None,
        "open_calls": None,
        "unattributed": None,
        "op": {"session": "s", "target": "t0", "mode": "both", "reverted": ["t0"], "result": None},
    }
    turn = loads(Turn, json.dumps(old).encode())
    assert (turn.open_changes, turn.open_calls, turn.unattributed) == ({}, {}, ())
    assert turn.op is not None
    assert (turn.op.reverted, turn.op.paths, turn.op.forward, turn.op.result) == (
        ("t0",),
        (),
        (),
        {},
    )
    session = loads(Session, b'{"name":"s","created":1.0,"base":null,"origin":null}')
    assert session.base is None and session.origin is None  # none recorded: not empty
