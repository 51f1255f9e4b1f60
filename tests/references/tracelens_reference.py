"""Per-op FLOPs and bytes of a Kineto trace as TraceLens computes them: the reference the shape-based
roofline (queries/lib/op_perf.sql) is tested against.

TraceLens (AMD-AGI/TraceLens) is not on PyPI -- PyPI's `tracelens` (0.7.0) is an unrelated project
(ssf0409/tracelens, agent evaluation) -- so CI cannot install it; this script is run by hand in a venv
with AMD-AGI/TraceLens' source on PYTHONPATH and writes a small CSV next to the fixture, which the test
reads:

    python3 -m venv /work/venvs/tracelens
    /work/venvs/tracelens/bin/pip install pandas tqdm orjson tabulate pyyaml
    git clone https://github.com/AMD-AGI/TraceLens && git -C TraceLens checkout 171dd747
    PYTHONPATH=TraceLens /work/venvs/tracelens/bin/python tests/references/tracelens_reference.py \\
        tests/data/kineto_2025_all_options_h100/*.json.gz tests/data/kineto_2025_all_options_h100/tracelens_perf_model.csv

Columns: the op's External id and name, TraceLens' GFLOPS (FLOPs / 1e9) and Data Moved (MB =
MiB, bytes / 2**20) per call, for every cpu_op whose name has a model in xsp-trace's
xsp_trace/formats/aten_perf_models.py.
"""

from __future__ import annotations

import csv
import sys
import warnings

MODELLED = {
    "aten::mm",
    "aten::addmm",
    "aten::bmm",
    "aten::baddbmm",
    "aten::_scaled_dot_product_flash_attention",
    "aten::_scaled_dot_product_efficient_attention",
    "aten::_scaled_dot_product_cudnn_attention",
    "aten::convolution",
    "aten::convolution_backward",
    *(f"aten::{op}{suffix}" for op in ("add", "sub", "mul", "div") for suffix in ("", "_")),
}


def main(trace: str, out: str) -> None:
    warnings.filterwarnings("ignore")
    from TraceLens import TreePerfAnalyzer

    analyzer = TreePerfAnalyzer.from_file(trace)
    events = [e for e in analyzer.tree.events if e.get("cat") == "cpu_op" and e.get("name") in MODELLED]
    frame = analyzer.build_df_perf_metrics(events)
    with open(out, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["external_id", "name", "gflops", "data_moved_mib"])
        for record in frame.to_dict("records"):
            moved = record.get("Data Moved (MB)")
            writer.writerow(
                [record["external_id"], record["name"], repr(float(record["GFLOPS"])), "" if moved is None or moved != moved else repr(float(moved))]
            )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
