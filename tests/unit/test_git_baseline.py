"""The baseline by reference: in a real git repository, the first scan records the files
git's index shows clean against HEAD by their blob id, unread; their bytes come into the
store the first time a change needs them, verified against git's id, so that a later
``git gc`` takes nothing a turn depends on. Files whose bytes differ from the blob (a
smudge filter, autocrlf, a Git LFS pointer's filter) are stored as ever."""

from __future__ import annotations

import os
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from snapstore import Store
from snapstore.core import blobs
from snapstore.core.db import SCHEMA_VERSION
from snapstore.core.repo import Tx
from snapstore.ops import scan
from snapstore.ops.scanrecord import Committer

from ..support import Clock, changes_of, write
from ..support.gitrepo import git, sh
from ..support.rawdb import drop_table, raw_put, raw_values
from ..support.retried import commits_run_twice


@pytest.fixture(autouse=True)
def _settled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scan, "RACY_NS", 0)  # files written by the test count as settled


def _repo(root: Path, files: dict[str, str | bytes], attributes: str = "") -> None:
    git(root, "init", "-q", "-b", "main")
    if attributes:
        write(root, ".gitattributes", attributes)
    for rel, data in files.items():
        write(root, rel, data)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "start")


def _referenced(store: Store) -> set[str]:
    """The paths whose baseline is a reference to git, not a blob of the store: in a
    group of the baseline (core.baseline), or by a ``paths`` record of their own."""
    refs = raw_values(store, "gitrefs")
    with store.repo.read() as v:
        own = {rel for rel, digest in v.path_digests() if digest in refs}
        return own | {os.fsdecode(path) for path, _, _ in v.grouped_files()}


def _turn(store: Store, script: str, session: str = "s") -> str:
    """One agent turn whose shell call runs ``script`` (scan mode)."""
    turn = store.begin_turn(session, script, scan=True)
    store.shell_begin(session, "call")
    sh(Path(store.root), script)
    store.shell_end(session, "call")
    store.end_turn(session, scan=True)
    return turn.id


def _loose(root: Path, rel: str) -> Path:
    oid = git(root, "rev-parse", f"HEAD:{rel}")
    return root / ".git" / "objects" / oid[:2] / oid[2:]


def test_clean_files_are_referenced_unread_and_the_rest_stored(root: Path, clock: Clock) -> None:
    _repo(root, {f"src/f{i}.txt": f"file {i}\n" * 20 for i in range(30)} | {"run.sh": "echo\n"})
    os.chmod(root / "run.sh", 0o755)
    git(root, "add", "run.sh")
    git(root, "commit", "-qm", "executable")
    write(root, "src/f1.txt", "edited, not staged\n")
    write(root, "src/f2.txt", "staged\n")
    git(root, "add", "src/f2.txt")
    write(root, "untracked.txt", "new\n")
    with Store.init(root, clock=clock) as store:
        result = store.scan()
        assert result.baseline
        referenced = _referenced(store)
        assert referenced == {f"src/f{i}.txt" for i in range(30) if i not in (1, 2)} | {"run.sh"}
        assert result.read == 3  # only the edited, the staged and the untracked file
        with store.repo.read() as v:  # the three read are stored as ever
            for rel in ("src/f1.txt", "src/f2.txt", "untracked.txt"):
                assert v.blob(v.path_digest(rel)) == (root / rel).read_bytes()
        assert len(raw_values(store, "blobs")) == 3
        assert store.fsck().ok
        assert store.scan().count == 0  # a second scan finds nothing, reads nothing
        assert store.scan().read == 0


def test_a_shell_rm_of_a_referenced_file_is_rewound_exactly(root: Path, clock: Clock) -> None:
    data = {"keep.txt": "kept\n", "gone.txt": "the file rm takes\n" * 50, "edit.txt": "one\n"}
    _repo(root, data | {"tool.sh": "#!/bin/sh\n"})
    os.chmod(root / "tool.sh", 0o755)
    git(root, "commit", "-qam", "mode")
    with Store.init(root, clock=clock) as store:
        store.scan()
        assert {"gone.txt", "edit.txt", "tool.sh"} <= _referenced(store)
        _turn(store, "rm gone.txt && echo two >> edit.txt && chmod -x tool.sh && touch keep.txt")
        assert "keep.txt" in _referenced(store)  # only touched: still a reference, not copied
        result = store.rewind(1, "s")
        assert result.ok and sorted(result.restored) == ["edit.txt", "gone.txt", "tool.sh"]
        for rel, text in data.items():
            assert (root / rel).read_text() == text
        assert os.stat(root / "tool.sh").st_mode & 0o777 == 0o755
        assert git(root, "status", "--porcelain") == ""
        assert store.fsck().ok


def test_the_version_a_turn_needs_survives_git_gc_of_its_branch(root: Path, clock: Clock) -> None:
    """The agent deletes a branch and prunes: the baseline's file it removed earlier comes
    back from the store, because its bytes were copied when the turn changed it."""
    _repo(root, {"base.txt": "on main\n"})
    git(root, "checkout", "-q", "-b", "feature")
    write(root, "feature.txt", "only on the feature branch\n" * 30)
    git(root, "add", "feature.txt")
    git(root, "commit", "-qm", "feature")
    with Store.init(root, clock=clock) as store:
        store.scan()
        assert "feature.txt" in _referenced(store)
        object_file = _loose(root, "feature.txt")
        _turn(store, "git checkout -q main")  # the file leaves the work tree
        _turn(
            store,
            "git branch -D feature && git reflog expire --expire=now --all && "
            "git gc -q --prune=now",
        )
        assert not object_file.exists()  # git no longer has the object
        result = store.rewind(2, "s")
        assert result.restored == ["feature.txt"] and not result.errors
        assert (root / "feature.txt").read_text() == "only on the feature branch\n" * 30
        # the branch itself cannot come back: git pruned its commit, and the rewind says so
        assert result.git is not None and "pruned" in str(result.git["refs"])
        assert store.fsck().ok


def test_a_version_git_lost_before_any_capture_is_refused_not_guessed(
    root: Path, clock: Clock
) -> None:
    """The file leaves the work tree and its object is pruned inside one shell call, before
    any capture could copy it: the scan says it was not captured, the rewind says it is
    not restored, and nothing is written in its place."""
    _repo(root, {"base.txt": "on main\n"})
    git(root, "checkout", "-q", "-b", "feature")
    write(root, "feature.txt", "only on the feature branch\n")
    git(root, "add", "feature.txt")
    git(root, "commit", "-qm", "feature")
    warnings: list[str] = []
    with Store.init(root, clock=clock, git=False, warn=warnings.append) as store:
        store.scan()
        _turn(
            store,
            "git checkout -q main && git branch -D feature && "
            "git reflog expire --expire=now --all && git gc -q --prune=now",
        )
        assert any("feature.txt" in w and "missing from the repository" in w for w in warnings)
        result = store.rewind(1, "s")
        assert not (root / "feature.txt").exists()
        assert [w["path"] for w in result.warnings] == ["feature.txt"]
        assert "missing from the repository" in result.warnings[0]["reason"]
        assert store.fsck().ok  # nothing of the store names the lost version


def test_a_file_git_converts_is_referenced_only_if_its_bytes_are_the_blobs(
    root: Path, clock: Clock
) -> None:
    """Where git may convert between the blob and the file (autocrlf, a smudge filter, an
    eol or text attribute, Git LFS), the file is read: bytes that hash to its blob are
    referenced (an LF file under autocrlf, an LFS pointer never smudged), other bytes are
    stored (a CRLF checkout, a smudged file), and a rewind brings back the file's bytes."""
    pointer = (
        "version https://git-lfs.github.com/spec/v1\n"
        "oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\n"
        "size 12345\n"
    )
    _repo(
        root,
        {
            "plain.txt": "plain\n",
            "model.bin": pointer,
            "notes.up": "shouting\n",
            "crlf.txt": "a\nb\n",
            "data.raw": "raw\n",
            "unix.lf": "lf\n",
        },
        attributes=(
            "*.bin filter=lfs diff=lfs merge=lfs -text\n*.up filter=upper\n"
            "*.raw -text\n*.lf eol=lf\n"
        ),
    )
    git(root, "config", "filter.upper.smudge", "tr a-z A-Z")
    git(root, "config", "filter.upper.clean", "tr A-Z a-z")
    git(root, "config", "core.autocrlf", "true")
    for rel in ("notes.up", "crlf.txt"):
        (root / rel).unlink()
    git(root, "checkout", "--", "notes.up", "crlf.txt")  # checked out through the conversions
    assert (root / "notes.up").read_bytes() == b"SHOUTING\r\n"
    assert (root / "crlf.txt").read_bytes() == b"a\r\nb\r\n"
    assert git(root, "status", "--porcelain") == ""  # git calls them all clean
    with Store.init(root, clock=clock, git=False) as store:
        store.scan()
        referenced = _referenced(store)
        assert not referenced & {"notes.up", "crlf.txt"}  # their bytes are not the blob's
        assert {"model.bin", "unix.lf", "plain.txt", "data.raw"} <= referenced  # they are
        assert raw_values(store, "gitrefs") == {}  # read or not, in the baseline's groups
        git(root, "config", "--unset", "core.autocrlf")
        with store.repo.read() as v:
            for rel in ("notes.up", "crlf.txt"):
                assert v.blob(v.path_digest(rel)) == (root / rel).read_bytes()
        kinds = ("notes.up", "crlf.txt", "model.bin", "unix.lf", "plain.txt")
        before = {rel: (root / rel).read_bytes() for rel in kinds}
        _turn(store, "rm " + " ".join(kinds))
        assert store.rewind(1, "s").ok
        assert {rel: (root / rel).read_bytes() for rel in before} == before


def test_a_corrupt_or_missing_object_is_refused_with_the_files_name(
    root: Path, clock: Clock
) -> None:
    _repo(root, {"bad.txt": "hello\n", "lost.txt": "lost\n", "fine.txt": "fine\n"})
    warnings: list[str] = []
    with Store.init(root, clock=clock, git=False, warn=warnings.append) as store:
        store.scan()
        assert {"bad.txt", "lost.txt"} <= _referenced(store)
        bad = _loose(root, "bad.txt")  # now holds other bytes under the same id
        bad.chmod(0o644)
        bad.write_bytes(zlib.compress(b"blob 6\0HELLO\n"))
        _loose(root, "lost.txt").unlink()
        report = store.fsck()
        named = {d["key"]: d["reason"] for d in report.dangling}
        assert not report.ok and set(named) == {"bad.txt", "lost.txt"}
        assert "does not hold the bytes its id names" in named["bad.txt"]
        assert "missing from the repository" in named["lost.txt"]
        _turn(store, "echo new > bad.txt && rm lost.txt && echo more >> fine.txt")
        assert sorted(w.split(" ")[0] for w in warnings) == ["bad.txt", "lost.txt"]
        rewound = store.rewind(1, "s")
        assert (root / "bad.txt").read_text() == "new\n"  # never HELLO: left as it is
        assert not (root / "lost.txt").exists()
        assert (root / "fine.txt").read_text() == "fine\n"  # its object was sound
        assert sorted(w["path"] for w in rewound.warnings) == ["bad.txt", "lost.txt"]
        assert store.fsck().ok  # the lost versions were never recorded


def test_a_write_without_its_pre_write_starts_from_the_copied_version(
    root: Path, clock: Clock
) -> None:
    """A hook's post-write whose pre-write never came: the change starts from the
    referenced version, copied in from git, and a rewind brings it back."""
    _repo(root, {"app.py": "print('one')\n"})
    with Store.init(root, clock=clock, git=False) as store:
        store.scan()
        assert "app.py" in _referenced(store)
        store.begin_turn("s", "edit")
        write(root, "app.py", "print('two')\n")
        store.post_write(["app.py"], "s")
        store.end_turn("s")
        assert "app.py" not in _referenced(store)
        assert store.rewind(1, "s").ok
        assert (root / "app.py").read_text() == "print('one')\n"


def test_gc_drops_references_no_path_names_and_outside_git_nothing_changes(
    root: Path, clock: Clock, tmp_path: Path
) -> None:
    _repo(root, {"a.txt": "a\n", "b.txt": "b\n"})
    with Store.init(root, clock=clock, git=False) as store:
        store.scan()
        assert _referenced(store) == {"a.txt", "b.txt"}
        assert raw_values(store, "gitrefs") == {}  # both in a group of the baseline
        _turn(store, "echo changed > a.txt")
        a_key = blobs.reference_key(git(root, "rev-parse", "HEAD:a.txt"))
        assert set(raw_values(store, "gitrefs")) == {a_key}  # a.txt's left its group
        store.gc()
        assert raw_values(store, "gitrefs") == {}  # no path names it since a.txt changed
        assert _referenced(store) == {"b.txt"}
        assert store.rewind(1, "s").ok and (root / "a.txt").read_text() == "a\n"
    plain = tmp_path / "plain"
    plain.mkdir()
    write(plain, "a.txt", "a\n")
    with Store.init(plain, clock=clock) as store:
        assert store.scan().read == 1 and raw_values(store, "gitrefs") == {}


def test_a_scan_whose_commit_runs_again_leaves_a_touched_file_a_reference(
    root: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A commit that must grow the map runs its function again (core.db). The scan's
    settling of a file only touched once kept the reference in the item it was given, so
    the second run recorded a change to the reference, and the scan failed ("names a git
    reference, not a blob"), as the scale bench found at 100,000 files."""
    _repo(root, {"a.txt": "committed\n" * 10, "b.txt": "other\n"})
    with Store.init(root, clock=clock) as store:
        store.scan()
        ran = commits_run_twice(monkeypatch)
        turn = _turn(store, "touch a.txt && echo more >> b.txt")
        assert ran[0] > 0
        assert "a.txt" in _referenced(store) and "b.txt" not in _referenced(store)
        assert list(changes_of(store, turn)) == ["b.txt"]
        assert store.rewind(1, "s").restored == ["b.txt"]
        assert (root / "b.txt").read_text() == "other\n" and store.fsck().ok


def _own_references(store: Store) -> None:
    """Move every grouped file into records of its own, as schema 6 kept them: the
    record layer does so at a file's first write."""
    with store.repo.read() as v:
        grouped = [os.fsdecode(path) for path, _, _ in v.grouped_files()]

    def commit(tx: Tx) -> None:
        for rel in grouped:
            tx.put_index(rel, tx.index_entry(os.fsencode(rel)) or b"")

    store.repo.write(commit)


def test_a_schema_6_stores_references_read_as_ever_after_the_upgrade(
    root: Path, clock: Clock
) -> None:
    """Schema 7 added the ``baseline`` table. A schema-6 store keeps its references as three
    records a file; upgraded, they read and rewind as before, and fsck checks them."""
    _repo(root, {"a.txt": "a\n", "sub/b.txt": "b\n"})
    with Store.init(root, clock=clock, git=False) as store:
        store.scan()
        _own_references(store)
        assert raw_values(store, "baseline") == {} and len(raw_values(store, "gitrefs")) == 2
        raw_put(store, b"schema", b"6", "meta")
        drop_table(store, "baseline")
    with Store.open(root, clock=clock, git=False) as store:
        assert raw_values(store, "meta")[b"schema"] == str(SCHEMA_VERSION).encode()
        assert raw_values(store, "baseline") == {}
        assert _referenced(store) == {"a.txt", "sub/b.txt"}
        _turn(store, "rm a.txt sub/b.txt")
        assert store.rewind(1, "s").ok
        assert (root / "a.txt").read_text() == "a\n" and (root / "sub/b.txt").read_text() == "b\n"
        assert store.fsck().ok


def _groups_in_order(store: Store) -> int:
    """The number of groups, each checked to begin after the one before ends."""
    last, count = b"", 0
    with store.repo.read() as v:
        for key, group in v.groups():
            assert not isinstance(group, Exception) and key == group.paths[0] > last
            last, count = group.paths[-1], count + 1
    return count


def test_a_first_scan_that_starts_again_keeps_the_groups_the_last_one_wrote(
    root: Path, clock: Clock
) -> None:
    """A first scan killed after its references were committed (its scan state was never
    written) runs again: the files it grouped read as they are, changed or gone ones too."""
    files = {f"d{i % 7}/f{i:03}.txt": f"file {i}\n" for i in range(400)}
    _repo(root, files)
    with Store.init(root, clock=clock, git=False) as store:
        store.scan()
        assert _groups_in_order(store) > 1
        raw_put(store, b"scan", None, "meta")  # as if killed before its last commit
        write(root, "d3/f003.txt", "changed since\n")
        os.remove(root / "d1/f001.txt")
        assert store.scan().baseline
        assert _referenced(store) == set(files) - {"d3/f003.txt", "d1/f001.txt"}
        assert _groups_in_order(store) > 1
        _turn(store, "rm -r d2 && echo new > d3/f003.txt")
        assert store.rewind(1, "s").ok
        for rel, data in files.items():
            if rel != "d1/f001.txt":
                assert (root / rel).read_text() == (
                    "changed since\n" if rel == "d3/f003.txt" else data
                )
        assert store.fsck().ok


def test_two_first_scans_at_once_merge_their_groups(
    root: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two first scans whose walks both ran before either committed (a hook's and init's;
    the other one runs as a process of its own): the second to commit merges its groups
    with the first's, so that no two ranges meet, and each file reads through the one
    group that holds it."""
    files = {f"d{i % 5}/f{i:03}.txt": f"file {i}\n" for i in range(300)}
    more = {f"d{i % 5}/g{i:03}.txt": f"more {i}\n" for i in range(100)}
    _repo(root, files)
    real = Committer.references
    other: list[int] = []

    def late(self: Committer, noted: list) -> list:
        if not other:  # the other scan walks and commits in between, with more files
            other.append(1)
            for rel, data in more.items():
                write(root, rel, data)
            git(root, "add", "-A")
            git(root, "commit", "-qm", "more")
            code = "import sys; from snapstore import Store; s = Store.open(sys.argv[1], git=False)"
            code += "; assert s.scan().baseline; s.close()"
            subprocess.run([sys.executable, "-c", code, str(root)], check=True)
        return real(self, noted)

    monkeypatch.setattr(Committer, "references", late)
    with Store.init(root, clock=clock, git=False) as store:
        store.scan()
        assert other and _groups_in_order(store) > 1
        assert _referenced(store) == set(files) | set(more)  # the other's files kept
        _turn(store, "rm -r d1 d3")
        assert store.rewind(1, "s").ok
        assert all((root / rel).read_text() == data for rel, data in {**files, **more}.items())
        assert store.fsck().ok


def test_a_walk_across_many_groups_sees_each_file_once(root: Path, clock: Clock) -> None:
    """Folders that span groups, and groups that span folders: a shell call that deletes
    one folder, adds to another and edits a file is recorded as exactly that, and rewound."""
    files = {
        f"{top}/{sub}/f{i}.txt": f"{top}{sub}{i}\n"
        for top in "ab"
        for sub in range(30)
        for i in range(12)
    }
    _repo(root, files)
    with Store.init(root, clock=clock, git=False) as store:
        store.scan()
        assert len(raw_values(store, "baseline")) > 3
        turn = _turn(store, "rm -r a/7 && echo n > b/29/new.txt && echo e > a/0/f0.txt")
        recorded = {(c.path, c.after is None) for c in store.changes(turn)}
        assert recorded == {
            *((f"a/7/f{i}.txt", True) for i in range(12)),
            ("b/29/new.txt", False),
            ("a/0/f0.txt", False),
        }
        assert store.rewind(1, "s").ok
        assert not (root / "b/29/new.txt").exists()
        assert all((root / rel).read_text() == data for rel, data in files.items())
        assert store.scan().count == 0


def test_a_file_changed_after_the_walk_keeps_the_version_the_walk_saw(
    root: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The user edits one file and deletes another after the first scan's walk, before its
    commit: both are still referenced as the walk found them (git holds those versions),
    and the next scan records the two changes from there. A baseline without them would
    count the edited file as new, and forget the deleted one."""
    files = {f"f{i}.txt": f"file {i}\n" * 10 for i in range(6)}
    _repo(root, files)
    real = Committer.references

    def late(self: Committer, noted: list) -> list:
        monkeypatch.setattr(Committer, "references", real)
        write(root, "f1.txt", "edited during init\n")
        os.remove(root / "f4.txt")
        return real(self, noted)

    monkeypatch.setattr(Committer, "references", late)
    with Store.init(root, clock=clock, git=False) as store:
        assert store.scan().baseline
        assert _referenced(store) == set(files)
        result = store.scan()
        assert (result.changed, result.deleted, result.added) == (["f1.txt"], ["f4.txt"], [])
        with store.repo.read() as v:
            for change in store.changes(result.turn):
                assert change.before is not None
                assert v.blob(bytes.fromhex(change.before.digest)) == files[change.path].encode()
        assert store.fsck().ok


def test_with_no_commit_yet_every_file_is_read_and_stored(root: Path, clock: Clock) -> None:
    """git's index stages the files, but there is no HEAD to be clean against (an unborn
    branch): git cannot tell which files are clean, so the walk's references are all
    read and stored, and a shell ``rm`` is rewound from the store's own bytes."""
    git(root, "init", "-q", "-b", "main")
    files = {f"f{i}.txt": f"file {i}\n" for i in range(5)}
    for rel, data in files.items():
        write(root, rel, data)
    git(root, "add", "-A")
    with Store.init(root, clock=clock, git=False) as store:
        result = store.scan()
        assert result.baseline and result.read == len(files)
        assert _referenced(store) == set()
        assert len(raw_values(store, "blobs")) == len(files)
        _turn(store, "rm f1.txt f3.txt")
        assert store.rewind(1, "s").ok
        assert all((root / rel).read_text() == data for rel, data in files.items())
        assert store.fsck().ok
