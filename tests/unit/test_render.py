"""The one escape helper for text that reaches a terminal (snapstore_cli.output.rich.printable)."""

from __future__ import annotations

import codecs

from hypothesis import given, settings
from hypothesis import strategies as st
from snapstore_cli.output.plain import printable, unsafe

ACTIVE = [
    "\x1b",
    "\x07",
    "\x00",
    "\n",
    "\r",
    "\t",
    "\x7f",
    "\x85",
    "\x9b",
    "\u202e",
    "\u2066",
    "\u2028",
    "\udcff",
    "\udc80",
]
names = st.lists(
    st.one_of(st.text(max_size=8), st.sampled_from([*ACTIVE, "\\", '"'])), max_size=8
).map("".join)


def test_examples_the_git_way() -> None:
    assert printable("src/app.py") == "src/app.py"
    assert printable("caf\u00e9 \u65e5\u672c.txt") == "caf\u00e9 \u65e5\u672c.txt"  # text shows
    assert printable('a "quoted" \\ name') == 'a "quoted" \\ name'  # nothing to escape
    assert printable("bad\x1b[2Jname\n.txt") == '"bad\\033[2Jname\\n.txt"'
    assert printable('tab\tand "quote" \\') == '"tab\\tand \\"quote\\" \\\\"'
    assert printable("caf\udce9.txt") == '"caf\\351.txt"'  # an undecodable byte, as itself
    assert printable("abc\u202edef") == '"abc\\342\\200\\256def"'  # a bidi override
    assert printable("ring\x07 the bell", quote=False) == "ring\\a the bell"


@settings(max_examples=500, deadline=None)
@given(text=names, quote=st.booleans())
def test_nothing_a_terminal_acts_on_gets_through(text: str, quote: bool) -> None:
    shown = printable(text, quote)
    assert not unsafe().search(shown)
    shown.encode("utf-8")  # no lone surrogate: any terminal encoding takes it
    if not unsafe().search(text):
        assert shown == text


@settings(max_examples=500, deadline=None)
@given(text=names)
def test_a_quoted_name_reads_back_to_its_bytes(text: str) -> None:
    """Like git's quoted paths, the quoted form is a C string of the name's bytes."""
    shown = printable(text)
    if shown == text:
        return
    assert shown[0] == shown[-1] == '"'
    decoded = codecs.escape_decode(shown[1:-1].encode("utf-8"))[0]
    assert decoded == text.encode("utf-8", "surrogateescape")


def test_text_that_is_printable_holds_nothing_unsafe() -> None:
    """printable answers from str.isprintable first (no regex to compile on the fast paths):
    every character the pattern escapes must be one that isprintable refuses."""
    unsafe_chars = [chr(c) for c in range(0x110000) if unsafe().fullmatch(chr(c))]
    assert len(unsafe_chars) > 2048 + 64  # the surrogates, the C0 and C1 controls, the rest
    assert not any(ch.isprintable() for ch in unsafe_chars)
