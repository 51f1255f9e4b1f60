"""Kineto test traces and the independent references the Kineto tests compare with.

References are computed from the raw JSON with the standard library (json.load of these small
copies is fine here; the converter itself never loads a whole trace) or by Holistic Trace
Analysis, never by the code under test.
"""

from __future__ import annotations

import gzip
import json
import logging
import math
import shutil
from collections import defaultdict
from decimal import Decimal
from pathlib import Path

DATA = Path(__file__).parent / "data"

KINETO_TRACES = {
    "kineto_2021_format": DATA / "kineto_2021_format" / "hta_2021_format_inference.json.gz",
    "kineto_2022_integer_us_rank3": DATA / "kineto_2022_integer_us_rank3" / "hta_a100_rank3_of_8_2022.json.gz",
    "kineto_2024_ns_resolution": DATA / "kineto_2024_ns_resolution" / "hta_v100_ns_resolution_2024.json.gz",
    "kineto_nccl_collectives": DATA / "kineto_nccl_collectives" / "hta_a100_nccl_allreduce.json.gz",
    "kineto_cuda_sync_alexnet": DATA / "kineto_cuda_sync_alexnet" / "hta_a100_alexnet.json.gz",
    "kineto_triton_cuda_driver": DATA / "kineto_triton_cuda_driver" / "hta_a100_triton.json.gz",
    "kineto_rocm_mi250": DATA / "kineto_rocm_mi250" / "hta_mi250_rocm62_minitoy.json.gz",
    "kineto_cpu_only": DATA / "kineto_cpu_only" / "hta_cpu_only.json.gz",
    "kineto_2025_all_options_h100": DATA / "kineto_2025_all_options_h100" / "tracelens_h100_qwen1.5_0.5b.json.gz",
    "kineto_relative_ts_b200": DATA / "kineto_relative_ts_b200" / "tracelens_b200_eager.json.gz",
}
GPU_CASES = [case for case in KINETO_TRACES if case != "kineto_cpu_only"]

# Written out here on purpose (not imported from xsp_trace.formats): the references must not
# share the converter's tables.
RAW_KERNEL_CATEGORIES = {"kernel", "Kernel"}
RAW_LAUNCH_CATEGORIES = {"cuda_runtime", "cuda_driver", "Runtime"}


def load_raw(path: Path) -> dict:
    """The whole trace, numbers with a fraction as Decimal (exact)."""
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return json.load(f, parse_float=Decimal)


def raw_linked_kernel_count(raw: dict) -> int:
    """Kernels whose args.correlation appears on a CPU runtime/driver event."""
    events = [e for e in raw["traceEvents"] if e.get("ph") == "X"]
    launch_ids = {e["args"]["correlation"] for e in events if e.get("cat") in RAW_LAUNCH_CATEGORIES and "correlation" in e.get("args", {})}
    return sum(1 for e in events if e.get("cat") in RAW_KERNEL_CATEGORIES and e.get("args", {}).get("correlation") in launch_ids)


def hta_kernel_reference(path: Path, workdir: Path) -> dict:
    """Holistic Trace Analysis on a copy of the trace: per kernel name, count and total duration.

    Returns {"kernels": {name: (count, sum_us)}, "breakdown": {name: sum_us}, "rounds": bool}:
    "kernels" from HTA's parsed trace (kernel events), "breakdown" from get_gpu_kernel_breakdown
    for the names whose GPU rows in HTA are all kernels.
    HTA needs distributedInfo.rank and one trace per rank in a folder: traces without a rank
    get rank 0 patched into the copy (the events are untouched). "rounds" says whether HTA
    rounded this trace: for float timestamps it replaces ts by ceil(ts) and the end by
    floor(ts + dur) in float64 microseconds (hta.common.trace_parser.round_down_time_stamps).
    """
    logging.disable(logging.WARNING)
    from hta.trace_analysis import TraceAnalysis

    folder = workdir / "hta_trace"
    folder.mkdir(parents=True, exist_ok=True)
    copy = folder / path.name
    raw = load_raw(path)
    if "rank" not in raw.get("distributedInfo", {}):
        raw.setdefault("distributedInfo", {})["rank"] = 0
        with gzip.open(copy, "wt", encoding="utf-8") as f:
            json.dump(raw, f, default=_decimal_text)
    else:
        shutil.copyfile(path, copy)
    analysis = TraceAnalysis(trace_dir=str(folder), include_last_profiler_step=True)
    rank = next(iter(analysis.t.traces))
    df = analysis.t.get_trace(rank)
    symbols = analysis.t.symbol_table.get_sym_table()
    kernel_rows = df[df["stream"].ne(-1) & df["cat"].map(lambda c: symbols[c] in RAW_KERNEL_CATEGORIES)]
    kernels: dict[str, list] = defaultdict(lambda: [0, 0.0])
    for name_id, dur in zip(kernel_rows["name"], kernel_rows["dur"], strict=True):
        entry = kernels[symbols[name_id]]
        entry[0] += 1
        entry[1] += float(dur)
    # The breakdown itself, every name kept (no "others" bucket).
    _, per_name = analysis.get_gpu_kernel_breakdown(visualize=False, num_kernels=10**9, duration_ratio=1.0, include_memory_kernels=True)
    breakdown = dict(zip(per_name["name"], per_name["sum (us)"], strict=True))
    # HTA counts every event with an integer args.stream as GPU work; Triton launches are
    # cpu_op events with "stream": 0 named like their kernel, which its breakdown then adds in.
    gpu_rows = df[df["stream"].ne(-1)]
    not_kernels = {symbols[n] for n, c in zip(gpu_rows["name"], gpu_rows["cat"], strict=True) if symbols[c] not in RAW_KERNEL_CATEGORIES}
    breakdown = {name: total for name, total in breakdown.items() if name not in not_kernels}
    # HTA rounds when pandas reads the ts column as float64, i.e. when some ts is written as a
    # JSON number with a fraction part (its rounded column is int64 afterwards, so ask the JSON).
    rounds = any(isinstance(e.get("ts"), Decimal) for e in raw["traceEvents"])
    return {"kernels": {k: tuple(v) for k, v in kernels.items()}, "breakdown": breakdown, "rounds": rounds}


def _decimal_text(value):
    if isinstance(value, Decimal):
        return float(value)  # only in the patched copy; float repr round-trips 3-decimal µs of these traces
    raise TypeError(type(value))


def hta_rounded_duration_us(start_ns: int, end_ns: int, rounds: bool) -> float:
    """Duration in µs as HTA computes it from the JSON text (see hta_kernel_reference)."""
    if not rounds:
        return (end_ns - start_ns) / 1000
    ts = start_ns / 1000  # == float(ts text): both are the correctly rounded float64
    dur = (end_ns - start_ns) / 1000
    return float(math.floor(ts + dur) - math.ceil(ts))


def as_hta_reads_it(path: Path, workdir: Path) -> Path:
    """The trace as HTA 0.5 reads it: float µs timestamps rounded inward to whole µs (ts -> ceil,
    end -> floor; hta.common.trace_parser.round_down_time_stamps); an integer-µs trace unchanged."""
    raw = load_raw(path)
    if not any(isinstance(e.get("ts"), Decimal) for e in raw["traceEvents"]):
        return path
    for e in raw["traceEvents"]:
        if "ts" not in e:
            continue
        start = float(e["ts"])
        e["ts"] = math.ceil(start)
        if "dur" in e:  # an event rounded to nothing (end before start in HTA) keeps no time
            e["dur"] = max(0, math.floor(start + float(e["dur"])) - e["ts"])
    copy = workdir / "as_hta" / path.name
    copy.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(copy, "wt", encoding="utf-8") as f:
        json.dump(raw, f, default=_decimal_text)
    return copy
