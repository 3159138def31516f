"""The remote commands end to end: `snapstore` against a real S3 server (SeaweedFS).

Faults are real too: an endpoint nobody listens on, wrong keys, a missing
bucket, a proxy answering 503/429/500, SIGKILL in the middle of a push or a
pull (at the library's fault points and at random moments), and eight
workspaces pushing to one prefix at once. Each failure is one line and exit 6,
and leaves the local store and the workspace as they were.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import uuid
from collections import Counter
from pathlib import Path

from snapstore import Store
from snapstore.remote import open_object_store

from ..support import (
    CliResult,
    agent_turn,
    hermetic_env,
    snapshot,
    snapstore,
    snapstore_bin,
    wait_until,
)
from ..support.faultproxy import FaultPlan, fault_proxy
from ..support.seaweed import ACCESS_KEY, BUCKET, SECRET_KEY, free_ports

REPO = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).parents[1] / "fixtures" / "claude-code"
GIT = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t"]
PUSH_POINTS = ("push.pack", "push.index", "push.turn", "push.state")
PULL_POINTS = ("pull.fetched", "pull.commit")


def aws(**extra: str) -> dict[str, str]:
    return {
        "AWS_ACCESS_KEY_ID": ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
        "AWS_REGION": "us-east-1",
        **extra,
    }


def run(root: Path, *args: str, env: dict[str, str] | None = None) -> CliResult:
    done = snapstore(root, *args, env=hermetic_env(**(env if env is not None else aws())))
    return CliResult(done.returncode, done.stdout, done.stderr)


def workspace(path: Path, files: dict[str, str] | None = None) -> Path:
    """A git repository with one commit and a snapstore store."""
    path.mkdir(parents=True)
    for rel, text in (files or {"src/app.py": "print('hi')\n"}).items():
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        (path / rel).write_text(text)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    subprocess.run([*GIT, "-C", str(path), "add", "-A"], check=True)
    subprocess.run([*GIT, "-C", str(path), "commit", "-qm", "base"], check=True)
    assert run(path, "init").code == 0
    return path


def prefix_url() -> str:
    return f"s3://{BUCKET}/cli-{uuid.uuid4().hex[:12]}"


def add_remote(root: Path, url: str, endpoint: str, name: str = "origin") -> None:
    done = run(root, "--json", "remote", "add", name, url, "--endpoint-url", endpoint)
    assert done.code == 0, done.stderr
    assert done.json == {"name": name, "url": url, "conditional_writes": True, "auto_push": False}


def one_line(result: CliResult, code: int) -> str:
    assert result.code == code, (result.code, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("snapstore: "), result.stderr
    return lines[0]


def test_remote_add_list_remove_push_pull_json(tmp_path: Path, seaweed) -> None:
    url = prefix_url()
    a = workspace(tmp_path / "a")
    add_remote(a, url, seaweed.endpoint)
    listed = run(a, "--json", "remote", "list")
    assert listed.json == [
        {"name": "origin", "url": url, "endpoint_url": seaweed.endpoint, "auto_push": False}
    ]
    assert run(a, "begin", "--prompt", "edit the app").code == 0  # the CLI records the base
    assert run(a, "pre-write", "src/app.py").code == 0
    (a / "src" / "app.py").write_text("print('bye')\n")
    assert run(a, "post-write", "src/app.py").code == 0
    assert run(a, "end").code == 0
    pushed = run(a, "--json", "push")
    assert pushed.code == 0, pushed.stderr
    assert {k: pushed.json[k] for k in ("remote", "sessions", "turns", "blobs")} == {
        "remote": url,
        "sessions": ["default"],
        "turns": 1,
        "blobs": 2,
    }
    assert pushed.json["bytes"] > 0
    log = run(a, "--json", "remote", "log", "origin")
    assert [(e["session"], e["prompt"], e["files"]) for e in log.json] == [
        ("default", "edit the app", 1)
    ]
    fsck = run(a, "--json", "remote", "fsck", "origin")
    assert fsck.code == 0 and fsck.json["ok"] and fsck.json["turns"] == 1

    b = tmp_path / "b"
    subprocess.run(["git", "clone", "-q", str(a), str(b)], check=True)
    subprocess.run([*GIT, "-C", str(b), "commit", "-q", "--allow-empty", "-m", "later"], check=True)
    assert run(b, "init").code == 0
    add_remote(b, url, seaweed.endpoint)
    before = snapshot(b)
    pulled = run(b, "--json", "pull", "origin")
    assert pulled.code == 0, pulled.stderr
    assert (pulled.json["sessions"], pulled.json["turns"]) == (["default"], 1)
    assert "started from commit" in pulled.json["warnings"][0]  # b is one commit ahead
    assert pulled.json["bases"][0]["commit"] != pulled.json["bases"][0]["workspace"]
    assert snapshot(b) == before  # a pull never touches the workspace
    assert run(b, "--json", "remote", "remove", "origin").json == {"name": "origin"}
    assert run(b, "--json", "remote", "list").json == []


def test_bad_remotes_are_one_line_exit_6_and_change_nothing(tmp_path: Path, seaweed) -> None:
    a = workspace(tmp_path / "a")
    with Store.open(a, record_base=True) as store:
        agent_turn(store, "one", {"src/app.py": "x\n"})
    store_before = snapshot(a / ".snapstore")
    tree_before = snapshot(a)
    (port,) = free_ports(1)
    cases = {
        "unreachable": (prefix_url(), f"http://127.0.0.1:{port}", aws()),
        "wrong keys": (
            prefix_url(),
            seaweed.endpoint,
            aws(AWS_SECRET_ACCESS_KEY="not-the-secret-0123456789"),
        ),
        "missing bucket": ("s3://no-such-bucket-here/p", seaweed.endpoint, aws()),
    }
    for label, (url, endpoint, env) in cases.items():
        line = one_line(
            run(a, "remote", "add", "origin", url, "--endpoint-url", endpoint, env=env), 6
        )
        assert "origin" in line and ACCESS_KEY not in line and "secret" not in line.lower(), label
        # configured without the probe, the push fails the same way
        assert (
            run(a, "remote", "add", "origin", url, "--endpoint-url", endpoint, "--no-check").code
            == 0
        )
        one_line(run(a, "push", env=env), 6)
        one_line(run(a, "pull", env=env), 6)
        assert run(a, "remote", "remove", "origin").code == 0
    one_line(run(a, "remote", "add", "x", "ftp://nowhere"), 2)
    assert snapshot(a) == tree_before
    after = snapshot(a / ".snapstore")
    noise = ("config", "push.lock", "db/lock.mdb")  # settings, lock files, LMDB's reader table
    assert {k: v for k, v in after.items() if not k.startswith(noise)} == {
        k: v for k, v in store_before.items() if not k.startswith(noise)
    }
    assert run(a, "fsck").code == 0


def test_throttling_and_5xx_are_retried_then_reported(tmp_path: Path, seaweed) -> None:
    a = workspace(tmp_path / "a")
    url = prefix_url()
    plan = FaultPlan()
    with fault_proxy(seaweed.s3_port, plan) as endpoint:
        add_remote(a, url, endpoint)
        with Store.open(a, record_base=True) as store:
            agent_turn(store, "one", {"src/app.py": "x\n"})
        plan.reset([503, 429, 500, 503])
        done = run(a, "--json", "push")
        assert done.code == 0, done.stderr
        assert plan.injected == 4 and done.json["turns"] == 1
        plan.reset([503] * 40)  # more than the retries allow
        with Store.open(a, record_base=True) as store:
            agent_turn(store, "two", {"src/app.py": "y\n"})
        line = one_line(run(a, "push"), 6)
        assert "SlowDown" in line or "503" in line or "unavailable" in line.lower()
        plan.reset([])
        assert run(a, "--json", "push").json["turns"] == 1  # the next push completes
    assert run(a, "remote", "fsck", "origin", env=aws()).code != 0  # proxy gone: unreachable


def _child(
    action: str,
    root: Path,
    url: str,
    endpoint: str,
    record: Path,
    fault: str | None,
    delay: float | None,
) -> int:
    env = hermetic_env(**aws())
    if fault:
        env["SNAPSTORE_FAULT"] = fault
    if delay is None:
        cmd = [
            sys.executable,
            "-m",
            "tests.support.sync_child",
            action,
            str(root),
            url,
            endpoint,
            str(record),
        ]
    else:  # the real command, killed at a random moment
        cmd = [*snapstore_bin(), "--root", str(root), action, "origin", "--all"]
    child = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _, err = child.communicate(timeout=delay if delay is not None else 120)
    except subprocess.TimeoutExpired:
        child.kill()
        _, err = child.communicate()
    assert child.returncode in (0, -signal.SIGKILL), err.decode()
    return child.returncode


def test_kill_9_during_push_and_pull_loses_nothing(tmp_path: Path, seaweed, slow: bool) -> None:
    budget = 200 if slow else 56
    rng = random.Random(11)
    url = prefix_url()
    a = workspace(tmp_path / "a")
    b = workspace(tmp_path / "b")
    for root in (a, b):
        add_remote(root, url, seaweed.endpoint)
    record = tmp_path / "faults"
    kills = 0
    where: Counter[str] = Counter()
    rounds = 0
    with open_object_store(
        url, endpoint_url=seaweed.endpoint, credentials=seaweed.credentials
    ) as remote:
        while kills < budget:
            rounds += 1
            with Store.open(a, record_base=True) as store:
                agent_turn(
                    store,
                    f"round {rounds}",
                    {
                        f"f{rounds % 7}.txt": f"round {rounds} {rng.random()}\n" * 50,
                        "shared.txt": f"{rounds}\n",
                    },
                )
            for action, root, points in (("push", a, PUSH_POINTS), ("pull", b, PULL_POINTS)):
                tree = snapshot(root)
                if rng.random() < 0.7:
                    code = _child(
                        action, root, url, seaweed.endpoint, record, f"{rng.choice(points)}:1", None
                    )
                else:
                    code = _child(
                        action, root, url, seaweed.endpoint, record, None, rng.uniform(0.05, 0.8)
                    )
                kills += code == -signal.SIGKILL
                assert snapshot(root) == tree  # neither ever writes the workspace
                with Store.open(root) as store:
                    assert store.fsck().ok
                    assert store.remote_fsck(remote).ok
    if record.exists():
        where.update(record.read_text().split())
    # afterwards a push and a pull complete, and b holds every turn a made
    assert run(a, "push", "--all").code == 0
    pulled = run(b, "--json", "pull", "--all")
    assert pulled.code == 0, pulled.stderr
    with Store.open(a) as sa, Store.open(b) as sb:
        with sa.repo.read() as va, sb.repo.read() as vb:
            made = {t.id: [(c.path, c.after) for c in va.changes(t.id)] for t in va.turns()}
            got = {t: [(c.path, c.after) for c in vb.changes(t)] for t in made}
        assert made == got
    with (
        open_object_store(
            url, endpoint_url=seaweed.endpoint, credentials=seaweed.credentials
        ) as remote,
        Store.open(a) as sa,
    ):
        assert sa.remote_fsck(remote).ok
    print(
        f"\nremote crash injections: {kills} kills over {rounds} rounds; at fault points: "
        f"{dict(where)}, the rest at random moments"
    )
    assert kills >= budget
    assert set(PUSH_POINTS) | set(PULL_POINTS) <= set(where)


def test_eight_workspaces_push_to_one_prefix_at_once(tmp_path: Path, seaweed) -> None:
    url = prefix_url()
    roots = []
    made: dict[str, str] = {}
    for n in range(8):
        root = workspace(tmp_path / f"w{n}")
        add_remote(root, url, seaweed.endpoint)
        with Store.open(root, record_base=True) as store:
            for t in range(3):
                made[
                    agent_turn(
                        store,
                        f"w{n} turn {t}",
                        {"src/app.py": f"w{n} t{t}\n", "common.txt": "same\n" * 400},
                    )
                ] = f"w{n}"
        roots.append(root)
    procs = [
        subprocess.Popen(
            [*snapstore_bin(), "--json", "push"],
            cwd=root,
            env=hermetic_env(**aws()),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for root in roots
    ]
    results = [p.communicate(timeout=180) for p in procs]
    assert [p.returncode for p in procs] == [0] * 8, [err for _, err in results]
    assert sum(json.loads(out)["turns"] for out, _ in results) == 24
    fresh = workspace(tmp_path / "fresh")
    add_remote(fresh, url, seaweed.endpoint)
    pulled = run(fresh, "--json", "pull")
    assert pulled.code == 0 and pulled.json["turns"] == 24
    assert len(pulled.json["sessions"]) == 8  # eight sessions named default, told apart
    with Store.open(fresh) as store, store.repo.read() as v:
        assert {t.id for t in v.turns() if t.kind == "agent"} >= set(made)
        sessions = {v.turn(t).session for t in made}
        assert len(sessions) == 8
    assert run(fresh, "--json", "remote", "fsck").json["ok"]


def _hook(root: Path, event: str) -> None:
    raw = (FIXTURES / f"{event}.json").read_text()
    raw = raw.replace("__CWD__", str(root)).replace("__TRANSCRIPT__", str(root / "t.jsonl"))
    done = snapstore(root, "hook", "claude-code", input=raw, env=hermetic_env(**aws()))
    assert done.returncode == 0 and "snapstore:" not in done.stderr, done.stderr


def _agent_turn_by_hooks(root: Path, text: str) -> None:
    _hook(root, "user-prompt-submit")
    _hook(root, "pre-tool-use-edit")
    (root / "src" / "app.py").write_text(text)
    _hook(root, "post-tool-use-edit")
    _hook(root, "stop")


def test_automatic_push_at_turn_end_and_retry_after_a_failure(tmp_path: Path, seaweed) -> None:
    url = prefix_url()
    root = workspace(
        tmp_path / "ws", {"src/app.py": 'def greet(name):\n    return "Hello, " + name\n'}
    )
    (port,) = free_ports(1)
    assert (
        run(
            root,
            "remote",
            "add",
            "origin",
            url,
            "--endpoint-url",
            f"http://127.0.0.1:{port}",
            "--no-check",
            "--auto-push",
        ).code
        == 0
    )
    config = root / ".snapstore" / "config"
    _agent_turn_by_hooks(root, "first\n")  # its push fails: nobody listens there
    log = root / ".snapstore" / "push.log"
    wait_until(lambda: log.exists() and "snapstore:" in log.read_text(), timeout=60)
    config.write_text(config.read_text().replace(f"http://127.0.0.1:{port}", seaweed.endpoint))
    assert run(root, "config", "trust").code == 0  # edited by hand: used once the user says so
    _agent_turn_by_hooks(root, "second\n")

    def pushed() -> int:
        done = run(root, "--json", "remote", "log", "origin")
        return len(done.json) if done.code == 0 else 0

    wait_until(lambda: pushed() == 2, timeout=60)  # the failed turn went up with the next
    with Store.open(root) as store, store.repo.read() as v:
        base = v.session("claude-code/3f2b9c1e-7a4d-4e8b-9c2f-1d5e6a7b8c90").base
    assert base is not None and len(base["commit"]) == 40  # recorded once, by the first hook
    assert log.read_text().count("push origin") == 2  # one background push per turn end
