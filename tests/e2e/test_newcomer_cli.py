"""What a newcomer meets first: an empty store, and the demo's words against its screen."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from snapstore.adapters import AGENT_NAMES

from ..support import write


def test_log_on_a_new_store_says_how_to_start(cli, root: Path) -> None:
    assert cli("init").code == 0
    for args in (["log"], ["log", "--all"]):
        result = cli(*args)
        assert result.code == 0, result.stderr
        assert result.stdout == ""
        assert "No turns yet" in result.stderr and "unknown session" not in result.stderr
        assert "snapstore hook install AGENT" in result.stderr
        assert all(agent in result.stderr for agent in AGENT_NAMES)
    as_json = cli("--json", "log")
    assert as_json.code == 0 and as_json.json == []


def test_rewind_and_undo_on_a_new_store_say_there_is_nothing(cli, root: Path) -> None:
    assert cli("init").code == 0
    listing = cli("rewind")
    assert listing.code == 0 and "Nothing to rewind" in listing.stderr
    assert cli("--json", "rewind").json == []
    for args, words in (
        (["rewind", "1", "--yes"], "nothing to rewind"),
        (["undo"], "nothing to undo"),
        (["show", "1"], "no turn 1 to show"),
        (["diff", "1"], "no turn 1 to diff"),
    ):
        result = cli(*args)
        assert result.code == 4, (args, result.stderr)  # not found: nothing to act on
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and words in lines[0] and "no turns yet" in lines[0], lines
        assert "unknown session" not in lines[0] and "hook install" in lines[0]
        assert cli("--json", *args).json["error"]["code"] == "not_found"


def test_a_named_session_in_a_store_with_turns_is_still_unknown(cli, root: Path) -> None:
    """Only a store with no turns at all is new: a misspelt session is still an error."""
    cli("init")
    cli("begin", "--prompt", "p")
    cli("pre-write", "a.txt")
    write(root, "a.txt", "x\n")
    cli("post-write", "a.txt")
    cli("end")
    result = cli("--session", "defualt", "log")
    assert result.code == 4 and "unknown session 'defualt'" in result.stderr


def test_the_demo_says_what_its_screen_shows(cli, root: Path, tmp_path: Path) -> None:
    result = cli("demo", "--dir", str(tmp_path / "demo"))
    assert result.code == 0, result.stderr
    out = result.stdout
    # The log as printed, before the rewind: number -> prompt.
    table = out[out.index("$ snapstore log\n") : out.index("Rewind to before")]
    rows = {
        int(m.group(1)): m.group(2).strip()
        for m in re.finditer(r"^(\d+)\s+[0-9a-f]{8}\s+just now\s+(.+?)\s+closed", table, re.M)
    }
    assert sorted(rows) == [1, 2, 3]
    assert "newest first: 1 is the latest turn" in out
    # Every 'turn N ("prompt")' the demo says names the row the log shows as N.
    said = re.findall(r'turn (\d+) \("([^"]+)"\)', " ".join(out.split()))
    assert said and all(rows[int(n)] == prompt for n, prompt in said), said
    # The rewind takes back turn N and every newer one: numbers 1..N, no more, no fewer.
    sentence = " ".join(
        out[out.index("Rewind to before") : out.index("$ snapstore rewind")].split()
    )
    target = int(re.search(r"Rewind to before turn (\d+)", sentence).group(1))
    taken = {int(n) for n in re.findall(r"\bturns? (\d+)", sentence)}
    assert taken == set(range(1, target + 1)), sentence
    assert f"$ snapstore rewind {target} --yes" in out
    # What each check names comes from the log too.
    assert f"deleted by turn {next(n for n, p in rows.items() if 'release notes' in p)}" in out
    assert f"written by the older turn {next(n for n, p in rows.items() if 'settings' in p)}" in out
    back = re.search(r"The undo put turns ([\d, and]+) back", " ".join(out.split()))
    assert back and {int(n) for n in re.findall(r"\d+", back.group(1))} == taken


SECONDS = "takes a number of seconds to wait for a busy store, 0 or more"
#: A value each SNAPSTORE_ variable does not take, and the line that must say so.
BAD_VARIABLES = [
    ("SNAPSTORE_LOCK_TIMEOUT", "abc", f"SNAPSTORE_LOCK_TIMEOUT {SECONDS}, not 'abc'"),
    ("SNAPSTORE_LOCK_TIMEOUT", "-1", f"SNAPSTORE_LOCK_TIMEOUT {SECONDS}, not '-1'"),
    ("SNAPSTORE_LOCK_TIMEOUT", "nan", f"SNAPSTORE_LOCK_TIMEOUT {SECONDS}, not 'nan'"),
    ("SNAPSTORE_NOW", "xyz", "SNAPSTORE_NOW takes a Unix time in seconds, 0 or more, not 'xyz'"),
    (
        "SNAPSTORE_STRICT",
        "yes",
        "SNAPSTORE_STRICT takes 1 (hooks block on failure) or 0, not 'yes'",
    ),
]


#: Read with a store's settings file (where its trust record lives): a hook warns, goes on.
BAD_STATE_HOME = ("XDG_STATE_HOME", "rel", "XDG_STATE_HOME takes an absolute path, not 'rel'")


@pytest.mark.parametrize(("name", "value", "line"), [*BAD_VARIABLES, BAD_STATE_HOME])
@pytest.mark.parametrize(
    "args", [["status"], ["pre-write", "a.txt"], ["serve", "--stop"], ["--json", "log"]]
)
def test_a_bad_variable_is_one_line_naming_it(
    cli, root: Path, name: str, value: str, line: str, args: list[str]
) -> None:
    """Click commands, the capture fast path and serve alike: exit 2 and one line naming the
    variable, what it takes and the value given; never a traceback."""
    assert cli("init", "--track-shell").code == 0  # a settings file: its trust record is read
    result = cli(*args, env={name: value})
    assert (result.code, result.stderr) == (2, f"snapstore: {line}\n")
    if "--json" in args:
        assert json.loads(result.stdout)["error"] == {
            "code": "bad_input",
            "message": line,
            "exit_code": 2,
        }
    else:
        assert result.stdout == ""
    assert cli("--json", "log", "--all").json == []  # nothing was recorded


@pytest.mark.parametrize(("name", "value", "line"), BAD_VARIABLES)
def test_a_bad_variable_in_a_hook_is_said_and_blocks_when_strict(
    cli, root: Path, name: str, value: str, line: str
) -> None:
    """The hook's contract holds: exit 0 with the line, 2 in strict mode; a strict setting it
    cannot read blocks too (the user asked for something)."""
    assert cli("init").code == 0
    event = json.dumps({"hook_event_name": "UserPromptSubmit", "session_id": "s", "cwd": str(root)})
    runs = [({name: value}, 2 if name == "SNAPSTORE_STRICT" else 0)]
    if name != "SNAPSTORE_STRICT":
        runs.append(({name: value, "SNAPSTORE_STRICT": "1"}, 2))
    for env, code in runs:
        result = cli("hook", "claude-code", input=event + "\n", env=env)
        assert (result.code, result.stderr) == (code, f"snapstore: {line}\n")
    assert line in (root / ".snapstore" / "hook.log").read_text()


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["gc", "--keep-days", "-1"], "--keep-days takes a number of days, 0 or more, not '-1'"),
        (["gc", "--keep-days", "nan"], "--keep-days takes a number of days, 0 or more, not 'nan'"),
        (
            ["gc", "--keep-turns", "1.5"],
            "--keep-turns takes a number of turns, 0 or more, not '1.5'",
        ),
        (
            ["gc", "--max-size", "-5"],
            "--max-size takes a size such as 500MiB, 2GiB or 4096 (bytes), not '-5'",
        ),
        (
            ["remote", "gc", "--grace-hours", "-2"],
            "--grace-hours takes a number of hours, 0 or more, not '-2'",
        ),
        (
            ["watch", "--debounce", "-1"],
            "--debounce takes a number of seconds, 0 or more, not '-1'",
        ),
        (["serve", "--port", "0"], "--port takes a TCP port, from 1 to 65535, not '0'"),
        (
            ["--lock-timeout", "-1", "pre-write", "a.txt"],
            f"--lock-timeout {SECONDS}, not '-1'",
        ),
        (
            ["scan", "--max-file-size", "-1"],
            "--max-file-size takes a size such as 500MiB, 2GiB or 4096 (bytes), not '-1'",
        ),
    ],
)
def test_a_bad_number_names_the_option_and_what_it_takes(
    cli, root: Path, args: list[str], line: str
) -> None:
    """The value as typed (not '-1.0'), the option, and what it counts; exit 2 (usage)."""
    assert cli("init", "--track-shell").code == 0
    result = cli(*args)
    assert result.code == 2 and result.stdout == ""
    assert result.stderr.startswith(f"snapstore: {line}") and result.stderr.count("\n") == 1


def test_a_bad_number_in_the_settings_file_names_the_key(cli, root: Path) -> None:
    assert cli("init").code == 0
    config = root / ".snapstore" / "config"
    config.write_text("[gc]\nkeep_days = -3\n")
    assert cli("config", "trust").code == 0  # a hand edit is used once the user says so
    result = cli("gc")
    assert (result.code, result.stderr) == (
        2,
        f"snapstore: {config}: [gc] keep_days takes a number of days, 0 or more, not '-3'\n",
    )


@pytest.mark.process  # the package is hidden from the interpreter as it starts
def test_remote_add_without_the_s3_client_says_how_to_install_it(
    cli, root: Path, tmp_path: Path
) -> None:
    """An install without the `remote` extra: no obstore to import (hidden here by a
    sitecustomize that refuses the import, as a missing package does)."""
    shim = tmp_path / "no-obstore"
    shim.mkdir()
    (shim / "sitecustomize.py").write_text(
        "import sys\n"
        "class _Missing:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'obstore':\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.meta_path.insert(0, _Missing())\n"
    )
    assert cli("init").code == 0
    hidden = {"PYTHONPATH": str(shim)}
    line = (
        "s3:// remotes need the S3 client (obstore), which is not installed "
        "(install it with `pip install 'snapstore[remote]'`)"
    )
    result = cli("remote", "add", "origin", "s3://bucket/prefix", env=hidden)
    assert (result.code, result.stdout, result.stderr) == (2, "", f"snapstore: {line}\n")
    as_json = cli("--json", "remote", "add", "origin", "s3://bucket", env=hidden)
    assert as_json.json["error"] == {"code": "client_missing", "message": line, "exit_code": 2}
    assert cli("remote", "list").stdout == ""  # nothing was added
    folder = tmp_path / "remote"  # a folder remote needs no client
    folder.mkdir()
    assert cli("remote", "add", "here", f"file://{folder}", env=hidden).code == 0


def test_a_mistyped_command_gets_did_you_mean(cli, root: Path) -> None:
    done = cli("lgo")
    assert done.code == 2
    assert done.stderr == (
        "snapstore: No such command 'lgo'. Did you mean 'log'? (see `snapstore --help`)\n"
    )


def test_the_help_says_what_the_commands_do(cli, root: Path) -> None:
    """The words of --help, against what the commands do: hook install's agents never cut
    inside a name at 80 columns ("gemini-\\ncli"), --session's default for reads, rewind
    without TURN on a terminal, and whose a change a scan sees is
    (docs/scan-and-watch.md, "Whose change it is")."""
    install = cli("hook", "install", "--help", env={"COLUMNS": "80"}).stdout
    words = set(re.split(r"[\s,.{}|\[\]]+", install))
    assert set(AGENT_NAMES) <= words, install
    assert max(len(line) for line in install.splitlines()) <= 80
    session = " ".join(cli("log", "--help").stdout.split())
    assert "a command that reads or moves takes the most recently active one" in session
    rewind = " ".join(cli("rewind", "--help").stdout.split())
    assert (
        "Without TURN: on a terminal, a picker to choose one; elsewhere, the numbered list"
        in rewind
    )
    scan = " ".join(cli("scan", "--help").stdout.split())
    assert "A change seen inside one of the agent's shell calls" in scan
    assert "while a turn is open belong to it" not in scan
