"""Every shell and Python example in README.md and docs/ runs, and shows what it prints
(tests/support/docs.py says how a block is run, and how a page marks one that is not)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ..support.docs import PAGES, Block, Home, blocks, chains, run_chain

CHAINS = [(page, chain) for page in PAGES for chain in chains(page)]


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Home]:
    """One home for every block, at one path (the stores and their trust records name it);
    each block starts from a fresh copy of its workspace's template."""
    made = Home(tmp_path_factory.mktemp("docs"))
    yield made
    made.close()


@pytest.mark.parametrize(
    "chain", [chain for _, chain in CHAINS], ids=[chain[0].where for _, chain in CHAINS]
)
def test_the_example_runs_and_prints_what_it_shows(chain: list[Block], home: Home) -> None:
    run_chain(chain, home)


def test_every_block_that_does_not_run_says_why() -> None:
    """A block is left out only on purpose: with its reason, and never in the README's user
    quick start or the command-line reference without one."""
    skipped = [b for page in PAGES for b in blocks(page) if b.no_run is not None]
    assert all(b.no_run and b.no_run != "?" for b in skipped), [b.where for b in skipped]
    ran = sum(len(chain) for _, chain in CHAINS)
    assert ran >= 2 * len(skipped), (ran, [b.where for b in skipped])


def test_the_pages_are_the_ones_the_docs_have() -> None:
    root = Path(__file__).resolve().parents[2]
    assert "README.md" in PAGES and "docs/cli.md" in PAGES and "docs/python-api.md" in PAGES
    assert len(PAGES) == 1 + len(list((root / "docs").rglob("*.md")))


def test_the_readme_gives_a_user_their_quick_start_and_contributors_theirs() -> None:
    """A user's quick start installs, runs init and hook install, and rewinds, without the
    test machinery (`./dev sh` installs the test extra); the two commands the README
    promises, the demo and the tests, are there, the tests in the contributors' part."""
    text = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    user, _, contributors = text.partition("## For contributors")
    quick = user[user.index("## Quick start") :]
    for step in ("pip install .", "$ snapstore init", "$ snapstore hook install", "rewind"):
        assert step in quick, step
    assert "./dev demo" in quick and "./dev test" not in quick
    assert "./dev sh" not in user and "./dev test" in contributors


def test_the_exit_codes_table_lists_every_code() -> None:
    """docs/cli.md's table names each exit code the command line gives (6, a remote's, was
    missing)."""
    import re

    from snapstore_cli.operations import failures

    text = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text()
    listed = {int(code) for code in re.findall(r"^\| (\d) \| ", text, re.MULTILINE)}
    given = {0, 1, failures.REMOTE_EXIT, *failures.EXIT_CODES.values()}
    assert listed == given
