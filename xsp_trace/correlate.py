"""Correlation of one converted run: CPU nesting, launch links, GPU ownership, iterations.

Converters insert a run's spans with parent_id/depth NULL; `correlate_run` then fills them in:
1. CPU spans nest by time containment per thread: the parent is the tightest enclosing span
   (xsp_trace.nesting, vectorised over spans sorted by start; SQL range joins would be
   quadratic per thread).
2. queries/correlate/launches.sql links GPU spans to their API call by (pid, correlation_id).
3. queries/correlate/hierarchy.sql makes each GPU span a child of its API call and numbers model
   spans; `build_ancestors` fills span_ancestors and `inherit_down` passes iterations down the
   tree, both level by level from the roots.
4. queries/correlate/attribution.sql finds the steps and each span's step and own marks;
   `inherit_down` passes phase and forward op down the tree; attribution_insert.sql charges every
   span to its step, phase and (backward work) forward op across threads (docs/design.md, Attribution).
All of it runs under DuckDB's CORRELATE_MEMORY_LIMIT: what does not fit spills, and nothing holds a
row per (span, ancestor) or per span in an aggregate (BENCHMARKS.md, "Correlation under a memory
cap (issue 12)").
"""

from __future__ import annotations

import itertools

import duckdb
import numpy as np
import pyarrow as pa

from .database import insert_relation, memory_limit, run_script
from .formats import kineto_fields as kf
from .naming import KIND_NESTING_RANK, install_phase_rules
from .nesting import nest
from .resources import query_text
from .sql import one_row, scalar, set_variables

_RANK_CASE = "CASE kind " + " ".join(f"WHEN '{k}' THEN {r}" for k, r in KIND_NESTING_RANK.items()) + " ELSE 9 END"


# CPU spans fetched from DuckDB per batch for nesting. A thread's spans are cut where nothing
# before is still open (a span that starts at or after every earlier end), so what is held at once
# is about one batch plus the open run of spans, whatever the trace size (BENCHMARKS.md, "Kineto:
# bounded memory": all 6.5 M CPU spans of a 3 GB trace at once peaked at 1.2 GiB).
NEST_BATCH_SPANS = 500_000


def _open_run_start(thread: np.ndarray, start: np.ndarray, end: np.ndarray) -> int:
    """The first row of the trailing rows that may still be nested in one another or in rows yet
    to come: the rows before it are complete (threads ended, or nothing open when a row starts)."""
    last = int(np.flatnonzero(np.diff(thread))[-1]) + 1 if len(thread) > 1 and thread[-1] != thread[0] else 0
    open_until = np.maximum.accumulate(end[last:])
    cuts = np.flatnonzero(start[last + 1 :] >= open_until[:-1])
    return last + 1 + int(cuts[-1]) if len(cuts) else last


def nest_cpu_spans(con: duckdb.DuckDBPyConnection, run_id: int) -> None:
    """parent_id and depth of the run's CPU spans, streamed from DuckDB in batches (see NEST_BATCH_SPANS)."""
    con.execute("CREATE OR REPLACE TEMP TABLE _xsp_nesting (span_id BIGINT, parent_id BIGINT, depth INTEGER)")
    reader = con.cursor()  # streams the sorted spans while `con` stores the results
    try:
        batches = reader.sql(
            f"""SELECT span_id, coalesce(pid, -1) AS pid_key, tid, start_ns, end_ns FROM spans
                WHERE run_id = ? AND tid IS NOT NULL
                ORDER BY pid, tid, start_ns, end_ns DESC, {_RANK_CASE}, span_id""",
            params=[run_id],
        ).to_arrow_reader(NEST_BATCH_SPANS)
        held = batches.schema.empty_table()
        for batch in itertools.chain(batches, [None]):  # None: the end, all that is held is complete
            if batch is not None:
                held = pa.concat_tables([held, pa.Table.from_batches([batch])]).combine_chunks()
            if held.num_rows == 0:
                continue
            pid, tid = held["pid_key"].to_numpy(), held["tid"].to_numpy()
            start, end = held["start_ns"].to_numpy(), held["end_ns"].to_numpy()
            # Thread number of each row from the sorted (pid, tid): a window over the spans would sort them again.
            thread = np.r_[0, np.cumsum((np.diff(pid) != 0) | (np.diff(tid) != 0))]
            done = held.num_rows if batch is None else _open_run_start(thread, start, end)
            if done == 0:
                continue
            span_ids = held["span_id"].to_numpy()[:done]
            parent_index, depth = nest(thread[:done], start[:done], end[:done])
            has_parent = parent_index >= 0
            parent_ids = pa.array(span_ids[np.where(has_parent, parent_index, 0)], pa.int64(), mask=~has_parent)
            insert_relation(con, "_xsp_nesting", pa.table({"span_id": pa.array(span_ids), "parent_id": parent_ids, "depth": pa.array(depth)}))
            held = held.slice(done)
    finally:
        reader.close()
    con.execute(
        """UPDATE spans SET parent_id = n.parent_id, depth = n.depth
           FROM _xsp_nesting n WHERE spans.run_id = ? AND spans.span_id = n.span_id""",
        [run_id],
    )
    con.execute("DROP TABLE _xsp_nesting")


# DuckDB's memory limit while a run is correlated (BENCHMARKS.md, "Correlation under a memory cap
# (issue 12)"). Not CONVERT_MEMORY_LIMIT: under 500MB an nsys export of 3 M kernels ran out of
# memory (span_ancestors' hash join asks for one 512 MiB table). 3 M kernels: 2.6 GiB peak
# uncapped; 1GB: 1.57 GiB but 62 s instead of 23 s; 2GB: 2.2 GiB at 24 s. 1 M kernels and 1 GB of
# Kineto JSON fit under either. 2GB: the cap that costs no speed on any input measured.
CORRELATE_MEMORY_LIMIT = "2GB"


def correlate_run(con: duckdb.DuckDBPyConnection, run_id: int) -> None:
    with memory_limit(con, CORRELATE_MEMORY_LIMIT):  # spills beyond it
        _correlate_run(con, run_id)


def inherit_down(con: duckdb.DuckDBPyConnection, source: str, columns: list[str], target: str) -> None:
    """`target` (span_id, depth, *columns): each span's own values of `columns`, each NULL one taken
    from its parent's row in `target`, for the spans with any non-NULL value.

    `source` (span_id, parent_id, depth, *columns) holds every span of the run with its own values;
    a parent is always one level up (nesting and launches set depth = parent depth + 1). Level by
    level from the roots, each step joins one level with the level above, so what is held at once
    is about two levels, not every (span, ancestor) pair as an aggregate over span_ancestors
    would (BENCHMARKS.md, "Correlation under a memory cap (issue 12)")."""
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
    one hash table of every span with a parent, which it cannot spill (3 M kernels: 10.0 s and
    1,388 MiB under a 1GB cap, 3.4 s and 821 MiB level by level; BENCHMARKS.md, "span_ancestors
    level by level")."""
    max_depth = scalar(con, "SELECT max(depth) FROM spans WHERE run_id = ? AND parent_id IS NOT NULL", [run_id])
    con.execute("CREATE OR REPLACE TEMP TABLE _xsp_ancestors_above (span_id BIGINT, ancestor_id BIGINT, distance INTEGER)")
    for depth in range(1, (max_depth or 0) + 1):
        con.execute(
            """CREATE OR REPLACE TEMP TABLE _xsp_ancestors_level AS
               SELECT s.span_id, s.parent_id AS ancestor_id, 1 AS distance
               FROM spans AS s WHERE s.run_id = $run AND s.depth = $depth AND s.parent_id IS NOT NULL
               UNION ALL
               SELECT s.span_id, a.ancestor_id, a.distance + 1
               FROM spans AS s JOIN _xsp_ancestors_above AS a ON a.span_id = s.parent_id
               WHERE s.run_id = $run AND s.depth = $depth""",
            {"run": run_id, "depth": depth},
        )
        con.execute("INSERT INTO span_ancestors SELECT ?, span_id, ancestor_id, distance FROM _xsp_ancestors_level", [run_id])
        con.execute("DROP TABLE _xsp_ancestors_above")
        con.execute("ALTER TABLE _xsp_ancestors_level RENAME TO _xsp_ancestors_above")
    con.execute("DROP TABLE _xsp_ancestors_above")


def _correlate_run(con: duckdb.DuckDBPyConnection, run_id: int) -> None:
    nest_cpu_spans(con, run_id)
    run_script(con, query_text("correlate/launches"), run_id)
    run_script(con, query_text("correlate/hierarchy"), run_id)
    build_ancestors(con, run_id)
    # Descendants take the iteration of their nearest ancestor that has one (written by correlate/attribution).
    con.execute(
        "CREATE OR REPLACE TEMP TABLE _xsp_own_iteration AS SELECT span_id, parent_id, depth, iteration FROM spans WHERE run_id = ?",
        [run_id],
    )
    inherit_down(con, "_xsp_own_iteration", ["iteration"], "_xsp_span_iteration")
    con.execute("DROP TABLE _xsp_own_iteration")  # a copy of every span: not held through attribution
    install_phase_rules(con)
    set_variables(con, {"xsp_arg_sequence_number": kf.ARG_SEQUENCE_NUMBER, "xsp_arg_fwd_thread_id": kf.ARG_FWD_THREAD_ID})
    run_script(con, query_text("correlate/attribution"), run_id)
    # Phase and forward op: the nearest self-or-ancestor that marks one (attribution.sql's _xsp_own_attribution).
    inherit_down(con, "_xsp_own_attribution", ["phase_span_id", "forward_span_id"], "_xsp_span_inherited")
    run_script(con, query_text("correlate/attribution_insert"), run_id)
