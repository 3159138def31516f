"""Turns that touch git: each git command an agent runs in a shell call, rewound and undone.

A real repository (Debian's git) with a user's uncommitted edit in another file; the agent's
turn runs one command in a shell call (scan mode: the hooks scan and read the repository
around it). After the rewind the repository is exactly as before the turn (status, HEAD,
the branch, the stash list, the index, every ref, every file); after the undo, exactly as
the turn left it. What the rewind moved away from is kept under refs/snapstore/.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from snapstore import Store

from ..support import write
from ..support.gitrepo import git, init, keeps, sh, state

SESSION = "claude-code/s1"

#: name -> (what the user did before the turn, what the agent's shell call runs)
COMMANDS = {
    "commit": ("", "echo agent >> a.txt && git add a.txt && git commit -qm agent"),
    "commit --amend": ("", "echo agent >> a.txt && git add a.txt && git commit -q --amend -m x"),
    "checkout -b": ("", "git checkout -q -b topic && echo t >> a.txt && git commit -qam topic"),
    "switch": ("", "git switch -q feature"),
    "checkout <other>": ("", "git checkout -q feature"),
    "checkout a commit": ("", "git checkout -q HEAD~1"),
    "reset --soft": ("", "git reset -q --soft HEAD~1"),
    "reset --mixed": ("git add notes.txt", "git reset -q --mixed HEAD~1"),
    "reset --hard": ("", "git reset -q --hard HEAD~1"),
    "checkout -- .": ("", "git checkout -q -- ."),
    "stash": ("", "git stash -q"),
    "stash pop": (
        "echo stashed >> b.txt && git stash -q && echo 'user edit' >> notes.txt",
        "git stash pop -q",
    ),
    "merge --ff": ("", "git merge -q --ff-only feature"),
    "rebase": (
        "git checkout -q -b topic old && echo t > t.txt && git add t.txt"
        " && git commit -qm topic && git checkout -q main && echo 'user edit' >> notes.txt",
        "git -c rebase.autoStash=true rebase -q main topic",
    ),
    "branch -D": ("", "git branch -q -D old"),
    "tag": ("", "git tag v2 && git tag -d v1"),
}


def _repo(root: Path, setup: str) -> None:
    init(root)
    write(root, "notes.txt", "notes\nuser edit\n")  # the user's uncommitted work
    if setup:
        git(root, "checkout", "-q", "--", "notes.txt")
        sh(root, setup)


def _shell_turn(store: Store, root: Path, script: str, call: str = "toolu_1") -> str:
    """One agent turn whose shell tool runs ``script``, through the scan-mode hooks."""
    turn = store.begin_turn(SESSION, f"run {script}", scan=True, close_open=True)
    store.shell_begin(SESSION, call)
    sh(root, script)
    store.shell_end(SESSION, call)
    store.end_turn(SESSION, scan=True)
    return turn.id


@pytest.mark.parametrize("name", COMMANDS)
def test_a_turns_git_command_is_rewound_and_undone(root: Path, store: Store, name: str) -> None:
    setup, script = COMMANDS[name]
    _repo(root, setup)
    store.exclude_from_git()
    store.scan()  # the baseline
    before = state(root)
    _shell_turn(store, root, script)
    after = state(root)
    assert after != before

    rewound = store.rewind(1, SESSION)
    assert rewound.ok, rewound
    assert state(root) == before
    assert rewound.git is not None and rewound.git["ok"]
    for kept in rewound.git["kept"]:  # every commit a ref left is still reachable
        assert kept in keeps(root)

    undone = store.undo()
    assert undone.ok, undone
    assert state(root) == after


def test_a_turn_that_only_committed_moves_the_branch_back_and_keeps_the_commit(
    root: Path, store: Store
) -> None:
    _repo(root, "")
    store.scan()
    main = git(root, "rev-parse", "main")
    _shell_turn(store, root, "git commit -qam 'the agent commits the user edit'")
    agent = git(root, "rev-parse", "main")
    result = store.rewind(1, SESSION)
    assert result.git == {
        "head_before": "refs/heads/main",
        "head_after": "refs/heads/main",
        "head": "unchanged",
        "refs": [
            {
                "name": "refs/heads/main",
                "before": agent,
                "after": main,
                "status": "moved",
                "reason": "",
            }
        ],
        "index": "restored",
        "kept": [f"refs/snapstore/{result.undo_id}/heads/main"],
        "refused": None,
        "notes": [],
        "ok": True,
    }
    assert git(root, "rev-parse", f"refs/snapstore/{result.undo_id}/heads/main") == agent
    assert git(root, "status", "--porcelain") == "M notes.txt"
    assert result.undo_id in git(root, "reflog", "-1", "--format=%gs", "main")


def test_the_user_committed_after_the_agent_the_branch_is_a_conflict_and_nothing_is_lost(
    root: Path, store: Store
) -> None:
    _repo(root, "")
    store.scan()
    _shell_turn(store, root, "echo agent >> a.txt && git commit -qm agent a.txt")
    sh(root, "git commit -qm 'the user commits on top' notes.txt")
    users = git(root, "rev-parse", "main")
    store.begin_turn(SESSION, "next", scan=True, close_open=True)  # the user's commit is seen
    store.end_turn(SESSION, scan=True)
    result = store.rewind(2, SESSION)
    assert not result.ok
    assert result.git is not None
    [main] = result.git["refs"]
    assert main["name"] == "refs/heads/main" and main["status"] == "conflict"
    assert "moved since the agent" in main["reason"]
    assert git(root, "rev-parse", "main") == users  # the user's commit stays
    assert result.git["head"] == "unchanged" and result.git["index"] == "conflict"
    assert (root / "a.txt").read_text() == "a1\na2\n"  # the files still rewind


def test_a_user_switching_branches_after_the_agent_leaves_head_and_index_alone(
    root: Path, store: Store
) -> None:
    _repo(root, "")
    store.scan()
    _shell_turn(store, root, "git checkout -q -b topic && git commit -qm wip notes.txt")
    sh(root, "git checkout -q feature")  # the user moves on, between turns
    store.begin_turn(SESSION, "next", scan=True, close_open=True)
    store.end_turn(SESSION, scan=True)
    topic = git(root, "rev-parse", "topic")
    result = store.rewind(2, SESSION)
    assert result.git is not None and result.git["head"] == "conflict"
    assert git(root, "symbolic-ref", "HEAD") == "refs/heads/feature"  # where the user is
    [gone] = result.git["refs"]
    assert gone["name"] == "refs/heads/topic" and gone["status"] == "moved"  # the agent's
    assert git(root, "rev-parse", result.git["kept"][0]) == topic  # kept, not lost


def test_no_git_leaves_the_repository_as_it_is(root: Path, store: Store) -> None:
    _repo(root, "")
    store.scan()
    _shell_turn(store, root, "git checkout -q -b topic && echo t >> a.txt && git commit -qam t")
    result = store.rewind(1, SESSION, git=False)
    assert result.git is None
    assert git(root, "symbolic-ref", "HEAD") == "refs/heads/topic"
    assert (root / "a.txt").read_text() == "a1\na2\n"


def test_hook_mode_a_turn_between_its_begin_and_end_is_the_agents(root: Path, store: Store) -> None:
    """Without shell windows, what moved between a turn's begin and its end is the turn's."""
    _repo(root, "")
    before = state(root)
    store.begin_turn(SESSION, "write and commit")
    store.pre_write(["a.txt"], "Write", SESSION)
    write(root, "a.txt", "a1\na2\nagent\n")
    store.post_write(["a.txt"], SESSION)
    git(root, "commit", "-qm", "agent", "a.txt")
    store.end_turn(SESSION)
    assert store.rewind(1, SESSION).ok
    assert state(root) == before


def test_a_rewind_in_code_mode_moves_git_too_and_a_dry_run_moves_nothing(
    root: Path, store: Store
) -> None:
    _repo(root, "")
    store.scan()
    _shell_turn(store, root, "git checkout -q -b topic")
    after = state(root)
    dry = store.rewind(1, SESSION, dry_run=True)
    assert dry.git is not None and dry.git["head_after"] == "refs/heads/main"
    assert dry.git["refs"][0]["status"] == "move"
    assert state(root) == after and keeps(root) == []
    assert store.rewind(1, SESSION, mode="code").git["head"] == "moved"  # type: ignore[index]
    assert git(root, "symbolic-ref", "HEAD") == "refs/heads/main"


def test_a_switch_takes_the_repository_to_the_target_turns_state(root: Path, store: Store) -> None:
    _repo(root, "")
    store.scan()
    first = _shell_turn(store, root, "git checkout -q -b one && git commit -qm one notes.txt")
    after_first = state(root)
    _shell_turn(store, root, "git checkout -q -b two && echo 2 >> a.txt && git commit -qam two")
    after_second = state(root)
    assert store.switch(first, SESSION).ok
    assert state(root) == after_first
    last = store.operations(SESSION)[0]
    assert store.undo(last.id).ok
    assert state(root) == after_second


#: The turns a redo must take back again, exactly (refs, HEAD, index and files).
REDONE = {
    "checkout -b and commit -am": "git checkout -q -b topic && git commit -qam x",
    "reset --hard": "git reset -q --hard HEAD~1",
}


@pytest.mark.parametrize("name", REDONE)
def test_a_redo_after_the_undo_takes_the_repository_back_to_the_rewound_state(
    root: Path, store: Store, name: str
) -> None:
    _repo(root, "")
    store.scan()
    before = state(root)
    _shell_turn(store, root, REDONE[name])
    after = state(root)
    assert after != before
    rewound = store.rewind(1, SESSION)
    assert rewound.ok and state(root) == before
    assert store.undo().ok and state(root) == after

    redone = store.redo()
    assert redone.ok, redone
    assert state(root) == before  # refs, HEAD, the index and the files: as the rewind left them
    assert redone.git is not None and redone.git["ok"]
    assert [r["status"] for r in redone.git["refs"]] == [r["status"] for r in rewound.git["refs"]]
    agents = dict(line.split() for line in after["refs"])  # type: ignore[attr-defined]
    assert redone.git["kept"]  # what the redo moved away from (the agent's commits) is kept
    for keep in redone.git["kept"]:
        name_ = "refs/" + keep.removeprefix(f"refs/snapstore/{redone.undo_id}/")
        assert git(root, "rev-parse", keep) == agents[name_]
    assert store.undo().ok  # the redo is undone as any rewind
    assert state(root) == after


def test_a_redo_without_git_puts_the_files_back_and_leaves_the_repository(
    root: Path, store: Store
) -> None:
    _repo(root, "")
    store.scan()
    before = state(root)
    _shell_turn(store, root, "git checkout -q -b topic && echo t >> a.txt && git commit -qam t")
    after = state(root)
    assert store.rewind(1, SESSION).ok and store.undo().ok
    assert state(root) == after

    redone = store.redo(git=False)
    assert redone.ok and redone.git is None
    now = state(root)
    assert now["files"] == before["files"]  # the files went back
    for key in ("head", "branch", "refs", "index", "stash"):  # git did not
        assert now[key] == after[key], key
    assert not [k for k in keeps(root) if k.startswith(f"refs/snapstore/{redone.undo_id}/")]
    assert store.undo().ok  # and its undo puts the files back alone
    assert state(root) == after


def test_a_redo_of_a_rewind_made_without_git_leaves_the_repository_too(
    root: Path, store: Store
) -> None:
    """The redo does what the undo took back: a rewind that left git alone is made again
    leaving it alone, whatever the redo's own default."""
    _repo(root, "")
    store.scan()
    before = state(root)
    _shell_turn(store, root, "git checkout -q -b topic && echo t >> a.txt && git commit -qam t")
    after = state(root)
    assert store.rewind(1, SESSION, git=False).ok and store.undo().ok
    assert state(root) == after

    redone = store.redo()
    assert redone.ok and redone.git is None
    now = state(root)
    assert now["files"] == before["files"]
    for key in ("head", "branch", "refs", "index", "stash"):
        assert now[key] == after[key], key


def test_an_undo_puts_back_an_index_git_refreshed_after_a_rewind(root: Path, store: Store) -> None:
    """A rewind writes an older index; `git status` then refreshes its stat cache, so the
    index on disk is one no record saw. A second rewind moves away from it, and its undo must
    write it back: the journal keeps it (an undo once failed there, store corrupt, its
    operation left unfinished for good)."""
    _repo(root, "")
    store.scan()
    _shell_turn(store, root, "echo t >> a.txt && git commit -qam t")
    _shell_turn(store, root, "echo u >> b.txt && git commit -qam u", call="toolu_2")
    assert store.rewind(1, SESSION).ok
    index = (root / ".git" / "index").read_bytes()
    git(root, "status", "--porcelain")  # refreshes the index snapstore wrote
    assert (root / ".git" / "index").read_bytes() != index
    between = state(root)
    refreshed = (root / ".git" / "index").read_bytes()
    assert store.rewind(1, SESSION).ok
    undone = store.undo()
    assert undone.ok and undone.git is not None and undone.git["index"] == "restored"
    assert (root / ".git" / "index").read_bytes() == refreshed  # byte for byte
    assert store.unfinished_operations() == []
    assert state(root) == between
