"""Findings about what the CPU was doing while the GPU waited, in the CPU-time taxonomy's words
(launch, sync, host, idle: xsp_trace/formats/cuda_api.py): idle gaps, sync- / launch- / host-bound
steps, launch-bound runs without steps, waits inside the loop, pageable copies.

Advice that names PyTorch APIs (pin_memory, `.cpu()` / `.item()`) is given only for runs recorded from
PyTorch (`pytorch_runs`: Kineto traces, or exports whose ops are aten:: ranges); other runs get the
CUDA words (page-locked memory, cudaHostAlloc).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Mapping

from ..formats.kineto_fields import GRAPH_LAUNCH_API_NAMES
from ..timebase import format_time
from ..vocabulary import FindingKind
from .findings_base import DEVICE_BOUND_PCT, LONG_GAP_NS, TOP_CAUSES, TOP_WAITS, Finding, count, duration, gpu_label, ms_to_ns, pct, size


def idle_gaps(gaps: list[dict], windows: dict) -> list[Finding]:
    """Long idle gaps per GPU and what the CPU was doing meanwhile (gpu_idle_gaps)."""
    per_gpu: dict[tuple, list[dict]] = defaultdict(list)
    for g in gaps:
        if g["gap_ns"] >= LONG_GAP_NS:
            per_gpu[(g["run_id"], g["device_id"])].append(g)
    out = []
    for (run_id, device_id), mine in per_gpu.items():
        window = windows.get((run_id, device_id), {}).get("window_ns")
        if not window:
            continue
        idle = sum(g["gap_ns"] for g in mine)
        late = sum(1 for g in mine if g["launch_late"])
        causes: dict[tuple, list] = defaultdict(lambda: [0, 0])
        for g in mine:
            causes[_cause(g)][0] += g["gap_ns"]
            causes[_cause(g)][1] += 1
        top = sorted(causes.items(), key=lambda kv: (-kv[1][0], kv[0][0]))[:TOP_CAUSES]
        named = "; ".join(f"{label} ({duration(ns)}, {count(n, 'gap')})" for (label, _, _), (ns, n) in top)
        longest = max(mine, key=lambda g: (g["gap_ns"], -(g["gap_start_ns"] or 0)))  # (None: a run without origin_ns)
        text = (
            f"{gpu_label(run_id, device_id)} sat idle {duration(idle)} in {count(len(mine), 'gap')} of {duration(LONG_GAP_NS)} or longer, "
            f"{pct(idle / window)} of its {duration(window)} active window (the longest, {duration(longest['gap_ns'])}, "
            f"at {format_time(longest['gap_start_ns'])}); {late} of them ended only when the CPU "
            f"launched the next operation late. Meanwhile the CPU was in: {named}."
        )
        out.append(
            Finding(
                "idle_gaps",
                idle / window,
                text,
                "gpu_idle_gaps",
                f"run_id = {run_id} AND device_id = {device_id} AND gap_ns >= {LONG_GAP_NS}",
                {
                    "run_id": run_id,
                    "device_id": device_id,
                    "window_ns": window,
                    "idle_ns": idle,
                    "gaps": len(mine),
                    "late": late,
                    "longest_start_ns": longest["gap_start_ns"],
                    "causes": [(label, span, ns, n) for (label, span, _), (ns, n) in top],
                    "other_thread_causes": [(label, span, ns, n) for (label, span, other), (ns, n) in top if other],
                },
            )
        )
    return out


def _cause(gap: dict) -> tuple[str, str | None, bool]:
    """What the CPU was doing during a gap: (as the finding words it, the CPU span's name or None,
    whether it was another thread than the launching one)."""
    if gap["sync_call"] is not None:
        return f"{gap['sync_call']} ({gap['sync_kind']} synchronisation)", gap["sync_call"], False
    if gap["cpu_span"] is not None:
        return gap["cpu_span"], gap["cpu_span"], False
    whose = "no launch call recorded for the next operation" if gap["launch_call"] is None else "the launching thread in no span"
    if gap.get("other_cpu_span") is not None:
        return f"{gap['other_cpu_span']} on thread {gap['other_tid']} ({gap['other_cpu_class']}; {whose})", gap["other_cpu_span"], True
    return f"({whose}, no other thread of the process in a span)", None, False


def _gpu_runs(windows: dict) -> set:
    return {run for run, _ in windows}


def steps(rows: list[dict], windows: dict, levels: Mapping, waits: list[dict], pytorch_runs: Collection[int]) -> list[Finding]:
    """Sync-, launch- and host-bound steps (step_bound), in runs that recorded GPU work; a sync-bound
    finding names the waits (sync_calls) and never suggests fewer launches."""
    per_run: dict[int, list[dict]] = defaultdict(list)
    for s in rows:
        if s["run_id"] in _gpu_runs(windows):
            per_run[s["run_id"]].append(s)
    out = []
    for run_id, mine in per_run.items():
        total = sum(ms_to_ns(s["step_ms"]) for s in mine)
        if not total:
            continue
        note = f" (a level-{levels[run_id]} run: its step times include the overhead of profiling that level)" if levels.get(run_id) else ""
        verdicts: tuple[tuple[FindingKind, str], ...] = (
            ("sync_bound_steps", "sync-bound"),
            ("launch_bound", "launch-bound"),
            ("host_bound_steps", "host-bound"),
        )
        for kind, verdict in verdicts:
            hit = [s for s in mine if s["bound"] == verdict]
            if not hit:
                continue
            step = sum(ms_to_ns(s["step_ms"]) for s in hit)
            busy = sum(ms_to_ns(s["gpu_busy_ms"]) for s in hit)
            launch = sum(ms_to_ns(s["launch_ms"]) for s in hit)
            sync = sum(ms_to_ns(s["sync_ms"]) for s in hit)
            facts = {
                "run_id": run_id,
                "steps": len(hit),
                "of_steps": len(mine),
                "step_ns": step,
                "gpu_busy_ns": busy,
                "launch_ns": launch,
                "sync_ns": sync,
                "iterations": [s["iteration"] for s in hit],
            }
            steps_are = f"{len(hit)} of {len(mine)} steps of run {run_id} {'is' if len(hit) == 1 else 'are'} {verdict}"
            gpu = f"the GPU was busy only {duration(busy)} of their {duration(step)} ({pct(busy / step)})"
            if kind == "sync_bound_steps":
                named, advice, top = _waits(waits, run_id, run_id in pytorch_runs)
                facts["waits"] = top
                text = f"{steps_are}: their threads sat {duration(sync)} ({pct(sync / step)}) blocked in calls that wait while {gpu}; {named}: {advice}{note}."
            elif kind == "launch_bound":
                text = (
                    f"{steps_are}: the CPU spent {duration(launch)} in launch calls that returned without waiting while {gpu}; "
                    f"fewer, larger kernels (fusion, CUDA graphs) would help{note}."
                )
            else:
                host = sum(ms_to_ns(s["thread_host_ms"]) for s in hit)
                idle = sum(ms_to_ns(s["thread_idle_ms"]) for s in hit)
                text = (
                    f"{steps_are}: {gpu}, under {DEVICE_BOUND_PCT:.0f} %; the step's thread spent {duration(host)} in host work "
                    f"(framework ops, Python, data loading) and {duration(idle)} in no recorded span, {duration(launch + sync)} "
                    f"launching or waiting (gpu_idle_gaps shows what it was doing in each gap){note}."
                )
                facts.update(thread_host_ns=host, thread_idle_ns=idle)
            out.append(Finding(kind, (step - busy) / total, text, "step_bound", f"run_id = {run_id} AND bound = '{verdict}'", facts))
    return out


def _waits(waits: list[dict], run_id: int, pytorch: bool) -> tuple[str, str, list]:
    """The blocking calls of a run's steps, longest first, worded, with the advice for the longest."""
    mine = sorted(
        (w for w in waits if w["run_id"] == run_id and w["calls_in_steps"] and w["sync_kind"] != "recorded wait"),
        key=lambda w: (-w["total_in_steps_ns"], w["name"]),
    )[:TOP_WAITS]
    if not mine:
        return "no blocking call is recorded in them", "the waits are inside recorded ops", []
    parts = []
    for w in mine:
        origin = f"`{w['origin']}` → " if w["origin"] else ""
        what = f"{w['name']} {w['copy_endpoints']}" if w["copy_endpoints"] else w["name"]
        parts.append(f"{origin}{what}, {count(w['calls_in_steps'], 'call')}, {duration(w['total_in_steps_ns'])}")
    first = mine[0]
    if first["sync_kind"] == "pageable copy":
        advice = (
            "pinned memory, or move `.cpu()`/`.item()` out of the step"
            if pytorch
            else "copy to or from page-locked memory (cudaHostAlloc / cudaHostRegister), or after the step"
        )
    elif first["sync_kind"] == "implicit":
        advice = "the Async form of the call on page-locked memory, or the call moved out of the step"
    else:
        advice = "wait only where the result is needed (an event on the stream that produces it), or once per step"
    top = [(w["origin"], w["name"], w["copy_endpoints"], w["calls_in_steps"], w["total_in_steps_ns"]) for w in mine]
    return "the waits: " + "; ".join(parts), advice, top


def run_launch_bound(stats: list[dict], steps: list[dict], windows: dict) -> list[Finding]:
    """Runs without steps: launch calls took more CPU time than the GPU was busy (kernel_launch_stats)."""
    with_steps = {s["run_id"] for s in steps}
    per_run: dict[int, list[dict]] = defaultdict(list)
    for r in stats:
        if r["run_id"] not in with_steps and r["api_name"] not in GRAPH_LAUNCH_API_NAMES:
            per_run[r["run_id"]].append(r)
    out = []
    for run_id, mine in per_run.items():
        mine_windows = [w for (run, _), w in windows.items() if run == run_id]
        window = sum(w["window_ns"] for w in mine_windows)
        busy = sum(w["busy_ns"] for w in mine_windows)
        launches = sum(r["launches"] for r in mine)
        launch = sum(r["launches"] * float(r["api_avg_ns"]) for r in mine)
        short = sum(r["shorter_than_launch"] for r in mine)
        if not window or launch <= busy or 100 * busy / window >= DEVICE_BOUND_PCT:
            continue
        text = (
            f"Run {run_id} is launch-bound: its {launches} kernel launches took {duration(launch)} of CPU time, more than "
            f"the {duration(busy)} its GPUs were busy ({pct(busy / window)} of their {duration(window)} active window); "
            f"{short} of the kernels ran shorter than their own launch call."
        )
        out.append(
            Finding(
                "launch_bound",
                (window - busy) / window,
                text,
                "kernel_launch_stats",
                f"run_id = {run_id} AND api_name NOT IN ({', '.join(repr(n) for n in sorted(GRAPH_LAUNCH_API_NAMES))})",
                {"run_id": run_id, "launches": launches, "launch_ns": launch, "gpu_busy_ns": busy, "window_ns": window, "shorter_than_launch": short},
            )
        )
    return out


def sync_in_loop(syncs: list[dict], steps: list[dict]) -> list[Finding]:
    """Blocking calls inside the steps of runs whose steps are not already sync-bound (sync_calls;
    the waiting time from step_bound)."""
    sync_bound = {s["run_id"] for s in steps if s["bound"] == "sync-bound"}
    per_run: dict[int, list[dict]] = defaultdict(list)
    for r in syncs:
        if r["calls_in_steps"] and r["sync_kind"] != "recorded wait" and r["run_id"] not in sync_bound:
            per_run[r["run_id"]].append(r)
    out = []
    for run_id, mine in per_run.items():
        run_steps = [s for s in steps if s["run_id"] == run_id]
        step = sum(ms_to_ns(s["step_ms"]) for s in run_steps)
        sync = sum(ms_to_ns(s["sync_ms"]) for s in run_steps)
        if not step:
            continue
        calls = sum(r["calls_in_steps"] for r in mine)
        names: dict[str, int] = defaultdict(int)
        for r in mine:
            names[r["name"]] += r["calls_in_steps"]
        listed = ", ".join(f"{n} x{c}" for n, c in sorted(names.items(), key=lambda kv: (-kv[1], kv[0])))
        text = (
            f"Run {run_id} waits {count(calls, 'time')} inside its {count(len(run_steps), 'step')} ({listed}): the CPU sat "
            f"{duration(sync)} blocked, {pct(sync / step)} of the steps' {duration(step)}, and each wait empties "
            f"the GPU's queue so the next kernels start only after new launches."
        )
        out.append(
            Finding(
                "sync_in_loop",
                sync / step,
                text,
                "sync_calls",
                f"run_id = {run_id} AND calls_in_steps > 0 AND sync_kind <> 'recorded wait'",
                {"run_id": run_id, "calls_in_steps": calls, "sync_ns": sync, "step_ns": step, "names": dict(names)},
            )
        )
    return out


def pageable(rows: list[dict], windows: dict, pytorch_runs: Collection[int]) -> list[Finding]:
    """Copies from / to pageable host memory (pageable_memcpy): what is at stake is the longer of the
    CPU time their calls held and their GPU time, against the run's longest GPU window."""
    per_run: dict[int, list[dict]] = defaultdict(list)
    for r in rows:
        per_run[r["run_id"]].append(r)
    out = []
    for run_id, mine in per_run.items():
        window = max((w["window_ns"] for (run, _), w in windows.items() if run == run_id), default=0)
        if not window:
            continue
        copies = sum(r["copies"] for r in mine)
        nbytes = sum(r["bytes"] or 0 for r in mine)
        ns = sum(r["total_ns"] for r in mine)
        cpu = sum(r["cpu_ns"] or 0 for r in mine)
        kinds = ", ".join(f"{r['copies']} {r['copy_kind']}" + (f" by {r['api_name']}" if r["api_name"] else "") for r in mine)
        advice = (
            "pinned memory (pin_memory=True, non_blocking copies) copies faster and lets the CPU run on"
            if run_id in pytorch_runs
            else "page-locked host memory (cudaHostAlloc / cudaHostRegister) copies faster and lets Async copies overlap"
        )
        text = (
            f"Run {run_id} copies {size(nbytes)} between the GPU and pageable host memory in {copies} cop{'y' if copies == 1 else 'ies'} ({kinds}): "
            f"the calls held the CPU {duration(cpu)} and the copies took {duration(ns)} of GPU time "
            f"({nbytes / ns if ns else 0:.3g} GB/s); the longer is {pct(max(cpu, ns) / window)} of its GPU's {duration(window)} active window; {advice}."
        )
        out.append(
            Finding(
                "pageable_memcpy",
                min(max(cpu, ns) / window, 1.0),
                text,
                "pageable_memcpy",
                f"run_id = {run_id}",
                {"run_id": run_id, "copies": copies, "bytes": nbytes, "total_ns": ns, "cpu_ns": cpu, "window_ns": window},
            )
        )
    return out
