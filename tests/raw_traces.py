"""The GPU fixtures read straight from the raw files -- Kineto JSON with the standard library, nsys
exports with sqlite3 -- into plain lists, for tests that check what xsp-trace says about a trace
against the trace itself. Nothing here imports xsp_trace: the category names, tables and
column names are written out from the formats' own documentation and the files.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

from conftest import DATA, NSYS_EXPORTS
from kineto_cases import GPU_CASES, KINETO_TRACES, load_raw

GPU_FIXTURES = {
    **{case: [path] for case, path in NSYS_EXPORTS.items()},
    **{case: [KINETO_TRACES[case]] for case in GPU_CASES},
    "kineto_cuda_graphs_v100_2022": [DATA / "kineto_cuda_graphs_v100_2022" / "hta_v100_cuda_graphs_rank1_2022.json.gz"],
    "kineto_hip_graphs_mi300x_vllm": [DATA / "kineto_hip_graphs_mi300x_vllm" / "tracelens_mi300x_vllm_full_graph_decode.json.gz"],
    "kineto_two_ranks_sendrecv": sorted((DATA / "kineto_two_ranks_sendrecv").glob("sampled_rank-*.json.gz")),
    "kineto_pageable_dtoh_a100": [DATA / "kineto_pageable_dtoh_a100" / "hta_a100_pageable_dtoh_rank0.json.gz"],
}

_KINETO_GPU = {"kernel": "kernel", "Kernel": "kernel", "gpu_memcpy": "memcpy", "Memcpy": "memcpy", "gpu_memset": "memset", "Memset": "memset"}
_KINETO_CALLS = {"cuda_runtime", "cuda_driver", "Runtime"}
_KINETO_NOT_CPU = {"gpu_user_annotation", "cuda_sync", "Trace", "overhead"}
_STEP = re.compile(r"^ProfilerStep#(\d+)$")
_VERSION_SUFFIX = re.compile(r"_v\d+$")


@dataclass
class Gpu:
    device: int
    start: int
    end: int
    kind: str  # kernel, memcpy, memset
    name: str
    pid: int | None  # the launching process (correlation ids are unique per process)
    correlation: int | None
    pageable: bool = False
    nbytes: int = 0


@dataclass
class Cpu:
    pid: int
    tid: int
    start: int
    end: int
    name: str
    correlation: int | None  # set on runtime / driver API calls
    is_call: bool


@dataclass
class RawRun:
    gpu: list[Gpu] = field(default_factory=list)
    cpu: list[Cpu] = field(default_factory=list)
    steps: list[tuple[int, int, int, int]] = field(default_factory=list)  # (pid, iteration, start, end)

    def calls(self) -> dict[tuple, Cpu]:
        if "_calls" not in self.__dict__:
            self.__dict__["_calls"] = {(c.pid, c.correlation): c for c in self.cpu if c.is_call and c.correlation is not None}
        return self.__dict__["_calls"]

    def launch_of(self, op: Gpu) -> Cpu | None:
        return self.calls().get((op.pid, op.correlation))

    def launched_by(self, call: Cpu) -> list[Gpu]:
        """The GPU operations a call launched (same process and correlation id)."""
        if "_launched" not in self.__dict__:
            index: dict[tuple, list[Gpu]] = {}
            for g in self.gpu:
                index.setdefault((g.pid, g.correlation), []).append(g)
            self.__dict__["_launched"] = index
        return self.__dict__["_launched"].get((call.pid, call.correlation), []) if call.correlation is not None else []

    def starting_at(self, device: int, start: int) -> list[Gpu]:
        """The GPU operations of `device` starting at `start`."""
        if "_starts" not in self.__dict__:
            index: dict[tuple, list[Gpu]] = {}
            for g in self.gpu:
                index.setdefault((g.device, g.start), []).append(g)
            self.__dict__["_starts"] = index
        return self.__dict__["_starts"].get((device, start), [])


def _ns(us) -> int:
    return int((Decimal(us) * 1000).to_integral_value())


def _kineto(path: Path) -> RawRun:
    run = RawRun()
    events = [e for e in load_raw(path)["traceEvents"] if e.get("ph") == "X"]
    calls = {}
    for e in events:
        cat, args = e.get("cat"), e.get("args", {})
        start, end = _ns(e["ts"]), _ns(Decimal(e["ts"]) + Decimal(e.get("dur", 0)))
        if cat in _KINETO_GPU:
            continue
        if cat in _KINETO_NOT_CPU:
            continue
        c = Cpu(e["pid"], e["tid"], start, end, e["name"], args.get("correlation"), cat in _KINETO_CALLS)
        run.cpu.append(c)
        if c.is_call:
            calls[c.correlation] = c
        m = _STEP.match(e["name"])
        if m and cat == "user_annotation":
            run.steps.append((e["pid"], int(m.group(1)), start, end))
    for e in events:
        kind = _KINETO_GPU.get(e.get("cat"))
        if kind is None:
            continue
        args = e.get("args", {})
        call = calls.get(args.get("correlation"))
        run.gpu.append(
            Gpu(
                int(args.get("device", e["pid"])),
                _ns(e["ts"]),
                _ns(Decimal(e["ts"]) + Decimal(e["dur"])),
                kind,
                e["name"],
                call.pid if call else None,
                args.get("correlation"),
                kind == "memcpy" and "Pageable" in e["name"],
                int(args.get("bytes", 0) or 0),
            )
        )
    return run


def _nsys(path: Path) -> RawRun:
    run = RawRun()
    raw = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    strings = dict(raw.execute("SELECT id, value FROM StringIds"))
    tables = {r[0] for r in raw.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    # Exports before ENUM_CUDA_MEM_KIND use the same codes: 0 = Pageable (nsys export schema documentation).
    pageable = {i for (i,) in raw.execute("SELECT id FROM ENUM_CUDA_MEM_KIND WHERE label = 'Pageable'")} if "ENUM_CUDA_MEM_KIND" in tables else {0}
    if "CUPTI_ACTIVITY_KIND_KERNEL" in tables:
        for dev, s, e, corr, gpid, name in raw.execute(
            'SELECT deviceId, start, "end", correlationId, globalPid, demangledName FROM CUPTI_ACTIVITY_KIND_KERNEL'
        ):
            run.gpu.append(Gpu(dev, s, e, "kernel", strings.get(name, ""), gpid >> 24, corr))
    if "CUPTI_ACTIVITY_KIND_MEMCPY" in tables:
        for dev, s, e, corr, gpid, nbytes, src, dst in raw.execute(
            'SELECT deviceId, start, "end", correlationId, globalPid, bytes, srcKind, dstKind FROM CUPTI_ACTIVITY_KIND_MEMCPY'
        ):
            run.gpu.append(Gpu(dev, s, e, "memcpy", "memcpy", gpid >> 24, corr, bool({src, dst} & pageable), nbytes))
    if "CUPTI_ACTIVITY_KIND_MEMSET" in tables:
        for dev, s, e, corr, gpid in raw.execute('SELECT deviceId, start, "end", correlationId, globalPid FROM CUPTI_ACTIVITY_KIND_MEMSET'):
            run.gpu.append(Gpu(dev, s, e, "memset", "memset", gpid >> 24, corr))
    for s, e, gtid, corr, name in raw.execute('SELECT DISTINCT start, "end", globalTid, correlationId, nameId FROM CUPTI_ACTIVITY_KIND_RUNTIME'):
        run.cpu.append(Cpu(gtid >> 24, gtid & 0xFFFFFF, s, e, _VERSION_SUFFIX.sub("", strings[name]), corr, True))
    if "NVTX_EVENTS" in tables:  # push/pop (59) and start/end (60) ranges
        for s, e, gtid, text, text_id in raw.execute(
            'SELECT start, "end", globalTid, text, textId FROM NVTX_EVENTS WHERE eventType IN (59, 60) AND "end" IS NOT NULL'
        ):
            name = text if text is not None else strings.get(text_id, "")
            run.cpu.append(Cpu(gtid >> 24, gtid & 0xFFFFFF, s, e, name, None, False))
            m = _STEP.match(name)
            if m:
                run.steps.append((gtid >> 24, int(m.group(1)), s, e))
    return run


def raw_runs(case: str) -> dict[int, RawRun]:
    """Run id (as convert numbers the files, from 1) -> the raw run."""
    return {i: (_nsys(p) if p.suffix == ".sqlite" else _kineto(p)) for i, p in enumerate(GPU_FIXTURES[case], 1)}


def merge(intervals) -> list[list[int]]:
    out: list[list[int]] = []
    for s, e in sorted(intervals):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def overlap(a: list[list[int]], b: list[list[int]]) -> int:
    """Length of the intersection of two merged interval lists."""
    total, i, j = 0, 0, 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        total += max(0, hi - lo)
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def clipped(merged: list[list[int]], lo: int, hi: int) -> int:
    return sum(max(0, min(e, hi) - max(s, lo)) for s, e in merged)
