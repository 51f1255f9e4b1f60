"""The analyses `xsp-trace analyze` knows: name -> documented SQL file queries/analyses/<name>.sql.

Every file is a plain SELECT over the SQL library (queries/lib/, xsp_trace/analyze/sql_library.py) and the schema,
and describes its analysis in its header: title, group, the tables a Python builder fills for it, the
library modules it includes and its output columns' types (docs/design.md, "The SQL library").
The order here is the order of the printed tables and of the HTML report.
"""

from __future__ import annotations

from dataclasses import dataclass

from .sql_library import header_fields


@dataclass(frozen=True)
class Analysis:
    name: str  # also the file: queries/analyses/<name>.sql
    title: str
    group: str  # model, layer, kernel, gpu, rules, comm, summary, compare
    # Tables a Python builder fills before the query runs (xsp_trace.analyze.session.BUILDERS).
    builds: tuple[str, ...] = ()

    @property
    def query(self) -> str:
        """The query's resource name (xsp_trace.resources.query_text)."""
        return f"analyses/{self.name}"


def from_header(name: str) -> Analysis:
    """The analysis as its SQL file's header describes it (`-- title:`, `-- group:`, `-- builds:`)."""
    fields = header_fields(f"analyses/{name}")
    missing = [key for key in ("title", "group") if not fields.get(key)]
    if missing:
        raise ValueError(f"queries/analyses/{name}.sql: no {' or '.join(missing)} in its header")
    builds = tuple(part for part in fields.get("builds", "").replace(",", " ").split() if part)
    return Analysis(name, fields["title"], fields["group"], builds)


# The analyses in the order of the printed tables and of the HTML report.
ORDER: tuple[str, ...] = (
    "level_sources",
    "model_info",
    "model_batch_scaling",
    "step_breakdown",
    "level_overhead",
    "program_changes",
    "layer_info",
    "layer_type_distribution",
    "layer_latency",
    "layer_memory",
    "layer_type_latency_share",
    "kernel_info",
    "kernel_roofline",
    "layer_gpu_aggregates",
    "layer_gpu_vs_nongpu",
    "layer_roofline",
    "model_gpu_aggregates",
    "model_roofline",
    "top_kernels",
    "cuda_gpu_kern_hist",
    "kernel_pace",
    "kernel_sequences",
    "gpu_busy_idle",
    "launch_queue_delay",
    "gpu_idle_gaps",
    "gpu_idle_breakdown",
    "gpu_utilization_bins",
    "step_bound",
    "sync_calls",
    "pageable_memcpy",
    "kernel_launch_stats",
    "nvtx_gpu_projection",
    "critical_path_summary",
    "critical_path",
    "step_causes",
    "what_if",
    "cuda_async_memcpy",
    "cuda_sync_memcpy",
    "cuda_sync_memset",
    "cuda_sync_api",
    "gpu_starvation",
    "gpu_low_utilization",
    "comm_compute_split",
    "comm_compute_overlap",
    "nccl_collectives",
    "rank_skew",
    "cuda_api_sum",
    "cuda_gpu_kern_sum",
    "cuda_gpu_kern_gb_sum",
    "cuda_gpu_mem_time_sum",
    "cuda_gpu_mem_size_sum",
    "osrt_sum",
    "cpu_hot_functions",
    "thread_scheduling",
    "blocking_os_calls",
    "nvtx_sum",
    "layer_allocations",
    "memory_peak_owners",
    "memory_by_op",
    "op_roofline",
    "model_flops_utilization",
    "op_categories",
    "compare_runs",
)

ANALYSES: tuple[Analysis, ...] = tuple(from_header(name) for name in ORDER)

BY_NAME = {a.name: a for a in ANALYSES}
