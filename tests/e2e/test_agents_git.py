"""A real agent CLI runs git in its shell tool, recorded by the real `snapstore hook`, and the
rewind leaves the repository exactly as it was before that turn.

The agent (driven by the tests' fake model on loopback, tests/support/agents) works in a
repository where the user has an uncommitted edit. In one turn its shell tool runs
``git checkout -b``, ``git commit``, ``git stash`` (which takes the user's edit) and
``git reset --hard``. ``snapstore rewind`` then gives back, exactly, ``git status
--porcelain``, ``git rev-parse HEAD``, ``git symbolic-ref HEAD``, ``git stash list`` and the
index, and the user's edit; ``undo`` gives the agent's state back. Every commit reachable
before the rewind stays reachable (the stash that held the user's edit is kept under
refs/snapstore/).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from snapstore import Store

from ..support import snapstore, snapstore_bin
from ..support.agents.drivers import DRIVERS, Opencode
from ..support.agents.fake_model import Shell, Turn
from ..support.agents.install import InstallError, install
from ..support.agents.session import Session
from ..support.gitrepo import GIT_ENV, git, init, state

GIT = (
    "git checkout -q -b agent-work && echo agent >> a.txt && git commit -qm 'agent work' a.txt"
    " && git stash -q && git reset -q --hard HEAD~1"
)
SCRIPT = [Turn("Tidy up the repository with git", (Shell(GIT),), "Tidied.")]
AGENTS = ["claude-code", "gemini-cli"]


@pytest.fixture
def on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """This snapstore on PATH, as an installed one is: project-scope hooks call `snapstore`."""
    monkeypatch.setenv(
        "PATH", os.path.dirname(snapstore_bin()[0]) + os.pathsep + os.environ.get("PATH", "")
    )


def snap(s: Session, *args: str) -> subprocess.CompletedProcess:
    return snapstore(s.workspace, *args, env=s.env())


@pytest.mark.parametrize("agent", AGENTS)
def test_a_real_agents_git_turn_is_rewound_to_the_exact_repository(
    agent: str, tmp_path: Path, on_path: None
) -> None:
    try:
        install(DRIVERS[agent].pin or agent)
    except InstallError as e:
        pytest.fail(f"could not install the {agent} CLI: {e}", pytrace=False)
    with Session(agent, tmp_path, SCRIPT) as s:
        s.extra_env.update(GIT_ENV)  # the agent's git commits with a fixed identity
        root = s.workspace
        init(root)
        (root / "notes.txt").write_text("notes\nthe user's uncommitted edit\n")
        installed = snap(s, "--json", "hook", "install", s.driver.pin or agent)
        assert installed.returncode == 0, installed.stderr
        if agent.startswith("opencode"):
            Opencode._deps_installed(root / ".opencode")
        before = state(root)

        run = s.run(SCRIPT[0].prompt)
        assert run.code == 0 and not run.timed_out, run.brief()
        after = state(root)
        assert git(root, "symbolic-ref", "HEAD") == "refs/heads/agent-work"  # the agent ran it
        assert "the user's uncommitted edit" not in (root / "notes.txt").read_text()
        assert git(root, "stash", "list") != ""
        assert not (root / ".snapstore" / "hook.log").exists(), (
            root / ".snapstore" / "hook.log"
        ).read_text()

        with Store.open(root) as store:
            [session] = [x.name for x in store.sessions()]
        show = json.loads(snap(s, "--json", "show", "1", "--session", session).stdout)
        assert "created branch agent-work at" in " ".join(show["git"]), show["git"]

        reachable = set(git(root, "rev-list", "--all").split())
        rewound = snap(s, "--json", "rewind", "1", "--yes", "--mode", "code", "--session", session)
        assert rewound.returncode == 0, rewound.stderr
        result = json.loads(rewound.stdout)["git"]
        assert result["head_before"] == "refs/heads/agent-work"
        assert result["head_after"] == "refs/heads/main" and result["ok"]
        assert state(root) == before  # status, HEAD, the branch, the stash list, the index
        assert reachable <= set(git(root, "rev-list", "--all").split())  # nothing lost
        stash = [k for k in result["kept"] if k.endswith("/stash")]
        assert stash and "WIP on agent-work" in git(root, "log", "-1", "--format=%s", stash[0])

        undone = snap(s, "--json", "undo")
        assert undone.returncode == 0, undone.stderr
        assert state(root) == after
