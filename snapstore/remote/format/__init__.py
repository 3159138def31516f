"""The remote's format: the layout of its objects (config, packs, indexes, turn records),
objects read against their digests, and the catalog that reads a remote through it."""
