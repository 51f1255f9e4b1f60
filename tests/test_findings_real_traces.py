"""Findings on every GPU fixture (the nsys exports and the Kineto GPU traces), each checked against
the raw trace (tests/raw_traces.py: the JSON / the sqlite export read directly, intervals merged in
Python): the numbers a finding states are the trace's, and -- both ways -- a finding is made
exactly where the raw trace crosses its threshold.
"""

from __future__ import annotations

import re
from collections import defaultdict
from itertools import pairwise

import pytest

from raw_traces import GPU_FIXTURES, clipped, merge, overlap, raw_runs
from xsp_trace.analyze import open_session, run_analysis
from xsp_trace.analyze.findings import DEVICE_BOUND_PCT, LONG_GAP_NS, MIN_SEVERITY, evidence, find
from xsp_trace.analyze.findings_base import ms_to_ns

pytestmark = pytest.mark.slow  # real traces

# Written out here, not imported: calls that wait for the GPU (CUDA Programming Guide, "Implicit
# Synchronization"; the *Synchronize calls; the Runtime API's "API synchronization behavior": an
# Async copy to or from pageable memory holds the CPU too), and the graph launches that replay many kernels.
SYNC_CALLS = re.compile(
    r"^(cuda|cu|hip)(Device|Ctx|Stream|Event)Synchronize$|^(cuda|hip)(Memcpy|Memset)(2D|3D)?$"
    r"|^(cuda|hip)(Free|FreeHost|HostRegister|HostUnregister)$"
)
ASYNC_COPY = re.compile(r"^(cuda|hip)Memcpy\w*Async$")
SYNC_BOUND_PCT = 25  # step_bound's documented default
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


def _raw_steps(run):
    """Per raw step: GPU busy on the GPUs that ran work launched in it, CPU time in launch calls that
    returned without waiting and in blocking calls (clipped to the step window, every thread of its
    process), the verdict, and the blocking calls starting in the step."""
    calls = run.calls()
    linked = {(g.pid, g.correlation) for g in run.gpu}
    out = {}
    for pid, iteration, lo, hi in run.steps:
        mine = [c for c in run.cpu if c.pid == pid and c.is_call and c.start < hi and c.end > lo]
        devices = {g.device for g in run.gpu if (c := calls.get((g.pid, g.correlation))) and c.pid == pid and lo <= c.start < hi}
        busy = sum(clipped(merge((g.start, g.end) for g in run.gpu if g.device == d), lo, hi) for d in devices)
        blocking = [c for c in mine if _blocks(run, c)]
        launch = sum(min(c.end, hi) - max(c.start, lo) for c in mine if (c.pid, c.correlation) in linked and c not in blocking)
        sync = sum(min(c.end, hi) - max(c.start, lo) for c in blocking)
        step = hi - lo
        verdict = (
            "device-bound"
            if 100 * busy / step >= DEVICE_BOUND_PCT
            else "sync-bound"
            if 100 * sync / step >= SYNC_BOUND_PCT
            else "launch-bound"
            if launch > busy
            else "host-bound"
        )
        out[iteration] = (step, busy, launch, sync, verdict, len([c for c in blocking if lo <= c.start < hi]))
    return out


@pytest.mark.parametrize("case", list(GPU_FIXTURES))
def test_every_finding_shows_its_evidence_rows(case, converted_path):
    found, evidence_rows, _ = _findings(case, converted_path)
    for f in found:
        assert evidence_rows[id(f)] > 0, f.evidence
        assert f.severity >= MIN_SEVERITY or f.kind == "healthy"
    assert [f.severity for f in found] == sorted((f.severity for f in found), reverse=True)


@pytest.mark.parametrize("case", list(GPU_FIXTURES))
def test_idle_gap_findings_are_true_of_the_raw_trace(case, converted_path):
    found, _, raw = _findings(case, converted_path)
    ours = {(f.facts["run_id"], f.facts["device_id"]): f for f in found if f.kind == "idle_gaps"}
    expected = set()
    for run_id, run in raw.items():
        for dev, (merged, window) in _windows(run).items():
            gaps = [(a[1], b[0]) for a, b in pairwise(merged) if b[0] - a[1] >= LONG_GAP_NS]
            idle = sum(e - s for s, e in gaps)
            if idle / window >= MIN_SEVERITY:
                expected.add((run_id, dev))
            f = ours.get((run_id, dev))
            if f is None:
                continue
            _close(f.facts["idle_ns"], idle, len(gaps))
            _close(f.facts["window_ns"], window)
            assert f.facts["gaps"] == len(gaps)
            # "Meanwhile the launching thread was in X": the gaps during which a CPU span named X
            # encloses the middle of the gap on the thread that launched the work ending it.
            by_thread = defaultdict(list)
            for c in run.cpu:
                if any(c.name == span for _, span, _, _ in f.facts["causes"]):
                    by_thread[(c.pid, c.tid)].append(c)
            for label, span, ns, n in f.facts["causes"]:
                if span is None or (label, span, ns, n) in f.facts["other_thread_causes"]:
                    continue
                inside, count = 0, 0
                for s, e in gaps:
                    mid = (s + e) // 2
                    launches = [run.launch_of(g) for g in run.starting_at(dev, e)]
                    if any(c and any(x.name == span and x.start <= mid < x.end for x in by_thread[(c.pid, c.tid)]) for c in launches):
                        inside, count = inside + (e - s), count + 1
                assert inside >= ns - 3 * n and count >= n, (label, inside, ns)
    assert set(ours) == expected


@pytest.mark.parametrize("case", list(GPU_FIXTURES))
def test_exposed_communication_findings_are_true_of_the_raw_trace(case, converted_path):
    found, _, raw = _findings(case, converted_path)
    ours = {(f.facts["run_id"], f.facts["device_id"]): f for f in found if f.kind == "exposed_communication"}
    expected = set()
    for run_id, run in raw.items():
        for dev, (_, window) in _windows(run).items():
            kernels = [g for g in run.gpu if g.device == dev and g.kind == "kernel"]
            comm = merge((g.start, g.end) for g in kernels if g.name.startswith("nccl"))
            comp = merge((g.start, g.end) for g in kernels if not g.name.startswith("nccl"))
            comm_ns = sum(e - s for s, e in comm)
            exposed = comm_ns - overlap(comm, comp)
            if comm_ns and exposed / window >= MIN_SEVERITY:
                expected.add((run_id, dev))
            if (run_id, dev) in ours:
                f = ours[(run_id, dev)]
                _close(f.facts["communication_ns"], comm_ns, len(comm))
                _close(f.facts["exposed_ns"], exposed, len(comm) + len(comp))
                _close(f.facts["window_ns"], window)
    assert set(ours) == expected


@pytest.mark.parametrize("case", list(GPU_FIXTURES))
def test_pageable_copy_findings_are_true_of_the_raw_trace(case, converted_path):
    found, _, raw = _findings(case, converted_path)
    ours = {f.facts["run_id"]: f for f in found if f.kind == "pageable_memcpy"}
    expected = set()
    for run_id, run in raw.items():
        copies = [g for g in run.gpu if g.pageable]
        windows = _windows(run)
        if not copies or not windows:
            continue
        ns, window = sum(g.end - g.start for g in copies), max(w for _, w in windows.values())
        held = sum(c.end - c.start for g in copies if (c := run.launch_of(g)))
        if max(ns, held) / window >= MIN_SEVERITY:
            expected.add(run_id)
        if run_id in ours:
            f = ours[run_id]
            assert (f.facts["copies"], f.facts["bytes"]) == (len(copies), sum(g.nbytes for g in copies))
            _close(f.facts["total_ns"], ns, len(copies))
            _close(f.facts["cpu_ns"], held, len(copies))
    assert set(ours) == expected


@pytest.mark.parametrize("case", list(GPU_FIXTURES))
def test_step_findings_are_true_of_the_raw_trace(case, converted_path):
    """Launch-bound and host-bound steps, and synchronising calls inside the steps."""
    found, _, raw = _findings(case, converted_path)
    ours = {
        (f.kind, f.facts["run_id"]): f
        for f in found
        if f.kind in ("host_bound_steps", "sync_bound_steps", "sync_in_loop") or (f.kind == "launch_bound" and f.analysis == "step_bound")
    }
    expected = set()
    for run_id, run in raw.items():
        if not run.gpu or not run.steps:
            continue
        steps = _raw_steps(run)
        total = sum(s[0] for s in steps.values())
        for kind, verdicts in (("launch_bound", {"launch-bound"}), ("host_bound_steps", {"host-bound"}), ("sync_bound_steps", {"sync-bound"})):
            hit = {i: s for i, s in steps.items() if s[4] in verdicts}
            if hit and sum(s[0] - s[1] for s in hit.values()) / total >= MIN_SEVERITY:
                expected.add((kind, run_id))
            if (kind, run_id) in ours:
                f = ours[(kind, run_id)]
                assert sorted(f.facts["iterations"]) == sorted(hit)
                _close(f.facts["gpu_busy_ns"], sum(s[1] for s in hit.values()), 1000)
                _close(f.facts["launch_ns"], sum(s[2] for s in hit.values()), 1000)
                _close(f.facts["sync_ns"], sum(s[3] for s in hit.values()), 1000)
        sync = sum(s[3] for s in steps.values())
        sync_bound = any(s[4] == "sync-bound" for s in steps.values())
        if sum(s[5] for s in steps.values()) and sync / total >= MIN_SEVERITY and not sync_bound:
            expected.add(("sync_in_loop", run_id))
        if ("sync_in_loop", run_id) in ours:
            f = ours[("sync_in_loop", run_id)]
            assert f.facts["calls_in_steps"] == sum(s[5] for s in steps.values())
            _close(f.facts["sync_ns"], sync, f.facts["calls_in_steps"])
    assert set(ours) == expected


@pytest.mark.parametrize("case", list(GPU_FIXTURES))
def test_run_launch_bound_findings_are_true_of_the_raw_trace(case, converted_path):
    """Runs without steps: kernel launch calls (graph launches aside) took more CPU time than the GPUs were busy."""
    found, _, raw = _findings(case, converted_path)
    ours = {f.facts["run_id"]: f for f in found if f.kind == "launch_bound" and f.analysis == "kernel_launch_stats"}
    expected = set()
    for run_id, run in raw.items():
        if run.steps or not run.gpu:
            continue
        pairs = [(g, run.launch_of(g)) for g in run.gpu if g.kind == "kernel"]
        launch = sum(c.end - c.start for g, c in pairs if c and not GRAPH_LAUNCH.search(c.name))
        windows = _windows(run)
        busy = sum(sum(e - s for s, e in m) for m, _ in windows.values())
        window = sum(w for _, w in windows.values())
        if launch > busy and 100 * busy / window < DEVICE_BOUND_PCT and (window - busy) / window >= MIN_SEVERITY:
            expected.add(run_id)
        if run_id in ours:
            _close(ours[run_id].facts["launch_ns"], launch, len(pairs))
            _close(ours[run_id].facts["gpu_busy_ns"], busy, len(run.gpu))
    assert set(ours) == expected


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
    assert {
        "idle_gaps",
        "launch_bound",
        "host_bound_steps",
        "sync_bound_steps",
        "sync_in_loop",
        "exposed_communication",
        "pageable_memcpy",
        "healthy",
    } <= set(kinds)


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


def test_blocking_pageable_copies_make_the_steps_sync_bound(converted_path):
    """HTA's A100 trace: 30 cudaMemcpyAsync Device -> Pageable copies under aten::to hold the CPU; the
    steps are sync-bound and the finding names the copies, their origin op, count and CPU time, as
    the raw JSON has them, with PyTorch's remedy and nothing about launches or CUDA graphs."""
    found, _, raw = _findings("kineto_pageable_dtoh_a100", converted_path)
    run = raw[1]
    copies = [g for g in run.gpu if g.pageable and g.name == "Memcpy DtoH (Device -> Pageable)"]
    calls = [run.launch_of(g) for g in copies]
    ops = [c for c in run.cpu if not c.is_call and c.name.startswith("aten::")]
    origins = {max((o for o in ops if o.tid == c.tid and o.start <= c.start and c.end <= o.end), key=lambda o: o.end - o.start).name for c in calls}
    held = sum(c.end - c.start for c in calls)
    assert (len(calls), origins, {c.name for c in calls}) == (30, {"aten::to"}, {"cudaMemcpyAsync"})
    assert 750e6 < held < 770e6
    steps = _raw_steps(run)
    assert {s[4] for s in steps.values()} == {"sync-bound"}
    (f,) = [f for f in found if f.kind == "sync_bound_steps"]
    assert f.facts["steps"] == 5 == len(steps)
    origin, name, endpoints, n, ns = f.facts["waits"][0]
    assert (origin, name, endpoints, n) == ("aten::to", "cudaMemcpyAsync", "Device -> Pageable", 30)
    _close(ns, held, 30)
    assert f"`aten::to` → cudaMemcpyAsync Device -> Pageable, 30 calls, {held / 1e6:.3g} ms" in f.text
    assert "pinned memory, or move `.cpu()`/`.item()` out of the step" in f.text
    assert "CUDA graphs" not in f.text and not any(f.kind == "launch_bound" for f in found)


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
