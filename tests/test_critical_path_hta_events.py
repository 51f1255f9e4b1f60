"""Which ops and kernels are on our critical path and on HTA 0.5's, per ProfilerStep of our Kineto
GPU fixtures: the steps tests/test_critical_path_hta_steps.py compares by length, over the same
window (HTA's, our path walked back from where HTA's ends, less the time HTA's graph weighs zero).

HTA's side is tests/data/critical_path_hta/hta_step_events.csv.gz (tests/references/hta_critical_path_events.py,
HolisticTraceAnalysis 0.5.0, pandas 2.3.3): every event HTA attributes critical-path edges to, as the
raw trace names it (full name, start in us from HTA's origin, duration), with its on-path time per
HTA bound_by class. An HTA event is matched to our span by the identity both sides keep from the raw
trace: its name and its start (within 1 us: HTA truncates to us), the duration breaking ties.
Per step: `shared` is the on-path time both paths give the same event (the smaller of the two; the
waits between items -- HTA's kernel-kernel and launch overhead, our GPU idle, stream wait and queue delay --
as one total, since each side charges them to a different neighbour), in % of the longer path.
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
from support.hta_window import hta_origin_ns, hta_origins, rounding_loss_us, segments_from_hta_end, weighs_zero
from xsp_trace.analyze.critical_path.chase import GPU_IDLE, QUEUE_DELAY, STREAM_WAIT
from xsp_trace.analyze.critical_path.walk import load_run
from xsp_trace.analyze.session import AnalysisOptions, prepare

STEPS = DATA / "critical_path_hta" / "hta_steps.csv"
EVENTS = DATA / "critical_path_hta" / "hta_step_events.csv.gz"
# The waits between items, which each side charges to a neighbour of its choosing (HTA a kernel-kernel
# gap to the earlier kernel, ours to no event): compared as one total per step, not per event.
HTA_WAITS = ("gpu_kernel_kernel_overhead", "gpu_kernel_launch_overhead")
OUR_WAITS = (GPU_IDLE, QUEUE_DELAY, STREAM_WAIT)
# A step agrees when the time both paths give the same events (the waits as one total), plus the
# GPU work HTA's path runs over and books as kernel-kernel overhead (hidden_ns), is >= AGREE_PCT of the
# longer path, and HTA's events are on our path for >= HTA_ON_OURS_PCT of HTA's event time.
AGREE_PCT = 98.5
HTA_ON_OURS_PCT = 99.5
RANK3 = "kineto_2022_integer_us_rank3/hta_a100_rank3_of_8_2022.json.gz"
# (trace, HTA instance) -> that agreement in %, for the steps below AGREE_PCT, pinned within 1 point,
# with the cause as far as it is established (measured 2026-12-03).
DIFFERENT: dict[tuple[str, int], float] = {
    # The autograd thread's backward: our path runs through it (thread_wait edges), HTA's graph has
    # no edge between threads. HTA's path books 40.3-42.4 ms (54.6-65 % of the longer path,
    # UNLAUNCHED below) as kernel-kernel overhead on stream 20 from a "Memcpy DtoH (Device ->
    # Pageable)" to the next kernel (fbgemm_gpu::permute_2D_lengths_kernel), launched by
    # cudaLaunchKernel on the step's thread 37.5 ms after the copy ended: HTA wrong there (the
    # stream waited for the CPU -- the forward and the backward on the autograd thread, which our
    # path follows). Steps 0-1 agree on the rest of HTA's path (97.8 % of HTA's event time on ours);
    # on steps 2-4 our path from HTA's end runs through other backward kernels.
    **{(RANK3, i): pct for i, pct in enumerate((43.57, 46.8, 18.41, 37.35, 39.49))},
    # HTA wrong: the trace records no "cuda_sync" events, and HTA 0.5 draws its GPU -> CPU sync edges
    # only from those; the cudaDeviceSynchronize at 480 us (HTA's clock) returns after 14.1 ms, once
    # 500 GPU items launched in the window (13.4 ms of GPU work) have ended. HTA's graph has no edge
    # from them to the call, so its longest path cannot pass them and starts on the CPU behind
    # zero-weight edges (33.6 ms of a 49.3 ms window); ours runs through them (a sync_wait edge).
    # 99.86 % of HTA's event time is on our path (NO_SYNC_EVENTS checks the cause in the raw trace).
    ("kineto_2025_all_options_h100/tracelens_h100_qwen1.5_0.5b.json.gz", 0): 71.5,
    # HTA wrong: ns-resolution trace; HTA 0.5 rounds each event's start up and end down to the us, so
    # each of the 1639 CPU events of the window loses up to 2 us to its parent or a gap its graph
    # weighs zero (1648 us in all): HTA books the time of short children (aten::empty ~1.9 us,
    # launches) on their parents (aten::_flash_attention_forward +6.4-8.5 us each), and its path is
    # 222 us shorter (tests/test_critical_path_hta_steps.py). ROUNDED checks the bound.
    ("kineto_conv_vit_h100/tracelens_h100_falconsai_vit.json.gz", 0): 83.08,
    # HTA wrong: our path also runs through 159 cudaMemcpyAsync calls (1.4 %), whose time HTA 0.5
    # weighs zero because its BLOCKING_SYNC_CALLS lists every cudaMemcpyAsync; all 960 of this trace
    # copy Device -> Device, which does not block the host (ASYNC_COPIES checks it in the raw trace).
    ("kineto_nccl_collectives/hta_a100_nccl_allreduce.json.gz", 0): 96.24,
    ("kineto_nccl_collectives/hta_a100_nccl_allreduce.json.gz", 1): 96.26,
    # HTA wrong, lengths agree (< 1 %). rocm #1: the same rounding (34 CPU events, up to 34.2 us =
    # 4.6 % of the 0.74 ms path moved to parents; ROUNDED). triton: the Inductor launcher op
    # "triton_poi_fused_add_cos_sin_0" (cpu_op, 95.8 us, named like its kernel) carries a "stream": 0
    # argument, which HTA 0.5's parser reads into its stream column; HTA takes CPU ops as stream -1,
    # so the op has no node and its 48 us go to its parent "Torch-Compiled Region: 0/0"
    # (STREAM_ARG_OPS checks it in the raw trace).
    ("kineto_rocm_mi250/hta_mi250_rocm62_minitoy.json.gz", 1): 96.95,
    ("kineto_triton_cuda_driver/hta_a100_triton.json.gz", 0): 96.36,
    # HTA wrong: it books 16.6 ms as kernel-kernel overhead after an elementwise kernel (ts 567357)
    # on stream 7 although the stream's next item was launched only at the end of that gap (6.1 % of
    # the path, UNLAUNCHED); ours follows the CPU there. With it, 99.6 % agrees.
    ("kineto_two_ranks_sendrecv/sampled_rank-1.json.gz", 0): 93.53,
}
# (trace, HTA instance) -> unlaunched_ns in % of the longer path, pinned within 1 point where it
# explains the difference (the raw trace shows HTA's kernel-kernel gap waited for a launch).
UNLAUNCHED: dict[tuple[str, int], float] = {
    **{(RANK3, i): pct for i, pct in enumerate((63.42, 64.98, 56.07, 61.12, 54.59))},
    ("kineto_two_ranks_sendrecv/sampled_rank-1.json.gz", 0): 6.08,
}
# Traces with no Kineto "cuda_sync" event (HTA's only source of GPU -> CPU edges) where a
# synchronising call returns after this much GPU work (ms) has ended inside it.
NO_SYNC_EVENTS = {"kineto_2025_all_options_h100/tracelens_h100_qwen1.5_0.5b.json.gz": 10.0}
# Traces whose cudaMemcpyAsync calls all copy Device -> Device (not blocking; HTA weighs them zero):
# on the pinned steps the only events on our path alone (>= 0.5 %) are those calls.
ASYNC_COPIES = {"kineto_nccl_collectives/hta_a100_nccl_allreduce.json.gz"}
# (trace, instance) of a ns-resolution trace whose disagreement (100 - agreement, %) is at most what
# HTA's rounding moves between its CPU events (support.hta_window.rounding_loss_us over all of them).
ROUNDED = {("kineto_conv_vit_h100/tracelens_h100_falconsai_vit.json.gz", 0), ("kineto_rocm_mi250/hta_mi250_rocm62_minitoy.json.gz", 1)}
# Traces where the events on our path alone (>= 0.5 %) are CPU ops with a "stream" argument.
STREAM_ARG_OPS = {"kineto_triton_cuda_driver/hta_a100_triton.json.gz"}
GPU_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")  # Kineto categories of GPU work
RUNTIME_CATEGORIES = ("cuda_runtime", "cuda_driver")  # Kineto categories of the calls that launch it


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


def unlaunched_ns(gpu_events: list[dict], launch_end: dict[int, float], hta_rows: list[dict]) -> int:
    """The part of the gaps HTA's path books as kernel-kernel overhead during which the stream's
    next item had not been launched yet (the raw trace's runtime call with its correlation id ended
    later): time the next item cannot have waited for the earlier one, HTA wrong there."""
    by_stream: dict[int, list[tuple[float, int]]] = defaultdict(list)
    for e in gpu_events:
        by_stream[int(e["tid"])].append((float(e["ts"]), int(e.get("args", {}).get("correlation", -1))))
    for items in by_stream.values():
        items.sort()
    waited = 0.0
    for r in hta_rows:
        if r["bound_by"] == "gpu_kernel_kernel_overhead":
            low = int(r["hta_origin_us"]) + int(r["ts_us"]) + int(r["dur_us"])
            high = low + int(r["on_path_us"])
            after = [c for ts, c in by_stream[int(r["tid"])] if ts >= low]
            if after and after[0] in launch_end:
                waited += max(0.0, min(launch_end[after[0]], high) - low)
    return round(waited * 1000)


def _sync_facts(trace: str) -> tuple[int, float, set[str]]:
    """From the raw trace: its "cuda_sync" events, the GPU work (ms) ending inside its
    cudaDeviceSynchronize / cudaStreamSynchronize calls, and the copies its cudaMemcpyAsync calls made."""
    events = [e for e in json.loads(gzip.open(DATA / trace).read())["traceEvents"] if e.get("ph") == "X"]
    copies = {int(e["args"]["correlation"]): str(e["name"]) for e in events if e.get("cat") == "gpu_memcpy" and "correlation" in e.get("args", {})}
    waited, made = 0.0, set()
    for e in events:
        if e.get("cat") in RUNTIME_CATEGORIES and e["name"] in ("cudaDeviceSynchronize", "cudaStreamSynchronize"):
            waited += sum(float(g["dur"]) for g in events if g.get("cat") in GPU_CATEGORIES and e["ts"] <= g["ts"] + g["dur"] <= e["ts"] + e["dur"])
        if e.get("cat") in RUNTIME_CATEGORIES and e["name"] == "cudaMemcpyAsync":
            made.add(copies.get(int(e.get("args", {}).get("correlation", -1)), "no copy"))
    return sum(1 for e in events if e.get("cat") == "cuda_sync"), waited / 1000, made


def _ops_with_stream_arg(trace: str) -> set[str]:
    """Names of the raw trace's cpu_op events that carry a "stream" argument."""
    events = json.loads(gzip.open(DATA / trace).read())["traceEvents"]
    return {str(e["name"]) for e in events if e.get("ph") == "X" and e.get("cat") == "cpu_op" and "stream" in e.get("args", {})}


def _gpu_events(trace: str) -> tuple[list[dict], dict[int, float]]:
    """The raw trace's GPU work, and the end (us) of each runtime call by its correlation id."""
    events = json.loads(gzip.open(DATA / trace).read())["traceEvents"]
    launch_end = {
        int(e["args"]["correlation"]): float(e["ts"]) + float(e["dur"])
        for e in events
        if e.get("ph") == "X" and e.get("cat") in RUNTIME_CATEGORIES and "correlation" in e.get("args", {})
    }
    return [e for e in events if e.get("ph") == "X" and e.get("cat") in GPU_CATEGORIES], launch_end


def _compare_trace(con, trace: str) -> dict[int, dict]:
    prepare(con, AnalysisOptions())
    run = load_run(con, 1)
    origin = hta_origin_ns(con, DATA / trace, hta_origins(EVENTS)[trace])
    identity = _Identity(con, origin)
    events = _hta_events(trace)
    gpu, launch_end = _gpu_events(trace)
    out = {}
    for i, w in sorted(_windows()[trace].items()):
        got = compare_step(con, run, identity, origin, w, events[i])
        longer = max(sum(got["ours"].values()) + got["waits"][0], sum(got["hta"].values()) + got["waits"][1])
        out[i] = got | {
            "identity": identity,
            "hidden_pct": round(100 * hidden_ns(gpu, events[i]) / longer, 2),
            "unlaunched_pct": round(100 * unlaunched_ns(gpu, launch_end, events[i]) / longer, 2),
        }
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
        print(trace, i, agreement[i], g["hta_on_ours_pct"], g["unlaunched_pct"], sorted(one_sided(g, 0.5).items(), key=lambda x: -x[1]))
    if trace in NO_SYNC_EVENTS or trace in ASYNC_COPIES:
        sync_events, waited_ms, copies = _sync_facts(trace)
        if trace in NO_SYNC_EVENTS:
            assert sync_events == 0 and waited_ms >= NO_SYNC_EVENTS[trace], (sync_events, waited_ms)
        if trace in ASYNC_COPIES:
            assert copies == {"Memcpy DtoD (Device -> Device)"}, copies
    for i, pct in agreement.items():
        pinned = DIFFERENT.get((trace, i))
        if pinned is None:
            assert pct >= AGREE_PCT and got[i]["hta_on_ours_pct"] >= HTA_ON_OURS_PCT, (i, pct, got[i]["hta_on_ours_pct"])
        else:
            assert abs(pct - pinned) <= 1, (i, pct, pinned)
        if (trace, i) in ROUNDED:
            start_us, end_us, _ = _windows()[trace][i]
            longer = max(sum(got[i]["ours"].values()) + got[i]["waits"][0], sum(got[i]["hta"].values()) + got[i]["waits"][1])
            loss_pct = 100 * rounding_loss_us(DATA / trace, hta_origins(EVENTS)[trace], start_us, end_us, top_level=False) * 1000 / longer
            assert 0 < 100 - pct <= loss_pct, (i, pct, loss_pct)
        if trace in STREAM_ARG_OPS and (trace, i) in DIFFERENT:
            assert {side for side, _ in one_sided(got[i], 0.5)} == {"ours"}
            assert {name for _, name in one_sided(got[i], 0.5)} <= _ops_with_stream_arg(trace)
        if trace in ASYNC_COPIES and (trace, i) in DIFFERENT:
            assert {name for side, name in one_sided(got[i], 0.5)} == {"cudaMemcpyAsync"}
        if (trace, i) in UNLAUNCHED:
            assert abs(got[i]["unlaunched_pct"] - UNLAUNCHED[(trace, i)]) <= 1, (i, got[i]["unlaunched_pct"])
