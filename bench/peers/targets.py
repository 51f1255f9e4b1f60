"""The acceptance thresholds of the peers benchmark, read from targets.json beside this file (one
data file: a target moves there, never in the code that judges it), and issue 12's verdicts on a
run (issue 27's are in same_job.py, beside the peers they compare with)."""

from __future__ import annotations

import json
from pathlib import Path

TARGETS: dict[str, dict[str, float]] = {
    group: values for group, values in json.loads((Path(__file__).with_name("targets.json")).read_text()).items() if isinstance(values, dict)
}
ISSUE_12, ISSUE_27, ISSUE_48 = TARGETS["issue_12"], TARGETS["issue_27"], TARGETS["issue_48"]


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def issue_12(result: dict) -> list[str]:
    """Issue 12's targets, each with the figure of this run it is judged on."""
    rows = []
    n = [r for r in result["nsys"] if r.get("nsys_stats")]
    if n:
        million = min(n, key=lambda r: abs(r["kernels"] - 1_000_000))
        ratio = million["xsp"]["seconds"] / million["nsys_stats"]["seconds"]
        at_most, stretch = ISSUE_12["nsys_convert_vs_stats_time"], ISSUE_12["nsys_convert_vs_stats_time_stretch"]
        rows.append(
            (
                f"nsys {million['kernels']:,} kernels -> DuckDB + kernel summary <= {at_most:g}x `nsys stats gpukernsum` (stretch <= {stretch:g}x)",
                f"{ratio:.2f}x ({million['xsp']['seconds']:.1f} s vs {million['nsys_stats']['seconds']:.1f} s)",
                _verdict(ratio <= at_most) + (" (stretch met)" if ratio <= stretch else ""),
            )
        )
        faster = ISSUE_12["later_summary_speedup"]
        for q in million.get("summaries", []):
            s = q.get("nsys_stats")
            if not s:
                continue
            query, whole = s["seconds"] / q["query_seconds"], s["seconds"] / q["xsp"]["seconds"]
            more = ">" if s.get("timed_out") else ""
            rows.append(
                (
                    f"later summary `{q['module']}` >= {faster:g}x faster than `nsys stats {q['report']}`",
                    f"query {more}{query:.0f}x; whole process {more}{whole:.1f}x",
                    _verdict(query >= faster) + " (query)" + ("" if whole >= faster else f"; whole process below {faster:g}x"),
                )
            )
    big = [r for r in result["nsys"] if r["kernels"] >= 900_000]
    flat = ISSUE_12["peak_flat_tolerance"]
    if len(big) > 1:
        low, high = big[0]["xsp"]["peak_mib"], big[-1]["xsp"]["peak_mib"]
        rows.append(
            (
                f"nsys peak RSS flat from {big[0]['kernels']:,} to {big[-1]['kernels']:,} kernels (+-{flat * 100:g} %)",
                f"{low:.0f} -> {high:.0f} MiB ({(high / low - 1) * 100:+.0f} %)",
                _verdict(abs(high / low - 1) <= flat),
            )
        )
    k = result["kineto"]
    with_hta = [r for r in k if r.get("hta")]
    if with_hta:
        gb = max(with_hta, key=lambda r: r["json_bytes"])
        speed = gb["hta"]["seconds"] / gb["xsp"]["seconds"]
        rss = gb["xsp"]["peak_mib"] / gb["hta"]["peak_mib"]
        rows.append(
            (
                f"Kineto {gb['input'].split()[-1]}: >= {ISSUE_12['kineto_vs_hta_speedup']:g}x faster than HTA load + kernel breakdown",
                f"{speed:.1f}x ({gb['xsp']['seconds']:.1f} s vs {gb['hta']['seconds']:.1f} s)",
                _verdict(speed >= ISSUE_12["kineto_vs_hta_speedup"]),
            )
        )
        rows.append(
            (
                f"Kineto {gb['input'].split()[-1]}: peak RSS <= {ISSUE_12['kineto_vs_hta_peak']:g}x HTA's and <= {ISSUE_12['kineto_peak_bytes'] / 1e9:g} GB",
                f"{rss:.2f}x, {gb['xsp']['peak_mib']:.0f} MiB vs {gb['hta']['peak_mib']:.0f} MiB",
                _verdict(rss <= ISSUE_12["kineto_vs_hta_peak"] and gb["xsp"]["peak_mib"] * 2**20 <= ISSUE_12["kineto_peak_bytes"]),
            )
        )
    if len(k) > 1:
        low = k[0]["xsp"]["peak_mib"]
        spread = ", ".join(f"{r['input'].split()[-1]} {r['xsp']['peak_mib']:.0f} MiB ({(r['xsp']['peak_mib'] / low - 1) * 100:+.0f} %)" for r in k)
        rows.append(
            (
                f"Kineto peak RSS flat (+-{flat * 100:g} %) from {k[0]['input'].split()[-1]} up",
                spread,
                _verdict(all(abs(r["xsp"]["peak_mib"] / low - 1) <= flat for r in k)),
            )
        )
    if not rows:
        return []
    return (
        ["### Targets of issue 12, judged on this run", "", "| target | this run | verdict |", "| --- | --- | --- |"]
        + [f"| {t} | {m} | {v} |" for t, m, v in rows]
        + [""]
    )
