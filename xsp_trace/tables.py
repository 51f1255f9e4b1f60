"""Printing query results: rich tables for people, CSV for programs."""

from __future__ import annotations

import csv
import sys

from rich.console import Console
from rich.table import Table


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
        table.add_row(*("" if v is None else f"{v:,}" if isinstance(v, int) else str(v) for v in row))
    console = Console(width=max(Console().width, 160))
    console.print(table)
    if len(shown) < len(rows):
        console.print(f"({len(rows) - len(shown):,} more rows; --limit 0 shows all)")
