"""Property: rewinding to any turn restores the tree byte for byte, and undo takes it back.

Random agent sessions over a few paths: creates, modifies, deletes, binary and
empty content, CRLF, no final newline, the exec bit, files in new folders. No
user edits, so every rewind must take the exact path.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from snapstore import Store

from ..support import Clock, snapshot

PATHS = ["a.txt", "b.py", "bin.dat", "sub/c.txt", "new/deep/d.md"]

line = st.text(alphabet="abc xyz", min_size=0, max_size=8)
text_content = st.builds(
    lambda lines, crlf, final: (
        ("\r\n" if crlf else "\n").join(lines)
        + (("\r\n" if crlf else "\n") if final and lines else "")
    ).encode(),
    st.lists(line, max_size=6),
    st.booleans(),
    st.booleans(),
)
binary_content = st.binary(min_size=1, max_size=64).map(lambda b: b"\0" + b)
content = st.one_of(text_content, binary_content, st.just(b""))

op = st.one_of(
    st.tuples(st.just("write"), st.sampled_from(PATHS), content),
    st.tuples(st.just("delete"), st.sampled_from(PATHS), st.none()),
    st.tuples(st.just("chmod"), st.sampled_from(PATHS), st.booleans()),
)
session = st.lists(st.lists(op, min_size=1, max_size=4), min_size=1, max_size=5)


def _apply(store: Store, root: Path, ops: list) -> None:
    for kind, rel, arg in ops:
        path = root / rel
        exists = path.exists()
        if kind != "write" and not exists:
            continue
        store.pre_write([rel], tool=kind)
        if kind == "write":
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(arg)
        elif kind == "delete":
            path.unlink()
        else:
            os.chmod(path, 0o755 if arg else 0o644)
        store.post_write([rel])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(session, st.data())
def test_rewind_then_undo_round_trips(turns: list, data: st.DataObject) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve()
        (root / "sub").mkdir()
        (root / "a.txt").write_bytes(b"initial\n")
        with Store.init(root, clock=Clock(), durable=False) as store:  # throwaway: no syncs
            states, ids = [], []
            for ops in turns:
                states.append(snapshot(root))
                ids.append(store.begin_turn("default", "p").id)
                _apply(store, root, ops)
                store.end_turn("default")
            final = snapshot(root)
            k = data.draw(st.integers(0, len(turns) - 1), label="rewind target")
            result = store.rewind(ids[k])
            assert result.ok, result
            assert snapshot(root) == states[k]
            assert not result.merged
            undo = store.undo()
            assert undo.ok, undo
            assert snapshot(root) == final
