"""Writes Holistic Trace Analysis's frequent CUDA kernel sequences of the Kineto fixtures as the
reference tests/test_kernel_sequences.py compares the kernel_sequences analysis with:
tests/data/kernel_sequences_hta/hta_kernel_sequences.csv.

Run it in a virtual environment holding HolisticTraceAnalysis 0.5.0 and pandas < 3 (HTA 0.5's call
graph fails under pandas 3: "The axis argument to unique is not supported for dtype object"):

    python3 -m venv /tmp/hta && /tmp/hta/bin/pip install "pandas<3" HolisticTraceAnalysis==0.5.0 psutil
    /tmp/hta/bin/python tests/references/hta_kernel_sequences_reference.py [CASE ...]   # every case without one

One row per (case, operator, pattern) of TraceAnalysis.get_frequent_cuda_kernel_sequences(
operator_name, output_dir, min_pattern_len, rank, top_k, visualize=False), every pattern (top_k only
limits HTA's plot and overlaid trace): HTA's pattern text (the operator's name, then its kernels'
names, joined by "|"), count, and its "GPU kernel duration (us)" and "CPU op duration (us)" sums.
HTA needs distributedInfo.rank: traces without one get rank 0 patched into the copy (the events
are untouched), as hta_kernel_reference in tests/kineto_cases.py does.
"""

from __future__ import annotations

import csv
import gzip
import json
import logging
import shutil
import sys
import tempfile
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
OUT = DATA / "kernel_sequences_hta" / "hta_kernel_sequences.csv"
MIN_PATTERN_LEN = 3
# case -> (trace, operator names to search): operators that give patterns at several depths (a leaf op,
# a backward op on the autograd thread, a custom op, a range around the model). HTA 0.5's call graph
# fails on kineto_2024_ns_resolution, kineto_relative_ts_b200 and kineto_2025_all_options_h100
# (ValueError "Unexpected case" comparing zero-duration events in
# trace_call_stack._cmp_events_with_zero_duration); on kineto_rocm_mi250 it finds no pattern: it links
# a kernel to its launch only on a stream above 0 (trace.get_cpu_gpu_correlation) and ROCm's is 0.
CASES = {
    "kineto_2022_integer_us_rank3": (
        DATA / "kineto_2022_integer_us_rank3" / "hta_a100_rank3_of_8_2022.json.gz",
        ("aten::linear", "AddmmBackward0", "fbgemm::"),
    ),
    "kineto_cuda_sync_alexnet": (DATA / "kineto_cuda_sync_alexnet" / "hta_a100_alexnet.json.gz", ("aten::conv2d", "aten::linear", "[param|")),
}


def _decimal_text(value: object) -> object:
    if isinstance(value, Decimal):
        return float(value) if value != value.to_integral_value() else int(value)
    raise TypeError(type(value))


def _with_rank(trace: Path, folder: Path) -> None:
    """A copy of the trace in folder, with distributedInfo.rank (HTA reads traces by rank)."""
    with gzip.open(trace, "rt", encoding="utf-8") as f:
        raw = json.load(f, parse_float=Decimal)
    if "rank" in raw.get("distributedInfo", {}):
        shutil.copyfile(trace, folder / trace.name)
        return
    raw.setdefault("distributedInfo", {})["rank"] = 0
    with gzip.open(folder / trace.name, "wt", encoding="utf-8") as f:
        json.dump(raw, f, default=_decimal_text)


def main(cases: list[str]) -> None:
    """The reference rows of `cases` (every case without any), replacing those cases' rows in OUT."""
    logging.disable(logging.WARNING)
    from hta.trace_analysis import TraceAnalysis

    chosen = cases or list(CASES)
    rows = []
    if OUT.exists():
        with open(OUT, newline="") as f:
            rows = [r for r in csv.DictReader(f) if r["case"] not in chosen]
    for case in chosen:
        trace, operators = CASES[case]
        with tempfile.TemporaryDirectory() as work:
            folder = Path(work) / "trace"
            folder.mkdir()
            _with_rank(trace, folder)
            analysis = TraceAnalysis(trace_dir=str(folder), include_last_profiler_step=True)
            rank = next(iter(analysis.t.traces))
            for operator in operators:
                frame = analysis.get_frequent_cuda_kernel_sequences(
                    operator_name=operator, output_dir=work, min_pattern_len=MIN_PATTERN_LEN, rank=rank, top_k=1, visualize=False
                )
                for r in frame.itertuples(index=False):
                    rows.append(
                        {
                            "case": case,
                            "operator_name": operator,
                            "pattern": r.pattern,
                            "count": int(r.count),
                            "gpu_kernel_us": int(r[2]),
                            "cpu_op_us": int(r[3]),
                        }
                    )
                print(f"{case} {operator!r}: {len(frame)} patterns", file=sys.stderr)
    OUT.parent.mkdir(exist_ok=True)
    with open(OUT, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["case", "operator_name", "pattern", "count", "gpu_kernel_us", "cpu_op_us"])
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {OUT} ({len(rows)} rows)", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
