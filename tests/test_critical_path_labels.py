"""The critical path's labels on real traces (analyses critical_path, critical_path_summary): a queue
delay is charged to the call that launched the work as the raw trace records it -- the runtime event
that carries the GPU item's correlation id (cudaLaunchKernel, cudaGraphLaunch, ...), read here from
the raw JSON, not from the converter's tables.

On kineto_pageable_dtoh_a100 the queue delays of 138-146 ms in steps 550-552 and 554 lie before
fbgemm_gpu::permute_2D_lengths_kernel on stream 27, which the raw trace launches by cudaLaunchKernel
(not by cudaGraphLaunch): the stream waited for stream 7 (the kernel starts 3-7 us after a stream-7
item ends, after cudaStreamWaitEvent calls on the launching thread), but this 2023 trace records
neither the waits' streams nor Kineto's "Stream Wait Event" activities, so no event links them.
"""

from __future__ import annotations

import gzip
import json

import pytest

from conftest import DATA
from xsp_trace.analyze.critical_path.walk import load_run
from xsp_trace.analyze.session import AnalysisOptions, prepare, run_analysis

PAGEABLE = DATA / "kineto_pageable_dtoh_a100" / "hta_a100_pageable_dtoh_rank0.json.gz"
GRAPHS = DATA / "kineto_cuda_graphs_v100_2022" / "hta_v100_cuda_graphs_rank1_2022.json.gz"

_HELD = """
    SELECT p.iteration, p.name, p.on_path_ns, g.correlation_id, g.name
    FROM (SELECT *, lead(span_id) OVER (PARTITION BY run_id, step_span_id ORDER BY seq) AS held FROM xsp_critical_path) AS p
    JOIN spans AS g ON g.run_id = p.run_id AND g.span_id = p.held AND g.stream_id IS NOT NULL
    WHERE p.kind = 'queue_delay'
    ORDER BY p.iteration, p.on_path_ns DESC
"""


def _runtime_calls(trace) -> dict[int, str]:
    """correlation id -> the name of the runtime (or driver) call that carries it, from the raw JSON."""
    events = json.loads(gzip.open(trace).read())["traceEvents"]
    return {
        int(e["args"]["correlation"]): e["name"]
        for e in events
        if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in (e.get("args") or {})
    }


@pytest.mark.parametrize("trace", [PAGEABLE, GRAPHS], ids=lambda p: p.parent.name)
def test_a_queue_delay_is_charged_to_the_launch_the_trace_records(trace, converted):
    con = converted(trace)
    prepare(con, AnalysisOptions())
    run_analysis(con, "critical_path")
    calls = _runtime_calls(trace)
    held = con.execute(_HELD).fetchall()
    assert held
    assert [name for _, name, _, _, _ in held] == [calls[correlation] for _, _, _, correlation, _ in held]
    # the graph work is linked to its cudaGraphLaunch, the launcher a queue delay ahead of it would name
    run = load_run(con, 1)
    launched = run.launch_of >= 0
    graph_work = launched & (run.names(run.launch_of.clip(0)) == "cudaGraphLaunch")
    recorded = {c for c, name in calls.items() if name == "cudaGraphLaunch"}
    correlation = dict(con.execute("SELECT span_id, correlation_id FROM spans WHERE stream_id IS NOT NULL").fetchall())
    graph_spans = {int(s) for s in run.spans["span_id"][graph_work]}
    assert graph_spans and graph_spans == {s for s, c in correlation.items() if c in recorded}


def test_the_long_queue_delays_of_the_pageable_trace_are_cudaLaunchKernel_as_recorded(converted):
    con = converted(PAGEABLE)
    prepare(con, AnalysisOptions())
    run_analysis(con, "critical_path")
    calls = _runtime_calls(PAGEABLE)
    longest = {}
    for iteration, name, ns, correlation, kernel in con.execute(_HELD).fetchall():
        longest.setdefault(iteration, (name, ns, calls[correlation], kernel))
    assert sorted(i for i, (_, ns, _, _) in longest.items() if ns > 100e6) == [550, 551, 552, 554]
    for iteration in (550, 551, 552, 554):
        name, ns, recorded, kernel = longest[iteration]
        assert (name, recorded) == ("cudaLaunchKernel", "cudaLaunchKernel") and 138e6 <= ns <= 147e6
        assert kernel.startswith("void fbgemm_gpu::permute_2D_lengths_kernel")
