"""One module per command group; ``snapstore_cli.app`` loads each on first use."""
