"""What the command prints, end to end: one JSON document wherever --json stands, diff as
JSON, --path naming a file no turn touched, prompts that are not UTF-8, names and prompts
that would drive a terminal, escaped for people and raw in JSON, and a rewind's prompt block
for a session with no transcript."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from ..support import read, write

#: What a terminal acts on: C0 controls but the newline, DEL, C1 controls, bidi controls.
RAW_CONTROL = re.compile(
    "[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]"
)


def _turn(
    cli,
    root: Path,
    prompt: str,
    path: str,
    before: str | None,
    after: str,
    env: dict[str, str] | None = None,
) -> None:
    if before is not None:
        write(root, path, before)
    assert cli("begin", "--prompt", prompt, env=env).code == 0
    assert cli("pre-write", path, env=env).code == 0
    write(root, path, after)
    assert cli("post-write", path, env=env).code == 0
    assert cli("end", env=env).code == 0


def _one_json_document(result) -> dict:
    """Exactly one JSON document on stdout (json.loads refuses anything after it)."""
    return json.loads(result.stdout)


@pytest.mark.parametrize(
    "args",
    [
        ["log", "--json", "--bogus"],
        ["log", "--bogus", "--json"],
        ["show", "--json"],
        ["rewind", "1", "--mode", "sideways", "--json"],
        ["no-such-command", "--json"],
        ["log", "extra", "--json"],
        ["diff", "--json"],
        ["undo", "--json", "--on-conflict", "x"],
    ],
)
def test_json_after_the_command_name_still_gives_one_document(
    cli, root: Path, args: list[str]
) -> None:
    cli("init")
    result = cli(*args)
    assert result.code == 2, result.stderr
    error = _one_json_document(result)["error"]
    assert error["code"] == "usage" and error["exit_code"] == 2
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("snapstore: ")


def test_json_after_the_command_name_for_library_errors_too(cli, root: Path) -> None:
    cli("init")
    _turn(cli, root, "p", "a.txt", "a\n", "b\n")
    result = cli("show", "9", "--json")
    assert result.code == 4 and _one_json_document(result)["error"]["code"] == "not_found"


def test_diff_json_gives_each_file_with_its_unified_diff(cli, root: Path) -> None:
    cli("init")
    write(root, "a.txt", "one\ntwo\nthree\n")
    write(root, "gone.txt", "bye\n")
    cli("begin", "--prompt", "edit, add, delete")
    cli("pre-write", "a.txt", "new.txt", "gone.txt", "bin.dat")
    write(root, "a.txt", "one\nTWO\nthree\n")
    write(root, "new.txt", "hello\n")
    (root / "gone.txt").unlink()
    write(root, "bin.dat", b"\0\1\2")
    cli("post-write", "a.txt", "new.txt", "gone.txt", "bin.dat")
    cli("end")
    result = cli("diff", "1", "--json")
    assert result.code == 0, result.stderr
    doc = _one_json_document(result)
    assert set(doc) == {"turn", "session", "files"} and doc["session"] == "default"
    files = {f["path"]: f for f in doc["files"]}
    assert set(files) == {"a.txt", "new.txt", "gone.txt", "bin.dat"}
    for item in files.values():
        assert set(item) == {
            "path",
            "status",
            "added",
            "removed",
            "tool",
            "source",
            "binary",
            "diff",
        }
    assert files["a.txt"]["diff"] == (
        "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n"
        "@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n"
    )
    assert (files["a.txt"]["status"], files["a.txt"]["added"], files["a.txt"]["removed"]) == (
        "modified",
        1,
        1,
    )
    assert "new file mode 100644\n--- /dev/null\n+++ b/new.txt\n" in files["new.txt"]["diff"]
    assert files["gone.txt"]["status"] == "deleted" and "-bye\n" in files["gone.txt"]["diff"]
    assert files["bin.dat"]["binary"] is True
    assert files["bin.dat"]["diff"].endswith("Binary files /dev/null and b/bin.dat differ\n")
    # The text form is the same diff, file after file; PATHS limit both.
    text = cli("diff", "1")
    assert text.stdout == "".join(f["diff"] for f in doc["files"])
    only = _one_json_document(cli("--json", "diff", "1", "a.txt"))
    assert [f["path"] for f in only["files"]] == ["a.txt"]


def test_diff_of_a_path_the_turn_did_not_change_exits_2_as_rewind_does(cli, root: Path) -> None:
    """`diff TURN PATH` and `rewind TURN --path PATH` say a path the turn never changed the
    same way: exit 2, one line naming it; not an empty diff and exit 0."""
    cli("init")
    write(root, "b.txt", "untouched\n")
    _turn(cli, root, "first", "a.txt", "a\n", "A\n")
    _turn(cli, root, "second", "c.txt", "c\n", "C\n")
    turn = cli("--json", "show", "1").json["turn"]
    for path in ("nosuch.py", "b.txt", "a.txt"):  # a.txt: turn 2 changed it, not turn 1
        result = cli("diff", "1", path)
        assert (result.code, result.stdout) == (2, ""), result.stderr
        assert result.stderr == f"snapstore: turn {turn} never changed {path}\n"
        rewind = cli("rewind", "1", "--path", path, "--yes")
        assert rewind.stderr == (
            f"snapstore: turn {turn} and the turns after it never changed {path}\n"
        )
        assert rewind.code == result.code
    both = cli("--json", "diff", "1", "c.txt", "nosuch.py")
    assert both.code == 2 and both.json["error"]["message"].endswith("never changed nosuch.py")
    assert cli("diff", "1", "c.txt").stdout.startswith("diff --git a/c.txt b/c.txt\n")


def test_rewind_path_that_no_turn_touched_exits_2_and_names_it(cli, root: Path) -> None:
    cli("init")
    write(root, "b.txt", "untouched\n")
    _turn(cli, root, "first", "a.txt", "a\n", "A\n")
    _turn(cli, root, "second", "c.txt", "c\n", "C\n")
    for args in (
        ["rewind", "1", "--path", "a.txt", "--yes"],  # turn 2 (first) touched it, not 1
        ["rewind", "2", "--path", "b.txt", "--yes"],
        ["rewind", "2", "--path", "no/such.txt", "--dry-run"],
    ):
        result = cli(*args)
        assert result.code == 2, (args, result.stderr)
        named = args[args.index("--path") + 1]
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and named in lines[0] and "never changed" in lines[0], lines
    assert read(root, "a.txt") == b"A\n" and read(root, "c.txt") == b"C\n"
    both = cli("--json", "rewind", "2", "--path", "a.txt", "--path", "b.txt", "--yes")
    assert both.code == 2 and "b.txt" in both.json["error"]["message"]
    assert read(root, "a.txt") == b"A\n"  # one path not touched: nothing is rewound
    ok = cli("--json", "rewind", "2", "--path", "a.txt", "--yes")
    assert ok.code == 0 and ok.json["restored"] == ["a.txt"] and read(root, "a.txt") == b"a\n"


def test_a_prompt_file_that_is_not_utf8_is_kept_with_replacements(cli, root: Path) -> None:
    cli("init")
    (root / "prompt.txt").write_bytes(b"fix the \xff\xfe parser\n")
    result = cli("--json", "begin", "--prompt-file", "prompt.txt")
    assert result.code == 0, result.stderr
    assert _one_json_document(result)["turn"]
    warning = result.stderr.strip().splitlines()
    assert len(warning) == 1 and "prompt.txt is not valid UTF-8" in warning[0]
    assert "internal error" not in result.stderr
    cli("end")
    assert cli("--json", "log").json[0]["prompt"] == "fix the \ufffd\ufffd parser\n"


def test_a_command_line_prompt_that_is_not_utf8_is_kept_with_replacements(cli, root: Path) -> None:
    cli("init")
    result = cli("begin", "--prompt", b"caf\xe9 au lait")  # Latin-1 bytes in argv
    assert result.code == 0 and "--prompt is not valid UTF-8" in result.stderr
    cli("end")
    log = cli("--json", "log")
    assert log.json[0]["prompt"] == "caf\ufffd au lait"
    assert "\\udc" not in log.stdout  # no lone surrogate escapes into JSON


def test_a_prompt_file_from_stdin_and_a_missing_one(cli, root: Path) -> None:
    cli("init")
    assert cli("begin", "--prompt-file", "-", input="from stdin\n").code == 0
    cli("end")
    assert cli("--json", "log").json[0]["prompt"] == "from stdin\n"
    missing = cli("begin", "--prompt-file", "nope.txt")
    assert missing.code == 2 and missing.stderr.count("\n") == 1


EVIL_NAME = "bad\x1b[2Jname\n.txt"
EVIL_PROMPT = "clear\x1b[2J\x07 the screen \u202eevil"
EVIL_SESSION = "agent/\x1b]0;owned\x07"


def test_control_characters_are_escaped_for_people_and_raw_in_json(cli, root: Path) -> None:
    cli("init")
    env = {"SNAPSTORE_SESSION": EVIL_SESSION}
    _turn(cli, root, EVIL_PROMPT, EVIL_NAME, "before\n", "after\n", env=env)
    quoted_name = '"bad\\033[2Jname\\n.txt"'
    quoted_prompt = '"clear\\033[2J\\a the screen \\342\\200\\256evil"'
    runs = {
        "log": cli("log", env=env),
        "show": cli("show", "1", env=env),
        "diff": cli("diff", "1", env=env),
        "status": cli("status", env=env),
        "list": cli("rewind", env=env),
        "dry": cli("rewind", "1", "--dry-run", env=env),
    }
    runs["rewind"] = cli("rewind", "1", "--yes", env=env)
    runs["undo"] = cli("undo", env=env)
    for what, result in runs.items():
        assert result.code == 0, (what, result.stderr)
        for stream in (result.stdout, result.stderr):
            assert not RAW_CONTROL.search(stream), (what, stream)
    assert quoted_prompt in runs["log"].stdout and quoted_prompt in runs["show"].stdout
    assert quoted_name in runs["show"].stdout and quoted_prompt in runs["list"].stdout
    assert '"agent/\\033]0;owned\\a"' in runs["show"].stdout
    assert '"agent/\\033]0;owned\\a"' in runs["status"].stdout
    assert runs["diff"].stdout.startswith(
        'diff --git "a/bad\\033[2Jname\\n.txt" "b/bad\\033[2Jname\\n.txt"\n'
        '--- "a/bad\\033[2Jname\\n.txt"\n+++ "b/bad\\033[2Jname\\n.txt"\n'
    )
    assert quoted_name in runs["dry"].stdout and quoted_name in runs["rewind"].stdout
    assert quoted_name in runs["undo"].stdout
    # JSON keeps the raw strings.
    log = cli("--json", "log", env=env).json
    assert log[0]["prompt"] == EVIL_PROMPT and log[0]["session"] == EVIL_SESSION
    show = cli("--json", "show", "1", env=env).json
    assert show["changes"][0]["path"] == EVIL_NAME
    diff = cli("--json", "diff", "1", env=env).json
    assert diff["files"][0]["diff"].startswith(f"diff --git a/{EVIL_NAME} b/{EVIL_NAME}\n")
    assert read(root, EVIL_NAME) == b"after\n"


def test_a_name_that_is_not_utf8_is_shown_as_its_bytes(cli, root: Path) -> None:
    """A scan records a file whose name is not UTF-8; people see its byte, escaped."""
    cli("init", "--track-shell")
    (root / "caf\udce9.txt").write_text("x\n")  # the byte 0xE9 in the name, as os.fsdecode has it
    assert cli("scan").code == 0
    event = {
        "session_id": "s",
        "transcript_path": "",
        "cwd": str(root),
        "tool_name": "Bash",
        "tool_input": {"command": "..."},
        "tool_use_id": "t1",
    }
    for name in ("UserPromptSubmit", "PreToolUse"):  # a change is the turn's inside its shell call
        assert (
            cli(
                "hook",
                "claude-code",
                input=json.dumps({**event, "hook_event_name": name, "prompt": "p"}),
            ).code
            == 0
        )
    (root / "caf\udce9.txt").write_text("y\n")
    scan = cli("scan")
    assert scan.code == 0 and '"caf\\351.txt"' in scan.stdout
    for name in ("PostToolUse", "Stop"):
        assert (
            cli("hook", "claude-code", input=json.dumps({**event, "hook_event_name": name})).code
            == 0
        )
    show = cli("show", "1", "--session", "claude-code/s")
    assert show.code == 0 and '"caf\\351.txt"' in show.stdout


def test_a_rewind_that_splits_a_hard_link_says_so_on_the_terminal(cli, root: Path) -> None:
    """The split is reported to people too, not only in --json."""
    cli("init")
    _turn(cli, root, "edit", "a.txt", "one\n", "two\n")
    os.link(root / "a.txt", root / "b.txt")
    result = cli("rewind", "1", "--yes")
    assert result.code == 0, result.stderr
    assert read(root, "a.txt") == b"one\n" and read(root, "b.txt") == b"two\n"
    assert re.search(r"^  warning\s+a\.txt: .*2 hard links", result.stdout, re.M), result.stdout


def test_output_that_is_not_a_terminal_is_never_wrapped(cli, tmp_path: Path) -> None:
    """Piped (as here), with an 80-column COLUMNS: a long path, session, prompt or remote URL
    stays on its line in status, show, doctor, hook install, remote add/list/log and gc, so
    that grep finds it."""
    long = tmp_path.joinpath(*["a-folder-with-a-rather-long-name-for-the-test"] * 3, "ws")
    long.mkdir(parents=True)
    remote = tmp_path / ("a-remote-folder-whose-name-goes-on-and-on-" * 3)
    remote.mkdir()
    session = "claude-code/0f9e8d7c-6b5a-4321-9fed-cba987654321-and-a-long-tail"
    prompt = "rename every helper in the utilities module and update their callers"
    deep = "src/" + "/".join(["nested-package-with-a-long-name"] * 3) + "/module.py"
    env = {"COLUMNS": "80", "SNAPSTORE_SESSION": session}

    def run(*args: str) -> str:
        result = cli(*args, cwd=long, env=env)
        assert result.code in (0, 1), (args, result.stderr)
        return result.stdout + result.stderr

    run("init")
    write(long, deep, "old\n")
    run("begin", "--prompt", prompt)
    run("pre-write", deep)
    write(long, deep, "new\n")
    run("post-write", deep)
    run("end")
    seen = {
        "status": run("status"),
        "show": run("show", "1"),
        "hook install": run("hook", "install", "claude-code"),
        "doctor": run("doctor"),
        "remote add": run("remote", "add", "far", f"file://{remote}"),
        "remote list": run("remote", "list"),
        "push": run("push"),
        "remote log": run("remote", "log"),
    }
    lines = {name: text.splitlines() for name, text in seen.items()}
    assert any(str(long) in line for line in lines["status"]), seen["status"]
    assert any(deep in line and "+1 -1" in line for line in lines["show"]), seen["show"]
    settings = str(long / ".claude" / "settings.local.json")
    for name in ("hook install", "doctor"):
        assert any(settings in line for line in lines[name]), seen[name]
    for name in ("remote add", "remote list"):
        assert any(f"file://{remote}" in line for line in lines[name]), seen[name]
    assert any(session in line and prompt[:60] in line for line in lines["remote log"])
    widest = max(len(line) for text in lines.values() for line in text)
    assert widest > 80, widest  # the long values are there, on lines longer than COLUMNS


def test_a_dry_run_prints_the_plan_and_the_diffs_only_when_asked(cli, root: Path) -> None:
    """On Flask, `rewind N --dry-run` printed 130 lines of diffs before its plan, which
    scrolled away. The plan comes alone now, one line per file, with a note of --diff;
    --diff adds each file's diff after the plan."""
    assert cli("init", "--no-track-shell").code == 0
    long = "".join(f"line {i}\n" for i in range(60))
    files = [f"src/m{i}.py" for i in range(5)]
    for path in files:
        write(root, path, long)
    assert cli("begin", "--prompt", "touch every module").code == 0
    assert cli("pre-write", *files).code == 0
    for path in files:
        write(root, path, long.replace("line", "LINE"))
    assert cli("post-write", *files).code == 0
    assert cli("end").code == 0
    turn = cli("--json", "log").json[0]["turn"]
    for args in (("rewind", "1", "--dry-run"), ("switch", turn, "--dry-run")):
        if args[0] == "switch":  # back to the turn: first take it back
            assert cli("rewind", "1", "--yes").code == 0
        plan = cli(*args)
        assert plan.code == 0, plan.stderr
        lines = plan.stdout.splitlines()
        assert "@@" not in plan.stdout and len(lines) <= 8  # 5 files, the head, the prompt
        assert lines[5].startswith("dry run: nothing was written; the head would be ")
        assert all(line.startswith("  would be restored  src/m") for line in lines[:5])
        assert plan.stderr == "snapstore: add --diff to see what the 5 file(s) would become\n"
        shown = cli(*args, "--diff")
        assert shown.code == 0 and shown.stdout.startswith(plan.stdout)  # the plan first
        assert shown.stdout.count("diff --git") == 5 and shown.stderr == ""
    misplaced = cli("rewind", "1", "--diff")
    assert misplaced.code == 2 and "--diff goes with --dry-run" in misplaced.stderr


@pytest.mark.parametrize("made_by", ["python api", "capture commands"])
def test_a_rewind_prints_the_prompt_of_a_session_with_no_transcript(
    cli, root: Path, made_by: str
) -> None:
    """A session made through the Python API, or through the capture commands a generic
    hook runs (a prompt, no agent and no transcript): a plain ``rewind N --yes`` prints the
    prompt of the first turn taken back, each of its lines, to edit and send again, and
    says nothing of a conversation it never had."""
    from snapstore import Store

    from ..support import Clock

    turns = [("make the file", "1\n"), ("grow it\nand say why", "2\n"), ("x", "3\n")]
    if made_by == "python api":
        with Store.init(root, clock=Clock()) as store:
            for prompt, text in turns:
                store.begin_turn("default", prompt)
                store.pre_write(["notes.txt"], "Write", "default")
                write(root, "notes.txt", text)
                store.post_write(["notes.txt"], "default")
                store.end_turn("default")
    else:
        assert cli("init").code == 0
        for prompt, text in turns:
            _turn(cli, root, prompt, "notes.txt", None, text)
    done = cli("rewind", "2", "--yes")
    assert done.code == 0, done.stderr
    with Store.open(root) as store:
        head = store.rewind_points()[0].turn.id
        [op] = store.operations()
    assert done.stdout == (
        "  restored  notes.txt\n"
        f"rewound: 1 file(s) changed; head is now {head[:8]}\n"
        f"undo it with: snapstore undo {op.id}\n"
        "your prompt from turn 2, to edit and send again:\n"
        "  > grow it\n"
        "  > and say why\n"
    )
    assert read(root, "notes.txt") == b"1\n"
