"""Printing analysis results: rich tables for people, CSV or JSON for programs."""

from __future__ import annotations

import json
import sys
from datetime import date, datetime
from decimal import Decimal

from ..printable import printable
from ..terminal.raw_table import write_csv
from ..terminal.readable_table import TableStyle, output_console, render
from .empty import LAYER_ANALYSES, EmptyReasons
from .session import Result


def _jsonable(value):
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, (date, datetime)):
        return value.isoformat()
    return value


def print_tables(results: list[Result], limit: int, notes: list[str], style: TableStyle, reasons: EmptyReasons | None = None) -> None:
    """Each result as a table that fits the terminal, an empty one with why it is empty, then the notes."""
    console = output_console(style)
    for i, result in enumerate(results):
        if i:
            console.print()
        reason = reasons.reason(result.name) if reasons is not None else None
        render(console, result.columns, result.rows, style, limit=limit, title=f"{result.title} [{result.name}]", empty_note=reason)
        if result.rows and reasons is not None and result.name in LAYER_ANALYSES and reasons.layer_problem:
            # The one row left is the work outside any layer.
            console.print(f"  ({printable(reasons.layer_problem)})", markup=False, highlight=False)
    for note in notes:
        console.print(printable(note), markup=False, highlight=False)


def print_csv(results: list[Result], limit: int = 0, safe: bool = False) -> None:
    for i, result in enumerate(results):
        if len(results) > 1:
            if i:
                sys.stdout.write("\n")
            sys.stdout.write(f"# {result.name}\n")
        write_csv(result.columns, result.rows, limit=limit, safe=safe)


def print_json(results: list[Result], limit: int = 0) -> None:
    payload = {r.name: [{k: _jsonable(v) for k, v in rec.items()} for rec in (r.records()[:limit] if limit else r.records())] for r in results}
    json.dump(payload, sys.stdout, indent=1, default=str)
    sys.stdout.write("\n")


def uncorrected_notes(level_sources: Result, shown: list[Result]) -> list[str]:
    """Notes on the levels whose times include the overhead of profiling the levels below them, only
    when a table shown has such a time (a `corrected` column that says no)."""
    if not any("corrected" in r.columns and any(v is False for v in (rec["corrected"] for rec in r.records())) for r in shown):
        return []
    plain: dict[str, list[str]] = {}
    notes = []
    for r in level_sources.records():
        if r["corrected"] or not r.get("note"):
            continue
        if r["source_level"] is None:  # a plain trace: every level measured in one run
            plain.setdefault(", ".join(map(str, r["run_ids"] or [])), []).append(r["measured"])
        else:
            notes.append(f"note: {r['experiment']}: {r['measured']} level {r['note']}")
    for runs, levels in plain.items():
        notes.append(
            f"note: run {runs}: {' and '.join(levels)} times are measured while the profiler also recorded the work inside them, "
            "so they include its overhead (`xsp-trace capture` measures each level in a run of its own)"
        )
    return notes
