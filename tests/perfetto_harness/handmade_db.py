"""A small hand-made two-run xsp-trace database with every case the Perfetto export must get
right: model > layer > op > API nesting, kernels/memcpy/memset on two streams, overlapping
kernels on one stream (one of them inside another: it must not nest), crossing CPU ranges, a zero-length API call, identical intervals,
an API call launching two kernels, a kernel without launch, marks, counters, span_args, and
two runs sharing a pid on very different clocks (session ns vs epoch ns).

Written with tests/support/handmade.py: spans go in without parent/depth; xsp_trace.convert.correlate fills in
nesting and launches, as for a real conversion.
"""

from __future__ import annotations

from pathlib import Path

from support.handmade import PID, Run, write
from xsp_trace.naming import layer_range_name, model_range_name

EPOCH = 1_700_000_000_000_000_000  # run 2 is on a Kineto-like epoch clock

# (kind, name, category, start, end, tid, device, stream, correlation)
RUN1_SPANS = [
    ("model", model_range_name("cnn"), "xsp", 1_000, 100_000, 100, None, None, None),
    ("layer", layer_range_name(0, "features.0", "Conv2d"), "xsp", 2_000, 40_000, 100, None, None, None),
    ("op", "aten::conv2d", "xsp", 3_000, 39_000, 100, None, None, None),
    ("api", "cudaLaunchKernel", "cuda_runtime", 4_000, 6_000, 100, None, None, 1),
    ("api", "cudaMemcpyAsync", "cuda_runtime", 7_000, 8_000, 100, None, None, 2),
    ("layer", layer_range_name(1, "features.1", "ReLU"), "xsp", 41_000, 60_000, 100, None, None, None),
    ("annotation", "forward_hook", "xsp", 41_000, 60_000, 100, None, None, None),
    ("op", "aten::relu", "xsp", 42_000, 59_000, 100, None, None, None),
    ("api", "cudaLaunchKernel", "cuda_runtime", 43_000, 44_000, 100, None, None, 3),
    ("api", "cudaMemsetAsync", "cuda_runtime", 45_000, 45_500, 100, None, None, 4),
    ("api", "cudaLaunchKernel", "cuda_runtime", 46_000, 47_000, 100, None, None, 5),
    ("api", "cudaGetDevice", "cuda_runtime", 48_000, 48_000, 100, None, None, None),
    ("annotation", "dataloader", "user", 5_000, 20_000, 101, None, None, None),
    ("annotation", "crossing", "user", 15_000, 25_000, 101, None, None, None),
    ("kernel", "implicit_convolve_sgemm", "kernel", 10_000, 30_000, None, 0, 7, 1),
    ("memcpy", "Memcpy HtoD", "memcpy", 30_000, 31_000, None, 0, 7, 2),
    ("kernel", "vectorized_relu_kernel", "kernel", 50_000, 70_000, None, 0, 7, 3),
    ("memset", "Memset", "memset", 52_000, 53_000, None, 0, 13, 4),
    ("kernel", "late_overlapping_kernel", "kernel", 60_000, 80_000, None, 0, 7, 5),
    ("kernel", "contained_kernel", "kernel", 55_000, 56_000, None, 0, 7, None),
]

RUN2_SPANS = [
    ("op", "aten::linear", "cpu_op", EPOCH + 1_000, EPOCH + 9_000, 100, None, None, None),
    ("op", "aten::addmm", "cpu_op", EPOCH + 1_500, EPOCH + 8_000, 100, None, None, None),
    ("api", "cudaGraphLaunch", "cuda_runtime", EPOCH + 2_000, EPOCH + 3_000, 100, None, None, 9),
    ("kernel", "graph_kernel_a", "kernel", EPOCH + 4_000, EPOCH + 5_000, None, 0, 7, 9),
    ("kernel", "graph_kernel_b", "kernel", EPOCH + 5_000, EPOCH + 6_000, None, 0, 7, 9),
    ("kernel", "unlaunched_kernel", "kernel", EPOCH + 6_500, EPOCH + 7_000, None, 1, 20, None),
]

KERNEL_DETAILS = {  # (run, name) -> grid, block, registers
    (1, "implicit_convolve_sgemm"): ((128, 2, 1), (256, 1, 1), 64),
    (1, "vectorized_relu_kernel"): ((1024, 1, 1), (128, 1, 1), 16),
    (1, "late_overlapping_kernel"): ((1, 1, 1), (32, 1, 1), 8),
    (2, "graph_kernel_a"): ((4, 1, 1), (64, 1, 1), 32),
    (2, "graph_kernel_b"): ((8, 1, 1), (64, 1, 1), 32),
    (2, "unlaunched_kernel"): ((2, 1, 1), (32, 1, 1), 12),
}
INPUT_DIMS = "[[1, 3, 224, 224], [64, 3, 7, 7]]"


def _run(run_id: int, rows, **fields) -> Run:
    run = Run(run_id, **fields)
    for kind, name, category, start, end, tid, device, stream, corr in rows:
        layer = int(name.split(":")[1]) if kind == "layer" else None
        run.span(kind, name, start, end, category=category, tid=tid, device_id=device, stream_id=stream, correlation_id=corr, layer_index=layer)
    run.row("processes", pid=PID, name="python")
    run.row("threads", pid=PID, tid=PID, name="python")
    run.device(0, "NVIDIA H100 80GB HBM3")
    for (kernel_run, name), (grid, block, registers) in KERNEL_DETAILS.items():
        for span_id in span_ids(rows, name) if kernel_run == run_id else ():
            columns = ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "registers_per_thread")
            run.row("kernels", span_id=span_id, **dict(zip(columns, (*grid, *block, registers), strict=True)))
    return run


def span_ids(rows, name):
    return [i for i, row in enumerate(rows, start=1) if row[1] == name]


def build(path: Path) -> Path:
    cnn = _run(1, RUN1_SPANS, source_kind="nsys", level="MLG", model="cnn", batch_size=1, tool="nsys")
    graphs = _run(2, RUN2_SPANS, source_kind="kineto", tool="torch.profiler", label="graphs")
    cnn.row("threads", pid=PID, tid=101, name="loader")
    graphs.device(1, "NVIDIA H100 80GB HBM3")
    spans = {span["name"]: span for span in cnn.spans}
    # kind and duration_ns copied from the spans, as the converters write them.
    copy, fill = spans["Memcpy HtoD"], spans["Memset"]
    cnn.row(
        "memops",
        span_id=copy["span_id"],
        kind="memcpy",
        copy_kind="HtoD",
        bytes=602112,
        duration_ns=copy["end_ns"] - copy["start_ns"],
        src_kind="Pinned",
        dst_kind="Device",
    )
    cnn.row("memops", span_id=fill["span_id"], kind="memset", bytes=4096, duration_ns=fill["end_ns"] - fill["start_ns"], fill_value=0)
    # The loader thread's NVTX ranges: one pushed and popped, one started and ended (it crosses).
    spans["dataloader"]["range_style"] = "push_pop"
    spans["crossing"]["range_style"] = "start_end"
    conv = spans["aten::conv2d"]["span_id"]
    cnn.row("span_args", span_id=conv, key="Input Dims", value=INPUT_DIMS)
    cnn.row("span_args", span_id=conv, key="Input type", value="float")
    cnn.row("marks", ts_ns=1500, name="step begin", category="xsp", pid=PID, tid=PID)
    graphs.row("marks", ts_ns=EPOCH + 500, name="profiler start", category="Trace", pid=PID, tid=None)
    for ts, value, pid, name in (
        (2000, 1.5e6, PID, "memory allocated"),
        (50000, 2.5e6, PID, "memory allocated"),
        (10000, 0.75, None, "sm active"),
        (30000, 0.25, None, "sm active"),
    ):
        cnn.row("counters", name=name, ts_ns=ts, value=value, pid=pid, device_id=0)
    return write(Path(path), [cnn, graphs])
