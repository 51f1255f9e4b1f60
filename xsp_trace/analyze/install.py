"""The analyses inside the database: the SQL library (queries/lib/) and every analysis that is plain SQL,
installed as views and macros in a schema `xsp`, so any DuckDB client runs them without xsp-trace:

    duckdb -readonly run.duckdb -c "SELECT * FROM xsp.top_kernels"

What the library reads besides the data goes in with them: the format facts as tables, the
device peaks (`xsp.devices`, the database's devices with the built-in peaks filled in), the
range-name macros, and every fact variable as the default of its getvariable() (SET VARIABLE still
overrides it, as do the analyses' own parameters: xsp_trim, xsp_bins, xsp_rule_gap_ms, ...).
The views follow the data: nothing is computed at install time but the device peaks. Views named
like the data tables (`xsp.spans`, ...) narrow what the installed views read by variables, as
`analyze --run/--iteration/--window` do (NARROWING_VARIABLES).

Left out: the analyses a Python builder computes (critical path, what-if); `xsp.xsp_analyses` lists
every analysis with whether it is installed and, if not, why.
"""

from __future__ import annotations

import hashlib
import re

import duckdb

from .. import __version__
from ..naming import name_macro_statements
from ..resources import query_text
from ..store.schema import expected_tables
from ..store.sql import insert_rows, one_transaction, quote_identifier, scalar
from .catalog import ANALYSES, Analysis
from .facts import fill_device_peaks, load_format_tables, variable_defaults
from .sql_library import deferred, installed_text, load_order, module_names, with_defaults

SCHEMA = "xsp"
INFO_TABLE = "_xsp_installed"
CATALOG_TABLE = "xsp_analyses"


def not_installed_reason(analysis: Analysis) -> str | None:
    """Why an analysis is not a view in the database (None: it is)."""
    if analysis.builds:
        return f"computed in Python ({', '.join(analysis.builds)}): run xsp-trace analyze DB -a {analysis.name}"
    return None


def library_digest() -> str:
    """A digest of everything installed, so a reader can tell an installation made by other SQL."""
    texts = [query_text(name) for name in module_names()] + [query_text(a.query) for a in ANALYSES]
    texts += name_macro_statements() + [repr(sorted(variable_defaults().items()))]
    return hashlib.sha256("\0".join(texts).encode()).hexdigest()[:16]


def install_analyses(con: duckdb.DuckDBPyConnection, catalog: str | None = None, schema: str | None = SCHEMA, bind_views: bool = False) -> None:
    """(Re)create schema `schema` of `catalog` (default: the current database) with the library and
    the analyses over that database's tables; schema None: TEMP objects of this connection instead.
    `bind_views`: views bound at creation, which DuckDB 1.x clients need (deferred ones install in
    a second instead of ~10: BENCHMARKS.md, "Storage version")."""
    with one_transaction(con):
        _install(con, catalog, schema, bind_views)


def _install(con: duckdb.DuckDBPyConnection, catalog: str | None, schema: str | None, bind: bool) -> None:
    data = scalar(con, "SELECT current_database()")
    catalog = catalog or data
    temp = schema is None
    target = "" if schema is None else f"{quote_identifier(catalog)}.{quote_identifier(schema)}."
    previous = scalar(con, "SELECT current_setting('search_path')")
    if not temp:
        con.execute(f"DROP SCHEMA IF EXISTS {target[:-1]} CASCADE")
        con.execute(f"CREATE SCHEMA {target[:-1]}")
    create = "CREATE OR REPLACE TEMP TABLE" if temp else "CREATE OR REPLACE TABLE"
    load_format_tables(con, create, target)
    fill_device_peaks(con, f"{quote_identifier(data)}.main.devices", create, target)
    if not temp:
        _narrowing_views(con, target, bind)
    # Unqualified names below are created in the target schema; the views bind their inputs when
    # they run: their own schema first (xsp.devices), then the database's main schema (spans, ...).
    if not temp:
        con.execute(f"SET search_path = '{target[:-1]},{quote_identifier(data)}.main'")
    try:
        defaults = variable_defaults()
        made = (lambda text: deferred(with_defaults(text, defaults), bind)) if temp else (lambda text: installed_text(text, defaults, bind))
        for statement in name_macro_statements():
            con.execute(made(statement))
        for module in load_order(module_names()):
            con.execute(made(query_text(module)))
        rows = []
        for analysis in ANALYSES:
            reason = not_installed_reason(analysis)
            if reason is None:
                body = with_defaults(query_text(analysis.query), defaults).strip().rstrip(";")
                con.execute(deferred(f"CREATE OR REPLACE {'TEMP ' if temp else ''}VIEW {quote_identifier(analysis.name)} AS\n{body}", bind))
            rows.append((analysis.name, analysis.title, analysis.group, reason is None, reason))
        # Every analysis: its name (the view), title, group, whether it is a view here, and why not.
        con.execute(f"{create} {CATALOG_TABLE} (name VARCHAR, title VARCHAR, grp VARCHAR, installed BOOLEAN, note VARCHAR)")
        insert_rows(con, CATALOG_TABLE, rows)
        if not temp:
            con.execute(f"{create} {INFO_TABLE} (key VARCHAR, value VARCHAR)")
            insert_rows(con, INFO_TABLE, [("digest", library_digest()), ("installed_by", f"xsp-trace {__version__}")])
    finally:
        if not temp:
            con.execute(f"SET search_path = '{previous}'" if previous else "RESET search_path")


# The narrowing an `analyze` option makes, as variables the installed views read (unset: everything):
#     SET VARIABLE xsp_run_ids = [1, 2];        -- analyze --run 1,2
#     SET VARIABLE xsp_iterations = [3, 4];     -- analyze --iteration 3-4 (step numbers)
#     SET VARIABLE xsp_window_ns = [t0, t1];    -- analyze --window: spans starting in [t0, t1), ns after
#                                                  their run's first event (runs.origin_ns)
NARROWING_VARIABLES = ("xsp_run_ids", "xsp_iterations", "xsp_window_ns")
_IN_RUNS = "(getvariable('xsp_run_ids') IS NULL OR list_contains(getvariable('xsp_run_ids'), run_id))"
_ORIGIN = "(SELECT r.origin_ns FROM main.runs AS r WHERE r.run_id = t.run_id)"
_IN_WINDOW = (
    "(getvariable('xsp_window_ns') IS NULL OR "
    f"({{t}} - {_ORIGIN} >= getvariable('xsp_window_ns')[1] AND {{t}} - {_ORIGIN} < getvariable('xsp_window_ns')[2]))"
)
_NARROWED = "(getvariable('xsp_iterations') IS NOT NULL OR getvariable('xsp_window_ns') IS NOT NULL)"


def _narrowing_views(con: duckdb.DuckDBPyConnection, target: str, bind: bool) -> None:
    """Views named like the data tables in the installed schema, which the installed views read
    before the database's own (a view binds its own schema first): the rows of the runs,
    iterations and time window the variables NARROWING_VARIABLES select, as analyze's options do."""
    con.execute(f"ALTER TABLE {target}devices RENAME TO _xsp_devices")
    for table, columns in sorted(expected_tables().items(), key=lambda item: item[0] != "spans"):  # memops reads spans
        if "run_id" not in {name for name, _ in columns}:
            continue
        source = "_xsp_devices" if table == "devices" else f"main.{quote_identifier(table)}"
        where = [_IN_RUNS]
        if table == "spans":
            where.append(_IN_WINDOW.format(t="start_ns"))
            # A span's iteration is its own or its step's (attribution: work launched in the step). Two
            # branches, so that without xsp_iterations the planner drops the lookup with its branch.
            steps = (
                "(SELECT st.iteration FROM main.attribution AS att JOIN main.steps AS st ON st.run_id = att.run_id "
                "AND st.step_span_id = att.step_span_id WHERE att.run_id = t.run_id AND att.span_id = t.span_id)"
            )
            common = " AND ".join(where)
            con.execute(
                deferred(
                    f"CREATE OR REPLACE VIEW {target}spans AS "
                    f"SELECT * FROM {source} AS t WHERE getvariable('xsp_iterations') IS NULL AND {common} "
                    f"UNION ALL SELECT * FROM {source} AS t WHERE getvariable('xsp_iterations') IS NOT NULL AND {common} "
                    f"AND list_contains(getvariable('xsp_iterations'), coalesce(iteration, {steps}))",
                    bind,
                )
            )
            continue
        if table == "steps":
            where += [
                "(getvariable('xsp_iterations') IS NULL OR list_contains(getvariable('xsp_iterations'), iteration))",
                _IN_WINDOW.format(t="start_ns"),
            ]
        elif table == "memops":  # the narrowed spans' copies and sets only (two branches, as spans)
            con.execute(
                deferred(
                    f"CREATE OR REPLACE VIEW {target}memops AS "
                    f"SELECT * FROM {source} AS t WHERE NOT {_NARROWED} AND {_IN_RUNS} "
                    # EXISTS, not (run_id, span_id) IN (SELECT ...): DuckDB 1.1 has no row-valued IN.
                    f"UNION ALL SELECT * FROM {source} AS t WHERE {_NARROWED} AND {_IN_RUNS} "
                    "AND EXISTS (SELECT 1 FROM spans AS s WHERE s.run_id = t.run_id AND s.span_id = t.span_id)",
                    bind,
                )
            )
            continue
        con.execute(
            deferred(f"CREATE OR REPLACE VIEW {target}{quote_identifier(table)} AS SELECT * FROM {source} AS t WHERE {' AND '.join(where)}", bind)
        )


def installed_digest(con: duckdb.DuckDBPyConnection, catalog: str, schema: str = SCHEMA) -> str | None:
    """The digest of the library installed in `catalog`.`schema`, or None when there is none."""
    present = scalar(
        con, "SELECT count(*) FROM duckdb_tables() WHERE database_name = ? AND schema_name = ? AND table_name = ?", [catalog, schema, INFO_TABLE]
    )
    if not present:
        return None
    rows = con.execute(f"SELECT value FROM {quote_identifier(catalog)}.{quote_identifier(schema)}.{INFO_TABLE} WHERE key = 'digest'").fetchall()
    return rows[0][0] if rows else None


def mentions_analyses(sql: str) -> bool:
    """Whether `sql` may name an analysis or a building block (loading them costs seconds where the data lacks them)."""
    words = set(re.findall(r"\w+", sql.lower()))
    return "xsp" in words or any(w.startswith(("xsp_", "_xsp_")) for w in words) or bool(words & {a.name for a in ANALYSES})


def analyses_for_reading(con: duckdb.DuckDBPyConnection, name: str, sql: str | None = None) -> str | None:
    """Make `<analysis>` (and `xsp.<analysis>` where the data can hold it) resolve in a read-only
    connection to a database or dataset, before its configuration is locked; a note for the user when
    the database's own installation is missing or from other SQL, else None."""
    data = scalar(con, "SELECT current_database()")
    writable = not scalar(con, "SELECT readonly FROM duckdb_databases() WHERE database_name = ?", [data])
    digest = installed_digest(con, data)
    note = None
    if digest is None and sql is not None and not mentions_analyses(sql):
        return None
    if writable:  # a dataset's in-memory catalog of views: the analyses go beside them
        install_analyses(con, data)
    elif digest is None:  # a read-only file without them: TEMP objects, found by their plain names
        install_analyses(con, schema=None)
        note = (
            f"note: {name} was converted before xsp-trace installed its analyses in the database: they are loaded for this "
            f"query by plain name (top_kernels, not xsp.top_kernels); `xsp-trace install-analyses {name}` installs them for every DuckDB client"
        )
        return note
    elif digest != library_digest():
        note = f"note: the analyses in {name} were installed by another xsp-trace version; `xsp-trace install-analyses {name}` updates them"
    con.execute(f"SET search_path = '{quote_identifier(data)}.main,{quote_identifier(data)}.{SCHEMA}'")
    return note
