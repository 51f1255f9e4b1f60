"""Why an analysis shows nothing, in a user's words: the selection matched nothing (no such
iteration, a window outside the run), the trace has no steps or no layers (and how to get them),
or the trace simply holds nothing of what the analysis looks for (which for the expert rules is
good news).

`check_selection` turns a --iteration / --window that selects nothing at all into one clear error;
`EmptyReasons` says, per analysis, why its table is empty.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import duckdb

from ..errors import InputError
from ..naming import LAYER_RANGE_PRESETS
from ..store.sql import quote_identifier, scalar
from .session import AnalysisOptions
from .sql_library import include

# Analyses that read steps (model ranges or ProfilerStep#N-like iteration ranges).
STEP_ANALYSES = frozenset({"step_breakdown", "step_bound", "rank_skew", "model_flops_utilization"})
# Analyses that read layers (xsp-trace capture's layer ranges, or --layer-ranges).
LAYER_ANALYSES = frozenset(
    {
        "layer_info",
        "layer_type_distribution",
        "layer_latency",
        "layer_memory",
        "layer_type_latency_share",
        "layer_gpu_aggregates",
        "layer_gpu_vs_nongpu",
        "layer_roofline",
        "layer_allocations",
    }
)
_NEEDS_CAPTURE = "needs leveled runs recorded by `xsp-trace capture` (model, layer and kernel levels in runs of their own)"
_RULE_CLEAN = "nothing to flag: no such call in this trace"
# What an analysis looks for, said when it found nothing and no better reason is known.
NEEDS: dict[str, str] = {
    "model_info": "no model ranges or steps in this trace",
    "model_batch_scaling": _NEEDS_CAPTURE + " at two or more batch sizes",
    "level_overhead": _NEEDS_CAPTURE,
    "program_changes": "no level changed the program (or no leveled runs from `xsp-trace capture`)",
    "kernel_info": "no GPU kernels in this trace",
    "kernel_roofline": "needs kernel metrics from Nsight Compute (`xsp-trace metrics`) and the GPU's peaks (--peak-flops, --peak-dram-bw)",
    "model_gpu_aggregates": "no GPU kernels in this trace",
    "model_roofline": "needs kernel metrics from Nsight Compute (`xsp-trace metrics`) and the GPU's peaks",
    "top_kernels": "no GPU kernels in this trace",
    "gpu_busy_idle": "no GPU work in this trace",
    "launch_queue_delay": "no kernel launches with their GPU work in this trace",
    "gpu_idle_gaps": "no GPU work in this trace, or no gap between its operations",
    "gpu_utilization_bins": "no GPU work in this trace",
    "sync_calls": "no synchronising calls in this trace",
    "pageable_memcpy": "no copies from or to pageable host memory (good)",
    "kernel_launch_stats": "no kernel launches with their GPU work in this trace",
    "nvtx_gpu_projection": "no NVTX or annotation ranges with GPU work in this trace",
    "critical_path_summary": "no CPU or GPU work to follow in this trace",
    "critical_path": "no CPU or GPU work to follow in this trace",
    "step_causes": "no CPU or GPU work to follow in this trace",
    "what_if": "no steps to replay (pass --what-if rules; the trace needs CPU and GPU work)",
    "cuda_async_memcpy": _RULE_CLEAN,
    "cuda_sync_memcpy": _RULE_CLEAN,
    "cuda_sync_memset": _RULE_CLEAN,
    "cuda_sync_api": _RULE_CLEAN,
    "gpu_starvation": "nothing to flag: no GPU idle gap longer than --set gap (default 500 ms)",
    "gpu_low_utilization": "nothing to flag: no region used below --set threshold (default 50 %)",
    "comm_compute_split": "no GPU work in this trace",
    "comm_compute_overlap": "no GPU work in this trace",
    "nccl_collectives": "no NCCL collectives in this trace",
    "rank_skew": "needs the traces of two or more ranks in one database, with steps",
    "cuda_api_sum": "no CUDA API calls in this trace",
    "cuda_gpu_kern_sum": "no GPU kernels in this trace",
    "cuda_gpu_kern_gb_sum": "no GPU kernels with grid and block sizes in this trace",
    "cuda_gpu_mem_time_sum": "no GPU memory copies or sets in this trace",
    "cuda_gpu_mem_size_sum": "no GPU memory copies or sets in this trace",
    "osrt_sum": "no OS runtime calls (nsys records them with --trace osrt)",
    "cpu_hot_functions": "no CPU samples (nsys records them with --sample=cpu)",
    "thread_scheduling": "no thread scheduling events (nsys records them with --sample=cpu or --cpuctxsw)",
    "blocking_os_calls": "no blocking OS runtime calls (nsys records OS calls with --trace osrt)",
    "nvtx_sum": "no NVTX ranges in this trace",
    "op_roofline": "needs ops with recorded shapes (torch.profiler with record_shapes=True)",
    "model_flops_utilization": "needs steps and ops with recorded shapes (torch.profiler with record_shapes=True)",
    "op_categories": "no framework ops or GPU work in this trace",
    "compare_runs": "needs two runs in the database (--compare BASE,OTHER)",
    "findings": "nothing found",
}


def _ranges(values: list[int]) -> str:
    """The numbers as ranges: "1-3, 7" for [1, 2, 3, 7] (at most 6 pieces, then "...")."""
    pieces: list[list[int]] = []
    for v in sorted(set(values)):
        if pieces and pieces[-1][1] == v - 1:
            pieces[-1][1] = v
        else:
            pieces.append([v, v])
    texts = [str(a) if a == b else f"{a}-{b}" for a, b in pieces]
    return ", ".join(texts[:6]) + (", ..." if len(texts) > 6 else "")


def _database_table(con: duckdb.DuckDBPyConnection, table: str, runs: list[int] | None) -> str:
    """SQL for the database's own table (not the session's narrowed view), of the selected runs."""
    source = f"{quote_identifier(scalar(con, 'SELECT current_database()'))}.main.{quote_identifier(table)}"
    if not runs:
        return source
    return f"(SELECT * FROM {source} WHERE run_id IN ({', '.join(str(int(r)) for r in runs)}))"


def check_selection(con: duckdb.DuckDBPyConnection, options: AnalysisOptions, path=None) -> list[str]:
    """Notes for a selection without spans and for the part of --iteration that selects nothing; an
    InputError when no iteration asked for exists. (A --window that holds nothing is refused as the session opens: session._check_window.)"""
    notes: list[str] = []
    if not scalar(con, f"SELECT count(*) FROM (SELECT 1 FROM {_database_table(con, 'spans', options.runs)} LIMIT 1)"):
        if scalar(con, f"SELECT count(*) FROM {_database_table(con, 'runs', options.runs)}"):
            notes.append("note: the selected runs hold no spans (no CPU or GPU event), so every analysis is empty")
        else:
            notes.append("note: the database holds no runs (convert TRACE -o DATABASE --append adds one), so every analysis is empty")
    if options.iterations:
        have = con.execute(
            f"SELECT run_id, list(DISTINCT iteration) FROM {_database_table(con, 'steps', options.runs)} "
            "WHERE iteration IS NOT NULL GROUP BY run_id ORDER BY run_id"
        ).fetchall()
        known = {run: set(its) for run, its in have}
        missing = sorted(set(options.iterations) - set().union(*known.values()))
        where = "; ".join(f"run {run}: {_ranges(list(its))}" for run, its in known.items()) or "none: this trace has no steps"
        if not set(options.iterations) - set(missing):
            raise InputError(path, f"has no iteration {_ranges(missing)} (iterations: {where})", "pass --iteration with one of these")
        if missing:
            notes.append(f"note: no iteration {_ranges(missing)} in this trace (iterations: {where})")
    return notes


@dataclass
class EmptyReasons:
    """Why each analysis of one session may be empty (facts read once)."""

    steps: bool
    layer_problem: str | None
    extra: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, con: duckdb.DuckDBPyConnection, options: AnalysisOptions) -> EmptyReasons:
        steps = bool(scalar(con, "SELECT count(*) FROM steps"))
        return cls(steps, _layer_problem(con, options))

    def reason(self, analysis: str) -> str:
        """Why `analysis` has no rows, in a sentence without a full stop."""
        if analysis in STEP_ANALYSES and not self.steps:
            return (
                "no steps: this trace has no model ranges or iteration ranges (ProfilerStep#N) to split it into steps"
                " (convert --step-ranges REGEX makes other ranges the steps)"
            )
        if analysis in LAYER_ANALYSES and self.layer_problem:
            return self.layer_problem
        return NEEDS.get(analysis, "nothing in this trace for this analysis")


def _layer_problem(con: duckdb.DuckDBPyConnection, options: AnalysisOptions) -> str | None:
    """Why the session has no layers, or None when it has some."""
    include(con, "lib/layers")
    if scalar(con, "SELECT count(*) FROM xsp_layer_ranges"):
        return None
    given = options.layer_ranges
    if given is None:
        return (
            "no layers: this trace has no layer ranges of `xsp-trace capture`; --layer-ranges modules "
            "(nn.Module events) or --layer-ranges REGEX reads layers from ranges it has"
        )
    if given == "modules" or "nn\\.Module" in given:
        if not scalar(con, f"SELECT count(*) FROM spans WHERE regexp_matches(name, '{LAYER_RANGE_PRESETS['modules']}')"):
            return (
                "no nn.Module events: they are Kineto python_function events, which convert keeps only with "
                "--python-functions; convert the trace again with it"
            )
    return f"no range matches --layer-ranges {given}"
