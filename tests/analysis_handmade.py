"""A tiny leveled capture written by hand, for the analysis diff-tests (the Perfetto style: a
hand-made database, the query, the expected table computed by hand in the test).

Experiment "tiny bs=2" (model "tiny", batch size 2) on an "NVIDIA A100-SXM4-40GB":
  run 1, level M:   5 model ranges; plain-timer loops in capture_latencies, un-instrumented and
                    instrumented alternating (phase interleaved).
  run 2, level ML:  5 model ranges, each with layer 0 (conv, Conv2d, one call) and layer 1
                    (relu, ReLU, two calls); plain-timer loops of its own (another process, a
                    slower baseline), un-instrumented before and after the instrumented loop.
  run 3, level MLG: 3 model ranges with the same layers, a cudaLaunchKernel per kernel:
                    layer 0 launches conv_kernel then bias_kernel, each relu call relu_kernel;
                    xsp.* metrics on every kernel (as an ncu import writes them).
  run 4, no level:  a plain trace: 2 kernels, no model or layer ranges.
All numbers (ns) are below; the tests derive their expectations from these by hand.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from xsp_trace.correlate import correlate_run
from xsp_trace.database import atomic_database, insert_relation, insert_run

DEVICE = "NVIDIA A100-SXM4-40GB"
M_MODEL_NS = [100, 110, 105, 300, 90]
UNINSTRUMENTED_NS = [95, 100, 98, 102, 99]
M_INSTRUMENTED_NS = [104, 112, 106, 290, 95]
ML_UNINSTRUMENTED_NS = [120, 118, 125, 119, 400]
ML_UNINSTRUMENTED_PHASES = ["before", "before", "before", "after", "after"]
ML_INSTRUMENTED_NS = [160, 158, 161, 159, 210]
ML_MODEL_NS = [150, 150, 150, 150, 200]
ML_LAYER0_NS = [40, 42, 41, 80, 39]
ML_LAYER1_CALLS_NS = [(10, 12), (10, 12), (11, 11), (10, 12), (30, 30)]
MLG_MODEL_NS = [200, 210, 205]
MLG_LAYER0_NS = [60, 61, 62]  # inflated by GPU tracing: must not be used for layer latency
MLG_LAYER1_CALLS_NS = [(25, 25), (25, 25), (25, 25)]
CONV_NS = [10, 12, 11]
BIAS_NS = [2, 2, 5]
RELU_CALL0_NS = [3, 3, 3]
RELU_CALL1_NS = [4, 4, 10]
# Metrics per kernel launch: flops, dram read, dram write bytes, achieved occupancy.
METRICS = {
    "conv_kernel": (4000.0, 100.0, 100.0, 0.5),
    "bias_kernel": (10.0, 40.0, 40.0, 0.25),
    "relu_kernel": (8.0, 64.0, 64.0, 0.75),
}
PLAIN_KERNELS_NS = [("k_plain_a", 7), ("k_plain_b", 9)]

PID, TID = 100, 100


class _Spans:
    def __init__(self, run_id: int):
        self.run_id = run_id
        self.rows: list[dict] = []
        self.correlation = 0

    def add(self, kind: str, name: str, start: int, end: int, **extra) -> int:
        span_id = len(self.rows) + 1
        row = {
            "run_id": self.run_id,
            "span_id": span_id,
            "kind": kind,
            "name": name,
            "start_ns": start,
            "end_ns": end,
            "pid": PID,
            "tid": None if kind == "kernel" else TID,
            "device_id": None,
            "stream_id": None,
            "correlation_id": None,
            "layer_index": None,
            "category": None,
        }
        row.update(extra)
        self.rows.append(row)
        return span_id

    def launch(self, name: str, cpu_at: int, gpu_start: int, duration: int) -> int:
        self.correlation += 1
        self.add("api", "cudaLaunchKernel", cpu_at, cpu_at + 1, correlation_id=self.correlation, category="cuda_runtime")
        return self.add("kernel", name, gpu_start, gpu_start + duration, device_id=0, stream_id=7, correlation_id=self.correlation)

    def table(self) -> pa.Table:
        return pa.Table.from_pylist(self.rows)


def _layer(index: int, qualname: str, type_name: str) -> str:
    return f"xsp.layer:{index}:{qualname}:{type_name}"


def _model_run(run_id: int, model_ns: list[int], layer0=None, layer1=None, kernels=False) -> _Spans:
    spans = _Spans(run_id)
    for i, model in enumerate(model_ns):
        t0 = 10_000 * (i + 1)
        spans.add("model", "xsp.model:tiny", t0, t0 + model)
        if layer0 is None:
            continue
        at = t0 + 1
        spans.add("layer", _layer(0, "conv", "Conv2d"), at, at + layer0[i], layer_index=0)
        if kernels:
            spans.launch("conv_kernel", at + 1, t0 + 5_000, CONV_NS[i])
            spans.launch("bias_kernel", at + 3, t0 + 5_100, BIAS_NS[i])
        at += layer0[i] + 1
        for call, duration in enumerate(layer1[i]):
            spans.add("layer", _layer(1, "relu", "ReLU"), at, at + duration, layer_index=1)
            if kernels:
                relu = (RELU_CALL0_NS, RELU_CALL1_NS)[call][i]
                spans.launch("relu_kernel", at + 1, t0 + 5_200 + 100 * call, relu)
            at += duration + 1
    return spans


def build(path: Path, with_metrics: bool = True) -> Path:
    """Write the hand-made database at `path` (correlated like a converted trace)."""
    runs = [
        (1, "M", _model_run(1, M_MODEL_NS)),
        (2, "ML", _model_run(2, ML_MODEL_NS, ML_LAYER0_NS, ML_LAYER1_CALLS_NS)),
        (3, "MLG", _model_run(3, MLG_MODEL_NS, MLG_LAYER0_NS, MLG_LAYER1_CALLS_NS, kernels=True)),
        (4, None, _Spans(4)),
    ]
    plain = runs[3][2]
    for j, (name, duration) in enumerate(PLAIN_KERNELS_NS):
        plain.launch(name, 1_000 * j, 1_000 * j + 500, duration)
    with atomic_database(path, overwrite=True) as con:
        for run_id, level, spans in runs:
            fields = {"level": level, "model": "tiny", "batch_size": 2} if level else {}
            insert_run(con, run_id, source_kind="nsys", tool="nsys", **fields)
            insert_relation(con, "spans", spans.table())
            con.execute("INSERT INTO devices (run_id, device_id, name) VALUES (?, 0, ?)", [run_id, DEVICE])
            correlate_run(con, run_id)
        con.execute(
            "CREATE TABLE IF NOT EXISTS capture_latencies (run_id INTEGER, loop VARCHAR, iteration INTEGER, phase VARCHAR, latency_ns BIGINT)"
        )
        for i, ns in enumerate(UNINSTRUMENTED_NS):
            con.execute("INSERT INTO capture_latencies VALUES (1, 'uninstrumented', ?, 'interleaved', ?)", [i, ns])
        for i, ns in enumerate(M_INSTRUMENTED_NS):
            con.execute("INSERT INTO capture_latencies VALUES (1, 'instrumented', ?, 'during', ?)", [i, ns])
        for i, (ns, phase) in enumerate(zip(ML_UNINSTRUMENTED_NS, ML_UNINSTRUMENTED_PHASES, strict=True)):
            con.execute("INSERT INTO capture_latencies VALUES (2, 'uninstrumented', ?, ?, ?)", [i, phase, ns])
        for i, ns in enumerate(ML_INSTRUMENTED_NS):
            con.execute("INSERT INTO capture_latencies VALUES (2, 'instrumented', ?, 'during', ?)", [i, ns])
        if with_metrics:
            kernels = con.execute("SELECT span_id, name FROM spans WHERE run_id = 3 AND kind = 'kernel'").fetchall()
            for span_id, name in kernels:
                flops, read, write, occupancy = METRICS[name]
                for metric, value in (
                    ("xsp.flops", flops),
                    ("xsp.dram_read_bytes", read),
                    ("xsp.dram_write_bytes", write),
                    ("xsp.achieved_occupancy", occupancy),
                ):
                    con.execute("INSERT INTO metrics VALUES (3, ?, ?, ?, NULL)", [span_id, metric, value])
    return path
