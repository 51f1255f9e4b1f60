"""What `xsp-trace analyze` prints: the one-screen summary, or the chosen analyses as tables (rows
ordered by --sort, columns chosen by --columns, empty ones saying why, notes only where they
apply), CSV or JSON. The command line (xsp_trace/cli.py) only parses options and calls `present`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import duckdb

from ..errors import InputError, did_you_mean
from ..printable import printable
from ..terminal.readable_table import TableStyle, display_name, output_console, parse_sort, resolve_column, select_columns, sort_rows
from .catalog import ANALYSES, BY_NAME
from .empty import EmptyReasons
from .output import print_csv, print_json, print_tables, uncorrected_notes
from .scope import scope_notes
from .session import AnalysisOptions, Result, run_analysis


@dataclass(frozen=True)
class View:
    """How to print: format (table, csv, json), rows per table, the table style, --sort, --columns, --csv-safe."""

    fmt: str = "table"
    limit: int = 30
    style: TableStyle = TableStyle()
    sort: str | None = None
    columns: tuple[str, ...] = ()
    csv_safe: bool = False


def _known_columns(results: list[Result]) -> list[str]:
    names: list[str] = []
    for r in results:
        names += [n for c in r.columns for n in (c, display_name(c, r.columns)) if n not in names]
    return names


def arrange(results: list[Result], view: View) -> list[Result]:
    """The results with their rows sorted (--sort) and columns chosen (--columns), each where the
    table has that column; an InputError with a suggestion when no table has it."""
    if view.sort:
        column, descending = parse_sort(view.sort)
        if not any(resolve_column(column, r.columns) for r in results):
            known = _known_columns(results)
            raise InputError(None, f"--sort {column}: no such column{did_you_mean(column, known)}", "columns: " + ", ".join(known))
        sorted_results = []
        for r in results:
            at = resolve_column(column, r.columns)
            sorted_results.append(replace(r, rows=sort_rows(r.columns, r.rows, at, descending)) if at else r)
        results = sorted_results
    if view.columns:
        known = _known_columns(results)
        unknown = [c for c in view.columns if c not in known]
        if unknown:
            raise InputError(None, f"--columns {unknown[0]}: no such column{did_you_mean(unknown[0], known)}", "columns: " + ", ".join(known))
        out = []
        for r in results:
            columns, rows = select_columns(r.columns, r.rows, list(view.columns))
            out.append(replace(r, columns=columns, rows=rows) if columns else r)
        results = out
    return results


def present(con: duckdb.DuckDBPyConnection, results: list[Result], options: AnalysisOptions, view: View, notes: Sequence[str] = ()) -> None:
    """Print `results` of the session `con` as `view` says."""
    results = arrange(results, view)
    if view.fmt == "csv":
        print_csv(results, view.limit, view.csv_safe)
    elif view.fmt == "json":
        print_json(results, view.limit)
    else:
        shown = [r for r in results if r.rows]
        notes = [*notes, *uncorrected_notes(run_analysis(con, "level_sources"), shown), *scope_notes(con, options.scope, [r.name for r in shown])]
        print_tables(results, view.limit, notes, view.style, EmptyReasons.of(con, options))


def present_summary(con: duckdb.DuckDBPyConnection, options: AnalysisOptions, view: View, notes: Sequence[str] = ()) -> None:
    """The one-screen summary (xsp_trace/analyze/summary.py) and the notes that apply to it."""
    from .summary import ANALYSES, print_summary, summarize

    summary = summarize(con)
    console = output_console(view.style)
    print_summary(console, summary, view.style, EmptyReasons.of(con, options))
    for note in [*notes, *scope_notes(con, options.scope, list(ANALYSES))]:
        console.print(printable(note), markup=False, highlight=False)


def list_all() -> None:
    """analyze --list: each analysis's name, title and SQL file."""
    for a in ANALYSES:
        print(f"{a.name:26} {a.title}  (queries/{a.query}.sql)")


def check_names(names: list[str]) -> None:
    """One line, with the closest name, for an analysis that does not exist."""
    unknown = [n for n in names if n not in BY_NAME]
    if unknown:
        raise InputError(None, f"unknown analysis {', '.join(unknown)}{did_you_mean(unknown[0], BY_NAME)}", "see xsp-trace analyze --list")


def run_pair(ids: list[int] | None, text: str | None) -> tuple[int, int] | None:
    """The two runs of --compare BASE,OTHER."""
    if text is None:
        return None
    if not ids or len(ids) != 2:
        raise InputError(None, f"--compare {text!r} needs two run ids", "e.g. --compare 1,2")
    return (ids[0], ids[1])
