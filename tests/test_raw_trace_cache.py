"""A raw trace given straight to `analyze`, `diff`, `perfetto` or `query` is converted once into a
cached database (`.xsp-cache/` beside it, keyed by content and version) and reused; the trace itself
is never modified; where the folder is not writable the cache goes to a private temporary folder.

Figures are checked against the raw traces themselves: the nsys export's kernel table, the Kineto
JSON's kernel events.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import NSYS_EXPORTS
from kineto_cases import KINETO_TRACES
from xsp_trace.cli import app
from xsp_trace.convert.trace_cache import cached_database_path
from xsp_trace.formats import kineto_fields as kf

runner = CliRunner()
NSYS = NSYS_EXPORTS["nsys_2026_mock_rtx3080"]
KINETO = KINETO_TRACES["kineto_rocm_mi250"]


def _kernels_in_raw(trace: Path) -> int:
    if trace.suffix == ".sqlite":
        with sqlite3.connect(trace) as export:
            return export.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
    events = json.loads(gzip.open(trace).read() if trace.suffix == ".gz" else trace.read_bytes())["traceEvents"]
    return sum(1 for e in events if e.get("ph") == "X" and kf.CATEGORY_KIND.get(str(e.get("cat")).lower()) == "kernel")


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(params=["nsys.sqlite", "kineto.json.gz", "kineto.json"])
def raw(request, tmp_path) -> Path:
    target = tmp_path / "traces" / request.param
    target.parent.mkdir()
    if request.param == "kineto.json":
        target.write_bytes(gzip.open(KINETO).read())
    else:
        shutil.copyfile(NSYS if request.param.startswith("nsys") else KINETO, target)
    return target


@pytest.mark.slow  # converts each real trace in three forms
def test_query_reads_a_raw_trace_and_reuses_the_cache(raw):
    before = _digest(raw)
    sql = "SELECT count(*) FROM spans WHERE kind = 'kernel'"
    first = runner.invoke(app, ["query", str(raw), sql, "--csv"])
    assert first.exit_code == 0, first.output
    assert first.stdout.strip().splitlines()[-1] == str(_kernels_in_raw(raw))
    assert "converting" in first.stderr
    cached = cached_database_path(raw)
    assert cached.parent == raw.parent / ".xsp-cache" and cached.exists()
    stamp = cached.stat().st_mtime_ns
    second = runner.invoke(app, ["query", str(raw), sql, "--csv"])
    assert second.exit_code == 0 and "converting" not in second.stderr
    assert second.stdout == first.stdout and cached.stat().st_mtime_ns == stamp
    assert _digest(raw) == before


@pytest.mark.slow  # converts each real trace in three forms
def test_analyze_diff_and_perfetto_take_a_raw_trace(raw, tmp_path):
    analyze = runner.invoke(app, ["analyze", str(raw), "-a", "top_kernels", "--format", "json", "--limit", "0"])
    assert analyze.exit_code == 0, analyze.output
    rows = json.loads(analyze.stdout)["top_kernels"]
    assert sum(r["instances"] for r in rows) == _kernels_in_raw(raw)
    assert runner.invoke(app, ["diff", str(raw), str(raw)]).exit_code == 0
    perfetto = runner.invoke(app, ["perfetto", str(raw), "-o", str(tmp_path / "t.pftrace")])
    assert perfetto.exit_code == 0, perfetto.output
    assert (tmp_path / "t.pftrace").stat().st_size > 0


def test_a_changed_trace_is_converted_again(tmp_path):
    trace = tmp_path / "t.json"
    events = json.loads(gzip.open(KINETO).read())
    trace.write_text(json.dumps(events))
    first = cached_database_path(trace)
    events["traceEvents"] = [
        e for e in events["traceEvents"] if not (e.get("ph") == "X" and kf.CATEGORY_KIND.get(str(e.get("cat")).lower()) == "kernel")
    ][:]
    events["traceEvents"].append(next(e for e in json.loads(gzip.open(KINETO).read())["traceEvents"] if e.get("cat") == "kernel"))
    trace.write_text(json.dumps(events))
    assert cached_database_path(trace) != first
    result = runner.invoke(app, ["query", str(trace), "SELECT count(*) FROM spans WHERE kind = 'kernel'", "--csv"])
    assert result.exit_code == 0 and result.stdout.strip().splitlines()[-1] == "1"


def test_an_unwritable_cache_folder_falls_back_to_a_private_temporary_folder(tmp_path, monkeypatch):
    """A file where `.xsp-cache/` would go (root writes into read-only folders, so this stands in for one)."""
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR
    folder = tmp_path / "data"
    folder.mkdir()
    shutil.copyfile(NSYS, folder / "t.sqlite")
    (folder / ".xsp-cache").write_text("not a folder")
    result = runner.invoke(app, ["query", str(folder / "t.sqlite"), "SELECT count(*) FROM spans WHERE kind = 'kernel'", "--csv"])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip().splitlines()[-1] == str(_kernels_in_raw(folder / "t.sqlite"))
    (private,) = (tmp_path / "tmp").glob("xsp-trace-cache-*")
    assert len(list(private.glob("t.sqlite.*.duckdb"))) == 1 and (private.stat().st_mode & 0o077) == 0
    assert sorted(p.name for p in folder.iterdir()) == [".xsp-cache", "t.sqlite"]


def test_a_file_that_is_no_trace_gets_one_line(tmp_path):
    junk = tmp_path / "notes.txt"
    junk.write_text("hello\n")
    result = runner.invoke(app, ["analyze", str(junk), "-a", "top_kernels"])
    assert result.exit_code == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and str(junk) in lines[0] and "Traceback" not in result.output
