"""The nsys converter against NVIDIA's own reports on the same real exports.

`nsys stats` (Debian's nsight-systems 2022.4, installed by .ci/run) is the reference: kernel
summaries (gpukernsum), NVTX push/pop summaries (nvtxppsum) and the NVTX projection onto the GPU
(nvtxgpuproj) must match the converted database to the nanosecond.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import duckdb
import numpy as np
import pytest

from conftest import NSYS_EXPORTS, nsys_stats
from xsp_trace.convert import ConvertOptions, convert_files

pytestmark = pytest.mark.slow  # reference tools on real traces

QUERIES = Path(__file__).parent.parent / "queries"
WITH_KERNELS = ["nsys_2022_saxpy_mpi_a100", "nsys_2026_pytorch_2xh100", "nsys_2026_mock_rtx3080"]
WITH_NVTX = ["nsys_2022_saxpy_mpi_a100", "nsys_2026_pytorch_2xh100"]


@pytest.mark.parametrize("case", WITH_KERNELS)
def test_kernel_summary_equals_gpukernsum(case, converted, tmp_path):
    ref = nsys_stats(NSYS_EXPORTS[case], "gpukernsum", tmp_path)
    assert ref, "nsys stats found no kernels"
    db = converted(NSYS_EXPORTS[case])
    # nsys groups by demangled name and launch configuration, printed as '%4d %4d %4d'.
    ours = {
        (name, grid, block): (n, total, lo, hi)
        for name, grid, block, n, total, lo, hi in db.execute(
            """SELECT s.name,
                      printf('%4d %4d %4d', k.grid_x, k.grid_y, k.grid_z),
                      printf('%4d %4d %4d', k.block_x, k.block_y, k.block_z),
                      count(*), sum(s.end_ns - s.start_ns), min(s.end_ns - s.start_ns), max(s.end_ns - s.start_ns)
               FROM spans s JOIN kernels k USING (run_id, span_id)
               WHERE s.kind = 'kernel' GROUP BY ALL"""
        ).fetchall()
    }
    theirs = {
        (r["Name"], r["GridXYZ"], r["BlockXYZ"]): (int(r["Instances"]), int(r["Total Time (ns)"]), int(r["Min (ns)"]), int(r["Max (ns)"]))
        for r in ref
    }
    assert ours == theirs


@pytest.mark.parametrize("case", WITH_NVTX)
def test_nvtx_pushpop_summary_equals_nvtxppsum(case, converted, tmp_path):
    ref = nsys_stats(NSYS_EXPORTS[case], "nvtxppsum", tmp_path)
    db = converted(NSYS_EXPORTS[case])
    # nsys names a range "domain:text" when it has a domain.
    ours = {
        tag: (n, total, lo, hi)
        for tag, n, total, lo, hi in db.execute(
            """SELECT CASE WHEN s.category IS NULL THEN s.name ELSE s.category || ':' || s.name END,
                      count(*), sum(s.end_ns - s.start_ns), min(s.end_ns - s.start_ns), max(s.end_ns - s.start_ns)
               FROM spans s
               WHERE s.range_style = 'push_pop' GROUP BY 1"""
        ).fetchall()
    }
    theirs = {r["Range"]: (int(r["Instances"]), int(r["Total Time (ns)"]), int(r["Min (ns)"]), int(r["Max (ns)"])) for r in ref}
    assert len(theirs) > 1
    assert ours == theirs


@pytest.mark.parametrize("case", WITH_NVTX)
def test_nvtx_gpu_projection_equals_nvtxgpuproj(case, converted, tmp_path):
    """Each NVTX range's GPU projection (first start, last end, number of GPU ops launched inside)."""
    ref = nsys_stats(NSYS_EXPORTS[case], "nvtxgpuproj", tmp_path)
    db = converted(NSYS_EXPORTS[case])
    rows = db.execute((QUERIES / "analyses" / "nvtx_gpu_projection.sql").read_text()).fetchall()
    cols = [d[0] for d in db.description]
    (origin,) = db.execute("SELECT origin_ns FROM runs").fetchone()  # the analysis shows times after it; nsys its session clock
    ours = {}
    for row in rows:
        r = dict(zip(cols, row, strict=True))
        ours[(r["pid"], r["tid"], r["cpu_start_ns"] + origin)] = (
            r["cpu_duration_ns"],
            r["gpu_start_ns"] + origin,
            r["gpu_duration_ns"],
            r["gpu_ops"],
        )
    theirs = {
        (int(r["PID"]), int(r["TID"]), int(r["Orig Start (ns)"])): (
            int(r["Orig Duration (ns)"]),
            int(r["Projected Start (ns)"]),
            int(r["Projected Duration (ns)"]),
            int(r["NumGPUOps"]),
        )
        for r in ref
    }
    assert len(theirs) > 0
    assert ours == theirs


def _raw(case: str) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{NSYS_EXPORTS[case]}?mode=ro&immutable=1", uri=True)


@pytest.mark.parametrize("case", WITH_KERNELS)
def test_every_kernel_with_an_api_call_is_linked(case, converted):
    raw = _raw(case)
    # A direct join on the export: kernels with no runtime/driver row of the same process and correlation id.
    unmatched_in_export, total = raw.execute(
        """SELECT sum(NOT EXISTS (SELECT 1 FROM CUPTI_ACTIVITY_KIND_RUNTIME r
                                 WHERE r.correlationId = k.correlationId
                                   AND (r.globalTid >> 24) = (k.globalPid >> 24))), count(*)
           FROM CUPTI_ACTIVITY_KIND_KERNEL k"""
    ).fetchone()
    db = converted(NSYS_EXPORTS[case])
    linked, unlinked = db.execute(
        """SELECT count(l.gpu_span_id), count(*) - count(l.gpu_span_id)
           FROM spans s LEFT JOIN launches l ON l.run_id = s.run_id AND l.gpu_span_id = s.span_id
           WHERE s.kind = 'kernel'"""
    ).fetchone()
    assert unlinked == unmatched_in_export
    assert linked == total - unmatched_in_export
    # Every link joins spans of the same process and correlation id, API call first.
    bad = db.execute(
        """SELECT count(*) FROM launches l
           JOIN spans a ON a.run_id = l.run_id AND a.span_id = l.api_span_id
           JOIN spans g ON g.run_id = l.run_id AND g.span_id = l.gpu_span_id
           WHERE a.kind <> 'api' OR a.pid <> g.pid OR a.correlation_id <> g.correlation_id OR a.start_ns > g.start_ns"""
    ).fetchone()[0]
    assert bad == 0


def test_h100_window_has_unlinked_kernels_to_count():
    """The 1 s H100 window is cut from a longer run: some kernels' API calls fall outside it."""
    unmatched = (
        _raw("nsys_2026_pytorch_2xh100")
        .execute(
            """SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k WHERE NOT EXISTS (
               SELECT 1 FROM CUPTI_ACTIVITY_KIND_RUNTIME r
               WHERE r.correlationId = k.correlationId AND (r.globalTid >> 24) = (k.globalPid >> 24))"""
        )
        .fetchone()[0]
    )
    assert unmatched == 1810


@pytest.mark.parametrize("case", WITH_NVTX)
def test_cpu_parent_is_tightest_enclosing_range(case, converted):
    """Parents against an exhaustive containment search (numpy, every pair) on the raw export's rows."""
    rows = _raw(case).execute('SELECT rowid, start, "end", globalTid & 16777215 FROM NVTX_EVENTS WHERE eventType = 59').fetchall()
    ids, starts, ends, tids = (np.array(c) for c in zip(*rows, strict=True))
    expected = {}
    for i in range(len(ids)):
        # Enclosing ranges on the same thread; of two identical intervals the earlier row is the outer one.
        inside = (tids == tids[i]) & (starts <= starts[i]) & (ends >= ends[i]) & (ids != ids[i])
        inside &= ~((starts == starts[i]) & (ends == ends[i]) & (ids > ids[i]))
        candidates = np.flatnonzero(inside)
        parent = candidates[np.argmin(ends[candidates] - starts[candidates])] if len(candidates) else None
        expected[(int(starts[i]), int(tids[i]))] = None if parent is None else (int(starts[parent]), int(tids[parent]))
    db = converted(NSYS_EXPORTS[case])
    ours = {
        (start, tid): (None if p_start is None else (p_start, p_tid))
        for start, tid, p_start, p_tid in db.execute(
            """SELECT s.start_ns, s.tid, p.start_ns, p.tid
               FROM spans s
               LEFT JOIN spans p ON p.run_id = s.run_id AND p.span_id = s.parent_id
               WHERE s.range_style IS NOT NULL"""
        ).fetchall()
    }
    assert len(ours) == len(expected) > 0
    assert ours == expected


def test_devices_use_the_cuda_ordinal(converted):
    db = converted(NSYS_EXPORTS["nsys_2026_mock_rtx3080"])
    assert db.execute("SELECT device_id, name, sm_count, memory_bytes FROM devices").fetchall() == [(0, "NVIDIA GeForce RTX 3080", 68, 10736893952)]
    db = converted(NSYS_EXPORTS["nsys_2026_pytorch_2xh100"])
    # No TARGET_INFO_GPU in this export: the two GPUs are known from their activities only.
    assert db.execute("SELECT device_id, name FROM devices ORDER BY 1").fetchall() == [(0, None), (1, None)]


def test_backtrace_rows_are_not_double_counted(converted):
    """Schema 2.9.1 repeats each traced runtime call as an eventClass 67 (CUDA backtrace) row."""
    raw = _raw("nsys_2022_saxpy_mpi_a100")
    calls = raw.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE eventClass IN (0, 1)").fetchone()[0]
    db = converted(NSYS_EXPORTS["nsys_2022_saxpy_mpi_a100"])
    assert db.execute("SELECT count(*) FROM spans WHERE kind = 'api'").fetchone()[0] == calls == 57
    assert db.execute("SELECT name, category FROM spans WHERE kind = 'api' AND name LIKE 'cudaLaunch%' LIMIT 1").fetchone() == (
        "cudaLaunchKernel",
        "cuda_runtime",
    )


def test_versioned_table_names_convert_the_same(converted, tmp_path):
    """Exports may name a table with a `_V<n>` suffix; the highest version is the one read."""
    source = NSYS_EXPORTS["nsys_2026_mock_rtx3080"]
    renamed = tmp_path / "versioned.sqlite"
    shutil.copyfile(source, renamed)
    with sqlite3.connect(renamed) as con:
        con.execute("ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL RENAME TO CUPTI_ACTIVITY_KIND_KERNEL_V3")
        # An older version left beside it, empty: must not be read.
        con.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL_V2 AS SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL_V3 WHERE 0")
        con.execute("ALTER TABLE CUPTI_ACTIVITY_KIND_RUNTIME RENAME TO CUPTI_ACTIVITY_KIND_RUNTIME_V2")
    out = tmp_path / "versioned.duckdb"
    convert_files([renamed], out, ConvertOptions())
    query = """SELECT s.kind, s.name, s.start_ns, s.end_ns, s.correlation_id, l.api_span_id IS NOT NULL
               FROM spans s LEFT JOIN launches l ON l.run_id = s.run_id AND l.gpu_span_id = s.span_id ORDER BY ALL"""
    ours = duckdb.connect(str(out), read_only=True).execute(query).fetchall()
    assert ours == converted(source).execute(query).fetchall()
    assert sum(1 for row in ours if row[0] == "kernel") == 2
