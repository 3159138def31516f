"""The S3 transport's faults against a real server: SeaweedFS, alone or behind a fault proxy.

Unreachable endpoints, refused credentials, missing buckets, throttling and 5xx
answers, a server that ignores conditional writes, the AWS credential chain,
and the promise that the S3 client stays out of every process that does not
open an S3 remote.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from snapstore_cli.operations.failures import exit_code

from snapstore.remote import (
    AwsChain,
    MissingBucket,
    RemoteDenied,
    RemoteUnavailable,
    RemoteUnreachable,
    S3Credentials,
    from_environment,
    open_object_store,
    region_from_environment,
)

from ..support.faultproxy import FaultPlan, fault_proxy
from ..support.seaweed import ACCESS_KEY, BUCKET, FAST_RETRY, SECRET_KEY, Seaweed, free_ports


def _url() -> str:
    return f"s3://{BUCKET}/t-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def proxied(seaweed: Seaweed) -> Iterator[tuple[FaultPlan, str]]:
    """A fault-injecting proxy in front of the real server: (its plan, its endpoint)."""
    plan = FaultPlan()
    with fault_proxy(seaweed.s3_port, plan) as endpoint:
        yield plan, endpoint


def test_unreachable_endpoint():
    (port,) = free_ports(1)  # nothing listens there
    store = open_object_store(
        _url(),
        endpoint_url=f"http://127.0.0.1:{port}",
        credentials=S3Credentials(ACCESS_KEY, SECRET_KEY),
        retry=FAST_RETRY,
    )
    for call in (lambda: store.get("k"), lambda: store.put("k", b"x"), store.check):
        with pytest.raises(RemoteUnreachable) as caught:
            call()
        err = caught.value
        assert exit_code(err) == 6 and err.code == "remote_unreachable"
        assert f"127.0.0.1:{port}" in str(err) and "cannot connect" in str(err)


@pytest.mark.parametrize(
    ("credentials", "code"),
    [
        (S3Credentials(ACCESS_KEY, "not-the-secret-at-all"), "SignatureDoesNotMatch"),
        (S3Credentials("UNKNOWNKEY", "not-the-secret-at-all"), "InvalidAccessKeyId"),
    ],
)
def test_wrong_credentials_are_refused(seaweed: Seaweed, credentials: S3Credentials, code: str):
    good = seaweed.store(_url())
    good.put("k", b"data")
    bad = seaweed.store(good.url, credentials=credentials, retry=FAST_RETRY)
    for call in (
        lambda: bad.get("k"),
        lambda: bad.put("k", b"evil"),
        lambda: list(bad.list()),
        bad.check,
    ):
        with pytest.raises(RemoteDenied) as caught:
            call()
        err = caught.value
        assert exit_code(err) == 6 and err.detail == code
        assert "credentials refused" in str(err)
        assert credentials.secret_access_key not in str(err)
        assert credentials.secret_access_key not in repr(err.__dict__)
    assert good.get("k") == b"data"  # nothing was overwritten
    assert credentials.secret_access_key not in repr(credentials)


def test_permission_missing_is_access_denied(seaweed: Seaweed):
    """The read-only identity may read and list, not write."""
    writer = seaweed.store(_url())
    writer.put("k", b"data")
    reader = seaweed.store(writer.url, credentials=seaweed.reader, retry=FAST_RETRY)
    assert reader.get("k") == b"data"
    assert [i.key for i in reader.list()] == ["k"]
    with pytest.raises(RemoteDenied, match="access denied"):
        reader.put("k", b"nope")
    with pytest.raises(RemoteDenied):
        reader.put_if_absent("other", b"nope")
    assert writer.get("k") == b"data"


def test_missing_bucket_is_named(seaweed: Seaweed):
    bucket = f"absent-{uuid.uuid4().hex[:8]}"
    store = seaweed.store(f"s3://{bucket}/p", retry=FAST_RETRY)
    with pytest.raises(MissingBucket) as caught:
        store.put("k", b"x")
    assert f"bucket {bucket} does not exist" in str(caught.value)
    assert caught.value.detail is None and caught.value.code == "remote_missing_bucket"


@pytest.mark.parametrize("status", [503, 429, 500])
def test_throttling_and_5xx_are_retried(seaweed: Seaweed, proxied, status: int):
    plan, endpoint = proxied
    store = seaweed.store(_url(), endpoint_url=endpoint, retry=FAST_RETRY)
    plan.reset([status] * 3)
    store.put("k", b"through")
    assert plan.injected == 3 and plan.seen == 4  # three refusals, then the real put
    plan.reset([status] * 3)
    assert store.get("k") == b"through"
    assert plan.seen == 4
    plan.reset([status] * 2)
    assert store.put_if_absent("fresh", b"once") is True
    assert seaweed.store(store.url).get("fresh") == b"once"


@pytest.mark.parametrize("status", [503, 500])
def test_retries_are_bounded(seaweed: Seaweed, proxied, status: int):
    """A server that keeps failing: a bounded number of attempts, then a clear error."""
    plan, endpoint = proxied
    store = seaweed.store(_url(), endpoint_url=endpoint, retry=FAST_RETRY)
    plan.reset([status] * 100)
    with pytest.raises(RemoteUnavailable) as caught:
        store.put("k", b"never")
    assert plan.seen == FAST_RETRY.max_retries + 1
    err = caught.value
    assert exit_code(err) == 6 and err.key == "k"
    assert err.detail == ("SlowDown" if status == 503 else "InternalError")
    assert f"after {FAST_RETRY.max_retries} retries" in str(err)
    plan.reset([])
    assert store.head("k") is None  # nothing half-written


def test_listing_really_pages(seaweed: Seaweed, proxied):
    """2,345 keys take three listing requests of at most 1,000 keys each, and all arrive."""
    plan, endpoint = proxied
    store = seaweed.store(_url())
    for i in range(2345):
        store.put(f"data/{i:05d}", b"")
    through_proxy = seaweed.store(store.url, endpoint_url=endpoint)
    plan.reset([])
    assert len({info.key for info in through_proxy.list("data")}) == 2345
    assert plan.seen == 3


def test_a_server_ignoring_conditional_writes_is_detected(seaweed: Seaweed, proxied):
    """check() finds out when a create-only put is not refused; the store then falls back
    to look-and-read-back, which still never overwrites in a sequential run."""
    plan, endpoint = proxied
    plan.hide_conflicts = True
    lying = seaweed.store(_url(), endpoint_url=endpoint)
    assert lying.check().conditional_writes is False
    assert seaweed.store(lying.url).check().conditional_writes is True

    fallback = seaweed.store(_url(), conditional_writes=False)
    assert fallback.put_if_absent("config", b"v1") is True
    assert fallback.put_if_absent("config", b"v2") is False
    assert fallback.put_if_absent("config", b"v1") is True
    assert fallback.get("config") == b"v1"


def test_static_keys_and_their_session_token_reach_the_s3_client() -> None:
    store = open_object_store(
        "s3://some-bucket",
        endpoint_url="http://127.0.0.1:9",
        credentials=S3Credentials("AKEY", "secret", "a-token"),
    )
    config = store._store.config  # what the obstore client was configured with
    assert (config["access_key_id"], config["session_token"]) == ("AKEY", "a-token")
    store.close()


def test_credentials_from_the_environment(seaweed: Seaweed):
    env = {
        "AWS_ACCESS_KEY_ID": ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
        "AWS_REGION": "eu-west-3",
    }
    credentials = from_environment(env)
    assert credentials == S3Credentials(ACCESS_KEY, SECRET_KEY)
    assert region_from_environment(env) == "eu-west-3"
    assert from_environment({"AWS_ACCESS_KEY_ID": ACCESS_KEY}) is None
    store = seaweed.store(_url(), credentials=credentials, region="eu-west-3")
    store.put("k", b"v")
    assert store.get("k") == b"v"


@pytest.fixture
def aws_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An AWS configuration of our own, and no way to reach an instance-metadata service."""
    for name in list(os.environ):
        if name.startswith("AWS_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    (tmp_path / "credentials").write_text("")
    (tmp_path / "config").write_text("")
    return tmp_path


def test_credentials_from_a_profile(
    seaweed: Seaweed, aws_home: Path, monkeypatch: pytest.MonkeyPatch
):
    (aws_home / "credentials").write_text(
        f"[snaptest]\naws_access_key_id = {ACCESS_KEY}\naws_secret_access_key = {SECRET_KEY}\n"
    )
    (aws_home / "config").write_text("[profile snaptest]\nregion = eu-north-1\n")
    monkeypatch.setenv("AWS_PROFILE", "snaptest")
    assert from_environment(os.environ) is None  # no keys there: the chain takes over
    chain = AwsChain()
    store = open_object_store(_url(), endpoint_url=seaweed.endpoint, credentials=chain)
    assert chain.region == "eu-north-1"
    store.put("k", b"from a profile")
    assert store.get("k") == b"from a profile"
    # None means the same chain
    assert open_object_store(store.url, endpoint_url=seaweed.endpoint).get("k") == b"from a profile"


def test_no_credentials_anywhere(aws_home: Path, monkeypatch: pytest.MonkeyPatch):
    with pytest.raises(RemoteDenied, match="no AWS credentials found"):
        open_object_store(_url(), endpoint_url="http://127.0.0.1:9")
    monkeypatch.setenv("AWS_PROFILE", "nobody")
    with pytest.raises(RemoteDenied, match="no usable AWS credentials") as caught:
        open_object_store(_url(), endpoint_url="http://127.0.0.1:9")
    assert "nobody" in str(caught.value)


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).parent.parent,
    )


def test_the_s3_client_is_imported_only_for_an_s3_remote(tmp_path: Path):
    proc = _python(f"""
        import sys
        import snapstore
        assert "snapstore.remote" not in sys.modules
        from snapstore.remote import open_object_store, S3Credentials
        store = open_object_store({(tmp_path).as_uri()!r})
        store.put("k", b"v"); assert store.get("k") == b"v"
        heavy = [m for m in ("obstore", "botocore", "boto3") if m in sys.modules]
        assert not heavy, heavy
        open_object_store("s3://some-bucket", endpoint_url="http://127.0.0.1:9",
                          credentials=S3Credentials("a", "b"))
        assert "obstore" in sys.modules and "botocore" not in sys.modules
        print("ok")
    """)
    assert proc.stdout.strip() == "ok", proc.stderr


def test_a_forked_child_gets_an_error_not_a_crash(seaweed: Seaweed):
    proc = _python(f"""
        import os
        from snapstore.remote import open_object_store, S3Credentials
        creds = S3Credentials({ACCESS_KEY!r}, {SECRET_KEY!r})
        store = open_object_store("s3://{BUCKET}/fork", endpoint_url={seaweed.endpoint!r},
                                  credentials=creds)
        store.put("k", b"parent")
        pid = os.fork()
        if pid == 0:
            try:
                store.get("k")
            except RuntimeError as exc:
                os._exit(7 if "fresh process" in str(exc) else 8)
            os._exit(9)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status), store.get("k").decode())
    """)
    assert proc.stdout.split() == ["7", "parent"], proc.stderr
