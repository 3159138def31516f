"""A hook command that records what an agent sent it: `recorder.py LOG EVENT [STDOUT]`.

It appends one JSON line to LOG, {"event", "argv", "payload", "env", "cwd", "time"}, where payload
is the parsed stdin (or the raw text when it is not JSON) and env holds the variables whose names
hint at the agent (the event name, session and project folder some agents pass that way). Then it
prints STDOUT (what that agent reads as "go on", often nothing) and exits 0. Standard library only:
agents run it with the bare `python3`.
"""

import json
import os
import sys
import time

HINTS = (
    "CLAUDE",
    "GEMINI",
    "CODEX",
    "QWEN",
    "COPILOT",
    "OPENCODE",
    "CLINE",
    "AUGMENT",
    "HOOK",
    "SESSION",
    "PROJECT",
)


def main() -> None:
    log, event = sys.argv[1], sys.argv[2]
    raw = sys.stdin.read()
    try:
        payload = json.loads(raw) if raw.strip() else None
    except ValueError:
        payload = raw
    env = {k: v for k, v in os.environ.items() if any(h in k for h in HINTS)}
    line = json.dumps(
        {
            "event": event,
            "argv": sys.argv[1:],
            "payload": payload,
            "env": env,
            "cwd": os.getcwd(),
            "time": time.time(),
        }
    )
    with open(log, "a", encoding="utf-8") as f:  # one write per line: O_APPEND keeps lines whole
        f.write(line + "\n")
    if len(sys.argv) > 3:
        sys.stdout.write(sys.argv[3])


if __name__ == "__main__":
    main()
