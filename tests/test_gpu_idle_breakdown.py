"""gpu_idle_breakdown: HTA 0.5's idle-time breakdown (host wait / kernel wait / other) per stream and step.

A hand-made trace with its expected table worked out by hand; every Kineto fixture HTA 0.5 reads
against TraceAnalysis.get_idle_time_breakdown (include_last_profiler_step=True, as `--scope
profiled`; its default consecutive_kernel_delay); the nsys fixtures against HTA's definition applied
to the raw export with sqlite3.

HTA rounds float-µs timestamps inward to whole µs, so each Kineto trace is fed to us as HTA reads it
(kineto_cases.as_hta_reads_it): then the figures are equal to the µs on every fixture but one, whose
difference is pinned with its cause. HTA 0.5 cannot read kineto_conv_resnet_mi300 (TypeError on
load: a value over its int16 column) nor the CPU-only traces (no GPU work: "No objects to
concatenate"); those are left out.
"""

from __future__ import annotations

import gzip
import json
import logging
import math
import shutil
import sqlite3
from collections import defaultdict
from pathlib import Path

import pytest

from conftest import DATA, NSYS_EXPORTS
from kineto_cases import KINETO_TRACES, _decimal_text, as_hta_reads_it, load_raw
from support.handmade import Run, write
from xsp_trace.analyze.session import AnalysisOptions, open_session, run_analysis

CATEGORIES = ("host_wait", "kernel_wait", "other")
HTA_READS = {
    **{case: [path] for case, path in KINETO_TRACES.items() if case != "kineto_cpu_only"},
    "kineto_2021_profiler_step_operator": sorted((DATA / "kineto_2021_profiler_step_operator").glob("*.json.gz")),
    "kineto_cuda_graphs_v100_2022": [DATA / "kineto_cuda_graphs_v100_2022" / "hta_v100_cuda_graphs_rank1_2022.json.gz"],
    "kineto_conv_vit_h100": [DATA / "kineto_conv_vit_h100" / "tracelens_h100_falconsai_vit.json.gz"],
    "kineto_hip_graphs_mi300x_vllm": [DATA / "kineto_hip_graphs_mi300x_vllm" / "tracelens_mi300x_vllm_full_graph_decode.json.gz"],
    "kineto_pageable_dtoh_a100": [DATA / "kineto_pageable_dtoh_a100" / "hta_a100_pageable_dtoh_rank0.json.gz"],
    "kineto_two_ranks_sendrecv": sorted((DATA / "kineto_two_ranks_sendrecv").glob("sampled_rank-*.json.gz")),
}
H100_2025 = "kineto_2025_all_options_h100"

COLUMNS = [
    "stream_id",
    "per",
    "iteration",
    "gaps",
    "idle_ns",
    "host_wait_ns",
    "kernel_wait_ns",
    "other_ns",
    "host_wait_pct",
    "kernel_wait_pct",
    "other_pct",
]


@pytest.fixture(scope="module")
def handmade(tmp_path_factory):
    """Two steps, ProfilerStep#1 [0, 1000) and #2 [1000, 2000) on thread 100; xsp_kernel_wait_ns = 50.
    Stream 7 (launch call -> GPU op):
      A [10, 20)     -> [100, 200)   the stream's first operation: no gap
      B [30, 40)     -> [210, 300)   gap 10, queued before A ended (30 < 200), 10 < 50: kernel_wait (step 1)
      C [400, 410)   -> [420, 500)   gap 120, launched after B ended (400 > 300): host_wait (step 1)
      D [450, 460)   -> [700, 800)   gap 200, queued (450 < 500), >= 50: other (step 1)
      E [1010, 1020) -> [1030, 1100) gap 230, launched after D ended: host_wait (step 2)
      F no launch    -> [1120, 1200) gap 20, no call: kernel_wait, in no step
    Stream 8: G [420, 430) -> [500, 690), its only operation: no gap (step 1).
    Stream 7: 5 gaps, 580 ns: host 120 + 230 = 350 (60.34 %), kernel 10 + 20 = 30 (5.17 %), other 200 (34.48 %).
    """
    run = Run(1)
    run.span("annotation", "ProfilerStep#1", 0, 1000, iteration=1)
    run.span("annotation", "ProfilerStep#2", 1000, 2000, iteration=2)
    run.gpu("kernel", "A", (10, 20), (100, 200))
    run.gpu("kernel", "B", (30, 40), (210, 300))
    run.gpu("kernel", "C", (400, 410), (420, 500))
    run.gpu("kernel", "G", (420, 430), (500, 690), stream=8)
    run.gpu("kernel", "D", (450, 460), (700, 800))
    run.gpu("kernel", "E", (1010, 1020), (1030, 1100))
    run.gpu("kernel", "F", None, (1120, 1200))
    return write(tmp_path_factory.mktemp("idle_breakdown") / "idle.duckdb", [run])


def _rows(con):
    con.execute("SET VARIABLE xsp_kernel_wait_ns = 50")
    return [tuple(r[c] for c in COLUMNS) for r in run_analysis(con, "gpu_idle_breakdown").records()]


def test_handmade_expected_table(handmade):
    assert _rows(open_session(handmade)) == [
        (7, "stream", None, 5, 580, 350, 30, 200, 60.34, 5.17, 34.48),
        (7, "step", None, 1, 20, 0, 20, 0, 0.0, 100.0, 0.0),
        (7, "step", 1, 3, 330, 120, 10, 200, 36.36, 3.03, 60.61),
        (7, "step", 2, 1, 230, 230, 0, 0, 100.0, 0.0, 0.0),
        (8, "stream", None, 0, 0, 0, 0, 0, None, None, None),
        (8, "step", 1, 0, 0, 0, 0, 0, None, None, None),
    ]


def test_handmade_profiled_scope_leaves_out_work_launched_outside_the_trace(handmade):
    """F has no launching call: --scope profiled drops it (as HTA with two or more steps), and its gap."""
    rows = _rows(open_session(handmade, AnalysisOptions(scope="profiled")))
    assert [r for r in rows if r[0] == 7] == [
        (7, "stream", None, 4, 560, 350, 10, 200, 62.5, 1.79, 35.71),
        (7, "step", 1, 3, 330, 120, 10, 200, 36.36, 3.03, 60.61),
        (7, "step", 2, 1, 230, 230, 0, 0, 100.0, 0.0, 0.0),
    ]


def _hta_idle(path: Path, workdir: Path, include_last_profiler_step: bool = True) -> dict[int, tuple[float, ...]]:
    """HTA 0.5's get_idle_time_breakdown on a copy of one rank's trace: {stream: (host, kernel, other µs)}."""
    logging.disable(logging.WARNING)
    from hta.trace_analysis import TraceAnalysis

    folder = workdir / f"hta_{path.name}"
    folder.mkdir()
    raw = load_raw(path)
    if "rank" in raw.get("distributedInfo", {}):
        shutil.copyfile(path, folder / path.name)
    else:  # HTA needs a rank; the events are untouched
        raw.setdefault("distributedInfo", {})["rank"] = 0
        with gzip.open(folder / path.name, "wt", encoding="utf-8") as f:
            json.dump(raw, f, default=_decimal_text)
    analysis = TraceAnalysis(trace_dir=str(folder), include_last_profiler_step=include_last_profiler_step)
    rank = next(iter(analysis.t.traces))
    frame, _ = analysis.get_idle_time_breakdown(ranks=[rank], visualize=False)
    out: dict[int, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    for stream, category, us in zip(frame["stream"], frame["idle_category"], frame["idle_time"], strict=True):
        out[int(stream)][CATEGORIES.index(category)] += float(us)
    return {s: tuple(v) for s, v in out.items()}


def _ours(con) -> dict[int, tuple[float, ...]]:
    every = run_analysis(con, "gpu_idle_breakdown").records()
    rows = [r for r in every if r["per"] == "stream"]
    assert len({r["stream_id"] for r in rows}) == len(rows)  # HTA tells streams apart, not GPUs: one GPU each here
    steps = [r for r in every if r["per"] == "step"]
    for r in rows if steps else []:  # the steps' rows split the stream's gaps
        mine = [s for s in steps if s["stream_id"] == r["stream_id"]]
        assert [sum(s[c] for s in mine) for c in ("gaps", "idle_ns", "host_wait_ns")] == [r["gaps"], r["idle_ns"], r["host_wait_ns"]]
    return {r["stream_id"]: tuple(r[f"{c}_ns"] / 1000 for c in CATEGORIES) for r in rows}


@pytest.mark.parametrize("case", list(HTA_READS))
def test_equal_to_hta_on_every_kineto_fixture(case, converted_path, tmp_path):
    for path in HTA_READS[case]:
        theirs = _hta_idle(path, tmp_path)
        ours = _ours(open_session(converted_path(as_hta_reads_it(path, tmp_path)), AnalysisOptions(scope="profiled")))
        assert sum(sum(v) for v in theirs.values()) > 0 or case == "kineto_triton_cuda_driver"  # one kernel: no gap
        if case != H100_2025:
            assert ours == theirs, path.name
            continue
        # One step: HTA filters nothing. (1) 7 kernels at the start were launched before the trace (no
        # launching call in it); HTA 0.5 takes as their launch the start of the JSON's first event
        # (its index_correlation 0, "no linked event", is also row 0's index: ProfilerStep#6), so 7
        # gaps (18 µs) are host_wait there; here no launch, no host wait: kernel_wait. (2) 22 of the
        # stream's operations round to a negative duration in HTA (end floored before start ceiled);
        # the rounded copy we read keeps them 0 long, so the 22 gaps after them are 1 µs shorter.
        assert set(ours) == set(theirs) == {7}
        assert theirs[7] == (ours[7][0] + 18, ours[7][1] - 18 + 22, 0.0) == (1543.0, 4145.0, 0.0)
        raw = load_raw(path)["traceEvents"]
        assert raw[0]["name"] == "ProfilerStep#6"
        on_7 = [e for e in raw if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and e["args"].get("stream") == 7]
        assert sum(math.floor(e["ts"] + e["dur"]) < math.ceil(e["ts"]) for e in on_7) == 22
        assert max(e["ts"] for e in on_7 if math.floor(e["ts"] + e["dur"]) < math.ceil(e["ts"])) < max(e["ts"] for e in on_7)


def test_hta_default_drops_the_last_step(converted_path, tmp_path):
    """HTA's default (include_last_profiler_step=False) also leaves out the GPU work launched in the
    last step: --scope profiled equals HTA only with include_last_profiler_step=True."""
    path = KINETO_TRACES["kineto_nccl_collectives"]
    ours = _ours(open_session(converted_path(as_hta_reads_it(path, tmp_path)), AnalysisOptions(scope="profiled")))
    default = _hta_idle(path, tmp_path, include_last_profiler_step=False)
    assert ours[7][0] == 542749.0 and default[7][0] == 357247.0


def _raw_breakdown(export: Path) -> dict[tuple[int, int], tuple[int, int, int, int]]:
    """HTA's definition on the raw nsys export: per (device, stream), (gaps, host, kernel, other ns).
    A runtime call launched the work with its correlationId in the same process (globalPid >> 24)."""
    raw = sqlite3.connect(f"file:{export}?mode=ro&immutable=1", uri=True)
    ops = []
    tables = {name for (name,) in raw.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    for table in tables & {"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"}:
        ops += raw.execute(f'SELECT deviceId, streamId, start, "end", correlationId, globalPid >> 24 FROM {table}').fetchall()
    calls: dict[tuple[int, int], int] = {}
    for start, corr, process in raw.execute("SELECT start, correlationId, globalTid >> 24 FROM CUPTI_ACTIVITY_KIND_RUNTIME"):
        calls[(corr, process)] = min(start, calls.get((corr, process), start))
    out = {}
    for key in {(o[0], o[1]) for o in ops}:
        mine = sorted((o for o in ops if (o[0], o[1]) == key), key=lambda o: (o[2], o[3]))
        sums = [0, 0, 0]
        for prev, op in zip(mine, mine[1:], strict=False):
            gap, launch = op[2] - prev[3], calls.get((op[4], op[5]))
            sums[0 if launch is not None and launch > prev[3] else 1 if gap < 30_000 else 2] += gap
        out[key] = (len(mine) - 1, *sums)
    return out


@pytest.mark.parametrize("case", list(NSYS_EXPORTS))
def test_nsys_exports_against_the_raw_export(case, converted_path):
    expected = _raw_breakdown(NSYS_EXPORTS[case])
    rows = [r for r in run_analysis(open_session(converted_path(NSYS_EXPORTS[case])), "gpu_idle_breakdown").records() if r["per"] == "stream"]
    ours = {(r["device_id"], r["stream_id"]): (r["gaps"], r["host_wait_ns"], r["kernel_wait_ns"], r["other_ns"]) for r in rows}
    assert ours == expected
    assert sum(v[0] for v in expected.values()) >= 2  # the mock RTX 3080 export has 3 operations
