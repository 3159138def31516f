"""End to end: `snapstore undo` walks back through the operation log and `snapstore redo`
goes forward again, merging the user's edits, refusing once the session moved on, and
finishing after a kill -9 with `rewind --resume`."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from ..support import hermetic_env, read, snapshot, write
from .test_cli import REWIND_KEYS

LINES = "".join(f"line {n}\n" for n in range(30))


def _turn(cli, root: Path, prompt: str, at: int) -> str:
    """A turn that rewrites line ``at`` of f.txt and adds PROMPT.txt."""
    begin = cli("--json", "begin", "--prompt", prompt)
    assert begin.code == 0, begin.stderr
    for rel in ("f.txt", f"{prompt}.txt"):
        assert cli("pre-write", rel).code == 0
    lines = read(root, "f.txt").decode().splitlines(keepends=True)
    lines[at] = f"{prompt} was here\n"
    write(root, "f.txt", "".join(lines))
    write(root, f"{prompt}.txt", f"{prompt}\n")
    for rel in ("f.txt", f"{prompt}.txt"):
        assert cli("post-write", rel).code == 0
    assert cli("end").code == 0
    return begin.json["turn"]


def _three(cli, root: Path) -> tuple[list[str], list[dict]]:
    assert cli("init").code == 0
    write(root, "f.txt", LINES)
    trees, ids = [], []
    for prompt, at in (("a", 2), ("b", 14), ("c", 26)):
        trees.append(snapshot(root))
        ids.append(_turn(cli, root, prompt, at))
    trees.append(snapshot(root))
    return ids, trees


def test_undo_twice_walks_back_and_redo_twice_goes_forward(cli, root: Path) -> None:
    (a, b, c), trees = _three(cli, root)
    assert cli("rewind", "1", "--yes").code == 0  # C: after B
    assert cli("rewind", "1", "--yes").code == 0  # B: after A
    assert snapshot(root) == trees[1]
    for tree in (trees[2], trees[3]):
        undone = cli("undo")
        assert undone.code == 0, undone.stderr
        assert snapshot(root) == tree
    for tree, target in ((trees[2], c), (trees[1], b)):
        ops = cli("--json", "ops").json
        undo = next(o for o in ops if o["action"] == "undo" and not o["redone_by"])
        redone = cli("--json", "redo")
        assert redone.code == 0, redone.stderr
        assert set(redone.json) == REWIND_KEYS and redone.json["target"] == target
        # named as `undo` names what it takes back: operations of `ops`
        assert redone.stderr == (
            f"snapstore: redoing {undo['undoes']} (undone by {undo['id']}) of session default\n"
        )
        assert snapshot(root) == tree
    nothing = cli("redo")
    assert (nothing.code, nothing.stdout) == (4, "")
    assert nothing.stderr == "snapstore: nothing to redo\n"
    ops = cli("--json", "ops").json
    assert [(o["action"], o["redoes"] is not None) for o in ops[:2]] == [("rewind", True)] * 2
    assert ops[2]["redone_by"] == ops[1]["id"] and ops[3]["redone_by"] == ops[0]["id"]
    human = cli("ops").stdout.splitlines()
    assert "rewind (redo)" in human[1] and f"  {ops[0]['id'][:8]}  " in human[4]  # undone by
    assert snapshot(root) == trees[1] and a in cli("--json", "log").stdout


def test_redo_after_a_new_turn_is_refused_and_changes_nothing(cli, root: Path) -> None:
    _three(cli, root)
    assert cli("rewind", "1", "--yes").code == 0
    undo = cli("--json", "undo").json["undo_id"]
    _turn(cli, root, "d", 5)
    before = snapshot(root)
    refused = cli("redo")
    assert (refused.code, refused.stdout) == (2, "")
    assert len(refused.stderr.splitlines()) == 1
    assert f"cannot redo {undo}: session 'default' moved on since that undo" in refused.stderr
    assert "rewind or switch instead" in refused.stderr
    assert snapshot(root) == before


def test_redo_by_id_prefix_and_a_conflict_with_a_users_edit(cli, root: Path) -> None:
    (a, _, _), trees = _three(cli, root)
    assert cli("rewind", "2", "--yes").code == 0  # B and C
    undo = cli("--json", "undo").json["undo_id"]
    cli("rewind", "1", "--yes")
    cli("undo")  # the newest undo, not the one redone below
    write(root, "f.txt", "mine\n" + read(root, "f.txt").decode())
    done = cli("redo", undo[:6])
    assert done.code == 0, done.stderr
    redo_id = cli("--json", "ops").json[0]["id"]
    assert done.stdout == (
        "  merged    f.txt\n  deleted   b.txt\n  deleted   c.txt\n"
        f"redone: 3 file(s) changed; head is now {a[:8]}\n"
        f"undo it with: snapstore undo {redo_id}\n"
    )
    assert read(root, "f.txt").decode() == "mine\n" + trees[1]["f.txt"][1].decode()
    assert cli("undo").code == 0
    write(root, "f.txt", "all mine\n")  # every line: B's and C's edits clash with it
    clash = cli("--json", "redo", "--on-conflict", "skip")
    assert clash.code == 1 and [c["path"] for c in clash.json["conflicts"]] == ["f.txt"]
    assert read(root, "f.txt") == b"all mine\n"
    assert clash.json["finish"] == "snapstore rewind --finish --on-conflict markers"
    again = cli("redo", undo)
    assert again.code == 2 and "was already redone by" in again.stderr


def test_a_redo_killed_mid_way_finishes_with_rewind_resume(cli, root: Path) -> None:
    (_, b, _), trees = _three(cli, root)
    assert cli("rewind", "2", "--yes").code == 0
    assert cli("undo").code == 0 and snapshot(root) == trees[3]
    child = (
        "import os, signal\n"
        "from snapstore import Store\n"
        "from snapstore.core import faults\n"
        "def kill(name):\n"
        "    if name == 'journal.wrote_path': os.kill(os.getpid(), signal.SIGKILL)\n"
        "faults.install(kill)\n"
        "with Store.open(os.getcwd()) as store:\n"
        "    store.redo()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", child], cwd=root, env=hermetic_env(), timeout=120, check=False
    )
    assert done.returncode == -signal.SIGKILL
    assert snapshot(root) != trees[1]  # killed after one path of several
    resumed = cli("--json", "rewind", "--resume")
    assert resumed.code == 0, resumed.stderr
    assert [r["target"] for r in resumed.json] == [b]
    assert snapshot(root) == trees[1]
    assert cli("--json", "fsck").json["ok"] is True
    ops = cli("--json", "ops").json
    assert ops[0]["redoes"] == ops[1]["id"] and ops[1]["redone_by"] == ops[0]["id"]
    assert cli("redo").code == 4
