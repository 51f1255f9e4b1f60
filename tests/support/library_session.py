"""An analysis session on a converted database with SQL library modules loaded, for tests that read
the library's views directly (a session loads only what the analyses it runs include)."""

from __future__ import annotations

import duckdb

from xsp_trace.analyze.session import AnalysisOptions, prepare
from xsp_trace.analyze.sql_library import include

# Every op's perf-model row keyed by its Kineto "External id", the key TraceLens' tables use.
OP_PERF_BY_EXTERNAL_ID = (
    "SELECT a.value, o.name, o.model, o.flops, o.bytes, o.not_modelled_key, o.kernel_ns FROM xsp_op_perf AS o "
    "JOIN span_args AS a ON a.run_id = o.run_id AND a.span_id = o.span_id AND a.key = 'External id'"
)


def with_modules(con: duckdb.DuckDBPyConnection, *modules: str) -> duckdb.DuckDBPyConnection:
    """`con` prepared as `analyze` prepares a session, with `modules` (e.g. "lib/op_perf") loaded."""
    prepare(con, AnalysisOptions())
    include(con, *modules)
    return con
