"""Our critical path over the window HTA 0.5 analyses for a step, shared by the per-step length
comparison (tests/test_critical_path_hta_steps.py) and the per-event one
(tests/test_critical_path_hta_events.py)."""

from __future__ import annotations

import csv
import gzip
import json
import math
from pathlib import Path

import numpy as np

from xsp_trace.analyze.critical_path.walk import Segment, walk

STEP_CATEGORIES = ("user_annotation", "cpu_op")  # Kineto categories of the CPU-side ProfilerStep#N
ROUNDING_NS = 2_000  # HTA's path ends are us from its own origin, truncated in the CSV


def segments_from_hta_end(con, run, start: int, end: int) -> list[Segment]:
    """Our path of [start, end], walked back from where HTA's path ends: the GPU item or CPU span
    that ends there (within HTA's us rounding), else the step's thread at the window's end."""
    pid, tid = con.execute(
        "SELECT pid, tid FROM steps ORDER BY least(end_ns, ?) - greatest(start_ns, ?) DESC, start_ns LIMIT 1", [end, start]
    ).fetchone()
    ends = run.spans["end_ns"]
    near = np.flatnonzero(np.abs(ends - end) <= ROUNDING_NS)
    gpu = near[run.spans["work_class"][near] != ""]
    cpu = near[(run.spans["work_class"][near] == "") & (run.spans["tid"][near] != tid)]
    gpu_row = int(gpu[np.argmin(np.abs(ends[gpu] - end))]) if len(gpu) else None
    if gpu_row is not None:
        end = int(ends[gpu_row])
    elif len(cpu):  # HTA's path ends on another thread (the autograd engine's)
        pid, tid = int(run.spans["pid"][cpu[0]]), int(run.spans["tid"][cpu[0]])
        end = int(ends[cpu[0]])
    segments = walk(run, start, end, (pid, tid), gpu_row=gpu_row)
    assert sum(s.end_ns - s.start_ns for s in segments) == end - start
    return segments


def weighs_zero(run, s: Segment) -> bool:
    """Time HTA's graph weighs zero: CPU idle, a user annotation's own time (HTA has no node for
    it), a blocking call's time and its return."""
    return (
        s.kind in ("cpu_idle", "sync_wait", "thread_wait")
        or (s.row >= 0 and str(run.spans["kind"][s.row]) == "annotation")
        or (s.row >= 0 and bool(run.blocking[s.row]) and s.kind != "queue_delay")
    )


def hta_origin_ns(con, trace: Path, hta_origin_us: int) -> int:
    """HTA's time origin (the raw ts of the first event it keeps) on our clock: our spans keep the raw
    trace's times up to a constant, read off the first CPU-side ProfilerStep event of the raw trace."""
    events = json.loads(gzip.open(trace).read())["traceEvents"]
    name, ts = min(
        (
            (str(e["name"]), float(e["ts"]))
            for e in events
            if e.get("ph") == "X" and e.get("cat") in STEP_CATEGORIES and str(e.get("name", "")).startswith("ProfilerStep#")
        ),
        key=lambda s: s[1],
    )
    ours = con.execute("SELECT min(start_ns) FROM spans WHERE name = ? AND kind = 'annotation'", [name]).fetchone()[0]
    return hta_origin_us * 1000 + ours - round(ts * 1000)


def hta_origins(events_csv: Path) -> dict[str, int]:
    """trace -> HTA's origin (raw ts, us), as tests/references/hta_critical_path_events.py recorded it."""
    with gzip.open(events_csv, "rt") as f:
        return {r["trace"]: int(r["hta_origin_us"]) for r in csv.DictReader(f)}


CPU_CATEGORIES = ("cpu_op", "cuda_runtime", "cuda_driver")  # Kineto categories of the CPU events HTA keeps as ops


def rounding_loss_us(trace: Path, hta_origin_us: int, start_us: int, end_us: int, top_level: bool) -> float:
    """What HTA 0.5 loses by rounding a ns-resolution trace (its round_down_time_stamps: every
    event's start up, its end down, to the us) over the CPU events that start in HTA's window
    [start_us, end_us] (us from its origin): the sum of both roundings, over the top-level events
    of each thread (a gap HTA's graph weighs zero opens there) or over all of them (time that moves
    from each event to its parent). 0 for a trace in integer us."""
    low, high = hta_origin_us + start_us, hta_origin_us + end_us
    events = [
        e
        for e in json.loads(gzip.open(trace).read())["traceEvents"]
        if e.get("ph") == "X" and e.get("cat") in CPU_CATEGORIES and low <= float(e["ts"]) <= high and float(e.get("dur", 0)) > 0
    ]
    by_thread: dict[int, list[tuple[float, float]]] = {}
    for e in events:
        by_thread.setdefault(int(e["tid"]), []).append((float(e["ts"]), float(e["ts"]) + float(e["dur"])))
    loss = 0.0
    for spans in by_thread.values():
        reach = -math.inf
        for ts, end in sorted(spans, key=lambda s: (s[0], -s[1])):
            if not top_level or ts >= reach:
                loss += (math.ceil(ts) - ts) + (end - math.floor(end))
                reach = max(reach, end)
    return loss
