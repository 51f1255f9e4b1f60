"""Which GPU work the analyses count: the whole trace (`--scope all`, the default) or only the work
launched inside the profiled steps (`--scope profiled`, as Holistic Trace Analysis 0.5 counts it with
include_last_profiler_step=True; HTA's default also drops the work launched in the last step).

The set left out under `profiled` is queries/lib/scope.sql (xsp_unprofiled_gpu_work);
applying the scope shadows `spans` and `memops` with TEMP views without those rows, so every
analysis reads the same narrowed data, as with --iteration / --window.
"""

from __future__ import annotations

import duckdb

from ..errors import InputError
from ..resources import query_text
from ..store.sql import quote_identifier as _quote
from ..store.sql import scalar

SCOPES = ("all", "profiled")
DEFAULT_SCOPE = "all"
# The analyses whose figures depend on the scope most (GPU busy, idle and communication time):
# their printed tables get a note saying what they counted.
SCOPE_NOTED_ANALYSES = ("gpu_busy_idle", "gpu_idle_gaps", "gpu_idle_breakdown", "gpu_utilization_bins", "comm_compute_split", "comm_compute_overlap")
_UNPROFILED = "xsp_unprofiled_gpu_work"


def check_scope(scope: str) -> None:
    if scope not in SCOPES:
        raise InputError(None, f"--scope {scope!r} is not a scope", "pass --scope all (every GPU operation) or --scope profiled (as HTA)")


def _find_unprofiled(con: duckdb.DuckDBPyConnection) -> None:
    """Fill xsp_unprofiled_gpu_work from the spans as the session sees them now (once)."""
    if not scalar(con, f"SELECT count(*) FROM duckdb_tables() WHERE temporary AND table_name = '{_UNPROFILED}'"):
        con.execute(query_text("lib/scope"))


def apply_scope(con: duckdb.DuckDBPyConnection, scope: str, spans_source: str, memops_source: str) -> None:
    """Under `profiled`, shadow spans and memops (read from the given sources) without the unprofiled work."""
    check_scope(scope)
    if scope == "all":
        return
    _find_unprofiled(con)
    con.execute(f"CREATE OR REPLACE TEMP VIEW spans AS SELECT s.* FROM {spans_source} AS s ANTI JOIN {_UNPROFILED} AS o USING (run_id, span_id)")
    con.execute(f"CREATE OR REPLACE TEMP VIEW memops AS SELECT m.* FROM {memops_source} AS m ANTI JOIN {_UNPROFILED} AS o USING (run_id, span_id)")


def scope_notes(con: duckdb.DuckDBPyConnection, scope: str, analyses: list[str]) -> list[str]:
    """One line per run saying what the scope-dependent analyses among `analyses` counted."""
    noted = [a for a in analyses if a in SCOPE_NOTED_ANALYSES]
    if not noted:
        return []
    if scope == "all":
        _find_unprofiled(con)  # from the unscoped spans: what --scope profiled would leave out
    rows = con.execute(f"SELECT run_id, count(*), sum(duration_ns) FROM {_quote(_UNPROFILED)} GROUP BY run_id ORDER BY run_id").fetchall()
    which = ", ".join(noted)
    if scope == "all":
        if not rows:  # nothing would differ under --scope profiled
            return []
        lines = [
            f"note: scope all: {which} count every GPU kernel, copy and set of the trace, whenever launched "
            "(--scope profiled counts only work launched in the profiled steps, as HTA 0.5 with include_last_profiler_step=True)"
        ]
        lines += [
            f"note: run {run}: {n} GPU operations ({total / 1e6:.3f} ms) were launched before the trace or after its last step; "
            "HTA 0.5 leaves them out (--scope profiled)"
            for run, n, total in rows
        ]
    else:
        lines = [
            f"note: scope profiled: {which} count only GPU work launched in each run's profiled steps (as HTA 0.5 with include_last_profiler_step=True)"
        ]
        lines += [
            f"note: run {run}: left out {n} GPU operations ({total / 1e6:.3f} ms) launched before the trace or after its last step"
            for run, n, total in rows
        ]
    return lines
