"""A tiny stand-in agent for the MCP tests: one process that, as a real agent does, runs
snapstore's hooks for its session and starts ``snapstore mcp`` as its own child, then calls its
tools through the SDK's own stdio client.

``python -m tests.support.mcp_agent PLAN`` reads PLAN (a JSON file): ``{"workspace", "session",
"server": [argv...], "env": {...}, "steps": [...]}``. Each step is one of

- ``{"hook": EVENT, ...fields}``: a Claude Code hook event of the session, through
  ``snapstore hook claude-code`` (``write``: also write that file between PreToolUse and
  PostToolUse, as the Write tool does);
- ``{"tool": NAME, "args": {...}}``: one tool call; its result is recorded;
- ``{"wait": PATH}``: wait until PATH exists (to line two agents up);
- ``{"touch": PATH}``: create PATH.

It prints one JSON document: the tools listed and each call's ``{"error", "text"}`` (or
``{"crash": "..."}`` when the server went away mid-call).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters


def hook(plan: dict[str, Any], step: dict[str, Any]) -> None:
    ws, session = plan["workspace"], plan["session"]
    event = step["hook"]
    payload: dict[str, Any] = {
        "session_id": session,
        "cwd": ws,
        "hook_event_name": event,
        "transcript_path": os.path.join(ws, ".transcript.jsonl"),
    }
    payload.update({k: v for k, v in step.items() if k not in ("hook", "write")})
    done = subprocess.run(
        [*plan["snapstore"], "hook", "claude-code"],
        input=json.dumps(payload).encode(),
        cwd=ws,
        env={**os.environ, **plan.get("env", {})},
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"hook {event} failed: {done.stderr.decode()}")


async def run(plan: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"calls": []}
    params = StdioServerParameters(
        command=plan["server"][0],
        args=plan["server"][1:],
        cwd=plan["workspace"],
        env={**os.environ, **plan.get("env", {})},
    )
    steps = plan["steps"]
    first_tool = next((i for i, s in enumerate(steps) if "tool" in s), len(steps))
    for step in steps[:first_tool]:  # the agent's hooks run before its first tool call
        await do(plan, step, None, out)
    if first_tool == len(steps):
        return out
    async with Client(params, read_timeout_seconds=120) as client:
        out["tools"] = sorted(t.name for t in (await client.list_tools()).tools)
        for step in steps[first_tool:]:
            try:
                await do(plan, step, client, out)
            except Exception as exc:  # the server died under the call
                out["calls"].append({"crash": repr(exc)})
                return out
    return out


async def do(plan: dict[str, Any], step: dict[str, Any], client: Any, out: dict[str, Any]) -> None:
    if "hook" in step:
        if "write" in step and step["hook"] == "PostToolUse":
            path = Path(plan["workspace"], step["write"]["path"])
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(step["write"]["content"])
        hook(plan, step)
    elif "tool" in step:
        started = time.monotonic()
        result = await client.call_tool(step["tool"], step.get("args", {}))
        text = "".join(getattr(c, "text", "") for c in result.content)
        out["calls"].append(
            {"error": bool(result.is_error), "text": text, "seconds": time.monotonic() - started}
        )
    elif "wait" in step:
        deadline = time.monotonic() + 120
        while not os.path.exists(step["wait"]):
            if time.monotonic() > deadline:
                raise SystemExit(f"never saw {step['wait']}")
            await asyncio.sleep(0.02)
    elif "touch" in step:
        Path(step["touch"]).touch()


def main() -> None:
    plan = json.loads(Path(sys.argv[1]).read_text())
    print(json.dumps(asyncio.run(run(plan))))


if __name__ == "__main__":
    main()
