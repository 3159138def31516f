"""Local trust, end to end with the real command: what a cloned repository brings in
`.snapstore/` is not obeyed, and the store is private.

A repository can commit `.snapstore/config` (a remote, `auto_push`, a serve port) and
`.snapstore/serve.secret`. Nothing there may make snapstore send data anywhere, or use a
secret others know, until the user says so on this machine (`snapstore config trust`);
`init` says what it found and will not use, and every command that would have used it
says so with the fix. The store holds the bytes of every file the agent edited (a 0600
`.env` too), so its folders are 0700 and its files 0600 whatever the umask.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from ..support import CliResult, claude_event, wait_until, write


def cloned(root: Path, files: dict[str, str]) -> Path:
    """What a clone brings: files in `.snapstore/` that snapstore did not write here."""
    store = root / ".snapstore"
    store.mkdir()
    for name, text in files.items():
        (store / name).write_text(text)
    return store


def hook_turn(cli, root: Path, rel: str, content: str) -> list[CliResult]:
    """One agent turn through the real hook command: prompt, a Write of ``rel``, stop."""
    pre = claude_event(root, "pre-tool-use-write", rel, tool_use_id=f"toolu_{rel}")
    post = claude_event(root, "post-tool-use-write", rel, tool_use_id=f"toolu_{rel}")
    results = [cli("hook", "claude-code", input=claude_event(root, "user-prompt-submit").decode())]
    results.append(cli("hook", "claude-code", input=pre.decode()))
    write(root, rel, content)
    results.append(cli("hook", "claude-code", input=post.decode()))
    results.append(cli("hook", "claude-code", input=claude_event(root, "stop").decode()))
    assert [r.code for r in results] == [0, 0, 0, 0], [r.stderr for r in results]
    return results


def pushed_turns(cli) -> int:
    done = cli("--json", "remote", "log")
    return len(done.json) if done.code == 0 else 0


def test_a_cloned_config_sends_nothing_until_the_user_trusts_it(
    cli, root: Path, tmp_path: Path
) -> None:
    bucket = tmp_path / "someone-elses-bucket"
    bucket.mkdir()
    url = bucket.as_uri()
    store = cloned(
        root,
        {
            "config": f"[remote.origin]\nurl = {url}\n\n[remote]\nauto_push = origin\n\n"
            "[serve]\nport = 8080\n"
        },
    )
    write(root, ".env", "API_KEY=mine\n")
    init = cli("init")
    assert init.code == 0, init.stderr
    lines = init.stderr.splitlines()
    assert (
        f"Found {store / 'config'}, not written by snapstore for you here: not used until you "
        "review it and run `snapstore config trust`"
    ) in lines
    assert f"  not used: remote origin ({url})" in lines
    assert "  not used: auto_push = origin (a push at every turn's end)" in lines
    assert "  not used: serve port 8080" in lines
    assert len(cli("--json", "init").json["not_used"]) == 4

    # the agent edits .env: the turn is recorded, nothing is pushed, and the hook says why
    turn = hook_turn(cli, root, ".env", "API_KEY=changed by the agent\n")
    assert "`snapstore config trust`" in turn[-1].stderr
    assert "`snapstore config trust`" in (store / "hook.log").read_text()
    assert not (store / "push.log").exists() and list(bucket.iterdir()) == []
    for args in (("push",), ("pull", "origin"), ("remote", "list"), ("remote", "log")):
        done = cli(*args)
        assert done.code == 2, (args, done.stderr)
        assert "was not written by snapstore for you here" in done.stderr
        assert "`snapstore config trust`" in done.stderr
    assert list(bucket.iterdir()) == []

    # the user reads it and says so: from now on it is theirs, auto_push included
    trusted = cli("config", "trust")
    assert trusted.code == 0, trusted.stderr
    assert f"Trusted {store / 'config'}" in trusted.stdout
    assert f"  remote origin ({url})" in trusted.stdout.splitlines()
    assert cli("push").code == 0 and pushed_turns(cli) == 1
    hook_turn(cli, root, ".env", "API_KEY=changed again\n")
    wait_until(lambda: pushed_turns(cli) == 2, timeout=60)
    assert "push origin" in (store / "push.log").read_text()


def test_no_change_adopts_a_cloned_config(cli, root: Path, tmp_path: Path) -> None:
    """snapstore's own writes to an unused config are refused, so that no command records
    someone else's settings as the user's; the file stays as it came."""
    store = cloned(root, {"config": "[remote.origin]\nurl = file:///elsewhere\n"})
    assert cli("init").code == 0
    before = (store / "config").read_bytes()
    (tmp_path / "mine").mkdir()
    for args in (
        ("remote", "add", "mine", (tmp_path / "mine").as_uri()),
        ("remote", "remove", "origin"),
        ("serve", "--port", "9000"),
        ("init", "--track-shell"),
    ):
        done = cli(*args)
        assert done.code == 2 and "`snapstore config trust`" in done.stderr, (args, done.stderr)
        assert (store / "config").read_bytes() == before


def test_a_cloned_config_that_does_not_parse_stops_nothing(cli, root: Path) -> None:
    """Not used either way: a clone cannot break the user's commands or hooks with it."""
    store = cloned(root, {"config": "[capture\ntrack_shell = maybe\n"})
    init = cli("init")
    assert init.code == 0 and f"Found {store / 'config'}" in init.stderr
    hook_turn(cli, root, "src/app.py", "print('hi')\n")
    assert cli("--json", "log").json[0]["files"] == 1


def test_a_config_edited_by_hand_waits_for_the_users_word(cli, root: Path, tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    assert cli("init").code == 0
    assert cli("remote", "add", "origin", first.as_uri(), "--auto-push").code == 0
    listed = cli("--json", "remote", "list")
    assert listed.json == [
        {"name": "origin", "url": first.as_uri(), "endpoint_url": None, "auto_push": True}
    ]
    config = root / ".snapstore" / "config"
    config.write_text(config.read_text().replace(first.as_uri(), second.as_uri()))
    turn = hook_turn(cli, root, "src/app.py", "print('hi')\n")
    assert "`snapstore config trust`" in turn[-1].stderr and list(second.iterdir()) == []
    refused = cli("push")
    assert refused.code == 2 and "`snapstore config trust`" in refused.stderr
    assert list(second.iterdir()) == []
    assert cli("config", "trust").code == 0
    assert cli("push").code == 0 and any(second.iterdir())


def test_a_cloned_serve_secret_is_never_used(cli, root: Path) -> None:
    """Everyone who cloned the repository knows it: serve and the HTTP hooks' install refuse
    it with the fix, and once it is removed a new one is made."""
    known = "0" * 64
    store = cloned(root, {"serve.secret": known + "\n"})
    init = cli("init")
    assert f"Found {store / 'serve.secret'}, not made by snapstore for you here" in init.stderr
    for args in (("serve", "--detach"), ("hook", "install", "claude-code", "--http")):
        done = cli(*args)
        assert done.code == 2, (args, done.stderr)
        assert "remove it" in done.stderr and "serve.secret" in done.stderr
    assert not (root / ".claude" / "settings.local.json").exists()
    (store / "serve.secret").unlink()
    started = cli("--json", "serve", "--detach")
    assert started.code == 0, started.stderr
    try:
        made = (store / "serve.secret").read_text().strip()
        assert len(made) == 64 and made != known
    finally:
        assert cli("serve", "--stop").code == 0


def modes(store: Path) -> dict[str, str]:
    """Each folder and file of the store (the store itself as '.'), with its mode."""
    found = {".": oct(stat.S_IMODE(store.stat().st_mode))}
    for path in store.rglob("*"):
        found[str(path.relative_to(store))] = oct(stat.S_IMODE(path.lstat().st_mode))
    return found


def private(store: Path) -> dict[str, str]:
    """What each folder and file of the store should be: 0700 and 0600."""
    return {name: oct(0o700 if (store / name).is_dir() else 0o600) for name in modes(store)}


@pytest.mark.parametrize("umask", [0o022, 0o000])
def test_the_store_is_private_whatever_the_umask(
    cli, root: Path, tmp_path: Path, umask: int
) -> None:
    bucket = tmp_path / "bucket"
    bucket.mkdir()
    write(root, ".env", "API_KEY=mine\n")
    (root / ".env").chmod(0o600)
    before = os.umask(umask)  # the commands below inherit it
    try:
        assert cli("init").code == 0
        hook_turn(cli, root, ".env", "API_KEY=changed by the agent\n")
        assert cli("hook", "claude-code", input="{ not json").code == 0  # hook.log
        assert cli("remote", "add", "origin", bucket.as_uri()).code == 0  # config
        assert cli("push").code == 0  # push.lock
        assert cli("pull", "--all").code == 0  # remote-cache/
        assert cli("serve", "--detach").code == 0  # serve.secret, serve.lock, serve.log
        assert cli("serve", "--stop").code == 0
        assert cli("gc", "--keep-days", "0").code == 0  # a compacted data.mdb
    finally:
        os.umask(before)
    store = root / ".snapstore"
    found = modes(store)
    for name in (
        "db/data.mdb",
        "db/lock.mdb",
        "write.lock",
        "open.lock",
        "config",
        "hook.log",
        "push.lock",
        "serve.secret",
        "serve.lock",
        "serve.log",
        "remote-cache",
    ):
        assert name in found
    assert found == private(store)


def test_an_older_store_is_made_private_when_it_is_next_opened(cli, root: Path) -> None:
    """A store made before stores were private (or whose folder came with a clone)."""
    assert cli("init").code == 0
    hook_turn(cli, root, "src/app.py", "print('hi')\n")
    store = root / ".snapstore"
    for path in [store, *store.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    assert cli("status").code == 0
    assert modes(store) == private(store)


def test_two_trusts_at_once_keep_both_files_trusted(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A daemon trusting its new serve.secret while `hook install` trusts the config: the
    record holds both, so each read, change and write of it must be whole. Here the first
    trust stops for a while between reading the record and writing it; the second runs in
    that window, and must not be lost when the first writes."""
    import threading
    import time

    from snapstore_cli.settings import trust as settings

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    store = root / ".snapstore"
    store.mkdir()
    (store / "config").write_text("[capture]\n")
    (store / "serve.secret").write_text("0" * 64 + "\n")
    real_record = settings._read
    first = threading.Event()

    def slow_record(path: str) -> dict[str, str]:
        record = real_record(path)
        if not first.is_set():  # the first trust only
            first.set()
            time.sleep(0.3)
        return record

    monkeypatch.setattr(settings, "_read", slow_record)
    secret = threading.Thread(target=settings.trust, args=(str(store), "serve.secret"))
    secret.start()
    assert first.wait(5)
    settings.trust(str(store), "config")  # in the first one's window
    secret.join()
    monkeypatch.setattr(settings, "_read", real_record)
    assert settings.trusted(str(store), "config") and settings.trusted(str(store), "serve.secret")


@pytest.mark.parametrize("name", ["config", "serve.secret"])
def test_a_file_read_while_snapstore_writes_it_is_never_a_strangers(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """A hook reads the config while the daemon records its port in it (or the secret as the
    daemon makes it): the file is replaced, then recorded. A read that falls between the two
    waits for the record and finds the file snapstore's, as a real agent's parallel hooks
    once did not ("was not written by snapstore for you")."""
    import threading
    import time

    from snapstore_cli.doors import daemon
    from snapstore_cli.settings import config
    from snapstore_cli.settings import trust as settings

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    store = root / ".snapstore"
    store.mkdir()
    config.set_serve_port(str(store), 1111)  # the first write, recorded
    writer = threading.Thread(
        target=config.set_serve_port if name == "config" else daemon.secret,
        args=(str(store), 2222) if name == "config" else (str(store),),
    )
    real_read, replaced = settings._read, threading.Event()

    def in_place() -> bool:  # the new file is there: the writer is between its two steps
        if name == "config":
            return "2222" in (store / "config").read_text()
        return (store / name).exists()

    def slow_read(path: str) -> dict[str, str]:
        if threading.current_thread() is writer and not replaced.is_set() and in_place():
            replaced.set()  # trust(): the file is in place, the record not yet written
            time.sleep(0.5)
        return real_read(path)

    monkeypatch.setattr(settings, "_read", slow_read)
    writer.start()
    assert replaced.wait(5)
    if name == "config":
        loaded = config.Config.load(str(store))
        assert loaded.refused is None and loaded.serve_port == 2222
    else:
        assert settings.trusted(str(store), name)
    writer.join()


def _state(tmp_path: Path) -> tuple[dict[str, str], Path]:
    state = tmp_path / "state"
    return {"XDG_STATE_HOME": str(state)}, state / "snapstore" / "trusted"


@pytest.mark.parametrize("how", ["writable by others", "a symlink", "another user's"])
def test_a_trust_folder_others_could_write_is_never_used(
    cli, root: Path, tmp_path: Path, how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from snapstore_cli.settings.config import Config

    env, trusted = _state(tmp_path)
    monkeypatch.setenv("XDG_STATE_HOME", env["XDG_STATE_HOME"])
    assert cli("init", "--no-track-shell", env=env).code == 0
    assert cli("--json", "hook", "install", "claude-code", env=env).code == 0  # writes the config
    assert "track_shell = true" in (root / ".snapstore" / "config").read_text()
    assert Config.load(str(root / ".snapstore")).track_shell  # trusted: scan mode is on
    if how == "writable by others":
        trusted.chmod(0o777)
    elif how == "a symlink":
        elsewhere = tmp_path / "elsewhere"
        trusted.rename(elsewhere)
        trusted.symlink_to(elsewhere)
    else:
        os.chown(trusted, 65534, 65534)  # nobody's: the tests run as root, which may chown
    config = Config.load(str(root / ".snapstore"))  # no record is read from there
    assert not config.track_shell and "not written by snapstore" in (config.refused or "")
    refused = cli("config", "trust", env=env)
    assert refused.code == 2
    why = {"writable by others": "writable by others", "a symlink": "is not a folder"}
    assert why.get(how, "belongs to another user") in refused.stderr
    assert refused.stderr.count("\n") == 1


def test_records_of_stores_that_are_gone_are_pruned(cli, root: Path, tmp_path: Path) -> None:
    env, trusted = _state(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    assert cli("init", env=env, cwd=other).code == 0
    assert cli("init", env=env).code == 0
    records = {p.name for p in trusted.iterdir()}
    assert len([n for n in records if not n.endswith(".lock")]) == 2
    import shutil

    shutil.rmtree(other / ".snapstore")
    assert cli("config", "trust", env=env).code == 0  # any write of a record prunes
    left = [p.name for p in trusted.iterdir()]
    assert len(left) == 2 and {n.removesuffix(".lock") for n in left} == {left[0][:32]}


def test_init_works_when_the_state_folder_cannot_be_written(
    cli, root: Path, tmp_path: Path
) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    done = cli("--json", "init", env={"XDG_STATE_HOME": str(blocked)})
    assert done.code == 0, done.stderr
    [warning] = done.json["warnings"]
    assert "scan mode is off" in warning and "XDG_STATE_HOME" in warning
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("snapstore: cannot record")
    assert (root / ".snapstore").is_dir()
    # the store works: a turn is recorded and rewound
    assert cli("begin", "--prompt", "p", env={"XDG_STATE_HOME": str(blocked)}).code == 0
