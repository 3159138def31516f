"""The in-process runner (tests/support/runner.py) is what the tests see of a real process.

Most end-to-end tests run `snapstore` in the test's own process. That is only worth having if
it answers as the process does: the same exit code, stdout and stderr, byte for byte, for the
fast path, Click's commands, the hook path, usage and store errors, stdin, and argv that is
not UTF-8. One session runs both ways, in two workspaces, and every answer is compared.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from ..support import hermetic_env, run_snapstore

HOOK = {
    "session_id": "s1",
    "transcript_path": "/dev/null",
    "hook_event_name": "UserPromptSubmit",
    "prompt": "add a file",
}
#: (argv, stdin, what the test does to the workspace first)
STEPS: list[tuple[list[str | bytes], bytes | None, str | None]] = [
    (["--version"], None, None),
    (["log"], None, None),  # no store yet: exit 4
    (["init"], None, None),
    (["begin", "--prompt-file", "-"], b"write a.txt\n", None),
    (["pre-write", "a.txt"], None, None),
    (["post-write", "a.txt"], None, "a.txt"),
    (["end"], None, None),
    (["hook", "claude-code"], json.dumps(HOOK).encode(), None),
    (["begin", "--prompt", b"caf\xe9"], None, None),  # argv that is not UTF-8
    (["end"], None, None),
    (["log", "--all"], None, None),
    (["--json", "log"], None, None),
    (["show", "1"], None, None),
    (["diff", "1"], None, None),
    (["rewind", "9", "--yes"], None, None),
    (["--json", "rewind", "9", "--yes"], None, None),
    (["--json", "no-such-command"], None, None),
    (["rewind", "1", "--yes"], None, None),
    (["undo"], None, None),
    (["status"], None, None),
    (["fsck"], None, None),
    (["--json", "hook", "install", "claude-code", "--scope", "local"], None, None),
    (["--json", "hook", "install", "codex", "--scope", "user"], None, None),
]


def session(base: Path, process: bool) -> list[tuple[int, str, str]]:
    root = base / ("process" if process else "in-process") / "ws"
    root.mkdir(parents=True)
    answers = []
    for argv, stdin, touch in STEPS:
        if touch:
            (root / touch).write_text("written\n")
        done: subprocess.CompletedProcess[bytes] = run_snapstore(
            argv,
            cwd=root,
            env=hermetic_env(HOME=str(root.parent / "home")),
            input=stdin,
            text=False,
            process=process,
        )
        answers.append(
            (done.returncode, same(done.stdout, root), same(done.stderr, root)),
        )
    return answers


def same(data: bytes, root: Path) -> str:
    """The output with what differs between two runs named: their folders, turn ids, and
    the seconds a scan took."""
    text = data.decode("utf-8", "surrogateescape").replace(str(root.parent), "BASE")
    text = re.sub(r"\bin \d+\.\d\d s\b", "in SECONDS", text)
    return re.sub(r"\b[0-9a-f]{12}\b", "TURN", re.sub(r"\b[0-9a-f]{8}\b", "TURN", text))


def test_in_process_answers_as_the_process_does(tmp_path: Path) -> None:
    process, in_process = session(tmp_path, True), session(tmp_path, False)
    for (argv, _, _), want, got in zip(STEPS, process, in_process, strict=True):
        assert got == want, argv
    codes = [code for code, _, _ in process]
    assert codes == [0, 4, *[0] * 12, 4, 4, 2, *[0] * 6]  # the session did what it says
    assert "Traceback" not in "".join(out + err for _, out, err in process)
