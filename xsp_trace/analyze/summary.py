"""The one-screen summary `xsp-trace analyze` prints without -a: what dominates each GPU's time,
how busy and idle it was, how much communication it ran and how much of it was exposed, what
bound each run's steps, its top kernels, and the most severe findings.

Every number is an analysis's own (gpu_busy_idle, comm_compute_split, comm_compute_overlap,
step_bound, top_kernels, the findings): rows are picked and put side by side here, and the steps
are counted per bound with their median; nothing else is computed.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from statistics import median

import duckdb
from rich.console import Console
from rich.text import Text

from ..printable import printable
from ..terminal.readable_table import TableStyle, render
from .empty import EmptyReasons
from .findings.find import Finding, find
from .session import Result, run_analysis

TOP_KERNELS = 5  # per run
TOP_FINDINGS = 5
# The analyses the summary reads (the findings read more).
ANALYSES = ("gpu_busy_idle", "comm_compute_split", "comm_compute_overlap", "step_bound", "top_kernels")


@dataclass
class Summary:
    gpus: Result  # one row per GPU of a run
    steps: Result  # one row per run and bound (device-, host-, sync-bound ...)
    kernels: Result  # the top kernels of each run
    findings: list[Finding]
    runs_without_steps: list[int]


def summarize(con: duckdb.DuckDBPyConnection, results: Mapping[str, Result] | None = None) -> Summary:
    """The summary of an analysis session (results already computed are reused)."""
    have = dict(results or {})
    for name in ANALYSES:
        if name not in have:
            have[name] = run_analysis(con, name)
    recs = {name: have[name].records() for name in ANALYSES}
    runs = sorted(r[0] for r in con.execute("SELECT run_id FROM runs").fetchall())
    return Summary(
        _gpus(recs["gpu_busy_idle"], recs["comm_compute_split"], recs["comm_compute_overlap"]),
        _steps(recs["step_bound"]),
        _kernels(have["top_kernels"]),
        find(con, have)[:TOP_FINDINGS],
        [r for r in runs if r not in {s["run_id"] for s in recs["step_bound"]}],
    )


def _gpus(busy: list[dict], split: list[dict], overlap: list[dict]) -> Result:
    largest: dict[tuple, dict] = {}
    for r in split:
        key = (r["run_id"], r["device_id"])
        if key not in largest or (r["time_pct"] or 0) > (largest[key]["time_pct"] or 0):
            largest[key] = r
    comm = {(r["run_id"], r["device_id"]): r for r in overlap}
    columns = ["run_id", "device_id", "window_ns", "busy_pct", "idle_ns", "largest_share", "communication_ns", "exposed_communication_ns"]
    rows = []
    for r in busy:
        key = (r["run_id"], r["device_id"])
        top, c = largest.get(key), comm.get(key, {})
        share = f"{top['classes']} {float(top['time_pct']):.1f} %" if top and top["time_pct"] is not None else None
        rows.append((*key, r["window_ns"], r["busy_pct"], r["idle_ns"], share, c.get("communication_ns"), c.get("exposed_communication_ns")))
    return Result("summary_gpus", "GPU time: what dominates it, idle, communication", columns, rows)


def _steps(steps: list[dict]) -> Result:
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in steps:
        groups[(r["run_id"], r["bound"])].append(r)
    rows = [
        (
            run,
            bound,
            len(rs),
            median(float(r["step_ms"]) for r in rs),
            median(float(r["gpu_busy_pct"]) for r in rs if r["gpu_busy_pct"] is not None) if any(r["gpu_busy_pct"] is not None for r in rs) else None,
        )
        for (run, bound), rs in sorted(groups.items(), key=lambda kv: (kv[0][0], -len(kv[1])))
    ]
    return Result("summary_steps", "What bounds the steps", ["run_id", "bound", "steps", "median_step_ms", "median_gpu_busy_pct"], rows)


def _kernels(top: Result) -> Result:
    keep = ["run_id", "name", "instances", "total_ns", "time_pct"]
    at = [top.columns.index(c) for c in keep]
    count: dict[object, int] = defaultdict(int)
    rows = []
    for row in top.rows:
        if count[row[at[0]]] < TOP_KERNELS:
            count[row[at[0]]] += 1
            rows.append(tuple(row[i] for i in at))
    return Result("summary_kernels", f"Top kernels by GPU time (at most {TOP_KERNELS} per run)", keep, rows)


def print_summary(console: Console, summary: Summary, style: TableStyle, reasons: EmptyReasons) -> None:
    """The summary as three small tables and the findings as sentences."""
    render(console, summary.gpus.columns, summary.gpus.rows, style, title=summary.gpus.title, empty_note="no GPU work in this trace")
    console.print()
    render(console, summary.steps.columns, summary.steps.rows, style, title=summary.steps.title, empty_note=reasons.reason("step_bound"))
    if summary.runs_without_steps and summary.steps.rows:
        console.print(f"  (no steps in run {', '.join(map(str, summary.runs_without_steps))})", markup=False, highlight=False)
    console.print()
    render(console, summary.kernels.columns, summary.kernels.rows, style, title=summary.kernels.title, empty_note="no GPU kernels in this trace")
    console.print()
    console.print(Text("Findings, most severe first", style="bold"))
    for i, f in enumerate(summary.findings, 1):
        console.print(Text(printable(f"{i}. {f.text} [{f.analysis}]")), width=style.width or None, soft_wrap=style.width is None)
    if not summary.findings:
        console.print("  (nothing found)")
    console.print()
    console.print(
        "analyze --all prints every analysis; -a NAME one of them (analyze --list names them); --findings shows each finding's rows.",
        markup=False,
        highlight=False,
    )
