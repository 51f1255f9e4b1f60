"""A small hand-made two-run xsp-trace database with every case the Perfetto export must get
right: model > layer > op > API nesting, kernels/memcpy/memset on two streams, overlapping
kernels on one stream (one of them inside another: it must not nest), crossing CPU ranges, a zero-length API call, identical intervals,
an API call launching two kernels, a kernel without launch, marks, counters, span_args, and
two runs sharing a pid on very different clocks (session ns vs epoch ns).

Spans go in without parent/depth; xsp_trace.correlate fills in nesting and launches, as for
a real conversion.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from xsp_trace.correlate import correlate_run
from xsp_trace.database import atomic_database, insert_relation, insert_run
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


def _spans_table(rows, pid):
    columns = {
        name: []
        for name in (
            "span_id",
            "kind",
            "name",
            "category",
            "start_ns",
            "end_ns",
            "pid",
            "tid",
            "device_id",
            "stream_id",
            "correlation_id",
            "layer_index",
        )
    }
    for span_id, (kind, name, category, start, end, tid, device, stream, corr) in enumerate(rows, start=1):
        values = (span_id, kind, name, category, start, end, pid, tid, device, stream, corr, int(name.split(":")[1]) if kind == "layer" else None)
        for column, value in zip(columns, values, strict=True):
            columns[column].append(value)
    return pa.table(columns)


def span_ids(rows, name):
    return [i for i, row in enumerate(rows, start=1) if row[1] == name]


def build(path: Path) -> Path:
    with atomic_database(Path(path), overwrite=True) as con:
        insert_run(con, 1, source_kind="nsys", level="MLG", model="cnn", batch_size=1, tool="nsys")
        insert_run(con, 2, source_kind="kineto", tool="torch.profiler", label="graphs")
        for run, rows in ((1, RUN1_SPANS), (2, RUN2_SPANS)):
            insert_relation(con, "spans", _spans_table(rows, pid=100).append_column("run_id", pa.array([run] * len(rows), pa.int32())))
            con.execute("INSERT INTO processes VALUES (?, 100, 'python')", [run])
            con.execute("INSERT INTO threads VALUES (?, 100, 100, 'python')", [run])
            con.execute("INSERT INTO devices (run_id, device_id, name) VALUES (?, 0, 'NVIDIA H100 80GB HBM3')", [run])
            for (kernel_run, name), (grid, block, registers) in KERNEL_DETAILS.items():
                if kernel_run != run:
                    continue
                for span_id in span_ids(rows, name):
                    con.execute(
                        "INSERT INTO kernels (run_id, span_id, grid_x, grid_y, grid_z, block_x, block_y, block_z, "
                        "registers_per_thread) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        [run, span_id, *grid, *block, registers],
                    )
        con.execute("INSERT INTO threads VALUES (1, 100, 101, 'loader')")
        con.execute("INSERT INTO devices (run_id, device_id, name) VALUES (2, 1, 'NVIDIA H100 80GB HBM3')")
        (memcpy,) = span_ids(RUN1_SPANS, "Memcpy HtoD")
        (memset,) = span_ids(RUN1_SPANS, "Memset")
        # kind and duration_ns copied from the spans, as the converters write them.
        con.execute(
            "INSERT INTO memops (run_id, span_id, kind, copy_kind, bytes, duration_ns, src_kind, dst_kind) "
            "SELECT 1, span_id, kind, 'HtoD', 602112, end_ns - start_ns, 'Pinned', 'Device' FROM spans WHERE run_id = 1 AND span_id = ?",
            [memcpy],
        )
        con.execute(
            "INSERT INTO memops (run_id, span_id, kind, bytes, duration_ns, fill_value) "
            "SELECT 1, span_id, kind, 4096, end_ns - start_ns, 0 FROM spans WHERE run_id = 1 AND span_id = ?",
            [memset],
        )
        # The loader thread's NVTX ranges: one pushed and popped, one started and ended (it crosses).
        con.execute("UPDATE spans SET range_style = 'push_pop' WHERE run_id = 1 AND name = 'dataloader'")
        con.execute("UPDATE spans SET range_style = 'start_end' WHERE run_id = 1 AND name = 'crossing'")
        (conv,) = span_ids(RUN1_SPANS, "aten::conv2d")
        con.execute("INSERT INTO span_args VALUES (1, ?, 'Input Dims', ?), (1, ?, 'Input type', 'float')", [conv, INPUT_DIMS, conv])
        con.execute("INSERT INTO marks VALUES (1, 1500, 'step begin', 'xsp', 100, 100), (2, ?, 'profiler start', 'Trace', 100, NULL)", [EPOCH + 500])
        con.execute(
            "INSERT INTO counters VALUES (1, 'memory allocated', 2000, 1.5e6, 100, 0), "
            "(1, 'memory allocated', 50000, 2.5e6, 100, 0), (1, 'sm active', 10000, 0.75, NULL, 0), "
            "(1, 'sm active', 30000, 0.25, NULL, 0)"
        )
        for run in (1, 2):
            correlate_run(con, run)
    return Path(path)
