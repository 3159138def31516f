"""Where a workspace's repository keeps its state, in the layouts git itself uses.

- a plain repository: ``ROOT/.git`` is a folder, holding everything;
- a linked worktree (``git worktree add``, the usual layout for agents run side by
  side) or a submodule: ``ROOT/.git`` is a file, ``gitdir: PATH``, naming the folder
  that holds the worktree's own HEAD and index. Its ``commondir`` file, if any, names
  the folder shared with the main checkout: refs, packed-refs, config, the stash;
- ``GIT_DIR`` (the command line passes it: the library reads no environment), with
  the work tree from ``core.worktree`` or the workspace itself.

The workspace is the repository's work tree, or it is no repository to snapstore: a
workspace in a subfolder of a checkout, a bare repository and a ``core.worktree`` that
names another folder are left alone. What cannot be read safely is refused with
:class:`~snapstore.core.errors.GitRefused`, so that the files are handled as ever and
the git half says why it was not: a ``.git`` that is a symlink, a ``HEAD`` that is one,
a repository that keeps its refs in a reftable.
"""

# No ``from __future__ import annotations`` and no NamedTuple here: this module is on the
# hook path (a turn's edges), where either costs milliseconds of start-up (core/records.py).

import os
import stat

from ..core.errors import GitRefused

#: The most of a small file of git's that is read (``.git``, ``commondir``, ``HEAD``, a
#: loose ref, ``config``): anything longer is not one.
SMALL_FILE = 1024 * 1024
_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC


class Layout:
    """The folders of one repository, as absolute real paths."""

    __slots__ = ("common_dir", "dot", "git_dir", "oid_size", "work_tree")

    def __init__(
        self, git_dir: str, common_dir: str, work_tree: str, oid_size: int = 40, dot: str = ""
    ):
        self.git_dir = git_dir  # the worktree's own: HEAD, index, logs/HEAD
        self.common_dir = common_dir  # shared: refs, packed-refs, config, logs/refs/stash
        self.work_tree = work_tree
        self.oid_size = oid_size  # hex digits of an object id: 40 (SHA-1) or 64 (SHA-256)
        self.dot = dot or git_dir  # what names the repository: ROOT/.git, or GIT_DIR


def open_regular(path: str, limit: int, what: str, cap: str) -> int | None:
    """A descriptor on the regular file ``path``, never opened through a symlink (None:
    absent); one that cannot be opened, that is no regular file, or that is over ``limit``
    bytes is refused, naming it as ``what`` and the limit as ``cap``."""
    try:
        fd = os.open(path, _FLAGS)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise GitRefused(f"cannot read {what}: {exc.strerror}", path=path) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise GitRefused(f"{what} is not a regular file", path=path)
        if st.st_size > limit:
            raise GitRefused(f"{what} is {st.st_size} bytes, over {cap}", path=path)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_small(path: str, limit: int = SMALL_FILE) -> bytes | None:
    """A small file's bytes, never through a symlink (None: absent). A symlink, a file
    that is no regular file, or one over ``limit`` is refused."""
    fd = open_regular(path, limit, path, f"the {limit} bytes snapstore reads")
    if fd is None:
        return None
    try:
        with os.fdopen(os.dup(fd), "rb") as handle:
            return handle.read(limit + 1)[:limit]
    finally:
        os.close(fd)


def find(root: str, git_dir: str | None = None) -> Layout | None:
    """The repository whose work tree is ``root`` (a real path), or None when there is
    none. ``git_dir`` is ``GIT_DIR``, when the agent's environment names one."""
    if git_dir is None:
        dot = os.path.join(root, ".git")
        try:
            st = os.lstat(dot)
        except FileNotFoundError:
            return None
        if stat.S_ISLNK(st.st_mode):
            raise GitRefused(
                f"{dot} is a symlink (to {os.readlink(dot)}); snapstore does not follow it",
                path=dot,
            )
        if stat.S_ISDIR(st.st_mode):
            found = dot
        elif stat.S_ISREG(st.st_mode):
            found = _gitfile(dot, root)
        else:
            raise GitRefused(f"{dot} is neither a folder nor a file", path=dot)
    else:
        found = os.path.realpath(os.path.join(root, git_dir))
    layout = _layout(root, found, git_dir is not None)
    if layout is not None and git_dir is None:
        layout.dot = os.path.join(root, ".git")
    return layout


def _gitfile(dot: str, root: str) -> str:
    """The folder a ``.git`` file names (``gitdir: PATH``, relative to the work tree)."""
    text = (read_small(dot, 4096) or b"").decode("utf-8", "replace")
    first = text.splitlines()[0] if text else ""
    if not first.startswith("gitdir: "):
        raise GitRefused(f"{dot} is a file that names no git folder", path=dot)
    return os.path.realpath(os.path.join(root, first[len("gitdir: ") :]))


def _layout(root: str, git_dir: str, given: bool) -> Layout | None:
    if not os.path.isdir(git_dir):
        raise GitRefused(f"{git_dir} is not a git folder", path=git_dir)
    head = os.path.join(git_dir, "HEAD")
    if os.path.islink(head):
        raise GitRefused(f"{head} is a symlink; snapstore does not follow it", path=head)
    common = read_small(os.path.join(git_dir, "commondir"), 4096)
    common_dir = git_dir
    if common is not None:
        common_dir = os.path.realpath(os.path.join(git_dir, os.fsdecode(common.strip())))
    if not os.path.isfile(head) or not os.path.isdir(os.path.join(common_dir, "refs")):
        return None  # no repository (git would not take it for one either)
    config = parse_config(read_small(os.path.join(common_dir, "config")) or b"")
    if config.get("extensions.worktreeconfig", "").lower() in ("true", "yes", "on", "1"):
        config.update(parse_config(read_small(os.path.join(git_dir, "config.worktree")) or b""))
    storage = config.get("extensions.refstorage", "files").lower()
    if storage != "files":
        raise GitRefused(
            f"the repository keeps its refs in a {storage}, which snapstore does not read",
            path=git_dir,
        )
    work_tree = root
    if "core.worktree" in config and common is None:  # a linked worktree's is its own
        work_tree = os.path.realpath(os.path.join(git_dir, config["core.worktree"]))
    elif config.get("core.bare", "").lower() in ("true", "yes", "on", "1") and not given:
        return None  # a bare repository has no work tree to be
    if work_tree != root:
        return None  # the workspace is not this repository's work tree
    fmt = config.get("extensions.objectformat", "sha1").lower()
    return Layout(git_dir, common_dir, work_tree, 64 if fmt == "sha256" else 40)


def parse_config(data: bytes) -> dict[str, str]:
    """The ``section.key`` values of a git config file (keys lowercased; subsections and
    includes are not followed: only ``core`` and ``extensions`` are asked for). The last
    value of a key wins, as in git."""
    found: dict[str, str] = {}
    section = ""
    lines = data.decode("utf-8", "replace").splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        i += 1
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            name = line[1 : line.find("]")] if "]" in line else ""
            section = "" if '"' in name or "." in name else name.strip().lower()
            continue
        while line.endswith("\\") and i < len(lines):  # a value continued on the next line
            line = line[:-1] + lines[i].strip()
            i += 1
        key, eq, value = line.partition("=")
        if section:
            found[f"{section}.{key.strip().lower()}"] = _value(value) if eq else "true"
    return found


def _value(text: str) -> str:
    """A config value: quotes removed, escapes read, a comment outside quotes cut."""
    out: list[str] = []
    quoted = False
    chars = iter(text.strip())
    for c in chars:
        if c == '"':
            quoted = not quoted
        elif c == "\\":
            nxt = next(chars, "")
            out.append({"n": "\n", "t": "\t", "b": "\b"}.get(nxt, nxt))
        elif c in "#;" and not quoted:
            break
        else:
            out.append(c)
    return "".join(out).strip()


def exclude(layout: Layout, line: str) -> bool:
    """Add ``line`` to the repository's ``info/exclude`` (in the common folder, which git
    reads for every worktree); False when it is there already."""
    info = os.path.join(layout.common_dir, "info")
    path = os.path.join(info, "exclude")
    text = (read_small(path) or b"").decode("utf-8", "replace")
    if line in text.splitlines():
        return False
    os.makedirs(info, exist_ok=True)
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(("" if not text or text.endswith("\n") else "\n") + line + "\n")
    return True
