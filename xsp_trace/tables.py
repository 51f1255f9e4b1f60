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


def print_result(result, *, limit: int = 50, as_csv: bool = False, title: str | None = None) -> None:
    """Print a DuckDB result (cursor after execute) as a table or CSV on stdout."""
    columns = [d[0] for d in result.description]
    rows = result.fetchall()
    if as_csv:
        writer = csv.writer(sys.stdout)
        writer.writerow(columns)
        writer.writerows(rows)
        return
    table = Table(title=title, show_lines=False)
    for name in columns:
        table.add_column(name, overflow="fold")
    shown = rows if limit <= 0 else rows[:limit]
    for row in shown:
        table.add_row(*(format_cell(v) for v in row))
    console = Console(width=max(Console().width, 160))
    console.print(table)
    if len(shown) < len(rows):
        console.print(f"({len(rows) - len(shown):,} more rows; --limit 0 shows all)")
