"""Findings in words: what matters in a trace, ranked, each one sentence with its numbers and the
analysis (and the rows of it) that shows it.

Findings are read off the analyses' results (queries/analyses/*.sql through run_analysis), never
computed on the side, so their numbers are the analyses' numbers -- leveled-corrected where the
database holds leveled runs (model latency from M, layer latency from ML, kernel latency from
MLG). A finding's severity is the share of the time it is measured against that is at stake, 0..1,
and findings are ranked by it.

What sets a step's time is told once, from its critical path: analyses/step_causes.sql groups the
path's segments by cause (data loading, CPU work before the step's first GPU work, framework ops,
launches, waits with the GPU idle, GPU computation, communication, streams stalled on other
streams, ...), and each cause holding at least CAUSE_MIN_SHARE of a run's steps gets one finding
(step_causes.py): its share of the path is its severity, its advice is for that cause only, and
where a what-if rule takes the cause away the finding states the replay's prediction (critical_path/what_if.py),
never a subtraction of CPU time. A run without steps is one unit from its first to its last span.

Besides the steps' causes, per experiment or GPU:
  memory_bound_kernels   time memory-bound kernels would save at their roof / kernel time (with metrics)
  non_gpu_layers         non-GPU time of those layers / model latency (both per inference, corrected;
                         only for experiments with GPU work)
  profiling_overhead     overhead a level added / that level's model latency (only when its 95 % interval
                         excludes 0: otherwise the overhead is not measurable and no finding)
  program_changed        as profiling_overhead for the level whose hooks changed the program
  unusable_capture       a capture whose model latencies spread too wide: nothing else is derived from it
  healthy                a run with GPU work and no finding gets one line per GPU saying so (severity 0)

The record, thresholds and wording helpers are in record.py.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Mapping

import duckdb

from ...resources import query_text
from ..catalog import BY_NAME
from ..critical_path.what_if import parse_rule, step_gain
from ..session import Result, run_analysis
from ..sql_library import include
from . import step_causes
from .record import MIN_SEVERITY, NON_GPU_LAYER_PCT, PROFILING_OVERHEAD_PCT, SPREAD_FACTOR, Finding, duration, ms_to_ns, pct, sql_text

__all__ = [
    "MIN_SEVERITY",
    "Finding",
    "evidence",
    "evidence_sql",
    "find",
    "findings_from_results",
    "findings_result",
]

# Every analysis the findings read.
ANALYSES = (
    "gpu_busy_idle",
    "step_causes",
    "kernel_roofline",
    "layer_gpu_vs_nongpu",
    "model_info",
    "level_overhead",
    "program_changes",
)


def evidence_sql(finding: Finding) -> str:
    """The SQL that shows a finding's evidence: its analysis narrowed to the finding's rows."""
    body = query_text(BY_NAME[finding.analysis].query).strip().rstrip(";")
    return f"SELECT * FROM (\n{body}\n) AS evidence WHERE {finding.where}"


def evidence(con: duckdb.DuckDBPyConnection, finding: Finding) -> Result:
    include(con, BY_NAME[finding.analysis].query)
    cursor = con.execute(evidence_sql(finding))
    return Result(finding.analysis, BY_NAME[finding.analysis].title, [d[0] for d in cursor.description], cursor.fetchall())


def find(con: duckdb.DuckDBPyConnection, results: Mapping[str, Result] | None = None) -> list[Finding]:
    """The findings of an analysis session, most severe first (results already computed are reused)."""
    have = dict(results or {})
    for name in ANALYSES:
        if name not in have:
            have[name] = run_analysis(con, name)
    # Recorded from PyTorch: a Kineto trace, a torch capture, or an export whose ops are aten:: ranges
    # (nsys --pytorch, emit_nvtx). Only these get advice in PyTorch's words.
    pytorch = {
        r[0]
        for r in con.execute(
            "SELECT run_id FROM runs WHERE source_kind = 'kineto' OR tool LIKE 'torch%' "
            "OR run_id IN (SELECT DISTINCT run_id FROM spans WHERE kind IN ('op', 'annotation') AND starts_with(name, 'aten::'))"
        ).fetchall()
    }
    return findings_from_results(have, pytorch, gain=_replay_gain(con))


def _replay_gain(con: duckdb.DuckDBPyConnection) -> step_causes.Gain:
    """(measured, predicted) ns of a run's steps replayed under one what-if rule (critical_path/what_if.py)."""

    loaded: dict = {}  # each run loaded once for all its findings' replays

    def gain(run_id: int, iterations: list, rule: str) -> tuple[int, int] | None:
        return step_gain(con, run_id, iterations, [parse_rule(rule)], loaded)

    return gain


def findings_from_results(results: Mapping[str, Result], pytorch_runs: Collection[int] = (), gain: step_causes.Gain | None = None) -> list[Finding]:
    recs = {name: results[name].records() for name in ANALYSES}
    gpu_busy: dict[int, float] = {}
    for r in recs["gpu_busy_idle"]:
        if r["window_ns"]:
            gpu_busy[r["run_id"]] = max(gpu_busy.get(r["run_id"], 0.0), float(r["busy_pct"]) / 100)
    out: list[Finding] = []
    out += step_causes.cause_findings(recs["step_causes"], gpu_busy, pytorch_runs, gain)
    out += _memory_bound(recs["kernel_roofline"])
    out += _non_gpu_layers(recs["layer_gpu_vs_nongpu"], recs["model_info"], recs["level_overhead"])
    out += _profiling(recs["level_overhead"], recs["program_changes"])
    # An experiment whose model latencies spread too wide says nothing reliable: flag it, derive nothing.
    unusable = _unusable(recs["model_info"])
    out = [f for f in out if f.facts.get("experiment") not in {u.facts["experiment"] for u in unusable}] + unusable
    kept = [f for f in out if f.severity >= MIN_SEVERITY or f.kind in ("program_changed", "unusable_capture")]
    kept += _healthy(recs["gpu_busy_idle"], {f.facts.get("run_id") for f in kept})
    return sorted(kept, key=lambda f: (-f.severity, f.kind, f.text))


def _healthy(busy: list[dict], runs_with_findings: set) -> list[Finding]:
    """One line per GPU of a run that has GPU work and no finding: it is busy, nothing is at stake."""
    out = []
    for r in busy:
        if r["run_id"] in runs_with_findings or not r["window_ns"]:
            continue
        text = f"GPU {r['device_id']} of run {r['run_id']} busy {float(r['busy_pct']):.1f} %: nothing above {pct(MIN_SEVERITY)}."
        out.append(
            Finding("healthy", 0.0, text, "gpu_busy_idle", f"run_id = {r['run_id']} AND device_id = {r['device_id']}", {"run_id": r["run_id"]})
        )
    return out


def findings_result(findings: list[Finding]) -> Result:
    """The findings as a table (rank, severity, kind, text, evidence) for the printers."""
    rows = [(i, round(100 * f.severity, 1), f.kind, f.text, f.evidence) for i, f in enumerate(findings, 1)]
    return Result(
        "findings", "Findings, most severe first (severity: % of the time at stake)", ["rank", "severity_pct", "kind", "finding", "evidence"], rows
    )


# -- the findings -------------------------------------------------------------------------------


def _memory_bound(rows: list[dict]) -> list[Finding]:
    """Kernels left of the roofline's ridge point (kernel_roofline; only kernels with metrics)."""
    per_exp: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        if r["latency_ms"]:
            per_exp[r["experiment"]].append(r)
    out = []
    for exp, mine in per_exp.items():
        bound = [r for r in mine if r["memory_bound"]]
        total = sum(ms_to_ns(r["latency_ms"]) for r in mine)
        if not bound or not total:
            continue
        mb = sum(ms_to_ns(r["latency_ms"]) for r in bound)
        # At stake: the time these kernels would save running at their attainable (memory) roof.
        stake = sum(ms_to_ns(r["latency_ms"]) * (1 - min(float(r["roof_pct"] or 0), 100) / 100) for r in bound)
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
                f"experiment = '{sql_text(exp)}' AND memory_bound",
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


def _unusable(models: list[dict]) -> list[Finding]:
    """Experiments whose model latencies (model_info: the M run's, or the plain trace's) spread wider
    than SPREAD_FACTOR: p90 over SPREAD_FACTOR x the median. Outliers (a shared machine, page faults,
    first-call work) then dominate every mean and interval derived from the run."""
    out = []
    for r in models:
        median, p90 = r["median_ms"], r["p90_ms"]
        if not median or p90 is None or float(p90) <= SPREAD_FACTOR * float(median):
            continue
        text = (
            f"{r['experiment']}: the capture is unusable: its model latency's p90 {duration(ms_to_ns(p90))} is "
            f"{float(p90) / float(median):.0f}x its median {duration(ms_to_ns(median))} (over {SPREAD_FACTOR:.0f}x), so outliers "
            f"dominate every figure derived from it; capture again on a quiet machine (more warm-up, pinned CPU)."
        )
        where = f"experiment = '{sql_text(r['experiment'])}'"
        out.append(Finding("unusable_capture", 1.0, text, "model_info", where, {"experiment": r["experiment"], "median_ms": median, "p90_ms": p90}))
    return out


def _non_gpu_layers(layers: list[dict], models: list[dict], overheads: list[dict]) -> list[Finding]:
    """Layers whose latency is mostly not GPU kernel time (layer_gpu_vs_nongpu, leveled-corrected),
    against the model latency of the run the layer latencies come from: the ML run's own model
    ranges (level_overhead), else model_info's. (The M run's latency holds no layer ranges: the ML
    run's layers, each slowed by its ranges, can add up to more than it -- a share over 100 %.)"""
    model_ns = {r["experiment"]: ms_to_ns(r["latency_ms"]) for r in models}
    for r in overheads:
        if r["level"] == "ML" and r["model_latency_ms"]:
            model_ns[r["experiment"]] = ms_to_ns(r["model_latency_ms"])
    per_exp: dict[str, list[dict]] = defaultdict(list)
    for r in layers:
        per_exp[r["experiment"]].append(r)
    out = []
    for exp, mine in per_exp.items():
        if all(not float(r["gpu_pct"] or 0) for r in mine):  # no GPU work: a CPU run's layers are all CPU time
            continue
        hit = [r for r in mine if r["gpu_pct"] is not None and float(r["gpu_pct"]) < NON_GPU_LAYER_PCT]
        model = model_ns.get(exp)
        if not hit or not model:
            continue
        non_gpu = sum(ms_to_ns(r["non_gpu_latency_ms"]) for r in hit)
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
            f"of the {duration(model)} model latency of the run that measured the layers; most in layer {worst['layer_index']} {worst['layer_name']} "
            f"({duration(ms_to_ns(worst['non_gpu_latency_ms']))}, GPU {float(worst['gpu_pct']):.1f} %) ({source})."
        )
        out.append(
            Finding(
                "non_gpu_layers",
                non_gpu / model,
                text,
                "layer_gpu_vs_nongpu",
                f"experiment = '{sql_text(exp)}' AND gpu_pct < {NON_GPU_LAYER_PCT}",
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
        share = max(ms_to_ns(r["overhead_ms"]), 0) / ms_to_ns(r["instrumented_ms"])
        change = changed.pop((r["experiment"], r["level"]), None)
        low, high = r["overhead_pct_low"], r["overhead_pct_high"]
        interval = "" if low is None else f", 95 % interval {float(low):.1f} to {float(high):.1f} %"
        # An interval that holds 0: the runs cannot tell the overhead from noise -- not measurable.
        measurable = low is None or not float(low) <= 0 <= float(high)
        share = share if measurable else 0.0
        head = (
            f"{r['experiment']}: profiling at level {r['level']} adds {duration(ms_to_ns(r['overhead_ms']))} "
            f"({float(r['overhead_pct']):.1f} %{interval}) to the run's own un-instrumented inferences "
            f"({duration(ms_to_ns(r['uninstrumented_ms']))})"
            if measurable
            else f"{r['experiment']}: profiling at level {r['level']} has no measurable overhead ({interval[2:]} holds 0)"
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
                    f"experiment = '{sql_text(r['experiment'])}' AND level = '{sql_text(r['level'])}'",
                    {"experiment": r["experiment"], "level": r["level"], "overhead_share": share},
                )
            )
        elif measurable and float(r["overhead_pct"]) >= PROFILING_OVERHEAD_PCT:
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
                    f"experiment = '{sql_text(r['experiment'])}' AND level = '{sql_text(r['level'])}'",
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
                f"experiment = '{sql_text(r['experiment'])}' AND level = '{sql_text(r['level'])}'",
                {"experiment": r["experiment"], "level": r["level"], "overhead_share": None},
            )
        )
    return out
