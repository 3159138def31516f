"""The workspace's git repository, read straight from its files (and moved with git).

A turn records what the agent's git commands did to the repository: HEAD, the refs
that moved, the index and the stash's reflog (docs/design.md, "Git state in a turn").
The hook path reads them without starting a process: :mod:`.layout` finds where the
repository keeps them (a ``.git`` folder, a linked worktree's ``.git`` file, a
submodule's, ``GIT_DIR`` with ``core.worktree``), :mod:`.files` reads them behind
stat fingerprints, and :mod:`.index` compares two indexes by what they stage. Only
a rewind moves anything, through git itself (:mod:`.moves`: ``git update-ref
--stdin``, one transaction with old values checked) and git's own lock files.
"""
