"""Our critical path against HTA 0.5's on every ProfilerStep of our Kineto GPU fixtures
(tests/data/critical_path_hta/hta_steps.csv, written by tests/references/hta_critical_path_steps.py with
HolisticTraceAnalysis 0.5.0 and pandas 2.3.3; BENCHMARKS.md, "Critical path",
sums them up).

Over the window HTA analyses (its first and last path node, us from HTA's origin: the first event it keeps, recorded in
hta_step_events.csv.gz), our
path -- walked back from where HTA's path ends: the GPU item that ends there (HTA's window of a
step holds the GPU work launched in it, which often ends after the step), else a CPU span of another
thread that ends there, else the step's thread at the window's end -- less the time HTA's graph weighs
zero (as in tests/test_critical_path.py: CPU idle, the annotation's own time, a blocking call's
time and its return) is compared with HTA's path length:
- AGREE: within 1 %.
- HTA fails on the last ProfilerStep of a trace: on load, HTA's Trace._filter_irrelevant_gpu_kernels
  keeps only CPU events that start before the last ProfilerStep's start, so that step's own
  annotation is gone, `annotations.ts[i : i + 1].min()` is NaN, and the pandas query
  "ts >= nan" raises UndefinedVariableError. The raw trace holds the step (its ProfilerStep#N event
  with ts and dur, tested below); our path of it tiles it.
- DIFFERENT: the measured difference with its cause (or "not established"), pinned within 2 points.
"""

from __future__ import annotations

import csv
import gzip
import json
from collections import defaultdict

import pytest

from conftest import DATA
from support.hta_window import hta_origin_ns, hta_origins, rounding_loss_us, segments_from_hta_end, weighs_zero
from xsp_trace.analyze.critical_path.walk import load_run
from xsp_trace.analyze.session import AnalysisOptions, prepare, run_analysis

REFERENCE = DATA / "critical_path_hta" / "hta_steps.csv"
EVENTS = DATA / "critical_path_hta" / "hta_step_events.csv.gz"  # its hta_origin_us: where HTA counts from
AGREE_PCT = 1.0
# (trace, HTA instance) -> our adjusted path minus HTA's, in % of HTA's: the differences over 1 %,
# each with its cause as far as it is established (pinned so that a change in either side shows).
# Measured 2026-12-03; BENCHMARKS.md ("Critical path") and docs/design.md say more.
RANK3 = "kineto_2022_integer_us_rank3/hta_a100_rank3_of_8_2022.json.gz"
DIFFERENT: dict[tuple[str, int], float] = {
    # Cross-thread wait (our thread_wait edges, critical_path/threads.py; HTA's graph has none):
    # backward runs on the autograd engine's thread (651 top-level ops, 28.5 ms during step 0's
    # "## backward ##" on thread 3126441) while the step's thread sits in that annotation with no op
    # (33 ms); our path now runs through the autograd thread's ops, launches and kernels (28-30 ms
    # of each step). Steps 1 and 3 agree within 1 %; on the others HTA's longest path crosses
    # 40.3-42.4 ms of stream 20 as "gpu_kernel_kernel_overhead" after a "Memcpy DtoH (Device ->
    # Pageable)" although the stream's next kernel was launched 37.5 ms after that copy ended
    # (checked from the raw trace in tests/test_critical_path_hta_events.py), and ours follows the CPU
    # there -- partly time HTA's graph weighs zero (-5.5 %), or through the hand-off from the
    # autograd thread back to the step's thread that HTA's graph lacks (+9 to +12.7 %).
    **{(RANK3, i): pct for i, pct in ((0, -5.49), (2, 12.72), (4, 9.02))},
    # HTA wrong (tests/test_critical_path_hta_events.py checks each cause in the raw trace): the
    # trace has no "cuda_sync" events, HTA's only source of GPU -> CPU edges, so its graph has no edge
    # from the 13.4 ms of GPU work a 14.1 ms cudaDeviceSynchronize waited for, and its longest path
    # (33.6 ms of a 49.3 ms window) starts after it.
    ("kineto_2025_all_options_h100/tracelens_h100_qwen1.5_0.5b.json.gz", 0): 42.19,
    # HTA wrong: the trace has ns resolution and HTA 0.5 rounds every event's start up and end down
    # to the us (round_down_time_stamps), so between the 276 top-level ops of this CPU-bound window
    # gaps open that its graph weighs zero (up to 275.5 us in all; ours is 222 us longer). ROUNDED
    # checks the bound in the raw trace.
    ("kineto_conv_vit_h100/tracelens_h100_falconsai_vit.json.gz", 0): 4.83,
    # HTA wrong: it weighs every cudaMemcpyAsync zero (its BLOCKING_SYNC_CALLS); these copy Device ->
    # Device and do not block: ours keeps their 1.4 ms of CPU time.
    ("kineto_nccl_collectives/hta_a100_nccl_allreduce.json.gz", 0): 1.49,
    ("kineto_nccl_collectives/hta_a100_nccl_allreduce.json.gz", 1): 1.51,
    # HTA wrong: 16.6 ms of its path is a kernel-kernel gap on stream 7 whose next item was not
    # launched until the gap's end; ours follows the CPU there, partly time HTA's graph weighs zero.
    ("kineto_two_ranks_sendrecv/sampled_rank-1.json.gz", 0): -1.25,
}


# (trace, instance) whose difference (ours longer) is at most what HTA's rounding of a ns-resolution
# trace takes from its path: the rounding at the top-level CPU events of its window.
ROUNDED = {("kineto_conv_vit_h100/tracelens_h100_falconsai_vit.json.gz", 0)}


def _reference() -> dict[str, dict[int, dict]]:
    by_trace: dict[str, dict[int, dict]] = defaultdict(dict)
    with open(REFERENCE) as f:
        for r in csv.DictReader(f):
            by_trace[r["trace"]].setdefault(int(r["instance"]), r)
    return by_trace


def _profiler_steps(trace) -> list[tuple[int, float, float]]:
    """(iteration, ts us, dur us) of the raw trace's CPU-side ProfilerStep#N events, in time order."""
    events = json.loads(gzip.open(trace).read())["traceEvents"]
    steps = [
        (int(str(e["name"]).split("#")[1]), float(e["ts"]), float(e["dur"]))
        for e in events
        if e.get("ph") == "X" and e.get("cat") in ("user_annotation", "cpu_op") and str(e.get("name", "")).startswith("ProfilerStep#")
    ]
    return sorted(steps, key=lambda s: s[1])


def _adjusted_ns(con, run, start: int, end: int) -> int:
    """Our path of [start, end] from where HTA's path ends, less the time HTA's graph weighs zero."""
    segments = segments_from_hta_end(con, run, start, end)
    return end - start - sum(s.end_ns - s.start_ns for s in segments if weighs_zero(run, s))


@pytest.mark.parametrize("trace", sorted(_reference()))
def test_path_per_step_against_hta(trace, converted):
    path = DATA / trace
    con = converted(path)
    prepare(con, AnalysisOptions())
    run = load_run(con, 1)
    origin = hta_origin_ns(con, path, hta_origins(EVENTS)[trace])
    raw_steps = _profiler_steps(path)
    summary = run_analysis(con, "critical_path_summary")
    ours = {r[summary.columns.index("iteration")]: r for r in summary.rows}
    got: dict[int, float] = {}
    for instance, r in sorted(_reference()[trace].items()):
        if r["error"]:
            # HTA cannot compute it: the last step, present in the raw trace; our path of it tiles it.
            assert "name 'nan' is not defined" in r["error"] and instance == len(raw_steps) - 1
            iteration, _, dur_us = raw_steps[instance]
            row = dict(zip(summary.columns, ours[iteration], strict=True))
            assert row["path_ns"] == row["latency_ns"] == round(dur_us * 1000)
            continue
        start = origin + int(r["path_start_us"]) * 1000
        end = origin + int(r["path_end_us"]) * 1000
        hta_ns = int(r["hta_path_us"]) * 1000
        pct = 100 * (_adjusted_ns(con, run, start, end) - hta_ns) / hta_ns
        got[instance] = round(pct, 2)
        if (trace, instance) in ROUNDED:
            loss_us = rounding_loss_us(path, hta_origins(EVENTS)[trace], int(r["path_start_us"]), int(r["path_end_us"]), top_level=True)
            assert 0 < pct / 100 * hta_ns / 1000 <= loss_us, (pct, loss_us)
    expected = {i: DIFFERENT.get((trace, i)) for i in got}
    agree = {i for i, e in expected.items() if e is None}
    assert {i: p for i, p in got.items() if abs(p) > AGREE_PCT and i in agree} == {}, got
    assert all(abs(got[i] - e) <= 2 for i, e in expected.items() if e is not None), (got, expected)
