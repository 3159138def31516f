"""The ``snapstore`` console script.

Agents spawn ``snapstore hook ...`` on every tool call, so that path must not
pay for Click or rich: it is dispatched here, before either is imported. Every
other command goes through the Click application in ``snapstore_cli.main``.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if len(args) >= 2 and args[0] == "hook" and args[1] in ("claude-code", "gemini-cli") \
            and not any(a in ("--help", "-h") for a in args[2:]):
        from .hookrun import run_hook
        sys.exit(run_hook(args[1], args[2:]))
    from .main import run
    run(args)


if __name__ == "__main__":
    main()
