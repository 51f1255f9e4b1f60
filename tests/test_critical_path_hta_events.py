"""Which ops and kernels are on our critical path and on HTA 0.5's, per ProfilerStep of our Kineto
GPU fixtures: the steps tests/test_critical_path_hta_steps.py compares by length, over the same
window (HTA's, our path walked back from where HTA's ends, less the time HTA's graph weighs zero).

HTA's side is tests/data/critical_path_hta/hta_step_events.csv.gz (bench/hta_critical_path_events.py,
HolisticTraceAnalysis 0.5.0, pandas 2.3.3): every event HTA attributes critical-path edges to, as the
raw trace names it (full name, start in us from HTA's origin, duration), with its on-path time per
HTA bound_by class. An HTA event is matched to our span by the identity both sides keep from the raw
trace: its name and its start (within 1 us: HTA truncates to us), the duration breaking ties.
Per step: `shared` is the on-path time both paths give the same event (the smaller of the two; the
waits between items -- HTA's kernel-kernel and launch overhead, our GPU idle and queue delay -- as
one total, since each side charges them to a different neighbour), in % of the longer path.
`hidden` is GPU work the raw trace records inside the gaps HTA's path books as kernel-kernel
overhead on that stream: HTA wrong there (on cuda_graphs 37-39 % of the step, pageable_dtoh 5.5 %,
resnet_mi300 4.6-4.8 %, ns_resolution 0.8-1 %): our path holds those kernels and memsets.
"""

from __future__ import annotations

import csv
import gzip
import json
from collections import defaultdict

import pytest

from conftest import DATA
from support.hta_window import hta_origin_ns, hta_origins, segments_from_hta_end, weighs_zero
from xsp_trace.analyze import AnalysisOptions
from xsp_trace.analyze.critical_path import load_run
from xsp_trace.analyze.critical_path_chase import GPU_IDLE, QUEUE_DELAY
from xsp_trace.analyze.session import prepare

STEPS = DATA / "critical_path_hta" / "hta_steps.csv"
EVENTS = DATA / "critical_path_hta" / "hta_step_events.csv.gz"
# The waits between items, which each side charges to a neighbour of its choosing (HTA a kernel-kernel
# gap to the earlier kernel, ours to no event): compared as one total per step, not per event.
HTA_WAITS = ("gpu_kernel_kernel_overhead", "gpu_kernel_launch_overhead")
OUR_WAITS = (GPU_IDLE, QUEUE_DELAY)
# A step agrees when the time both paths give the same events (the waits as one total), plus the
# GPU work HTA's path runs over and books as kernel-kernel overhead (hidden_ns), is >= AGREE_PCT of the
# longer path, and HTA's events are on our path for >= HTA_ON_OURS_PCT of HTA's event time.
AGREE_PCT = 98.5
HTA_ON_OURS_PCT = 99.5
RANK3 = "kineto_2022_integer_us_rank3/hta_a100_rank3_of_8_2022.json.gz"
# (trace, HTA instance) -> that agreement in %, for the steps below AGREE_PCT, pinned within 1 point,
# with the cause as far as it is established (measured 2026-12-03).
DIFFERENT: dict[tuple[str, int], float] = {
    # The autograd thread's backward, a cross-thread wait neither graph has an edge for
    # (tests/test_critical_path_hta_steps.py): HTA's path runs through that thread's ops and kernels
    # and joins through 40.9 ms of kernel-kernel overhead; ours stays on the step's thread.
    **{(RANK3, i): pct for i, pct in enumerate((43.57, 46.8, 1.0, 37.49, 43.06))},
    # Not established: 99.86 % of HTA's event time is on our path, but ours is 42 % longer: it also
    # runs through GEMM, flash-attention and elementwise kernels HTA's path leaves out.
    ("kineto_2025_all_options_h100/tracelens_h100_qwen1.5_0.5b.json.gz", 0): 71.5,
    # Not established: every HTA event is on our path; ours adds small CPU ops (aten::view, reshape,
    # transpose, as_strided, each >= 1 % of the path) and is 4.8 % longer.
    ("kineto_conv_vit_h100/tracelens_h100_falconsai_vit.json.gz", 0): 83.08,
    # Our path also runs through 159 cudaMemcpyAsync calls (1.37 ms, about the 1.5 % by which it is
    # longer); why HTA's path leaves them out is not established.
    ("kineto_nccl_collectives/hta_a100_nccl_allreduce.json.gz", 0): 96.24,
    ("kineto_nccl_collectives/hta_a100_nccl_allreduce.json.gz", 1): 96.26,
    # Not established: lengths agree (< 1 %) but 3-4 % of the short steps (0.74 ms, 1.39 ms) sits on
    # different events (ours alone: a triton_poi_fused_add_cos_sin_0 kernel, 48 us, on triton).
    ("kineto_rocm_mi250/hta_mi250_rocm62_minitoy.json.gz", 1): 96.95,
    ("kineto_triton_cuda_driver/hta_a100_triton.json.gz", 0): 96.36,
    # Not established: HTA books 17.1 ms as kernel-kernel / launch overhead where ours has 0.5 ms of
    # waits, and one elementwise kernel (45 us) is on HTA's path only.
    ("kineto_two_ranks_sendrecv/sampled_rank-1.json.gz", 0): 93.53,
}
GPU_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")  # Kineto categories of GPU work


def _windows() -> dict[str, dict[int, tuple[int, int, int]]]:
    """trace -> instance -> (path start us, path end us, HTA's path us), the steps HTA computes."""
    out: dict[str, dict[int, tuple[int, int, int]]] = defaultdict(dict)
    with open(STEPS) as f:
        for r in csv.DictReader(f):
            if not r["error"]:
                out[r["trace"]][int(r["instance"])] = (int(r["path_start_us"]), int(r["path_end_us"]), int(r["hta_path_us"]))
    return out


def _hta_events(trace: str) -> dict[int, list[dict]]:
    out: dict[int, list[dict]] = defaultdict(list)
    with gzip.open(EVENTS, "rt") as f:
        for r in csv.DictReader(f):
            if r["trace"] == trace:
                out[int(r["instance"])].append(r)
    return out


class _Identity:
    """Our spans by (name, start us from the trace's first event), to find HTA's events among them."""

    def __init__(self, con, origin: int) -> None:
        self.by_key: dict[tuple[str, int], list[tuple[int, int]]] = defaultdict(list)
        self.names: dict[int, str] = {}
        for span_id, name, start, end in con.execute("SELECT span_id, name, start_ns, end_ns FROM spans").fetchall():
            self.by_key[(name, (start - origin) // 1000)].append((span_id, end - start))
            self.names[span_id] = name

    def find(self, name: str, ts_us: int, dur_us: int) -> int | None:
        found = [c for d in (0, -1, 1) for c in self.by_key.get((name, ts_us + d), [])]
        return min(found, key=lambda c: abs(c[1] - dur_us * 1000))[0] if found else None


def compare_step(con, run, identity: _Identity, origin: int, window, hta_rows: list[dict]) -> dict:
    """Per-event on-path ns of both paths (keyed by our span_id, or ('hta', name, ts) for an HTA event
    none of our spans is), the waits between items apart, and the time both agree on."""
    start_us, end_us, _ = window
    segments = segments_from_hta_end(con, run, origin + start_us * 1000, origin + end_us * 1000)
    ours: dict = defaultdict(int)
    ours_wait = 0
    for s in segments:
        if weighs_zero(run, s):
            continue
        if s.kind in OUR_WAITS:
            ours_wait += s.end_ns - s.start_ns
        else:
            ours[int(run.spans["span_id"][s.row]) if s.row >= 0 else ("ours", s.kind)] += s.end_ns - s.start_ns
    hta: dict = defaultdict(int)
    hta_wait = 0
    for r in hta_rows:
        if r["bound_by"] in HTA_WAITS:
            hta_wait += int(r["on_path_us"]) * 1000
            continue
        span = identity.find(r["name"], int(r["ts_us"]), int(r["dur_us"]))
        hta[span if span is not None else ("hta", r["name"], int(r["ts_us"]))] += int(r["on_path_us"]) * 1000
    shared = sum(min(ns, hta[e]) for e, ns in ours.items() if e in hta) + min(ours_wait, hta_wait)
    ours_ns, hta_ns = sum(ours.values()) + ours_wait, sum(hta.values()) + hta_wait
    return {
        "ours": dict(ours),
        "hta": dict(hta),
        "waits": (ours_wait, hta_wait),
        "shared_pct": round(100 * shared / max(ours_ns, hta_ns, 1), 2),
        "hta_on_ours_pct": round(100 * sum(ns for e, ns in hta.items() if e in ours) / max(sum(hta.values()), 1), 2),
        "ours_on_hta_pct": round(100 * sum(ns for e, ns in ours.items() if e in hta) / max(sum(ours.values()), 1), 2),
    }


def hidden_ns(gpu_events: list[dict], hta_rows: list[dict]) -> int:
    """GPU work the raw trace records on a stream inside the gaps HTA's path books on that stream as
    kernel-kernel overhead (a gap runs from the end of the kernel it is charged to): time HTA calls
    idle that the stream spent running items its graph has no node for."""
    by_stream: dict[int, list[tuple[float, float]]] = defaultdict(list)
    for e in gpu_events:
        by_stream[int(e["tid"])].append((float(e["ts"]), float(e["dur"])))
    busy = 0.0
    for r in hta_rows:
        if r["bound_by"] == "gpu_kernel_kernel_overhead":
            origin = int(r["hta_origin_us"])
            low = origin + int(r["ts_us"]) + int(r["dur_us"])
            high = low + int(r["on_path_us"])
            busy += sum(min(ts + dur, high) - max(ts, low) for ts, dur in by_stream[int(r["tid"])] if ts < high and ts + dur > low)
    return round(busy * 1000)


def _gpu_events(trace: str) -> list[dict]:
    events = json.loads(gzip.open(DATA / trace).read())["traceEvents"]
    return [e for e in events if e.get("ph") == "X" and e.get("cat") in GPU_CATEGORIES]


def _compare_trace(con, trace: str) -> dict[int, dict]:
    prepare(con, AnalysisOptions())
    run = load_run(con, 1)
    origin = hta_origin_ns(con, DATA / trace, hta_origins(EVENTS)[trace])
    identity = _Identity(con, origin)
    events = _hta_events(trace)
    gpu = _gpu_events(trace)
    out = {}
    for i, w in sorted(_windows()[trace].items()):
        got = compare_step(con, run, identity, origin, w, events[i])
        longer = max(sum(got["ours"].values()) + got["waits"][0], sum(got["hta"].values()) + got["waits"][1])
        out[i] = got | {"identity": identity, "hidden_pct": round(100 * hidden_ns(gpu, events[i]) / longer, 2)}
    return out


def one_sided(got: dict, min_pct: float) -> dict[tuple[str, str], float]:
    """(side, event name) -> % of the longer path, for the events on one path only carrying >= min_pct."""
    longer = max(sum(got["ours"].values()) + got["waits"][0], sum(got["hta"].values()) + got["waits"][1])
    by_name: dict[tuple[str, str], int] = defaultdict(int)
    for side, mine, other in (("ours", got["ours"], got["hta"]), ("hta", got["hta"], got["ours"])):
        for e, ns in mine.items():
            if e not in other:
                by_name[(side, e[1] if isinstance(e, tuple) else got["identity"].names[e])] += ns
    return {k: round(100 * ns / longer, 2) for k, ns in by_name.items() if 100 * ns / longer >= min_pct}


@pytest.mark.parametrize("trace", sorted(_windows()))
def test_events_on_path_against_hta(trace, converted):
    """Per step: the agreement, and the events on one path only (printed with -s, >= 0.5 % each)."""
    got = _compare_trace(converted(DATA / trace), trace)
    agreement = {}
    for i, g in sorted(got.items()):
        agreement[i] = round(g["shared_pct"] + g["hidden_pct"], 2)
        print(trace, i, agreement[i], g["hta_on_ours_pct"], sorted(one_sided(g, 0.5).items(), key=lambda x: -x[1]))
    for i, pct in agreement.items():
        pinned = DIFFERENT.get((trace, i))
        if pinned is None:
            assert pct >= AGREE_PCT and got[i]["hta_on_ours_pct"] >= HTA_ON_OURS_PCT, (i, pct, got[i]["hta_on_ours_pct"])
        else:
            assert abs(pct - pinned) <= 1, (i, pct, pinned)
