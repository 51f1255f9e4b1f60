"""An analysis session: a read-only database, optionally narrowed to some runs, with the device peaks
filled in; each analysis loads the modules of the SQL library (queries/lib/, xsp_trace/analyze/sql_library.py) it
includes when it first runs.

Everything it adds is TEMP, so the database file is never written. Runs are selected by
shadowing each table with a TEMP view of the selected runs' rows (the SQL files stay plain).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from ..errors import InputError
from ..naming import LAYER_RANGE_PRESETS, install_name_macros, layer_range_pattern
from ..resources import query_text
from ..store.database import runs_with_origin
from ..store.opening import open_store
from ..store.run_alignment import TIME_ZEROS, Alignment, create_time_zeros
from ..store.schema import expected_tables, table_ddl
from ..store.sql import quote_identifier as _quote
from ..store.sql import scalar, set_variables
from ..timebase import format_time
from .catalog import BY_NAME
from .critical_path.walk import build_critical_path
from .critical_path.what_if import build_what_if
from .facts import fact_variables, fill_device_peaks, load_format_tables
from .scope import DEFAULT_SCOPE, apply_scope, check_scope
from .settings import set_rule_variables
from .sql_library import include


@dataclass
class AnalysisOptions:
    runs: list[int] | None = None  # None = every run
    peak_flops: float | None = None  # override every device's peak FLOP/s
    peak_dram_bytes_per_s: float | None = None
    compare: tuple[int, int] | None = None  # runs for compare_runs
    trim: float | None = None  # trimmed-mean fraction (default 0.2)
    layer_ranges: str | None = None  # regex (or xsp_trace.naming preset) of ranges to treat as layers
    layer_depth: int | None = None  # nesting level among those ranges (1 = outermost); None = innermost
    iterations: list[int] | None = None  # only spans and steps of these iterations (step numbers)
    window_ns: tuple[int, int] | None = None  # only spans starting in [start, end) after each run's time zero
    align: Alignment = "origin"  # where window_ns counts from (xsp_trace/store/run_alignment.py): origin or utc
    settings: dict[str, int | str] | None = None  # --set NAME=VALUE (xsp_trace/analyze/settings.py)
    what_if: tuple[str, ...] = ()  # rules of analyze --what-if (xsp_trace.analyze.critical_path.what_if), checked before use
    scope: str = DEFAULT_SCOPE  # "all": every GPU operation; "profiled": as HTA 0.5 with include_last_profiler_step=True (analyze/scope.py)


@dataclass
class Result:
    name: str
    title: str
    columns: list[str]
    rows: list[tuple] = field(default_factory=list)

    def records(self) -> list[dict]:
        return [dict(zip(self.columns, row, strict=True)) for row in self.rows]


def _main_tables(con: duckdb.DuckDBPyConnection, catalog: str) -> dict[str, list[str]]:
    rows = con.execute(
        "SELECT table_name, list(column_name ORDER BY column_index) FROM duckdb_columns() "
        "WHERE database_name = ? AND schema_name = 'main' GROUP BY table_name",
        [catalog],
    ).fetchall()
    return {name: cols for name, cols in rows}


def prepare(con: duckdb.DuckDBPyConnection, options: AnalysisOptions, path: Path | str = "database") -> None:
    """Load the selection, stand-ins, device peaks and settings into `con` (the SQL library's modules
    come with the analyses that include them: xsp_trace.analyze.sql_library.include)."""
    catalog = scalar(con, "SELECT current_database()")
    check_scope(options.scope)
    tables = _main_tables(con, catalog)
    if options.runs:
        known = {r[0] for r in con.execute("SELECT run_id FROM runs").fetchall()}
        missing = sorted(set(options.runs) - known)
        if missing:
            raise InputError(
                path, f"has no run {', '.join(map(str, missing))} (runs: {', '.join(map(str, sorted(known)))})", "pass --run with existing run ids"
            )
        selected = ", ".join(str(int(r)) for r in options.runs)
        for table, cols in tables.items():
            if "run_id" in cols and table != "devices":
                source = f"{_quote(catalog)}.main.{_quote(table)}"
                if table == "runs" and "origin_ns" not in cols:  # an older database (database.READABLE_OLDER)
                    source = runs_with_origin(con, catalog)
                con.execute(f"CREATE OR REPLACE TEMP VIEW {_quote(table)} AS SELECT * FROM {source} WHERE run_id IN ({selected})")
    for table in expected_tables():  # only a connection not opened by open_store can lack one
        if table not in tables:
            con.execute(f"CREATE OR REPLACE TEMP TABLE {_quote(table)} ({table_ddl(table)})")
    if options.iterations or options.window_ns:
        _narrow_spans(con, catalog, options, path)
    base = {t: _selected(catalog, t, options.runs) for t in ("spans", "memops")}
    if options.iterations or options.window_ns:
        base = {
            "spans": "_xsp_narrow_spans",
            "memops": f"(SELECT m.* FROM {base['memops']} AS m SEMI JOIN _xsp_narrow_spans AS s USING (run_id, span_id))",
        }
    apply_scope(con, options.scope, base["spans"], base["memops"])
    fill_device_peaks(con, _selected(catalog, "devices", options.runs))
    load_format_tables(con)
    set_variables(con, fact_variables())
    numbers = {"xsp_peak_flops": options.peak_flops, "xsp_peak_dram_bytes_per_s": options.peak_dram_bytes_per_s, "xsp_trim": options.trim}
    set_variables(con, {name: float(value) for name, value in numbers.items() if value is not None})
    if options.layer_ranges is not None:
        _set_layer_view(con, options.layer_ranges, options.layer_depth)
    if options.what_if:
        set_variables(con, {"xsp_what_if_rules": list(options.what_if)})
    if options.compare is not None:
        a, b = options.compare
        set_variables(con, {"xsp_compare_runs": [int(a), int(b)]})
    install_name_macros(con)
    set_rule_variables(con, options.settings)


def _selected(catalog: str, table: str, runs: list[int] | None) -> str:
    """SQL for the database table's rows of the selected runs (all runs without a selection)."""
    source = f"{_quote(catalog)}.main.{_quote(table)}"
    if not runs:
        return source
    return f"(SELECT * FROM {source} WHERE run_id IN ({', '.join(str(int(r)) for r in runs)}))"


def _set_layer_view(con: duckdb.DuckDBPyConnection, text: str, depth: int | None) -> None:
    """Variables that make the SQL library read the matching ranges as layers (see xsp_layer_ranges)."""
    pattern = layer_range_pattern(text)
    try:
        con.execute("SELECT regexp_matches('', ?)", [pattern]).fetchall()
        groups = re.compile(pattern).groups
    except (duckdb.Error, re.error) as exc:
        raise InputError(
            None,
            f"--layer-ranges {text!r} is not a valid regular expression ({exc})",
            "pass a preset (" + ", ".join(LAYER_RANGE_PRESETS) + ") or an RE2 pattern",
        ) from None
    if depth is not None and depth < 1:
        raise InputError(None, f"--layer-depth {depth} is below 1", "1 is the outermost matching range")
    set_variables(
        con, {"xsp_layer_pattern": pattern, "xsp_layer_name_group": 1 if groups >= 1 else 0, "xsp_layer_type_group": 2 if groups >= 2 else 0}
    )
    if depth is not None:
        set_variables(con, {"xsp_layer_depth": int(depth)})


def _narrow_spans(con: duckdb.DuckDBPyConnection, catalog: str, options: AnalysisOptions, path: Path | str) -> None:
    """Shadow spans, steps and memops with the rows of the selected iterations / time window.

    A span's iteration is its own (spans.iteration) or its step's (attribution: GPU work launched
    in the step by any thread of its process); a span is in the window when it starts inside it.
    memops follows its spans: the memory summaries read it alone (it carries the span's kind and
    duration), so it must hold the narrowed spans' rows only.
    """
    # The database's tables of the selected runs: not the run selection's TEMP views, which the
    # views below replace (a view over them would then read itself).
    source = {t: _selected(catalog, t, options.runs) for t in ("spans", "steps", "attribution", "memops")}
    span_where, step_where = [], []
    if options.iterations:
        its = ", ".join(str(int(i)) for i in options.iterations)
        span_where.append(
            f"coalesce(s.iteration, (SELECT st.iteration FROM {source['attribution']} AS att "
            f"JOIN {source['steps']} AS st ON st.run_id = att.run_id AND st.step_span_id = att.step_span_id "
            f"WHERE att.run_id = s.run_id AND att.span_id = s.span_id)) IN ({its})"
        )
        step_where.append(f"iteration IN ({its})")
    if options.window_ns:  # relative to each run's time zero (its origin, or under utc the runs' shared first instant)
        lo, hi = (int(v) for v in options.window_ns)
        create_time_zeros(con, options.align, options.runs, path, "--run")
        origin = f"(SELECT zero_ns FROM {TIME_ZEROS} AS z WHERE z.run_id = {{}}.run_id)"
        span_where.append(f"s.start_ns - {origin.format('s')} >= {lo} AND s.start_ns - {origin.format('s')} < {hi}")
        step_where.append(f"start_ns - {origin.format('st')} >= {lo} AND start_ns - {origin.format('st')} < {hi}")
    con.execute(f"CREATE OR REPLACE TEMP TABLE _xsp_narrow_spans AS SELECT s.* FROM {source['spans']} AS s WHERE {' AND '.join(span_where)}")
    con.execute(f"CREATE OR REPLACE TEMP TABLE _xsp_narrow_steps AS SELECT * FROM {source['steps']} AS st WHERE {' AND '.join(step_where)}")
    if options.window_ns:
        _check_window(con, source["spans"], options.window_ns, options.align)
    con.execute("CREATE OR REPLACE TEMP VIEW spans AS SELECT * FROM _xsp_narrow_spans")
    con.execute("CREATE OR REPLACE TEMP VIEW steps AS SELECT * FROM _xsp_narrow_steps")
    con.execute(
        f"CREATE OR REPLACE TEMP VIEW memops AS SELECT m.* FROM {source['memops']} AS m "
        "SEMI JOIN _xsp_narrow_spans AS s ON s.run_id = m.run_id AND s.span_id = m.span_id"
    )


def _check_window(con: duckdb.DuckDBPyConnection, spans: str, window_ns: tuple[int, int], align: Alignment) -> None:
    """One line naming each run's range when --window holds no span of any selected run: a window
    outside the runs (or on another clock) is not an empty trace."""
    if scalar(con, "SELECT count(*) FROM (SELECT 1 FROM _xsp_narrow_spans LIMIT 1)"):
        return
    ranges = con.execute(
        f"SELECT s.run_id, min(s.start_ns) - z.zero_ns, max(s.end_ns) - z.zero_ns FROM {spans} AS s "
        f"LEFT JOIN {TIME_ZEROS} AS z ON z.run_id = s.run_id GROUP BY s.run_id, z.zero_ns ORDER BY s.run_id"
    ).fetchall()
    lo, hi = window_ns
    held = "; ".join(f"run {run}: spans from {format_time(first)} to {format_time(last)}" for run, first, last in ranges) or "no spans"
    clock = "after the runs' earliest first event on the absolute clock" if align == "utc" else "after each run's first event"
    raise InputError(
        None,
        f"--window {format_time(lo)}:{format_time(hi)} holds no span of the selected runs (times {clock}; {held})",
        "choose START:END inside a run's range, e.g. --window 0ms:10ms",
    )


def open_session(database: Path, options: AnalysisOptions | None = None) -> duckdb.DuckDBPyConnection:
    """A read-only connection to an xsp-trace database, prepared for the analyses."""
    con = open_store(database, read_only=True)
    prepare(con, options or AnalysisOptions(), database)
    return con


# Tables computed in Python, on first use in a session, for the analyses that read them.
BUILDERS: dict[str, Callable[[duckdb.DuckDBPyConnection], None]] = {"xsp_critical_path": build_critical_path, "xsp_what_if": build_what_if}


def run_analysis(con: duckdb.DuckDBPyConnection, name: str) -> Result:
    if name not in BY_NAME:
        raise InputError(None, f"unknown analysis {name!r}", "choose from: " + ", ".join(BY_NAME))
    analysis = BY_NAME[name]
    include(con, analysis.query)
    for table in analysis.builds:
        BUILDERS[table](con)
    cursor = con.execute(query_text(analysis.query))
    columns = [d[0] for d in cursor.description]
    rows = cursor.fetchall()
    if "experiment" in columns:
        # "m bs=4" before "m bs=16": SQL orders text; a stable sort keeps each query's order within an experiment.
        at = columns.index("experiment")
        rows.sort(key=lambda row: natural_key(row[at]))
    return Result(name, analysis.title, columns, rows)


def natural_key(text: object) -> tuple:
    """Sort key that orders the digit runs of a text as numbers (bs=4 < bs=16); NULL last."""
    if text is None:
        return ((2, ""),)
    return tuple((0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", str(text)) if part)
