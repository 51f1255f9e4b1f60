"""Printing analysis results: rich tables for people, CSV or JSON for programs."""

from __future__ import annotations

import csv
import json
import sys
from datetime import date, datetime
from decimal import Decimal

from rich.console import Console
from rich.table import Table

from ..tables import format_cell as _cell
from .session import Result


def _jsonable(value):
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, (date, datetime)):
        return value.isoformat()
    return value


def print_tables(results: list[Result], limit: int, notes: list[str]) -> None:
    console = Console(width=max(Console().width, 160))
    for result in results:
        table = Table(title=f"{result.title} [{result.name}]", title_justify="left", show_lines=False)
        for name in result.columns:
            table.add_column(name, overflow="fold")
        shown = result.rows if limit <= 0 else result.rows[:limit]
        for row in shown:
            table.add_row(*(_cell(v) for v in row))
        console.print(table)
        if not result.rows:
            console.print("  (no rows: the database holds nothing this analysis reads)")
        elif len(shown) < len(result.rows):
            console.print(f"  ({len(result.rows) - len(shown):,} more rows; --limit 0 shows all)")
    for note in notes:
        console.print(note, markup=False, highlight=False)


def print_csv(results: list[Result], limit: int = 0) -> None:
    writer = csv.writer(sys.stdout)
    for i, result in enumerate(results):
        if len(results) > 1:
            if i:
                sys.stdout.write("\n")
            sys.stdout.write(f"# {result.name}\n")
        writer.writerow(result.columns)
        writer.writerows(result.rows[:limit] if limit else result.rows)


def print_json(results: list[Result], limit: int = 0) -> None:
    payload = {r.name: [{k: _jsonable(v) for k, v in rec.items()} for rec in (r.records()[:limit] if limit else r.records())]
               for r in results}
    json.dump(payload, sys.stdout, indent=1, default=str)
    sys.stdout.write("\n")


def uncorrected_notes(level_sources: Result) -> list[str]:
    """One line per experiment level that is not corrected."""
    return [
        f"note: {r['experiment']}: {r['measured']} level {r['note']}"
        for r in level_sources.records() if not r["corrected"] and r.get("note")
    ]
