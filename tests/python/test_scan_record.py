"""The header scan's files between processes through the C API: the record of files
(core/src/key/scan_record.hpp, tmp/scan-record-<uid>) and the book of whole scans
(core/src/key/scan_book.hpp, tmp/scan-book-<uid>/), in new processes that derive keys with a
store, as a warm CuPy session does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import SRC, needs_library

pytestmark = needs_library

CHILD = r"""
import json, sys
import cubby
spec = json.loads(sys.argv[1])
print(cubby.Cache(dir=spec["store"]).key(spec["source"], options=spec["options"], arch="sm_90"))
"""
SOURCE = '#include "val.cuh"\n__global__ void k(int* out) { *out = VALUE; }\n'


def key_in_a_new_process(store: Path, *includes: Path) -> str:
    env = dict(os.environ, PYTHONPATH=str(SRC))
    env.pop("CUBBY_DIR", None)
    spec = {"store": str(store), "source": SOURCE, "options": [f"-I{i}" for i in includes]}
    done = subprocess.run([sys.executable, "-c", CHILD, json.dumps(spec)], env=env,
                          capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_a_same_size_edit_with_its_mtime_set_back_changes_the_key_in_a_new_process(tmp_path):
    include = tmp_path / "inc"
    include.mkdir()
    header = include / "val.cuh"
    header.write_text("#define VALUE 11\n")
    stamp = header.stat().st_mtime_ns
    time.sleep(2.2)  # older than the record's "too new" window: recorded
    store = tmp_path / "store"
    first = key_in_a_new_process(store, include)
    assert (store / "tmp" / f"scan-record-{os.geteuid()}").is_file()
    assert key_in_a_new_process(store, include) == first  # from the record

    header.write_text("#define VALUE 22\n")  # same size
    os.utime(header, ns=(stamp, stamp))  # mtime set back: only the ctime tells
    assert header.stat().st_mtime_ns == stamp
    edited = key_in_a_new_process(store, include)
    assert edited != first
    assert edited == key_in_a_new_process(tmp_path / "another-store", include)


def test_a_corrupt_record_is_ignored_and_a_read_only_store_works(tmp_path):
    include = tmp_path / "inc"
    include.mkdir()
    (include / "val.cuh").write_text("#define VALUE 11\n")
    time.sleep(2.2)
    store = tmp_path / "store"
    expected = key_in_a_new_process(store, include)
    record = store / "tmp" / f"scan-record-{os.geteuid()}"
    data = bytearray(record.read_bytes())
    data[len(data) // 2] ^= 0xFF
    record.write_bytes(bytes(data))
    assert key_in_a_new_process(store, include) == expected
    # A store whose tmp/ cannot be created: no record, the same key, no error.
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    (blocked / "tmp").write_text("a file where the folder should be")
    assert key_in_a_new_process(blocked, include) == expected


def test_a_new_process_checks_the_book_of_whole_scans_and_sees_a_shadowing_header(tmp_path):
    first = tmp_path / "first"
    first.mkdir()
    include = tmp_path / "inc"
    include.mkdir()
    (include / "val.cuh").write_text("#define VALUE 11\n")
    time.sleep(2.2)  # older than the "too new" window: the scan is booked
    store = tmp_path / "store"
    key = key_in_a_new_process(store, first, include)
    pages = store / "tmp" / f"scan-book-{os.geteuid()}"
    assert len(list(pages.iterdir())) == 1
    assert key_in_a_new_process(store, first, include) == key  # from the book

    (first / "val.cuh").write_text("#define VALUE 33\n")  # searched before inc/
    shadowed = key_in_a_new_process(store, first, include)
    assert shadowed != key
    assert shadowed == key_in_a_new_process(tmp_path / "another-store", first, include)
