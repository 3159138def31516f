"""The config command: ``snapstore config trust``, the user's word that the store's settings
files are theirs (snapstore_cli.settings: a config this user did not write here is not used).
"""

from __future__ import annotations

import os

import click

from ....output.rich import console, printable
from ....settings.config import Config
from ....settings.trust import CONFIG_FILE, SETTINGS_FILES, trust
from ..app import common_options, emit, options


@click.group()
def config() -> None:
    """The store's settings file (<store>/config)."""


@config.command("trust")
@common_options
def trust_command() -> None:
    """Use the store's config and serve.secret as they are now, on this machine.

    snapstore uses only settings files it wrote for you here: a config that came
    with a clone, a copy or a hand edit is ignored (remotes, auto_push, serve,
    scan, gc) until you have read it and run this.
    """
    opts = options()
    with opts.open_store() as store:
        store_dir = store.store_dir
    present = [name for name in SETTINGS_FILES if os.path.exists(os.path.join(store_dir, name))]
    before = Config.load(store_dir)
    settings = (before.found or before).describe()
    trust(store_dir, *SETTINGS_FILES)
    files = [os.path.join(store_dir, name) for name in present]

    def human() -> None:
        out = console()
        if not files:
            out.print(f"{printable(store_dir)} has no settings file: nothing to trust")
        for name, path in zip(present, files, strict=True):
            out.print(f"Trusted {printable(path)}", soft_wrap=True)
            for line in settings if name == CONFIG_FILE else ():
                out.print(f"  {printable(line, quote=False)}", soft_wrap=True, markup=False)

    emit({"store": store_dir, "trusted": files, "settings": settings}, human)
