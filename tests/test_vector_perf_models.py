"""Perf models of the rest of the kernel time (elementwise, norms, reductions, softmax, gathers,
copies): FLOPs and bytes of every call equal TraceLens' on real traces (H100, B200, A100, MI250,
MI300X), every kernel's launching op has a row (with the reason when it has no FLOPs), and the
share of kernel time modelled is checked against the raw trace.

The TraceLens figures (tests/data/<fixture>/tracelens_vector_models.csv) were written by
tests/references/tracelens_vector_reference.py with TraceLens at AMD-AGI/TraceLens 171dd747.
"""

from __future__ import annotations

import csv
import gzip
import json
from collections import Counter

import pytest

from conftest import DATA
from support.library_session import OP_PERF_BY_EXTERNAL_ID, with_modules
from xsp_trace.analyze.session import run_analysis

FIXTURES = {
    "kineto_2025_all_options_h100": "tracelens_h100_qwen1.5_0.5b.json.gz",
    "kineto_relative_ts_b200": "tracelens_b200_eager.json.gz",
    "kineto_2022_integer_us_rank3": "hta_a100_rank3_of_8_2022.json.gz",
    "kineto_rocm_mi250": "hta_mi250_rocm62_minitoy.json.gz",
    "kineto_conv_vit_h100": "tracelens_h100_falconsai_vit.json.gz",
    "kineto_conv_resnet_mi300": "tracelens_mi300_resnet_act_checkpoint.json.gz",
    # one call of each norm variant no recorded trace holds (layer/group/RMS norm backward, ...)
    "kineto_handmade_norm_shapes": "norm_shapes.json.gz",
}


def _session(converted, fixture: str):
    return with_modules(converted(DATA / fixture / FIXTURES[fixture]), "lib/op_perf")


def _ours(con) -> dict[str, tuple]:
    return {row[0]: row[1:] for row in con.execute(OP_PERF_BY_EXTERNAL_ID).fetchall()}


def _raw_events(fixture: str) -> list[dict]:
    with gzip.open(DATA / fixture / FIXTURES[fixture]) as f:
        return json.load(f)["traceEvents"]


@pytest.mark.parametrize("fixture", FIXTURES)
def test_vector_flops_and_bytes_equal_tracelens(converted, fixture):
    """Every elementwise, norm and reduction call TraceLens models has a row here with TraceLens'
    FLOPs and bytes -- or, where it wraps a call of the same kind (aten::layer_norm around
    aten::native_layer_norm), the reason counted_inside, its inner call carrying the count."""
    con = _session(converted, fixture)
    ours = _ours(con)
    with open(DATA / fixture / "tracelens_vector_models.csv") as f:
        reference = {row["external_id"]: row for row in csv.DictReader(f)}
    assert reference
    compared = 0
    for ext, row in reference.items():
        name, _, flops, nbytes, key, _ = ours[ext]
        assert name == row["name"]
        if key == "counted_inside":
            continue
        if not row["data_moved_mib"]:  # an element type TraceLens does not size (bool): FLOPs only
            assert flops == pytest.approx(float(row["gflops"]) * 1e9, rel=1e-9), (ext, name)
            continue
        assert key is None, (ext, name, key)
        assert flops == pytest.approx(float(row["gflops"]) * 1e9, rel=1e-9), (ext, name)
        assert nbytes == pytest.approx(float(row["data_moved_mib"]) * 2**20, rel=1e-9), (ext, name)
        compared += 1
    assert compared > 0


def test_norms_of_a_resnet_training_step_equal_tracelens(converted):
    """MI300X ResNet training: batch norm forward and backward (117 + 60 calls) are all compared."""
    con = _session(converted, "kineto_conv_resnet_mi300")
    rows = con.execute(
        "SELECT name, count(*) FILTER (WHERE flops IS NOT NULL) FROM xsp_op_perf "
        "WHERE name IN ('aten::native_batch_norm', 'aten::native_batch_norm_backward') GROUP BY name ORDER BY name"
    ).fetchall()
    assert rows == [("aten::native_batch_norm", 117), ("aten::native_batch_norm_backward", 60)]


def test_div_by_a_scalar_has_a_row(converted):
    """MI300X ResNet: the three aten::div (tensor by scalar) calls that wrap another aten::div had no
    row; now each has one, with the reason, and its inner div carries TraceLens' FLOPs."""
    con = _session(converted, "kineto_conv_resnet_mi300")
    ours = _ours(con)
    with open(DATA / "kineto_conv_resnet_mi300" / "tracelens_perf_model.csv") as f:
        divs = {row["external_id"]: row for row in csv.DictReader(f) if row["name"] == "aten::div"}
    assert len(divs) == 6
    outer = sorted(ext for ext in divs if ours[ext][4] == "counted_inside")
    assert outer == ["1076", "2835", "5618"]
    for ext in set(divs) - set(outer):
        assert ours[ext][2] == pytest.approx(float(divs[ext]["gflops"]) * 1e9, rel=1e-12)


@pytest.mark.parametrize("fixture", ["kineto_2025_all_options_h100", "kineto_conv_vit_h100", "kineto_relative_ts_b200"])
def test_every_kernel_is_charged_to_one_row(converted, fixture):
    """The kernel time of all rows equals the raw trace's kernels launched by a CPU op (each kernel's
    External id names its op): every launching op has a row, modelled or with its reason."""
    con = _session(converted, fixture)
    events = _raw_events(fixture)
    op_ids = {e["args"].get("External id") for e in events if e.get("cat") == "cpu_op"}
    kernels = [e for e in events if e.get("cat") == "kernel" and e["args"].get("External id") in op_ids]
    (ours_ns,) = con.execute("SELECT sum(kernel_ns) FROM xsp_op_perf").fetchone()
    assert ours_ns == pytest.approx(1000 * sum(e["dur"] for e in kernels), abs=2 * len(kernels))
    reasons = dict(con.execute("SELECT DISTINCT name, not_modelled_reason FROM xsp_op_perf WHERE flops IS NULL").fetchall())
    assert all(reasons.values()), "no op without FLOPs lacks a reason"


@pytest.mark.parametrize(
    ("fixture", "unmodelled"),
    [
        ("kineto_conv_vit_h100", set()),
        ("kineto_2025_all_options_h100", {"aten::all", "aten::arange"}),
        ("kineto_rocm_mi250", set()),
    ],
)
def test_modelled_kernel_time_share_from_the_raw_trace(converted, fixture, unmodelled):
    """The kernel time of ops with FLOPs = 100 - the share of kernel time whose launching op (by External
    id) has none: on the Qwen trace aten::all and aten::arange (and kernels with no launching op in the
    trace); nothing on the ViT and the MI250 (cat and _foreach_add_ are counted: lib/op_lists). MFU's
    share (the step's kernels) is >= 90 %."""
    con = _session(converted, fixture)
    events = _raw_events(fixture)
    op_name = {e["args"].get("External id"): e["name"] for e in events if e.get("cat") == "cpu_op"}
    by_op: Counter[str] = Counter()
    for e in events:
        if e.get("cat") == "kernel":
            by_op[op_name.get(e["args"].get("External id"), "")] += e["dur"]
    # kernels without a launching op in the trace ("") have no FLOPs either
    expected = 100 * (1 - sum(by_op[n] for n in unmodelled | {""}) / sum(by_op.values()))
    (modelled_ns,) = con.execute("SELECT sum(kernel_ns) FILTER (WHERE flops IS NOT NULL) FROM xsp_op_perf").fetchone()
    assert 100 * modelled_ns / 1000 / sum(by_op.values()) == pytest.approx(expected, abs=0.01)
    (mfu,) = run_analysis(con, "model_flops_utilization").records()
    assert mfu["modelled_kernel_time_pct"] >= 90  # the step's kernels only
    reasons = {r["name"]: r["not_modelled_reason"] for r in run_analysis(con, "op_roofline").records() if r["flops_per_call"] is None}
    assert all("TensorList" in reasons[n] for n in unmodelled if n in ("aten::cat", "aten::_foreach_add_"))


def test_own_models_on_the_h100_embedding_and_fill(converted):
    """Models TraceLens lacks, by docs/perf_models.md on the raw shapes: the embedding's index_select
    reads 8,944 int64 indices and 8,944 bf16 rows of 1,024 and writes them; fill_ writes every element."""
    con = _session(converted, "kineto_2025_all_options_h100")
    rows = dict(con.execute("SELECT name, any_value(bytes) FROM xsp_op_perf WHERE name IN ('aten::index_select') GROUP BY name").fetchall())
    assert rows["aten::index_select"] == 8944 * 8 + 2 * 8944 * 1024 * 2


def test_every_handmade_norm_is_compared_and_softmax_has_its_formula(converted):
    """The hand-made trace: each of TraceLens' nine calls is compared above (none counted inside
    another); softmax, which TraceLens' op map leaves out, gets its Softmax formulas: 3 FLOPs and 2
    bf16 elements moved per element forward, twice that backward, over 8 x 12 x 128 x 128."""
    con = _session(converted, "kineto_handmade_norm_shapes")
    ours = _ours(con)
    with open(DATA / "kineto_handmade_norm_shapes" / "tracelens_vector_models.csv") as f:
        assert all(ours[row["external_id"]][4] is None for row in csv.DictReader(f))
    n = 8 * 12 * 128 * 128
    rows = {name: (flops, nbytes) for name, _, flops, nbytes, _, _ in ours.values()}
    assert rows["aten::_softmax"] == (3 * n, 2 * n * 2)
    assert rows["aten::_softmax_backward_data"] == (6 * n, 4 * n * 2)


def test_mse_loss_on_the_mi250(converted):
    """The MI250 toy's loss, by docs/perf_models.md on its raw shapes (input and target 5 x 128 fp32,
    mean reduction): forward subtract and square per element, input and target read and the
    differences written (the mean inside it is counted as a reduction); backward 3 FLOPs per element,
    input and target read, the one-element gradient read and the input's gradient written."""
    con = _session(converted, "kineto_rocm_mi250")
    rows = dict(con.execute("SELECT name, (flops, bytes) FROM xsp_op_perf WHERE name LIKE 'aten::mse_loss%' AND flops IS NOT NULL").fetchall())
    n = 5 * 128
    assert rows["aten::mse_loss"] == (2 * n, 3 * n * 4)
    assert rows["aten::mse_loss_backward"] == (3 * n, 3 * n * 4 + 4)
