"""The nsys-stats summary analyses on a trace written by hand (tests/support/handmade.py), against
tables worked out by hand: median of an even count is the mean of the two middle values, the
standard deviation is the sample one (n - 1).

  cudaMemcpyAsync calls 1, 2, 4, 10 ns: total 17, mean 4.25 -> 4.3 (nsys rounds half away from 0),
      median (2 + 4) / 2 = 3, sample variance ((3.25^2 + 2.25^2 + 0.25^2 + 5.75^2) / 3) = 16.25,
      stddev 4.0311 -> 4.0;  cudaLaunchKernel calls 5, 5 ns: mean 5, median 5, stddev 0.
  kernels "k" grid 2x1x1 block 128: 3 and 5 ns; "k" grid 4x1x1: 10 ns; "j" (no grid): 2 ns.
  memcpy HtoD 100 and 300 bytes in 7 and 9 ns, memset 64 bytes in 4 ns (run 1).
  NVTX: "dom:step" push/pop 10 and 20 ns, "load" start/end 5 ns.
"""

from __future__ import annotations

import pytest

from support.handmade import Run, write
from xsp_trace.analyze.session import open_session, run_analysis


@pytest.fixture(scope="module")
def con(tmp_path_factory):
    run = Run(1)
    run.memop("memcpy", (0, 1), (100, 107), "HtoD", 100)
    run.memop("memcpy", (10, 12), (200, 209), "HtoD", 300)
    run.memop("memset", (20, 24), (300, 304), None, 64, api="cudaMemcpyAsync")
    run.memop("memcpy", (30, 40), (400, 401), "HtoD", 0, api="cudaMemcpyAsync", stream=8)  # 1 ns, 0 bytes
    run.gpu("kernel", "k", (50, 55), (500, 503), grid_x=2, grid_y=1, grid_z=1, block_x=128, block_y=1, block_z=1)
    run.gpu("kernel", "k", (60, 65), (600, 605), grid_x=2, grid_y=1, grid_z=1, block_x=128, block_y=1, block_z=1)
    run.gpu("kernel", "k", None, (700, 710), grid_x=4, grid_y=1, grid_z=1, block_x=128, block_y=1, block_z=1)
    run.gpu("kernel", "j", None, (800, 802))
    run.span("annotation", "step", 0, 10, category="dom", range_style="push_pop")
    run.span("annotation", "step", 20, 40, category="dom", range_style="push_pop")
    run.span("annotation", "load", 50, 55, range_style="start_end")
    run.span("annotation", "not nvtx", 0, 1000)  # no range type: not an NVTX range
    return open_session(write(tmp_path_factory.mktemp("hand") / "sums.duckdb", [run]))


def rows(con, name, columns):
    return [tuple(r[c] for c in columns) for r in run_analysis(con, name).records()]


def test_cuda_api_sum(con):
    assert rows(con, "cuda_api_sum", ["name", "calls", "total_ns", "avg_ns", "med_ns", "min_ns", "max_ns", "stddev_ns", "time_pct"]) == [
        ("cudaMemcpyAsync", 4, 17, 4.3, 3.0, 1, 10, 4.0, round(100 * 17 / 27, 1)),
        ("cudaLaunchKernel", 2, 10, 5.0, 5.0, 5, 5, 0.0, round(100 * 10 / 27, 1)),
    ]


def test_kernel_summaries_by_name_and_by_launch_configuration(con):
    assert rows(con, "cuda_gpu_kern_sum", ["name", "instances", "total_ns", "avg_ns", "med_ns", "min_ns", "max_ns", "stddev_ns"]) == [
        # 3, 5, 10: mean 6, median 5, variance ((9 + 1 + 16) / 2) = 13 -> 3.6056
        ("k", 3, 18, 6.0, 5.0, 3, 10, 3.6),
        ("j", 1, 2, 2.0, 2.0, 2, 2, 0.0),
    ]
    assert rows(con, "cuda_gpu_kern_gb_sum", ["name", "grid", "block", "instances", "total_ns", "med_ns", "stddev_ns", "time_pct"]) == [
        ("k", "   4    1    1", " 128    1    1", 1, 10, 10.0, 0.0, 50.0),
        ("k", "   2    1    1", " 128    1    1", 2, 8, 4.0, 1.4, 40.0),  # sqrt(2) = 1.414
        ("j", None, None, 1, 2, 2.0, 0.0, 10.0),
    ]


def test_memory_summaries(con):
    assert rows(con, "cuda_gpu_mem_time_sum", ["operation", "count", "total_ns", "avg_ns", "med_ns", "min_ns", "max_ns", "time_pct"]) == [
        ("[CUDA memcpy HtoD]", 3, 17, 5.7, 7.0, 1, 9, 81.0),
        ("[CUDA memset]", 1, 4, 4.0, 4.0, 4, 4, 19.0),
    ]
    assert rows(con, "cuda_gpu_mem_size_sum", ["operation", "count", "total_bytes", "avg_bytes", "med_bytes", "min_bytes", "max_bytes"]) == [
        ("[CUDA memcpy HtoD]", 3, 400, 400 / 3, 100.0, 0, 300),
        ("[CUDA memset]", 1, 64, 64.0, 64.0, 64, 64),
    ]


def test_nvtx_sum_only_nvtx_ranges_by_domain_and_style(con):
    assert rows(con, "nvtx_sum", ["range_name", "style", "instances", "total_ns", "avg_ns", "med_ns", "stddev_ns", "time_pct"]) == [
        ("dom:step", "PushPop", 2, 30, 15.0, 15.0, 7.1, round(100 * 30 / 35, 1)),  # sqrt(50) = 7.07
        ("load", "StartEnd", 1, 5, 5.0, 5.0, 0.0, round(100 * 5 / 35, 1)),
    ]
