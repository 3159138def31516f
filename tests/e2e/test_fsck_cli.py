"""End to end: the fsck command's contract, exit codes and repair."""

from __future__ import annotations

import json
from pathlib import Path

import lmdb

from ..support import write
from ..support.rawdb import raw_put, raw_values

_values = raw_values


_put = raw_put


def test_cli_fsck_contract(cli, root: Path) -> None:
    cli("init")
    cli("begin", "--prompt", "p")
    write(root, "a.txt", "hello\n" * 100)
    cli("pre-write", "a.txt")
    write(root, "a.txt", "bye\n")
    cli("post-write", "a.txt")
    cli("end")
    ok = cli("--json", "fsck")
    assert ok.code == 0 and {"ok", "blobs_checked", "corrupt", "dangling"} <= set(ok.json)
    assert ok.json["ok"] is True and ok.json["blobs_checked"] == 2
    env = lmdb.open(str(root / ".snapstore" / "db"), max_dbs=16)
    with env.begin(write=True) as txn:
        db = env.open_db(b"blobs", txn=txn)
        key, value = next(iter(txn.cursor(db=db)))
        txn.put(key, value[:-1] + bytes([value[-1] ^ 1]), db=db)
    env.close()
    bad = cli("--json", "fsck")
    assert bad.code == 5 and bad.json["ok"] is False and len(bad.json["corrupt"]) == 1
    human = cli("fsck")
    assert human.code == 5 and "corrupt blob" in human.stdout and "FAILED" in human.stdout
    repaired = cli("--json", "fsck", "--repair")
    assert repaired.code == 5 and repaired.json["repaired"]
    assert "a.txt" in json.dumps(repaired.json["repaired"])
    assert cli("fsck").code == 0
