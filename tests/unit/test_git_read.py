"""Reading a repository from its files: where git keeps it, what it holds, and what is refused.

Each case is a real repository made by git; what snapstore reads (snapstore.git) is compared
with what git itself says (``rev-parse``, ``for-each-ref``, ``ls-files --stage``).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from snapstore import Store
from snapstore.core.db import SCHEMA_VERSION
from snapstore.core.errors import GitRefused
from snapstore.git import files
from snapstore.git.index import entries, same_index, stat_entries
from snapstore.git.layout import find, parse_config

from ..support import Clock, agent_turn, write
from ..support.gitrepo import git, init, sh
from ..support.rawdb import drop_table, raw_put, raw_values


def _refs_by_git(root: Path) -> dict[str, str]:
    out = git(root, "for-each-ref", "--format=%(refname) %(objectname)")
    return dict(line.split() for line in out.splitlines())


def test_packed_and_loose_refs_are_read_as_git_reads_them(root: Path) -> None:
    init(root)
    sh(root, "git pack-refs --all && git branch loose && git tag -a -m note annotated")
    git(root, "update-ref", "refs/heads/main", git(root, "rev-parse", "feature"))  # loose wins
    layout = find(str(root))
    assert layout is not None and layout.git_dir == str(root / ".git")
    refs, folders = files.read_refs(layout)
    assert refs == _refs_by_git(root)  # an annotated tag: its own id, as git lists it
    assert {"refs", "refs/heads", "refs/tags"} <= set(folders)
    assert files.read_head(layout) == "ref: refs/heads/main"
    git(root, "checkout", "-q", "--detach", "v1")
    assert files.read_head(layout) == git(root, "rev-parse", "v1")


def test_a_linked_worktree_reads_its_own_head_and_the_shared_refs(tmp_path: Path) -> None:
    main = tmp_path / "main"
    main.mkdir()
    init(main)
    wt = tmp_path / "wt"
    git(main, "worktree", "add", "-q", str(wt), "-b", "side")
    layout = find(str(wt))
    assert layout is not None
    assert layout.common_dir == str(main / ".git")
    assert layout.git_dir == str(main / ".git" / "worktrees" / "wt")
    assert files.read_head(layout) == "ref: refs/heads/side"
    assert files.read_refs(layout)[0] == _refs_by_git(main)


def test_a_workspace_in_a_subfolder_of_a_checkout_or_with_no_repository_is_none(
    root: Path,
) -> None:
    assert find(str(root)) is None
    init(root)
    sub = root / "sub"
    sub.mkdir()
    assert find(str(sub)) is None  # the work tree is the root, not this workspace
    (root / "empty").mkdir()
    (root / "empty" / ".git").mkdir()
    assert find(str(root / "empty")) is None  # no HEAD, no refs: git takes it for none


def test_core_worktree_elsewhere_is_not_this_workspace(root: Path, tmp_path: Path) -> None:
    init(root)
    git(root, "config", "core.worktree", str(tmp_path))
    assert find(str(root)) is None


def test_reftable_and_symlinks_are_refused(root: Path, tmp_path: Path) -> None:
    init(root)
    (root / ".git" / "config").write_text("[extensions]\n\trefStorage = reftable\n")
    with pytest.raises(GitRefused, match="reftable"):
        find(str(root))
    other = tmp_path / "other"
    other.mkdir()
    os.symlink(root / ".git", other / ".git")
    with pytest.raises(GitRefused, match="symlink"):
        find(str(other))


@pytest.mark.parametrize(
    "name",
    ["refs/heads/a b", "refs/heads/a..b", "refs/heads/a.lock", "refs/heads/x~1", "refs/heads/."],
)
def test_ref_names_git_would_not_write_are_refused(name: str) -> None:
    assert not files.valid_ref(name)
    assert files.valid_ref("refs/heads/feature/ok-1.2")


def test_the_config_parser_reads_git_syntax() -> None:
    config = parse_config(
        b'[core]\n\tbare = false\n\tWorkTree = "../../sub" ; a comment\n'
        b'[remote "origin"]\n\turl = x\n[extensions]\n\tobjectFormat = sha256\n'
        b"\tworktreeConfig\n"
    )
    assert config["core.worktree"] == "../../sub"
    assert config["core.bare"] == "false"
    assert config["extensions.objectformat"] == "sha256"
    assert config["extensions.worktreeconfig"] == "true"
    assert "remote.url" not in config


def test_two_indexes_that_stage_the_same_are_the_same(root: Path) -> None:
    init(root)
    index = root / ".git" / "index"
    first = index.read_bytes()
    os.utime(root / "a.txt")  # a new stat for git's cache: the index is rewritten on refresh
    git(root, "update-index", "--refresh")
    git(root, "update-index", "--index-version", "4")
    second = index.read_bytes()
    assert first != second and same_index(first, second)
    write(root, "a.txt", "staged\n")
    git(root, "add", "a.txt")
    assert not same_index(second, index.read_bytes())
    staged = git(root, "ls-files", "--stage").splitlines()
    found = entries(index.read_bytes())
    assert found is not None and [e[0].decode() for e in found] == [
        s.split("\t")[1] for s in staged
    ]


def _debugged(root: Path) -> list[tuple[str, int, int, int, int, bool]]:
    """Each index entry as ``git ls-files --debug`` prints it: path, ctime and mtime in
    nanoseconds, inode, size and the intent-to-add flag."""
    fields = []
    out = git(root, "ls-files", "--debug").splitlines()
    for at in range(0, len(out), 6):
        path, ctime, mtime, dev_ino, _, size_flags = out[at : at + 6]
        ns = [int(s) * 10**9 + int(n) for s, n in (t.split()[1].split(":") for t in (ctime, mtime))]
        size, flags = size_flags.split()[1], size_flags.split()[3]
        ita = bool(int(flags, 16) & 0x20000000)
        fields.append((path, *ns, int(dev_ino.split()[3]), int(size), ita))
    return fields


def test_the_stat_data_of_every_index_version_is_what_git_cached(root: Path) -> None:
    """What the baseline by reference trusts of git's index (snapstore.git.clean): each
    entry's path, stat data and flags, as git prints them, in index versions 3 (with an
    intent-to-add entry's extended flags) and 4 (paths compressed), with long paths; an
    index cut short, or whose path length does not meet its NUL, is not read at all."""
    init(root)
    long = "deep/" + "x" * 200 + "/" + "y" * 250 + ".txt"
    for rel in (long, "deep/a.txt", "z.txt"):
        write(root, rel, f"{rel}\n")
    git(root, "add", "-A")
    write(root, "new.txt", "not staged yet\n")
    git(root, "add", "-N", "new.txt")
    index = root / ".git" / "index"
    for version in ("3", "4"):
        git(root, "update-index", "--index-version", version)
        data = index.read_bytes()
        parsed = stat_entries(data)
        assert parsed is not None
        got = [
            (e.path.decode(), e.ctime_ns, e.mtime_ns, e.ino, e.size, bool(e.meaning & 0x2000))
            for e in parsed
        ]
        assert got == _debugged(root)
        assert [p for p, *_, ita in got if ita] == ["new.txt"]
        assert stat_entries(data[: len(data) // 2]) is None
    git(root, "update-index", "--index-version", "3")
    data = bytearray(index.read_bytes())
    first_flags = 12 + 40 + 20  # the header, the first entry's stat data and object id
    data[first_flags + 1] += 1  # its path one byte longer than its NUL says
    assert stat_entries(bytes(data)) is None


def test_a_schema_4_store_is_upgraded_with_the_git_table_and_its_gitignore(
    root: Path, clock: Clock
) -> None:
    init(root)
    with Store.init(root, clock=clock) as store:
        agent_turn(store, "first", {"a.txt": "a2\n"})
        raw_put(store, b"schema", b"4", "meta")
        drop_table(store, "git")
    (root / ".snapstore" / ".gitignore").unlink()
    with Store.open(root, clock=clock) as store:
        assert raw_values(store, "meta")[b"schema"] == str(SCHEMA_VERSION).encode()
        assert (root / ".snapstore" / ".gitignore").read_text().splitlines()[-1] == "*"
        store.begin_turn("s", "commit")
        git(root, "commit", "-qam", "agent")
        store.end_turn("s")
        result = store.rewind(1, "s")
        assert result.git is not None and result.git["refs"][0]["status"] == "moved"
        assert store.fsck().ok
