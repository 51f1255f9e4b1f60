"""Printing query results: rich tables for people, CSV for programs.

Table cells and headers are text a terminal shows safely (xsp_trace/printable.py); CSV keeps every
value exactly, its cells that a spreadsheet would run as a formula guarded only when asked
(`--csv-safe`: CSV_FORMULA_START).
"""

from __future__ import annotations

import csv
import sys

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..printable import printable

# A CSV cell a spreadsheet reads as a formula (or, after a tab or carriage return, as a new cell that
# may be one): OWASP's list. `--csv-safe` writes such a text cell with a leading apostrophe.
CSV_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def format_cell(value) -> str:
    """A value as people read it in a table (query's and diff's): integers as they are (ids and
    counters read without separators, as in analyze's tables), no exponent for big numbers."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value != value:  # NaN
            return "nan"
        if abs(value) >= 1000:
            return f"{value:.1f}"
        return f"{value:.4g}" if value and abs(value) < 1e-3 else f"{value:.4f}".rstrip("0").rstrip(".")
    if isinstance(value, list):
        return ", ".join(format_cell(v) for v in value)
    return printable(str(value))


def wide_console() -> Console:
    """A console at least 160 columns wide (tables of kernel names are wide)."""
    return Console(width=max(Console().width, 160))


def print_table(console: Console, columns: list[str], rows: list, *, limit: int = 0, title: str | None = None, empty_note: str | None = None) -> None:
    """Rows as a rich table, at most `limit` of them (0 = all), saying how many were left out."""
    table = Table(title=title, title_justify="left", show_lines=False)
    for name in columns:
        table.add_column(Text(printable(name)), overflow="fold")
    shown = rows if limit <= 0 else rows[:limit]
    for row in shown:
        table.add_row(*(Text(format_cell(v)) for v in row))  # Text: names like [CUDA memset] are not markup
    console.print(table)
    if not rows and empty_note:
        console.print(f"  ({empty_note})")
    elif len(shown) < len(rows):
        console.print(f"  ({len(rows) - len(shown):,} more rows; --limit 0 shows all)")


def csv_safe_cell(value):
    """A text cell a spreadsheet would run as a formula, with a leading apostrophe; any other value as it is."""
    return "'" + value if isinstance(value, str) and value.startswith(CSV_FORMULA_START) else value


def csv_rows(rows, safe: bool):
    return ([csv_safe_cell(v) for v in row] for row in rows) if safe else rows


def write_csv(columns: list[str], rows: list, *, limit: int = 0, safe: bool = False) -> None:
    """A header and the rows (at most `limit`, 0 = all) as CSV on stdout (`safe`: formula-like text guarded)."""
    writer = csv.writer(sys.stdout)
    writer.writerows(csv_rows([columns], safe))
    writer.writerows(csv_rows(rows[:limit] if limit else rows, safe))
