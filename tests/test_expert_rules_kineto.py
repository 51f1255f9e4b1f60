"""The expert-rule analyses (nsys analyze's rules over the schema) on PyTorch profiler traces: rows
equal to what the rules' logic gives on the raw Kineto JSON, read here with the standard library.

The reference applies nsys 2022.4's rule queries (rules/*.py beside nsys) to the raw events:
copies and sets (`gpu_memcpy`/`Memcpy`, `gpu_memset`/`Memset`, memory kinds from the event name
"Memcpy DtoH (Device -> Pageable)" / "Memset (Device)"), the runtime or driver call with the same
correlation id (`cuda_runtime`/`cuda_driver`/`Runtime`), GPU work per (launching process, device),
user annotations as the NVTX ranges of `nvtx=`. The API-name patterns are nsys's SQL LIKE patterns
(case-insensitive), written out here, not imported from xsp_trace.formats.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from pathlib import Path

import pytest

from kineto_cases import GPU_CASES, KINETO_TRACES, load_raw
from xsp_trace.analyze.session import AnalysisOptions, open_session, run_analysis
from xsp_trace.analyze.settings import set_rule_variables

pytestmark = pytest.mark.slow  # real traces

CALLS = {"cuda_runtime", "cuda_driver", "Runtime"}
GPU = {"kernel": "kernel", "Kernel": "kernel", "gpu_memcpy": "memcpy", "Memcpy": "memcpy", "gpu_memset": "memset", "Memset": "memset"}
HOST = {"cpu_op", "Operator", "user_annotation", "cuda_runtime", "cuda_driver", "Runtime"}
MEMCPY_NAME = re.compile(r"^Memcpy (\w+) \(([\w ]+) -> ([\w ]+)\)$")
MEMSET_NAME = re.compile(r"^Memset \(([\w ]+)\)$")
ASYNC_MEMCPY = re.compile(r"^cudaMemcpy.*Async", re.I)  # LIKE 'cudaMemcpy%Async%'
SYNC_MEMCPY = re.compile(r"^cudaMemcpy", re.I)  # LIKE 'cudaMemcpy%' AND NOT LIKE '%Async%'
SYNC_MEMSET = re.compile(r"^cudaMemset", re.I)  # LIKE 'cudaMemset%' AND NOT LIKE '%async%'
SYNC_API = re.compile(r"^(cudaDeviceSynchronize|cudaStreamSynchronize)", re.I)
RULES = ("cuda_async_memcpy", "cuda_sync_memcpy", "cuda_sync_memset", "cuda_sync_api", "gpu_starvation", "gpu_low_utilization")
BIG = 10**7


def _ns(us) -> int:
    return int((Decimal(str(us)) * 1000).to_integral_value())


class Raw:
    """The events of one trace the rules read."""

    def __init__(self, path: Path):
        events = [e for e in load_raw(path)["traceEvents"] if e.get("ph") == "X"]
        self.calls = []
        by_correlation = {}
        self.ranges = []
        hosts = set()
        for e in events:
            cat, args = e.get("cat"), e.get("args") or {}
            start, end = _ns(e["ts"]), _ns(Decimal(str(e["ts"])) + Decimal(str(e.get("dur", 0))))
            if cat in HOST:
                hosts.add(e["pid"])
            if cat in CALLS:
                call = {"name": e["name"], "start": start, "end": end, "pid": e["pid"], "tid": e["tid"]}
                self.calls.append(call)
                if args.get("correlation") is not None:
                    by_correlation[args["correlation"]] = call
            if cat == "user_annotation":
                self.ranges.append({"name": e["name"], "start": start, "end": end, "pid": e["pid"], "tid": e["tid"]})
        self.ops = []
        for e in events:
            kind = GPU.get(e.get("cat"))
            if kind is None:
                continue
            args = e.get("args") or {}
            call = by_correlation.get(args.get("correlation"))
            if call is None:
                assert len(hosts) == 1, "a GPU event without a launch in a trace of several processes"
            start = _ns(e["ts"])
            self.ops.append(
                {
                    "kind": kind,
                    "name": e["name"],
                    "start": start,
                    "end": _ns(Decimal(str(e["ts"])) + Decimal(str(e["dur"]))),
                    "pid": call["pid"] if call else next(iter(hosts)),
                    "device": int(args.get("device", e["pid"])),
                    "stream": args.get("stream"),
                    "bytes": args.get("bytes"),
                    "call": call,
                }
            )


def _window(raw: Raw, settings: dict) -> dict | None:
    """nsys's filter_time_range: explicit start/end, else the first range named `nvtx`; None when it is missing."""
    win = {"start": settings.get("start", -(2**63)), "end": settings.get("end", 2**63 - 1), "pid": None, "tid": None}
    if "nvtx" in settings:
        found = sorted((r for r in raw.ranges if r["name"] == settings["nvtx"]), key=lambda r: r["start"])
        if not found:
            return None
        first = found[0]
        win.update(start=settings.get("start", first["start"]), end=settings.get("end", first["end"]), pid=first["pid"])
        win["tid"] = first["tid"] if first["tid"] != first["pid"] else None
    return win


def _inside(win: dict, start: int, end: int, pid, tid=None) -> bool:
    return end >= win["start"] and start < win["end"] and win["pid"] in (None, pid) and (win["tid"] is None or tid is None or tid == win["tid"])


def _top(rows: list[dict], rows_limit: int) -> list[dict]:
    return sorted(rows, key=lambda r: (-r["duration_ns"], r["start_ns"]))[:rows_limit]


def _memops(raw: Raw, win: dict, kind: str) -> list[dict]:
    return [o for o in raw.ops if o["kind"] == kind and o["call"] is not None and _inside(win, o["start"], o["end"], o["pid"])]


def _copy_row(o: dict) -> dict:
    m = MEMCPY_NAME.match(o["name"])
    return {
        "duration_ns": o["end"] - o["start"],
        "start_ns": o["start"],
        "src_kind": m.group(2) if m else None,
        "dst_kind": m.group(3) if m else None,
        "bytes": o["bytes"],
        "pid": o["pid"],
        "device_id": o["device"],
        "stream_id": o["stream"],
        "api_name": o["call"]["name"],
    }


def _gaps(ops: list[dict], gap_ns: int) -> list[dict]:
    out = []
    for (pid, device), group in _per_gpu(ops).items():
        reach = None
        for o in sorted(group, key=lambda o: o["start"]):
            if reach is not None and o["start"] > reach and o["start"] - reach > gap_ns:
                out.append({"duration_ns": o["start"] - reach, "start_ns": reach, "pid": pid, "device_id": device})
            reach = o["end"] if reach is None else max(reach, o["end"])
    out.sort(key=lambda g: (-g["duration_ns"], g["start_ns"]))
    return [{"row_num": i, **g} for i, g in enumerate(out, 1)]


def _per_gpu(ops: list[dict]) -> dict[tuple, list[dict]]:
    groups: dict[tuple, list[dict]] = {}
    for o in ops:
        groups.setdefault((o["pid"], o["device"]), []).append(o)
    return groups


def _low_use(ops: list[dict], chunks: int, threshold: float) -> list[dict]:
    regions = []
    for (pid, device), group in _per_gpu(ops).items():
        first, last = min(o["start"] for o in group), max(o["end"] for o in group)
        size = math.ceil(float(last - first) / chunks)
        low = []
        for k in range(chunks):
            cs, ce = k * size + first, min(k * size + first + size, last)
            if cs >= ce:
                continue
            used = sum(min(o["end"], ce) - max(o["start"], cs) for o in group if o["start"] < ce and o["end"] > cs)
            pct = used / (ce - cs) * 100
            if pct < threshold:
                low.append((k, cs, ce, pct))
        runs: list[list] = []
        for item in low:
            if runs and runs[-1][-1][0] == item[0] - 1:
                runs[-1].append(item)
            else:
                runs.append([item])
        for run in runs:
            weighted = sum((ce - cs) * pct for _, cs, ce, pct in run) / sum(ce - cs for _, cs, ce, _ in run)
            start = run[0][1]
            regions.append(
                # SQLite's round(x, 1): half away from zero
                {
                    "in_use_pct": math.floor(weighted * 10 + 0.5) / 10,
                    "duration_ns": run[-1][2] - start,
                    "start_ns": start,
                    "pid": pid,
                    "device_id": device,
                }
            )
    regions.sort(key=lambda r: (r["in_use_pct"], r["duration_ns"], r["start_ns"]))
    return [{"row_num": i, **r} for i, r in enumerate(regions, 1)]


def expected(raw: Raw, settings: dict) -> dict[str, list[dict]]:
    """The rows of each rule on the raw events."""
    rows_limit = settings.get("rows", 50)
    win = _window(raw, settings)
    if win is None:
        return {rule: [] for rule in RULES}
    copies = [_copy_row(o) for o in _memops(raw, win, "memcpy")]
    memsets = []
    for o in _memops(raw, win, "memset"):
        m = MEMSET_NAME.match(o["name"])
        kind = m.group(1) if m else None
        if SYNC_MEMSET.match(o["call"]["name"]) and "async" not in o["call"]["name"].lower() and kind in ("Pinned", "Managed"):
            memsets.append({**{k: v for k, v in _copy_row(o).items() if k not in ("src_kind", "dst_kind")}, "memory_kind": kind})
    syncs = [
        {"duration_ns": c["end"] - c["start"], "start_ns": c["start"], "pid": c["pid"], "tid": c["tid"], "api_name": c["name"]}
        for c in raw.calls
        if SYNC_API.match(c["name"]) and _inside(win, c["start"], c["end"], c["pid"], c["tid"])
    ]
    gpu_ops = [o for o in raw.ops if o["start"] > 0 and _inside(win, o["start"], o["end"], o["pid"])]
    gaps = _gaps(gpu_ops, settings.get("gap", 500) * 1_000_000)
    low = _low_use(gpu_ops, settings.get("chunks", 30), settings.get("threshold", 50))
    return {
        "cuda_async_memcpy": _top(
            [c for c in copies if ASYNC_MEMCPY.match(c["api_name"]) and "Pageable" in (c["src_kind"], c["dst_kind"])], rows_limit
        ),
        "cuda_sync_memcpy": _top(
            [
                c
                for c, o in zip(copies, _memops(raw, win, "memcpy"), strict=True)
                if SYNC_MEMCPY.match(c["api_name"])
                and "async" not in c["api_name"].lower()
                and not (c["bytes"] is not None and c["bytes"] <= 64000 and MEMCPY_NAME.match(o["name"]).group(1) == "HtoD")
            ],
            rows_limit,
        ),
        "cuda_sync_memset": _top(memsets, rows_limit),
        "cuda_sync_api": _top(syncs, rows_limit),
        "gpu_starvation": gaps[:rows_limit],
        "gpu_low_utilization": low[:rows_limit],
    }


def _settings(raw: Raw) -> dict[str, dict]:
    starts = [o["start"] for o in raw.ops]
    ends = [o["end"] for o in raw.ops]
    lo, hi = min(starts), max(ends)
    cases = {
        "defaults": {"rows": BIG},
        "gap0_chunks10_threshold80": {"rows": BIG, "gap": 0, "chunks": 10, "threshold": 80},
        "window": {"rows": BIG, "gap": 0, "start": lo + (hi - lo) // 3, "end": lo + 2 * (hi - lo) // 3},
        "rows3": {"rows": 3, "gap": 0},
    }
    steps = sorted((r for r in raw.ranges if r["name"].startswith("ProfilerStep#")), key=lambda r: r["start"])
    if steps:
        cases["nvtx_step"] = {"rows": BIG, "gap": 0, "threshold": 100, "nvtx": steps[-1]["name"]}
    return cases


def _sort_key(row: dict) -> tuple:
    return tuple(sorted((k, str(v)) for k, v in row.items()))


@pytest.mark.parametrize("case", GPU_CASES)
def test_rules_equal_raw_kineto(case, converted_path):
    raw = Raw(KINETO_TRACES[case])
    database = converted_path(KINETO_TRACES[case])
    compared = 0
    con = open_session(database, AnalysisOptions())
    # --set start / end and the start_ns shown are after the run's origin; the reference reads the trace clock.
    (origin,) = con.execute("SELECT origin_ns FROM runs").fetchone()
    for case_id, settings in _settings(raw).items():
        reference = expected(raw, settings)
        set_rule_variables(con, {k: v - origin if k in ("start", "end") else v for k, v in settings.items()})
        for rule in RULES:
            ours = run_analysis(con, rule).records()
            for row in ours:
                assert row.pop("run_id") == 1
                row.pop("bytes_mb", None)
                row["start_ns"] += origin
            theirs = reference[rule]
            if rule in ("gpu_starvation", "gpu_low_utilization"):
                assert ours == theirs, (case, case_id, rule)
            else:  # equal durations come in no defined order
                assert sorted(ours, key=_sort_key) == sorted(theirs, key=_sort_key), (case, case_id, rule)
                assert [r["duration_ns"] for r in ours] == sorted((r["duration_ns"] for r in ours), reverse=True)
            compared += len(theirs)
    con.close()
    assert compared > 0


@pytest.mark.parametrize("case", ["kineto_2022_integer_us_rank3", "kineto_2025_all_options_h100"])
def test_memset_memory_kind_from_the_event_name(case, converted):
    """cuda_sync_memset reads a set's memory kind (memops.dst_kind): for Kineto, the kind its name gives."""
    raw = Raw(KINETO_TRACES[case])
    names = sorted((o["start"], MEMSET_NAME.match(o["name"]).group(1)) for o in raw.ops if o["kind"] == "memset")
    con = converted(KINETO_TRACES[case])
    ours = con.execute(
        "SELECT s.start_ns, m.dst_kind FROM memops AS m JOIN spans AS s USING (run_id, span_id) WHERE m.kind = 'memset' ORDER BY 1, 2"
    ).fetchall()
    assert names and [tuple(r) for r in ours] == names
