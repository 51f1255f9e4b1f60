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
All numbers (ns) are below; the tests derive their expectations from these by hand. Written with
support/handmade.py, correlated like a converted trace.
"""

from __future__ import annotations

from pathlib import Path

from support.handmade import Run, write

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


def _layer(index: int, qualname: str, type_name: str) -> str:
    return f"xsp.layer:{index}:{qualname}:{type_name}"


def _launch(run: Run, name: str, cpu_at: int, gpu_start: int, duration: int) -> int:
    return run.gpu("kernel", name, (cpu_at, cpu_at + 1), (gpu_start, gpu_start + duration))


def _model_run(run: Run, model_ns: list[int], layer0=None, layer1=None, kernels=False) -> Run:
    for i, model in enumerate(model_ns):
        t0 = 10_000 * (i + 1)
        run.span("model", "xsp.model:tiny", t0, t0 + model)
        if layer0 is None:
            continue
        at = t0 + 1
        run.span("layer", _layer(0, "conv", "Conv2d"), at, at + layer0[i], layer_index=0)
        if kernels:
            _launch(run, "conv_kernel", at + 1, t0 + 5_000, CONV_NS[i])
            _launch(run, "bias_kernel", at + 3, t0 + 5_100, BIAS_NS[i])
        at += layer0[i] + 1
        for call, duration in enumerate(layer1[i]):
            run.span("layer", _layer(1, "relu", "ReLU"), at, at + duration, layer_index=1)
            if kernels:
                relu = (RELU_CALL0_NS, RELU_CALL1_NS)[call][i]
                _launch(run, "relu_kernel", at + 1, t0 + 5_200 + 100 * call, relu)
            at += duration + 1
    return run


def _latencies(run: Run, loop: str, latencies: list[int], phases: list[str]) -> None:
    for i, (ns, phase) in enumerate(zip(latencies, phases, strict=True)):
        run.row("capture_latencies", loop=loop, iteration=i, phase=phase, latency_ns=ns)


def build(path: Path, with_metrics: bool = True) -> Path:
    """Write the hand-made database at `path` (correlated like a converted trace)."""
    experiment = {"model": "tiny", "batch_size": 2, "tool": "nsys"}
    m = _model_run(Run(1, level="M", **experiment), M_MODEL_NS)
    ml = _model_run(Run(2, level="ML", **experiment), ML_MODEL_NS, ML_LAYER0_NS, ML_LAYER1_CALLS_NS)
    mlg = _model_run(Run(3, level="MLG", **experiment), MLG_MODEL_NS, MLG_LAYER0_NS, MLG_LAYER1_CALLS_NS, kernels=True)
    plain = Run(4, tool="nsys")
    for j, (name, duration) in enumerate(PLAIN_KERNELS_NS):
        _launch(plain, name, 1_000 * j, 1_000 * j + 500, duration)
    for run in (m, ml, mlg, plain):
        run.device(0, DEVICE)
    _latencies(m, "uninstrumented", UNINSTRUMENTED_NS, ["interleaved"] * len(UNINSTRUMENTED_NS))
    _latencies(m, "instrumented", M_INSTRUMENTED_NS, ["during"] * len(M_INSTRUMENTED_NS))
    _latencies(ml, "uninstrumented", ML_UNINSTRUMENTED_NS, ML_UNINSTRUMENTED_PHASES)
    _latencies(ml, "instrumented", ML_INSTRUMENTED_NS, ["during"] * len(ML_INSTRUMENTED_NS))
    if with_metrics:
        names = ("xsp.flops", "xsp.dram_read_bytes", "xsp.dram_write_bytes", "xsp.achieved_occupancy")
        for span in mlg.spans:
            if span["kind"] == "kernel":
                for metric, value in zip(names, METRICS[span["name"]], strict=True):
                    mlg.row("metrics", span_id=span["span_id"], metric=metric, value=value, unit=None)
    return write(path, [m, ml, mlg, plain])
