"""What-if replay properties over every step of every Kineto and nsys fixture (xsp_trace/analyze/critical_path/what_if.py).

The replay keeps each stream's GPU work and its dependencies, so whatever a rule removes:
- no rule, or a rule that matches nothing, predicts the measured step time;
- a rule that only removes work (sync waits, ops' own time, a CPU region, communication) predicts
  no more than the measured time;
- and no less than the GPU work the step's busiest stream must still run inside the step: the
  union of its items' time clipped to the step, from xsp_gpu_work, without the items the rule
  removes (computed here in SQL, not by the replay).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import DATA
from xsp_trace.analyze.critical_path.what_if import parse_rule, replay_gain
from xsp_trace.analyze.session import AnalysisOptions, prepare
from xsp_trace.analyze.sql_library import include

# (fixture files converted together, slow): every Kineto and nsys trace of tests/data (the nsys
# report a newer nsys wrote is the clear-error case, it converts to nothing).
FIXTURES = [
    (("critical_path_hta/simple_add.json.gz",), False),
    (("critical_path_hta/cuda_event_sync.json.gz",), False),
    (("critical_path_hta/cuda_event_sync_multi_stream.json.gz",), False),
    (("kineto_2021_format/hta_2021_format_inference.json.gz",), False),
    (("kineto_cuda_sync_alexnet/hta_a100_alexnet.json.gz",), False),
    (("kineto_triton_cuda_driver/hta_a100_triton.json.gz",), False),
    (("kineto_rocm_mi250/hta_mi250_rocm62_minitoy.json.gz",), False),
    (("kineto_cpu_only/hta_cpu_only.json.gz",), False),
    (("kineto_cpu_conv_variants/conv_variants.json.gz",), False),
    (("kineto_hip_graphs_mi300x_vllm/tracelens_mi300x_vllm_full_graph_decode.json.gz",), False),
    (("kineto_conv_vit_h100/tracelens_h100_falconsai_vit.json.gz",), False),
    (("kineto_two_ranks_sendrecv/sampled_rank-0.json.gz", "kineto_two_ranks_sendrecv/sampled_rank-1.json.gz"), True),
    (("kineto_cpu_tiny_cnn_30_vs_50_calls/tiny_cnn_30_inferences.json.gz",), False),
    (("kineto_cpu_tiny_cnn_30_vs_50_calls/tiny_cnn_50_inferences.json.gz",), True),
    (("kineto_cuda_graphs_v100_2022/hta_v100_cuda_graphs_rank1_2022.json.gz",), False),
    (("kineto_2022_integer_us_rank3/hta_a100_rank3_of_8_2022.json.gz",), True),
    (("kineto_2024_ns_resolution/hta_v100_ns_resolution_2024.json.gz",), True),
    (("kineto_nccl_collectives/hta_a100_nccl_allreduce.json.gz",), True),
    (("kineto_pageable_dtoh_a100/hta_a100_pageable_dtoh_rank0.json.gz",), True),
    (("kineto_2025_all_options_h100/tracelens_h100_qwen1.5_0.5b.json.gz",), True),
    (("kineto_relative_ts_b200/tracelens_b200_eager.json.gz",), True),
    (("kineto_conv_resnet_mi300/tracelens_mi300_resnet_act_checkpoint.json.gz",), True),
    (("kineto_2021_profiler_step_operator/tb_plugin_resnet50_num_workers_0.json.gz",), True),
    (("kineto_2021_profiler_step_operator/tb_plugin_resnet50_num_workers_4.json.gz",), True),
    (("nsys_2022_saxpy_mpi_a100/pipit_saxpy_mpi_cuda_nsys2022.2.sqlite",), False),
    (("nsys_2026_mock_rtx3080/nsysai_mock_nsys2026.1.sqlite",), False),
    (("nsys_2026_pytorch_2xh100/nsysai_h100_2gpu_1s_nsys2026.2.sqlite",), True),
    (("nsys_2022_cpu_tiny_cnn_40_vs_64_steps/tiny_cnn_ML_40_steps.nsys-rep",), True),
    (("nsys_2022_cpu_tiny_cnn_40_vs_64_steps/tiny_cnn_ML_64_steps.nsys-rep",), True),
]

# Rules that only remove work, with the GPU work each removes (a SQL condition on xsp_gpu_work, or
# None: none). The region rule removes each step's own CPU time below its outermost annotation.
REMOVING = [
    ("sync:.*=0", None),
    ("op:.**0", None),
    ("api:^cuda(Launch|MemcpyAsync|GraphLaunch).*=0", None),
    ("region:^ProfilerStep#*0", None),
    ("communication:.*=0", "work_class = 'communication'"),
    ("gpu:.**0", "TRUE"),
]
NOTHING = ("kernel:^$*0", "region:(?!)=0")


def _params():
    for files, slow in FIXTURES:
        marks = [pytest.mark.slow] if slow else []
        yield pytest.param(files, marks=marks, id=Path(files[0]).parent.name + ("/" + Path(files[0]).stem if len(files) == 1 else ""))


def _busiest_remaining(con, run_id: int, start: int, end: int, removed: str | None) -> int:
    """The most GPU time one stream runs inside [start, end) without the removed items: the union of
    its items' intervals clipped to the step."""
    keep = f"NOT ({removed})" if removed else "TRUE"
    include(con, "lib/gpu_work")
    (found,) = con.execute(
        f"""
        WITH w AS (
            SELECT device_id, stream_id, greatest(start_ns, $start) AS s, least(end_ns, $end) AS e
            FROM xsp_gpu_work WHERE run_id = $run AND end_ns > $start AND start_ns < $end AND {keep}
        ), ordered AS (
            SELECT *, max(e) OVER (PARTITION BY device_id, stream_id ORDER BY s, e ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before
            FROM w WHERE e > s
        ), pieces AS (
            SELECT device_id, stream_id, greatest(e - greatest(s, coalesce(before, s)), 0) AS busy FROM ordered
        )
        SELECT coalesce(max(busy), 0) FROM (SELECT device_id, stream_id, sum(busy) AS busy FROM pieces GROUP BY ALL)
        """,
        {"run": run_id, "start": start, "end": end},
    ).fetchone()
    return int(found)


@pytest.fixture(scope="module")
def steps_of(converted):
    """steps_of(files) -> (read-only connection with the analyses' views, the run ids): converted once per module."""
    cache: dict = {}

    def _steps(files):
        if files not in cache:
            con = converted(*(DATA / f for f in files))
            prepare(con, AnalysisOptions())
            units = con.execute("SELECT DISTINCT run_id FROM spans ORDER BY 1").fetchall()
            cache[files] = (con, [r[0] for r in units])
        return cache[files]

    return _steps


def _window(con, run_id: int, iteration) -> tuple[int, int]:
    """The step's [start, end) (a run without steps: its CPU spans' extent, as the replay's unit)."""
    if iteration is None:
        sql, args = "SELECT min(start_ns), max(end_ns) FROM spans WHERE run_id = ? AND stream_id IS NULL AND tid IS NOT NULL", [run_id]
    else:
        sql, args = "SELECT start_ns, end_ns FROM steps WHERE run_id = ? AND iteration = ?", [run_id, iteration]
    (found,) = con.execute(sql, args).fetchall()
    return int(found[0]), int(found[1])


@pytest.mark.parametrize("files", list(_params()))
def test_replay_properties_on_every_step(files, steps_of):
    if any(f.endswith(".nsys-rep") for f in files):
        from conftest import require_nsys

        require_nsys()
    con, run_ids = steps_of(files)
    failures = []
    for run_id in run_ids:
        iterations = [r[0] for r in con.execute("SELECT iteration FROM steps WHERE run_id = ? ORDER BY 1", [run_id]).fetchall()] or [None]
        for rules in [(), *((r,) for r in NOTHING)]:
            for iteration, measured, predicted in replay_gain(con, run_id, iterations, [parse_rule(r) for r in rules]):
                if predicted != measured:
                    failures.append((run_id, iteration, rules, measured, predicted))
        for rule, removed in REMOVING:
            for iteration, measured, predicted in replay_gain(con, run_id, iterations, [parse_rule(rule)]):
                floor = _busiest_remaining(con, run_id, *_window(con, run_id, iteration), removed)
                if not floor <= predicted <= measured:
                    failures.append((run_id, iteration, rule, measured, predicted, floor))
    assert not failures, failures
