"""The docs as tests: every shell and Python example in README.md and docs/*.md, run.

A fenced block is run by its language: ``console`` blocks are ``$ command`` lines, each
followed by the output it shows, which must be what the command prints (on a terminal 80
columns wide, as a reader's); ``sh`` blocks run as one script; ``python`` blocks run with
this environment's interpreter. Output a block does not show is not checked; a ``sh`` or
``python`` block must exit 0.

Each block runs in a fresh workspace: ``~/project`` in a home of its own (``HOME`` and the
state folder with it), made from a template (:data:`KINDS`) once per test session. An HTML
comment on the lines just before a block says how, in words the reader may see:

- ``<!-- doc: no-run (why) -->``: the block is not run (a server that runs until stopped,
  the test suite itself, a real agent); the reason is required;
- ``<!-- doc: workspace KIND -->``: start from that template instead of ``turns``
  (``repo``: this checkout itself, for the contributor's commands, which leave it as it is);
- ``<!-- doc: continue -->``: go on in the workspace (and for Python, the namespace) of the
  block before it in the same file;
- ``<!-- doc: given CODE -->``: run CODE first, unseen (Python for a ``python`` block, else
  shell): what a snippet assumes, such as ``conversation_id = "chat-1"``.

Output is compared after the parts that differ from run to run are made the same on both
sides: the home folder (``/home/me``), where snapstore is installed
(``/home/me/.local/bin/snapstore``), seconds (``0.41 s``), the store file's size and its
blobs' compressed size. Turn and operation ids are random per store: an id the doc shows (8
or 12 hex digits) is bound to the id the command printed in its place, and a later command
that names it gets that one.
A line ``...`` stands for any lines, and ``...`` within a line for any text.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from .runner import FIXED_NOW, snapstore_bin
from .terminal import on_terminal

REPO = Path(__file__).resolve().parents[2]
#: The files whose examples run; the integrations' pages too (a block that needs a real
#: agent says so).
PAGES = [
    "README.md",
    *sorted(f"docs/{p.name}" for p in (REPO / "docs").glob("*.md")),
    *sorted(f"docs/integrations/{p.name}" for p in (REPO / "docs" / "integrations").glob("*.md")),
]
RUNNABLE = {"console", "sh", "bash", "shell", "python"}
#: The clock of every command a doc runs: 2026-01-01T00:10:00Z.
NOW = FIXED_NOW + 600
_MARKER = re.compile(r"^<!-- doc: (no-run|workspace|continue|given)(?:[ :]\s*(.*?))?\s*-->$")


@dataclass
class Block:
    """One fenced block: where it is, its language and lines, and what its markers say."""

    page: str
    line: int  # of the opening fence, 1-based
    lang: str
    body: list[str]
    no_run: str | None = None
    workspace: str = "turns"
    continues: bool = False
    given: list[str] = field(default_factory=list)

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def blocks(page: str) -> list[Block]:
    """The page's shell and Python blocks, with their markers."""
    lines = (REPO / page).read_text().split("\n")
    found = []
    i = 0
    while i < len(lines):
        opening = re.match(r"^```(\S*)\s*$", lines[i])
        if not opening:
            i += 1
            continue
        end = i + 1
        while not lines[end].startswith("```"):
            end += 1
        if opening.group(1) in RUNNABLE:
            block = Block(page, i + 1, opening.group(1), lines[i + 1 : end])
            j = i - 1
            while j >= 0 and (marker := _MARKER.match(lines[j].strip())):
                key, value = marker.group(1), marker.group(2) or ""
                if key == "no-run":
                    block.no_run = value.strip("()") or "?"
                elif key == "workspace":
                    block.workspace = value
                elif key == "continue":
                    block.continues = True
                else:
                    block.given.insert(0, value)
                j -= 1
            found.append(block)
        i = end + 1
    return found


def chains(page: str) -> list[list[Block]]:
    """The page's runnable blocks, each with the blocks that continue it."""
    out: list[list[Block]] = []
    for block in blocks(page):
        if block.no_run is not None:
            continue
        if block.continues and out:
            out[-1].append(block)
        else:
            out.append([block])
    return out


# -- the workspaces ------------------------------------------------------------------------

APP = """def greet(name):
    return "hello " + name


def main():
    print(greet("world"))
"""
#: Claude Code's session in the ``claude`` workspace: a real-length id, as Claude names them.
CLAUDE_SESSION = "4b9e2f1a-7c3d-4e5f-8a9b-0c1d2e3f4a5b"


#: The home the docs show, whose length the real one has, so that a line a terminal wraps
#: wraps at the same place.
SHOWN_HOME = "/home/me"


class Home:
    """A home folder for the docs' commands, the project in it (``~/project``), snapstore on
    its PATH as ``~/.local/bin/snapstore``, and the templates each workspace kind starts from.

    The home's path is as long as ``/home/me`` (``/tmp/`` and three characters), so that what
    a terminal 80 columns wide wraps is what the doc shows."""

    def __init__(self, templates: Path):
        self.templates = templates
        while True:
            name = "/tmp/d" + os.urandom(2).hex()[:2]
            try:
                os.mkdir(name, 0o700)
                break
            except FileExistsError:
                continue
        assert len(name) == len(SHOWN_HOME)
        self.home = Path(name)
        self.project = self.home / "project"
        self.bin = str(self.home / ".local" / "bin")

    def close(self) -> None:
        shutil.rmtree(self.home, ignore_errors=True)

    def env(self, now: float = NOW) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("SNAPSTORE_", "XDG_", "CLAUDE_", "CODEX_", "COPILOT_"))
            and k not in ("COLUMNS", "LINES", "VIRTUAL_ENV", "PYTHONPATH")
        }
        env.update(
            HOME=str(self.home),
            PATH=os.pathsep.join([self.bin, os.path.dirname(sys.executable), env.get("PATH", "")]),
            SNAPSTORE_NOW=str(now),
            SNAPSTORE_DAEMON="off",
            NO_COLOR="1",
            TERM="dumb",
            GIT_AUTHOR_NAME="me",
            GIT_AUTHOR_EMAIL="me@example.com",
            GIT_COMMITTER_NAME="me",
            GIT_COMMITTER_EMAIL="me@example.com",
        )
        return env

    def fresh(self, kind: str) -> None:
        """``~`` as the template ``kind`` left it (made the first time), at this same path:
        the store and its trust records name it."""
        if kind not in KINDS:
            raise AssertionError(f"no workspace kind {kind!r} (one of {', '.join(KINDS)})")
        template = self.templates / kind
        if not template.exists():
            self._clear()
            self.project.mkdir(parents=True)
            os.makedirs(self.bin)
            os.symlink(snapstore_bin()[0], os.path.join(self.bin, "snapstore"))
            KINDS[kind](self)
            shutil.copytree(self.home, template, symlinks=True)
        self._clear()
        shutil.copytree(template, self.home, symlinks=True, dirs_exist_ok=True)

    def _clear(self) -> None:
        for entry in self.home.iterdir():
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()

    def run(self, *args: str, now: float = NOW, stdin: bytes | None = None) -> None:
        """A snapstore command a template is made with; it must succeed."""
        done = subprocess.run(
            [os.path.join(self.bin, "snapstore"), *args],
            cwd=self.project,
            env=self.env(now),
            input=stdin,
            capture_output=True,
            timeout=120,
        )
        assert done.returncode == 0, (args, done.stdout, done.stderr)

    def turn(self, prompt: str, path: str, content: str | None, now: float) -> None:
        """One turn through the capture commands, as an agent's wrapper makes it."""
        self.run("begin", "--prompt", prompt, now=now)
        self.run("pre-write", "--tool", "Write", path, now=now)
        target = self.project / path
        if content is None:
            target.unlink()
        else:
            target.write_text(content)
        self.run("post-write", path, now=now)
        self.run("end", now=now)


def _project(home: Home) -> None:
    """A git repository with two files, and no store."""
    root = home.project
    (root / "app.py").write_text(APP)
    (root / "NOTES.md").write_text("Release notes\n\n- 0.1: first version\n")
    for args in (["init", "-q", "-b", "main"], ["add", "."], ["commit", "-qm", "first"]):
        subprocess.run(["git", *args], cwd=root, env=home.env(), check=True)


def _turns(home: Home) -> None:
    """The project with a store and three turns of the session ``default``, 9, 5 and 2
    minutes before the docs' clock."""
    _project(home)
    home.run("init", now=NOW - 660)
    home.turn("Add a settings module", "settings.py", 'GREETING = "hello"\n', NOW - 540)
    loud = APP.replace('"hello " + name', '"HELLO " + name.upper() + "!"')
    home.turn("Make the greeting louder", "app.py", loud, NOW - 300)
    home.turn("Delete the old release notes", "NOTES.md", None, NOW - 120)


def _claude(home: Home) -> None:
    """The project recorded by Claude Code's hooks: a session of three turns writing
    notes.txt, with the transcript Claude Code keeps, as its hooks and its CLI leave them."""
    import json

    from .transcripts import PROMPTS, claude_turn

    _project(home)
    home.run("init", now=NOW - 660)
    sessions = home.home / ".claude" / "projects" / "-home-me-project"
    sessions.mkdir(parents=True)
    transcript = sessions / f"{CLAUDE_SESSION}.jsonl"
    notes = home.project / "notes.txt"
    prompts = ["Write notes.txt", "Change beta to gamma in notes.txt", "Append a line"]
    texts = ["alpha\nbeta\n", "alpha\ngamma\n", "alpha\ngamma\ndelta\n"]
    for i, (prompt, text) in enumerate(zip(prompts, texts, strict=True)):
        now = NOW - 540 + 180 * i
        common = {"session_id": CLAUDE_SESSION, "transcript_path": str(transcript)}
        common["cwd"] = str(home.project)
        events = [
            {"hook_event_name": "UserPromptSubmit", "prompt": prompt, "prompt_id": f"p{i}"},
            {"hook_event_name": "PreToolUse", "tool_name": "Write", "tool_use_id": f"t{i}"},
            {"hook_event_name": "PostToolUse", "tool_name": "Write", "tool_use_id": f"t{i}"},
            {"hook_event_name": "Stop", "stop_hook_active": False},
        ]
        for event in events:
            if event["hook_event_name"].endswith("ToolUse"):
                event["tool_input"] = {"file_path": str(notes), "content": text}
            home.run("hook", "claude-code", now=now, stdin=json.dumps({**common, **event}).encode())
            if event["hook_event_name"] == "UserPromptSubmit":
                claude_turn(transcript, i)
                _rename_prompt(transcript, PROMPTS[i], prompt)
            if event["hook_event_name"] == "PreToolUse":
                notes.write_text(text)


def _rename_prompt(transcript: Path, old: str, new: str) -> None:
    """The test transcripts' prompts, as this session's are worded."""
    transcript.write_text(transcript.read_text().replace(f'"{old}"', f'"{new}"'))


#: Each workspace a block may start from.
KINDS = {"project": _project, "turns": _turns, "claude": _claude}


# -- running a block -----------------------------------------------------------------------


def normal(text: str, home: Home) -> str:
    """What differs from run to run, made the same: the home folder, snapstore's own path,
    seconds, the store file's size and what its blobs take compressed (the bytes of a
    compressed frame move by a few with the tree's paths and times), trailing spaces."""
    text = text.replace(str(home.home), SHOWN_HOME)
    text = re.sub(r"\b\d+\.\d+ s\b", "0.00 s", text)
    text = re.sub(r"[\d.]+ (?:B|KiB|MiB|GiB) on disk", "N on disk", text)
    text = re.sub(r"[\d.]+ (?:B|KiB|MiB|GiB) in (\d+) blob", r"N in \1 blob", text)
    return "\n".join(line.rstrip() for line in text.split("\n")).strip("\n")


#: A turn's or an operation's id as a doc shows it: 8 or 12 hex digits, one a digit at least.
_ID = re.compile(
    r"(?<![0-9A-Za-z])(?=[a-f]*[0-9])[0-9a-f]{12}(?![0-9A-Za-z])|"
    r"(?<![0-9A-Za-z])(?=[a-f]*[0-9])[0-9a-f]{8}(?![0-9A-Za-z])"
)


class Ids:
    """The ids a doc shows, each bound to the one the command printed in its place."""

    def __init__(self) -> None:
        self.bound: dict[str, str] = {}

    def get(self, shown: str) -> str | None:
        """The real id (or its start) that ``shown`` stands for, if it is bound."""
        for doc, real in self.bound.items():
            if doc.startswith(shown):  # the same id, or a short id of a long one bound
                return real[: len(shown)]
        return None

    def bind(self, shown: str, real: str) -> bool:
        """Bind ``shown`` to ``real``; False when it, or the short id it starts with, stands
        for another already."""
        known = self.get(shown)
        if known is not None:
            return known == real
        if any(shown.startswith(doc) and not real.startswith(r) for doc, r in self.bound.items()):
            return False
        self.bound[shown] = real
        return True

    def command(self, text: str) -> str:
        """A doc's command with each id it names as the store knows it."""
        return _ID.sub(lambda m: self.get(m.group()) or m.group(), text)


def _line_pattern(expected: str) -> tuple[re.Pattern[str], list[str]]:
    """A doc's output line as a pattern: its ids as groups, ``...`` as any text."""
    parts, ids, at = [], [], 0
    for m in re.finditer(rf"{_ID.pattern}|\.\.\.|…", expected):
        parts.append(re.escape(expected[at : m.start()]))
        if m.group() in ("...", "…"):
            parts.append(".*?")
        else:
            parts.append(f"([0-9a-f]{{{len(m.group())}}})")
            ids.append(m.group())
        at = m.end()
    parts.append(re.escape(expected[at:]))
    return re.compile("".join(parts)), ids


def matches(expected: list[str], actual: list[str], ids: Ids) -> bool:
    """Whether ``actual`` is what ``expected`` shows (``...`` lines: any lines), binding ids."""
    if not expected:
        return not actual
    if expected[0] == "...":
        return any(matches(expected[1:], actual[k:], ids) for k in range(len(actual) + 1))
    if not actual:
        return False
    pattern, shown = _line_pattern(expected[0])
    found = pattern.fullmatch(actual[0])
    if found is None:
        return False
    saved = dict(ids.bound)
    bound = all(ids.bind(doc, real) for doc, real in zip(shown, found.groups(), strict=True))
    if bound and matches(expected[1:], actual[1:], ids):
        return True
    ids.bound = saved
    return False


def commands(block: Block) -> Iterator[tuple[str, list[str]]]:
    """A console block's commands, each with the output lines it shows."""
    command: str | None = None
    shown: list[str] = []
    for line in block.body:
        if line.startswith("$ "):
            if command is not None:
                yield command, shown
            command, shown = line[2:], []
        elif command is not None:
            shown.append(line.rstrip())
    if command is not None:
        yield command, shown


def run_chain(chain: list[Block], home: Home, shown: dict[str, list[str]] | None = None) -> None:
    """Run one block and those that continue it, in a fresh workspace; raise
    AssertionError saying which block and command went wrong. With ``shown``, nothing is
    compared: each console block's lines as they ran go there, by the block's place, for
    :func:`main` to write into the page."""
    where = REPO if chain[0].workspace == "repo" else home.project
    if where != REPO:
        home.fresh(chain[0].workspace)
    ids = Ids()
    python: list[tuple[Block, str]] = []  # one namespace for consecutive Python blocks
    for block in chain:
        if block.lang == "python":
            python.append((block, "\n".join([*block.given, *block.body])))
            continue
        if python:
            _python(python, home, where)
            python = []
        for given in block.given:
            _shell(block, given, home, where)
        if block.lang != "console":
            _shell(block, "\n".join(block.body), home, where)
            continue
        ran: list[str] = []
        for command, said in commands(block):
            real = ids.command(command)
            _, text = on_terminal([real], where, home.env(), shell=True)
            actual = normal(text, home).split("\n") if text.strip() else []
            ran += [f"$ {real}", *actual]
            expected = [line for line in normal("\n".join(said), home).split("\n")]
            expected = expected if any(expected) else []
            same = matches(expected, actual, ids)  # binds the ids the doc shows, either way
            if shown is not None:
                shown[block.where] = ran
                continue
            if not same:
                raise AssertionError(
                    f"{block.where}: `$ {command}` printed\n"
                    + "\n".join(actual)
                    + "\n\n-- where the doc shows --\n"
                    + "\n".join(expected)
                )
    if python:
        _python(python, home, where)


def _shell(block: Block, script: str, home: Home, cwd: Path) -> None:
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=cwd,
        env=home.env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, (
        f"{block.where}: exit {done.returncode}\n{done.stdout}{done.stderr}"
    )


#: Runs Python blocks one after the other in one namespace, each compiled under its place in
#: the docs, so that a traceback names the block ("docs/python-api.md:45", line 3).
_DRIVER = """
import json, sys
namespace = {"__name__": "__main__"}
for where, text in json.load(sys.stdin):
    exec(compile(text, where, "exec"), namespace)
"""


def _python(blocks: list[tuple[Block, str]], home: Home, cwd: Path) -> None:
    """Consecutive Python blocks, in one interpreter: each goes on from the ones before."""
    import json

    done = subprocess.run(
        [sys.executable, "-c", _DRIVER],
        cwd=cwd,
        env=home.env(),
        input=json.dumps([(block.where, text) for block, text in blocks]),
        capture_output=True,
        text=True,
        timeout=300,
    )
    where = ", ".join(block.where for block, _ in blocks)
    assert done.returncode == 0, f"{where}: exit {done.returncode}\n{done.stdout}{done.stderr}"


def main(argv: list[str]) -> None:
    """``python -m tests.support.docs PAGE...``: run each page's console blocks and write
    what they print into the page, under their commands (then read the diff, and keep what
    is right)."""
    import tempfile

    with tempfile.TemporaryDirectory() as templates:
        home = Home(Path(templates))
        try:
            for page in argv:
                shown: dict[str, list[str]] = {}
                for chain in chains(page):
                    try:
                        run_chain(chain, home, shown)
                    except AssertionError as exc:
                        print(exc, file=sys.stderr)
                lines = (REPO / page).read_text().split("\n")
                for block in reversed(blocks(page)):
                    if block.where in shown:
                        lines[block.line : block.line + len(block.body)] = shown[block.where]
                (REPO / page).write_text("\n".join(lines))
        finally:
            home.close()


if __name__ == "__main__":
    main(sys.argv[1:])
