"""Which session a ``snapstore mcp`` serves: told from what the agent gives the server it
spawns, never from what the model says.

An agent starts its MCP servers once, as children, and runs its hooks as children too. So:

- **the agent's process.** Each prompt's hook writes, into the session's live file in
  ``<store>/sessions.d/``, the process that runs it (``lifecycle.agent_process``: the hook's
  nearest ancestor that is not a shell, by pid and start time). The server finds its own
  agent the same way, and the sessions that agent runs. Two agents in one workspace are two
  processes, so each server sees only its own session.
- **the agent's own word**, where it gives one: a session id in the server's environment
  (Claude Code ``CLAUDE_CODE_SESSION_ID``, Qwen Code ``QWEN_CODE_SESSION_ID``, Copilot CLI
  ``COPILOT_AGENT_SESSION_ID``), set when the server started; or in each call's ``_meta``
  (Codex: ``sessionId``, its thread), which is exact for that call.

One agent process may have run several sessions (Claude Code's ``/clear`` starts a new one in
the same process). Then the one with an open turn is the caller (the agent calls tools during
its turn), else the one the environment names; where that still leaves more than one, the
server says so and refuses, rather than guess (docs/integrations/mcp.md, "Knowing who calls").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from ...operations.lifecycle import Process, agent_process, alive, sessions_run_by

#: The environment variable each agent sets, in the MCP servers it starts, to its session id.
ENV_IDS = (
    ("claude-code", "CLAUDE_CODE_SESSION_ID"),
    ("qwen-code", "QWEN_CODE_SESSION_ID"),
    ("copilot", "COPILOT_AGENT_SESSION_ID"),
)
#: At most this many characters of an id an agent gives are taken (the store's names are
#: at most 255 bytes; an agent's ids are a few dozen characters).
MAX_ID = 200


class Unidentified(Exception):
    """The server cannot tell which session calls it; the message says why, for the model."""


class Caller(NamedTuple):
    """The session a call is from, and how that was told (for ``doctor`` and the logs)."""

    session: str
    how: str


def _clean(value: Any) -> str | None:
    """An id an agent gave: a short printable string, else None."""
    if not isinstance(value, str) or not value or len(value) > MAX_ID:
        return None
    if any(ord(c) < 33 or c in "/\\" for c in value):
        return None
    return value


def meta_session(meta: Mapping[str, Any] | None) -> str | None:
    """The session a call's ``_meta`` names (Codex sends its thread with every call)."""
    if not meta:
        return None
    turn = meta.get("x-codex-turn-metadata")
    if isinstance(turn, Mapping) or "threadId" in meta:
        found = _clean(meta.get("sessionId")) or _clean(meta.get("threadId"))
        if found is None and isinstance(turn, Mapping):
            found = _clean(turn.get("session_id"))
        return None if found is None else f"codex/{found}"
    return None


def env_session(env: Mapping[str, str]) -> str | None:
    """The session the server's environment names, if its agent sets one."""
    for agent, var in ENV_IDS:
        found = _clean(env.get(var))
        if found is not None:
            return f"{agent}/{found}"
    return None


class Identity:
    """What the server knows of its caller from the start: its agent's process and its
    environment. :meth:`caller` adds each call's ``_meta`` and the store's sessions."""

    __slots__ = ("agent", "env")

    def __init__(self, env: Mapping[str, str], agent: Process | None = None):
        self.env = env
        self.agent = agent if agent is not None else agent_process()

    def caller(
        self,
        store_dir: str,
        meta: Mapping[str, Any] | None,
        known: set[str],
        open_turns: set[str],
    ) -> Caller:
        """The calling session among ``known`` (the store's sessions; ``open_turns``: those
        with a turn open now), or :class:`Unidentified` saying why not."""
        named = meta_session(meta)
        if named is not None:
            if named not in known:
                raise Unidentified(
                    f"this agent's session ({named}) has no turn recorded yet: are snapstore's "
                    "hooks installed for it (`snapstore hook install AGENT`)?"
                )
            return Caller(named, "the call's metadata")
        from_env = env_session(self.env)
        agent = self.agent
        runs = []
        if agent is not None and alive(agent):
            runs = [s for s in sessions_run_by(store_dir, agent) if s in known]
        if runs:
            now = [s for s in runs if s in open_turns]
            if len(now) == 1:
                return Caller(now[0], "the agent's process and its open turn")
            if from_env in runs and (not now or from_env in now):
                return Caller(from_env, "the agent's process and its environment")
            if len(runs) == 1:
                return Caller(runs[0], "the agent's process")
            raise Unidentified(
                f"the agent that started this server runs {len(runs)} sessions here "
                f"({', '.join(sorted(runs))}) and nothing tells which one calls: snapstore "
                "refuses rather than guess; use `snapstore log` and `snapstore rewind` in a "
                "terminal"
            )
        if from_env is not None and from_env in known:
            return Caller(from_env, "the agent's environment")
        raise Unidentified(
            "no session of the agent that started this server is recorded in this store yet "
            "(snapstore's hooks record a session at its first prompt): are they installed "
            "(`snapstore hook install AGENT`), and is this the agent's workspace?"
        )
