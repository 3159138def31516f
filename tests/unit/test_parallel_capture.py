"""Capture under parallel tool calls on one path: any interleaving of pre-write, write and
post-write, within one turn and across two sessions, with real bytes."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from snapstore import Store
from snapstore.ops import capture

from .. import support
from ..support import Clock, agent_turn, read, write

F = "f.txt"
LINES = ["alpha\n", "beta\n", "gamma\n", "delta\n", "epsilon\n"]
PROPS = settings(
    max_examples=2000 if support.SLOW else 120,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)

#: What a tool call writes: new text (one line edited, or fresh), or None (it deletes the file).
contents = st.one_of(
    st.none(),
    st.lists(
        st.sampled_from([*LINES, "ALPHA\n", "zeta\n", "x" * 50 + "\n"]), min_size=0, max_size=6
    ).map(lambda lines: "".join(lines).encode()),
)


@st.composite
def calls(draw: st.DrawFn, sessions: int) -> tuple[bytes | None, list[tuple[str, int, int]]]:
    """The file's bytes before, and events (kind, call, session) for 2-3 calls on the file.

    Each call runs pre, write, post in its own order; the calls interleave
    freely. A call's post may never come (the agent died): the turn's end
    records it. Each session has at least one call.
    """
    initial = draw(contents)
    count = draw(st.integers(min_value=max(2, sessions), max_value=3))
    owners = list(range(sessions)) + [
        draw(st.integers(0, sessions - 1)) for _ in range(count - sessions)
    ]
    pending = []
    for call, owner in enumerate(owners):
        steps = ["pre", "write", "post"]
        if draw(st.integers(0, 9)) == 0:
            steps.pop()  # the post never comes
        pending.append([(kind, call, owner) for kind in steps])
    events = []
    while any(pending):
        choice = draw(st.sampled_from([i for i, steps in enumerate(pending) if steps]))
        events.append(pending[choice].pop(0))
    return initial, events


def _put(root: Path, data: bytes | None) -> None:
    if data is None:
        (root / F).unlink(missing_ok=True)
    else:
        write(root, F, data)


def _run(
    store: Store, root: Path, events: list[tuple[str, int, int]], written: dict[int, bytes | None]
) -> None:
    for kind, call, owner in events:
        session = f"s{owner}"
        if kind == "pre":
            store.pre_write([F], "Edit", session)
        elif kind == "write":
            _put(root, written[call])
        else:
            store.post_write([F], session)


def _fresh(initial: bytes | None) -> tuple[tempfile.TemporaryDirectory, Path, Store]:
    tmp = tempfile.TemporaryDirectory()
    root = Path(tmp.name).resolve()
    _put(root, initial)
    return tmp, root, Store.init(root, clock=Clock(), durable=False)  # throwaway: no syncs


@PROPS
@given(data=st.data(), plan=calls(sessions=1))
def test_any_interleaving_in_one_turn_rewinds_exactly_and_undoes_exactly(
    data: st.DataObject, plan: tuple[bytes | None, list[tuple[str, int, int]]]
) -> None:
    _check_one_turn(data, plan)


def _check_one_turn(data: st.DataObject, plan: tuple[bytes | None, list]) -> None:
    initial, events = plan
    written = {call: data.draw(contents) for call in sorted({c for _, c, _ in events})}
    tmp, root, store = _fresh(initial)
    with tmp, store:
        store.begin_turn("s0", "parallel edits")
        _run(store, root, events, written)
        store.end_turn("s0")
        final = read(root, F)
        rewound = store.rewind(1, "s0")
        assert rewound.ok and not rewound.conflicts and not rewound.merged, rewound
        assert read(root, F) == initial
        undone = store.undo(session="s0")
        assert undone.ok and not undone.conflicts, undone
        assert read(root, F) == final


@PROPS
@given(data=st.data(), plan=calls(sessions=2))
def test_any_interleaving_across_two_sessions(
    data: st.DataObject, plan: tuple[bytes | None, list]
) -> None:
    _check_two_sessions(data, plan)


def _check_two_sessions(data: st.DataObject, plan: tuple[bytes | None, list]) -> None:
    """Two sessions' turns, their calls on one file interleaved.

    Taking both turns back, in one of the two orders, gives the bytes from
    before or a reported conflict: the changes recorded are a history that
    leads back. (Which order depends on who wrote last, and where the bytes
    came back to an earlier state the rewind cannot tell the difference.)
    Undoing both rewinds gives the final bytes. When one session's calls were
    all over before the other's began, each turn is exactly its own.
    """
    initial, events = plan
    written = {call: data.draw(contents) for call in sorted({c for _, c, _ in events})}
    states = [initial] + [written[call] for kind, call, _ in events if kind == "write"]
    # Bytes that come back to an earlier state across sessions: a rewind cannot tell
    # whose that state is (it takes "already as before" for "already taken back").
    assume(len(set(states)) == len(states))
    tmp, root, store = _fresh(initial)
    with tmp, store:
        store.begin_turn("s0", "session 0")
        store.begin_turn("s1", "session 1")
        owners = [owner for _, _, owner in events]
        ended = {owner: i for i, (kind, _, owner) in enumerate(events) if kind == "post"}
        for _, call, owner in events:
            if not any(k == "post" and c == call for k, c, _ in events):
                ended[owner] = len(events) + owner  # its turn's end records it
        later = max(ended, key=ended.__getitem__)
        earlier = 1 - later
        separate = owners.index(later) > ended[earlier]
        middle = initial
        for i, event in enumerate(events):
            _run(store, root, [event], written)
            if i == ended[earlier]:
                middle = read(root, F)  # the earlier session is done; the later one starts
        store.end_turn("s0")
        store.end_turn("s1")
        final = read(root, F)
        if separate:
            exact = store.rewind(1, f"s{later}")
            assert exact.ok and not exact.conflicts and not exact.merged, exact
            assert read(root, F) == middle
            store.undo(session=f"s{later}")
            assert read(root, F) == final
        outcomes = []
        for order in ((later, earlier), (earlier, later)):
            one = store.rewind(1, f"s{order[0]}")
            two = store.rewind(1, f"s{order[1]}")
            conflicts = one.conflicts + two.conflicts
            outcomes.append((read(root, F) == initial and not conflicts, bool(conflicts)))
            if separate and order[0] == later:
                assert outcomes[-1] == (True, False), (one, two)
            store.undo(two.undo_id, f"s{order[1]}")
            store.undo(one.undo_id, f"s{order[0]}")
            assert read(root, F) == final
        # Whichever session goes first, one of the two orders takes both turns back exactly,
        # or says where it could not.
        assert any(exact or conflicted for exact, conflicted in outcomes), outcomes


def test_a_post_write_that_read_before_a_parallel_write_reads_again(
    store: Store, root: Path, monkeypatch
) -> None:
    """Call A reads for its post-write; call B's pre-write, write and post-write land before
    A commits. A's commit must not close the change with the bytes it read."""
    write(root, F, "v0\n")
    store.begin_turn("s", "two calls")
    store.pre_write([F], "Edit", "s")
    write(root, F, "a\n")
    real = capture.prepare
    raced = []

    def racing(repo, rels, *args, **kwargs):
        found = real(repo, rels, *args, **kwargs)
        if not raced:
            raced.append(True)
            store.pre_write([F], "Edit", "s")  # B starts while A is reporting
            write(root, F, "b\n")
            store.post_write([F], "s")
        return found

    monkeypatch.setattr(capture, "prepare", racing)
    store.post_write([F], "s")
    monkeypatch.setattr(capture, "prepare", real)
    store.end_turn("s")
    assert store.rewind(1, "s").ok
    assert read(root, F) == b"v0\n"
    store.undo(session="s")
    assert read(root, F) == b"b\n"


V0 = "one\ntwo\nthree\nfour\nfive\n"


def test_a_call_of_another_session_that_begins_mid_call_takes_what_follows(
    store: Store, root: Path
) -> None:
    """Session A writes, session B's call begins and writes, then both report. A's change
    ends where B's began, so taking back A alone keeps B's edit, and the reverse."""
    write(root, F, V0)
    store.begin_turn("A", "edit line 1")
    store.begin_turn("B", "edit line 3")
    store.pre_write([F], "Edit", "A")
    write(root, F, V0.replace("one", "ONE"))
    store.pre_write([F], "Edit", "B")
    write(root, F, V0.replace("one", "ONE").replace("three", "THREE"))
    store.post_write([F], "A")
    store.post_write([F], "B")
    store.end_turn("A")
    store.end_turn("B")
    rewound = store.rewind(1, "A")
    assert rewound.ok and rewound.merged == [F]
    assert read(root, F) == V0.replace("three", "THREE").encode()
    store.undo(session="A")
    assert store.rewind(1, "B").restored == [F]
    assert read(root, F) == V0.replace("one", "ONE").encode()


def test_a_call_of_another_session_inside_a_call_keeps_its_own_part(
    store: Store, root: Path
) -> None:
    """B's whole call falls inside A's: A's change keeps what came before and after it."""
    write(root, F, V0)
    store.begin_turn("A", "edit lines 1 and 5")
    store.begin_turn("B", "edit line 3")
    store.pre_write([F], "Edit", "A")
    write(root, F, V0.replace("one", "ONE"))
    store.pre_write([F], "Edit", "B")
    write(root, F, V0.replace("one", "ONE").replace("three", "THREE"))
    store.post_write([F], "B")
    write(root, F, V0.replace("one", "ONE").replace("three", "THREE").replace("five", "FIVE"))
    store.post_write([F], "A")
    store.end_turn("A")
    store.end_turn("B")
    assert [c.path for c in store.changes(store.resolve_turn(1, "A").id)] == [F, F]
    rewound = store.rewind(1, "A")
    assert rewound.ok and not rewound.conflicts
    assert read(root, F) == V0.replace("three", "THREE").encode()  # B's edit stays
    store.undo(session="A")
    rewound = store.rewind(1, "B")
    assert rewound.ok and rewound.merged == [F]
    assert read(root, F) == V0.replace("one", "ONE").replace("five", "FIVE").encode()


def test_a_rewind_of_another_session_during_a_call_is_no_call_of_that_session(
    store: Store, root: Path
) -> None:
    """Session B's rewind moves ``paths`` back to what an older turn of B recorded while A's
    call is in flight. That older change is no call inside A's: A's change must not be cut
    around it (which would claim to take the file back past B's older turn)."""
    write(root, F, V0)
    agent_turn(store, "B1", {F: V0.replace("one", "ONE")}, session="B")
    agent_turn(store, "B2", {F: V0.replace("one", "ONE").replace("two", "TWO")}, session="B")
    store.begin_turn("A", "a")
    store.pre_write([F], "Edit", "A")
    # B2 taken back: paths would name B1's after. (A rewind now leaves a path alone while
    # another session's write to it is in flight; either way A's change must stay sane.)
    store.rewind(1, "B")
    write(root, F, V0.replace("one", "ONE").replace("five", "FIVE"))
    store.post_write([F], "A")
    store.end_turn("A")
    ends = [
        end for c in store.changes(store.resolve_turn(1, "A").id) for end in (c.before, c.after)
    ]
    with store.repo.read() as v:
        contents = [v.content(end).data if end else None for end in ends]
    assert V0.encode() not in contents and None not in contents, contents


def test_a_call_that_outlasts_two_calls_of_another_session(store: Store, root: Path) -> None:
    """Found by the property test: A's call spans B's first call and the start of B's
    second. A's change ends where B's first began; B's calls keep the rest."""
    store.begin_turn("A", "a")
    store.begin_turn("B", "b")
    store.pre_write([F], "Write", "A")  # F does not exist yet
    write(root, F, "alpha\n")
    store.pre_write([F], "Write", "B")
    write(root, F, "")
    store.post_write([F], "B")
    store.pre_write([F], "Write", "B")
    store.post_write([F], "A")
    write(root, F, "beta\n")
    store.end_turn("A")
    store.end_turn("B")
    with store.repo.read() as v:
        (a,) = store.changes(store.resolve_turn(1, "A").id)
        assert a.before is None and v.content(a.after).data == b"alpha\n"
    for session in ("B", "A"):
        assert store.rewind(1, session).ok
    assert read(root, F) is None
