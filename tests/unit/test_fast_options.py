"""The fast path reads the same command lines as the Click commands it stands for.

``snapstore_cli.doors.fast`` parses ``begin``, ``end``, ``pre-write``, ``post-write`` and ``scan``,
and ``rewind``, ``undo`` and ``redo``, without Click, from its own tables. These tests hold
the tables to the Click declarations: an option added to a Click command (or to the global
options) and forgotten in the tables fails here, as does a table entry whose value lands under
another name than Click gives it, or a choice the fast path does not know.
"""

from __future__ import annotations

import click
import pytest
from snapstore_cli.doors import fast
from snapstore_cli.doors.click.app import cli

from snapstore import BadInput

#: Global flags the fast path leaves to Click (it hands over any command line holding one).
CLICK_ONLY_FLAGS = {"--debug", "--version"}
#: The options every command takes, after its name as well as before it.
COMMON_VALUES = {"--session", "-s"}


def _options(command: click.Command) -> tuple[dict[str, str], dict[str, str]]:
    """A command's options as {option string: the name Click stores its value under}: those
    taking a value, and the flags (``--help`` aside: the fast path hands it to Click)."""
    values: dict[str, str] = {}
    flags: dict[str, str] = {}
    ctx = click.Context(command, **command.context_settings)
    helps = command.get_help_option(ctx)
    for param in command.get_params(ctx):
        if isinstance(param, click.Option) and param is not helps:
            names = [*param.opts, *param.secondary_opts]
            (flags if param.is_flag else values).update(dict.fromkeys(names, param.name or ""))
    return values, flags


def _fast_name(option: str) -> str:
    """The name the fast path stores an option's value under (``fast.parse``)."""
    return fast.SHORT.get(option, option).lstrip("-").replace("-", "_")


def test_the_global_options_match() -> None:
    values, flags = _options(cli)
    assert values == fast.GLOBAL_VALUES  # every option taking a value, under Click's name
    assert set(flags) == CLICK_ONLY_FLAGS | {"--json"}


@pytest.mark.parametrize("name", sorted(fast.COMMAND_VALUES))
def test_each_commands_options_match(name: str) -> None:
    """Every option of the Click command is in the fast path's tables, under Click's name and
    with its choices, or listed as one that the fast path leaves to Click."""
    command = cli.get_command(click.Context(cli), name)
    assert command is not None
    values, flags = _options(command)
    left = set(fast.CLICK_ONLY.get(name, ()))
    assert left <= set(values) | set(flags)  # each names an option that Click has
    own = {o: d for o, d in values.items() if o not in COMMON_VALUES and o not in left}
    assert set(values) - set(own) - left == COMMON_VALUES  # --session and -s go with all
    assert {option: _fast_name(option) for option in fast.COMMAND_VALUES[name]} == own
    assert flags.pop("--json") == "json_"  # with every command, as before it
    flags = {o: d for o, d in flags.items() if o not in left}
    assert {option: _fast_name(option) for option in fast.COMMAND_FLAGS.get(name, ())} == flags
    for param in command.params:
        if isinstance(param, click.Option) and isinstance(param.type, click.Choice):
            assert all(
                tuple(param.type.choices) == fast.CHOICES[o] for o in param.opts if o not in left
            )
    arguments = [p for p in command.params if isinstance(p, click.Argument)]
    if name in fast.WITH_PATHS:
        assert [(a.name, a.nargs, a.required) for a in arguments] == [("paths", -1, True)]
    elif name in fast.ONE_ARGUMENT:
        wanted = fast.ONE_ARGUMENT[name][0]
        assert [(a.name, a.nargs) for a in arguments] == [(wanted, 1)]
    else:
        assert arguments == []


def test_the_fast_path_covers_the_capture_commands_and_the_moves() -> None:
    """Every command the fast path takes exists in Click: the capture commands, and the
    commands that move between turns and need no one to answer a question."""
    assert set(fast.COMMAND_VALUES) == {
        "begin",
        "end",
        "pre-write",
        "post-write",
        "scan",
        "rewind",
        "undo",
        "redo",
    }
    assert set(fast.WITH_PATHS) <= set(fast.COMMAND_VALUES)
    assert set(fast.ONE_ARGUMENT) <= set(fast.COMMAND_VALUES)
    assert set(fast.COMMAND_FLAGS) <= set(fast.COMMAND_VALUES)
    assert set(fast.CLICK_ONLY) <= set(fast.COMMAND_VALUES)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "[capture]\ntrack_shell = true\nmax_file_size = 10485760\n\n"
        "[remote.origin]\nurl = s3://bucket/p\nendpoint_url = http://127.0.0.1:9000\n\n"
        "[remote]\nauto_push = origin\n\n",
        "[gc]\nauto = \n",
        "# a comment\n[capture]\ntrack_shell = yes\n",  # configparser's path
        "[capture]\n  track_shell = on\n",
        "[capture]\nTrack_Shell=1\n",
        "[remote.a]\nurl = http://x/%%20\n",
    ],
)
def test_the_config_reads_as_configparser_reads_it(text: str) -> None:
    """The hook path reads snapstore's own config without configparser: same sections and
    values as configparser gives, on every form, its own output or not."""
    import configparser

    from snapstore_cli.settings.config import _sections

    parser = configparser.ConfigParser()
    parser.read_string(text)
    assert _sections("config", text.encode()) == {s: dict(parser[s]) for s in parser.sections()}


@pytest.mark.parametrize(
    "text", ["[a]\nk = v\n[a]\nj = w\n", "[a]\nk = v\nk = w\n", "[a]\nk = 50%\n", "k = v\n"]
)
def test_a_config_configparser_refuses_is_refused_with_one_line(text: str) -> None:
    from snapstore_cli.settings.config import _sections

    with pytest.raises(BadInput, match=r"^config is not a valid settings file: "):
        _sections("config", text.encode())
