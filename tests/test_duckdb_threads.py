"""DuckDB runs as many threads as the process may use cores: under taskset or a cpuset, not every core of the machine."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="CPU affinity is Linux-only")

_CHILD = """
import os, sys
os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
from xsp_trace.store.connection import duckdb_connect
print(duckdb_connect().execute("SELECT current_setting('threads')").fetchall()[0][0])
"""


def test_pinned_to_one_core_duckdb_uses_one_thread():
    out = subprocess.run([sys.executable, "-c", _CHILD], check=True, capture_output=True, text=True).stdout
    assert int(out) == 1


def test_unpinned_duckdb_uses_every_usable_core(tmp_path):
    from xsp_trace.store.database import atomic_database

    with atomic_database(tmp_path / "t.duckdb") as con:
        threads = con.execute("SELECT current_setting('threads')").fetchall()[0][0]
    assert threads == len(os.sched_getaffinity(0))


def test_database_already_open_by_the_caller_can_be_opened_again(tmp_path):
    """A notebook holding its own duckdb.connect(path) must still be able to use xsp-trace on the file."""
    import duckdb

    from xsp_trace.store.database import SCHEMA_VERSION, atomic_database, connect

    path = tmp_path / "t.duckdb"
    with atomic_database(path):
        pass
    mine = duckdb.connect(str(path))
    try:
        con = connect(path, read_only=False)
        assert con.execute("SELECT value FROM schema_info WHERE key = 'schema_version'").fetchall() == [(SCHEMA_VERSION,)]
    finally:
        mine.close()
