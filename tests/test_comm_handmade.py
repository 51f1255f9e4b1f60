"""Communication analyses on two hand-made rank traces (tests/support/handmade.py), expected tables
worked out by hand.

Rank 0 (run 1), GPU 0, ProfilerStep#5 over [0, 1000):
  gemm            [0, 100)   stream 7       computation
  small           [60, 70)   stream 8       computation (inside gemm: the union is unchanged)
  ncclKernel_AllReduce_RING_LL_Sum_float [50, 150) stream 9, args allreduce, 1000 Float, group 4
  memcpy HtoD     [140, 160)
  -> computation alone [0,50) 50, computation+communication [50,100) 50, communication [100,140) 40,
     communication+memory [140,150) 10, memory [150,160) 10; busy 160.
     overlap 50 of 100 ns of communication = 50 %; all_reduce 4000 B in 100 ns = 40 GB/s,
     busbw 40 x 2(4-1)/4 = 60 GB/s.
Rank 1 (run 2), GPU 1, ProfilerStep#5 over [0, 1200): inside an nccl:all_to_all range, a
  ncclKernel_SendRecv kernel [500, 510) with Input Dims [[10, 5]] of c10::Half (100 B) on the range:
  all_to_all (from the range, not SendRecv from the kernel), 10 GB/s, no group size -> no busbw.
Skew of step 5: 1200 - 1000 = 200 ns; rank 1 spends least in collectives (10 vs 100 ns): the
straggler; rank 0 waits 90 ns for it.
"""

from __future__ import annotations

import pytest

from support.handmade import Run, write
from xsp_trace.analyze.session import open_session, run_analysis

NCCL_AR = "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)"


@pytest.fixture(scope="module")
def con(tmp_path_factory):
    r0 = Run(1, rank=0, source_kind="kineto")
    r0.span("annotation", "ProfilerStep#5", 0, 1000, iteration=5)
    r0.gpu("kernel", "gemm", (1, 2), (0, 100))
    r0.gpu("kernel", "small", (3, 4), (60, 70), stream=8)
    ar = r0.gpu("kernel", NCCL_AR, (5, 6), (50, 150), stream=9)
    r0.args(ar, {"Collective name": "allreduce", "In msg nelems": 1000, "Out msg nelems": 1000, "dtype": "Float", "Group size": 4})
    r0.memop("memcpy", (7, 8), (140, 160), "HtoD", 64)
    r1 = Run(2, rank=1, source_kind="kineto")
    r1.span("annotation", "ProfilerStep#5", 0, 1200, iteration=5)
    rng = r1.span("annotation", "nccl:all_to_all", 10, 20)
    r1.args(rng, {"Input Dims": "[[10, 5]]", "Input type": '["c10::Half"]'})
    r1.gpu("kernel", "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclWorkElem)", (11, 12), (500, 510), device=1)
    return open_session(write(tmp_path_factory.mktemp("comm") / "comm.duckdb", [r0, r1]))


def rows(con, name, columns, run=None):
    return [tuple(r[c] for c in columns) for r in run_analysis(con, name).records() if run is None or r["run_id"] == run]


def test_split_by_classes_running_together(con):
    assert rows(con, "comm_compute_split", ["classes", "time_ns", "time_pct"], run=1) == [
        ("computation", 50, 31.25),
        ("computation+communication", 50, 31.25),
        ("communication", 40, 25.0),
        ("communication+memory", 10, 6.25),
        ("memory", 10, 6.25),
    ]
    assert rows(con, "comm_compute_split", ["device_id", "classes", "time_ns", "time_pct"], run=2) == [(1, "communication", 10, 100.0)]


def test_overlap_is_share_of_communication_under_computation(con):
    assert rows(
        con,
        "comm_compute_overlap",
        [
            "rank",
            "computation_ns",
            "communication_ns",
            "overlap_ns",
            "overlap_pct",
            "exposed_communication_ns",
            "computation_pct",
            "communication_pct",
            "memory_ns",
        ],
    ) == [(0, 100, 100, 50, 50.0, 50, 62.5, 62.5, 20), (1, 0, 10, 0, 0.0, 10, 0.0, 100.0, 0)]


def test_nccl_collectives_sizes_and_bandwidths(con):
    assert rows(
        con, "nccl_collectives", ["run_id", "collective", "message_bytes", "group_size", "count", "total_ns", "algbw_gb_per_s", "busbw_gb_per_s"]
    ) == [(1, "all_reduce", 4000, 4, 1, 100, 40.0, 60.0), (2, "all_to_all", 100, None, 1, 10, 10.0, None)]


def test_rank_skew_straggler_and_wait(con):
    assert rows(
        con,
        "rank_skew",
        [
            "iteration",
            "ranks",
            "rank",
            "step_ms",
            "behind_fastest_ms",
            "iteration_skew_ms",
            "collectives",
            "collective_ms",
            "collective_wait_ms",
            "straggler",
        ],
    ) == [(5, 2, 0, 1e-3, 0.0, 2e-4, 1, 1e-4, 9e-5, False), (5, 2, 1, 1.2e-3, 2e-4, 2e-4, 1, 1e-5, 0.0, True)]
