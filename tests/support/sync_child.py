"""The child process of the remote crash tests: one push or pull, killable at a fault point.

    python -m tests.support.sync_child push|pull ROOT URL ENDPOINT RECORD

runs ``Store.push`` or ``Store.pull`` of the store at ROOT against the S3 remote
URL on ENDPOINT, with the test server's credentials from ``AWS_ACCESS_KEY_ID``
and ``AWS_SECRET_ACCESS_KEY``. With ``SNAPSTORE_FAULT`` set (read only here,
never by the library), it is killed with SIGKILL at the chosen fault point and
writes the point's name to RECORD first (tests/support/crash_child.py).
"""

from __future__ import annotations

import os
import sys

from snapstore import Store
from snapstore.remote import S3Credentials, open_object_store

from .crash_child import install_fault


def main(argv: list[str]) -> None:
    action, root, url, endpoint, record = argv
    spec = os.environ.get("SNAPSTORE_FAULT")
    if spec:
        install_fault(spec, record)
    credentials = S3Credentials(
        os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"]
    )
    with (
        Store.open(root) as store,
        open_object_store(url, endpoint_url=endpoint, credentials=credentials) as remote,
    ):
        getattr(store, action)(remote)


if __name__ == "__main__":
    main(sys.argv[1:])
