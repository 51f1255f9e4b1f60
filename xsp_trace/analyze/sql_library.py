"""The SQL library the analyses read: queries/lib/*.sql, one topic per module, loaded in dependency order.

Each module and each analysis (queries/analyses/*.sql) declares what it includes in a header line
the loader reads (as Perfetto's stdlib does with `INCLUDE PERFETTO MODULE`), and a session loads
only what the analyses it runs reach (`include`):

    -- include: lib/stats, lib/experiments

An analysis's header also holds its title, group, the tables a Python builder fills for it and its
output columns' types (`header_fields`; docs/design.md, "The SQL library").

A module's text creates TEMP views and macros (an analysis session's own, on a read-only database);
`installed_text` turns it into the persistent objects `xsp_trace.analyze.install` puts into a
database's `xsp` schema, with the session's facts as the variables' defaults. Both create their views
WITH (DEFER_BINDING) where DuckDB has it: a view is bound again whenever a query reads it, and binding
each view's whole chain of library views once more at creation cost seconds per convert and session.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import cache

import duckdb

from ..resources import queries_dir, query_text
from ..store.connection import duckdb_connect
from ..store.sql import quote_literal

LIB = "lib"
# A header field: `-- name: value`, continued on the lines below it that are indented further (`--   more`).
_FIELD = re.compile(r"^--\s?(include|title|group|builds|columns):(.*)$")
_CONTINUED = re.compile(r"^--\s{2,}(\S.*)$")
# The TEMP table recording which modules a connection has loaded (`include`).
LOADED_TABLE = "_xsp_loaded_modules"
_GETVARIABLE = re.compile(r"getvariable\('(\w+)'\)")
_VIEW = re.compile(r"\b(CREATE\s+OR\s+REPLACE\s+(?:TEMP(?:ORARY)?\s+)?VIEW\s+(?:\"[^\"]*\"|\w+)(?:\.(?:\"[^\"]*\"|\w+))*)\s+AS\b", re.IGNORECASE)
_TEMP = re.compile(r"\bCREATE\s+OR\s+REPLACE\s+TEMP(?:ORARY)?\s+(VIEW|MACRO|TABLE)\b", re.IGNORECASE)


@cache
def module_names() -> tuple[str, ...]:
    """Every module of the library, as `lib/<stem>`, sorted."""
    return tuple(sorted(f"{LIB}/{entry.name[:-4]}" for entry in (queries_dir() / LIB).iterdir() if entry.name.endswith(".sql")))


def header_fields(name: str) -> dict[str, str]:
    """The fields (include, title, group, builds, columns) of the header comment of module or analysis `name`."""
    fields: dict[str, str] = {}
    current = None
    for line in query_text(name).splitlines():
        if not line.startswith("--"):
            break
        found = _FIELD.match(line)
        more = _CONTINUED.match(line)
        if found:
            current = found.group(1)
            fields[current] = found.group(2).strip()
        elif current and more:
            fields[current] += " " + more.group(1).strip()
        else:
            current = None
    return fields


def includes(name: str) -> tuple[str, ...]:
    """The modules `name` declares in its header's include line (none without one)."""
    return tuple(part for part in header_fields(name).get("include", "").replace(",", " ").split() if part)


def load_order(roots: Iterable[str]) -> list[str]:
    """`roots` and everything they include, each after what it includes; ValueError on an unknown
    module or a cycle (naming it)."""
    known = set(module_names())
    done: list[str] = []
    visiting: list[str] = []

    def visit(name: str) -> None:
        if name in done:
            return
        if name in visiting:
            raise ValueError("SQL modules include each other: " + " -> ".join([*visiting[visiting.index(name) :], name]))
        if name not in known:
            raise ValueError(f"SQL module {name} is not in queries/{LIB}/" + (f" (included by {visiting[-1]})" if visiting else ""))
        visiting.append(name)
        for included in includes(name):
            visit(included)
        visiting.pop()
        done.append(name)

    for root in roots:
        visit(root)
    return done


def declared_columns(name: str) -> list[tuple[str, str]]:
    """The output columns an analysis's header declares (`-- columns: run_id INTEGER, busy_ns HUGEINT`),
    as (name, DuckDB type) in order."""
    text, parts, depth, start = header_fields(name).get("columns", ""), [], 0, 0
    for at, char in enumerate(text + ","):
        depth += (char == "(") - (char == ")")
        if char == "," and depth == 0:
            parts.append(text[start:at].strip())
            start = at + 1
    return [(part.split(None, 1)[0], part.split(None, 1)[1]) for part in parts if part]


def reached(names: Iterable[str]) -> list[str]:
    """The library modules `names` (modules or analyses) reach by their includes, each after what it
    includes (a module among `names` is itself reached)."""
    return load_order(root for name in names for root in ((name,) if name.startswith(f"{LIB}/") else includes(name)))


def include(con: duckdb.DuckDBPyConnection, *names: str) -> None:
    """Load into `con`, as TEMP objects, the modules `names` (modules or analyses) reach and it has
    not loaded yet: a session holds only what the analyses it ran need."""
    con.execute(f"CREATE TEMP TABLE IF NOT EXISTS {LOADED_TABLE} (name VARCHAR)")
    loaded = {row[0] for row in con.execute(f"SELECT name FROM {LOADED_TABLE}").fetchall()}
    for module in reached(names):
        if module not in loaded:
            con.execute(deferred(query_text(module)))
            con.execute(f"INSERT INTO {LOADED_TABLE} VALUES (?)", [module])


def sql_value(value: object) -> str:
    """A Python fact (text, number, list of them) as a DuckDB literal."""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, str):
        return quote_literal(value)
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(sql_value(v) for v in value) + "]"
    raise TypeError(f"no SQL literal for {value!r}")


def with_defaults(text: str, defaults: Mapping[str, object]) -> str:
    """`text` with each getvariable('name') of `defaults` falling back to its value when unset."""

    def replace(match: re.Match) -> str:
        name = match.group(1)
        if name not in defaults:
            return match.group(0)
        return f"coalesce({match.group(0)}, {sql_value(defaults[name])})"

    return _GETVARIABLE.sub(replace, text)


@cache
def defers_binding() -> bool:
    """Whether this DuckDB creates a view without binding it (`WITH (DEFER_BINDING)`, DuckDB 2.0)."""
    con = duckdb_connect()  # the one way DuckDB is opened: extensions' autoload and network off
    try:
        con.execute("CREATE TEMP VIEW _xsp_probe WITH (DEFER_BINDING) AS SELECT 1")
        return True
    except duckdb.Error:
        return False
    finally:
        con.close()


def deferred(text: str, bind: bool = False) -> str:
    """`text` with its CREATE OR REPLACE [TEMP] VIEW statements bound when read, not when created
    (unchanged on a DuckDB without DEFER_BINDING, or with `bind`: a view bound at creation stores
    its column types, without which DuckDB 1.x clients refuse to read it)."""
    return _VIEW.sub(r"\1 WITH (DEFER_BINDING) AS", text) if defers_binding() and not bind else text


def installed_text(text: str, defaults: Mapping[str, object], bind: bool = False) -> str:
    """A module's text as persistent objects (views for its TEMP tables: they follow the data) with
    the variables' defaults written in (`bind`: as deferred)."""

    def persistent(match: re.Match) -> str:
        kind = match.group(1).upper()
        return f"CREATE OR REPLACE {'VIEW' if kind == 'TABLE' else kind}"

    return deferred(with_defaults(_TEMP.sub(persistent, text), defaults), bind)
