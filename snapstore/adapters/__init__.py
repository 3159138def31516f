"""Agent adapters: turn one hook event from an agent into capture calls.

Each agent module describes its payloads as an :class:`Agent`, a table of where
each part of a payload is (dotted keys such as ``input.sessionID`` or
``workspace_roots.0``); :func:`parse` turns one payload into a
:class:`HookAction` and :func:`apply` runs that action against a store.
Parsing is pure and strict (a payload that is not what the agent documents is
``BadInput``); applying raises the library's errors (a path outside the
workspace is ``UnsafePath``), and the caller decides whether that may block
the agent.
"""

# No ``from __future__ import annotations`` here: a NamedTuple turns string annotations
# into ForwardRefs, and the first ForwardRef of a process compiles, which sets up the
# AST module: about 3 ms of every hook's start-up (docs/benchmarks.md).

import json
import os
from collections.abc import Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any, Final, Literal, NamedTuple

from ..core.errors import BadInput, SnapstoreError

if TYPE_CHECKING:
    from ..store import Store

#: What a hook event is to snapstore: a prompt (begin), a file tool call about to run (pre)
#: or done (post), the turn's end, the agent's start, or nothing (ignore); around the
#: agent's shell tool (scan mode), shell-pre and shell-post; denied: a call that will not run.
EventKind = Literal[
    "begin", "pre", "post", "end", "start", "ignore", "shell-pre", "shell-post", "denied"
]
BEGIN: Final = "begin"
PRE: Final = "pre"
POST: Final = "post"
END: Final = "end"
START: Final = "start"
IGNORE: Final = "ignore"
SHELL_PRE: Final = "shell-pre"
SHELL_POST: Final = "shell-post"
DENIED: Final = "denied"
#: Every agent with an adapter module here, by its command-line name.
AGENT_NAMES = (
    "claude-code",
    "gemini-cli",
    "codex",
    "copilot",
    "qwen-code",
    "cline",
    "cursor",
    "windsurf",
    "auggie",
    "opencode",
)


def agent_of(session: str) -> str:
    """The agent whose hooks recorded a session (they name it ``AGENT/ID``), else ''."""
    agent, slash, _ = session.partition("/")
    return agent if slash and agent in AGENT_NAMES else ""


def module_of(agent: str) -> ModuleType:
    """An agent's adapter module (its payload table ``AGENT``, config locations and writer),
    loading that one only: a hook process pays for its own agent."""
    return __import__(f"{__name__}.{agent.replace('-', '_')}", fromlist=["AGENT"])


#: Hook payloads are small JSON objects; anything bigger is refused unread.
MAX_PAYLOAD = 8 * 1024 * 1024
#: The lines of an apply_patch text (Codex, opencode, Auggie) that name a file.
PATCH_MARKERS = ("*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: ")


class Agent(NamedTuple):
    """How one agent's hook payloads map onto snapstore: each agent module defines one.

    The defaults describe Claude Code's payload shape, which several agents share.
    Keys are dotted paths into the payload; the first one present wins.
    """

    name: str
    events: Mapping[str, EventKind]  # event name -> BEGIN, PRE, POST, DENIED, END or START
    file_tools: tuple[str, ...]  # the tools that write files
    path_keys: tuple[str, ...]  # where in the tool's arguments the path (or list of paths) is
    silent: str  # what a successful hook prints on stdout
    message_id_key: str | None = None  # the payload field holding the prompt's id
    shell_tools: tuple[str, ...] = ()  # the shell tool, hooked in scan mode
    call_id_key: str | None = None  # the payload field holding the tool call's id (dotted)
    event_key: str | None = "hook_event_name"  # None: the event comes on the command line
    session_keys: tuple[str, ...] = ("session_id",)
    cwd_keys: tuple[str, ...] = ("cwd",)  # none present: the hook's own working folder
    tool_keys: tuple[str, ...] = ("tool_name",)
    args_keys: tuple[str, ...] = ("tool_input",)  # an object, or an object as a JSON string
    prompt_keys: tuple[str, ...] = ("prompt",)  # a string, or a list of {type: text} parts
    patch_tools: tuple[str, ...] = ()  # tools whose argument is an apply_patch text
    patch_keys: tuple[str, ...] = ()  # where in their arguments the patch text is
    event_tools: Mapping[str, str] = {}  # events that stand for one tool (Windsurf)
    replies: Mapping[str, str] = {}  # what to print on success for these events
    continuations: bool = False  # an empty prompt continues the turn (Qwen Code)
    deny: str = ""  # what blocks in strict mode, printed with {reason} (Cline); "": exit 2
    transcript_keys: tuple[str, ...] = ("transcript_path",)  # the agent's transcript file
    time_key: str | None = None  # the begin event's own time (agents whose hooks carry no id)

    def hooked_tools(self, shell: bool) -> tuple[str, ...]:
        """The tools whose calls the hooks ask to see: the file tools, and in scan mode
        (``shell``) the shell tool too."""
        return self.file_tools + (self.shell_tools if shell else ())

    def matcher(self, shell: bool, whole: bool = False) -> str:
        """The hooked tools as the agent's tool matcher, a regular expression; ``whole``
        anchors it, for agents that search the tool's name with it rather than match it."""
        names = "|".join(self.hooked_tools(shell))
        return f"^({names})$" if whole else names


class HookAction(NamedTuple):
    """What one hook event asks snapstore to do."""

    kind: EventKind
    session: str = ""
    cwd: str = ""
    prompt: str = ""
    message_id: str | None = None
    tool: str = ""
    paths: tuple[str, ...] = ()
    event: str = ""
    call: str = ""  # the agent's id for the tool call, when it gives one
    transcript: str = ""  # the agent's transcript file, as the begin event names it
    time: str = ""  # the begin event's own time, as the agent stamps it (``time_key``)


class HookOutcome(NamedTuple):
    """What applying an action did, for the hook's log."""

    action: HookAction
    turn: str | None = None
    paths: tuple[str, ...] | list[str] = ()
    warnings: tuple[str, ...] | list[str] = ()
    refused: tuple[SnapstoreError, ...] = ()  # paths that could not be captured at all


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


def dig(data: Any, key: str) -> Any:
    """The value at a dotted key (``a.b``, ``roots.0``), or None."""
    for part in key.split("."):
        if isinstance(data, dict):
            data = data.get(part)
        elif isinstance(data, list) and part.isdigit() and int(part) < len(data):
            data = data[int(part)]
        else:
            return None
    return data


def first(data: Any, keys: tuple[str, ...]) -> Any:
    """The value at the first of ``keys`` that holds something other than null or ""."""
    for key in keys:
        value = dig(data, key)
        if value is not None and value != "":
            return value
    return None


def _stamp(value: Any) -> str:
    """The begin event's own time as an ISO 8601 string: as the agent wrote it, or from the
    milliseconds since the epoch that Copilot CLI's hooks send; "" for anything else."""
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 1 << 53:
        import time  # built in: the hook path loads no datetime

        seconds, millis = divmod(value, 1000)
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{millis:03d}+00:00"
    return ""


def field_str(payload: dict[str, Any], keys: tuple[str, ...], what: str) -> str:
    value = first(payload, keys)
    if not isinstance(value, str) or not value:
        raise BadInput(f"hook payload has no valid {what} ({' or '.join(map(repr, keys))})")
    return value


def event_name(agent: Agent, payload: dict[str, Any], given: str | None = None) -> str:
    """The event: the payload's own name for it, else the one the hook command was given."""
    named = dig(payload, agent.event_key) if agent.event_key else None
    return named if isinstance(named, str) and named else (given or "")


def parse(
    agent: Agent, payload: dict[str, Any], event: str | None = None, cwd: str | None = None
) -> HookAction:
    """The action one hook event asks for; unknown events and other tools are IGNORE.

    ``event`` is the event named on the hook's command line (agents whose payload
    names none); ``cwd`` is the hook's working folder (agents whose payload has none).
    """
    event = event_name(agent, payload, event)
    kind = agent.events.get(event, IGNORE)
    if kind == IGNORE:
        return HookAction(IGNORE, event=event)
    prompt = ""
    if kind == BEGIN:
        prompt = prompt_text(first(payload, agent.prompt_keys))
        if agent.continuations and not prompt.strip():
            return HookAction(IGNORE, event=event)  # the same turn goes on after tool results
    session = f"{agent.name}/{field_str(payload, agent.session_keys, 'session id')}"
    where = first(payload, agent.cwd_keys)
    if where is None and cwd is not None:
        where = cwd
    if not isinstance(where, str) or not os.path.isabs(where) or "\0" in where:
        raise BadInput(f"hook payload has no absolute working folder: {where!r}")
    message_id = dig(payload, agent.message_id_key) if agent.message_id_key else None
    if not isinstance(message_id, str) or not message_id:
        message_id = None
    if kind == BEGIN:
        transcript = first(payload, agent.transcript_keys)
        if not isinstance(transcript, str) or not os.path.isabs(transcript) or "\0" in transcript:
            transcript = ""
        stamp = dig(payload, agent.time_key) if agent.time_key else None
        return HookAction(
            kind,
            session,
            where,
            prompt,
            message_id,
            event=event,
            transcript=transcript,
            time=_stamp(stamp),
        )
    if kind in (PRE, POST, DENIED):
        tool = agent.event_tools.get(event) or field_str(payload, agent.tool_keys, "tool name")
        if tool in agent.shell_tools:
            call = dig(payload, agent.call_id_key) if agent.call_id_key else None
            return HookAction(
                SHELL_PRE if kind == PRE else SHELL_POST,
                session,
                where,
                tool=tool,
                event=event,
                call=call if isinstance(call, str) else "",
            )
        if tool not in agent.file_tools or kind == DENIED:
            return HookAction(IGNORE, event=event, tool=tool)  # a denied write changes nothing
        return HookAction(
            kind,
            session,
            where,
            tool=tool,
            event=event,
            paths=tool_paths(agent, tool, tool_args(agent, payload), where),
        )
    return HookAction(kind, session, where, message_id=message_id, event=event)


def prompt_text(value: Any) -> str:
    """A prompt given as a string, or as a list of message parts (opencode)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(
            part["text"]
            for part in value
            if isinstance(part, dict)
            and part.get("type", "text") == "text"
            and isinstance(part.get("text"), str)
        )
    return ""


def tool_args(agent: Agent, payload: dict[str, Any]) -> dict[str, Any]:
    """The tool's arguments: an object, or (Copilot's docs) that object as a JSON string."""
    args = first(payload, agent.args_keys)
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            raise BadInput(f"the tool's arguments are not JSON: {args[:80]!r}") from None
    if not isinstance(args, dict):
        raise BadInput(f"hook payload has no tool arguments ({' or '.join(agent.args_keys)})")
    return args


def tool_paths(agent: Agent, tool: str, args: dict[str, Any], cwd: str) -> tuple[str, ...]:
    """Every file a tool call names, resolved against ``cwd``: one path, a list of them,
    or all the files of an apply_patch text (both ends of a move included)."""
    if tool in agent.patch_tools:
        text = first(args, agent.patch_keys)
        if not isinstance(text, str):
            raise BadInput(f"{tool} has no patch text ({' or '.join(agent.patch_keys)})")
        found = patch_paths(text)
        if not found:
            raise BadInput(f"{tool}'s patch names no file")
    else:
        value = first(args, agent.path_keys)
        found = [value] if isinstance(value, str) else value
        if (
            not isinstance(found, list)
            or not found
            or not all(isinstance(p, str) and p for p in found)
        ):
            raise BadInput(f"{tool} names no file ({' or '.join(agent.path_keys)})")
    return tuple(os.path.join(cwd, path) for path in found)


def patch_paths(text: str) -> list[str]:
    """Every path an apply_patch text names, in order and once each: added, updated,
    deleted, and both ends of a move (``*** Update File: a`` then ``*** Move to: b``).

    Markers only ever start a line: the lines of a file's content start with
    ``+``, ``-``, a space or ``@@``.
    """
    found: dict[str, None] = {}
    for line in text.splitlines():
        for marker in PATCH_MARKERS:
            if line.startswith(marker) and line[len(marker) :].strip():
                found[line[len(marker) :].strip()] = None
    return list(found)


def reply(agent: Agent, event: str) -> str:
    """What a successful hook prints for ``event``."""
    return agent.replies.get(event, agent.silent)


def apply(store: "Store", action: HookAction, scan: bool = False) -> HookOutcome:
    """Run one hook action; with ``scan`` (scan mode), a turn's edges and each shell call
    are scanned (without it, shell calls do nothing).

    A new prompt closes a turn whose end never came; an end that names another
    prompt than the open turn's leaves it open.
    """
    if action.kind in (SHELL_PRE, SHELL_POST):
        if scan and action.kind == SHELL_PRE:
            store.shell_begin(action.session, action.call)
        elif scan:
            store.shell_end(action.session, action.call)
        return HookOutcome(action)
    if action.kind == BEGIN:
        turn = store.begin_turn(
            action.session,
            action.prompt,
            action.message_id,
            scan=scan,
            close_open=True,
            transcript=action.transcript or None,
            prompt_time=action.time,
        )
        return HookOutcome(action, turn.id)
    if action.kind in (PRE, POST):
        if action.kind == PRE:
            result = store.pre_write(action.paths, action.tool, action.session)
        else:
            result = store.post_write(action.paths, action.session, action.tool)
        return HookOutcome(
            action,
            result.turn,
            result.paths,
            [f"{path}: {reason}" for path, reason in result.skipped],
            result.refused,
        )
    if action.kind == END:
        open_turn = store.open_turn(action.session)
        if open_turn is not None and not _later_turn(open_turn.message_id, action.message_id):
            return HookOutcome(action, store.end_turn(action.session, scan=scan).id)
    return HookOutcome(action)


def _later_turn(open_id: str | None, ended_id: str | None) -> bool:
    """Whether an end names another prompt than the open turn's: an end that arrives late
    (Windsurf sends it asynchronously) must not close the turn after it."""
    return open_id is not None and ended_id is not None and open_id != ended_id
