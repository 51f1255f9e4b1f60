"""Writes the events on HTA's critical path of every ProfilerStep of our Kineto GPU fixtures, one
row per event, as the reference tests/test_critical_path_hta_events.py compares our path's events
against: tests/data/critical_path_hta/hta_step_events.csv.gz.

Run it in a virtual environment holding HolisticTraceAnalysis 0.5.0 and pandas < 3 (as
tests/references/hta_critical_path_steps.py, whose traces and steps it reuses):

    /tmp/hta/bin/python tests/references/hta_critical_path_events.py  # the venv of hta_critical_path_steps.py

Each trace alone in a folder, `critical_path_analysis(rank, annotation="ProfilerStep",
instance_id=i)`; each critical-path edge is attributed to an event by HTA
(`get_critical_path_breakdown`), and the edge weights are summed per event and bound_by class
(a kernel-kernel gap is charged to the earlier kernel, a launch delay to the launch call). An event is named as the
raw trace names it: its full name, its thread (pid, tid) or GPU stream, and its start (HTA's ts: us
from HTA's origin, HTA's rounding) and duration. HTA's origin (`hta_origin_us`, the raw trace's ts of
the first event HTA keeps -- not the trace's first event when HTA drops GPU work whose launch is not in
the trace) is what the steps' windows in hta_steps.csv count from too. Edges of weight zero are left out. Steps
HTA cannot compute (hta_steps.csv records why) have no rows.
"""

from __future__ import annotations

import sys

from hta_critical_path_steps import DATA, TRACES, hta_steps, write_csv  # beside this script (its folder is sys.path[0])

OUT = DATA / "critical_path_hta" / "hta_step_events.csv.gz"
FIELDS = ["trace", "instance", "hta_origin_us", "ts_us", "dur_us", "name", "cat", "pid", "tid", "stream", "bound_by", "on_path_us"]


def _rows(analysis, rank: int, trace: str, instance: int) -> list[dict]:
    origin = int(analysis.t.min_ts)  # the raw ts (us) HTA counts its times from
    try:
        graph, ok = analysis.critical_path_analysis(rank=rank, annotation="ProfilerStep", instance_id=instance)
    except Exception as exc:  # the failures hta_steps.csv records
        print(f"{trace} #{instance}: {type(exc).__name__}", file=sys.stderr)
        return []
    assert ok
    breakdown = graph.get_critical_path_breakdown()
    breakdown = breakdown[breakdown.duration > 0]
    df = graph.trace_df
    rows = []
    for (idx, bound), group in breakdown.groupby(["event_idx", "bound_by"]):
        ev = df.loc[idx]
        rows.append(
            {
                "trace": trace,
                "instance": instance,
                "hta_origin_us": origin,
                "ts_us": int(ev.ts),
                "dur_us": int(ev.dur),
                "name": graph.sym_table[int(ev["name"])],
                "cat": graph.sym_table[int(ev["cat"])],
                "pid": int(ev.pid),
                "tid": int(ev.tid),
                "stream": int(ev.stream),
                "bound_by": bound,
                "on_path_us": int(group.duration.sum()),
            }
        )
    print(f"{trace} #{instance}: {len(rows)} events", file=sys.stderr)
    return rows


def main() -> None:
    rows = []
    for trace, analysis, rank, instance in hta_steps(TRACES if len(sys.argv) < 2 else sys.argv[1:]):
        rows += _rows(analysis, rank, trace, instance)
    write_csv(OUT, FIELDS, rows)


if __name__ == "__main__":
    main()
