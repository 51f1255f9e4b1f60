"""Per-op FLOPs and bytes of the vector ops (elementwise, norms, reductions; the models of
xsp_trace/formats/aten_vector_models.py that TraceLens also has) as TraceLens computes them: the
reference tests/test_vector_perf_models.py compares queries/lib/op_perf.sql against.

Run as tests/references/tracelens_reference.py is run (TraceLens at AMD-AGI/TraceLens 171dd747 on PYTHONPATH,
this repository too, for the op list):

    PYTHONPATH=TraceLens:. /work/venvs/tracelens/bin/python tests/references/tracelens_vector_reference.py \\
        tests/data/kineto_2025_all_options_h100/*.json.gz tests/data/kineto_2025_all_options_h100/tracelens_vector_models.csv

Columns as tracelens_perf_model.csv's: External id, name, GFLOPS (FLOPs / 1e9) and Data Moved (MiB)
per call, for every cpu_op both model. An op TraceLens cannot model (its elementwise models read
"Input Strides", which traces before 2023 lack) is left out.
"""

from __future__ import annotations

import csv
import sys
import warnings


def main(trace: str, out: str) -> None:
    warnings.filterwarnings("ignore")
    from TraceLens import TreePerfAnalyzer
    from TraceLens.PerfModel.torch_op_mapping import op_to_perf_model_class_map

    from xsp_trace.formats.aten_vector_models import VECTOR_OP_MODELS

    both = set(VECTOR_OP_MODELS) & set(op_to_perf_model_class_map)
    analyzer = TreePerfAnalyzer.from_file(trace)
    rows = []
    for event in analyzer.tree.events:
        if event.get("cat") != "cpu_op" or event.get("name") not in both:
            continue
        try:
            frame = analyzer.build_df_perf_metrics([event])
            (record,) = frame.to_dict("records")
            gflops = float(record["GFLOPS"])
        except Exception:  # TraceLens cannot model this call (e.g. no "Input Strides")
            continue
        moved = record.get("Data Moved (MB)")
        rows.append([record["external_id"], record["name"], repr(gflops), "" if moved is None or moved != moved else repr(float(moved))])
    with open(out, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["external_id", "name", "gflops", "data_moved_mib"])
        writer.writerows(rows)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
