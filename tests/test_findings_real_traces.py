"""Findings on every GPU fixture (the nsys exports and the Kineto GPU traces), checked against the raw
trace (tests/raw_traces.py: the JSON / the sqlite export read directly, intervals merged in Python)
and against the cause the trace's own numbers show: a busy GPU is the cause, not the waits on it;
a GPU stalled on another stream is not a launch or sync problem; every stated gain is the replay's.
"""

from __future__ import annotations

import re
from collections import defaultdict

import pytest

from raw_traces import GPU_FIXTURES, clipped, merge, raw_runs
from xsp_trace.analyze.critical_path.what_if import parse_rule, step_gain
from xsp_trace.analyze.findings.find import MIN_SEVERITY, evidence, find
from xsp_trace.analyze.findings.record import ms_to_ns
from xsp_trace.analyze.session import open_session, run_analysis

pytestmark = pytest.mark.slow  # real traces

# Written out here, not imported: calls that wait for the GPU (CUDA Programming Guide, "Implicit
# Synchronization"; the *Synchronize calls; the Runtime API's "API synchronization behavior": an
# Async copy to or from pageable memory holds the CPU too), and the graph launches that replay many kernels.
SYNC_CALLS = re.compile(
    r"^(cuda|cu|hip)(Device|Ctx|Stream|Event)Synchronize$|^(cuda|hip)(Memcpy|Memset)(2D|3D)?$"
    r"|^(cuda|hip)(Free|FreeHost|HostRegister|HostUnregister)$"
)
ASYNC_COPY = re.compile(r"^(cuda|hip)Memcpy\w*Async$")
GRAPH_LAUNCH = re.compile(r"GraphLaunch")

_cache: dict[str, tuple] = {}


def _findings(case, converted_path):
    if case not in _cache:
        path = converted_path(*GPU_FIXTURES[case])
        con = open_session(path)
        found = find(con)
        _cache[case] = (found, {id(f): len(evidence(con, f).rows) for f in found}, raw_runs(case))
        con.close()
    return _cache[case]


def _windows(run):
    out = {}
    for dev in {g.device for g in run.gpu}:
        merged = merge((g.start, g.end) for g in run.gpu if g.device == dev)
        out[dev] = (merged, merged[-1][1] - merged[0][0])
    return out


def _close(ours, theirs, items=1):
    """Equal up to the rounding of µs timestamps to ns (1 ns per interval end) and of the analyses' ms columns."""
    assert ours == pytest.approx(theirs, rel=1e-6, abs=3 * max(items, 1)), (ours, theirs)


def _blocks(run, c) -> bool:
    """A call that holds the CPU until the GPU (or the staging of a pageable copy) is done."""
    if SYNC_CALLS.match(c.name):
        return True
    return bool(ASYNC_COPY.match(c.name)) and any(g.pageable for g in run.launched_by(c))


@pytest.mark.parametrize("case", list(GPU_FIXTURES))
def test_every_finding_shows_its_evidence_rows(case, converted_path):
    found, evidence_rows, _ = _findings(case, converted_path)
    for f in found:
        assert evidence_rows[id(f)] > 0, f.evidence
        assert f.severity >= MIN_SEVERITY or f.kind == "healthy"
    assert [f.severity for f in found] == sorted((f.severity for f in found), reverse=True)


@pytest.mark.parametrize("case", list(GPU_FIXTURES))
def test_no_leveled_findings_without_layers_metrics_or_levels(case, converted_path):
    """These traces carry no xsp layer ranges, no hardware metrics and no leveled runs."""
    found, _, raw = _findings(case, converted_path)
    assert not any(c.name.startswith(("xsp.layer:", "xsp.model:")) for run in raw.values() for c in run.cpu)
    assert {f.kind for f in found} & {"memory_bound_kernels", "non_gpu_layers", "profiling_overhead", "program_changed"} == set()


def test_the_fixtures_give_findings(converted_path):
    kinds = defaultdict(set)
    for case in GPU_FIXTURES:
        for f in _findings(case, converted_path)[0]:
            kinds[f.kind].add(case)
    assert {"gpu_bound", "cpu_bound", "cpu_before_gpu", "optimizer", "launch_overhead", "gpu_copies", "stream_wait"} <= set(kinds)


@pytest.mark.parametrize("case", list(GPU_FIXTURES))
def test_healthy_line_only_for_runs_without_findings(case, converted_path):
    """Each GPU of a run without findings gets one line with its busy share (merged raw intervals)."""
    found, _, raw = _findings(case, converted_path)
    healthy = [f for f in found if f.kind == "healthy"]
    others = {f.facts.get("run_id") for f in found if f.kind != "healthy"}
    expected = []
    for run_id, run in raw.items():
        if run_id in others:
            continue
        for dev, (merged, window) in sorted(_windows(run).items()):
            expected.append(f"GPU {dev} of run {run_id} busy {100 * sum(e - s for s, e in merged) / window:.1f} %: nothing above 1.0 %.")
    assert sorted(f.text for f in healthy) == sorted(expected)


def _busy_share(run) -> float:
    """GPU busy time inside the raw steps (merged intervals of every GPU) over the steps' time."""
    busy = merge((g.start, g.end) for g in run.gpu)
    steps = [(lo, hi) for _, _, lo, hi in run.steps]
    return sum(clipped(busy, lo, hi) for lo, hi in steps) / sum(hi - lo for lo, hi in steps)


def test_a_busy_gpu_is_the_cause_not_the_waits_on_it(converted_path):
    """HTA's V100 trace with CUDA graphs: its GPU is busy ~90 % of the steps (raw intervals), and the
    CPU's 120 waits (cudaStreamSynchronize, blocking copies) fall while it runs: the top finding is the
    GPU's computation, and no wait is blamed, since the GPU had work to run through them."""
    found, _, raw = _findings("kineto_cuda_graphs_v100_2022", converted_path)
    assert _busy_share(raw[1]) > 0.85
    assert found[0].kind == "gpu_bound"
    assert not [f for f in found if f.kind == "sync_gpu_idle"]
    assert not any("pin" in f.text for f in found)


def test_graph_work_stalled_on_another_stream_is_no_launch_or_sync_problem(converted_path):
    """HTA's A100 trace: most of each step the whole GPU sits idle while work it was given waits on
    another stream's (HTA's idle breakdown: almost all 'other', not host wait). The top finding names
    that stall; pinned memory and moving waits out of the loop, which would not help, are not advised."""
    found, _, raw = _findings("kineto_pageable_dtoh_a100", converted_path)
    assert _busy_share(raw[1]) < 0.5
    assert found[0].kind == "stream_wait"
    assert not any(f.kind in ("sync_gpu_idle", "data_loading") for f in found)
    assert not any("pin_memory" in f.text or "pinned" in f.text for f in found)


@pytest.mark.parametrize("case", list(GPU_FIXTURES))
def test_stated_gains_are_the_replays(case, converted_path):
    """Every gain a finding states is the what-if replay's for the rule it names, over its steps, and
    never more than the steps' measured time."""
    path = converted_path(*GPU_FIXTURES[case])
    con = open_session(path)
    for f in _findings(case, converted_path)[0]:
        if "what_if" not in f.facts:
            continue
        measured, predicted = step_gain(con, f.facts["run_id"], f.facts["iterations"], [parse_rule(f.facts["what_if"])])
        assert (f.facts["measured_ns"], f.facts["predicted_ns"]) == (measured, predicted)
        assert 0 <= predicted <= measured, f.text


@pytest.mark.parametrize("case", ["kineto_pageable_dtoh_a100", "kineto_2022_integer_us_rank3", "kineto_two_ranks_sendrecv"])
def test_step_thread_time_split_equals_the_raw_trace(case, converted_path):
    """step_bound's split of the loop thread's time (launch + sync + host + idle = the step) against the
    raw JSON: its calls and spans clipped to the step window, their union merged in Python."""
    rows = run_analysis(open_session(converted_path(*GPU_FIXTURES[case])), "step_bound").records()
    checked = 0
    for run_id, run in raw_runs(case).items():
        linked = {(g.pid, g.correlation) for g in run.gpu}
        for pid, iteration, lo, hi in run.steps:
            (step,) = [c for c in run.cpu if c.pid == pid and c.name == f"ProfilerStep#{iteration}" and (c.start, c.end) == (lo, hi)]
            mine = [c for c in run.cpu if c.pid == pid and c.tid == step.tid and c is not step and c.start < hi and c.end > lo]
            covered = clipped(merge((c.start, c.end) for c in mine), lo, hi)
            calls = [c for c in mine if c.is_call]
            sync = sum(min(c.end, hi) - max(c.start, lo) for c in calls if _blocks(run, c))
            launch = sum(min(c.end, hi) - max(c.start, lo) for c in calls if not _blocks(run, c) and (c.pid, c.correlation) in linked)
            (row,) = [r for r in rows if (r["run_id"], r["iteration"]) == (run_id, iteration)]
            ours = [ms_to_ns(row[f"thread_{k}_ms"]) for k in ("launch", "sync", "host", "idle")]
            assert ours == pytest.approx([launch, sync, covered - launch - sync, (hi - lo) - covered], abs=1), (case, iteration)
            assert sum(ours) == pytest.approx(hi - lo, abs=4)
            checked += 1
    assert checked >= 2
