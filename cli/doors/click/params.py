"""Click's types for the numeric options: one line naming the option and what it takes.

Click's own ranges say "-1.0 is not in the range x>=0", about a value the user did not type
and in words that do not say what the option is for. These check with the same functions
as the environment and the settings file (``settings``), so every front end says the same.
"""

from __future__ import annotations

import click

from snapstore import BadInput

from ...settings.values import parse_number, parse_size


class Number(click.ParamType):
    """A finite number in a range; ``takes`` says what it counts ("a number of days")."""

    name = "number"

    def __init__(
        self, takes: str, *, whole: bool = False, low: float = 0, high: float = float("inf")
    ):
        self.takes, self.whole, self.low, self.high = takes, whole, low, high

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None):
        if not isinstance(value, str):  # a default
            return value
        try:
            number = parse_number(
                value, _name(param), self.takes, whole=self.whole, low=self.low, high=self.high
            )
        except BadInput as exc:
            raise click.UsageError(str(exc), ctx) from None
        return int(number) if self.whole else number


class Size(click.ParamType):
    """A size in bytes: 500MiB, 2GiB, 4096."""

    name = "size"

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None):
        if not isinstance(value, str):
            return value
        try:
            return parse_size(value, _name(param))
        except BadInput as exc:
            raise click.UsageError(str(exc), ctx) from None


def _name(param: click.Parameter | None) -> str:
    return param.opts[0] if param is not None and param.opts else "the value"
