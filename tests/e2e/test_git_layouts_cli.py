"""The layouts git keeps a work tree in, through the real hooks and CLI: a linked worktree
(``.git`` is a file, the usual layout for agents run side by side), a submodule, and
``GIT_DIR`` with ``core.worktree``. In each, a turn whose shell call commits on a new branch
and stashes the user's edit is rewound to the exact repository and undone, and the store
stays out of git: a ``.gitignore`` holding ``*`` in it, the exclude line where git reads it,
and ``git add -A`` adds nothing of it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ..support.gitrepo import git, init, sh, state

SCRIPT = "git checkout -q -b topic && echo a >> a.txt && git commit -qm agent a.txt && git stash -q"


def _claude(cli, where: Path, event: str, extra: dict[str, str], **fields: object) -> None:
    payload = {
        "session_id": "s",
        "transcript_path": str(where / "t.jsonl"),
        "cwd": str(where),
        "hook_event_name": event,
        **fields,
    }
    done = cli("hook", "claude-code", input=json.dumps(payload), cwd=where, env=extra)
    assert done.code == 0 and done.stderr == "", done.stderr


def _turn(cli, where: Path, script: str, extra: dict[str, str]) -> None:
    """One Claude Code turn whose Bash tool runs ``script``, through the real hook command."""
    tool = {"tool_name": "Bash", "tool_input": {"command": script}, "tool_use_id": "toolu_1"}
    _claude(cli, where, "UserPromptSubmit", extra, prompt=f"run {script}")
    _claude(cli, where, "PreToolUse", extra, **tool)
    sh(where, script, extra)
    _claude(cli, where, "PostToolUse", extra, **tool, tool_response={"stdout": ""})
    _claude(cli, where, "Stop", extra, stop_hook_active=False)


def _rewound_and_undone(cli, where: Path, extra: dict[str, str] | None = None) -> None:
    extra = extra or {}
    assert cli("init", "--track-shell", cwd=where, env=extra).code == 0
    (where / "notes.txt").write_text("notes\nuser edit\n")  # the user's uncommitted work
    before = state(where, extra)
    _turn(cli, where, SCRIPT, extra)
    after = state(where, extra)
    assert after != before
    session = ("--session", "claude-code/s")
    rewound = cli("--json", "rewind", "1", "--yes", *session, cwd=where, env=extra)
    assert rewound.code == 0, rewound.stderr
    assert rewound.json["git"]["head_after"] == before["branch"]
    assert state(where, extra) == before
    undone = cli("--json", "undo", cwd=where, env=extra)
    assert undone.code == 0, undone.stderr
    assert state(where, extra) == after
    assert (where / ".snapstore" / ".gitignore").read_text().splitlines()[-1] == "*"
    sh(where, "git add -A", extra)
    assert ".snapstore" not in git(where, "diff", "--cached", "--name-only", extra=extra)


def test_a_linked_worktree_rewinds_and_keeps_the_store_out(cli, tmp_path: Path) -> None:
    main = tmp_path / "main"
    main.mkdir()
    init(main)
    where = tmp_path / "agent"
    git(main, "worktree", "add", "-q", str(where), "-b", "wt")
    assert (where / ".git").is_file()
    _rewound_and_undone(cli, where)
    exclude = (main / ".git" / "info" / "exclude").read_text()  # the common dir's: git reads it
    assert "/.snapstore/" in exclude.splitlines()
    assert git(main, "symbolic-ref", "HEAD") == "refs/heads/main"  # the main checkout untouched


def test_a_submodule_rewinds_and_keeps_the_store_out(cli, tmp_path: Path) -> None:
    source = tmp_path / "source"
    source.mkdir()
    init(source)
    top = tmp_path / "top"
    top.mkdir()
    git(top, "init", "-q", "-b", "main")
    git(top, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(source), "sub")
    git(top, "commit", "-qm", "a submodule")
    where = top / "sub"
    git(where, "checkout", "-q", "-B", "main", "origin/main")
    assert (where / ".git").is_file()
    _rewound_and_undone(cli, where)
    assert "/.snapstore/" in (top / ".git" / "modules" / "sub" / "info" / "exclude").read_text()


def test_git_dir_and_core_worktree_rewind(cli, tmp_path: Path, root: Path) -> None:
    """The repository lives elsewhere (``GIT_DIR``), its work tree is the workspace."""
    dot = tmp_path / "dotfiles.git"
    extra = {"GIT_DIR": str(dot)}
    sh(root, "git init -q -b main && git config core.bare false", extra)
    sh(root, f"git config core.worktree {root}", extra)
    for name, text in (("a.txt", "a1\n"), ("b.txt", "b1\n"), ("notes.txt", "notes\n")):
        (root / name).write_text(text)
    sh(root, "git add -A && git commit -qm first", extra)
    _rewound_and_undone(cli, root, extra)
    assert "/.snapstore/" in (dot / "info" / "exclude").read_text()


def test_a_store_a_hook_creates_holds_its_gitignore(cli, root: Path) -> None:
    init(root)
    _claude(cli, root, "UserPromptSubmit", {}, prompt="first")
    assert (root / ".snapstore" / ".gitignore").is_file()
    assert git(root, "status", "--porcelain", "--untracked-files=all") == ""


@pytest.mark.parametrize("layout", ["plain", "none"])
def test_outside_a_repository_git_is_null(cli, root: Path, layout: str) -> None:
    if layout == "plain":
        init(root)
    assert cli("init").code == 0
    assert (root / ".snapstore" / ".gitignore").is_file()
    (root / "x.txt").write_text("x\n")
    begin = cli("--json", "begin", "--prompt", "p")
    assert begin.code == 0 and begin.stderr == "", begin.stderr
    assert cli("end").code == 0
    rewound = cli("--json", "rewind", "1", "--yes")
    assert rewound.code == 0
    if layout == "none":
        assert rewound.json["git"] is None  # null outside a repository
    else:
        assert rewound.json["git"]["refs"] == [] and rewound.json["git"]["ok"]
