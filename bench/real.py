"""The ``real`` workload: successive releases of a real project, replayed as agent turns.

The sdists are downloaded from the package index at bench time (its JSON API,
with the published SHA-256 checked) and cached under ``bench/.cache/``; nothing
is vendored. The first release is the base tree and each release-to-release
difference is one agent turn: changed files are rewritten, new ones created,
removed ones deleted. By default: eleven consecutive releases of Django (ten
release-to-release turns), a large pure-Python project of about 6,800 files.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tarfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any

from .tree import FILE, Version, read_version, scan_base, walk
from .workloads import SKIP, Edit, TurnPlan, Workload

PACKAGE = "django"
VERSIONS = (
    "5.1",
    "5.1.1",
    "5.1.2",
    "5.1.3",
    "5.1.4",
    "5.1.5",
    "5.1.6",
    "5.1.7",
    "5.1.8",
    "5.1.9",
    "5.1.10",
)
CACHE = os.path.join(os.path.dirname(os.path.abspath(__file__)), ".cache")
INDEX = "https://pypi.org/pypi"
TIMEOUT = 60


class Offline(Exception):
    """The package index cannot be reached (and the cache does not have what is needed)."""


def _releases(package: str) -> dict[str, list[dict[str, Any]]]:
    """Every release's files, from the index's JSON API (one request per package)."""
    try:
        with urllib.request.urlopen(f"{INDEX}/{package}/json", timeout=TIMEOUT) as response:
            return json.load(response)["releases"]
    except (urllib.error.URLError, OSError) as exc:
        raise Offline(f"cannot reach the package index for {package}: {exc}") from None


def _sdist_url(
    releases: dict[str, list[dict[str, Any]]], package: str, version: str
) -> tuple[str, str, str]:
    """The sdist's file name, URL and SHA-256."""
    for item in releases.get(version, []):
        if item.get("packagetype") == "sdist":
            # a mirror may give the URL relative to the JSON document
            url = urllib.parse.urljoin(f"{INDEX}/{package}/json", item["url"])
            return item["filename"], url, item["digests"]["sha256"]
    raise SystemExit(f"bench: {package} {version} has no sdist on the package index")


def _download(package: str, version: str, index: Callable[[], dict[str, Any]]) -> str:
    """The path of the cached sdist, downloading it (and checking its hash) when absent."""
    folder = os.path.join(CACHE, "sdists")
    os.makedirs(folder, exist_ok=True)
    marker = os.path.join(folder, f"{package}-{version}.name")
    if os.path.exists(marker):
        with open(marker, encoding="utf-8") as handle:
            path = os.path.join(folder, handle.read().strip())
        if os.path.exists(path):
            return path
    name, url, sha256 = _sdist_url(index(), package, version)
    path = os.path.join(folder, name)
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT) as response:
            data = response.read()
    except (urllib.error.URLError, OSError) as exc:
        raise Offline(f"cannot download {name}: {exc}") from None
    if hashlib.sha256(data).hexdigest() != sha256:
        raise SystemExit(f"bench: {name} does not match the SHA-256 the index publishes")
    with open(path + ".part", "wb") as handle:
        handle.write(data)
    os.replace(path + ".part", path)
    with open(marker, "w", encoding="utf-8") as handle:
        handle.write(name)
    return path


def _extract(package: str, version: str, index: Callable[[], dict[str, Any]]) -> str:
    """The release's source tree, unpacked once into the cache (top-level folder stripped)."""
    target = os.path.join(CACHE, "trees", f"{package}-{version}")
    if os.path.isdir(target):
        return target
    sdist = _download(package, version, index)
    partial = target + ".part"
    shutil.rmtree(partial, ignore_errors=True)
    with tarfile.open(sdist) as archive:
        archive.extractall(partial, filter="data")
    (top,) = os.listdir(partial)
    os.replace(os.path.join(partial, top), target)
    os.rmdir(partial)
    return target


def fetch(
    package: str = PACKAGE,
    versions: tuple[str, ...] = VERSIONS,
    progress: Callable[[str], None] | None = None,
) -> list[str]:
    """Every release tree, oldest first; raises :class:`Offline` when they cannot be had."""
    trees = []
    fetched: dict[str, Any] = {}

    def index() -> dict[str, Any]:
        if not fetched:
            fetched.update(_releases(package))
        return fetched

    for version in versions:
        if progress:
            progress(f"{package} {version}")
        trees.append(_extract(package, version, index))
    return trees


def _diff(old: str, new: str) -> list[Edit]:
    """The writes that turn tree ``old`` into tree ``new``."""
    before, after = scan_base(old, SKIP), walk(new, SKIP)
    edits = []
    for rel in sorted(set(before) | set(after)):
        if rel not in after:
            edits.append(Edit(rel, None))
            continue
        path = os.path.join(new, rel)
        version = read_version(path, after[rel])
        if version.kind != FILE:
            continue  # sdists hold no links worth replaying
        if before.get(rel) != version:
            with open(path, "rb") as handle:
                edits.append(Edit(rel, handle.read(), version.mode))
    return edits


def real_workload(trees: list[str], package: str, versions: tuple[str, ...]) -> Workload:
    def materialise(root: str) -> dict[str, Version]:
        shutil.copytree(trees[0], root, symlinks=True, dirs_exist_ok=True)
        return scan_base(root, SKIP)

    def plan(_root: str, _base: dict[str, Version]) -> list[TurnPlan]:
        return [
            TurnPlan(
                f"upgrade {package} {versions[i]} -> {versions[i + 1]}",
                _diff(trees[i], trees[i + 1]),
            )
            for i in range(len(trees) - 1)
        ]

    return Workload(
        f"real-{package}",
        {
            "workload": "real",
            "package": package,
            "versions": list(versions),
            "turns": len(trees) - 1,
        },
        materialise,
        plan,
    )
