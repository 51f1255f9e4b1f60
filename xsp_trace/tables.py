"""Printing query results: rich tables for people, CSV for programs."""

from __future__ import annotations

import csv
import sys

from rich.console import Console
from rich.table import Table


def format_cell(value) -> str:
    """A value as people read it in a table: thousands separators, no exponent for big numbers."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if value != value:  # NaN
            return "nan"
        if abs(value) >= 1000:
            return f"{value:,.1f}"
        return f"{value:.4g}" if value and abs(value) < 1e-3 else f"{value:.4f}".rstrip("0").rstrip(".")
    if isinstance(value, list):
        return ", ".join(format_cell(v) for v in value)
    return str(value)


def wide_console() -> Console:
    """A console at least 160 columns wide (tables of kernel names are wide)."""
    return Console(width=max(Console().width, 160))


def print_table(console: Console, columns: list[str], rows: list, *, limit: int = 0, title: str | None = None, empty_note: str | None = None) -> None:
    """Rows as a rich table, at most `limit` of them (0 = all), saying how many were left out."""
    table = Table(title=title, title_justify="left", show_lines=False)
    for name in columns:
        table.add_column(name, overflow="fold")
    shown = rows if limit <= 0 else rows[:limit]
    for row in shown:
        table.add_row(*(format_cell(v) for v in row))
    console.print(table)
    if not rows and empty_note:
        console.print(f"  ({empty_note})")
    elif len(shown) < len(rows):
        console.print(f"  ({len(rows) - len(shown):,} more rows; --limit 0 shows all)")


def write_csv(columns: list[str], rows: list, *, limit: int = 0) -> None:
    """A header and the rows (at most `limit`, 0 = all) as CSV on stdout."""
    writer = csv.writer(sys.stdout)
    writer.writerow(columns)
    writer.writerows(rows[:limit] if limit else rows)


def print_result(result, *, limit: int = 50, as_csv: bool = False, title: str | None = None) -> None:
    """Print a DuckDB result (cursor after execute) as a table or CSV on stdout."""
    columns = [d[0] for d in result.description]
    rows = result.fetchall()
    if as_csv:
        write_csv(columns, rows)
    else:
        print_table(wide_console(), columns, rows, limit=limit, title=title)
