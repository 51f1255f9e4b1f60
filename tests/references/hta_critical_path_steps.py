"""Writes HTA's critical path of every ProfilerStep of our Kineto GPU fixtures as the reference
tests/test_critical_path_hta_steps.py compares against: tests/data/critical_path_hta/hta_steps.csv.

Run it in a virtual environment holding HolisticTraceAnalysis 0.5.0 and pandas < 3 (HTA 0.5's
critical path fails under pandas 3 with "Cannot specify both 'axis' and 'index'/'columns'"):

    python3 -m venv /tmp/hta && /tmp/hta/bin/pip install "pandas<3" HolisticTraceAnalysis==0.5.0 psutil
    /tmp/hta/bin/python tests/references/hta_critical_path_steps.py

Each trace alone in a folder, `critical_path_analysis(rank, annotation="ProfilerStep",
instance_id=i)` for every instance i. One row per (trace, instance, on-path event name, bound_by):
the step's window as HTA clips it (first and last critical-path node, us from HTA's origin: the first
event it keeps, which tests/references/hta_critical_path_events.py records), HTA's path length (the sum of its critical-path edge weights, us), and the event's on-path
time. A step HTA cannot compute is one row with its error (and no path).
"""

from __future__ import annotations

import csv
import gzip
import json
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
OUT = DATA / "critical_path_hta" / "hta_steps.csv"
# Our Kineto fixtures with ProfilerStep annotations and GPU work (tests/data/PROVENANCE.md).
TRACES = [
    "kineto_2022_integer_us_rank3/hta_a100_rank3_of_8_2022.json.gz",
    "kineto_2024_ns_resolution/hta_v100_ns_resolution_2024.json.gz",
    "kineto_2025_all_options_h100/tracelens_h100_qwen1.5_0.5b.json.gz",
    "kineto_conv_resnet_mi300/tracelens_mi300_resnet_act_checkpoint.json.gz",
    "kineto_conv_vit_h100/tracelens_h100_falconsai_vit.json.gz",
    "kineto_cuda_graphs_v100_2022/hta_v100_cuda_graphs_rank1_2022.json.gz",
    "kineto_nccl_collectives/hta_a100_nccl_allreduce.json.gz",
    "kineto_pageable_dtoh_a100/hta_a100_pageable_dtoh_rank0.json.gz",
    "kineto_rocm_mi250/hta_mi250_rocm62_minitoy.json.gz",
    "kineto_triton_cuda_driver/hta_a100_triton.json.gz",
    "kineto_two_ranks_sendrecv/sampled_rank-0.json.gz",
    "kineto_two_ranks_sendrecv/sampled_rank-1.json.gz",
]
STEP_CATEGORIES = ("user_annotation", "cpu_op")  # Kineto categories of the CPU-side ProfilerStep#N
FIELDS = ["trace", "instance", "path_start_us", "path_end_us", "hta_path_us", "name", "bound_by", "on_path_us", "error"]


def _steps(trace: Path) -> int:
    """How many ProfilerStep#N annotations the raw trace holds on its CPU threads: the instances asked
    for (HTA may not find them all -- the answer is recorded)."""
    events = json.loads(gzip.open(trace).read())["traceEvents"]
    return sum(1 for e in events if e.get("ph") == "X" and e.get("cat") in STEP_CATEGORIES and str(e.get("name", "")).startswith("ProfilerStep#"))


def hta_steps(traces):
    """(trace, HTA's TraceAnalysis of it, its rank, step instance) for every step each trace holds."""
    from hta.trace_analysis import TraceAnalysis

    for trace in traces:
        with tempfile.TemporaryDirectory() as folder:
            shutil.copyfile(DATA / trace, Path(folder) / "rank-0.json.gz")
            analysis = TraceAnalysis(trace_dir=folder)
            rank = next(iter(analysis.t.traces))
            for instance in range(_steps(DATA / trace)):
                yield trace, analysis, rank, instance


def write_csv(path: Path, fields, rows: list[dict]) -> None:
    """`rows` as CSV at `path` (gzipped when it ends in .gz), with a line saying so on stderr."""
    with gzip.open(path, "wt", newline="") if path.suffix == ".gz" else open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {path} ({len(rows)} rows)", file=sys.stderr)


def main() -> None:
    rows = []
    for trace, analysis, rank, instance in hta_steps(TRACES if len(sys.argv) < 2 else sys.argv[1:]):
        base = {"trace": trace, "instance": instance}
        try:
            graph, ok = analysis.critical_path_analysis(rank=rank, annotation="ProfilerStep", instance_id=instance)
            assert ok, "critical_path_analysis returned success=False"
            nodes = [graph.node_list[n] for n in graph.critical_path_nodes]
            breakdown = graph.get_critical_path_breakdown()
        except Exception as exc:  # HTA 0.5 fails on some steps: recorded, not hidden
            rows.append(base | {"error": f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:120]}"})
            print(f"{trace} #{instance}: {rows[-1]['error']}", file=sys.stderr)
            continue
        length = int(breakdown.duration.sum())
        window = {"path_start_us": int(nodes[0].ts), "path_end_us": int(nodes[-1].ts), "hta_path_us": length}
        per_event = breakdown.groupby(["s_name", "bound_by"], dropna=False).duration.sum().reset_index()
        for _, r in per_event.iterrows():
            rows.append(base | window | {"name": r.s_name, "bound_by": r.bound_by, "on_path_us": int(r.duration), "error": ""})
        print(f"{trace} #{instance}: path {length} us from {nodes[0].ts} to {nodes[-1].ts}", file=sys.stderr)
    write_csv(OUT, FIELDS, rows)


if __name__ == "__main__":
    main()
