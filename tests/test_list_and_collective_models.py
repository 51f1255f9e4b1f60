"""Perf models of what had none: collectives (FLOPs 0, nccl-tests' bus bytes), TensorList ops (cat,
foreach: element type from their kernels' names) and the pre-1.11 convolution backward (output shape
from the recorded grad_output). Each is checked against the raw trace (its args, shapes and kernel
names read here in Python), nccl-tests' definitions and torch.utils.flop_counter; docs/perf_models.md
gives the formulas.
"""

from __future__ import annotations

import gzip
import json
import math
import re

import pytest

from conftest import DATA
from support.library_session import OP_PERF_BY_EXTERNAL_ID, with_modules
from xsp_trace.analyze.session import run_analysis

FILES = {
    "kineto_conv_resnet_mi300": "tracelens_mi300_resnet_act_checkpoint.json.gz",
    "kineto_2025_all_options_h100": "tracelens_h100_qwen1.5_0.5b.json.gz",
    "kineto_rocm_mi250": "hta_mi250_rocm62_minitoy.json.gz",
    "kineto_2021_profiler_step_operator": "tb_plugin_resnet50_num_workers_0.json.gz",
    "kineto_2022_integer_us_rank3": "hta_a100_rank3_of_8_2022.json.gz",
}


def _session(converted, fixture: str):
    return with_modules(converted(DATA / fixture / FILES[fixture]), "lib/op_perf")


def _events(fixture: str) -> list[dict]:
    with gzip.open(DATA / fixture / FILES[fixture]) as f:
        return json.load(f)["traceEvents"]


def _ours(con) -> dict[str, tuple]:
    return {str(row[0]): row[1:] for row in con.execute(OP_PERF_BY_EXTERNAL_ID).fetchall()}


def _kernels_by_op(events: list[dict]) -> dict[str, list[dict]]:
    found: dict[str, list[dict]] = {}
    for e in events:
        if e.get("cat") == "kernel" and "External id" in e.get("args", {}):
            found.setdefault(str(e["args"]["External id"]), []).append(e)
    return found


def test_a_collective_moves_nccl_tests_bus_bytes(converted):
    """MI300X ResNet (8 ranks, bf16): each record_param_comms that launched a collective has FLOPs 0 and
    bytes = message bytes x nccl-tests' bus factor (doc/PERFORMANCE.md: all_reduce 2(n-1)/n, broadcast
    1; bf16 2 bytes, Long 8), from the raw kernel's args; its roofline point is network-bound."""
    fixture = "kineto_conv_resnet_mi300"
    con = _session(converted, fixture)
    ours = _ours(con)
    factor = {"allreduce": lambda n: 2 * (n - 1) / n, "broadcast": lambda n: 1.0}
    checked = 0
    for ext, kernels in _kernels_by_op(_events(fixture)).items():
        comm = [k for k in kernels if k["name"].startswith("nccl")]
        if not comm:
            continue
        expected = 0.0
        for k in comm:
            a = k["args"]
            nelems = max(a["In msg nelems"], a["Out msg nelems"])
            expected += nelems * {"BFloat16": 2, "Long": 8}[a["dtype"]] * factor[a["Collective name"]](a["Group size"])
        name, model, flops, nbytes, key, kernel_ns = ours[ext]
        assert (name, model, flops, key) == ("record_param_comms", "collective", 0.0, None)
        assert nbytes == pytest.approx(expected, rel=1e-12)
        assert kernel_ns == pytest.approx(1000 * sum(k["dur"] for k in kernels), abs=len(kernels))
        checked += 1
    assert checked == 12
    bounds = {r["bound"] for r in run_analysis(con, "op_roofline").records() if r["name"] == "record_param_comms"}
    assert bounds == {"network"}


def test_cat_bytes_from_its_shapes_and_its_kernels_element_size(converted):
    """H100 Qwen: every aten::cat moves 2 x (elements of its inputs) x the element size its kernel names
    (CatArrayBatchedCopy<OpaqueType<4u>, ...>: 4 bytes), FLOPs 0: e.g. two [1, 559, 32] tensors, 286,208 bytes."""
    fixture = "kineto_2025_all_options_h100"
    con = _session(converted, fixture)
    ours = _ours(con)
    kernels = _kernels_by_op(events := _events(fixture))
    cats = [e for e in events if e.get("cat") == "cpu_op" and e["name"] == "aten::cat"]
    assert len(cats) == 49
    for e in cats:
        ext = str(e["args"]["External id"])
        (size,) = {int(re.search(r"OpaqueType<(\d+)u>", k["name"]).group(1)) for k in kernels[ext]}
        n = sum(math.prod(shape) for shape in e["args"]["Input Dims"][0])
        assert ours[ext][1:4] == ("tensor_list", 0.0, 2 * n * size)
    assert ("aten::cat", 286208.0) in {(v[0], v[3]) for v in ours.values()}


def test_foreach_add_on_the_mi250_and_lists_recorded_empty(converted):
    """MI250: _foreach_add_(params, grads, alpha) on [128, 128] and [128] fp32 (BinaryOpListAlphaFunctor<float>):
    16,512 adds, 3 x 16,512 x 4 bytes (both lists read, the first written). On the MI300X the lists were
    recorded as [] and keep the reason."""
    con = _session(converted, "kineto_rocm_mi250")
    (row,) = con.execute("SELECT flops, bytes, dtype FROM xsp_op_perf WHERE name = 'aten::_foreach_add_'").fetchall()
    assert row == (16512.0, 3 * 16512 * 4.0, "float")
    con = _session(converted, "kineto_conv_resnet_mi300")
    keys = con.execute("SELECT not_modelled_key, count(*) FROM xsp_op_perf WHERE name = 'aten::_foreach_add_' GROUP BY ALL").fetchall()
    assert keys == [("tensor_list", 3)]


def test_pre_1_11_conv_backward_equals_torch_flop_counter(converted):
    """V100 ResNet-50 (2021, no Concrete Inputs): aten::cudnn_convolution_backward's FLOPs equal
    torch.utils.flop_counter.conv_backward_flop on the raw shapes (x, grad_output, weight; both
    gradients), bytes 2 x (x + w + grad_output) x 4."""
    from torch.utils.flop_counter import conv_backward_flop

    fixture = "kineto_2021_profiler_step_operator"
    con = _session(converted, fixture)
    ours = _ours(con)
    calls = [e for e in _events(fixture) if e.get("cat") in ("cpu_op", "Operator") and e["name"] == "aten::cudnn_convolution_backward"]
    assert len(calls) > 50
    for e in calls:
        x, grad_out, w = e["args"]["Input Dims"][:3]
        expected = conv_backward_flop(grad_out, x, w, None, None, None, None, False, None, None, [True, True, False], out_val=(x, w))
        _, model, flops, nbytes, key, _ = ours[str(e["args"]["External id"])]
        assert (model, key, flops) == ("conv_bwd_legacy", None, expected)
        assert nbytes == 2 * (math.prod(x) + math.prod(w) + math.prod(grad_out)) * 4


@pytest.mark.parametrize(
    ("fixture", "unmodelled", "at_least"),
    [
        ("kineto_conv_resnet_mi300", {"aten::max_pool2d_with_indices", "aten::max_pool2d_with_indices_backward"}, 99),
        ("kineto_2022_integer_us_rank3", None, 70),
    ],
)
def test_share_with_collectives_from_the_raw_trace(converted, fixture, unmodelled, at_least):
    """The run's modelled share = 100 - the kernel time whose launching op (External id) has no FLOPs:
    on the MI300X max-pooling, the TensorLists recorded as [] and kernels with no launching op; the
    steps' share (MFU) reaches at_least. (The A100's unmodelled ops are checked by MFU only.)"""
    con = _session(converted, fixture)
    events = _events(fixture)
    (run_pct,) = {r["modelled_kernel_time_pct"] for r in run_analysis(con, "op_roofline").records()}
    (mfu,) = run_analysis(con, "model_flops_utilization").records()
    assert mfu["modelled_kernel_time_pct"] >= at_least
    if unmodelled is None:
        return
    ops = {str(e["args"]["External id"]): e for e in events if e.get("cat") == "cpu_op"}

    def modelled(ext: str | None) -> bool:
        op = ops.get(ext or "")
        if op is None or op["name"] in unmodelled:
            return False
        lists = [d for d, t in zip(op["args"].get("Input Dims", []), op["args"].get("Input type", []), strict=True) if t == "TensorList"]
        return not (lists and lists[0] == [])

    kernels = [e for e in events if e.get("cat") == "kernel"]
    total = sum(k["dur"] for k in kernels)
    expected = 100 * sum(k["dur"] for k in kernels if modelled(str(k["args"].get("External id", "")))) / total
    assert run_pct == pytest.approx(expected, abs=0.01)
