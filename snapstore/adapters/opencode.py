"""opencode: a plugin, not hook commands (https://opencode.ai/docs/plugins/).

``snapstore hook install opencode`` writes a small plugin file that runs
``snapstore hook opencode EVENT`` (blocking, so a write is captured before it
happens) with opencode's own hook arguments as JSON on stdin:
``chat.message`` begins a turn (the prompt is its text parts),
``tool.execute.before`` and ``tool.execute.after`` of ``write``, ``edit``
(``args.filePath``) and ``apply_patch`` (``args.patchText``, every file of the
patch) capture around the write, and the ``session.idle`` event ends the turn.
The plugin never throws, so snapstore never stops a tool, except in strict mode.
"""

from __future__ import annotations

import json

from . import BEGIN, END, POST, PRE, Agent

AGENT = Agent(
    name="opencode",
    events={
        "chat.message": BEGIN,
        "tool.execute.before": PRE,
        "tool.execute.after": POST,
        "session.idle": END,
    },
    file_tools=("write", "edit", "apply_patch"),
    path_keys=("filePath",),
    silent="",
    message_id_key="output.message.id",
    shell_tools=("bash",),
    call_id_key="input.callID",
    event_key=None,
    session_keys=("input.sessionID", "event.properties.sessionID"),
    cwd_keys=("directory",),
    tool_keys=("input.tool",),
    args_keys=("output.args", "input.args"),
    prompt_keys=("output.parts",),
    patch_tools=("apply_patch",),
    patch_keys=("patchText",),
)

CONFIG = {
    "project": ".opencode/plugin/snapstore.js",
    "user": "~/.config/opencode/plugin/snapstore.js",
}
#: Marks the plugin file as snapstore's, so that installing again may rewrite it.
MARK = "Written by `snapstore hook install opencode`"

PLUGIN = """\
// snapstore: records each file the agent writes, so that `snapstore rewind` can take a turn
// back. %(mark)s; run that again to update it.
// It runs `snapstore hook opencode EVENT` with the event as JSON on its stdin and waits for it
// (a file is captured before the tool writes it). It never throws, so snapstore never stops a
// tool, except when SNAPSTORE_STRICT=1 makes snapstore exit 2 before a write.
import { spawnSync } from "node:child_process";

const COMMAND = %(command)s;
const TOOLS = %(tools)s;

function snapstore(event, payload) {
  let run;
  try {
    run = spawnSync(COMMAND[0], [...COMMAND.slice(1), event], {
      input: JSON.stringify(payload), stdio: ["pipe", "ignore", "pipe"], timeout: 30000,
    });
  } catch {
    return;
  }
  if (run.status === 2 && event === "tool.execute.before") {
    throw new Error(String(run.stderr || "snapstore: the capture failed").trim());
  }
}

export const Snapstore = async ({ directory }) => ({
  "chat.message": async (input, output) => {
    const parts = (output.parts || []).filter((part) => part.type === "text");
    snapstore("chat.message", { input, output: { message: output.message, parts }, directory });
  },
  "tool.execute.before": async (input, output) => {
    if (TOOLS.includes(input.tool)) {
      snapstore("tool.execute.before", { input, output: { args: output.args }, directory });
    }
  },
  "tool.execute.after": async (input) => {
    if (TOOLS.includes(input.tool)) snapstore("tool.execute.after", { input, directory });
  },
  event: async ({ event }) => {
    if (event.type === "session.idle") snapstore("session.idle", { event, directory });
  },
});
"""


def plugin(command: str, shell: bool = False) -> str:
    """The plugin's source: ``command`` is the shell-quoted snapstore hook command."""
    import shlex  # not on the hook's path

    tools = AGENT.hooked_tools(shell)
    return PLUGIN % {
        "mark": MARK,
        "command": json.dumps(shlex.split(command)),
        "tools": json.dumps(list(tools)),
    }


def install(path: str, command: str, shell: bool = False) -> list[str]:
    from .install import write_owned

    return ["plugin"] if write_owned(path, plugin(command, shell), MARK) else []
