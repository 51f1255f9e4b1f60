"""The nsys-stats summary analyses against NVIDIA's own `nsys stats` on every nsys export fixture.

Each analysis (queries/analyses/cuda_*_sum.sql, queries/analyses/nvtx_sum.sql) must print what the report of
the installed nsys prints (report names per version: xsp_trace/formats/nsys_stats.py), every column,
to the nanosecond / byte / printed decimal. Two documented differences of the converted data are
undone on the reference side only:
  * the 2022.2 export repeats each runtime call as an eventClass 67 (CUDA backtrace) row, which
    cudaapisum counts a second time; the reference runs on a copy without those rows;
  * the converter strips every `_v<digits>` entry-point suffix of API names, nsys 2022.4 only 4-digit
    ones; the reference names get the converter's rule (and must not collide by it).
"""

from __future__ import annotations

import shutil
import sqlite3

import pytest

from conftest import NSYS_EXPORTS, nsys_stats, nsys_version, without_backtrace_rows
from xsp_trace.analyze import AnalysisOptions, open_session, run_analysis
from xsp_trace.formats import nsys_export as fmt
from xsp_trace.formats.nsys_stats import GPUSUM_KERNEL_CATEGORY, report_name

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


def _time_stats(r: dict, count_col: str) -> tuple:
    """A reference row's numbers as the analysis returns them."""
    return (
        float(r["Time (%)"]),
        int(r["Total Time (ns)"]),
        int(r[count_col]),
        float(r["Avg (ns)"]),
        float(r["Med (ns)"]),
        int(r["Min (ns)"]),
        int(r["Max (ns)"]),
        float(r["StdDev (ns)"]),
    )


def _ours(con, analysis, key_cols, count_col) -> dict:
    cols = ("time_pct", "total_ns", count_col, "avg_ns", "med_ns", "min_ns", "max_ns", "stddev_ns")
    out = {}
    for r in run_analysis(con, analysis).records():
        key = tuple(r[c] for c in key_cols)
        assert key not in out, f"{analysis}: {key} twice"
        out[key] = tuple(r[c] for c in cols)
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
    theirs = {
        r["Operation"]: (
            int(r["Total (B)"]),
            int(r["Count"]),
            float(r["Avg (B)"]),
            float(r["Med (B)"]),
            int(r["Min (B)"]),
            int(r["Max (B)"]),
            float(r["StdDev (B)"]),
        )
        for r in ref
    }
    ours = {
        r["operation"]: (r["total_bytes"], r["count"], r["avg_bytes"], r["med_bytes"], r["min_bytes"], r["max_bytes"], r["stddev_bytes"])
        for r in run_analysis(sessions(case), "cuda_gpu_mem_size_sum").records()
    }
    assert theirs and ours.keys() == theirs.keys()
    for op, row in theirs.items():
        # Integers exactly; mean and standard deviation as nsys prints the float (shortest repr).
        assert ours[op][:2] == row[:2] and ours[op][4:6] == row[4:6], op
        assert ours[op][2] == pytest.approx(row[2], rel=1e-15) and ours[op][3] == row[3], op
        assert ours[op][6] == pytest.approx(row[6], rel=1e-12), op


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
    con = open_session(converted_path(source), AnalysisOptions(window_ns=window))
    time_ref = _reference("nsys_2026_pytorch_2xh100", "cuda_gpu_mem_time_sum", tmp_path, source=reduced)
    assert _ours(con, "cuda_gpu_mem_time_sum", ("operation",), "count") == {(r["Operation"],): _time_stats(r, "Count") for r in time_ref}
    size_ref = _reference("nsys_2026_pytorch_2xh100", "cuda_gpu_mem_size_sum", tmp_path / "size", "csv:mem=B", source=reduced)
    ours = {
        r["operation"]: (r["total_bytes"], r["count"], r["min_bytes"], r["max_bytes"]) for r in run_analysis(con, "cuda_gpu_mem_size_sum").records()
    }
    assert ours == {r["Operation"]: (int(r["Total (B)"]), int(r["Count"]), int(r["Min (B)"]), int(r["Max (B)"])) for r in size_ref}
