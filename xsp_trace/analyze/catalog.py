"""The analyses `xsp-trace analyze` knows: name -> documented SQL file queries/analyses/<name>.sql.

Every file is a plain SELECT over the SQL library (queries/lib/, xsp_trace/sqllib.py) and the schema;
the order here is the order of the printed tables and of the HTML report.
"""

from __future__ import annotations

from dataclasses import dataclass


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


ANALYSES: tuple[Analysis, ...] = (
    Analysis("level_sources", "Where each level's numbers come from", "model"),
    Analysis("model_info", "Model information: latency and throughput", "model"),
    Analysis("model_batch_scaling", "Latency and throughput vs batch size", "model"),
    Analysis("step_breakdown", "GPU time per step, by phase (every thread's launches)", "model"),
    Analysis("level_overhead", "Profiling overhead of each level", "model"),
    Analysis("program_changes", "Runs whose program profiling changed (fast paths left)", "model"),
    Analysis("layer_info", "Layer information", "layer"),
    Analysis("layer_type_distribution", "Layer type distribution", "layer"),
    Analysis("layer_latency", "Layer latency", "layer"),
    Analysis("layer_memory", "Layer memory", "layer"),
    Analysis("layer_type_latency_share", "Layer type latency share", "layer"),
    Analysis("kernel_info", "Kernel information", "kernel"),
    Analysis("kernel_roofline", "Kernel roofline", "kernel"),
    Analysis("layer_gpu_aggregates", "Per-layer GPU aggregates", "kernel"),
    Analysis("layer_gpu_vs_nongpu", "Layer GPU vs non-GPU latency", "kernel"),
    Analysis("layer_roofline", "Layer roofline", "kernel"),
    Analysis("model_gpu_aggregates", "Model GPU aggregates", "kernel"),
    Analysis("model_roofline", "Model roofline", "kernel"),
    Analysis("top_kernels", "Top kernels by name (every run, uncorrected)", "kernel"),
    Analysis("gpu_busy_idle", "GPU busy and idle time", "gpu"),
    Analysis("launch_queue_delay", "Launch queue delay (kernel start - launch end)", "gpu"),
    Analysis("gpu_idle_gaps", "GPU idle gaps and what the CPU was doing meanwhile", "gpu"),
    Analysis("gpu_idle_breakdown", "GPU idle time per stream and step: host wait, kernel wait, other (HTA)", "gpu"),
    Analysis("gpu_utilization_bins", "GPU utilisation over time", "gpu"),
    Analysis("step_bound", "Host-bound or device-bound, per step", "gpu"),
    Analysis("sync_calls", "Synchronising calls (CPU waits for the GPU)", "gpu"),
    Analysis("pageable_memcpy", "Copies from / to pageable host memory", "gpu"),
    Analysis("kernel_launch_stats", "Kernel launch: CPU launch time vs GPU kernel time", "gpu"),
    Analysis("nvtx_gpu_projection", "NVTX ranges projected onto the GPU", "gpu"),
    Analysis("critical_path_summary", "Critical path of each step: what sets the step time", "gpu", builds=("xsp_critical_path",)),
    Analysis("critical_path", "Critical path of each step, segment by segment", "gpu", builds=("xsp_critical_path",)),
    Analysis("step_causes", "Step time by cause: the critical path grouped by why the time went", "gpu", builds=("xsp_critical_path",)),
    Analysis("what_if", "Predicted step time under --what-if rules, and the new critical path", "gpu", builds=("xsp_what_if",)),
    Analysis("cuda_async_memcpy", "Async copies made synchronous by pageable memory (nsys analyze cuda-async-memcpy)", "rules"),
    Analysis("cuda_sync_memcpy", "Synchronous copies (nsys analyze cuda-sync-memcpy)", "rules"),
    Analysis("cuda_sync_memset", "Synchronous sets of pinned/managed memory (nsys analyze cuda-sync-memset)", "rules"),
    Analysis("cuda_sync_api", "Device and stream synchronisation calls (nsys analyze cuda-sync-api)", "rules"),
    Analysis("gpu_starvation", "GPU idle gaps above --set gap (nsys analyze gpu-starv)", "rules"),
    Analysis("gpu_low_utilization", "Regions of low GPU use (nsys analyze gpu-low-util)", "rules"),
    Analysis("comm_compute_split", "GPU time: computation, communication, memory and their overlaps", "comm"),
    Analysis("comm_compute_overlap", "Communication overlapped by computation", "comm"),
    Analysis("nccl_collectives", "NCCL collectives: count, size, time, algorithm and bus bandwidth", "comm"),
    Analysis("rank_skew", "Ranks side by side: step time, skew, collective wait, straggler", "comm"),
    Analysis("cuda_api_sum", "CUDA API summary (nsys stats cuda_api_sum)", "summary"),
    Analysis("cuda_gpu_kern_sum", "GPU kernel summary (nsys stats cuda_gpu_kern_sum)", "summary"),
    Analysis("cuda_gpu_kern_gb_sum", "GPU kernel summary by grid and block (nsys stats cuda_gpu_kern_gb_sum)", "summary"),
    Analysis("cuda_gpu_mem_time_sum", "GPU memory operations by time (nsys stats cuda_gpu_mem_time_sum)", "summary"),
    Analysis("cuda_gpu_mem_size_sum", "GPU memory operations by size (nsys stats cuda_gpu_mem_size_sum)", "summary"),
    Analysis("osrt_sum", "OS runtime summary (nsys stats osrt_sum)", "summary"),
    Analysis("nvtx_sum", "NVTX range summary (nsys stats nvtx_sum)", "summary"),
    Analysis("layer_allocations", "Memory each layer allocates while it runs (allocation events)", "layer"),
    Analysis("op_roofline", "Roofline per op and shape from recorded shapes (TraceLens perf models)", "kernel"),
    Analysis("model_flops_utilization", "Model FLOPs utilisation (MFU) from recorded shapes", "model"),
    Analysis("op_categories", "Time per op category: GEMM, conv, attention, norm, elementwise, ...", "kernel"),
    Analysis("compare_runs", "Comparison of two runs", "compare"),
)

BY_NAME = {a.name: a for a in ANALYSES}
