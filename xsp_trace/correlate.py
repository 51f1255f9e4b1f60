"""Correlation of one converted run: CPU nesting, launch links, GPU ownership, iterations.

Converters insert a run's spans with parent_id/depth NULL; `correlate_run` then fills them in:
1. CPU spans nest by time containment per thread: the parent is the tightest enclosing span
   (xsp_trace.nesting, vectorised over spans sorted by start; SQL range joins would be
   quadratic per thread).
2. queries/correlate/launches.sql links GPU spans to their API call by (pid, correlation_id).
3. queries/correlate/hierarchy.sql makes each GPU span a child of its API call, builds
   span_ancestors, and assigns iterations along the tree.
4. queries/correlate/attribution.sql finds the steps and charges every span to its step, phase
   and (backward work) forward op across threads (docs/design.md, Attribution).
"""

from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa

from .database import insert_relation, run_script
from .formats import kineto_fields as kf
from .naming import KIND_NESTING_RANK, install_phase_rules
from .nesting import nest
from .resources import query_text
from .sql import set_variables

_RANK_CASE = "CASE kind " + " ".join(f"WHEN '{k}' THEN {r}" for k, r in KIND_NESTING_RANK.items()) + " ELSE 9 END"


def nest_cpu_spans(con: duckdb.DuckDBPyConnection, run_id: int) -> None:
    cols = con.execute(
        f"""SELECT span_id, pid, tid, start_ns, end_ns FROM spans
            WHERE run_id = ? AND tid IS NOT NULL
            ORDER BY pid, tid, start_ns, end_ns DESC, {_RANK_CASE}, span_id""",
        [run_id],
    ).fetchnumpy()
    span_ids = np.asarray(cols["span_id"], dtype=np.int64)
    if len(span_ids) == 0:
        return
    # Thread number of each row from the sorted (pid, tid): a window over the spans would sort them again.
    pid = np.asarray(cols["pid"].filled(-1) if np.ma.isMaskedArray(cols["pid"]) else cols["pid"], dtype=np.int64)
    tid = np.asarray(cols["tid"], dtype=np.int64)
    thread = np.r_[0, np.cumsum((np.diff(pid) != 0) | (np.diff(tid) != 0))]
    parent_index, depth = nest(
        thread,
        np.asarray(cols["start_ns"], dtype=np.int64),
        np.asarray(cols["end_ns"], dtype=np.int64),
    )
    has_parent = parent_index >= 0
    parent_ids = pa.array(span_ids[np.where(has_parent, parent_index, 0)], pa.int64(), mask=~has_parent)
    table = pa.table({"span_id": pa.array(span_ids), "parent_id": parent_ids, "depth": pa.array(depth)})
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
    run_script(con, query_text("correlate/launches"), run_id)
    run_script(con, query_text("correlate/hierarchy"), run_id)
    install_phase_rules(con)
    set_variables(con, {"xsp_arg_sequence_number": kf.ARG_SEQUENCE_NUMBER, "xsp_arg_fwd_thread_id": kf.ARG_FWD_THREAD_ID})
    run_script(con, query_text("correlate/attribution"), run_id)
