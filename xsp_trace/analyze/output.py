"""Printing analysis results: rich tables for people, CSV or JSON for programs."""

from __future__ import annotations

import json
import sys
from datetime import date, datetime
from decimal import Decimal

from ..tables import print_table, wide_console, write_csv
from .session import Result


def _jsonable(value):
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, (date, datetime)):
        return value.isoformat()
    return value


def print_tables(results: list[Result], limit: int, notes: list[str]) -> None:
    console = wide_console()
    for result in results:
        print_table(
            console,
            result.columns,
            result.rows,
            limit=limit,
            title=f"{result.title} [{result.name}]",
            empty_note="no rows: the database holds nothing this analysis reads",
        )
    for note in notes:
        console.print(note, markup=False, highlight=False)


def print_csv(results: list[Result], limit: int = 0) -> None:
    for i, result in enumerate(results):
        if len(results) > 1:
            if i:
                sys.stdout.write("\n")
            sys.stdout.write(f"# {result.name}\n")
        write_csv(result.columns, result.rows, limit=limit)


def print_json(results: list[Result], limit: int = 0) -> None:
    payload = {r.name: [{k: _jsonable(v) for k, v in rec.items()} for rec in (r.records()[:limit] if limit else r.records())] for r in results}
    json.dump(payload, sys.stdout, indent=1, default=str)
    sys.stdout.write("\n")


def uncorrected_notes(level_sources: Result) -> list[str]:
    """One line per experiment level that is not corrected."""
    return [f"note: {r['experiment']}: {r['measured']} level {r['note']}" for r in level_sources.records() if not r["corrected"] and r.get("note")]
