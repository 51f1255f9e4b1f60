"""Correlation of one converted run: CPU nesting, launch links, GPU ownership, iterations.

Converters insert a run's spans with parent_id/depth NULL; `correlate_run` then fills them in:
1. CPU spans nest by time containment per thread: the parent is the tightest enclosing span
   (a stack walk over the spans sorted by start; done in Python because SQL range joins are
   quadratic per thread).
2. queries/correlate_launches.sql links GPU spans to their API call by (pid, correlation_id).
3. queries/correlate_hierarchy.sql makes each GPU span a child of its API call, builds
   span_ancestors, and assigns iterations.
"""

from __future__ import annotations

import duckdb
import pyarrow as pa

from .database import insert_relation, run_script
from .naming import KIND_NESTING_RANK
from .resources import query_text

_RANK_CASE = "CASE kind " + " ".join(f"WHEN '{k}' THEN {r}" for k, r in KIND_NESTING_RANK.items()) + " ELSE 9 END"


def nest_cpu_spans(con: duckdb.DuckDBPyConnection, run_id: int) -> None:
    cols = con.execute(
        f"""SELECT span_id, pid, tid, start_ns, end_ns FROM spans
            WHERE run_id = ? AND tid IS NOT NULL
            ORDER BY pid, tid, start_ns, end_ns DESC, {_RANK_CASE}, span_id""",
        [run_id],
    ).fetchnumpy()
    n = len(cols["span_id"])
    if n == 0:
        return
    span_ids = cols["span_id"].tolist()
    threads = list(zip(cols["pid"].tolist(), cols["tid"].tolist()))
    starts = cols["start_ns"].tolist()
    ends = cols["end_ns"].tolist()
    parents = [None] * n
    depths = [0] * n
    stack: list[int] = []  # indices of open spans, outermost first
    current_thread = None
    for i in range(n):
        if threads[i] != current_thread:
            current_thread = threads[i]
            stack.clear()
        start, end = starts[i], ends[i]
        while stack and ends[stack[-1]] <= start:
            stack.pop()
        # The top of the stack is the tightest open span; if it only partly overlaps (crossing
        # start/end ranges), the tightest container is further down.
        for j in range(len(stack) - 1, -1, -1):
            if ends[stack[j]] >= end:
                parents[i] = span_ids[stack[j]]
                depths[i] = depths[stack[j]] + 1
                break
        stack.append(i)
    table = pa.table(
        {
            "span_id": pa.array(span_ids, pa.int64()),
            "parent_id": pa.array(parents, pa.int64()),
            "depth": pa.array(depths, pa.int32()),
        }
    )
    con.execute("CREATE OR REPLACE TEMP TABLE _xsp_nesting (span_id BIGINT, parent_id BIGINT, depth INTEGER)")
    insert_relation(con, "_xsp_nesting", table)
    con.execute(
        """UPDATE spans SET parent_id = n.parent_id, depth = n.depth
           FROM _xsp_nesting n WHERE spans.run_id = ? AND spans.span_id = n.span_id""",
        [run_id],
    )
    con.execute("DROP TABLE _xsp_nesting")


def correlate_run(con: duckdb.DuckDBPyConnection, run_id: int) -> None:
    nest_cpu_spans(con, run_id)
    run_script(con, query_text("correlate_launches"), run_id)
    run_script(con, query_text("correlate_hierarchy"), run_id)


