"""Which ranges are a run's steps (training iterations, inferences), the same for every format.

By default the ranges named ProfilerStep#N, whatever their category (Kineto annotation or
operator, NVTX range: xsp_trace/formats/kineto_fields.py); with `convert --step-ranges REGEX`, the
ranges whose name matches REGEX, for traces recorded without ProfilerStep. The iteration is the
first integer of the name, else the order (queries/correlate/step_ranges.sql). Steps are a table
written when a trace is converted, so the option belongs to convert: analyze and diff read them.
"""

from __future__ import annotations

import duckdb

from ..errors import InputError, one_line
from ..formats import kineto_fields as kf
from ..resources import query_text
from ..store.connection import duckdb_connect
from ..store.database import run_script
from ..store.sql import set_variables

# The span kinds that are ranges a program opened and closed (API calls, GPU work and OS calls are not).
STEP_RANGE_KINDS = ("model", "layer", "annotation", "op")
OPTION = "--step-ranges"


def check_step_ranges(pattern: str | None) -> str | None:
    """`pattern` if it is a regular expression DuckDB can run (RE2 syntax), else InputError; None stays None."""
    if pattern is None:
        return None
    if pattern == "":
        raise InputError(None, f"{OPTION} '' matches every range", "give a regular expression naming the step ranges, e.g. 'train_step'")
    con = duckdb_connect()
    try:
        con.execute("SELECT regexp_matches('', ?)", [pattern]).fetchone()
    except duckdb.Error as exc:
        problem = str(exc).removeprefix("Invalid Input Error: ")
        raise InputError(
            None,
            f"{OPTION} {pattern!r} is not a regular expression ({one_line(problem)})",
            "write one in RE2 syntax (no lookaround or backreferences), e.g. '^train_step'",
        ) from None
    finally:
        con.close()
    return pattern


def name_step_ranges(con: duckdb.DuckDBPyConnection, run_id: int, pattern: str | None) -> None:
    """Give the step ranges of the run (ProfilerStep#N, else those `pattern` names) their iteration.
    With a pattern, the ranges it names are the steps even in a run with model ranges (correlate/attribution)."""
    set_variables(
        con,
        {
            "xsp_step_pattern": pattern if pattern is not None else kf.PROFILER_STEP_PATTERN,
            "xsp_step_name_prefix": "" if pattern is not None else kf.PROFILER_STEP_PREFIX,
            "xsp_step_range_kinds": list(STEP_RANGE_KINDS),
            "xsp_model_ranges_are_steps": pattern is None,
        },
    )
    run_script(con, query_text("correlate/step_ranges"), run_id)
