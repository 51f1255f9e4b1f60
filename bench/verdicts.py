"""The verdicts table of docs/verdicts.md: for every Kineto and nsys trace in tests/data, the top
finding, the gain it states, the what-if replay's prediction for the same rule (recomputed here),
HTA 0.5's idle-time breakdown (Kineto traces HTA reads; `include_last_profiler_step=True`,
per-stream idle summed over streams; for nsys exports and traces HTA cannot read, HTA's definition
as analyses/gpu_idle_breakdown.sql computes it -- equal to HTA where HTA reads the trace,
tests/test_gpu_idle_breakdown.py) and whether they agree.

Agreement, per trace: the stated gain equals the replay's; and the top finding's cause fits HTA's
breakdown of the idle time -- a host-side cause (CPU work, launches, waits with the GPU idle) where
host wait is HTA's largest idle category or the GPU is idle under 20 % of the time; GPU computation
where the GPU is idle under 20 %; a stream stalled on another stream where HTA's "other" is the
largest idle category.

    python -m bench.verdicts > /tmp/verdicts.md
"""

from __future__ import annotations

import logging
import shutil
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"

HOST_CAUSES = {"data_loading", "cpu_before_gpu", "cpu_bound", "optimizer", "launch_overhead", "sync_gpu_idle", "unrecorded_cpu_time"}
IDLE_LOW = 0.2  # a GPU idle less than this share of the time: nothing but its own work sets its pace


def traces() -> list[Path]:
    found = sorted(DATA.glob("kineto_*/*.json.gz")) + sorted(DATA.glob("nsys_*/*.sqlite")) + sorted(DATA.glob("nsys_2022_cpu*/*.nsys-rep"))
    return [p for p in found if "newer_nsys" not in str(p)]


def hta_idle(trace: Path) -> dict[str, float] | None:
    """HTA's idle time by category (ns, summed over streams and ranks), or None where HTA cannot read it."""
    logging.disable(logging.WARNING)
    from hta.trace_analysis import TraceAnalysis

    with tempfile.TemporaryDirectory() as folder:
        shutil.copy(trace, folder)
        try:
            analysis = TraceAnalysis(trace_dir=folder, include_last_profiler_step=True)
            rank = next(iter(analysis.t.traces))
            result = analysis.get_idle_time_breakdown(ranks=[rank], visualize=False)
        except Exception:  # noqa: BLE001 -- HTA rejects some formats (no rank, CPU only): no reference then
            return None
    frame = result[0] if isinstance(result, tuple) else result
    out: dict[str, float] = {}
    for category, ns in zip(frame["idle_category"], frame["idle_time"], strict=True):
        out[str(category)] = out.get(str(category), 0.0) + float(ns) * 1000  # HTA works in µs
    return out


def verdict(trace: Path, work: Path) -> dict:
    from xsp_trace.analyze.critical_path.what_if import parse_rule, step_gain
    from xsp_trace.analyze.findings.find import find
    from xsp_trace.analyze.session import open_session, run_analysis
    from xsp_trace.convert.common import ConvertOptions
    from xsp_trace.convert.local import convert_files

    database = work / (trace.name.split(".")[0] + ".duckdb")
    convert_files([trace], database, ConvertOptions())
    con = open_session(database)
    found = [f for f in find(con) if f.kind != "healthy"]
    busy = run_analysis(con, "gpu_busy_idle").records()
    idle_share = max((1 - float(r["busy_pct"]) / 100 for r in busy if r["window_ns"]), default=None)
    ours = {"host_wait": 0.0, "kernel_wait": 0.0, "other": 0.0}
    for r in run_analysis(con, "gpu_idle_breakdown").records():
        if r["per"] == "stream":
            for key, column in (("host_wait", "host_wait_ns"), ("kernel_wait", "kernel_wait_ns"), ("other", "other_ns")):
                ours[key] += float(r[column])
    row = {"trace": f"{trace.parent.name}/{trace.name}", "top": "-", "severity": "", "stated": "-", "replay": "-", "idle_share": idle_share}
    row["ours"] = ours if sum(ours.values()) > 0 else None
    if found:
        top = found[0]
        row.update(top=top.kind, severity=f"{100 * top.severity:.1f} %")
        if "what_if" in top.facts:
            measured, predicted = step_gain(con, top.facts["run_id"], top.facts["iterations"], [parse_rule(top.facts["what_if"])])
            row["stated"] = f"{top.facts['predicted_ns'] / 1e6:.3f} ms"
            row["replay"] = f"{predicted / 1e6:.3f} ms of {measured / 1e6:.3f}"
            row["gain_agrees"] = top.facts["predicted_ns"] == predicted
    con.close()
    return row


def agrees(row: dict, idle: dict[str, float] | None) -> str:
    if row["top"] == "-":
        return "n/a"
    if row.get("gain_agrees") is False:
        return "no (gain)"
    if idle is None or row["idle_share"] is None:
        return "gain only" if "gain_agrees" in row else "n/a"
    largest = max(idle, key=lambda k: idle[k]) if idle else None
    low = row["idle_share"] < IDLE_LOW
    if row["top"] in HOST_CAUSES:
        ok = largest == "host_wait" or low
    elif row["top"] == "gpu_bound":
        ok = low
    elif row["top"] == "stream_wait":
        ok = largest == "other"
    else:
        return "n/a"
    return "yes" if ok else "no"


def main() -> None:
    print("| trace | top finding | severity | stated: predicted step time | replay (same rule) | HTA idle: host / kernel / other | agree |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as folder:
        for trace in traces():
            row = verdict(trace, Path(folder))
            idle = hta_idle(trace) if trace.name.endswith(".json.gz") else None
            source = "HTA"
            if idle is None:
                idle, source = row["ours"], "definition"
            if idle:
                total = sum(idle.values()) or 1
                hta = " / ".join(f"{100 * idle.get(k, 0) / total:.0f} %" for k in ("host_wait", "kernel_wait", "other")) + f" ({source})"
            else:
                hta = "-"
            print(f"| {row['trace']} | {row['top']} | {row['severity']} | {row['stated']} | {row['replay']} | {hta} | {agrees(row, idle)} |")


if __name__ == "__main__":
    main()
