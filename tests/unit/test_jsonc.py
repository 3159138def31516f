"""JSON with comments (Gemini CLI's and Qwen Code's settings): read as those agents read it,
and changed with every comment kept."""

from __future__ import annotations

import json

import pytest

from snapstore import BadInput
from snapstore.adapters import jsonc

HOOKS = {"BeforeTool": [{"matcher": "write_file", "hooks": [{"command": "snapstore hook x"}]}]}


@pytest.mark.parametrize(
    ("text", "new", "comments"),
    [
        ("// only a comment\n", {"hooks": HOOKS}, ["// only a comment"]),
        ("{} // empty\n", {"hooks": HOOKS}, ["// empty"]),
        ('{"a": 1 /* one */}', {"a": 1, "hooks": HOOKS}, ["/* one */"]),
        (
            '{\n  "a": "http://x//y /* in a string */" // a\n}\n',
            {"a": "http://x//y /* in a string */", "hooks": HOOKS},
            ["// a"],
        ),
        (
            '{\n  "tools": {\n    "sandbox": true // s\n  }, // t\n  "b": 2\n}\n',
            {"tools": {"sandbox": True, "enableHooks": True}, "b": 2, "hooks": HOOKS},
            ["// s", "// t"],
        ),
        (
            '{\n  // keep\n  "hooks": {"AfterTool": []} /* h */\n}\n',
            {"hooks": {"AfterTool": [], **HOOKS}},
            ["// keep", "/* h */"],
        ),
        ('{"hooks": {"BeforeTool": []}} // x', {"hooks": HOOKS}, ["// x"]),
    ],
)
def test_an_edit_keeps_every_comment_and_gives_the_new_settings(
    text: str, new: dict, comments: list[str]
) -> None:
    spaced = jsonc.blank(text)
    old = json.loads(spaced) if spaced.strip() else {}
    edited = jsonc.edit(text, old, new, "settings.json")
    assert json.loads(jsonc.blank(edited)) == new
    assert all(edited.count(comment) == text.count(comment) for comment in comments), edited


def test_a_comment_inside_a_rewritten_value_is_refused() -> None:
    text = '{"hooks": {"BeforeTool": [ /* mine */ ]}}'
    with pytest.raises(BadInput, match='comments inside "BeforeTool"'):
        jsonc.edit(text, {"hooks": {"BeforeTool": []}}, {"hooks": HOOKS}, "settings.json")


def test_blank_keeps_offsets_and_strings() -> None:
    text = '{"u": "a//b", /* c\n d */ "v": 1} // e'
    spaced = jsonc.blank(text)
    assert len(spaced) == len(text) and spaced.count("\n") == text.count("\n")
    assert json.loads(spaced) == {"u": "a//b", "v": 1}
