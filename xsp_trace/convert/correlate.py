"""Correlation of one converted run: CPU nesting, launch links, GPU ownership, iterations.

Converters insert a run's spans with parent_id/depth NULL; `correlate_run` then fills them in:
1. CPU spans nest by time containment per thread: the parent is the tightest enclosing span
   (xsp_trace.convert.nesting, vectorised over spans sorted by start; SQL range joins would be
   quadratic per thread), one window of start times at a time.
2. queries/correlate/launches.sql links GPU spans to their API call by (pid, correlation_id).
3. queries/correlate/step_ranges.sql gives the step ranges (ProfilerStep#N in any category, or
   those `convert --step-ranges` names) their iteration (xsp_trace.convert.step_ranges);
   queries/correlate/hierarchy.sql makes each GPU span a child of its API call and numbers model
   spans; `build_ancestors` fills span_ancestors and `inherit_down` passes iterations down the
   tree, both level by level from the roots.
4. queries/correlate/attribution.sql finds the steps and each span's step and own marks;
   `inherit_down` passes phase and forward op down the tree; attribution_insert.sql charges every
   span to its step, phase and (backward work) forward op across threads (docs/design.md, Attribution),
   one range of span ids at a time.
All of it runs under DuckDB's CONVERT_MEMORY_LIMIT (as the converters): what does not fit spills, and nothing holds
all CPU spans sorted, a hash table of the whole tree, a row per (span, ancestor) or per span in an
aggregate (BENCHMARKS.md, "Correlation and memory").
"""

from __future__ import annotations

from functools import partial

import duckdb
import numpy as np
import pyarrow as pa

from ..formats import kineto_fields as kf
from ..naming import KIND_NESTING_RANK, install_phase_rules
from ..read_ahead import read_ahead
from ..resources import query_text
from ..store.connection import CONVERT_MEMORY_LIMIT, memory_limit
from ..store.database import run_script
from ..store.sql import one_row, scalar, set_variables
from .nesting import nest, separate_threads, thread_starts
from .step_ranges import name_step_ranges

_RANK_CASE = "CASE kind " + " ".join(f"WHEN '{k}' THEN {r}" for k, r in KIND_NESTING_RANK.items()) + " ELSE 9 END"


# CPU spans nested per window of start times holding about this many spans: one window, plus the
# spans still open at its end, is what nesting holds, whatever the trace size; one sort of every CPU
# span spilled under the cap (BENCHMARKS.md, "Correlation and memory").
NEST_BATCH_SPANS = 500_000
# Spans sampled per window to place its bounds (windows come out within a few % of NEST_BATCH_SPANS).
NEST_SAMPLE_SPANS = 200

_NEST_COLUMNS = ("span_id", "pid_null", "pid_key", "tid", "start_ns", "end_ns")


def _window_bounds(con: duckdb.DuckDBPyConnection, run_id: int) -> list[int]:
    """Start times cutting the run's CPU spans into windows of about NEST_BATCH_SPANS spans (none: one window)."""
    where = "run_id = ? AND tid IS NOT NULL"
    count = scalar(con, f"SELECT count(*) FROM spans WHERE {where}", [run_id])
    windows = -(-count // NEST_BATCH_SPANS)
    if windows <= 1:
        return []
    quantiles = ", ".join(repr(i / windows) for i in range(1, windows))
    # Quantiles of a sample of ~NEST_SAMPLE_SPANS per window, by a hash of the span id: the same cuts
    # on every run (approx_quantile's differ), and no stride of span ids lines up with the sample.
    step = max(1, NEST_BATCH_SPANS // NEST_SAMPLE_SPANS)
    sample = f" AND hash(span_id) % {step} = 0" if step > 1 else ""
    bounds = scalar(con, f"SELECT quantile_disc(start_ns, [{quantiles}]) FROM spans WHERE {where}{sample}", [run_id])
    # Bounds are start times of spans, duplicates collapsed: spans starting at the same time are in one window.
    return sorted({b for b in bounds or () if b is not None})


def _open_runs(thread: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Which rows (sorted per thread) may still enclose spans yet to come: per thread, the rows from the
    last one that starts at or after every earlier end of its thread (nothing before it is still open).
    All threads at once: with their times apart (separate_threads), a running maximum of the ends
    over all rows is each thread's own, and every thread's first row starts after it."""
    n = len(thread)
    if n == 0:
        return np.zeros(0, dtype=bool)
    start, end = separate_threads(thread, start, end)
    open_until = np.maximum.accumulate(end)
    rows = np.arange(n)
    cut = np.r_[True, start[1:] >= open_until[:-1]]
    last_cut = np.maximum.accumulate(np.where(cut, rows, 0))
    firsts = thread_starts(thread)
    last_rows = np.r_[firsts[1:], n] - 1
    return rows >= np.repeat(last_cut[last_rows], np.diff(np.r_[firsts, n]))


def nest_cpu_spans(con: duckdb.DuckDBPyConnection, run_id: int) -> None:
    """parent_id and depth of the run's CPU spans, nested one window of start times at a time (see NEST_BATCH_SPANS).

    A span's parent and depth depend only on the spans before it on its thread (the enclosing ones
    start first), so each span is nested and stored in the window it starts in; what earlier
    windows leave open (_open_runs) is carried along only as the spans that may enclose it."""
    bounds = _window_bounds(con, run_id)
    windows = [_start_between(lo, hi) for lo, hi in zip([None, *bounds], [*bounds, None], strict=True)]
    held = {c: np.empty(0, dtype=np.bool_ if c == "pid_null" else np.int64) for c in _NEST_COLUMNS}
    reader = con.cursor()  # reads each window while `con` stores the results
    try:
        # The next window is read (DuckDB, without the GIL) while this one is nested and stored:
        # windows are disjoint in start time and the read takes none of the columns the UPDATE sets.
        read = partial(_read_window, reader, run_id)
        for in_window, new in zip(windows, read_ahead(read, windows, "xsp-nest-read"), strict=True):
            if new.num_rows:
                held, nested = _nest_window(held, {c: new[c].to_numpy() for c in _NEST_COLUMNS})
                _store_nesting(con, run_id, nested, in_window)
    finally:
        reader.close()


def _read_window(reader: duckdb.DuckDBPyConnection, run_id: int, in_window: str) -> pa.Table:
    """The CPU spans starting in one window, sorted as `nest` takes them (per thread, by start, outer first)."""
    return reader.sql(
        f"""SELECT span_id, pid IS NULL AS pid_null, coalesce(pid, -1) AS pid_key, tid, start_ns, end_ns FROM spans
            WHERE run_id = ? AND tid IS NOT NULL {in_window}
            ORDER BY pid, tid, start_ns, end_ns DESC, {_RANK_CASE}, span_id""",
        params=[run_id],
    ).to_arrow_table()


def _start_between(lo: int | None, hi: int | None) -> str:
    return "".join([f" AND spans.start_ns >= {lo}" if lo is not None else "", f" AND spans.start_ns < {hi}" if hi is not None else ""])


def _nest_window(held: dict, new: dict) -> tuple[dict, pa.Table]:
    """Nest one window's spans (`new`, sorted) under the rows `held` open from earlier windows:
    (the rows still open at the window's end, the window's spans with their parent_id and depth)."""
    rows = {c: np.concatenate([held[c], new[c]]) for c in _NEST_COLUMNS}
    is_new = np.arange(len(rows["span_id"])) >= len(held["span_id"])
    if len(held["span_id"]):
        # Held rows start before this window: a stable sort by thread puts each thread's held rows before its new ones.
        order = np.lexsort((rows["tid"], rows["pid_key"], rows["pid_null"]))
        rows = {c: v[order] for c, v in rows.items()}
        is_new = is_new[order]
    pid_null, pid, tid = rows["pid_null"], rows["pid_key"], rows["tid"]
    thread = np.r_[0, np.cumsum((np.diff(pid_null) != 0) | (np.diff(pid) != 0) | (np.diff(tid) != 0))]
    start, end, span_ids = rows["start_ns"], rows["end_ns"], rows["span_id"]
    parent_index, depth = nest(thread, start, end)
    parent_index, depth = parent_index[is_new], depth[is_new]
    has_parent = parent_index >= 0
    parent_ids = pa.array(span_ids[np.where(has_parent, parent_index, 0)], pa.int64(), mask=~has_parent)
    keep = _open_runs(thread, start, end)
    # In span id order: DuckDB's UPDATE then meets the rows in table order (Kineto's span ids
    # interleave threads, and in thread order these UPDATEs were far slower).
    order = np.argsort(span_ids[is_new], kind="stable")
    nested = pa.table({"span_id": span_ids[is_new][order], "parent_id": parent_ids.take(pa.array(order)), "depth": depth[order]})
    return {c: v[keep] for c, v in rows.items()}, nested


def _store_nesting(con: duckdb.DuckDBPyConnection, run_id: int, nested: pa.Table, start_between: str) -> None:
    """UPDATE the window's spans, found by start time (zone maps skip the other row groups). One
    UPDATE per window: one UPDATE of every result held them all and was slower under a cap
    (BENCHMARKS.md, "Correlation and memory")."""
    con.register("_xsp_nested", nested)
    try:
        con.execute(
            f"""UPDATE spans SET parent_id = n.parent_id, depth = n.depth FROM _xsp_nested n
                WHERE spans.run_id = ? AND spans.tid IS NOT NULL {start_between} AND spans.span_id = n.span_id""",
            [run_id],
        )
    finally:
        con.unregister("_xsp_nested")


def correlate_run(con: duckdb.DuckDBPyConnection, run_id: int, step_ranges: str | None = None) -> None:
    """Correlate the run; `step_ranges`: the regular expression naming its steps (None: ProfilerStep#N)."""
    with memory_limit(con, CONVERT_MEMORY_LIMIT):  # the converters' cap; spills beyond it
        _correlate_run(con, run_id, step_ranges)


def inherit_down(con: duckdb.DuckDBPyConnection, source: str, columns: list[str], target: str) -> None:
    """`target` (span_id, depth, *columns): each span's own values of `columns`, each NULL one taken
    from its parent's row in `target`, for the spans with any non-NULL value.

    `source` (span_id, parent_id, depth, *columns) holds every span of the run with its own values;
    a parent is always one level up (nesting and launches set depth = parent depth + 1). Level by
    level from the roots, each step joins one level with the level above, so what is held at once
    is about two levels, not every (span, ancestor) pair as an aggregate over span_ancestors
    would (BENCHMARKS.md, "Correlation and memory")."""
    con.execute(f"CREATE OR REPLACE TEMP TABLE {target} AS SELECT span_id, depth, {', '.join(columns)} FROM {source} LIMIT 0")
    # Levels from the shallowest span with a value of its own down: above it nothing has one (nsys
    # runs have no phases or iterations at all, and skip the loop).
    own = " OR ".join(f"{c} IS NOT NULL" for c in columns)
    min_depth, max_depth = one_row(con, f"SELECT min(depth) FILTER ({own}), max(depth) FROM {source}")
    values = ", ".join(f"coalesce(t.{c}, p.{c}) AS {c}" for c in columns)
    any_value = " OR ".join(f"coalesce(t.{c}, p.{c}) IS NOT NULL" for c in columns)
    for depth in range(min_depth, max_depth + 1) if min_depth is not None else ():
        con.execute(
            f"""INSERT INTO {target}
                SELECT t.span_id, t.depth, {values}
                FROM {source} AS t
                LEFT JOIN {target} AS p ON p.depth = t.depth - 1 AND p.span_id = t.parent_id
                WHERE t.depth = ? AND ({any_value})""",
            [depth],
        )


def build_ancestors(con: duckdb.DuckDBPyConnection, run_id: int) -> None:
    """span_ancestors of the run: every (span, ancestor, distance) along parent_id.

    Level by level from the roots (a parent is always one level up, correlate/hierarchy.sql): the
    rows of the spans at depth d are their parent at distance 1 and, one further, the rows of
    their parent, which sits in the level before. Each step joins one level's spans with the
    level above's rows, a hash join DuckDB can spill; a recursive CTE over the whole tree holds
    one hash table of every span with a parent, which it cannot spill (BENCHMARKS.md, "Correlation
    and memory"). Each level's rows are computed once (a TEMP table, under the convert's cap)
    and go into span_ancestors; only those of spans with children are kept for the next level:
    most spans are leaves (kernels, copies, API calls that launch nothing)."""
    max_depth = scalar(con, "SELECT max(depth) FROM spans WHERE run_id = ? AND parent_id IS NOT NULL", [run_id])
    con.execute("CREATE OR REPLACE TEMP TABLE _xsp_ancestors_above (span_id BIGINT, ancestor_id BIGINT, distance INTEGER)")
    level = """SELECT s.span_id, s.parent_id AS ancestor_id, 1 AS distance
               FROM spans AS s WHERE s.run_id = $run AND s.depth = $depth AND s.parent_id IS NOT NULL
               UNION ALL
               SELECT s.span_id, a.ancestor_id, a.distance + 1
               FROM spans AS s JOIN _xsp_ancestors_above AS a ON a.span_id = s.parent_id
               WHERE s.run_id = $run AND s.depth = $depth"""
    # For the next level: only the rows of spans with children (see above).
    with_children = """SELECT * FROM _xsp_ancestors_level
                       WHERE span_id IN (SELECT parent_id FROM spans WHERE run_id = $run AND depth = $depth + 1)"""
    for depth in range(1, (max_depth or 0) + 1):
        params = {"run": run_id, "depth": depth}
        con.execute(f"CREATE OR REPLACE TEMP TABLE _xsp_ancestors_level AS {level}", params)
        con.execute("INSERT INTO span_ancestors SELECT $run, * FROM _xsp_ancestors_level", {"run": run_id})
        if depth < max_depth:
            con.execute(f"CREATE OR REPLACE TEMP TABLE _xsp_ancestors_above AS {with_children}", params)
        con.execute("DROP TABLE _xsp_ancestors_level")
    con.execute("DROP TABLE _xsp_ancestors_above")


# Span ids per correlate/attribution_insert statement. Its joins build hash tables of the spans'
# steps and inherited marks: over a whole run they set the convert's peak (BENCHMARKS.md, "Correlation
# and memory").
ATTRIBUTION_BATCH_SPANS = 1_000_000


def insert_attribution(con: duckdb.DuckDBPyConnection, run_id: int) -> None:
    """The run's `attribution` rows, one range of ATTRIBUTION_BATCH_SPANS span ids at a time, in span id order."""
    low, high = one_row(con, "SELECT min(span_id), max(span_id) FROM spans WHERE run_id = ?", [run_id])
    for lo in range(low, high + 1, ATTRIBUTION_BATCH_SPANS) if low is not None else ():
        set_variables(con, {"xsp_span_lo": lo, "xsp_span_hi": lo + ATTRIBUTION_BATCH_SPANS - 1})
        run_script(con, query_text("correlate/attribution_insert"), run_id)


def _correlate_run(con: duckdb.DuckDBPyConnection, run_id: int, step_ranges: str | None) -> None:
    run_script(con, query_text("correlate/origin"), run_id)
    nest_cpu_spans(con, run_id)
    run_script(con, query_text("correlate/launches"), run_id)
    name_step_ranges(con, run_id, step_ranges)  # before hierarchy: model ranges are numbered only in runs without steps
    run_script(con, query_text("correlate/hierarchy"), run_id)
    build_ancestors(con, run_id)
    # Descendants take the iteration of their nearest ancestor that has one (written by correlate/attribution).
    # A run without iterations (nsys) inherits nothing: read in place instead of copying every span.
    own_iteration = f"SELECT span_id, parent_id, depth, iteration FROM spans WHERE run_id = {int(run_id)}"
    if scalar(con, f"SELECT count(*) FROM ({own_iteration} AND iteration IS NOT NULL LIMIT 1)"):
        con.execute(f"CREATE OR REPLACE TEMP TABLE _xsp_own_iteration AS {own_iteration}")
        inherit_down(con, "_xsp_own_iteration", ["iteration"], "_xsp_span_iteration")
        con.execute("DROP TABLE _xsp_own_iteration")  # a copy of every span: not held through attribution
    else:
        inherit_down(con, f"({own_iteration})", ["iteration"], "_xsp_span_iteration")
    install_phase_rules(con)
    set_variables(con, {"xsp_arg_sequence_number": kf.ARG_SEQUENCE_NUMBER, "xsp_arg_fwd_thread_id": kf.ARG_FWD_THREAD_ID})
    run_script(con, query_text("correlate/attribution"), run_id)
    # Phase and forward op: the nearest self-or-ancestor that marks one (attribution.sql's _xsp_own_attribution).
    inherit_down(con, "_xsp_own_attribution", ["phase_span_id", "forward_span_id"], "_xsp_span_inherited")
    insert_attribution(con, run_id)
    run_script(con, query_text("correlate/attribution_drop"), run_id)
