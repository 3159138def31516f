"""A truncated data file is refused before LMDB maps it, also when the cut comes while the
store is open; the check reads LMDB's own meta pages."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from snapstore import Store
from snapstore.core.db import check_data_file, data_file
from snapstore.core.errors import StoreCorrupt, StoreDamaged

from ..support import agent_turn, write


def _filled(store: Store) -> str:
    for i in range(5):
        agent_turn(store, f"turn {i}", {f"f{i}.txt": os.urandom(5000).hex()})
    return data_file(store.store_dir)


def _check(path: str, store_dir: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        check_data_file(fd, store_dir)
    finally:
        os.close(fd)


def test_the_meta_pages_are_read_as_lmdb_reports_them(store: Store) -> None:
    """The size the check demands is exactly LMDB's own: (last page + 1) x page size."""
    path = _filled(store)
    info, stat = store.repo._db.env.info(), store.repo._db.env.stat()
    assert os.path.getsize(path) == (info["last_pgno"] + 1) * stat["psize"]
    _check(path, store.store_dir)  # a whole file passes


def test_every_cut_is_refused(store: Store, tmp_path: Path) -> None:
    path = _filled(store)
    store.close()
    original = Path(path).read_bytes()
    copy = tmp_path / "data.mdb"

    @settings(
        max_examples=300, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck)
    )
    @given(
        cut=st.one_of(
            st.integers(0, len(original) - 1),
            st.sampled_from(
                [
                    0,
                    19,
                    20,
                    151,
                    152,
                    4096,
                    4096 + 151,
                    8192,
                    len(original) - 4096,
                    len(original) - 1,
                ]
            ),
        )
    )
    def run(cut: int) -> None:
        copy.write_bytes(original[:cut])
        with pytest.raises(StoreCorrupt) as caught:
            _check(str(copy), store.store_dir)
        if cut >= 20:  # once the magic shows, it is damage, not a foreign file
            assert isinstance(caught.value, StoreDamaged)
            assert "damaged" in str(caught.value)

    run()


def test_a_meta_page_with_a_wrong_page_size_is_damage(store: Store, tmp_path: Path) -> None:
    path = _filled(store)
    data = bytearray(Path(path).read_bytes())
    data[40:44] = (3000).to_bytes(4, "little")
    copy = tmp_path / "data.mdb"
    copy.write_bytes(bytes(data))
    with pytest.raises(StoreDamaged, match="page size"):
        _check(str(copy), store.store_dir)


def test_the_newer_meta_page_decides(store: Store, tmp_path: Path) -> None:
    """Of the two meta pages, LMDB uses the one with the higher transaction id; a cut that
    the older one would allow is still refused."""
    path = _filled(store)
    write(Path(store.root), "big.bin", os.urandom(200_000))
    store.pre_write(["big.bin"])  # the last commit grows the file by some 50 pages
    data = Path(path).read_bytes()
    page = int.from_bytes(data[40:44], "little")
    metas = [
        (
            int.from_bytes(data[off + 144 : off + 152], "little"),
            int.from_bytes(data[off + 136 : off + 144], "little"),
        )
        for off in (0, page)
    ]
    (_, newer_last), (_, older_last) = sorted(metas, reverse=True)
    assert newer_last > older_last
    cut = (older_last + 1) * page
    copy = tmp_path / "data.mdb"
    copy.write_bytes(data[:cut])
    with pytest.raises(StoreDamaged, match=f"needs {(newer_last + 1) * page}"):
        _check(str(copy), store.store_dir)


CHILD = textwrap.dedent("""
    import sys
    from snapstore import Store
    from snapstore.core.errors import StoreDamaged
    store = Store.open(sys.argv[1])
    print(len(store.rewind_points()), flush=True)
    sys.stdin.readline()  # the parent truncates the file now
    for what, call in (("read", lambda: store.rewind_points()),
                       ("write", lambda: store.begin_turn("default", "after the cut"))):
        try:
            call()
        except StoreDamaged as exc:
            print(what, "refused:", exc, flush=True)
    store.close()
""")


@pytest.mark.parametrize("pages", [0, 1, 2, 4])
def test_a_cut_while_the_store_is_open_is_refused_not_sigbus(store: Store, pages: int) -> None:
    """Another process truncates the file under an open store: its next read and its next
    write are refused, and it lives (a read already in flight cannot be saved; see
    docs/reliability.md)."""
    path = _filled(store)
    root = store.root
    size = os.path.getsize(path)
    store.close()
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, root],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None and child.stdin is not None
    assert child.stdout.readline().strip() == "5"
    cut = pages * 4096 if pages else 4096 * 3 + 100
    os.truncate(path, min(cut, size - 1))
    out, err = child.communicate("go\n", timeout=60)
    assert child.returncode == 0, (child.returncode, err)  # -7 would be SIGBUS
    lines = out.splitlines()
    assert [line.split()[0] for line in lines] == ["read", "write"], out
    assert all("truncated" in line or "meta page" in line for line in lines), out
    assert os.path.getsize(path) == min(cut, size - 1)  # the refused write wrote nothing


def test_a_page_lmdb_finds_damaged_is_store_corrupt(store: Store) -> None:
    """What LMDB itself finds wrong while reading (here the main tree's root page, its type
    flags wiped) is StoreCorrupt, exit 5, not an internal error."""
    path = _filled(store)
    store.close()
    data = bytearray(Path(path).read_bytes())
    page = int.from_bytes(data[40:44], "little")
    # Per meta page: transaction id at 144, and the main database's root page at 128
    # (its MDB_db follows the free database's, 48 bytes each, from offset 40).
    _txnid, root_page = max(
        (
            int.from_bytes(data[off + 144 : off + 152], "little"),
            int.from_bytes(data[off + 128 : off + 136], "little"),
        )
        for off in (0, page)
    )
    flags_at = root_page * page + 10
    assert data[flags_at : flags_at + 2] != b"\0\0"
    data[flags_at : flags_at + 2] = b"\0\0"
    Path(path).write_bytes(bytes(data))
    with pytest.raises(StoreCorrupt, match=r"damaged: .*MDB_CORRUPTED"):
        Store.open(store.root)
