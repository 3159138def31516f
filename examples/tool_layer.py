"""A minimal agent tool layer protected by snapstore.

Run it: `python examples/tool_layer.py`. It wraps a `write_file` / `edit_file`
tool pair with `snapstore.tracked`, plays two agent turns, lets "the user"
edit a file by hand, then rewinds the second turn (the user's edit survives)
and undoes the rewind.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from snapstore import Store, tracked


def build_tools(store: Store, root: Path, session: str):
    """The agent's file tools. Every call is captured before it writes."""

    @tracked(store, "path", session=session)
    def write_file(path: str, content: str) -> str:
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)
        return f"wrote {len(content)} characters to {path}"

    @tracked(store, "path", session=session)
    def edit_file(path: str, old: str, new: str) -> str:
        target = root / path
        text = target.read_text()
        if text.count(old) != 1:
            raise ValueError(f"{old!r} must occur exactly once in {path}")
        target.write_text(text.replace(old, new))
        return f"edited {path}"

    return write_file, edit_file


def main() -> None:
    session = "example"
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "greet.py").write_text(
            'def greet(name):\n    return "hello " + name\n\n\nprint(greet("you"))\n'
        )
        with Store.init(root) as store:
            write_file, edit_file = build_tools(store, root, session)

            store.begin_turn(session, "Add a README")
            print(write_file("README.md", "# Greeter\n\nSays hello.\n"))
            store.end_turn(session)

            store.begin_turn(session, "Shout the greeting")
            print(edit_file("greet.py", '"hello " + name', '"HELLO " + name.upper()'))
            store.end_turn(session)

            with open(root / "greet.py", "a") as handle:  # the user's own edit
                handle.write("print(greet('again'))\n")

            for point in store.rewind_points(session):
                print(
                    f"{point.n}. {point.turn.prompt!r}: {len(point.files)} file(s), "
                    f"+{point.added} -{point.removed}"
                )

            result = store.rewind(1, session)  # take back "Shout the greeting"
            print("merged:", result.merged, "conflicts:", result.conflicts)
            text = (root / "greet.py").read_text()
            assert '"hello " + name' in text and "greet('again')" in text
            print((root / "greet.py").read_text())

            store.undo(session=session)
            assert '"HELLO "' in (root / "greet.py").read_text()
            print("undo restored the agent's edit; your line is still there")


if __name__ == "__main__":
    main()
