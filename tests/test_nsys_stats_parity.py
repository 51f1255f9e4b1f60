"""The nsys-stats summary analyses against NVIDIA's own `nsys stats` on every nsys export fixture.

Each analysis (queries/analyses/cuda_*_sum.sql, queries/analyses/nvtx_sum.sql) must print what the report of
the installed nsys prints (report names per version: xsp_trace/formats/nsys_stats.py), every column,
to the printed character: every cell is compared as the text nsys writes (Python's csv module:
repr of a float, so 1000.05 rounded by nsys's SQLite prints "1000.1"). Two documented differences of the converted data are
undone on the reference side only:
  * the 2022.2 export repeats each runtime call as an eventClass 67 (CUDA backtrace) row, which
    cudaapisum counts a second time; the reference runs on a copy without those rows;
  * the converter strips every `_v<digits>` entry-point suffix of API names, nsys 2022.4 only 4-digit
    ones; the reference names get the converter's rule (and must not collide by it).
"""

from __future__ import annotations

import random
import shutil
import sqlite3
import subprocess
from pathlib import Path

import duckdb
import pytest

from conftest import NSYS_EXPORTS, nsys_stats, nsys_version, without_backtrace_rows
from xsp_trace.analyze.session import AnalysisOptions, open_session, run_analysis
from xsp_trace.analyze.sql_library import include
from xsp_trace.formats import nsys_export as fmt
from xsp_trace.formats.nsys_stats import GPUSUM_KERNEL_CATEGORY, report_name

pytestmark = pytest.mark.slow  # reference tools on real traces

CASES = list(NSYS_EXPORTS)
STAT_COLUMNS = ("Avg (ns)", "Med (ns)", "StdDev (ns)")


@pytest.fixture(scope="module")
def sessions(converted_path):
    cache = {}

    def get(case):
        if case not in cache:
            cache[case] = open_session(converted_path(NSYS_EXPORTS[case]))
        return cache[case]

    return get


def _reference(case, analysis, tmp_path, fmt_spec="csv", source=None):
    return nsys_stats(source or NSYS_EXPORTS[case], report_name(analysis, nsys_version()), tmp_path, fmt_spec)


def _printed(value) -> str:
    """A value as nsys's CSV writer prints it (csv.writer: str of an int, repr of a float)."""
    assert isinstance(value, int | float) and not isinstance(value, bool), value
    return repr(value)


def _time_stats(r: dict, count_col: str) -> tuple:
    """A reference row's printed numbers, in the order _ours gives them."""
    return tuple(r[c] for c in ("Time (%)", "Total Time (ns)", count_col, "Avg (ns)", "Med (ns)", "Min (ns)", "Max (ns)", "StdDev (ns)"))


def _ours(con, analysis, key_cols, count_col) -> dict:
    """Our rows by key, each number printed as nsys prints it."""
    cols = ("time_pct", "total_ns", count_col, "avg_ns", "med_ns", "min_ns", "max_ns", "stddev_ns")
    out = {}
    for r in run_analysis(con, analysis).records():
        key = tuple(r[c] for c in key_cols)
        assert key not in out, f"{analysis}: {key} twice"
        out[key] = tuple(_printed(r[c]) for c in cols)
    return out


@pytest.mark.parametrize("case", CASES)
def test_cuda_api_sum_equals_nsys(case, sessions, tmp_path):
    ref = _reference(case, "cuda_api_sum", tmp_path, source=without_backtrace_rows(NSYS_EXPORTS[case], tmp_path))
    theirs = {}
    for r in ref:
        name = fmt.API_NAME_VERSION_SUFFIX.sub("", r["Name"])
        assert name not in theirs, f"{r['Name']} collides with another function once its suffix is stripped"
        theirs[(name,)] = _time_stats(r, "Num Calls")
    assert len(theirs) >= 7
    assert _ours(sessions(case), "cuda_api_sum", ("name",), "calls") == theirs


def test_backtrace_rows_are_why_nsys_counts_saxpy_calls_twice(tmp_path):
    """On the unmodified export nsys lists cudaMemcpy twice (15 calls each): the class-67 copies."""
    ref = _reference("nsys_2022_saxpy_mpi_a100", "cuda_api_sum", tmp_path)
    memcpy = sorted(int(r["Num Calls"]) for r in ref if r["Name"] == "cudaMemcpy")
    assert memcpy == [15, 15]


@pytest.mark.parametrize("case", CASES)
def test_nvtx_sum_equals_nsys(case, sessions, tmp_path):
    ref = _reference(case, "nvtx_sum", tmp_path)
    theirs = {(r["Style"], r["Range"]): _time_stats(r, "Instances") for r in ref}
    assert len(theirs) == len(ref)
    ours = _ours(sessions(case), "nvtx_sum", ("style", "range_name"), "instances")
    assert ours == theirs
    if case != "nsys_2026_mock_rtx3080":  # the mock export has no NVTX
        assert len(theirs) > 3


@pytest.mark.parametrize("case", CASES)
def test_cuda_gpu_mem_time_sum_equals_nsys(case, sessions, tmp_path):
    ref = _reference(case, "cuda_gpu_mem_time_sum", tmp_path)
    theirs = {(r["Operation"],): _time_stats(r, "Count") for r in ref}
    assert theirs
    assert _ours(sessions(case), "cuda_gpu_mem_time_sum", ("operation",), "count") == theirs


@pytest.mark.parametrize("case", CASES)
def test_cuda_gpu_mem_size_sum_equals_nsys_in_bytes(case, sessions, tmp_path):
    ref = _reference(case, "cuda_gpu_mem_size_sum", tmp_path, "csv:mem=B")
    cols = ("Total (B)", "Count", "Avg (B)", "Med (B)", "Min (B)", "Max (B)", "StdDev (B)")
    # The median alone is compared as a number: nsys's SQLite median returns an integer when the
    # middle values are equal and a real otherwise (printed "960" / "8.0"), a type our DOUBLE
    # column does not carry; every other cell as printed.
    theirs = {r["Operation"]: tuple(float(r[c]) if c == "Med (B)" else r[c] for c in cols) for r in ref}
    ours = {
        r["operation"]: tuple(
            r[c] if c == "med_bytes" else _printed(r[c])
            for c in ("total_bytes", "count", "avg_bytes", "med_bytes", "min_bytes", "max_bytes", "stddev_bytes")
        )
        for r in run_analysis(sessions(case), "cuda_gpu_mem_size_sum").records()
    }
    assert theirs
    assert ours == theirs


@pytest.mark.parametrize("case", CASES)
def test_cuda_gpu_kern_gb_sum_equals_nsys(case, sessions, tmp_path):
    ref = _reference(case, "cuda_gpu_kern_gb_sum", tmp_path)
    theirs = {(r["Name"], r["GridXYZ"], r["BlockXYZ"]): _time_stats(r, "Instances") for r in ref}
    assert theirs
    assert _ours(sessions(case), "cuda_gpu_kern_gb_sum", ("name", "grid", "block"), "instances") == theirs


@pytest.mark.parametrize("case", CASES)
def test_cuda_gpu_kern_sum_equals_nsys(case, sessions, tmp_path):
    report = report_name("cuda_gpu_kern_sum", nsys_version())
    ref = _reference(case, "cuda_gpu_kern_sum", tmp_path)
    if report == "gpusum":  # nsys 2022.4: the kernel rows of the GPU summary (Time % is of all GPU ops there)
        ref = [dict(r, Name=r["Operation"]) for r in ref if r["Category"] == GPUSUM_KERNEL_CATEGORY]
    theirs = {(r["Name"],): _time_stats(r, "Instances")[1:] for r in ref}
    assert theirs
    ours = {k: v[1:] for k, v in _ours(sessions(case), "cuda_gpu_kern_sum", ("name",), "instances").items()}
    assert ours == theirs
    if report != "gpusum":
        assert {(r["Name"],): float(r["Time (%)"]) for r in ref} == {
            (r["name"],): r["time_pct"] for r in run_analysis(sessions(case), "cuda_gpu_kern_sum").records()
        }


def test_memory_summaries_in_a_window_equal_nsys_on_the_window_s_operations(converted_path, tmp_path):
    """analyze --window narrows memops with its spans (the memory summaries read memops alone): the
    summaries of a window equal nsys's reports on a copy of the export holding only the memory
    operations that start in that window."""
    source = NSYS_EXPORTS["nsys_2026_pytorch_2xh100"]
    with sqlite3.connect(source) as raw:
        copy_starts = [r[0] for r in raw.execute(f"SELECT start FROM {fmt.MEMCPY} ORDER BY start")]
        (last_set,) = raw.execute(f"SELECT max(start) FROM {fmt.MEMSET}").fetchone()
    window = (copy_starts[300], last_set)  # a cut through the copies and the sets, the last set outside
    reduced = tmp_path / "window" / source.name
    reduced.parent.mkdir()
    shutil.copyfile(source, reduced)
    with sqlite3.connect(reduced) as raw:
        for table in (fmt.MEMCPY, fmt.MEMSET):
            raw.execute(f"DELETE FROM {table} WHERE start < ? OR start >= ?", window)
        kept = raw.execute(f"SELECT (SELECT count(*) FROM {fmt.MEMCPY}), (SELECT count(*) FROM {fmt.MEMSET})").fetchone()
    assert 0 < kept[0] < len(copy_starts) - 300 and kept[1] > 0
    with duckdb.connect(str(converted_path(source)), read_only=True) as db:
        (origin,) = db.execute("SELECT origin_ns FROM runs").fetchone()  # --window counts from the run's first event
    con = open_session(converted_path(source), AnalysisOptions(window_ns=(window[0] - origin, window[1] - origin)))
    time_ref = _reference("nsys_2026_pytorch_2xh100", "cuda_gpu_mem_time_sum", tmp_path, source=reduced)
    assert _ours(con, "cuda_gpu_mem_time_sum", ("operation",), "count") == {(r["Operation"],): _time_stats(r, "Count") for r in time_ref}
    size_ref = _reference("nsys_2026_pytorch_2xh100", "cuda_gpu_mem_size_sum", tmp_path / "size", "csv:mem=B", source=reduced)
    ours = {
        r["operation"]: (r["total_bytes"], r["count"], r["min_bytes"], r["max_bytes"]) for r in run_analysis(con, "cuda_gpu_mem_size_sum").records()
    }
    assert ours == {r["Operation"]: (int(r["Total (B)"]), int(r["Count"]), int(r["Min (B)"]), int(r["Max (B)"])) for r in size_ref}


def _nsys_sqlite() -> Path:
    """The SQLite shell nsys ships (3.36, with the median/stdev functions its reports call)."""
    nsys = Path(shutil.which("nsys") or pytest.fail("nsys is not installed")).resolve()
    shell = nsys.parents[1] / "host-linux-x64" / "sqlite3"
    assert shell.exists(), shell
    return shell


def test_rounding_equals_the_sqlite_nsys_ships(sessions, tmp_path):
    """Means, percentages and roots near .x5 ties: xsp_nsys_round equals round(x, 1) of nsys's own
    SQLite on every one, where DuckDB's round(x, 1) differs on thousands (1234.45 -> 1234.4).
    Values stay below 2^42 (73 min in ns), where SQLite's long-double digits start to decide."""
    rng = random.Random(7)
    pairs = []
    for _ in range(20000):  # means total / n that land on or next to a .x5 tie
        n = rng.choice([20, 40, 200, 1000, rng.randint(2, 5000)])
        k = rng.randint(0, 10 ** rng.randint(1, 12))
        pairs.append((max(0, (k * 20 + rng.randint(0, 19)) * n // 20 + rng.choice([0, 0, 1, -1])), n))
    pairs += [(rng.randint(0, 10**6), rng.randint(1, 10**7)) for _ in range(10000)]
    values = tmp_path / "pairs.csv"
    values.write_text("".join(f"{t},{n}\n" for t, n in pairs))
    script = (
        f"CREATE TABLE v (t INTEGER, n INTEGER);\n.mode csv\n.import {values} v\n"
        "SELECT printf('%!.17g', round(t * 1.0 / n, 1)), printf('%!.17g', round((t % n) * 100.0 / n, 1)), "
        "printf('%!.17g', round(sqrt(t * 1.0 / n) * 1000.0, 1)) FROM v;\n"
    )
    out = subprocess.run([str(_nsys_sqlite()), ":memory:"], input=script, capture_output=True, text=True, check=True).stdout
    theirs = [tuple(float(x.strip('"')) for x in line.split(",")) for line in out.splitlines()]
    con = sessions("nsys_2026_mock_rtx3080")
    include(con, "lib/nsys_stats")
    con.execute("CREATE OR REPLACE TEMP TABLE _pairs (t BIGINT, n BIGINT)")
    con.executemany("INSERT INTO _pairs VALUES (?, ?)", pairs)
    ours = con.execute(
        "SELECT xsp_nsys_round(t / n), xsp_nsys_pct(t % n, n), xsp_nsys_round(sqrt(t / n) * 1000.0) FROM _pairs ORDER BY rowid"
    ).fetchall()
    assert len(theirs) == len(ours) == len(pairs)
    assert [i for i, (a, b) in enumerate(zip(ours, theirs, strict=True)) if a != b] == []
    plain = con.execute("SELECT round(t / n, 1) FROM _pairs ORDER BY rowid").fetchall()
    assert sum(p[0] != t[0] for p, t in zip(plain, theirs, strict=True)) > 500  # the ties are there


def test_kernel_summaries_round_ties_as_nsys(converted_path, tmp_path):
    """A copy of the H100 export whose kernels of 240, 220 and 60 instances take 1000 ns, one in 20 of
    them 1001 ns: mean 1000.05, stored 1000.0499999999999545, which nsys prints "1000.1"."""
    source = tmp_path / "ties" / NSYS_EXPORTS["nsys_2026_pytorch_2xh100"].name
    source.parent.mkdir()
    shutil.copyfile(NSYS_EXPORTS["nsys_2026_pytorch_2xh100"], source)
    with sqlite3.connect(source) as raw:
        names = [n for n, c in raw.execute(f"SELECT demangledName, count(*) FROM {fmt.KERNEL} GROUP BY 1") if c % 20 == 0]
        assert len(names) == 3  # 240, 220 and 60 instances
        for name in names:
            raw.execute(
                f'UPDATE {fmt.KERNEL} SET "end" = start + CASE WHEN rowid IN '
                f"(SELECT rowid FROM {fmt.KERNEL} WHERE demangledName = ? ORDER BY rowid LIMIT (SELECT count(*) / 20 FROM {fmt.KERNEL} "
                "WHERE demangledName = ?)) THEN 1001 ELSE 1000 END WHERE demangledName = ?",
                [name, name, name],
            )
    assert round(240 * 1000.05 / 240, 1) == round(1000.05, 1) == 1000.0  # what plain rounding prints
    con = open_session(converted_path(source))
    gb = _reference("", "cuda_gpu_kern_gb_sum", tmp_path, source=source)
    assert _ours(con, "cuda_gpu_kern_gb_sum", ("name", "grid", "block"), "instances") == {
        (r["Name"], r["GridXYZ"], r["BlockXYZ"]): _time_stats(r, "Instances") for r in gb
    }
    assert sum(r["Avg (ns)"] == "1000.1" for r in gb) >= 1
    by_name = _reference("", "cuda_gpu_kern_sum", tmp_path / "by_name", source=source)
    if report_name("cuda_gpu_kern_sum", nsys_version()) == "gpusum":
        by_name = [dict(r, Name=r["Operation"]) for r in by_name if r["Category"] == GPUSUM_KERNEL_CATEGORY]
    theirs = {(r["Name"],): _time_stats(r, "Instances")[1:] for r in by_name}
    assert {k: v[1:] for k, v in _ours(con, "cuda_gpu_kern_sum", ("name",), "instances").items()} == theirs
    assert sum(v[2] == "1000.1" for v in theirs.values()) == 3
