"""What a newcomer meets first: an empty store, and the demo's words against its screen."""

from __future__ import annotations

import re
from pathlib import Path

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
