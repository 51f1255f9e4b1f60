"""kernel_sequences: Holistic Trace Analysis 0.5's frequent CUDA kernel sequences
(TraceAnalysis.get_frequent_cuda_kernel_sequences).

1. Hand-made: the definition worked out by hand -- the ops whose name contains the operator text, at
   the smallest depth any of them has, with at least min_pattern_len GPU operations under them;
   a pattern is the op's name and its GPU operations' names in start order.
2. HTA: on the Kineto fixtures HTA's call graph can read, every pattern and count equals HTA's
   (tests/data/kernel_sequences_hta/hta_kernel_sequences.csv, written by
   tests/references/hta_kernel_sequences_reference.py), read under --scope profiled as HTA reads the trace
   (include_last_profiler_step=True), and so does every GPU and CPU time sum (both traces have
   whole-us timestamps; on float ones HTA rounds starts up and ends down, which would make its sums
   smaller). Not compared: traces whose zero-duration events HTA 0.5's call graph cannot order
   (kineto_2024_ns_resolution, kineto_relative_ts_b200, kineto_2025_all_options_h100: it raises
   ValueError) and ROCm's kineto_rocm_mi250, where HTA links no GPU work to its launch (stream 0).
"""

from __future__ import annotations

import csv
from collections import defaultdict

import pytest

from conftest import DATA
from kineto_cases import KINETO_TRACES
from support.handmade import Run, write
from xsp_trace.analyze.session import AnalysisOptions, open_session, run_analysis

REFERENCE = DATA / "kernel_sequences_hta" / "hta_kernel_sequences.csv"
US = 1_000


def _handmade(tmp_path):
    """Two steps; in each a Block range holds aten::linear (mm, add, relu: three kernels) and aten::add
    (one kernel); step 2's linear launches its kernels on two streams, the second out of launch order."""
    run = Run(1, source_kind="kineto")
    for step in (1, 2):
        at = (step - 1) * 1000 * US
        run.span("annotation", f"ProfilerStep#{step}", at, at + 1000 * US, iteration=step)
        run.span("annotation", "Block", at + 10 * US, at + 900 * US)
        run.span("op", "aten::linear", at + 20 * US, at + 120 * US)
        run.gpu("kernel", "mm", (at + 30 * US, at + 35 * US), (at + 200 * US, at + 300 * US))
        relu_start = at + 400 * US if step == 1 else at + 320 * US
        run.gpu("kernel", "add", (at + 40 * US, at + 45 * US), (at + 310 * US, at + 330 * US) if step == 1 else (at + 400 * US, at + 420 * US))
        run.gpu("kernel", "relu", (at + 50 * US, at + 55 * US), (relu_start, relu_start + 10 * US), stream=7 if step == 1 else 8)
        run.span("op", "aten::add", at + 130 * US, at + 140 * US)
        run.gpu("kernel", "add", (at + 132 * US, at + 135 * US), (at + 500 * US, at + 520 * US))
    return write(tmp_path / "t.duckdb", [run])


def _sequences(db, **settings):
    return run_analysis(open_session(db, AnalysisOptions(settings=settings or None)), "kernel_sequences").records()


def test_patterns_of_an_operator(tmp_path):
    rows = _sequences(_handmade(tmp_path), sequence_op="aten::linear")
    assert [(r["pattern"], r["count"], r["operations"], r["gpu_ns"], r["op_ns"]) for r in rows] == [
        ("aten::linear|mm|add|relu", 1, 3, 130 * US, 100 * US),
        ("aten::linear|mm|relu|add", 1, 3, 130 * US, 100 * US),
    ]


def test_min_pattern_len_and_the_shallowest_depth(tmp_path):
    db = _handmade(tmp_path)
    # "aten::" matches linear and add at one depth; add launched one kernel, below min_pattern_len 3.
    assert {r["operator"] for r in _sequences(db, sequence_op="aten::")} == {"aten::linear"}
    assert {(r["pattern"], r["count"]) for r in _sequences(db, sequence_op="aten::add", sequence_min=1)} == {("aten::add|add", 2)}
    # "#" matches only the steps (depth 0), whose four kernels are one pattern each: the order differs.
    steps = _sequences(db, sequence_op="ProfilerStep#")
    assert [(r["operator"], r["operations"]) for r in steps] == [("ProfilerStep#1", 4), ("ProfilerStep#2", 4)]
    # "Block" and "ProfilerStep" both contain "o": only the shallower steps root the search.
    assert {r["operator"] for r in _sequences(db, sequence_op="o")} == {"ProfilerStep#1", "ProfilerStep#2"}


def test_default_roots_are_the_outermost_ops(tmp_path):
    rows = _sequences(_handmade(tmp_path), sequence_min=1)
    assert {(r["pattern"], r["count"]) for r in rows} == {("aten::linear|mm|add|relu", 1), ("aten::linear|mm|relu|add", 1), ("aten::add|add", 2)}
    # Share of the run's GPU time: 2 x (130 + 20) us of kernels.
    assert {r["pattern"]: r["gpu_pct"] for r in rows}["aten::add|add"] == round(100 * 40 / 300, 2)


def _reference() -> dict[tuple[str, str], list[dict]]:
    by_case: dict[tuple[str, str], list[dict]] = defaultdict(list)
    with open(REFERENCE, newline="") as f:
        for row in csv.DictReader(f):
            by_case[(row["case"], row["operator_name"])].append(row)
    return by_case


REFERENCE_CASES = sorted(_reference())


@pytest.mark.parametrize(("case", "operator"), REFERENCE_CASES, ids=[f"{c}-{o}" for c, o in REFERENCE_CASES])
def test_equal_to_hta(case, operator, converted_path):
    theirs = {r["pattern"]: r for r in _reference()[(case, operator)]}
    con = open_session(converted_path(KINETO_TRACES[case]), AnalysisOptions(scope="profiled", settings={"sequence_op": operator}))
    ours = {r["pattern"]: r for r in run_analysis(con, "kernel_sequences").records()}
    assert {p: r["count"] for p, r in ours.items()} == {p: int(r["count"]) for p, r in theirs.items()}
    # Both traces have whole-us timestamps, which HTA keeps as they are: the sums are equal to the ns.
    assert {p: (r["gpu_ns"], r["op_ns"]) for p, r in ours.items()} == {
        p: (int(r["gpu_kernel_us"]) * US, int(r["cpu_op_us"]) * US) for p, r in theirs.items()
    }


def _forward_and_backward(tmp_path, backward_range: bool):
    """MyOp under ProfilerStep#1 > Block (depth 2) launches a, b, c; on thread 200 the top-level
    autograd::engine::evaluate_function: MyOpBackward0 launches c, b, a, inside "## backward ##" when
    `backward_range`."""
    run = Run(1, source_kind="kineto")
    run.span("annotation", "ProfilerStep#1", 0, 1000 * US, iteration=1)
    run.span("annotation", "Block", 10 * US, 400 * US)
    run.span("op", "MyOp", 20 * US, 100 * US)
    for i, name in enumerate(("a", "b", "c")):
        run.gpu("kernel", name, (30 * US + i * 10 * US, 35 * US + i * 10 * US), (200 * US + i * 50 * US, 240 * US + i * 50 * US))
    if backward_range:
        run.span("annotation", "## backward ##", 500 * US, 900 * US)
    run.span("op", "autograd::engine::evaluate_function: MyOpBackward0", 510 * US, 600 * US, tid=200)
    for i, name in enumerate(("c", "b", "a")):
        run.gpu("kernel", name, (520 * US + i * 10 * US, 525 * US + i * 10 * US), (700 * US + i * 50 * US, 740 * US + i * 50 * US), tid=200)
    return write(tmp_path / f"backward_range_{backward_range}.duckdb", [run])


def test_the_autograd_thread_hangs_under_the_backward_range(tmp_path):
    """HTA links the autograd thread's top-level spans under the main thread's "## backward ##" range:
    the backward op then sits one level below that range (depth 2), as deep as MyOp, so both root
    the search for "MyOp"."""
    rows = _sequences(_forward_and_backward(tmp_path, backward_range=True), sequence_op="MyOp")
    assert [(r["pattern"], r["count"]) for r in rows] == [("MyOp|a|b|c", 1), ("autograd::engine::evaluate_function: MyOpBackward0|c|b|a", 1)]


def test_without_a_backward_range_the_autograd_thread_hangs_under_the_step(tmp_path):
    """Then the backward op is at depth 1, shallower than MyOp, and alone roots the search."""
    rows = _sequences(_forward_and_backward(tmp_path, backward_range=False), sequence_op="MyOp")
    assert [r["pattern"] for r in rows] == ["autograd::engine::evaluate_function: MyOpBackward0|c|b|a"]
