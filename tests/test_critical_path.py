"""The critical path of a step (xsp_trace/analyze/critical_path/walk.py, analyses critical_path and
critical_path_summary).

1. Hand-made traces (tests/support/handmade.py), one per edge kind, the expected path worked out by
   hand: CPU spans nested and serial on a thread, a launch to a kernel (queue delay), kernels serial on
   a stream (GPU idle between them), a synchronising call waiting for the GPU, a blocking copy to
   pageable memory, CPU idle between top-level spans, a thread waiting for another thread of its process.
2. Real traces: the path tiles every step (its length is the step's latency, read from the raw JSON's
   ProfilerStep events).
3. HTA: on HTA's own critical-path test traces (tests/data/critical_path_hta, and the AlexNet trace of
   kineto_cuda_sync_alexnet), over the window HTA analyses, the path's length equals HTA 0.5's
   (tests/data/critical_path_hta/hta_reference.csv, written by tests/references/hta_critical_path_reference.py,
   times in us from HTA's origin)
   once the time HTA's graph weighs zero is taken out -- its edges between top-level CPU ops
   (our cpu_idle), the time inside user annotations (ProfilerStep#N), a blocking call's own time and
   the return from it (our sync_wait). Within 0.2 % on three traces; on cuda_event_sync_multi_stream
   1.36 %: at one point HTA routes 16 us through a memset waiting on the other stream (its
   kernel-kernel and launch overheads) where the last-arriving dependency is the concurrent
   cudaEventQuery on the CPU (this walk follows the same cudaStreamWaitEvent edge, tested below).
"""

from __future__ import annotations

import csv
import gzip
import json

import pytest
from typer.testing import CliRunner

from conftest import DATA
from support.handmade import PID, TID, Run, write
from support.steps import backward_step, event_step, pageable_step, sync_step
from xsp_trace.analyze.critical_path.walk import load_run, prepare_chase, units, walk
from xsp_trace.analyze.session import AnalysisOptions, open_session, run_analysis
from xsp_trace.cli import app

runner = CliRunner()


def _path(tmp_path, run: Run) -> list[tuple]:
    db = write(tmp_path / "t.duckdb", [run])
    con = open_session(db, AnalysisOptions())
    result = run_analysis(con, "critical_path")
    at = {c: i for i, c in enumerate(result.columns)}
    return [(r[at["kind"]], r[at["name"]], r[at["offset_ns"]], r[at["on_path_ns"]]) for r in result.rows]


def test_cpu_bound_step_walks_the_thread_and_its_nesting(tmp_path):
    run = Run(1)
    run.span("annotation", "ProfilerStep#1", 0, 1000, iteration=1)
    run.span("op", "aten::linear", 100, 500)
    run.span("op", "aten::mm", 200, 300)
    run.span("op", "aten::relu", 600, 900)
    run.gpu("kernel", "gemm", (250, 280), (290, 295))  # launched inside aten::mm, finishes early: not on the path
    assert _path(tmp_path, run) == [
        ("cpu_op", "ProfilerStep#1", 0, 100),
        ("cpu_op", "aten::linear", 100, 100),
        ("cpu_op", "aten::mm", 200, 50),
        ("launch", "cudaLaunchKernel", 250, 30),
        ("cpu_op", "aten::mm", 280, 20),
        ("cpu_op", "aten::linear", 300, 200),
        ("cpu_op", "ProfilerStep#1", 500, 100),
        ("cpu_op", "aten::relu", 600, 300),
        ("cpu_op", "ProfilerStep#1", 900, 100),
    ]


def test_sync_waits_for_the_gpu_chain_launches_and_queue_delay(tmp_path):
    """A launch at [100,150) starts kernel A at 200 (50 ns queue delay); kernel B, launched at
    [160,170), runs after A on the same stream from 700 (A ends 600: 100 ns GPU idle? no -- B waits for
    A, so the stream gap [600,700) is B's own queue after A); cudaDeviceSynchronize [180,950) returns
    at 950 after B ends at 900."""
    run = sync_step()
    assert _path(tmp_path, run) == [
        ("cpu_op", "ProfilerStep#1", 0, 100),
        ("launch", "cudaLaunchKernel", 100, 50),
        ("queue_delay", "cudaLaunchKernel", 150, 50),
        ("kernel", "A", 200, 400),
        ("gpu_idle", None, 600, 100),
        ("kernel", "B", 700, 200),
        ("sync_wait", "cudaDeviceSynchronize", 900, 50),
        ("cpu_op", "ProfilerStep#1", 950, 50),
    ]


def test_a_copy_to_pageable_memory_blocks_and_puts_the_gpu_on_the_path(tmp_path):
    """cudaMemcpyAsync Device->Pageable [300,800): its copy runs [700,750) after kernel K [310,700)."""
    run = pageable_step()
    assert _path(tmp_path, run) == [
        ("cpu_op", "ProfilerStep#1", 0, 200),
        ("launch", "cudaLaunchKernel", 200, 50),
        ("queue_delay", "cudaLaunchKernel", 250, 60),
        ("kernel", "K", 310, 390),
        ("memcpy", "Memcpy DtoH", 700, 50),
        ("sync_wait", "cudaMemcpyAsync", 750, 50),
        ("cpu_op", "aten::to", 800, 10),
        ("cpu_op", "ProfilerStep#1", 810, 190),
    ]


def test_a_stream_waits_for_an_event_recorded_on_another(tmp_path):
    """Kernel A on stream 7 [100,500); cudaEventRecord after its launch, cudaStreamWaitEvent on stream 8
    (Kineto's "Stream Wait Event" activity names the record call); kernel B on stream 8, launched at
    [50,60), starts only when A ends (500): the path goes from B to A over the event, not to B's launch."""
    run = event_step(step_end=700)
    assert _path(tmp_path, run) == [
        ("cpu_op", "ProfilerStep#1", 0, 10),
        ("launch", "cudaLaunchKernel", 10, 10),
        ("queue_delay", "cudaLaunchKernel", 20, 80),
        ("kernel", "A", 100, 400),
        ("kernel", "B", 500, 100),
        ("sync_wait", "cudaDeviceSynchronize", 600, 50),
        ("cpu_op", "ProfilerStep#1", 650, 50),
    ]


def test_a_stream_held_by_an_event_is_a_stream_wait_naming_both_streams(tmp_path):
    """As above, but B on stream 8 starts 40 ns after A on stream 7 ends (540): that gap is B's
    stream waiting for stream 7 through the event -- stream_wait, charged to A (the work waited
    for) -- not gpu_idle, in the chase and the step-by-step walk alike; the summary names it."""
    run = event_step(step_end=700, b_start=540)
    assert _path(tmp_path, run) == [
        ("cpu_op", "ProfilerStep#1", 0, 10),
        ("launch", "cudaLaunchKernel", 10, 10),
        ("queue_delay", "cudaLaunchKernel", 20, 80),
        ("kernel", "A", 100, 400),
        ("stream_wait", "A", 500, 40),
        ("kernel", "B", 540, 100),
        ("sync_wait", "cudaDeviceSynchronize", 640, 10),
        ("cpu_op", "ProfilerStep#1", 650, 50),
    ]
    con = open_session(tmp_path / "t.duckdb", AnalysisOptions())
    waits = [r for r in run_analysis(con, "critical_path").records() if r["stream_wait"] is not None]
    assert [(r["kind"], r["stream_wait"]) for r in waits] == [("stream_wait", "stream 8 waited for stream 7")]
    (summary,) = run_analysis(con, "critical_path_summary").records()
    assert summary["stream_waits"] == "stream 8 waited for stream 7 0.0 ms"
    assert summary["top_on_path"].endswith("; stream 8 waited for stream 7 [stream_wait] 5.7 %")
    assert summary["share_by_kind_pct"].startswith("kernel 71.4 %, ")
    stepped, chased = load_run(con, 1), load_run(con, 1)
    prepare_chase(chased)
    assert walk(chased, 0, 700, (PID, TID)) == walk(stepped, 0, 700, (PID, TID))
    (wait,) = [s for s in walk(chased, 0, 700, (PID, TID)) if s.kind == "stream_wait"]
    assert [str(stepped.name(r)) for r in (wait.row, wait.waiter)] == ["A", "B"]


def test_work_a_graph_launch_queued_is_charged_to_cudaGraphLaunch(tmp_path):
    """One cudaGraphLaunch [100,150) queues G1 [300,400) and G2 [400,450) on stream 7 (both carry its
    correlation id, as Kineto and nsys record graph work); cudaDeviceSynchronize [160,500) waits for
    them: the 150 ns from the launch's return to G1 are its queue delay, charged to cudaGraphLaunch."""
    run = Run(1)
    run.span("annotation", "ProfilerStep#1", 0, 600, iteration=1)
    run.span("api", "cudaGraphLaunch", 100, 150, correlation_id=77, category="cuda_runtime")
    for name, start, end in (("G1", 300, 400), ("G2", 400, 450)):
        kernel = run.span("kernel", name, start, end, device_id=0, stream_id=7, correlation_id=77)
        run.side["kernels"].append({"run_id": 1, "span_id": kernel})
    run.span("api", "cudaDeviceSynchronize", 160, 500, category="cuda_runtime")
    assert _path(tmp_path, run) == [
        ("cpu_op", "ProfilerStep#1", 0, 100),
        ("launch", "cudaGraphLaunch", 100, 50),
        ("queue_delay", "cudaGraphLaunch", 150, 150),
        ("kernel", "G1", 300, 100),
        ("kernel", "G2", 400, 50),
        ("sync_wait", "cudaDeviceSynchronize", 450, 50),
        ("cpu_op", "ProfilerStep#1", 500, 100),
    ]


def test_a_thread_waiting_for_another_thread_of_its_process(tmp_path):
    """The step's thread calls backward ("## backward ##" [300,1800), its own op [300,350), then no
    child) while a worker thread (tid 101) runs the backward: MulBackward0 [500,900) launches kernel G
    [700,1400); a sync op [1150,1700) waits in cudaStreamSynchronize [1200,1650) for G; the step's
    thread resumes at 1800, 100 ns after the worker's last op. The path runs through the worker,
    from the end of the wait to its last op and from its first op back to where the wait began
    (thread_wait); the wait's own 1.45 us is not the annotation's CPU time. A third thread (102) that
    only polls the runtime inside the wait is not waited for, nor is the worker's short op at the
    step's end (under a quarter of that stretch)."""
    run = backward_step(sync_op_start=1150)
    run.span("api", "cudaEventQuery", 1750, 1790, category="cuda_runtime", tid=102)
    run.span("op", "aten::add", 1850, 1950)
    run.span("op", "aten::zeros", 1960, 1965, tid=101)  # 10 % of the step's own time [1950,2000): no wait
    assert _path(tmp_path, run) == [
        ("cpu_op", "ProfilerStep#1", 0, 100),
        ("cpu_op", "aten::mul", 100, 100),
        ("cpu_op", "ProfilerStep#1", 200, 100),
        ("cpu_op", "aten::ones_like", 300, 50),
        ("thread_wait", "## backward ##", 350, 150),
        ("cpu_op", "MulBackward0", 500, 100),
        ("launch", "cudaLaunchKernel", 600, 20),
        ("queue_delay", "cudaLaunchKernel", 620, 80),
        ("kernel", "G", 700, 700),
        ("sync_wait", "cudaStreamSynchronize", 1400, 250),
        ("cpu_op", "aten::_local_scalar_dense", 1650, 50),
        ("thread_wait", "## backward ##", 1700, 100),
        ("cpu_op", "ProfilerStep#1", 1800, 50),
        ("cpu_op", "aten::add", 1850, 100),
        ("cpu_op", "ProfilerStep#1", 1950, 50),
    ]


def test_an_async_copy_to_pinned_memory_does_not_block(tmp_path):
    run = Run(1)
    run.span("annotation", "ProfilerStep#1", 0, 1000, iteration=1)
    run.memop("memcpy", (300, 320), (400, 900), "DtoH", 4096, src="Device", dst="Pinned")
    kinds = [row[0] for row in _path(tmp_path, run)]
    assert kinds == ["cpu_op", "launch", "cpu_op"]


def test_cpu_idle_between_top_level_spans_of_a_run_without_steps(tmp_path):
    run = Run(1)
    run.span("op", "aten::add", 0, 100)
    run.span("op", "aten::mul", 400, 500)
    assert _path(tmp_path, run) == [("cpu_op", "aten::add", 0, 100), ("cpu_idle", None, 100, 300), ("cpu_op", "aten::mul", 400, 100)]


def _profiler_steps(trace) -> dict[int, int]:
    """iteration -> ProfilerStep#N duration (ns) from the raw JSON (ts/dur in us)."""
    events = json.loads(gzip.open(trace).read())["traceEvents"]
    steps = {}
    for e in events:
        name = str(e.get("name", ""))
        if e.get("ph") == "X" and name.startswith("ProfilerStep#") and e.get("cat") in ("user_annotation", "cpu_op"):
            steps[int(name.split("#")[1])] = round(float(e["dur"]) * 1000)
    return steps


@pytest.mark.parametrize(
    "trace",
    [
        DATA / "kineto_2022_integer_us_rank3" / "hta_a100_rank3_of_8_2022.json.gz",
        DATA / "critical_path_hta" / "cuda_event_sync.json.gz",
        DATA / "kineto_two_ranks_sendrecv" / "sampled_rank-0.json.gz",
    ],
    ids=lambda p: p.parent.name + "/" + p.name.split(".")[0],
)
def test_the_path_tiles_every_step(trace, converted):
    con = converted(trace)
    from xsp_trace.analyze.session import prepare

    prepare(con, AnalysisOptions())
    result = run_analysis(con, "critical_path")
    at = {c: i for i, c in enumerate(result.columns)}
    by_step: dict[int, list] = {}
    for r in result.rows:
        by_step.setdefault(r[at["iteration"]], []).append(r)
    expected = _profiler_steps(trace)
    assert expected and sorted(by_step) == sorted(expected)
    for iteration, rows in by_step.items():
        assert sum(r[at["on_path_ns"]] for r in rows) == expected[iteration]
        offsets = [r[at["offset_ns"]] for r in rows]
        lengths = [r[at["on_path_ns"]] for r in rows]
        assert offsets[0] == 0 and all(o + n == nxt for o, n, nxt in zip(offsets, lengths, offsets[1:], strict=False))
    summary = run_analysis(con, "critical_path_summary")
    assert all(r[summary.columns.index("path_ns")] == r[summary.columns.index("latency_ns")] for r in summary.rows)


@pytest.mark.parametrize(
    "trace",
    [
        DATA / "kineto_2024_ns_resolution" / "hta_v100_ns_resolution_2024.json.gz",
        DATA / "critical_path_hta" / "cuda_event_sync_multi_stream.json.gz",
        DATA / "kineto_2022_integer_us_rank3" / "hta_a100_rank3_of_8_2022.json.gz",  # cross-thread waits
    ],
    ids=lambda p: p.parent.name,
)
def test_chasing_precomputed_hops_gives_the_step_by_step_path(trace, converted):
    """The chase (critical_path/chase.py) against the step-by-step walk it replaces, segment by
    segment, from every step's end and from the end of every 50th GPU item (a path that starts on a stream)."""
    con = converted(trace)
    from xsp_trace.analyze.session import prepare

    prepare(con, AnalysisOptions())
    stepped, chased = load_run(con, 1), load_run(con, 1)
    prepare_chase(chased)
    assert chased.chase is not None and stepped.chase is None
    starts = [(int(u[3]), int(u[4]), (int(u[5]), int(u[6])), None) for u in units(con)]
    gpu_rows = [int(r) for rows in stepped.streams.values() for r in rows[::50]]
    first = min(s for s, *_ in starts)
    starts += [(first, int(stepped.spans["end_ns"][r]), starts[0][2], r) for r in gpu_rows]
    for start, end, thread, row in starts:
        expected = walk(stepped, start, end, thread, gpu_row=row)
        assert walk(chased, start, end, thread, gpu_row=row) == expected
        assert sum(s.end_ns - s.start_ns for s in expected) == end - start


HTA_CASES = {
    "alexnet": (DATA / "kineto_cuda_sync_alexnet" / "hta_a100_alexnet.json.gz", 0.2),
    "simple_add": (DATA / "critical_path_hta" / "simple_add.json.gz", 0.2),
    "cuda_event_sync": (DATA / "critical_path_hta" / "cuda_event_sync.json.gz", 0.2),
    "cuda_event_sync_multi_stream": (DATA / "critical_path_hta" / "cuda_event_sync_multi_stream.json.gz", 1.5),
}


def _hta_reference() -> dict[str, dict]:
    with open(DATA / "critical_path_hta" / "hta_reference.csv") as f:
        rows = list(csv.DictReader(f))
    return {r["case"]: r for r in rows}


def _hta_origin(con, trace, hta_origin_us: int) -> int:
    """HTA's origin (the raw ts of the first event it keeps) on our clock: our spans keep the raw
    trace's times up to a constant, read off our first span and the raw event it comes from. (On
    these four traces HTA's origin is our first span; the raw trace's first event is up to 42.5 ms
    earlier, an event neither side keeps.)"""
    name, first_ns = con.execute("SELECT name, start_ns FROM spans ORDER BY start_ns, span_id LIMIT 1").fetchone()
    raw = min(float(e["ts"]) for e in json.loads(gzip.open(trace).read())["traceEvents"] if e.get("ph") == "X" and e.get("name") == name)
    return first_ns + round((hta_origin_us - raw) * 1000)


@pytest.mark.parametrize("case", sorted(HTA_CASES))
def test_path_length_agrees_with_hta(case, converted):
    trace, tolerance_pct = HTA_CASES[case]
    reference = _hta_reference()[case]
    con = converted(trace)
    from xsp_trace.analyze.session import prepare

    prepare(con, AnalysisOptions())
    origin = _hta_origin(con, trace, int(reference["hta_origin_us"]))
    start = origin + int(reference["path_start_ns"]) * 1000
    end = origin + int(reference["path_end_ns"]) * 1000
    pid, tid = con.execute(
        "SELECT pid, tid FROM spans WHERE tid IS NOT NULL AND stream_id IS NULL AND end_ns <= ? ORDER BY end_ns DESC LIMIT 1", [end]
    ).fetchone()
    run = load_run(con, 1)
    segments = walk(run, start, end, (pid, tid))
    assert sum(s.end_ns - s.start_ns for s in segments) == end - start
    weighed_zero_by_hta = sum(
        s.end_ns - s.start_ns
        for s in segments
        if s.kind in ("cpu_idle", "sync_wait")
        or (s.row >= 0 and str(run.spans["kind"][s.row]) == "annotation")
        or (s.row >= 0 and run.blocking[s.row] and s.kind != "queue_delay")
    )
    hta_ns = int(reference["hta_path_ns"]) * 1000
    ours = end - start - weighed_zero_by_hta
    assert abs(ours - hta_ns) <= tolerance_pct / 100 * hta_ns, (ours, hta_ns)


@pytest.mark.slow
def test_analyze_prints_the_summary(tmp_path):
    result = runner.invoke(
        app, ["analyze", str(DATA / "critical_path_hta" / "cuda_event_sync.json.gz"), "-a", "critical_path_summary", "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.stdout)["critical_path_summary"]
    assert row["iteration"] == 100 and row["path_ns"] == row["latency_ns"] == 3154000
    assert row["top_on_path"].startswith("aten::empty [cpu_op] 69.3")


def _two_ranks() -> list[Run]:
    """Rank 0 (run 1) spends 600 ns in a slow op before its all-reduce; rank 1 (run 2) arrives at
    120 ns and its all-reduce kernel waits until rank 0's starts (620 ns); both end at 900 ns."""
    runs = []
    for run_id, (op, op_end) in ((1, ("aten::slow_dataloader_step", 600)), (2, ("aten::fast_step", 100))):
        run = Run(run_id, rank=run_id - 1)
        run.span("annotation", "ProfilerStep#7", 0, 1000, iteration=7)
        run.span("op", op, 0, op_end)
        run.gpu("kernel", "ncclKernel_AllReduce_RING_LL_Sum_float", (op_end, op_end + 10), (op_end + 20, 900))
        run.span("api", "cudaDeviceSynchronize", op_end + 10, 950, category="cuda_runtime")
        runs.append(run)
    return runs


@pytest.mark.slow
def test_the_path_crosses_into_the_rank_that_arrived_last(tmp_path):
    db = write(tmp_path / "ranks.duckdb", _two_ranks())
    con = open_session(db, AnalysisOptions())
    result = run_analysis(con, "critical_path")
    at = {c: i for i, c in enumerate(result.columns)}
    rank1 = [(r[at["on_run_id"]], r[at["kind"]], r[at["name"]], r[at["on_path_ns"]]) for r in result.rows if r[at["run_id"]] == 2]
    assert rank1 == [
        (1, "cpu_op", "aten::slow_dataloader_step", 600),
        (1, "launch", "cudaLaunchKernel", 10),
        (1, "queue_delay", "cudaLaunchKernel", 10),
        (2, "communication", "ncclKernel_AllReduce_RING_LL_Sum_float", 280),
        (2, "sync_wait", "cudaDeviceSynchronize", 50),
        (2, "cpu_op", "ProfilerStep#7", 50),
    ]
    rank0 = [r for r in result.rows if r[at["run_id"]] == 1]
    assert {r[at["on_run_id"]] for r in rank0} == {1}  # the straggler waited for nobody
    summary = run_analysis(con, "critical_path_summary")
    by_run = {r[summary.columns.index("run_id")]: dict(zip(summary.columns, r, strict=True)) for r in summary.rows}
    assert by_run[2]["waited_for_runs"] == "1" and by_run[1]["waited_for_runs"] is None
    assert by_run[2]["top_on_path"].startswith("run 1: aten::slow_dataloader_step [cpu_op] 60.0")


@pytest.mark.slow
def test_two_real_ranks_in_one_database(tmp_path):
    """Two ranks of a real job (kineto_two_ranks_sendrecv) in one database: both CPU-bound (the main
    thread's ops hold 97-99.6 % of every path), so no path crosses ranks, and each step's path still
    equals its ProfilerStep's duration in the raw JSON."""
    folder = DATA / "kineto_two_ranks_sendrecv"
    db = tmp_path / "two.duckdb"
    traces = [folder / "sampled_rank-0.json.gz", folder / "sampled_rank-1.json.gz"]
    assert runner.invoke(app, ["convert", *map(str, traces), "-o", str(db), "-q"]).exit_code == 0
    summary = run_analysis(open_session(db, AnalysisOptions()), "critical_path_summary")
    rows = [dict(zip(summary.columns, r, strict=True)) for r in summary.rows]
    for run_id, trace in enumerate(traces, start=1):
        expected = _profiler_steps(trace)
        got = {r["iteration"]: r["path_ns"] for r in rows if r["run_id"] == run_id}
        assert got == expected and len(got) == 2
    assert all(r["waited_for_runs"] is None for r in rows)


def test_analyze_timeout_stops_python_work_too(converted_path):
    """The critical path's walk is Python: --timeout stops it with one line (an alarm), as it stops
    a DuckDB query (an interrupt)."""
    import time

    database = converted_path(DATA / "kineto_2022_integer_us_rank3" / "hta_a100_rank3_of_8_2022.json.gz")
    started = time.monotonic()
    result = runner.invoke(app, ["analyze", str(database), "-a", "critical_path", "--timeout", "0.2"])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "stopped after 0.2 s (--timeout)" in lines[0]
    assert time.monotonic() - started < 60


def test_the_report_plots_each_steps_path_by_kind(converted_path, tmp_path):
    """The HTML report's critical-path plot: one bar per step, its parts (one per kind) adding up to
    the step's latency from the raw JSON."""
    import re

    trace = DATA / "kineto_2022_integer_us_rank3" / "hta_a100_rank3_of_8_2022.json.gz"
    report = tmp_path / "r.html"
    result = runner.invoke(app, ["analyze", str(converted_path(trace)), "-a", "step_bound", "--report", str(report), "--limit", "1"])
    assert result.exit_code == 0, result.output
    html = report.read_text()
    at = html.index("critical path of each step, by kind")
    plot = html[html.rfind("<svg", 0, at) : html.index("</svg>", at)]
    bars = re.findall(r'<text class="label" [^>]*>(step \d+)<title>.*?</text>(.*?)(?=<text class="label"|<g class="axis)', plot)
    expected = _profiler_steps(trace)
    assert [label for label, _ in bars] == [f"step {i}" for i in sorted(expected)]
    for label, parts in bars:
        total_ms = sum(float(v) for v in re.findall(r"<title>[a-z_]+: ([0-9.e+-]+) ms</title>", parts))
        assert abs(total_ms - expected[int(label.split()[1])] / 1e6) < 0.01  # parts are printed to 4 significant digits
