"""The environment a request runs in, resolved once for every door.

The library reads no environment: what a move needs from it (where the store is and how long
to wait for its lock, the clock, each agent's home folder, where its registry of running
sessions is) is read here, once, from the process's environment and the global options, and
passed down. A door that lives long (the page's server, the daemon) resolves it when it
starts, as a command line does when it starts, so the same request finds the same agents'
homes through every door.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..settings.environment import Environment, agent_homes
from ..settings.options import Options

if TYPE_CHECKING:
    from snapstore import Store


class Context:
    """Where the store is and how to open it, and each agent's home folder."""

    __slots__ = ("env", "homes", "root")

    def __init__(
        self,
        env: Environment,
        root: str | None,
        homes: Mapping[str, str] | None = None,
    ):
        self.env = env  # SNAPSTORE_DIR, the clock, the lock timeout
        self.root = root  # the workspace (None: SNAPSTORE_DIR's store says)
        self.homes = dict(agent_homes() if homes is None else homes)

    @classmethod
    def of(cls, opts: Options) -> Context:
        """A command line's context: its options, and the process's environment."""
        return cls(opts.env, opts.find_root())

    def open(self) -> Store:
        """The store, opened with this environment's clock, lock timeout and settings."""
        return self.env.open(self.root)
