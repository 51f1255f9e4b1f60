"""Idle-time analyses on a hand-made trace (tests/support/handmade.py), expected tables by hand.

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
Step: GPU busy 320 of 1000 ns (32 %); CPU time in the taxonomy's classes: launch 10 + 50 + 10 = 70 ns
(cudaMemcpy launched the copy but waits for it: sync, not launch), sync 150 + 80 = 230 ns, host work
= the spans' union [0,300) [400,600) [700,710) [910,990) = 590 minus the calls 300 = 290 ns, idle
1000 - 590 = 410 ns -> under 80 % busy, sync 23 % < 25 %, launch 70 < busy 320: host-bound.

Second trace (pageable): ProfilerStep#1 [0, 1000) on thread 100 (the loop), aten::to [100, 740) on it:
  cudaMemcpyAsync [110, 690) on 100 -> copy DtoH Device -> Pageable [680, 690), 8 B (the call waits)
  cudaLaunchKernel [0, 10) on 200 -> K1 [20, 60); cudaLaunchKernel [750, 760) on 200 -> K2 [770, 900)
GPU busy 40 + 10 + 130 = 180 (18 %); sync 580 ns (58 % >= 25 %): sync-bound before launch (20 ns).
Loop thread: launch 0, sync 580, host 640 - 580 = 60, idle 360. Gaps: [60, 680) ended by the copy, at
370 its thread is in cudaMemcpyAsync (sync, pageable copy); [690, 770) ended by K2 from thread 200,
which at 730 is in no span: thread 100 is in aten::to (host).
"""

from __future__ import annotations

import pytest

from support.handmade import Run, write
from xsp_trace.analyze.session import open_session, run_analysis


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


THREAD_SPLIT = ["thread_launch_ms", "thread_sync_ms", "thread_host_ms", "thread_idle_ms"]


def test_step_bound(con):
    assert rows(con, "step_bound", ["iteration", "step_ms", "gpu_busy_ms", "gpu_busy_pct", "launch_ms", "sync_ms", *THREAD_SPLIT, "bound"]) == [
        (1, 1e-3, 3.2e-4, 32.0, 7e-5, 2.3e-4, 7e-5, 2.3e-4, 2.9e-4, 4.1e-4, "host-bound")
    ]


@pytest.fixture(scope="module")
def pageable(tmp_path_factory):
    run = Run(1)
    run.span("annotation", "ProfilerStep#1", 0, 1000, iteration=1)
    run.span("op", "aten::to", 100, 740)
    run.memop("memcpy", (110, 690), (680, 690), "DtoH", 8, src="Device", dst="Pageable", api="cudaMemcpyAsync")
    run.gpu("kernel", "K1", (0, 10), (20, 60), tid=200)
    run.gpu("kernel", "K2", (750, 760), (770, 900), tid=200)
    con = open_session(write(tmp_path_factory.mktemp("idle") / "pageable.duckdb", [run]))
    con.execute("SET VARIABLE xsp_min_gap_ns = 5")
    return con


def test_an_async_copy_to_pageable_memory_is_sync_time(pageable):
    assert rows(pageable, "step_bound", ["gpu_busy_ms", "launch_ms", "sync_ms", *THREAD_SPLIT, "bound"]) == [
        (1.8e-4, 2e-5, 5.8e-4, 0.0, 5.8e-4, 6e-5, 3.6e-4, "sync-bound")
    ]
    assert rows(pageable, "sync_calls", ["name", "sync_kind", "copy_endpoints", "origin", "calls", "calls_in_steps", "total_ns"]) == [
        ("cudaMemcpyAsync", "pageable copy", "Device -> Pageable", "aten::to", 1, 1, 580)
    ]
    assert rows(pageable, "pageable_memcpy", ["copy_kind", "api_name", "copies", "bytes", "total_ns", "cpu_ns", "blocking_calls"]) == [
        ("DtoH", "cudaMemcpyAsync", 1, 8, 10, 580, 1)
    ]


def test_gaps_name_the_other_thread_when_the_launching_one_has_no_span(pageable):
    columns = [
        "gap_start_ns",
        "gap_ns",
        "launch_tid",
        "cpu_span",
        "sync_call",
        "sync_kind",
        "cpu_class",
        "other_tid",
        "other_cpu_span",
        "other_cpu_class",
    ]
    assert rows(pageable, "gpu_idle_gaps", columns) == [
        (60, 620, 100, "cudaMemcpyAsync", "cudaMemcpyAsync", "pageable copy", "sync", None, None, None),
        (690, 80, 200, None, None, None, "idle", 100, "aten::to", "host"),
    ]
