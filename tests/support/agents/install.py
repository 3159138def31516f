"""Install pinned agent CLIs from the npm registry into a cache outside the repository.

Each CLI goes to `<cache>/<package>@<version>/` (the cache is `$SNAPSTORE_TEST_AGENTS_CACHE`, or
`~/.cache/snapstore-test-agents`), is reused between runs, and is installed under a lock file so
that two pytest processes never install the same package at once. An install goes to a temporary
prefix first and is renamed into place when npm succeeded, so a killed install leaves no half tree.

Run `python -m tests.support.agents.install [AGENT ...]` to fill the cache and print the time
each took.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from ..reaper import die_with_parent

CACHE_ENV = "SNAPSTORE_TEST_AGENTS_CACHE"
INSTALL_TIMEOUT = 600.0  # seconds for one `npm install`; a cold Copilot or opencode is ~100 MB


@dataclass(frozen=True)
class Pin:
    """One agent CLI: its npm package, the version tested, and its command inside the package."""

    package: str
    version: str
    bin: str  # the executable's name in node_modules/.bin
    # variables naming folders inside the install (made there by a first `--version` run):
    # Copilot unpacks 235 MB into $COPILOT_PKG_CACHE_HOME on its first start, else into each
    # test's fresh home folder
    caches: tuple[str, ...] = ()

    @property
    def slug(self) -> str:
        return f"{self.package.replace('/', '+')}@{self.version}"


PINS: dict[str, Pin] = {
    "claude-code": Pin("@anthropic-ai/claude-code", "2.1.332", "claude"),
    "gemini-cli": Pin("@google/gemini-cli", "0.61.0", "gemini"),
    "codex": Pin("@openai/codex", "0.171.0", "codex"),
    "qwen-code": Pin("@qwen-code/qwen-code", "0.24.4", "qwen"),
    "copilot": Pin("@github/copilot", "1.0.102", "copilot", ("COPILOT_PKG_CACHE_HOME",)),
    "opencode": Pin("opencode-ai", "1.18.33", "opencode"),
    "cline": Pin("cline", "3.0.65", "cline"),
    "auggie": Pin("@augmentcode/auggie", "0.36.0", "auggie"),
}


class InstallError(RuntimeError):
    """npm could not install a CLI; the message says why in one or two lines."""


def cache_dir() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "snapstore-test-agents")


def cache_env(pin: Pin, exe: Path) -> dict[str, str]:
    """The variables that point the CLI at the caches inside its install."""
    prefix = exe.parent.parent.parent
    return {var: str(prefix / var.lower()) for var in pin.caches}


def installed_bin(pin: Pin, cache: Path | None = None) -> Path | None:
    """The CLI's executable if it is already in the cache, else None."""
    prefix = (cache or cache_dir()) / pin.slug
    exe = prefix / "node_modules" / ".bin" / pin.bin
    return exe if (prefix / ".complete").exists() and exe.exists() else None


def install(agent: str, cache: Path | None = None, timeout: float = INSTALL_TIMEOUT) -> Path:
    """Return the path of AGENT's CLI, installing its pinned version first if needed."""
    pin = PINS[agent]
    cache = cache or cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    if exe := installed_bin(pin, cache):
        return exe
    with open(cache / f"{pin.slug}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be installing it right now
        if exe := installed_bin(pin, cache):
            return exe
        final = cache / pin.slug
        tmp = cache / f"{pin.slug}.tmp-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(final, ignore_errors=True)  # an old incomplete tree
        tmp.mkdir()
        _npm_install(pin, tmp, timeout)
        if pin.caches:
            _warm_up(pin, tmp)
        (tmp / ".complete").write_text(f"{pin.package}@{pin.version}\n")
        tmp.rename(final)
    exe = installed_bin(pin, cache)
    if exe is None:
        raise InstallError(
            f"npm installed {pin.package}@{pin.version} but it has no `{pin.bin}` command"
        )
    return exe


def _npm_install(pin: Pin, prefix: Path, timeout: float) -> None:
    npm = shutil.which("npm")
    if npm is None:
        raise InstallError("npm is not on PATH: install Node.js 20 or newer to run the agent tests")
    cmd = [
        npm,
        "install",
        "--prefix",
        str(prefix),
        "--no-audit",
        "--no-fund",
        "--no-save",
        "--loglevel=error",
        "--fetch-retries=1",
        "--fetch-timeout=60000",
        f"{pin.package}@{pin.version}",
    ]
    env = {**os.environ, "npm_config_update_notifier": "false"}
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        start_new_session=True,
        preexec_fn=die_with_parent(),
    )
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        shutil.rmtree(prefix, ignore_errors=True)
        raise InstallError(
            f"npm install {pin.package}@{pin.version} took more than "
            f"{timeout:.0f} s; is the npm registry reachable?"
        ) from None
    if proc.returncode != 0:
        shutil.rmtree(prefix, ignore_errors=True)
        raise InstallError(
            f"npm install {pin.package}@{pin.version} failed (exit {proc.returncode}): {_why(out)}"
        )


def _warm_up(pin: Pin, prefix: Path) -> None:
    exe = prefix / "node_modules" / ".bin" / pin.bin
    home = prefix / "warm-up-home"
    home.mkdir()
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), **cache_env(pin, exe)}
    proc = subprocess.run(
        [str(exe), "--version"], env=env, capture_output=True, text=True, timeout=300
    )
    shutil.rmtree(home, ignore_errors=True)
    if proc.returncode != 0:
        raise InstallError(f"{pin.bin} --version failed after install: {proc.stderr[-300:]}")


def _why(npm_output: str) -> str:
    """One line saying why npm failed, e.g. `request to https://registry.npmjs.org/... failed,
    reason: getaddrinfo ENOTFOUND registry.npmjs.org (ENOTFOUND: is the npm registry
    reachable?)`."""
    lines = [ln.removeprefix("npm error").strip() for ln in npm_output.splitlines()]
    code = next(
        (ln.split()[1] for ln in lines if ln.startswith("code ") and len(ln.split()) > 1), ""
    )
    reason = next((ln.split("FetchError: ", 1)[1] for ln in lines if "FetchError: " in ln), "")
    if code in ("E404", "ETARGET"):
        return f"{code}: the npm registry has no such package or version"
    if (
        reason
        or code.startswith(("ECONN", "ENOTFOUND", "ETIMEDOUT", "EAI_", "ENETUNREACH"))
        or any(ln.startswith("network") for ln in lines)
    ):
        what = f"{reason} ({code})" if reason else f"npm error {code or 'network'}"
        return f"{what}: is the npm registry reachable?"
    useful = [ln for ln in lines if ln and not ln.startswith(("A complete log", "at "))]
    return " / ".join(useful[-3:]) or "no output"


def main(argv: list[str]) -> int:
    agents = argv or list(PINS)
    for agent in agents:
        pin = PINS[agent]
        cached = installed_bin(pin) is not None
        t0 = time.monotonic()
        try:
            exe = install(agent)
        except InstallError as e:
            print(f"{agent}: {e}", file=sys.stderr)
            return 1
        size = sum(
            f.stat().st_size
            for f in (cache_dir() / pin.slug).rglob("*")
            if f.is_file() and not f.is_symlink()
        )
        print(
            f"{agent:12} {pin.package + '@' + pin.version:32} {'cached' if cached else 'cold':6} "
            f"{time.monotonic() - t0:6.1f} s  {size / 2**20:6.0f} MiB  {exe}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
