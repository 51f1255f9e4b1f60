"""Communication analyses on real NCCL traces against Holistic Trace Analysis 0.5 and the raw JSON.

HTA 0.5 is the reference for the compute / communication split (get_gpu_kernel_breakdown's
kernel-type table) and the comm/compute overlap (get_comm_comp_overlap): within 1 percentage
point. On integer-µs traces the figures agree to HTA's printed precision; on float-µs traces HTA
first rounds every event inward to whole µs (ts -> ceil, end -> floor: see kineto_cases.py), which
drops ~1 µs from each of thousands of short kernels and moves the figures by up to half a point.
The NCCL collective summary and the multi-rank view are checked against the raw JSON.
"""

from __future__ import annotations

import gzip
import json
import logging
import shutil
from collections import defaultdict
from pathlib import Path

import pytest

from kineto_cases import KINETO_TRACES
from xsp_trace.analyze import open_session, run_analysis

TWO_RANKS = sorted((Path(__file__).parent / "data" / "kineto_two_ranks_sendrecv").glob("sampled_rank-*.json.gz"))
NCCL_CASES = ["kineto_nccl_collectives", "kineto_2022_integer_us_rank3"]


def _hta(paths, workdir):
    """HTA on a folder with copies of the traces: {rank: (overlap %, {classes: %})}."""
    logging.disable(logging.WARNING)
    from hta.trace_analysis import TraceAnalysis

    folder = workdir / "hta"
    folder.mkdir()
    for p in paths:
        shutil.copyfile(p, folder / p.name)
    analysis = TraceAnalysis(trace_dir=str(folder), include_last_profiler_step=True)
    overlap = analysis.get_comm_comp_overlap(visualize=False)
    kinds, _ = analysis.get_gpu_kernel_breakdown(visualize=False, num_kernels=10**9, duration_ratio=1.0, include_memory_kernels=True)
    split = {
        "+".join(k.lower() for k in label.split(" overlapping ")): (pct, total_us)
        for label, pct, total_us in zip(kinds["kernel_type"], kinds["percentage"], kinds["sum"], strict=True)
    }
    return {int(r): float(p) for r, p in zip(overlap["rank"], overlap["comp_comm_overlap_pctg"], strict=True)}, split


@pytest.mark.parametrize("case", NCCL_CASES)
def test_overlap_and_split_within_one_point_of_hta(case, converted_path, tmp_path):
    hta_overlap, hta_split = _hta([KINETO_TRACES[case]], tmp_path)
    con = open_session(converted_path(KINETO_TRACES[case]))
    (row,) = run_analysis(con, "comm_compute_overlap").records()
    ((hta_rank, hta_pct),) = hta_overlap.items()
    assert row["rank"] == hta_rank
    assert 10 < hta_pct < 60  # a real overlap to compare, not 0 = 0
    assert abs(row["overlap_pct"] - hta_pct) <= 1.0, (row["overlap_pct"], hta_pct)
    split = {r["classes"]: r for r in run_analysis(con, "comm_compute_split").records()}
    assert set(split) == set(hta_split)
    for classes, (pct, _) in hta_split.items():
        assert abs(split[classes]["time_pct"] - pct) <= 1.0, classes
    if case == "kineto_2022_integer_us_rank3":  # integer µs: no HTA rounding, the same figures
        assert row["overlap_pct"] == hta_pct == 46.24
        assert {k: r["time_ns"] for k, r in split.items()} == {k: int(us) * 1000 for k, (_, us) in hta_split.items()}


def test_overlap_per_rank_within_one_point_of_hta_on_two_ranks(converted_path, tmp_path):
    hta_overlap, _ = _hta(TWO_RANKS, tmp_path)
    con = open_session(converted_path(*TWO_RANKS))
    ours = {r["rank"]: r["overlap_pct"] for r in run_analysis(con, "comm_compute_overlap").records()}
    assert set(ours) == set(hta_overlap) == {0, 1}
    for rank, pct in hta_overlap.items():
        assert abs(ours[rank] - pct) <= 1.0, rank


def _raw_events(path):
    with gzip.open(path, "rt") as f:
        return json.load(f)["traceEvents"]


def test_nccl_collectives_against_the_raw_kernel_args(converted_path):
    """Each all_reduce / broadcast kernel's own args: bytes = max(in, out) elements x element size."""
    element_bytes = {"Float": 4, "Long": 8}  # PyTorch ScalarType sizes, the two this trace uses
    events = _raw_events(KINETO_TRACES["kineto_nccl_collectives"])
    expected = defaultdict(list)
    for e in events:
        if e.get("cat") == "kernel" and e["name"].startswith("ncclKernel"):
            a = e["args"]
            nbytes = max(int(a["In msg nelems"]), int(a["Out msg nelems"])) * element_bytes[a["dtype"]]
            expected[(a["Collective name"], nbytes, int(a["Group size"]))].append(e["dur"])
    assert len(expected) >= 5
    con = open_session(converted_path(KINETO_TRACES["kineto_nccl_collectives"]))
    rows = run_analysis(con, "nccl_collectives").records()
    names = {"allreduce": "all_reduce", "broadcast": "broadcast"}
    got = {(r["collective"], r["message_bytes"], r["group_size"]): r for r in rows}
    assert set(got) == {(names[c], b, n) for c, b, n in expected}
    for (coll, nbytes, n), durs in expected.items():
        r = got[(names[coll], nbytes, n)]
        assert r["count"] == len(durs)
        mean_s = sum(durs) / len(durs) / 1e6  # dur in µs
        assert r["total_ns"] == pytest.approx(sum(durs) * 1000, abs=len(durs))
        algbw = nbytes / mean_s / 1e9
        assert r["algbw_gb_per_s"] == pytest.approx(algbw, abs=1e-3)
        # nccl-tests: all_reduce busbw = algbw x 2(n-1)/n; broadcast x 1 -- with n = 2 both x 1.
        factor = 2 * (n - 1) / n if coll == "allreduce" else 1.0
        assert r["busbw_gb_per_s"] == pytest.approx(algbw * factor, abs=1e-3)


def test_rank_skew_against_the_raw_steps_and_kernels(converted_path):
    """Per rank and ProfilerStep: step duration and NCCL kernel time launched inside it, from the JSON."""
    expected = {}
    for path in TWO_RANKS:
        with gzip.open(path, "rt") as f:
            raw = json.load(f)
        rank = raw["distributedInfo"]["rank"]
        events = raw["traceEvents"]
        steps = [e for e in events if e.get("name", "").startswith("ProfilerStep#") and e.get("cat") == "user_annotation"]
        launch_ts = {e["args"]["correlation"]: e["ts"] for e in events if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})}
        for s in steps:
            nccl = [
                e["dur"]
                for e in events
                if e.get("cat") == "kernel"
                and e["name"].startswith("nccl")
                and s["ts"] <= launch_ts.get(e["args"]["correlation"], -1) < s["ts"] + s["dur"]
            ]
            expected[(int(s["name"].split("#")[1]), rank)] = (s["dur"] / 1000, len(nccl), sum(nccl) / 1000)
    con = open_session(converted_path(*TWO_RANKS))
    rows = run_analysis(con, "rank_skew").records()
    assert {(r["iteration"], r["rank"]): (r["step_ms"], r["collectives"], r["collective_ms"]) for r in rows} == expected
    for it in (551, 552):
        mine = {r["rank"]: r for r in rows if r["iteration"] == it}
        steps = {k: v[0] for k, v in expected.items() if k[0] == it}
        comm = {k[1]: v[2] for k, v in expected.items() if k[0] == it}
        assert mine[0]["iteration_skew_ms"] == pytest.approx(max(steps.values()) - min(steps.values()))
        straggler = min(comm, key=comm.get)
        assert [r for r, m in mine.items() if m["straggler"]] == [straggler]
        assert mine[1 - straggler]["collective_wait_ms"] == pytest.approx(comm[1 - straggler] - comm[straggler])
