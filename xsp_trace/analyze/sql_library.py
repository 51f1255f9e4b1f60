"""The SQL library the analyses read: queries/lib/*.sql, one topic per module, loaded in dependency order.

Each module declares what it includes in a header line the loader reads (as Perfetto's stdlib does
with `INCLUDE PERFETTO MODULE`):

    -- include: lib/stats, lib/experiments

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
# Modules loaded only when asked for: lib/scope is a table of the unnarrowed spans (analyze/scope.py).
ON_DEMAND = ("lib/scope",)
_INCLUDE = re.compile(r"^--\s*include:(.*)$", re.MULTILINE)
_GETVARIABLE = re.compile(r"getvariable\('(\w+)'\)")
_VIEW = re.compile(r"\b(CREATE\s+OR\s+REPLACE\s+(?:TEMP(?:ORARY)?\s+)?VIEW\s+(?:\"[^\"]*\"|\w+)(?:\.(?:\"[^\"]*\"|\w+))*)\s+AS\b", re.IGNORECASE)
_TEMP = re.compile(r"\bCREATE\s+OR\s+REPLACE\s+TEMP(?:ORARY)?\s+(VIEW|MACRO|TABLE)\b", re.IGNORECASE)


@cache
def module_names() -> tuple[str, ...]:
    """Every module of the library, as `lib/<stem>`, sorted."""
    return tuple(sorted(f"{LIB}/{entry.name[:-4]}" for entry in (queries_dir() / LIB).iterdir() if entry.name.endswith(".sql")))


def includes(name: str) -> tuple[str, ...]:
    """The modules `name` declares in its header's include line (none without one)."""
    header = []
    for line in query_text(name).splitlines():
        if not line.startswith("--"):
            break
        header.append(line)
    found = _INCLUDE.search("\n".join(header))
    if not found:
        return ()
    return tuple(part.strip() for part in found.group(1).replace(",", " ").split() if part.strip())


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


def session_modules() -> list[str]:
    """The modules every analysis session loads, in dependency order."""
    return load_order(name for name in module_names() if name not in ON_DEMAND)


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
