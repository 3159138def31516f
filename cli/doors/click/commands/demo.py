"""`snapstore demo`: a scripted agent session in a temp workspace, then a rewind.

Every step runs the real `snapstore` command in a child process and shows its
output, so what you see is exactly what an agent integration would do. The
demo checks its own outcome and exits non-zero if the rewind or the undo did
not give the expected bytes.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

import click

from ....output.rich import console

APP_V1 = """\
def greet(name):
    return "hello " + name


def main():
    print(greet("world"))


if __name__ == "__main__":
    main()
"""

APP_AGENT = APP_V1.replace('return "hello " + name', 'return "HELLO " + name.upper() + "!"')
APP_USER_LINE = "# TODO(me): read the name from the command line\n"
NOTES = "Release notes\n\n- 0.1: first version\n"
GREETING = 'GREETING = "hello"\n'


class Demo:
    """Runs the scripted session and narrates it."""

    def __init__(self, root: Path):
        self.root = root
        self.out = console()
        self.env = {**os.environ, "SNAPSTORE_SESSION": "demo", "NO_COLOR": "1"}
        self.env.pop("SNAPSTORE_DIR", None)

    def say(self, text: str) -> None:
        self.out.print(text, style="bold")

    def run(self, *args: str, ok: tuple[int, ...] = (0,)) -> subprocess.CompletedProcess[str]:
        self.out.print(f"$ snapstore {shlex.join(args)}", style="cyan")
        proc = subprocess.run(
            [sys.executable, "-m", "snapstore_cli", *args],
            cwd=self.root,
            env=self.env,
            text=True,
            capture_output=True,
        )
        for stream in (proc.stdout, proc.stderr):
            if stream.strip():
                self.out.print(stream.rstrip(), markup=False, highlight=False)
        if proc.returncode not in ok:
            raise click.ClickException(
                f"demo step failed: snapstore {shlex.join(args)} exited {proc.returncode}"
            )
        return proc

    def agent_turn(self, prompt: str, path: str, content: str | None) -> None:
        """One agent turn writing (or deleting) one file through the hooks."""
        self.out.print()
        self.say(f'Agent turn: "{prompt}"')
        self.run("begin", "--prompt", prompt)
        self.run("pre-write", "--tool", "Delete" if content is None else "Write", path)
        target = self.root / path
        if content is None:
            target.unlink()
            self.out.print(f"  (the agent deletes {path})", style="dim")
        else:
            target.write_text(content)
            self.out.print(f"  (the agent writes {path})", style="dim")
        self.run("post-write", path)
        self.run("end")

    def numbers(self) -> dict[str, int]:
        """Each rewind point's number as `log` shows it, by prompt, so that what the demo says
        matches the screen."""
        proc = subprocess.run(
            [sys.executable, "-m", "snapstore_cli", "--json", "log"],
            cwd=self.root,
            env=self.env,
            text=True,
            capture_output=True,
        )
        if proc.returncode != 0:
            raise click.ClickException(f"demo step failed: snapstore --json log: {proc.stderr}")
        return {point["prompt"]: point["n"] for point in json.loads(proc.stdout)}

    @staticmethod
    def listed(words: list[str]) -> str:
        return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]

    def show(self, path: str) -> None:
        target = self.root / path
        if not target.exists():
            self.out.print(f"{path}: (does not exist)", style="dim")
            return
        from rich.syntax import Syntax

        self.out.print(f"{path}:", style="dim")
        self.out.print(Syntax(target.read_text(), "python", line_numbers=True, theme="ansi_dark"))

    def expect(self, path: str, content: str | None, what: str) -> None:
        target = self.root / path
        actual = target.read_text() if target.exists() else None
        if actual != content:
            raise click.ClickException(f"demo check failed: {what} ({path} is {actual!r})")
        self.out.print(f"  ok: {what}", style="green")

    def play(self) -> None:
        (self.root / "app.py").write_text(APP_V1)
        (self.root / "NOTES.md").write_text(NOTES)
        self.say(f"A project in {self.root}: app.py and NOTES.md")
        self.run("init")

        self.agent_turn("Add a settings module", "settings.py", GREETING)
        self.agent_turn("Make the greeting louder", "app.py", APP_AGENT)
        self.agent_turn("Delete the old release notes", "NOTES.md", None)

        self.out.print()
        self.say("You edit app.py by hand, far from the agent's change:")
        with open(self.root / "app.py", "a") as handle:
            handle.write(APP_USER_LINE)
        self.show("app.py")

        self.out.print()
        self.say("The rewind points, newest first: 1 is the latest turn.")
        self.run("log")
        n = self.numbers()
        louder, notes, settings = (
            n["Make the greeting louder"],
            n["Delete the old release notes"],
            n["Add a settings module"],
        )
        prompts = {number: prompt for prompt, number in n.items()}
        newer = sorted(number for number in n.values() if number < louder)
        self.out.print()
        self.say(
            f'Rewind to before turn {louder} ("Make the greeting louder"): it takes back '
            f"turn {louder} and the newer turn{'s' if len(newer) > 1 else ''} "
            + self.listed([f'{k} ("{prompts[k]}")' for k in newer])
            + ":"
        )
        self.run("rewind", str(louder), "--yes")
        self.expect(
            "NOTES.md",
            NOTES,
            f"NOTES.md, deleted by turn {notes}, restored byte for byte (exact restore)",
        )
        self.expect(
            "app.py",
            APP_V1 + APP_USER_LINE,
            f"app.py lost turn {louder}'s change and kept your line (three-way merge)",
        )
        self.expect(
            "settings.py",
            GREETING,
            f"settings.py, written by the older turn {settings}, is untouched",
        )
        self.show("app.py")

        self.out.print()
        self.say("Changed your mind? Every rewind can be undone:")
        self.run("undo")
        self.expect("app.py", APP_AGENT + APP_USER_LINE, "app.py has the agent's change again")
        self.expect("NOTES.md", None, "NOTES.md is deleted again, as the agent left it")
        self.out.print()
        self.say(
            f"The undo put turns {self.listed([str(k) for k in [*newer, louder]])} back "
            "on the branch, numbered as before:"
        )
        self.run("log", "--all")
        if self.numbers() != n:
            raise click.ClickException("demo check failed: the log after the undo differs")
        from rich.rule import Rule

        self.out.print()
        rule = Rule("demo finished: exact restore, merge and undo all checked")
        self.out.print(rule, width=None if self.out.is_terminal else 80)  # a rule has no end


@click.command()
@click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False),
    help="Run in this (new or empty) folder and keep it.",
)
def demo(directory: str | None) -> None:
    """Run a scripted agent session in a temp workspace, then rewind and undo it."""
    if directory:
        root = Path(directory).resolve()
        root.mkdir(parents=True, exist_ok=True)
        if any(root.iterdir()):
            raise click.UsageError(f"{root} is not empty")
        Demo(root).play()
        return
    with tempfile.TemporaryDirectory(prefix="snapstore-demo-") as tmp:
        Demo(Path(tmp)).play()
