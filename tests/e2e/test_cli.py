"""End to end through the real `snapstore` command: JSON keys, exit codes, errors."""

from __future__ import annotations

import fcntl
import json
import subprocess
from pathlib import Path

import pytest

from ..support import read, write

REWIND_KEYS = {
    "session",
    "target",
    "user_text",
    "turns_reverted",
    "restored",
    "deleted",
    "merged",
    "conflicts",
    "marked",
    "errors",
    "warnings",
    "folders_removed",
    "folders_created",
    "new_head",
    "undo_id",
    "dry_run",
    "nothing_done",
    "conversation",
    "git",
}


def _turn(cli, prompt: str, edits: dict[str, str | None], root: Path) -> str:
    turn = cli("--json", "begin", "--prompt", prompt).json["turn"]
    for rel, data in edits.items():
        assert cli("pre-write", "--tool", "Write", rel).code == 0
        if data is None:
            (root / rel).unlink()
        else:
            write(root, rel, data)
        assert cli("post-write", rel).code == 0
    assert cli("end").code == 0
    return turn


def _one_error_line(result, code: int, *needles: str) -> None:
    assert result.code == code, (result.code, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("snapstore: "), result.stderr
    for needle in needles:
        assert needle in lines[0]
    assert "Traceback" not in result.stderr


def test_full_session_json_contract(cli, root: Path) -> None:
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    init = cli("--json", "init")
    assert init.code == 0
    assert set(init.json) == {"root", "store", "created", "not_used", "scan", "track_shell"}
    assert init.json["created"] is True and init.json["root"] == str(root)
    assert cli("--json", "init").json["created"] is False
    assert "/.snapstore/" in (root / ".git" / "info" / "exclude").read_text()

    write(root, "app.py", "a\nb\nc\n")
    begin = cli("--json", "begin", "--prompt", "make it better", "--message-id", "m-1")
    assert begin.code == 0 and set(begin.json) == {"session", "turn"}
    pre = cli("pre-write", "--json", "--tool", "Edit", "app.py", "docs/new.md")
    assert set(pre.json) == {"session", "turn", "captured", "skipped"}
    assert pre.json["captured"] == ["app.py", "docs/new.md"]
    write(root, "app.py", "a\nB\nc\n")
    write(root, "docs/new.md", "# new\n")
    post = cli("--json", "post-write", "app.py", "docs/new.md")
    assert {"session", "turn", "recorded"} <= set(post.json)
    end = cli("--json", "end")
    assert end.json == {"session": "default", "turn": begin.json["turn"], "changes": 2}

    log = cli("--json", "log")
    assert log.code == 0
    (point,) = log.json
    assert set(point) == {
        "n",
        "turn",
        "session",
        "prompt",
        "created",
        "state",
        "files",
        "added",
        "removed",
        "skipped",
        "git",
    }
    assert (point["n"], point["files"], point["added"], point["removed"]) == (1, 2, 2, 1)
    assert point["created"] == "2026-01-01T00:00:00+00:00"

    show = cli("--json", "show", "1")
    assert {"turn", "session", "prompt", "created", "state", "changes"} <= set(show.json)
    assert {c["path"]: c["status"] for c in show.json["changes"]} == {
        "app.py": "modified",
        "docs/new.md": "added",
    }
    assert set(show.json["changes"][0]) == {"path", "status", "added", "removed", "tool", "source"}

    diff = cli("diff", "1", "app.py")
    assert diff.code == 0 and "-b\n+B\n" in diff.stdout and "a/app.py" in diff.stdout

    status = cli("--json", "status")
    assert {
        "root",
        "store",
        "sessions",
        "turns",
        "open_turn",
        "head",
        "blobs",
        "stored_bytes",
        "logical_bytes",
        "dedup_ratio",
    } <= set(status.json)
    assert status.json["turns"] == 1 and status.json["head"] == begin.json["turn"]

    dry = cli("--json", "rewind", "1", "--dry-run")
    assert dry.code == 0 and set(dry.json) == REWIND_KEYS and dry.json["dry_run"] is True
    assert read(root, "app.py") == b"a\nB\nc\n"

    rewind = cli("--json", "rewind", "1", "--yes")
    assert rewind.code == 0 and set(rewind.json) == REWIND_KEYS
    assert rewind.json["restored"] == ["app.py"] and rewind.json["deleted"] == ["docs/new.md"]
    assert rewind.json["user_text"] == "make it better" and rewind.json["new_head"] is None
    assert read(root, "app.py") == b"a\nb\nc\n" and not (root / "docs").exists()

    undo = cli("--json", "undo")
    assert undo.code == 0 and set(undo.json) == REWIND_KEYS
    assert read(root, "app.py") == b"a\nB\nc\n" and read(root, "docs/new.md") == b"# new\n"


def test_rewind_with_conflict_exits_1_and_leaves_the_file(cli, root: Path) -> None:
    cli("init")
    write(root, "f.txt", "1\n2\n3\n")
    _turn(cli, "p", {"f.txt": "1\nagent\n3\n"}, root)
    write(root, "f.txt", "1\nuser\n3\n")
    result = cli("--json", "rewind", "1", "--yes")
    assert result.code == 1
    assert result.json["conflicts"][0]["path"] == "f.txt"
    assert read(root, "f.txt") == b"1\nuser\n3\n"


def test_without_turn_rewind_prints_the_numbered_list(cli, root: Path) -> None:
    cli("init")
    _turn(cli, "first prompt", {"a.txt": "a\n"}, root)
    _turn(cli, "second prompt", {"a.txt": "b\n"}, root)
    result = cli("rewind")
    assert result.code == 0
    lines = [line for line in result.stdout.splitlines() if "prompt" in line and "#" not in line]
    assert lines[0].split()[0] == "1" and "second prompt" in lines[0]
    assert lines[1].split()[0] == "2" and "first prompt" in lines[1]
    assert read(root, "a.txt") == b"b\n"


@pytest.mark.parametrize("path", ["../outside.txt", "/etc/hostname", "sub/../../x"])
def test_paths_outside_the_root_are_refused(cli, root: Path, path: str) -> None:
    cli("init")
    result = cli("pre-write", path)
    _one_error_line(result, 2, "outside")
    assert cli("--json", "status").json["turns"] == 0


def test_symlink_out_of_the_root_is_refused(cli, root: Path, tmp_path: Path) -> None:
    cli("init")
    (tmp_path / "elsewhere").mkdir()
    (root / "link").symlink_to(tmp_path / "elsewhere")
    _one_error_line(cli("pre-write", "link/file.txt"), 2, "symlink")
    assert list((tmp_path / "elsewhere").iterdir()) == []


def test_unknown_turn_exits_4(cli, root: Path) -> None:
    cli("init")
    _turn(cli, "p", {"a.txt": "a\n"}, root)
    _one_error_line(cli("rewind", "deadbeef0000", "--yes"), 4, "unknown turn")
    _one_error_line(cli("show", "9"), 4, "no rewind point 9")


def test_rewind_during_an_open_turn_exits_3(cli, root: Path) -> None:
    cli("init")
    _turn(cli, "p", {"a.txt": "a\n"}, root)
    cli("begin", "--prompt", "still running")
    _one_error_line(cli("rewind", "1", "--yes"), 3, "still open")
    assert read(root, "a.txt") == b"a\n"


def test_no_store_exits_4(cli, root: Path) -> None:
    _one_error_line(cli("log"), 4, "no snapstore store")


def test_a_file_named_snapstore_is_not_a_store(cli, root: Path) -> None:
    """Said as what it is, with what to do; init, a hook and SNAPSTORE_DIR alike."""
    (root / ".snapstore").write_text("not a store")
    fix = "is a file, not a snapstore store, which is a folder (move it aside, then run "
    for args in (["log"], ["init"], ["pre-write", "a.txt"]):
        _one_error_line(cli(*args), 5, f"{root / '.snapstore'} {fix}")
    event = {"hook_event_name": "UserPromptSubmit", "session_id": "s", "cwd": str(root)}
    hook = cli("hook", "claude-code", input=json.dumps(event) + "\n")
    assert hook.code == 0 and fix in hook.stderr  # a hook never breaks the agent
    elsewhere = root / "store-file"
    elsewhere.write_text("")
    _one_error_line(cli("status", env={"SNAPSTORE_DIR": str(elsewhere)}), 5, f"{elsewhere} {fix}")
    assert (root / ".snapstore").read_text() == "not a store"


def test_corrupted_blob_is_reported_and_not_written(cli, root: Path) -> None:
    import lmdb

    cli("init")
    write(root, "a.txt", "A original\n" * 40)
    write(root, "b.txt", "B original\n" * 40)
    turn = _turn(cli, "p", {"a.txt": "A agent\n", "b.txt": "B agent\n"}, root)
    env = lmdb.open(str(root / ".snapstore" / "db"), max_dbs=16)
    blobs = env.open_db(b"blobs")
    changes = env.open_db(b"changes")
    import json

    with env.begin(write=True) as txn:
        first = json.loads(next(iter(txn.cursor(db=changes)))[1])
        assert first["path"] == "a.txt" and first["turn"] == turn
        key = bytes.fromhex(first["before"][0])
        value = bytearray(txn.get(key, db=blobs))
        value[len(value) // 2] ^= 0x55
        txn.put(key, bytes(value), db=blobs)
    env.close()
    result = cli("--json", "rewind", "1", "--yes")
    assert result.code == 1
    assert [e["path"] for e in result.json["errors"]] == ["a.txt"]
    assert read(root, "a.txt") == b"A agent\n" and read(root, "b.txt") == b"B original\n" * 40


def test_a_locked_store_exits_3(cli, root: Path) -> None:
    cli("init")
    with open(root / ".snapstore" / "write.lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        result = cli("--lock-timeout", "0.3", "begin", "--prompt", "p")
    _one_error_line(result, 3, "busy")


def test_usage_errors_exit_2_with_one_line(cli, root: Path) -> None:
    cli("init")
    _one_error_line(
        cli("rewind", "1", "--mode", "sideways"), 2, "'--mode'", "snapstore rewind --help"
    )
    _one_error_line(cli("no-such-command"), 2, "No such command")
    result = cli("--json", "no-such-command")
    assert result.code == 2 and result.json["error"]["code"] == "usage"


def test_an_unknown_turn_points_at_the_log_that_lists_it(cli, root: Path) -> None:
    """A number beyond the rewind points: `log` lists them; an unknown id: `log --all`."""
    cli("init")
    _turn(cli, "first", {"f.txt": "one\n"}, root)
    _one_error_line(cli("rewind", "7"), 4, "no rewind point 7", "(see `snapstore log`)")
    _one_error_line(cli("rewind", "abcdefabcdef"), 4, "unknown turn", "(see `snapstore log --all`)")


def test_resume_with_nothing_interrupted_says_so(cli, root: Path) -> None:
    cli("init")
    _turn(cli, "first", {"f.txt": "one\n"}, root)
    result = cli("rewind", "--resume")
    assert (result.code, result.stdout, result.stderr) == (
        0,
        "no interrupted rewind to resume\n",
        "",
    )
    assert cli("--json", "rewind", "--resume").json == []


def test_json_errors_are_one_document(cli, root: Path) -> None:
    result = cli("--json", "log")
    assert result.code == 4 and result.json["error"]["code"] == "not_found"


def test_store_dir_env_names_the_store(cli, root: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "store"
    assert cli("init", env={"SNAPSTORE_DIR": str(elsewhere)}).code == 0
    assert (elsewhere / "db" / "data.mdb").exists() and not (root / ".snapstore").exists()
    write(root, "a.txt", "x")
    sub = root / "sub"
    sub.mkdir()
    result = cli("--json", "pre-write", "../a.txt", cwd=sub, env={"SNAPSTORE_DIR": str(elsewhere)})
    assert result.code == 0 and result.json["captured"] == ["a.txt"]


def test_session_env_selects_the_session(cli, root: Path) -> None:
    cli("init")
    cli("begin", "--prompt", "p", env={"SNAPSTORE_SESSION": "agent-7"})
    cli("begin", "--prompt", "q")
    cli("end")
    assert cli("--json", "status", env={"SNAPSTORE_SESSION": "agent-7"}).json["open_turn"]
    assert cli("--json", "status").json["open_turn"] is None  # 'default' exists: it is used
    assert cli("--json", "status", "--session", "agent-7").json["open_turn"]


def test_without_default_session_the_most_recent_is_read(cli, root: Path) -> None:
    cli("init")
    for session, prompt in (("claude-code/aaa", "older"), ("claude-code/bbb", "newer")):
        cli("begin", "--prompt", prompt, env={"SNAPSTORE_SESSION": session})
        cli("end", env={"SNAPSTORE_SESSION": session})
    result = cli("log")
    assert result.code == 0 and "newer" in result.stdout and "older" not in result.stdout
    assert "claude-code/bbb" in result.stderr


def test_shell_completion_offers_rewind_points(cli, root: Path) -> None:
    cli("init")
    _turn(cli, "first", {"a.txt": "a\n"}, root)
    _turn(cli, "second", {"a.txt": "b\n"}, root)
    result = cli(
        env={
            "_SNAPSTORE_COMPLETE": "zsh_complete",
            "COMP_WORDS": "snapstore rewind ",
            "COMP_CWORD": "2",
        }
    )
    assert result.code == 0
    assert result.stdout.split("\n")[:6] == ["plain", "1", "second", "plain", "2", "first"]
    commands = cli(
        env={
            "_SNAPSTORE_COMPLETE": "bash_complete",
            "COMP_WORDS": "snapstore re",
            "COMP_CWORD": "1",
        }
    )
    assert "plain,rewind" in commands.stdout.split()


def test_prompts_and_paths_are_printed_as_they_are(cli, root: Path) -> None:
    cli("init")
    prompt = "use [bold]x[/] and [/oops]"
    _turn(cli, prompt, {"[red]f.txt": "x\n"}, root)
    for args in (("log",), ("show", "1"), ("rewind", "1", "--dry-run")):
        result = cli(*args)
        assert result.code == 0, result.stderr
        assert "[red]f.txt" in result.stdout or prompt in result.stdout
    assert prompt in cli("log").stdout and "[red]f.txt" in cli("show", "1").stdout


def test_any_writing_command_finishes_an_interrupted_rewind(cli, root: Path) -> None:
    from snapstore import Store
    from snapstore.core import faults

    class Crash(Exception):
        pass

    def crash(name: str) -> None:
        if name == "journal.journaled":
            raise Crash(name)

    cli("init")
    write(root, "a.txt", "before\n")
    _turn(cli, "p", {"a.txt": "agent\n"}, root)
    with Store.open(root) as store:
        faults.install(crash)
        try:
            with pytest.raises(Crash):
                store.rewind(1)
        finally:
            faults.install(None)
        assert store.unfinished_operations() and read(root, "a.txt") == b"agent\n"
    result = cli("begin", "--prompt", "next")
    assert result.code == 0 and "finished interrupted operation" in result.stderr
    assert read(root, "a.txt") == b"before\n"
    assert cli("--json", "fsck").json["ok"] is True
