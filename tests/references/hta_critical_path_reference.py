"""Writes HTA's critical paths of its own critical-path test traces (and ours) as the reference
tests/test_critical_path.py compares against: tests/data/critical_path_hta/hta_reference.csv.

Run it in a virtual environment holding HolisticTraceAnalysis 0.5.0 and pandas < 3 (HTA 0.5's
critical path fails under pandas 3 with "Cannot specify both 'axis' and 'index'/'columns'"):

    python3 -m venv /tmp/hta && /tmp/hta/bin/pip install "pandas<3" HolisticTraceAnalysis==0.5.0 psutil
    /tmp/hta/bin/python tests/references/hta_critical_path_reference.py

One row per (case, on-path event): the case's analysed window as HTA clips it (first and last
critical-path node, in us from HTA's origin -- the ts of the first event HTA keeps, hta_origin_us),
HTA's path length (the sum of its critical-path edge weights), and each event's on-path time by
HTA's bound_by class. (The columns keep their historical _ns names; the values are us.)
"""

from __future__ import annotations

import csv
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
OUT = DATA / "critical_path_hta" / "hta_reference.csv"
ALEXNET_FORWARD = "[param|pytorch.model.alex_net|0|0|0|measure|forward]"
# case -> (trace, annotation, instance id): the regions HTA's own tests analyse (its test_critical_path_analysis.py).
CASES = {
    "alexnet": (DATA / "kineto_cuda_sync_alexnet" / "hta_a100_alexnet.json.gz", ALEXNET_FORWARD, 1),
    "simple_add": (DATA / "critical_path_hta" / "simple_add.json.gz", ALEXNET_FORWARD, 1),
    "cuda_event_sync": (DATA / "critical_path_hta" / "cuda_event_sync.json.gz", "ProfilerStep", 0),
    "cuda_event_sync_multi_stream": (DATA / "critical_path_hta" / "cuda_event_sync_multi_stream.json.gz", "", None),
}


def main() -> None:
    from hta.trace_analysis import TraceAnalysis

    rows = []
    for case, (trace, annotation, instance) in CASES.items():
        with tempfile.TemporaryDirectory() as folder:
            shutil.copyfile(trace, Path(folder) / "rank-0.json.gz")
            analysis = TraceAnalysis(trace_dir=folder)
            graph, ok = analysis.critical_path_analysis(rank=0, annotation=annotation, instance_id=instance)
            assert ok, case
            nodes = [graph.node_list[n] for n in graph.critical_path_nodes]
            breakdown = graph.get_critical_path_breakdown()
            length = int(breakdown.duration.sum())
            per_event = breakdown.groupby(["s_name", "bound_by"], dropna=False).duration.sum().reset_index()
            for _, r in per_event.iterrows():
                rows.append(
                    {
                        "case": case,
                        "hta_origin_us": int(analysis.t.min_ts),
                        "path_start_ns": int(nodes[0].ts),
                        "path_end_ns": int(nodes[-1].ts),
                        "hta_path_ns": length,
                        "name": r.s_name,
                        "bound_by": r.bound_by,
                        "on_path_ns": int(r.duration),
                    }
                )
            print(f"{case}: path {length} ns from {nodes[0].ts} to {nodes[-1].ts}", file=sys.stderr)
    with open(OUT, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {OUT} ({len(rows)} rows)", file=sys.stderr)


if __name__ == "__main__":
    main()
