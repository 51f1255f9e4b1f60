"""Findings in words: what matters in a trace, ranked, each one sentence with its numbers and the
analysis (and the rows of it) that shows it.

Findings are read off the analyses' results (queries/analyses/*.sql through run_analysis), never
computed on the side, so their numbers are the analyses' numbers -- leveled-corrected where the
database holds leveled runs (model latency from M, layer latency from ML, kernel latency from
MLG). A finding's severity is the share of the time it is measured against that is at stake, 0..1:
the idle share of a GPU's active window, the exposed-communication share, the non-GPU share of the
model latency, the overhead share of a profiled run. Findings are ranked by it.

Each finding names its analysis and a WHERE condition on that analysis's columns that selects the
rows showing it (`evidence_sql`, `evidence`).

Severity per kind (what is at stake / what it is measured against):
  idle_gaps              idle time in gaps >= LONG_GAP_NS / the GPU's active window (first to last operation)
  launch_bound           steps: (step - GPU busy) of the launch-bound steps / all steps of the run;
                         runs without steps: (window - busy) / window of the run's GPUs
  host_bound_steps       (step - GPU busy) of the host- and sync-bound steps / all steps of the run
  sync_in_loop           CPU time in synchronising calls during the steps / the steps' time
  exposed_communication  communication time without computation beside it / the GPU's active window
  pageable_memcpy        GPU time of pageable copies / the run's longest GPU active window
  memory_bound_kernels   time memory-bound kernels would save at their roof / kernel time (with metrics)
  non_gpu_layers         non-GPU time of those layers / model latency (both per inference, corrected)
  profiling_overhead     overhead a level added / that level's model latency
  program_changed        as profiling_overhead for the level whose hooks changed the program
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field

import duckdb

from ..formats.kineto_fields import GRAPH_LAUNCH_API_NAMES
from ..resources import query_text
from .catalog import BY_NAME
from .session import Result, run_analysis

# Thresholds. Each is a judgement; the reason is beside it.
MIN_SEVERITY = 0.01  # below 1 % of the time it is measured against, fixing a finding cannot pay back noticeably
LONG_GAP_NS = 100_000  # 100 µs: a kernel launch costs the CPU ~5-20 µs, so the GPU could have run several
#                        launches' work in such a gap; shorter gaps are the usual latency between dependent launches
DEVICE_BOUND_PCT = 80.0  # GPU busy share above which the GPU, not the host, sets a run's pace (analysis_step_bound's default)
NON_GPU_LAYER_PCT = 50.0  # a layer whose kernels cover less than half its latency is dominated by non-GPU time
PROFILING_OVERHEAD_PCT = 25.0  # ranges cost microseconds per layer call; a level adding over a quarter of the model
#                                latency has very short layers or made the model run another program (a hook turns
#                                off nn.TransformerEncoderLayer's fused path: docs/design.md)
TOP_CAUSES = 2  # CPU causes named per idle-gap finding

# Every analysis the findings read.
ANALYSES = (
    "gpu_busy_idle",
    "gpu_idle_gaps",
    "step_bound",
    "kernel_launch_stats",
    "sync_calls",
    "comm_compute_overlap",
    "pageable_memcpy",
    "kernel_roofline",
    "layer_gpu_vs_nongpu",
    "model_info",
    "level_overhead",
    "program_changes",
)


@dataclass(frozen=True)
class Finding:
    kind: str  # launch_bound, host_bound_steps, idle_gaps, sync_in_loop, exposed_communication, pageable_memcpy,
    #            memory_bound_kernels, non_gpu_layers, profiling_overhead, program_changed
    severity: float  # share of the time at stake, 0..1 (the ranking key)
    text: str  # one sentence with the numbers
    analysis: str  # the analysis that shows it (catalog name)
    where: str  # a condition on that analysis's columns selecting the rows that show it
    facts: dict = field(default_factory=dict, compare=False)  # the numbers the text states, unrounded

    @property
    def evidence(self) -> str:
        return f"{self.analysis} WHERE {self.where}"


def evidence_sql(finding: Finding) -> str:
    """The SQL that shows a finding's evidence: its analysis narrowed to the finding's rows."""
    body = query_text(BY_NAME[finding.analysis].query).strip().rstrip(";")
    return f"SELECT * FROM (\n{body}\n) AS evidence WHERE {finding.where}"


def evidence(con: duckdb.DuckDBPyConnection, finding: Finding) -> Result:
    cursor = con.execute(evidence_sql(finding))
    return Result(finding.analysis, BY_NAME[finding.analysis].title, [d[0] for d in cursor.description], cursor.fetchall())


def find(con: duckdb.DuckDBPyConnection, results: Mapping[str, Result] | None = None) -> list[Finding]:
    """The findings of an analysis session, most severe first (results already computed are reused)."""
    have = dict(results or {})
    for name in ANALYSES:
        if name not in have:
            have[name] = run_analysis(con, name)
    levels = dict(con.execute("SELECT run_id, level FROM runs").fetchall())
    return findings_from_results(have, levels)


def findings_from_results(results: Mapping[str, Result], run_levels: Mapping[int, str | None] | None = None) -> list[Finding]:
    recs = {name: results[name].records() for name in ANALYSES}
    levels = dict(run_levels or {})
    windows = {(r["run_id"], r["device_id"]): r for r in recs["gpu_busy_idle"]}
    out: list[Finding] = []
    out += _idle_gaps(recs["gpu_idle_gaps"], windows)
    out += _steps(recs["step_bound"], windows, levels)
    out += _run_launch_bound(recs["kernel_launch_stats"], recs["step_bound"], windows)
    out += _sync_in_loop(recs["sync_calls"], recs["step_bound"])
    out += _exposed_communication(recs["comm_compute_overlap"], windows)
    out += _pageable(recs["pageable_memcpy"], windows)
    out += _memory_bound(recs["kernel_roofline"])
    out += _non_gpu_layers(recs["layer_gpu_vs_nongpu"], recs["model_info"])
    out += _profiling(recs["level_overhead"], recs["program_changes"])
    kept = [f for f in out if f.severity >= MIN_SEVERITY or f.kind == "program_changed"]
    return sorted(kept, key=lambda f: (-f.severity, f.kind, f.text))


def findings_result(findings: list[Finding]) -> Result:
    """The findings as a table (rank, severity, kind, text, evidence) for the printers."""
    rows = [(i, round(100 * f.severity, 1), f.kind, f.text, f.evidence) for i, f in enumerate(findings, 1)]
    return Result(
        "findings", "Findings, most severe first (severity: % of the time at stake)", ["rank", "severity_pct", "kind", "finding", "evidence"], rows
    )


# -- wording ------------------------------------------------------------------------------------


def duration(ns: float) -> str:
    """A duration in the unit people read it in: 1.23 s, 45.6 ms, 7.8 µs, 90 ns."""
    ns = float(ns)
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if abs(ns) >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.3g} ns"


def pct(share: float) -> str:
    return f"{100 * share:.1f} %"


def _size(nbytes: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(nbytes) >= scale:
            return f"{nbytes / scale:.3g} {unit}"
    return f"{nbytes:.0f} B"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _gpu(run_id: int, device_id: int, rank=None) -> str:
    return f"GPU {device_id} of run {run_id}" + (f" (rank {rank})" if rank is not None else "")


def _ms_to_ns(value) -> float:
    return float(value or 0) * 1e6


# -- the findings -------------------------------------------------------------------------------


def _idle_gaps(gaps: list[dict], windows: dict) -> list[Finding]:
    """Long idle gaps per GPU and what the launching thread was doing meanwhile (gpu_idle_gaps)."""
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
        named = "; ".join(f"{label} ({duration(ns)}, {_count(n, 'gap')})" for (label, _), (ns, n) in top)
        text = (
            f"{_gpu(run_id, device_id)} sat idle {duration(idle)} in {_count(len(mine), 'gap')} of {duration(LONG_GAP_NS)} or longer, "
            f"{pct(idle / window)} of its {duration(window)} active window; {late} of them ended only when the CPU "
            f"launched the next operation late. Meanwhile the launching thread was in: {named}."
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
                    "causes": [(label, span, ns, n) for (label, span), (ns, n) in top],
                },
            )
        )
    return out


def _cause(gap: dict) -> tuple[str, str | None]:
    """What the CPU was doing during a gap: (as the finding words it, the CPU span's name or None)."""
    if gap["launch_call"] is None:
        return "(no launch call recorded for the next operation)", None
    if gap["sync_call"] is not None:
        return f"{gap['sync_call']} ({gap['sync_kind']} synchronisation)", gap["sync_call"]
    if gap["cpu_span"] is not None:
        return gap["cpu_span"], gap["cpu_span"]
    return "(no CPU span recorded on the launching thread)", None


def _gpu_runs(windows: dict) -> set:
    return {run for run, _ in windows}


def _steps(steps: list[dict], windows: dict, levels: Mapping) -> list[Finding]:
    """Launch-bound and host-bound steps (step_bound), in runs that recorded GPU work."""
    per_run: dict[int, list[dict]] = defaultdict(list)
    for s in steps:
        if s["run_id"] in _gpu_runs(windows):
            per_run[s["run_id"]].append(s)
    out = []
    for run_id, mine in per_run.items():
        total = sum(_ms_to_ns(s["step_ms"]) for s in mine)
        if not total:
            continue
        note = f" (a level-{levels[run_id]} run: its step times include the overhead of profiling that level)" if levels.get(run_id) else ""
        for kind, verdicts in (("launch_bound", ("launch-bound",)), ("host_bound_steps", ("host-bound", "sync-bound"))):
            hit = [s for s in mine if s["bound"] in verdicts]
            if not hit:
                continue
            step = sum(_ms_to_ns(s["step_ms"]) for s in hit)
            busy = sum(_ms_to_ns(s["gpu_busy_ms"]) for s in hit)
            launch = sum(_ms_to_ns(s["launch_ms"]) for s in hit)
            facts = {
                "run_id": run_id,
                "steps": len(hit),
                "of_steps": len(mine),
                "step_ns": step,
                "gpu_busy_ns": busy,
                "launch_ns": launch,
                "iterations": [s["iteration"] for s in hit],
            }
            steps_are = f"{len(hit)} of {len(mine)} steps of run {run_id} {'is' if len(hit) == 1 else 'are'}"
            if kind == "launch_bound":
                text = (
                    f"{steps_are} launch-bound: the CPU spent {duration(launch)} "
                    f"in launch calls while the GPU was busy only {duration(busy)} of their {duration(step)} "
                    f"({pct(busy / step)}); fewer, larger kernels (fusion, CUDA graphs) would help{note}."
                )
            else:
                sync = sum(1 for s in hit if s["bound"] == "sync-bound")
                text = (
                    f"{steps_are} host-bound"
                    + (f" ({sync} of them waiting in synchronising calls)" if sync else "")
                    + f": the GPU was busy {duration(busy)} of their {duration(step)} ({pct(busy / step)}, under "
                    f"{DEVICE_BOUND_PCT:.0f} %); the CPU side sets the pace (gpu_idle_gaps shows what it was doing){note}."
                )
            verdict_list = ", ".join(f"'{v}'" for v in verdicts)
            out.append(Finding(kind, (step - busy) / total, text, "step_bound", f"run_id = {run_id} AND bound IN ({verdict_list})", facts))
    return out


def _run_launch_bound(stats: list[dict], steps: list[dict], windows: dict) -> list[Finding]:
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


def _sync_in_loop(syncs: list[dict], steps: list[dict]) -> list[Finding]:
    """Synchronising calls inside the steps (sync_calls; the waiting time from step_bound)."""
    per_run: dict[int, list[dict]] = defaultdict(list)
    for r in syncs:
        if r["calls_in_steps"] and r["sync_kind"] in ("explicit", "implicit"):
            per_run[r["run_id"]].append(r)
    out = []
    for run_id, mine in per_run.items():
        run_steps = [s for s in steps if s["run_id"] == run_id]
        step = sum(_ms_to_ns(s["step_ms"]) for s in run_steps)
        sync = sum(_ms_to_ns(s["sync_ms"]) for s in run_steps)
        if not step:
            continue
        calls = sum(r["calls_in_steps"] for r in mine)
        names = ", ".join(f"{r['name']} x{r['calls_in_steps']}" for r in sorted(mine, key=lambda r: (-r["calls_in_steps"], r["name"])))
        text = (
            f"Run {run_id} synchronises {_count(calls, 'time')} inside its {_count(len(run_steps), 'step')} ({names}): the CPU waited "
            f"{duration(sync)} for the GPU, {pct(sync / step)} of the steps' {duration(step)}, and each wait empties "
            f"the GPU's queue so the next kernels start only after new launches."
        )
        out.append(
            Finding(
                "sync_in_loop",
                sync / step,
                text,
                "sync_calls",
                f"run_id = {run_id} AND calls_in_steps > 0 AND sync_kind IN ('explicit', 'implicit')",
                {
                    "run_id": run_id,
                    "calls_in_steps": calls,
                    "sync_ns": sync,
                    "step_ns": step,
                    "names": {r["name"]: r["calls_in_steps"] for r in mine},
                },
            )
        )
    return out


def _exposed_communication(rows: list[dict], windows: dict) -> list[Finding]:
    """Communication kernels not overlapped by computation (comm_compute_overlap)."""
    out = []
    for r in rows:
        window = windows.get((r["run_id"], r["device_id"]), {}).get("window_ns")
        comm, exposed = r["communication_ns"], r["exposed_communication_ns"]
        if not comm or not window:
            continue
        text = (
            f"{_gpu(r['run_id'], r['device_id'], r['rank'])}: {duration(exposed)} of its {duration(comm)} of communication "
            f"runs with no computation beside it ({r['overlap_pct']:.1f} % overlapped), {pct(exposed / window)} of its "
            f"{duration(window)} active window; overlapping it (bucketing, prefetch, async collectives) would hide it."
        )
        out.append(
            Finding(
                "exposed_communication",
                exposed / window,
                text,
                "comm_compute_overlap",
                f"run_id = {r['run_id']} AND device_id = {r['device_id']}",
                {
                    "run_id": r["run_id"],
                    "device_id": r["device_id"],
                    "communication_ns": comm,
                    "overlap_ns": r["overlap_ns"],
                    "exposed_ns": exposed,
                    "window_ns": window,
                },
            )
        )
    return out


def _pageable(rows: list[dict], windows: dict) -> list[Finding]:
    """Copies from / to pageable host memory (pageable_memcpy), against the run's longest GPU window."""
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
        kinds = ", ".join(f"{r['copies']} {r['copy_kind']}" for r in mine)
        text = (
            f"Run {run_id} copies {_size(nbytes)} between the GPU and pageable host memory in {copies} cop{'y' if copies == 1 else 'ies'} ({kinds}): "
            f"{duration(ns)} of GPU time at {nbytes / ns if ns else 0:.3g} GB/s, {pct(ns / window)} of its GPU's "
            f"{duration(window)} active window; pinned memory (pin_memory=True) copies faster and lets Async copies overlap."
        )
        out.append(
            Finding(
                "pageable_memcpy",
                ns / window,
                text,
                "pageable_memcpy",
                f"run_id = {run_id}",
                {"run_id": run_id, "copies": copies, "bytes": nbytes, "total_ns": ns, "window_ns": window},
            )
        )
    return out


def _memory_bound(rows: list[dict]) -> list[Finding]:
    """Kernels left of the roofline's ridge point (kernel_roofline; only kernels with metrics)."""
    per_exp: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        if r["latency_ms"]:
            per_exp[r["experiment"]].append(r)
    out = []
    for exp, mine in per_exp.items():
        bound = [r for r in mine if r["memory_bound"]]
        total = sum(_ms_to_ns(r["latency_ms"]) for r in mine)
        if not bound or not total:
            continue
        mb = sum(_ms_to_ns(r["latency_ms"]) for r in bound)
        # At stake: the time these kernels would save running at their attainable (memory) roof.
        stake = sum(_ms_to_ns(r["latency_ms"]) * (1 - min(float(r["roof_pct"] or 0), 100) / 100) for r in bound)
        big = max(bound, key=lambda r: r["latency_ms"])
        text = (
            f"{exp}: {len(bound)} of {len(mine)} kernels with metrics are memory-bound (arithmetic intensity below "
            f"the ridge point, {float(big['ideal_intensity']):.3g} FLOP/B), {pct(mb / total)} of their kernel time; the "
            f"longest, {big['name']}, runs at {float(big['arithmetic_intensity']):.3g} FLOP/B and reaches "
            f"{float(big['roof_pct']):.1f} % of the FLOP/s its bandwidth allows."
        )
        out.append(
            Finding(
                "memory_bound_kernels",
                stake / total,
                text,
                "kernel_roofline",
                f"experiment = '{_sql(exp)}' AND memory_bound",
                {
                    "experiment": exp,
                    "kernels": len(mine),
                    "memory_bound": sorted(r["name"] for r in bound),
                    "memory_bound_ns": mb,
                    "kernel_ns": total,
                },
            )
        )
    return out


def _non_gpu_layers(layers: list[dict], models: list[dict]) -> list[Finding]:
    """Layers whose latency is mostly not GPU kernel time (layer_gpu_vs_nongpu, leveled-corrected)."""
    model_ns = {r["experiment"]: _ms_to_ns(r["latency_ms"]) for r in models}
    per_exp: dict[str, list[dict]] = defaultdict(list)
    for r in layers:
        per_exp[r["experiment"]].append(r)
    out = []
    for exp, mine in per_exp.items():
        hit = [r for r in mine if r["gpu_pct"] is not None and float(r["gpu_pct"]) < NON_GPU_LAYER_PCT]
        model = model_ns.get(exp)
        if not hit or not model:
            continue
        non_gpu = sum(_ms_to_ns(r["non_gpu_latency_ms"]) for r in hit)
        worst = max(hit, key=lambda r: r["non_gpu_latency_ms"])
        corrected = all(r["corrected"] for r in hit)
        source = (
            "corrected: layer latency from the ML run, kernel latency from the MLG run"
            if corrected
            else "uncorrected: these figures include profiling overhead"
        )
        text = (
            f"{exp}: {len(hit)} of {len(mine)} layers spend most of their latency off the GPU (kernels under "
            f"{NON_GPU_LAYER_PCT:.0f} % of it): {duration(non_gpu)} of non-GPU time per inference, {pct(non_gpu / model)} "
            f"of the {duration(model)} model latency; most in layer {worst['layer_index']} {worst['layer_name']} "
            f"({duration(_ms_to_ns(worst['non_gpu_latency_ms']))}, GPU {float(worst['gpu_pct']):.1f} %) ({source})."
        )
        out.append(
            Finding(
                "non_gpu_layers",
                min(non_gpu / model, 1.0),
                text,
                "layer_gpu_vs_nongpu",
                f"experiment = '{_sql(exp)}' AND gpu_pct < {NON_GPU_LAYER_PCT}",
                {"experiment": exp, "layers": [r["layer_index"] for r in hit], "non_gpu_ns": non_gpu, "model_ns": model, "corrected": corrected},
            )
        )
    return out


def _profiling(overheads: list[dict], changes: list[dict]) -> list[Finding]:
    """Profiling that changed what it measures: a level adding a large share of the model latency
    (level_overhead), or a recorded program change (program_changes: fast paths left under hooks)."""
    changed = {(r["experiment"], r["level"]): r for r in changes}
    out = []
    for r in overheads:
        # In-process figures only: the run's instrumented inferences against its own un-instrumented
        # ones (level_overhead); the cross-process comparison is indicative and never a finding.
        if r["overhead_pct"] is None or not r["instrumented_ms"]:
            continue
        share = max(_ms_to_ns(r["overhead_ms"]), 0) / _ms_to_ns(r["instrumented_ms"])
        change = changed.pop((r["experiment"], r["level"]), None)
        interval = (
            "" if r["overhead_pct_low"] is None else f", 95 % interval {float(r['overhead_pct_low']):.1f} to {float(r['overhead_pct_high']):.1f} %"
        )
        head = (
            f"{r['experiment']}: profiling at level {r['level']} adds {duration(_ms_to_ns(r['overhead_ms']))} "
            f"({float(r['overhead_pct']):.1f} %{interval}) to the run's own un-instrumented inferences "
            f"({duration(_ms_to_ns(r['uninstrumented_ms']))})"
        )
        if change is not None:
            text = (
                f"{head}, and the capture recorded that it changed the program: {change['change']}; that run measures "
                f"another program than the un-instrumented one."
            )
            out.append(
                Finding(
                    "program_changed",
                    max(share, MIN_SEVERITY),
                    text,
                    "program_changes",
                    f"experiment = '{_sql(r['experiment'])}' AND level = '{_sql(r['level'])}'",
                    {"experiment": r["experiment"], "level": r["level"], "overhead_share": share},
                )
            )
        elif float(r["overhead_pct"]) >= PROFILING_OVERHEAD_PCT:
            text = (
                f"{head}, over the {PROFILING_OVERHEAD_PCT:.0f} % that ranges alone should cost: the layers are very short "
                f"or a fast path is switched off under profiling (the corrected figures take each level from the run "
                f"that profiled nothing below it)."
            )
            out.append(
                Finding(
                    "profiling_overhead",
                    share,
                    text,
                    "level_overhead",
                    f"experiment = '{_sql(r['experiment'])}' AND level = '{_sql(r['level'])}'",
                    {"experiment": r["experiment"], "level": r["level"], "overhead_share": share, "overhead_pct": float(r["overhead_pct"])},
                )
            )
    for r in changed.values():  # a change in an experiment without overhead figures
        text = f"{r['experiment']}: the level-{r['level']} run measured a changed program: {r['change']}."
        out.append(
            Finding(
                "program_changed",
                MIN_SEVERITY,
                text,
                "program_changes",
                f"experiment = '{_sql(r['experiment'])}' AND level = '{_sql(r['level'])}'",
                {"experiment": r["experiment"], "level": r["level"], "overhead_share": None},
            )
        )
    return out


def _sql(text: str) -> str:
    return str(text).replace("'", "''")
