"""Rooflines without Nsight Compute: FLOPs and bytes of every modelled op from its recorded shapes,
checked against TraceLens' own perf models on real traces (H100 and B200 bf16, A100 fp32, MI250; the
convolutions of a MI300X ResNet training step, an H100 ViT and a CPU trace of every conv variant),
kernel time per op against the raw trace, and MFU against a figure computed from the raw JSON.

The TraceLens figures (tests/data/<fixture>/tracelens_perf_model.csv) were written by
tests/references/tracelens_reference.py with TraceLens at AMD-AGI/TraceLens 171dd747 (not on PyPI, so not
installable in CI). TraceLens has no model for aten::sub, and its elementwise model needs "Input
Strides", which 2022 traces lack: those ops are ours only and are not compared.
"""

from __future__ import annotations

import csv
import gzip
import json

import pytest

from conftest import DATA
from xsp_trace.analyze.session import AnalysisOptions, prepare, run_analysis
from xsp_trace.analyze.sql_library import include
from xsp_trace.formats.aten_vector_models import VECTOR_OP_MODELS

FIXTURES = {
    "kineto_2025_all_options_h100": "tracelens_h100_qwen1.5_0.5b.json.gz",
    "kineto_relative_ts_b200": "tracelens_b200_eager.json.gz",
    "kineto_2022_integer_us_rank3": "hta_a100_rank3_of_8_2022.json.gz",
    "kineto_rocm_mi250": "hta_mi250_rocm62_minitoy.json.gz",
    "kineto_conv_vit_h100": "tracelens_h100_falconsai_vit.json.gz",
    "kineto_cpu_conv_variants": "conv_variants.json.gz",
}
CONV_FIXTURES = {
    "kineto_conv_resnet_mi300": "tracelens_mi300_resnet_act_checkpoint.json.gz",
    "kineto_conv_vit_h100": FIXTURES["kineto_conv_vit_h100"],
    "kineto_cpu_conv_variants": FIXTURES["kineto_cpu_conv_variants"],
}
CONV_OPS = ("aten::convolution", "aten::convolution_backward")
TRACES = FIXTURES | CONV_FIXTURES


def _session(converted, fixture: str):
    con = converted(DATA / fixture / TRACES[fixture])
    prepare(con, AnalysisOptions())
    return con


def _reference(fixture: str) -> dict[str, dict]:
    with open(DATA / fixture / "tracelens_perf_model.csv") as f:
        return {row["external_id"]: row for row in csv.DictReader(f)}


def _raw_events(fixture: str) -> list[dict]:
    with gzip.open(DATA / fixture / TRACES[fixture]) as f:
        return json.load(f)["traceEvents"]


def _ours(con) -> dict[str, tuple]:
    include(con, "lib/op_perf")
    """External id -> (name, FLOPs, bytes, not_modelled_reason, kernel ns) of every counted modelled op."""
    return {
        row[0]: row[1:]
        for row in con.execute(
            "SELECT a.value, o.name, o.flops, o.bytes, o.not_modelled_reason, o.kernel_ns FROM xsp_op_perf AS o "
            "JOIN span_args AS a ON a.run_id = o.run_id AND a.span_id = o.span_id AND a.key = 'External id'"
        ).fetchall()
    }


@pytest.mark.parametrize("fixture", FIXTURES)
def test_flops_and_bytes_equal_tracelens(converted, fixture):
    con = _session(converted, fixture)
    ours = _ours(con)
    reference = _reference(fixture)
    assert reference, "the reference lists the ops TraceLens models"
    assert set(reference) <= set(ours), "every op TraceLens models has a FLOP count here too"
    for ext, row in reference.items():
        name, flops, nbytes, _, _ = ours[ext]
        assert name == row["name"]
        assert flops == pytest.approx(float(row["gflops"]) * 1e9, rel=1e-9), (ext, name)
        if row["data_moved_mib"]:
            assert nbytes == pytest.approx(float(row["data_moved_mib"]) * 2**20, rel=1e-9), (ext, name)
    extra = {ours[ext][0] for ext in set(ours) - set(reference) if ours[ext][3] is None}
    # beyond TraceLens: the collectives' launching op (lib/op_lists)
    own = {"record_param_comms"}
    assert extra <= {f"aten::{op}{s}" for op in ("add", "sub", "mul", "div") for s in ("", "_")} | set(VECTOR_OP_MODELS) | own


def test_kernel_time_per_op_equals_its_kernels_in_the_raw_trace(converted):
    """On the H100 trace every kernel carries the External id of the CPU op that launched it: the kernel
    time charged to each modelled op equals the summed durations of the raw kernels launched by it or by
    a CPU op nested inside it on its thread (SDPA launches its kernels from inner ops)."""
    fixture = "kineto_2025_all_options_h100"
    con = _session(converted, fixture)
    include(con, "lib/op_perf")
    ours = dict(
        con.execute(
            "SELECT CAST(a.value AS BIGINT), o.kernel_ns FROM xsp_op_perf AS o "
            "JOIN span_args AS a ON a.run_id = o.run_id AND a.span_id = o.span_id AND a.key = 'External id' "
            "WHERE o.model IN ('gemm', 'sdpa', 'binary') AND o.not_modelled_key IS NULL"
        ).fetchall()
    )
    events = _raw_events(fixture)
    ops = [e for e in events if e.get("cat") == "cpu_op" and e.get("ph") == "X"]
    kernel_us: dict[int, float] = {}
    for e in events:
        if e.get("cat") == "kernel" and e.get("ph") == "X":
            ext = (e.get("args") or {}).get("External id")
            kernel_us[ext] = kernel_us.get(ext, 0.0) + e["dur"]
    checked = 0
    for op in ops:
        ext = op["args"].get("External id")
        if ext not in ours:
            continue
        inside = {
            o["args"].get("External id")
            for o in ops
            if o["tid"] == op["tid"] and o["pid"] == op["pid"] and op["ts"] <= o["ts"] and o["ts"] + o["dur"] <= op["ts"] + op["dur"]
        }
        assert ours[ext] == pytest.approx(sum(kernel_us.get(x, 0.0) for x in inside) * 1000, abs=2 * len(inside)), ext
        checked += 1
    assert checked == len(ours) == 558 + 1  # TraceLens' ops and aten::eq (binary, our model)


def test_mfu_from_tracelens_flops_and_the_raw_step(converted):
    """H100, bf16: MFU = TraceLens' FLOPs of the step / the ProfilerStep's wall time / 989.4 TFLOP/s
    (the H100 SXM datasheet's 1,979 TFLOPS BF16 with sparsity, halved)."""
    fixture = "kineto_2025_all_options_h100"
    con = _session(converted, fixture)
    (row,) = run_analysis(con, "model_flops_utilization").records()
    step_us = next(e["dur"] for e in _raw_events(fixture) if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#"))
    with open(DATA / fixture / "tracelens_vector_models.csv") as f:
        vector = list(csv.DictReader(f))
    # TraceLens' FLOPs of every op (GEMM, attention, elementwise, norms, reductions) and our own models'
    # for the four calls it has none for: aten::eq on [16, 559] and aten::sin, aten::cos on [1, 559, 64]
    # (one FLOP per element; the embedding's index_select has none), and 49 aten::cat (none: copies).
    flops = sum(float(r["gflops"]) * 1e9 for r in [*_reference(fixture).values(), *vector]) + 16 * 559 + 2 * 559 * 64
    assert row["steps"] == 1 and row["ops"] == 558 + len(vector) + 4 + 49 and row["precision"] == "bf16" and row["peak_tflops"] == 989.4
    assert row["gflop_per_step"] == pytest.approx(flops / 1e9, abs=1e-3)
    assert row["mfu_pct"] == pytest.approx(100 * flops / (step_us / 1e6) / 989.4e12, abs=1e-3)


def test_op_roofline_bounds_on_the_h100(converted):
    """The big bf16 GEMM is compute-bound and the elementwise ops memory-bound, with the H100 roof."""
    con = _session(converted, "kineto_2025_all_options_h100")
    rows = run_analysis(con, "op_roofline").records()
    gemm = next(r for r in rows if r["name"] == "aten::mm" and r["input_dims"] == "[[8944,2816],[2816,1024]]")
    assert gemm["calls"] == 24 and gemm["flops_per_call"] == 2 * 8944 * 2816 * 1024 and gemm["bound"] == "compute"
    assert gemm["attainable_tflops"] == 989.4
    assert all(r["bound"] == "memory" for r in rows if r["name"] in ("aten::mul", "aten::add"))
    with open(DATA / "kineto_2025_all_options_h100" / "tracelens_vector_models.csv") as f:
        vector_calls = sum(1 for _ in csv.DictReader(f))
    assert sum(r["calls"] for r in rows if r["flops_per_call"] is not None) == 558 + vector_calls + 4 + 49  # + eq, sin, cos, index_select, cat


@pytest.mark.parametrize("fixture", CONV_FIXTURES)
def test_every_conv_op_equals_tracelens(converted, fixture):
    """Forward and backward convolutions (MIOpen and cuDNN on GPUs; 1d/2d/3d, groups, stride, padding,
    dilation, transposed on the CPU trace): FLOPs and bytes of every call equal TraceLens', and no
    conv op has a count TraceLens does not."""
    con = _session(converted, fixture)
    ours = {ext: row for ext, row in _ours(con).items() if row[0] in CONV_OPS}
    reference = {ext: row for ext, row in _reference(fixture).items() if row["name"] in CONV_OPS}
    raw_convs = sum(1 for e in _raw_events(fixture) if e.get("cat") == "cpu_op" and e.get("name") in CONV_OPS)
    assert len(reference) == raw_convs > 0, "TraceLens models every conv call of the trace"
    assert set(ours) == set(reference)
    for ext, row in reference.items():
        name, flops, nbytes, reason, _ = ours[ext]
        assert (name, reason) == (row["name"], None)
        assert flops == pytest.approx(float(row["gflops"]) * 1e9, rel=1e-12), (ext, name)
        assert nbytes == pytest.approx(float(row["data_moved_mib"]) * 2**20, rel=1e-12), (ext, name)


def test_conv_variants_cover_what_the_model_claims():
    """The CPU trace holds each variant the conv model states it covers, forward and backward."""
    convs = [e["args"] for e in _raw_events("kineto_cpu_conv_variants") if e.get("name") == "aten::convolution"]
    backward = [e for e in _raw_events("kineto_cpu_conv_variants") if e.get("name") == "aten::convolution_backward"]
    assert len(convs) == len(backward) == 8
    assert {len(a["Input Dims"][0]) - 2 for a in convs} == {1, 2, 3}
    concrete = [a["Concrete Inputs"] for a in convs]
    assert {c[6] for c in concrete} == {"True", "False"}, "transposed and not"
    assert any(c[8] not in ("1", "") for c in concrete), "groups"
    assert any(c[5] not in ("[1]", "[1, 1]", "[1, 1, 1]") for c in concrete), "dilation"
    assert any(c[7] not in ("[0]", "[0, 0]", "[0, 0, 0]") for c in concrete), "output_padding"


def test_mfu_of_a_resnet_counts_its_convolutions(converted):
    """MI300X ResNet training, bf16: MFU = TraceLens' FLOPs of every op it models / the three
    ProfilerSteps' wall time (raw JSON) / 1,307.4 TFLOP/s (the MI300X datasheet's dense BF16 matrix
    peak). Without conv models it was 0.0 %; now within 1 % of that figure (TraceLens also counts an
    aten::div that only wraps another, counted here once)."""
    fixture = "kineto_conv_resnet_mi300"
    con = _session(converted, fixture)
    (row,) = run_analysis(con, "model_flops_utilization").records()
    steps_us = sum(e["dur"] for e in _raw_events(fixture) if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#"))
    flops = sum(float(r["gflops"]) * 1e9 for r in _reference(fixture).values())
    tracelens_mfu = 100 * flops / (steps_us / 1e6) / 1307.4e12
    assert row["steps"] == 3 and row["precision"] == "bf16" and row["peak_tflops"] == 1307.4
    # 3 aten::cat, 3 _foreach_add_ whose lists were recorded as [] (the other 3 aten::cat are counted)
    assert row["not_modelled_ops"] == 6 and "TensorList" in row["not_modelled_reason"]
    assert row["mfu_pct"] == pytest.approx(tracelens_mfu, rel=0.01)
    assert 0 < row["modelled_kernel_time_pct"] < 100


def test_conv_bias_add_counted_beside_the_conv_and_its_kernels_once(converted):
    """H100 ViT: the patch-embedding aten::convolution runs its bias as an aten::add_ nested inside it.
    Both are counted (as TraceLens counts both), and each raw kernel under the convolution is charged
    once: the conv's kernel time plus the add_'s equals the raw kernels launched inside the conv."""
    fixture = "kineto_conv_vit_h100"
    con = _session(converted, fixture)
    ours = _ours(con)
    events = _raw_events(fixture)
    ops = [e for e in events if e.get("cat") == "cpu_op"]
    conv = next(e for e in ops if e["name"] == "aten::convolution")
    inside = [o for o in ops if o["tid"] == conv["tid"] and conv["ts"] <= o["ts"] and o["ts"] + o["dur"] <= conv["ts"] + conv["dur"]]
    add = next(o for o in inside if o["name"] == "aten::add_")
    inside_ids = {o["args"]["External id"] for o in inside}
    raw_ns = 1000 * sum(e["dur"] for e in events if e.get("cat") == "kernel" and e["args"].get("External id") in inside_ids)
    conv_ns, add_ns = ours[str(conv["args"]["External id"])][4], ours[str(add["args"]["External id"])][4]
    assert conv_ns > 0 and add_ns > 0
    assert conv_ns + add_ns == pytest.approx(raw_ns, abs=4)


def test_unmodelled_op_is_null_with_its_reason(converted):
    """V100 ResNet-50 training recorded without record_shapes: every convolution is listed with NULL
    FLOPs and the reason, MFU is NULL (not 0.0) and states that 0 % of the kernel time is modelled."""
    fixture = "kineto_2024_ns_resolution"
    con = converted(DATA / fixture / "hta_v100_ns_resolution_2024.json.gz")
    prepare(con, AnalysisOptions())
    raw = [e for e in json.load(gzip.open(DATA / fixture / "hta_v100_ns_resolution_2024.json.gz"))["traceEvents"] if e.get("cat") == "cpu_op"]
    rows = {r["name"]: r for r in run_analysis(con, "op_roofline").records() if r["name"] in CONV_OPS}
    for name in CONV_OPS:
        row = rows[name]
        assert row["calls"] == sum(1 for e in raw if e["name"] == name) == 265
        assert row["flops_per_call"] is None and row["bytes_per_call"] is None and row["attainable_tflops"] is None
        assert "record_shapes=True" in row["not_modelled_reason"] and row["kernel_ms"] > 0
    (mfu,) = run_analysis(con, "model_flops_utilization").records()
    assert mfu["ops"] == 0 and mfu["not_modelled_ops"] > 0 and "record_shapes=True" in mfu["not_modelled_reason"]
    assert mfu["mfu_pct"] is None and mfu["gflop_per_step"] is None and mfu["modelled_kernel_time_pct"] == 0
