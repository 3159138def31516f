"""The operations on a store: capture, history, the rewind's plan and journal, rewind,
switch and undo, scan and watch with shell windows, gc, fsck and the session base. Each
module takes a :class:`~snapstore.core.repo.Repo`; the ``Store`` facade above calls them."""
