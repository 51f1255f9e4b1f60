"""Idle-time analyses on a hand-made trace (tests/handmade_trace.py), expected tables by hand.

One step ProfilerStep#1 over [0, 1000) on thread 100, aten::mm over [0, 300) inside it:
  A  cudaLaunchKernel [10, 20)   -> kernel [30, 100)
  B  cudaLaunchKernel [400, 450) -> kernel [460, 470)   (10 ns: shorter than its 50 ns launch)
     cudaDeviceSynchronize [450, 600)
  C  cudaLaunchKernel [700, 710) -> kernel [720, 900)
     cudaMemcpy [910, 990)       -> copy HtoD Pageable -> Device [920, 980), 600 B
GPU busy: [30,100) [460,470) [720,900) [920,980) = 320 ns. Gaps (xsp_min_gap_ns = 5):
  [100,460) 360 ns, ended by B (launched at 400 > 100: late); at its middle (280) the thread is in aten::mm;
  [470,720) 250 ns, ended by C; at 595 the thread is in cudaDeviceSynchronize (explicit);
  [900,920)  20 ns, ended by the copy; at 910 the thread is in cudaMemcpy (implicit).
Two bins over [30, 980): [30,505) busy 70 + 10 = 80 of 475; [505,980) busy 180 + 60 = 240 of 475.
Step: GPU busy 320 of 1000 ns (32 %); launch calls 10 + 50 + 10 + 80 (cudaMemcpy launched the copy)
= 150 ns; synchronising calls 150 + 80 = 230 ns -> under 80 % busy, launch 150 < busy 320, sync 230 <
500: host-bound.
"""

from __future__ import annotations

import pytest

from handmade_trace import Run, write
from xsp_trace.analyze import open_session, run_analysis


@pytest.fixture(scope="module")
def con(tmp_path_factory):
    run = Run(1)
    run.span("annotation", "ProfilerStep#1", 0, 1000, iteration=1)
    run.span("op", "aten::mm", 0, 300)
    run.gpu("kernel", "A", (10, 20), (30, 100))
    run.gpu("kernel", "B", (400, 450), (460, 470))
    run.span("api", "cudaDeviceSynchronize", 450, 600, category="cuda_runtime")
    run.gpu("kernel", "C", (700, 710), (720, 900))
    run.memop("memcpy", (910, 990), (920, 980), "HtoD", 600, src="Pageable", dst="Device", api="cudaMemcpy")
    con = open_session(write(tmp_path_factory.mktemp("idle") / "idle.duckdb", [run]))
    con.execute("SET VARIABLE xsp_min_gap_ns = 5")
    con.execute("SET VARIABLE xsp_bins = 2")
    return con


def rows(con, name, columns):
    return [tuple(r[c] for c in columns) for r in run_analysis(con, name).records()]


def test_gaps_with_the_cpu_meanwhile(con):
    assert rows(
        con,
        "gpu_idle_gaps",
        ["gap_start_ns", "gap_ns", "next_gpu_name", "launch_call", "launch_late", "cpu_span", "cpu_kind", "sync_call", "sync_kind"],
    ) == [
        (100, 360, "B", "cudaLaunchKernel", True, "aten::mm", "op", None, None),
        (470, 250, "C", "cudaLaunchKernel", True, "cudaDeviceSynchronize", "api", "cudaDeviceSynchronize", "explicit"),
        (900, 20, "Memcpy HtoD", "cudaMemcpy", True, "cudaMemcpy", "api", "cudaMemcpy", "implicit"),
    ]


def test_utilization_bins(con):
    assert rows(con, "gpu_utilization_bins", ["bin", "bin_start_ns", "bin_end_ns", "busy_ns", "busy_pct"]) == [
        (0, 30, 505, 80, round(100 * 80 / 475, 2)),
        (1, 505, 980, 240, round(100 * 240 / 475, 2)),
    ]


def test_sync_calls_in_the_loop(con):
    assert rows(con, "sync_calls", ["name", "sync_kind", "calls", "calls_in_steps", "total_ns", "max_ns"]) == [
        ("cudaDeviceSynchronize", "explicit", 1, 1, 150, 150),
        ("cudaMemcpy", "implicit", 1, 1, 80, 80),
    ]


def test_pageable_copies(con):
    assert rows(con, "pageable_memcpy", ["copy_kind", "copies", "bytes", "total_ns", "gb_per_s"]) == [("HtoD", 1, 600, 60, 10.0)]


def test_kernel_launch_stats(con):
    assert rows(con, "kernel_launch_stats", ["kernel_name", "launches", "api_avg_ns", "queue_avg_ns", "kernel_avg_ns", "shorter_than_launch"]) == [
        ("B", 1, 50.0, 10.0, 10.0, 1),
        ("A", 1, 10.0, 10.0, 70.0, 0),
        ("C", 1, 10.0, 10.0, 180.0, 0),
    ]


def test_step_bound(con):
    assert rows(con, "step_bound", ["iteration", "step_ms", "gpu_busy_ms", "gpu_busy_pct", "launch_ms", "sync_ms", "bound"]) == [
        (1, 1e-3, 3.2e-4, 32.0, 1.5e-4, 2.3e-4, "host-bound")
    ]
