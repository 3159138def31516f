"""Push and pull through a remote, in-process: on a real S3 server (SeaweedFS) and a folder.

Turns keep their ids, sessions of the same name from two machines stay apart,
blobs are uploaded once whoever has them, and a remote that is damaged or
newer than this code is refused before anything reaches the store.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from snapstore import Store
from snapstore.remote import CorruptObject, ObjectStore, RemoteError
from snapstore.remote.format import layout
from snapstore.remote.sync.push import base_turn_id

from ..support import Clock, agent_turn, snapshot, write

GIT = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t"]


def git_repo(path: Path, files: dict[str, str]) -> None:
    path.mkdir(parents=True, exist_ok=True)
    for rel, text in files.items():
        write(path, rel, text)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    subprocess.run([*GIT, "-C", str(path), "add", "-A"], check=True)
    subprocess.run([*GIT, "-C", str(path), "commit", "-qm", "base"], check=True)


def mk(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def clone(source: Path, target: Path) -> Path:
    subprocess.run(["git", "clone", "-q", str(source), str(target)], check=True)
    return target


def turns_of(store: Store) -> dict[str, tuple[str, str | None, list[tuple]]]:
    """Each agent turn: its prompt, parent, and changes (path, before, after)."""
    with store.repo.read() as v:
        return {
            t.id: (t.prompt, t.parent, [(c.path, c.before, c.after) for c in v.changes(t.id)])
            for t in v.turns()
            if t.kind == "agent"
        }


def test_pull_brings_every_turn_with_its_id_changes_and_blobs(
    tmp_path: Path, remote: ObjectStore
) -> None:
    git_repo(tmp_path / "a", {"app.py": "v0\n", "lib/util.py": "u0\n", "notes.txt": "n\n"})
    write(tmp_path / "a", "notes.txt", "dirty before the session\n")
    write(tmp_path / "a", "scratch.txt", "untracked\n")
    with Store.init(mk(tmp_path / "a"), clock=Clock(), record_base=True) as a:
        first = agent_turn(a, "one", {"app.py": "v1\n", "new/made.py": "m\n"})
        second = agent_turn(a, "two", {"app.py": "v2\n", "lib/util.py": None})
        pushed = a.push(remote)
        original = turns_of(a)
    assert (pushed.turns, pushed.sessions) == (2, ["default"])
    b_root = clone(tmp_path / "a", tmp_path / "b")
    with Store.init(b_root) as b:
        pulled = b.pull(remote)
        assert (pulled.turns, pulled.sessions, pulled.warnings) == (2, ["default"], [])
        got = turns_of(b)
        base = base_turn_id(*_identity(a_root=tmp_path / "a"))
        # the base turn holds what differed from the commit at the first capture
        assert got.pop(base)[2] == [
            ("notes.txt", *_versions(b, base, "notes.txt")),
            ("scratch.txt", *_versions(b, base, "scratch.txt")),
        ]
        assert got[first][1] == base and got[second][1] == first
        assert {t: (p, c) for t, (p, _, c) in got.items()} == {
            t: (p, c) for t, (p, _, c) in original.items()
        }
        with b.repo.read() as v:
            for _, _, changes in got.values():
                for _, before, after in changes:
                    for version in (before, after):
                        assert version is None or v.content(version) is not None
        assert b.fsck().ok
        assert b.repo.root and (b_root / "app.py").read_text() == "v0\n"  # untouched
        assert b.remote_fsck(remote).ok


def _identity(a_root: Path) -> tuple[str, str]:
    with Store.open(a_root) as a, a.repo.read() as v:
        return v.store_id(), "default"


def _versions(store: Store, turn: str, path: str) -> tuple:
    change = next(c for c in store.changes(turn) if c.path == path)
    return change.before, change.after


def test_a_second_push_sends_nothing_and_writes_no_state(
    tmp_path: Path, remote: ObjectStore
) -> None:
    with Store.init(mk(tmp_path / "ws")) as a:
        agent_turn(a, "one", {"f.txt": "1\n"})
        a.push(remote)
        states = sorted(i.key for i in remote.list(layout.STATES))
        again = a.push(remote)
        assert (again.turns, again.blobs, again.bytes) == (0, 0, 0)
        assert sorted(i.key for i in remote.list(layout.STATES)) == states
        agent_turn(a, "two", {"f.txt": "2\n"})
        third = a.push(remote)
        assert (third.turns, third.blobs) == (1, 1)  # only the new version goes up
        assert len(list(remote.list(layout.STATES))) == len(states) + 1


def test_two_machines_sessions_of_one_name_stay_apart(tmp_path: Path, remote: ObjectStore) -> None:
    made = {}
    for name in ("a", "b"):
        with Store.init(mk(tmp_path / name)) as store:
            made[name] = agent_turn(store, f"from {name}", {"f.txt": f"{name}\n"})
            store.push(remote)
    with Store.init(mk(tmp_path / "c")) as c:
        agent_turn(c, "local", {"g.txt": "c\n"})
        first = c.pull(remote)
        assert len(set(first.sessions)) == 2 and "default" not in first.sessions
        assert all(name.startswith("default@") for name in first.sessions)
        with c.repo.read() as v:
            owners = {v.turn(t).session for t in made.values()}
            assert owners == set(first.sessions)
            assert all(v.head(s) is None for s in first.sessions)  # stands at its base
        with Store.init(mk(tmp_path / "a")) as a:
            agent_turn(a, "more from a", {"f.txt": "a2\n"})
            a.push(remote)
        second = c.pull(remote)
        assert second.turns == 1 and sorted(second.sessions) == sorted(first.sessions)
        with c.repo.read() as v:
            assert len({s.name for s in v.sessions()}) == 3


def test_a_blob_the_remote_has_is_never_uploaded_again(tmp_path: Path, remote: ObjectStore) -> None:
    big = "".join(f"line {n} of a shared file\n" for n in range(20_000))
    with Store.init(mk(tmp_path / "a")) as a:
        agent_turn(a, "add", {"shared.txt": big})
        first = a.push(remote)
    with Store.init(mk(tmp_path / "b")) as b:
        agent_turn(b, "same content elsewhere", {"shared.txt": big})
        second = b.push(remote)
    assert first.blobs == 1 and first.bytes > 10_000
    assert second.blobs == 0 and second.turns == 1
    assert second.bytes < 2_000  # the turn record and the state only


def test_a_corrupted_pack_is_detected_and_nothing_is_stored(
    tmp_path: Path, remote: ObjectStore
) -> None:
    with Store.init(mk(tmp_path / "a")) as a:
        agent_turn(a, "one", {"f.txt": "content that will be damaged\n" * 50})
        a.push(remote)
    (pack,) = [i.key for i in remote.list(layout.PACKS)]
    data = bytearray(remote.get(pack))
    data[20] ^= 0xFF
    remote.put(pack, bytes(data))
    with Store.init(mk(tmp_path / "b")) as b:
        with pytest.raises(CorruptObject):
            b.pull(remote)
        with b.repo.read() as v:
            assert list(v.turns()) == [] and list(v.blob_values()) == []
        report = b.remote_fsck(remote)
        assert not report.ok and any(pack in item["key"] for item in report.corrupt)


def test_a_damaged_turn_record_is_detected(tmp_path: Path, remote: ObjectStore) -> None:
    with Store.init(mk(tmp_path / "a")) as a:
        turn = agent_turn(a, "one", {"f.txt": "x\n"})
        a.push(remote)
    key = layout.turn_key(turn)
    data = bytearray(remote.get(key))
    data[-1] ^= 0x01
    remote.put(key, bytes(data))
    with Store.init(mk(tmp_path / "b")) as b:
        with pytest.raises(CorruptObject) as caught:
            b.pull(remote)
        assert caught.value.key == key
        with b.repo.read() as v:
            assert list(v.turns()) == []


def test_a_newer_remote_format_is_refused_naming_both_versions(
    tmp_path: Path, remote: ObjectStore
) -> None:
    remote.put(layout.CONFIG, b'{"format": "snapstore-remote", "version": 3}\n')
    with Store.init(mk(tmp_path / "a")) as a:
        agent_turn(a, "one", {"f.txt": "x\n"})
        for action in (a.push, a.pull, a.remote_fsck):
            with pytest.raises(RemoteError) as caught:
                action(remote)
            assert "remote format 3 is newer than this snapstore reads (2)" in str(caught.value)
    assert [i.key for i in remote.list()] == [layout.CONFIG]  # nothing was written


def test_remote_gc_drops_old_turns_and_reclaims_unreachable_packs(
    tmp_path: Path, remote: ObjectStore
) -> None:
    clock = Clock()
    with Store.init(mk(tmp_path / "a"), clock=clock) as a:
        old = agent_turn(a, "old", {"old.txt": "old content\n" * 100})
        clock.tick(40 * 86400)
        new = agent_turn(a, "new", {"new.txt": "new content\n" * 100})
        a.push(remote)
        packs = len(list(remote.list(layout.PACKS)))
        result = a.remote_gc(remote, keep_days=30, grace=0)
        assert result.removed_turns == 1
        assert not remote.exists(layout.turn_key(old)) and remote.exists(layout.turn_key(new))
        assert a.push(remote).turns == 0  # a dropped turn is not pushed again
        assert a.remote_fsck(remote).ok
        # both turns' blobs share one pack, which stays reachable through the new turn
        assert len(list(remote.list(layout.PACKS))) == packs
    with Store.init(mk(tmp_path / "b")) as b:
        assert b.pull(remote).turns == 1
        assert {p.turn.id for p in b.rewind_points(all_branches=True)} == {new}


def test_session_base_records_the_commit_and_what_differed(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    git_repo(root, {"kept.txt": "k\n", "edited.txt": "e0\n", "gone.txt": "g\n"})
    write(root, "edited.txt", "e1\n")
    (root / "gone.txt").unlink()
    write(root, "new.txt", "n\n")
    commit = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()
    with Store.init(root, record_base=True) as store:
        agent_turn(store, "one", {"kept.txt": "k2\n"})
        with store.repo.read() as v:
            base = v.session("default").base
            assert base["commit"] == commit
            changes = {path: (before, after) for path, before, after in base["changes"]}
            assert set(changes) == {"edited.txt", "gone.txt", "new.txt"}
            assert changes["gone.txt"][1] is None and changes["new.txt"][0] is None
            for before, after in changes.values():
                for version in (before, after):
                    if version is not None:
                        assert v.blob(bytes.fromhex(version[0]))
            assert v.blob(bytes.fromhex(changes["edited.txt"][0][0])) == b"e0\n"
        store.gc()  # the base's blobs are live
        assert store.fsck().ok
        with store.repo.read() as v:
            assert v.blob(bytes.fromhex(changes["gone.txt"][0][0])) == b"g\n"


def test_without_git_the_base_has_no_commit(tmp_path: Path) -> None:
    with Store.init(mk(tmp_path / "ws"), record_base=True) as store:
        agent_turn(store, "one", {"f.txt": "x\n"})
        with store.repo.read() as v:
            assert v.session("default").base == {"commit": None, "changes": [], "skipped": []}


def tree(root: Path) -> dict[str, tuple[str, bytes, int]]:
    """The workspace as a person sees it: every file but git's and the store's."""
    return {p: v for p, v in snapshot(root).items() if not p.startswith(".git/")}


def test_a_fresh_clone_switches_to_every_pulled_turn_byte_for_byte(
    tmp_path: Path, remote: ObjectStore
) -> None:
    a_root = tmp_path / "a"
    git_repo(
        a_root,
        {
            "app.py": "def main():\n    return 0\n",
            "lib/util.py": "X = 1\n",
            "README": "readme\n",
            "run.sh": "#!/bin/sh\n",
        },
    )
    write(a_root, "README", "readme, edited before the session\n")  # uncommitted
    write(a_root, "scratch/notes.txt", "untracked notes\n")
    after: dict[str, dict] = {}
    with Store.init(a_root, clock=Clock(), record_base=True) as a:
        for prompt, edits in [
            ("one", {"app.py": "def main():\n    return 1\n", "new/deep/made.py": "m\n"}),
            ("two", {"lib/util.py": None, "README": "readme, by the agent\n"}),
            (
                "three",
                {
                    "app.py": "def main():\n    return 3\n",
                    "new/deep/made.py": None,
                    "lib/other.py": "Y = 2\n",
                },
            ),
        ]:
            turn = agent_turn(a, prompt, edits)
            after[turn] = tree(a_root)
        a.pre_write(["run.sh"], "Bash")  # a mode change in a fourth turn
        (a_root / "run.sh").chmod(0o755)
        a.post_write(["run.sh"])
        fourth = a.end_turn().id
        after[fourth] = tree(a_root)
        a.push(remote)
    b_root = clone(a_root, tmp_path / "b")
    with Store.init(b_root) as b:
        pulled = b.pull(remote)
        assert pulled.warnings == [] and pulled.turns == 4
        order = list(after)
        for turn in [*order, *reversed(order), order[1], order[3], order[0]]:
            result = b.switch(turn)
            assert result.ok, result
            assert tree(b_root) == after[turn], turn
        assert b.fsck().ok
