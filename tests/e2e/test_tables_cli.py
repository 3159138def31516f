"""Tables and reports fit an 80-column terminal with real session names.

Claude Code names a session by a uuid: ``claude-code/<uuid>`` is 48 characters, and the
short names the docs once used (``claude-code/7c1e``) hid that every table wrapped. These
golden tests run ``ops``, ``sessions``, ``status``, ``show`` and ``log`` on a real terminal
80 columns wide (a pseudo-terminal), and the same commands into a pipe, where nothing is
ever shortened. Turn and operation ids are random per store: each is replaced by a fixed
one of the same length (``aaaaaaaaaaaa``, ``bbbbbbbbbbbb``...), so widths are kept.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from snapstore import Store

from ..support import Clock, agent_turn, hermetic_env, snapstore
from ..support.terminal import on_terminal

A = "claude-code/4b9e2f1a-7c3d-4e5f-8a9b-0c1d2e3f4a5b"
B = "claude-code/7c1e9a2b-0d4f-4a61-9b2e-5f3c8d7e1a90"


def build(root: Path) -> tuple[dict[str, str], str]:
    """Two Claude Code sessions, three turns, a rewind, its undo and another rewind; each id
    and the fixed one that stands for it, and the clock to read them at."""
    clock = Clock()
    with Store.init(root, clock=clock) as store:
        agent_turn(store, "Add a settings module", {"settings.py": "DEBUG = False\n"}, A)
        clock.tick(240)
        agent_turn(store, "Make the greeting louder", {"app.py": "print('HELLO')\n"}, A)
        clock.tick(180)
        agent_turn(store, "Delete the old release notes", {"NOTES.md": "old\n"}, B)
        clock.tick(60)
        store.rewind(1, A)
        clock.tick(60)
        store.undo(session=A)
        clock.tick(30)
        store.rewind(1, B)
        clock.tick(120)
        with store.repo.read() as v:
            ids = [t.id for t in sorted(v.turns(), key=lambda t: t.seq)]
    fixed = {turn_id: chr(ord("a") + i) * len(turn_id) for i, turn_id in enumerate(ids)}
    return fixed, str(clock.now)


def normal(text: str, fixed: dict[str, str], root: Path) -> str:
    """``text`` with each id (whole, or its first 8 characters) as the fixed one, and the
    store file's size (LMDB's pages, which vary) as 124.0 KiB."""
    for turn_id, same in fixed.items():
        text = text.replace(turn_id, same).replace(turn_id[:8], same[:8])
    text = re.sub(r"\d+\.\d KiB on disk", "124.0 KiB on disk", text)
    return text.replace(str(root), "/home/me/project")


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str], str]:
    root = tmp_path_factory.mktemp("tables") / "project"
    root.mkdir()
    fixed, now = build(root)
    return root, fixed, now


AT_80 = {
    "ops": """\
op        when       action  target    files  left  undone by  session
ffffffff  2 min ago  rewind  cccccccc  1      0     -          claude-code/7c1e9
eeeeeeee  2 min ago  undo    dddddddd  1      0     -          claude-code/4b9e2
dddddddd  4 min ago  rewind  bbbbbbbb  1      0     eeeeeeee   claude-code/4b9e2
""",
    "sessions": """\
session               turns         last active  head        open turn  running
claude-code/7c1e9a2b  0 (1 in all)  2 min ago    -           -          no
claude-code/4b9e2f1a  2             2 min ago    1 bbbbbbbb  -          no
""",
    f"status -s {A}": f"""\
workspace  /home/me/project
store      /home/me/project/.snapstore
size       124.0 KiB on disk; 60 B in 3 blob(s), compressed and deduplicated
captured   67 B of file versions, by 3 turn(s) in 2 session(s)
session    {A}
head       bbbbbbbbbbbb, open turn -
""",
    "show 1 -s claude-code/4b9e2": f"""\
turn 1 bbbbbbbbbbbb  [closed]  2026-01-01T00:04:00+00:00
session {A}
Make the greeting louder
1 file +1 -0
added  app.py  +1 -0  Write
""",
}


@pytest.mark.parametrize("command", list(AT_80))
def test_a_table_fits_80_columns_with_real_session_names(made, command: str) -> None:
    root, fixed, now = made
    code, text = on_terminal(command.split(), root, hermetic_env(SNAPSTORE_NOW=now), columns=80)
    assert code == 0, text
    assert normal(text, fixed, root) == AT_80[command]
    assert max(len(line) for line in text.splitlines()) <= 80


def test_a_shortened_session_name_names_its_session(made) -> None:
    """What a table shows at 80 columns (``claude-code/4b9e2``) is a prefix ``--session``
    takes, for every command that reads or moves; a prefix of two sessions is refused."""
    root, _, now = made
    env = hermetic_env(SNAPSTORE_NOW=now)
    log = snapstore(root, "--json", "log", "--session", "claude-code/4b9e2", env=env)
    assert log.returncode == 0 and {p["session"] for p in json.loads(log.stdout)} == {A}
    dry = snapstore(root, "rewind", "1", "--dry-run", "-s", "claude-code/4b9e2", env=env)
    assert dry.returncode == 0, dry.stderr
    both = snapstore(root, "log", "--session", "claude-code/", env=env)
    assert both.returncode == 2
    assert both.stderr == f"snapstore: session prefix 'claude-code/' is ambiguous: {A}, {B}\n"


def test_off_a_terminal_names_are_never_shortened(made) -> None:
    """Into a pipe or a file, each row is one line with the whole name, for grep."""
    root, fixed, now = made
    env = hermetic_env(SNAPSTORE_NOW=now)
    ops = snapstore(root, "ops", env=env)
    assert normal(ops.stdout, fixed, root).splitlines()[1] == (
        f"ffffffff  2 min ago  rewind  cccccccc  1      0     -          {B}"
    )
    sessions = snapstore(root, "sessions", env=env)
    assert [line.split()[0] for line in sessions.stdout.splitlines()] == ["session", B, A]
