"""Idle-time analyses on real traces against independent references: nsys's own kernexecsum, and
the raw nsys export / Kineto JSON read with the standard library (intervals merged in Python)."""

from __future__ import annotations

import gzip
import json
import sqlite3
from itertools import pairwise
from pathlib import Path

import pytest

from conftest import NSYS_EXPORTS, nsys_stats, without_backtrace_rows
from raw_traces import GPU_FIXTURES, merge, raw_runs
from xsp_trace.analyze.session import open_session, run_analysis
from xsp_trace.formats import nsys_export as fmt

pytestmark = pytest.mark.slow  # real traces

H100 = "nsys_2026_pytorch_2xh100"
TWO_RANKS = sorted((Path(__file__).parent / "data" / "kineto_two_ranks_sendrecv").glob("sampled_rank-*.json.gz"))


def _session(converted_path, *paths):
    return open_session(converted_path(*paths))


def _on_run_clock(con, rows: list[dict], *columns: str) -> list[dict]:
    """The rows with their time columns back on the run clock: analyses show times after the run's
    origin (runs.origin_ns), the raw export its session clock."""
    origin = dict(con.execute("SELECT run_id, origin_ns FROM runs").fetchall())
    return [{**r, **{c: r[c] + origin[r["run_id"]] for c in columns}} for r in rows]


def _raw(case):
    return sqlite3.connect(f"file:{NSYS_EXPORTS[case]}?mode=ro&immutable=1", uri=True)


def _merge(intervals):
    out = []
    for s, e in sorted(intervals):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


@pytest.mark.parametrize("case", list(NSYS_EXPORTS))
def test_kernel_launch_stats_equal_kernexecsum(case, converted_path, tmp_path):
    ref = nsys_stats(without_backtrace_rows(NSYS_EXPORTS[case], tmp_path), "kernexecsum", tmp_path)
    assert ref
    cols = [
        "Count",
        "QCount",
        "AAvg (ns)",
        "AMed (ns)",
        "AMin (ns)",
        "AMax (ns)",
        "AStdDev (ns)",
        "QAvg (ns)",
        "QMed (ns)",
        "QMin (ns)",
        "QMax (ns)",
        "QStdDev (ns)",
        "KAvg (ns)",
        "KMed (ns)",
        "KMin (ns)",
        "KMax (ns)",
        "KStdDev (ns)",
    ]
    theirs = {
        (int(r["PID"]), int(r["TID"]), int(r["DevId"]), fmt.API_NAME_VERSION_SUFFIX.sub("", r["API Name"]), r["Kernel Name"]): tuple(
            float(r[c]) if r[c] not in ("", "None") else None for c in cols
        )
        for r in ref
    }
    ours_cols = [
        "launches",
        "queued",
        "api_avg_ns",
        "api_med_ns",
        "api_min_ns",
        "api_max_ns",
        "api_stddev_ns",
        "queue_avg_ns",
        "queue_med_ns",
        "queue_min_ns",
        "queue_max_ns",
        "queue_stddev_ns",
        "kernel_avg_ns",
        "kernel_med_ns",
        "kernel_min_ns",
        "kernel_max_ns",
        "kernel_stddev_ns",
    ]
    ours = {
        (r["pid"], r["tid"], r["device_id"], r["api_name"], r["kernel_name"]): tuple(None if r[c] is None else float(r[c]) for c in ours_cols)
        for r in run_analysis(_session(converted_path, NSYS_EXPORTS[case]), "kernel_launch_stats").records()
    }
    assert ours == theirs


def test_idle_gaps_against_the_raw_export(converted_path):
    """Gaps between merged GPU activities per device, the op that ends each, its launch call and thread."""
    raw = _raw(H100)
    strings = dict(raw.execute("SELECT id, value FROM StringIds"))
    acts = []
    for table in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"):
        acts += raw.execute(f'SELECT deviceId, start, "end", correlationId, globalPid FROM {table}').fetchall()
    calls = {
        (corr, gtid >> 24): (start, strings[name], gtid & 0xFFFFFF)
        for start, name, corr, gtid in raw.execute("SELECT start, nameId, correlationId, globalTid FROM CUPTI_ACTIVITY_KIND_RUNTIME")
    }
    expected = {}
    for dev in {a[0] for a in acts}:
        mine = [a for a in acts if a[0] == dev]
        merged = _merge([(a[1], a[2]) for a in mine])
        for (_, end), (nxt, _) in pairwise(merged):
            if nxt - end >= 1000:
                first = min((a for a in mine if a[1] == nxt), key=lambda a: a[3])
                call = calls.get((first[3], first[4] >> 24))
                expected[(dev, end)] = (nxt - end, call and fmt.API_NAME_VERSION_SUFFIX.sub("", call[1]), call and call[2], call and call[0] > end)
    con = _session(converted_path, NSYS_EXPORTS[H100])
    ours = {
        (r["device_id"], r["gap_start_ns"]): (r["gap_ns"], r["launch_call"], r["launch_tid"], r["launch_late"])
        for r in _on_run_clock(con, run_analysis(con, "gpu_idle_gaps").records(), "gap_start_ns")
    }
    assert len(expected) > 1000
    assert ours == expected


def test_idle_gap_cpu_span_is_the_innermost_range_at_mid_gap(converted_path):
    """For every gap with a launch: the shortest NVTX range or runtime call on the launching thread at mid-gap."""
    raw = _raw(H100)
    strings = dict(raw.execute("SELECT id, value FROM StringIds"))
    cpu = [
        (s, e, t & 0xFFFFFF, text if text is not None else strings.get(tid_))
        for s, e, t, text, tid_ in raw.execute('SELECT start, "end", globalTid, text, textId FROM NVTX_EVENTS WHERE eventType = 59')
    ]
    cpu += [
        (s, e, t & 0xFFFFFF, fmt.API_NAME_VERSION_SUFFIX.sub("", strings[n]))
        for s, e, t, n in raw.execute('SELECT start, "end", globalTid, nameId FROM CUPTI_ACTIVITY_KIND_RUNTIME')
    ]
    by_tid = {}
    for c in cpu:
        by_tid.setdefault(c[2], []).append(c)
    con = _session(converted_path, NSYS_EXPORTS[H100])
    rows = [r for r in _on_run_clock(con, run_analysis(con, "gpu_idle_gaps").records(), "gap_start_ns", "gap_end_ns") if r["launch_tid"] is not None]
    checked = 0
    for r in rows[:300]:  # the 300 longest
        mid = (r["gap_start_ns"] + r["gap_end_ns"]) // 2
        around = [c for c in by_tid.get(r["launch_tid"], []) if c[0] <= mid < c[1]]
        if not around:
            assert r["cpu_span"] is None
            continue
        inner = min(around, key=lambda c: c[1] - c[0])
        assert r["cpu_span"] == inner[3], r
        checked += 1
    assert checked > 50


@pytest.mark.parametrize("case", [H100, "nsys_2022_saxpy_mpi_a100"])
def test_utilization_bins_against_the_raw_export(case, converted_path):
    """Every bin's busy time equals the raw export's kernels, copies and sets merged and clipped to it.

    The saxpy run idles for long stretches (29 of its 50 bins hold no GPU work): each such bin is 0 %
    busy, not its full width."""
    raw = _raw(case)
    acts = []
    for table in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"):
        acts += raw.execute(f'SELECT deviceId, start, "end" FROM {table}').fetchall()
    con = _session(converted_path, NSYS_EXPORTS[case])
    rows = _on_run_clock(con, run_analysis(con, "gpu_utilization_bins").records(), "bin_start_ns", "bin_end_ns")
    devices = sorted({d for d, _, _ in acts})
    assert sorted({r["device_id"] for r in rows}) == devices
    for dev in devices:
        merged = _merge([(s, e) for d, s, e in acts if d == dev])
        first, last = merged[0][0], merged[-1][1]
        mine = [r for r in rows if r["device_id"] == dev]
        assert len(mine) == 50
        for r in mine:
            lo, hi = first + (last - first) * r["bin"] // 50, first + (last - first) * (r["bin"] + 1) // 50
            busy = sum(max(0, min(e, hi) - max(s, lo)) for s, e in merged)
            assert (r["bin_start_ns"], r["bin_end_ns"], r["busy_ns"]) == (lo, hi, busy)
    if case == H100:
        assert min(r["busy_pct"] for r in rows) < 95 < max(r["busy_pct"] for r in rows)
    else:  # long idle stretches: whole bins without GPU work
        assert sum(1 for r in rows if r["busy_ns"] == 0 and r["busy_pct"] == 0) == 29


@pytest.mark.parametrize("case", list(GPU_FIXTURES))
def test_utilization_bins_add_up_to_the_busy_time(case, converted_path):
    """Per GPU, the bins sum to gpu_busy_idle's busy time and to the raw trace's merged GPU work."""
    con = _session(converted_path, *GPU_FIXTURES[case])
    busy = {(r["run_id"], r["device_id"]): r["busy_ns"] for r in run_analysis(con, "gpu_busy_idle").records()}
    binned: dict[tuple[int, int], int] = {}
    for r in run_analysis(con, "gpu_utilization_bins").records():
        binned[(r["run_id"], r["device_id"])] = binned.get((r["run_id"], r["device_id"]), 0) + r["busy_ns"]
    raw = {
        (run_id, dev): sum(e - s for s, e in merge([(g.start, g.end) for g in run.gpu if g.device == dev]))
        for run_id, run in raw_runs(case).items()
        for dev in {g.device for g in run.gpu}
    }
    assert binned == busy == raw


def test_sync_calls_and_pageable_copies_against_the_raw_export(converted_path):
    raw = _raw(H100)
    syncs = raw.execute("""SELECT count(*), sum(r."end" - r.start) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId
                           WHERE s.value LIKE 'cudaStreamSynchronize%'""").fetchone()
    pageable = raw.execute("""SELECT count(*), sum(m.bytes), sum(m."end" - m.start) FROM CUPTI_ACTIVITY_KIND_MEMCPY m
                              JOIN ENUM_CUDA_MEM_KIND k ON k.id IN (m.srcKind, m.dstKind) WHERE k.label = 'Pageable'""").fetchone()
    con = _session(converted_path, NSYS_EXPORTS[H100])
    # One row per (name, kind, copy endpoints, origin op): summed over the origins.
    stream_syncs = [r for r in run_analysis(con, "sync_calls").records() if r["name"] == "cudaStreamSynchronize"]
    assert (sum(r["calls"] for r in stream_syncs), sum(r["total_ns"] for r in stream_syncs)) == syncs
    assert {r["sync_kind"] for r in stream_syncs} == {"explicit"}
    (page,) = run_analysis(con, "pageable_memcpy").records()
    assert (page["copies"], page["bytes"], page["total_ns"]) == pageable and pageable[0] > 0
    # The CPU time the issuing calls held: the runtime rows with the copies' correlation ids.
    held = raw.execute("""SELECT count(*), sum(r."end" - r.start), min(s.value) FROM CUPTI_ACTIVITY_KIND_RUNTIME r
                          JOIN StringIds s ON s.id = r.nameId
                          WHERE (r.correlationId, r.globalTid >> 24) IN (
                              SELECT m.correlationId, m.globalPid >> 24 FROM CUPTI_ACTIVITY_KIND_MEMCPY m
                              JOIN ENUM_CUDA_MEM_KIND k ON k.id IN (m.srcKind, m.dstKind) WHERE k.label = 'Pageable')""").fetchone()
    assert (page["blocking_calls"], page["cpu_ns"], page["api_name"]) == (held[0], held[1], fmt.API_NAME_VERSION_SUFFIX.sub("", held[2]))


def test_step_bound_gpu_busy_against_the_raw_json(converted_path):
    """GPU busy time inside each ProfilerStep window: kernels/copies/sets of the rank merged in Python."""
    expected = {}
    for path in TWO_RANKS:
        with gzip.open(path, "rt") as f:
            events = json.load(f)["traceEvents"]
        gpu = _merge([(e["ts"], e["ts"] + e["dur"]) for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")])
        rank = 0 if path.name.endswith("0.json.gz") else 1
        for s in (e for e in events if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#")):
            lo, hi = s["ts"], s["ts"] + s["dur"]
            expected[(rank + 1, int(s["name"].split("#")[1]))] = sum(max(0, min(e, hi) - max(b, lo)) for b, e in gpu) / 1000
    rows = run_analysis(_session(converted_path, *TWO_RANKS), "step_bound").records()
    assert {(r["run_id"], r["iteration"]): r["gpu_busy_ms"] for r in rows} == pytest.approx(expected, abs=1e-9)
    assert {r["bound"] for r in rows} == {"host-bound"}  # busy 43-46 % of each step
