"""The type checker is clean on the library and the command line ([tool.mypy] in pyproject)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_mypy_finds_no_error_in_the_library_or_the_command_line() -> None:
    """Its files are the config's (snapstore/ and cli/); its cache is .mypy_cache."""
    done = subprocess.run(
        [sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    report = done.stdout + done.stderr
    assert done.returncode == 0, report
    assert "Success: no issues found" in done.stdout, report
