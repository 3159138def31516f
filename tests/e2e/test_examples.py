"""The built-in demo and the examples run, and check their own outcomes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ..support import hermetic_env, snapstore_bin

REPO = Path(__file__).resolve().parents[2]


def test_demo_runs_and_verifies_itself(tmp_path: Path) -> None:
    result = subprocess.run(
        [*snapstore_bin(), "demo", "--dir", str(tmp_path / "demo")],
        capture_output=True,
        text=True,
        env=hermetic_env(),
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "restored  NOTES.md" in out and "merged    app.py" in out
    assert "ok: app.py lost turn 2's change and kept your line" in out
    assert "demo finished" in out
    assert "TODO(me)" in (tmp_path / "demo" / "app.py").read_text()


def test_tool_layer_example_runs(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(REPO / "examples" / "tool_layer.py")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "merged: ['greet.py'] conflicts: []" in result.stdout
    assert "undo restored the agent's edit" in result.stdout
