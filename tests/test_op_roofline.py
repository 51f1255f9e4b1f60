"""Rooflines without Nsight Compute: FLOPs and bytes of every modelled op from its recorded shapes,
checked against TraceLens' own perf models on four real traces (H100 and B200 bf16, A100 fp32, MI250),
kernel time per op against the raw trace, and MFU against a figure computed from the raw JSON.

The TraceLens figures (tests/data/<fixture>/tracelens_perf_model.csv) were written by
bench/tracelens_reference.py with TraceLens at AMD-AGI/TraceLens 171dd747 (not on PyPI, so not
installable in CI). TraceLens has no model for aten::sub, and its elementwise model needs "Input
Strides", which 2022 traces lack: those ops are ours only and are not compared.
"""

from __future__ import annotations

import csv
import gzip
import json

import pytest

from conftest import DATA
from xsp_trace.analyze import AnalysisOptions, run_analysis
from xsp_trace.analyze.session import prepare

FIXTURES = {
    "kineto_2025_all_options_h100": "tracelens_h100_qwen1.5_0.5b.json.gz",
    "kineto_relative_ts_b200": "tracelens_b200_eager.json.gz",
    "kineto_2022_integer_us_rank3": "hta_a100_rank3_of_8_2022.json.gz",
    "kineto_rocm_mi250": "hta_mi250_rocm62_minitoy.json.gz",
}


def _session(converted, fixture: str):
    con = converted(DATA / fixture / FIXTURES[fixture])
    prepare(con, AnalysisOptions())
    return con


def _reference(fixture: str) -> dict[str, dict]:
    with open(DATA / fixture / "tracelens_perf_model.csv") as f:
        return {row["external_id"]: row for row in csv.DictReader(f)}


def _raw_events(fixture: str) -> list[dict]:
    with gzip.open(DATA / fixture / FIXTURES[fixture]) as f:
        return json.load(f)["traceEvents"]


@pytest.mark.parametrize("fixture", FIXTURES)
def test_flops_and_bytes_equal_tracelens(converted, fixture):
    con = _session(converted, fixture)
    ours = {
        ext: (name, flops, nbytes)
        for ext, name, flops, nbytes in con.execute(
            "SELECT a.value, o.name, o.flops, o.bytes FROM xsp_op_perf AS o "
            "JOIN span_args AS a ON a.run_id = o.run_id AND a.span_id = o.span_id AND a.key = 'External id'"
        ).fetchall()
    }
    reference = _reference(fixture)
    assert reference, "the reference lists the ops TraceLens models"
    assert set(reference) <= set(ours), "every op TraceLens models has a FLOP count here too"
    for ext, row in reference.items():
        name, flops, nbytes = ours[ext]
        assert name == row["name"]
        assert flops == pytest.approx(float(row["gflops"]) * 1e9, rel=1e-9), (ext, name)
        if row["data_moved_mib"]:
            assert nbytes == pytest.approx(float(row["data_moved_mib"]) * 2**20, rel=1e-9), (ext, name)
    extra = {ours[ext][0] for ext in set(ours) - set(reference)}
    assert extra <= {f"aten::{op}{s}" for op in ("add", "sub", "mul", "div") for s in ("", "_")}


def test_kernel_time_per_op_equals_its_kernels_in_the_raw_trace(converted):
    """On the H100 trace every kernel carries the External id of the CPU op that launched it: the kernel
    time charged to each modelled op equals the summed durations of the raw kernels launched by it or by
    a CPU op nested inside it on its thread (SDPA launches its kernels from inner ops)."""
    fixture = "kineto_2025_all_options_h100"
    con = _session(converted, fixture)
    ours = dict(
        con.execute(
            "SELECT CAST(a.value AS BIGINT), o.kernel_ns FROM xsp_op_perf AS o "
            "JOIN span_args AS a ON a.run_id = o.run_id AND a.span_id = o.span_id AND a.key = 'External id'"
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
    assert checked == len(ours) == 558


def test_mfu_from_tracelens_flops_and_the_raw_step(converted):
    """H100, bf16: MFU = TraceLens' FLOPs of the step / the ProfilerStep's wall time / 989.4 TFLOP/s
    (the H100 SXM datasheet's 1,979 TFLOPS BF16 with sparsity, halved)."""
    fixture = "kineto_2025_all_options_h100"
    con = _session(converted, fixture)
    (row,) = run_analysis(con, "model_flops_utilization").records()
    step_us = next(e["dur"] for e in _raw_events(fixture) if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#"))
    flops = sum(float(r["gflops"]) * 1e9 for r in _reference(fixture).values())
    assert row["steps"] == 1 and row["ops"] == 558 and row["precision"] == "bf16" and row["peak_tflops"] == 989.4
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
    assert sum(r["calls"] for r in rows) == 558
