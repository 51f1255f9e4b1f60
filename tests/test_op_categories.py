"""Op categories (GEMM, conv, attention, norm, elementwise, reduction, communication, memory, other)
per kernel and per op, checked against kernel names and launching ops read from the raw traces."""

from __future__ import annotations

import gzip
import json
from collections import Counter

import pytest

from conftest import DATA
from support.library_session import with_modules
from xsp_trace.analyze.session import run_analysis

QWEN_H100 = DATA / "kineto_2025_all_options_h100" / "tracelens_h100_qwen1.5_0.5b.json.gz"
RESNET_V100 = DATA / "kineto_2021_profiler_step_operator" / "tb_plugin_resnet50_num_workers_0.json.gz"
NCCL_A100 = DATA / "kineto_nccl_collectives" / "hta_a100_nccl_allreduce.json.gz"


def _session(converted, path):
    return with_modules(converted(path), "lib/op_categories")


def _events(path) -> list[dict]:
    with gzip.open(path) as f:
        return json.load(f)["traceEvents"]


def _by_name(name: str) -> str:
    """This H100 trace's 24 kernel names, sorted by hand from what each name says."""
    if "gemm" in name:
        return "GEMM"
    if "flash_fwd" in name:
        return "attention"
    if "copy" in name or "CatArrayBatchedCopy" in name or "indexSelect" in name:
        return "memory"
    if "reduce_kernel" in name:
        return "reduction"
    return "elementwise"


def test_h100_gpu_time_per_category_from_kernel_names(converted):
    """Qwen on an H100: GPU time per category equals the raw trace's kernels summed by what their names
    say (xmma/cutlass GEMMs, flash attention, copies and concatenations, reductions, the rest
    elementwise), with its copies and sets as memory; every kernel's name said it."""
    con = _session(converted, QWEN_H100)
    expected: Counter[str] = Counter()
    for e in _events(QWEN_H100):
        if e.get("cat") == "kernel":
            expected[_by_name(e["name"])] += e["dur"]
        elif e.get("cat") in ("gpu_memcpy", "gpu_memset"):
            expected["memory"] += e["dur"]
    rows = {r["category"]: r for r in run_analysis(con, "op_categories").records()}
    assert {c for c, r in rows.items() if r["kernels"]} == set(expected)
    for category, us in expected.items():
        assert rows[category]["kernel_ms"] == pytest.approx(us / 1000, abs=1e-3), category
        assert rows[category]["kernel_ms_from_launching_op"] == 0
    assert sum(r["kernel_pct"] for r in rows.values()) == pytest.approx(100, abs=0.05)


def test_softmax_kernels_and_ops_are_norm(converted):
    """ResNet-50 on a V100: the softmax_warp_forward/backward kernels, and the aten::_log_softmax ops
    that launch them, are in the norm category."""
    con = _session(converted, RESNET_V100)
    kernels = con.execute("SELECT DISTINCT category, category_from FROM xsp_kernel_categories WHERE name LIKE '%softmax_warp_%'").fetchall()
    assert kernels == [("norm", "kernel name")]
    ops = dict(con.execute("SELECT name, category FROM xsp_op_name_categories WHERE name LIKE 'aten::_log_softmax%'").fetchall())
    assert ops == {"aten::_log_softmax": "norm", "aten::_log_softmax_backward_data": "norm"}


def test_kernel_whose_name_says_nothing_takes_its_launching_op(converted):
    """volta_scudnn_128x64_relu_interior_nn_v1 names no operation; the raw trace says
    aten::cudnn_convolution launched each of its 30 calls (kernel -> runtime call by correlation ->
    External id), so each is conv, from the launching op."""
    events = _events(RESNET_V100)
    op_of = {e["args"].get("External id"): e["name"] for e in events if e.get("cat") == "Operator"}
    kernels = [e for e in events if e.get("name") == "volta_scudnn_128x64_relu_interior_nn_v1"]
    assert Counter(op_of.get(e["args"]["external id"]) for e in kernels) == {"aten::cudnn_convolution": 30}
    con = _session(converted, RESNET_V100)
    rows = con.execute(
        "SELECT category, category_from, count(*) FROM xsp_kernel_categories WHERE name = 'volta_scudnn_128x64_relu_interior_nn_v1' GROUP BY ALL"
    ).fetchall()
    assert rows == [("conv", "launching op", 30)]


def test_nccl_kernels_are_communication(converted):
    """A100 all-reduce: communication GPU time = the raw trace's ncclKernel_* durations."""
    con = _session(converted, NCCL_A100)
    raw_us = sum(e["dur"] for e in _events(NCCL_A100) if e.get("cat") == "kernel" and e["name"].startswith("ncclKernel_"))
    rows = {(r["run_id"], r["category"]): r for r in run_analysis(con, "op_categories").records()}
    comm = [r for (_, category), r in rows.items() if category == "communication"]
    assert sum(r["kernels"] for r in comm) == 21
    assert sum(r["kernel_ms"] for r in comm) == pytest.approx(raw_us / 1000, abs=1e-3)


def test_report_line_states_the_shares(converted):
    """The report's line gives each category's share of GPU time: GEMM's equals the raw trace's
    xmma/cutlass GEMM kernels over all its kernels, copies and sets."""
    from xsp_trace.analyze.report.categories import category_line

    con = _session(converted, QWEN_H100)
    events = [e for e in _events(QWEN_H100) if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    gemm = 100 * sum(e["dur"] for e in events if e["cat"] == "kernel" and "gemm" in e["name"]) / sum(e["dur"] for e in events)
    line = category_line({"op_categories": run_analysis(con, "op_categories")})
    assert f"GEMM {gemm:.1f} %" in line and "run 1: elementwise" in line
