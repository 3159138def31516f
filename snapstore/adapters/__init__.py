"""Agent adapters: turn one hook event from an agent into capture calls.

Each agent module describes its payloads as an :class:`Agent`; :func:`parse`
turns one payload into a :class:`HookAction` and :func:`apply` runs that action
against a store. Parsing is pure and
strict (a payload that is not what the agent documents is ``BadInput``);
applying raises the library's errors (a path outside the workspace is
``UnsafePath``), and the caller decides whether that may block the agent.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any, NamedTuple

from ..errors import BadInput

if TYPE_CHECKING:
    from ..store import Store

BEGIN, PRE, POST, END, START, IGNORE = "begin", "pre", "post", "end", "start", "ignore"
#: Around the agent's shell tool (scan mode); DENIED: a tool call that will not run.
SHELL_PRE, SHELL_POST, DENIED = "shell-pre", "shell-post", "denied"
#: Hook payloads are small JSON objects; anything bigger is refused unread.
MAX_PAYLOAD = 8 * 1024 * 1024


class Agent(NamedTuple):
    """How one agent's hook payloads map onto snapstore: each agent module defines one."""

    name: str
    events: dict[str, str]  # hook_event_name -> BEGIN, PRE, POST, DENIED, END or START
    file_tools: tuple[str, ...]  # the tools that write files
    path_keys: tuple[str, ...]  # where in ``tool_input`` the path is
    silent: str  # what a successful hook prints on stdout
    message_id_key: str | None = None  # the payload field holding the prompt's id
    shell_tools: tuple[str, ...] = ()  # the shell tool, hooked in scan mode
    call_id_key: str | None = None  # the payload field holding the tool call's id


class HookAction(NamedTuple):
    """What one hook event asks snapstore to do."""

    kind: str
    session: str = ""
    cwd: str = ""
    prompt: str = ""
    message_id: str | None = None
    tool: str = ""
    paths: tuple[str, ...] = ()
    event: str = ""
    call: str = ""  # the agent's id for the tool call, when it gives one


class HookOutcome(NamedTuple):
    """What applying an action did, for the hook's log."""

    action: HookAction
    turn: str | None = None
    paths: tuple[str, ...] | list[str] = ()
    warnings: tuple[str, ...] | list[str] = ()


def load_payload(raw: bytes) -> dict[str, Any]:
    """Decode a hook payload, refusing anything that is not one JSON object."""
    if len(raw) > MAX_PAYLOAD:
        raise BadInput(f"hook payload is too large ({len(raw)} bytes)")
    try:
        payload = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise BadInput(f"hook payload is not JSON: {exc}") from None
    except RecursionError:
        raise BadInput("hook payload is nested too deeply") from None
    if not isinstance(payload, dict):
        raise BadInput("hook payload is not a JSON object")
    return payload


def field_str(payload: dict[str, Any], name: str, required: bool = True) -> str:
    value = payload.get(name)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value):
        raise BadInput(f"hook payload has no valid {name!r}")
    return value


def parse(agent: Agent, payload: dict[str, Any]) -> HookAction:
    """The action one hook event asks for; unknown events and other tools are IGNORE."""
    event = payload.get("hook_event_name", "")
    kind = agent.events.get(event, IGNORE) if isinstance(event, str) else IGNORE
    if kind == IGNORE:
        return HookAction(IGNORE, event=str(event))
    session = f"{agent.name}/{field_str(payload, 'session_id')}"
    cwd = field_str(payload, "cwd")
    if not os.path.isabs(cwd) or "\0" in cwd:
        raise BadInput(f"hook payload 'cwd' is not an absolute path: {cwd!r}")
    if kind == BEGIN:
        message_id = payload.get(agent.message_id_key) if agent.message_id_key else None
        return HookAction(kind, session, cwd, field_str(payload, "prompt", required=False),
                          message_id if isinstance(message_id, str) else None, event=event)
    if kind in (PRE, POST, DENIED):
        tool = field_str(payload, "tool_name")
        if tool in agent.shell_tools:
            call = payload.get(agent.call_id_key) if agent.call_id_key else None
            return HookAction(SHELL_PRE if kind == PRE else SHELL_POST, session, cwd, tool=tool,
                              event=event, call=call if isinstance(call, str) else "")
        if tool not in agent.file_tools or kind == DENIED:
            return HookAction(IGNORE, event=event, tool=tool)  # a denied write changes nothing
        return HookAction(kind, session, cwd, tool=tool, event=event,
                          paths=tool_paths(payload, agent.path_keys))
    return HookAction(kind, session, cwd, event=event)


def tool_paths(payload: dict[str, Any], keys: tuple[str, ...]) -> tuple[str, ...]:
    """The file paths in ``tool_input``, resolved against the payload's ``cwd``."""
    tool_input = payload.get("tool_input")
    if not isinstance(tool_input, dict):
        raise BadInput("hook payload has no 'tool_input' object")
    for key in keys:
        value = tool_input.get(key)
        if isinstance(value, str) and value:
            return (os.path.join(payload["cwd"], value),)
    raise BadInput(f"tool_input has none of {', '.join(keys)}")


def apply(store: Store, action: HookAction, scan: bool = False) -> HookOutcome:
    """Run one hook action; with ``scan`` (scan mode), a turn's edges and each shell call
    are scanned (without it, shell calls do nothing).

    A new prompt closes a turn whose end never came.
    """
    if action.kind in (SHELL_PRE, SHELL_POST):
        if scan and action.kind == SHELL_PRE:
            store.shell_begin(action.session, action.call)
        elif scan:
            store.shell_end(action.session, action.call)
        return HookOutcome(action)
    if action.kind == BEGIN:
        turn = store.begin_turn(action.session, action.prompt, action.message_id, scan=scan,
                                close_open=True)
        return HookOutcome(action, turn.id)
    if action.kind in (PRE, POST):
        if action.kind == PRE:
            result = store.pre_write(action.paths, action.tool, action.session)
        else:
            result = store.post_write(action.paths, action.session, action.tool)
        return HookOutcome(action, result.turn, result.paths,
                           [f"{path}: {reason}" for path, reason in result.skipped])
    if action.kind == END and store.open_turn(action.session) is not None:
        return HookOutcome(action, store.end_turn(action.session, scan=scan).id)
    return HookOutcome(action)
