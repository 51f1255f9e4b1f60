"""The raw-trace cache (`.xsp-cache/`) proves an entry before using it (issue 45): each test is one
attack tried on it -- a planted entry, a symlinked folder, a truncated entry, an entry of another
version, another user's entry or folder, a planted write-ahead log -- and checks that the command's
result equals a fresh `convert` of the trace, that nothing was written where it should not be, and
the one warning line. Plus the bound on entries per folder and the nsys export cache's checks.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import sqlite3
import stat
import sys
import tempfile
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from conftest import NSYS_EXPORTS
from kineto_cases import KINETO_TRACES
from xsp_trace import __version__
from xsp_trace.cli import app
from xsp_trace.convert import cache_folder
from xsp_trace.convert.nsys.report import exported_sqlite
from xsp_trace.convert.trace_cache import SOURCE_DIGEST_KEY, cached_database_path, content_digest
from xsp_trace.store.database import SCHEMA_VERSION

runner = CliRunner()
TRACE = KINETO_TRACES["kineto_rocm_mi250"]  # 7 KB: converts in seconds
OTHER = NSYS_EXPORTS["nsys_2026_mock_rtx3080"]
SQL = "SELECT kind, count(*) AS n, sum(end_ns - start_ns) AS total FROM spans GROUP BY kind ORDER BY kind"
STRANGER = 12345  # a uid that is not this process's


def _query(target: Path) -> str:
    result = runner.invoke(app, ["query", str(target), SQL, "--csv"])
    assert result.exit_code == 0, result.output
    return result.stdout


def _warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "warning:" in line]


def _snapshot(folder: Path) -> dict[str, tuple[int, str]]:
    """Every file under `folder` (links not followed): its owner and content digest (or link target)."""
    found = {}
    for path in sorted(folder.rglob("*")):
        info = path.lstat()
        body = os.readlink(path) if path.is_symlink() else hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "folder"
        found[str(path.relative_to(folder))] = (info.st_uid, body)
    return found


@pytest.fixture(scope="module")
def fresh(tmp_path_factory) -> str:
    """The query's result on a database converted from TRACE with `convert`."""
    database = tmp_path_factory.mktemp("fresh") / "fresh.duckdb"
    assert runner.invoke(app, ["convert", str(TRACE), "-o", str(database), "-q"]).exit_code == 0
    return _query(database)


@pytest.fixture
def private_tmp(tmp_path, monkeypatch) -> Path:
    """A temporary directory of the test's own, where the private cache folder goes."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setenv("TMPDIR", str(folder))
    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR
    return folder


@pytest.fixture
def trace(tmp_path) -> Path:
    (tmp_path / "data").mkdir()
    return Path(shutil.copyfile(TRACE, tmp_path / "data" / TRACE.name))


def _private_entries(private_tmp: Path) -> list[Path]:
    return sorted(private_tmp.glob(f"xsp-trace-cache-{os.getuid()}/*.duckdb"))


def test_a_planted_entry_with_other_content_is_not_used(trace, private_tmp, fresh, tmp_path):
    planted = cached_database_path(trace)
    other = tmp_path / "other.duckdb"
    assert runner.invoke(app, ["convert", str(OTHER), "-o", str(other), "-q"]).exit_code == 0
    shutil.copyfile(other, planted)  # a whole xsp-trace database, of another trace, under the predictable name
    before = _snapshot(planted.parent)
    result = runner.invoke(app, ["query", str(trace), SQL, "--csv"])
    assert result.exit_code == 0, result.output
    assert result.stdout == fresh and _query(other) != fresh
    (line,) = _warnings(result.stderr)
    assert str(planted) in line and SOURCE_DIGEST_KEY in line
    assert _snapshot(planted.parent) == before  # left alone
    assert [p.name for p in _private_entries(private_tmp)] == [planted.name]


def test_a_symlinked_cache_folder_gets_nothing_written_through_it(trace, private_tmp, fresh, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (trace.parent / ".xsp-cache").symlink_to(elsewhere)
    commands = {
        "query": ["query", str(trace), SQL, "--csv"],
        "analyze": ["analyze", str(trace), "-a", "top_kernels"],
        "perfetto": ["perfetto", str(trace), "-o", str(tmp_path / "t.pftrace")],
        "diff": ["diff", str(trace), str(trace)],  # two raw traces: a line for each
    }
    for name, command in commands.items():
        result = runner.invoke(app, command)
        assert result.exit_code == 0, result.output
        lines = _warnings(result.stderr)
        assert len(lines) == (2 if name == "diff" else 1)
        assert all(str(trace.parent / ".xsp-cache") in line and "symbolic link" in line for line in lines)
    assert _query(trace) == fresh
    assert list(elsewhere.iterdir()) == []
    assert len(_private_entries(private_tmp)) == 1


def test_a_truncated_entry_is_rebuilt_with_a_warning_naming_it(trace, private_tmp, fresh):
    assert _query(trace) == fresh
    entry = cached_database_path(trace)
    whole = entry.stat().st_size
    with open(entry, "r+b") as f:
        f.truncate(whole // 2)
    result = runner.invoke(app, ["analyze", str(trace), "-a", "top_kernels", "--format", "json"])
    assert result.exit_code == 0, result.output
    (line,) = _warnings(result.stderr)
    assert str(entry) in line and "damaged cache entry" in line
    assert entry.stat().st_size == whole and _query(trace) == fresh
    assert _private_entries(private_tmp) == []


def test_a_planted_write_ahead_log_is_not_replayed(trace, private_tmp, fresh, tmp_path):
    """DuckDB replays a `.wal` beside a database even read-only: one beside an entry would change what it holds."""
    assert _query(trace) == fresh
    entry = cached_database_path(trace)
    copy = tmp_path / "copy.duckdb"
    shutil.copyfile(entry, copy)
    con = duckdb.connect(str(copy))
    con.execute("PRAGMA disable_checkpoint_on_shutdown")
    con.execute("DELETE FROM spans WHERE kind = 'kernel'")
    shutil.copyfile(f"{copy}.wal", f"{entry}.wal")
    con.close()
    result = runner.invoke(app, ["query", str(trace), SQL, "--csv"])
    assert result.exit_code == 0 and result.stdout == fresh
    (line,) = _warnings(result.stderr)
    assert str(entry) in line and ".wal" in line
    assert not Path(f"{entry}.wal").exists()


def test_an_entry_shadowing_system_functions_runs_none_of_its_sql(trace, private_tmp, fresh):
    """Macros in an entry's main schema named like DuckDB's own (duckdb_tables(), current_database())
    would run in their place; the check names the system functions in full and leaves such an entry alone."""
    assert _query(trace) == fresh
    entry = cached_database_path(trace)
    with duckdb.connect(str(entry)) as con:
        con.execute("CREATE MACRO current_database() AS error('crafted SQL ran')")
        con.execute("CREATE MACRO duckdb_tables() AS TABLE SELECT error('crafted SQL ran') AS table_name")
    before = _snapshot(entry.parent)
    result = runner.invoke(app, ["query", str(trace), SQL, "--csv"])
    assert result.exit_code == 0 and result.stdout == fresh
    (line,) = _warnings(result.stderr)
    assert str(entry) in line and "views or macros" in line and "crafted" not in line
    assert _snapshot(entry.parent) == before
    assert [p.name for p in _private_entries(private_tmp)] == [entry.name]


@pytest.mark.parametrize(("key", "value"), [("created_by", "xsp-trace 0.0.1"), ("schema_version", "5"), (SOURCE_DIGEST_KEY, "0" * 64)])
def test_an_entry_of_another_version_or_trace_is_converted_again(trace, private_tmp, fresh, key, value):
    assert _query(trace) == fresh
    entry = cached_database_path(trace)
    with duckdb.connect(str(entry)) as con:
        con.execute("UPDATE schema_info SET value = ? WHERE key = ?", [value, key])
        con.execute("DELETE FROM spans WHERE kind = 'kernel'")  # what a reuse of it would show
    result = runner.invoke(app, ["query", str(trace), SQL, "--csv"])
    assert result.exit_code == 0 and result.stdout == fresh
    (line,) = _warnings(result.stderr)
    assert str(entry) in line and key in line and value in line
    assert [p.name for p in _private_entries(private_tmp)] == [entry.name]


def test_another_users_entry_sends_the_conversion_to_a_private_folder(trace, private_tmp, fresh):
    assert _query(trace) == fresh
    entry = cached_database_path(trace)
    with duckdb.connect(str(entry)) as con:
        con.execute("DELETE FROM spans WHERE kind = 'kernel'")
    os.chown(entry, STRANGER, STRANGER)
    before = _snapshot(entry.parent)
    result = runner.invoke(app, ["query", str(trace), SQL, "--csv"])
    assert result.exit_code == 0 and result.stdout == fresh
    (line,) = _warnings(result.stderr)
    assert str(entry) in line and f"uid {STRANGER}" in line
    assert _snapshot(entry.parent) == before
    (private,) = _private_entries(private_tmp)
    assert private.name == entry.name and private.stat().st_uid == os.getuid()
    assert stat.S_IMODE(private.parent.stat().st_mode) & 0o077 == 0


@pytest.mark.parametrize("change", ["owner", "group-writable"])
def test_another_users_cache_folder_is_not_used(trace, private_tmp, fresh, change):
    folder = trace.parent / ".xsp-cache"
    folder.mkdir(mode=0o700)
    if change == "owner":
        os.chown(folder, STRANGER, STRANGER)
    else:
        folder.chmod(0o770)
    result = runner.invoke(app, ["query", str(trace), SQL, "--csv"])
    assert result.exit_code == 0 and result.stdout == fresh
    (line,) = _warnings(result.stderr)
    assert str(folder) in line and ("another user" if change == "owner" else "writable by other users") in line
    assert list(folder.iterdir()) == [] and len(_private_entries(private_tmp)) == 1


@pytest.mark.parametrize("made_by_someone_else", ["link", "owner", "mode 0755"])
def test_a_private_folder_that_is_not_private_is_replaced_by_a_fresh_one(trace, private_tmp, fresh, tmp_path, made_by_someone_else):
    """`$TMPDIR/xsp-trace-cache-<uid>` made in advance by someone else: nothing is read from or written into it."""
    (trace.parent / ".xsp-cache").write_text("not a folder")  # so the private folder is used
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    shared = private_tmp / f"xsp-trace-cache-{os.getuid()}"
    if made_by_someone_else == "link":
        shared.symlink_to(elsewhere)
    elif made_by_someone_else == "owner":
        shared.mkdir(mode=0o700)
        os.chown(shared, STRANGER, STRANGER)
    else:
        shared.mkdir(mode=0o755)
        shared.chmod(0o755)  # (whatever the umask)
    assert _query(trace) == fresh
    assert list(elsewhere.iterdir()) == [] and (shared.is_symlink() or list(shared.iterdir()) == [])
    (fresh_folder,) = private_tmp.glob(f"xsp-cache-{os.getpid()}-*")
    assert len(list(fresh_folder.glob("*.duckdb"))) == 1 and stat.S_IMODE(fresh_folder.stat().st_mode) == 0o700


def test_a_changed_trace_leaves_one_entry(trace, private_tmp):
    assert runner.invoke(app, ["query", str(trace), "SELECT 1"]).exit_code == 0
    first = cached_database_path(trace)
    trace.write_bytes(gzip.compress(gzip.decompress(TRACE.read_bytes()) + b"\n"))  # same events, other bytes
    assert runner.invoke(app, ["query", str(trace), "SELECT 1"]).exit_code == 0
    second = cached_database_path(trace)
    assert second != first and sorted(p.name for p in second.parent.iterdir()) == [second.name]


def test_eviction_keeps_the_bound_oldest_written_first(tmp_path, monkeypatch):
    monkeypatch.setattr(cache_folder, "MAX_CACHE_ENTRIES", 4)
    folder = tmp_path / ".xsp-cache"
    folder.mkdir()
    names = [f"t{i}.json.{'ab' * 10}.xsp-0.1.0-schema6.duckdb" for i in range(5)] + ["r.nsys-rep.100-200.sqlite"]
    for age, name in enumerate(names):  # names[0] is the newest
        (folder / name).write_text(name)
        os.utime(folder / name, ns=(10**18 - age * 10**9, 10**18 - age * 10**9))
    (folder / "notes.txt").write_text("not an entry")
    keep = folder / names[5]  # the oldest written, but the one just used
    cache_folder.evict(folder, keep=keep)
    assert sorted(p.name for p in folder.iterdir()) == sorted([*names[:3], keep.name, "notes.txt"])
    superseded = folder / f"t0.json.{'cd' * 10}.xsp-0.1.0-schema6.duckdb"  # the same trace's older content
    older_version = folder / f"t0.json.{'ef' * 10}.xsp-0.0.9-schema6.duckdb"  # kept for that version
    for age, path in enumerate((older_version, superseded)):
        path.write_text("old")
        os.utime(path, ns=(2 * 10**18 - age, 2 * 10**18 - age))
    cache_folder.evict(folder, keep=folder / names[0])  # the superseded one goes, then the oldest past the bound
    assert sorted(p.name for p in folder.iterdir()) == sorted([*names[:3], older_version.name, "notes.txt"])
    superseded.write_text("old")  # written now: newer than names[*], older than older_version
    cache_folder.evict(folder, keep=folder / names[0], superseded=False)  # the private folder: only the bound
    assert sorted(p.name for p in folder.iterdir()) == sorted([*names[:2], older_version.name, superseded.name, "notes.txt"])


def test_the_entry_records_the_traces_sha256(trace, private_tmp):
    assert runner.invoke(app, ["query", str(trace), "SELECT 1"]).exit_code == 0
    entry = cached_database_path(trace)
    with duckdb.connect(str(entry), read_only=True) as con:
        facts = dict(con.execute("SELECT key, value FROM schema_info").fetchall())
    assert facts[SOURCE_DIGEST_KEY] == hashlib.sha256(trace.read_bytes()).hexdigest() == content_digest(trace)
    assert facts["schema_version"] == SCHEMA_VERSION and facts["created_by"] == f"xsp-trace {__version__}"


# The nsys export cache: a stand-in nsys that writes an export and counts its calls.
FAKE_NSYS = """#!{python}
import shutil, sys
args = sys.argv[1:]
open({log!r}, "a").write("export\\n")
shutil.copyfile({export!r}, args[args.index("--output") + 1])
"""


@pytest.fixture
def fake_nsys(tmp_path) -> tuple[Path, Path]:
    log = tmp_path / "nsys.log"
    script = tmp_path / "nsys"
    script.write_text(FAKE_NSYS.format(python=sys.executable, log=str(log), export=str(OTHER)))
    script.chmod(0o755)
    return script, log


def _exports(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


def test_the_nsys_export_cache_rebuilds_a_damaged_export(tmp_path, fake_nsys, capsys):
    nsys, log = fake_nsys
    report = tmp_path / "r.nsys-rep"
    report.write_bytes(b"report")
    with exported_sqlite(report, str(nsys)) as first:
        assert first.parent == tmp_path / ".xsp-cache"
    with exported_sqlite(report, str(nsys)) as again:
        assert again == first and _exports(log) == 1
    with open(first, "r+b") as f:
        f.truncate(first.stat().st_size - 4096)
    with exported_sqlite(report, str(nsys)) as rebuilt:
        assert rebuilt == first and _exports(log) == 2
        assert sqlite3.connect(rebuilt).execute("PRAGMA integrity_check").fetchone() == ("ok",)
    (line,) = _warnings(capsys.readouterr().err)
    assert str(first) in line and "truncated" in line


@pytest.mark.parametrize("attack", ["symlinked entry", "foreign entry", "symlinked folder", "foreign folder"])
def test_the_nsys_export_cache_does_not_trust_another_users_files(tmp_path, fake_nsys, capsys, attack):
    nsys, log = fake_nsys
    (tmp_path / "data").mkdir()
    report = tmp_path / "data" / "r.nsys-rep"
    report.write_bytes(b"report")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    folder = report.parent / ".xsp-cache"
    stat_ = report.stat()
    key = f"{report.name}.{stat_.st_size}-{stat_.st_mtime_ns}.sqlite"
    planted = elsewhere / "planted.sqlite"
    shutil.copyfile(NSYS_EXPORTS["nsys_2022_saxpy_mpi_a100"], planted)
    if attack == "symlinked folder":
        folder.symlink_to(elsewhere)
        os.symlink(planted, elsewhere / key)
    else:
        folder.mkdir(mode=0o700)
        if attack == "symlinked entry":
            os.symlink(planted, folder / key)
        else:
            shutil.copyfile(planted, folder / key)
            os.chown(folder if attack == "foreign folder" else folder / key, STRANGER, STRANGER)
    before = _snapshot(tmp_path / "elsewhere"), _snapshot(folder) if not folder.is_symlink() else None
    with exported_sqlite(report, str(nsys)) as export:
        assert not export.is_relative_to(folder) and not export.is_relative_to(elsewhere)
        assert export.read_bytes() == OTHER.read_bytes()  # the stand-in's export, not the planted one
    assert _exports(log) == 1
    assert (_snapshot(tmp_path / "elsewhere"), _snapshot(folder) if not folder.is_symlink() else None) == before
    (line,) = _warnings(capsys.readouterr().err)
    assert str(folder) in line
