"""Nsight Systems reports and SQLite exports into the unified schema, by role:

- converter.py: `convert_nsys` -- the export's tables staged (a table of specs, _STAGES), checked,
  and mapped by queries/ingest/nsys.sql; the run registered;
- report.py: a .nsys-rep exported to SQLite with the nsys on PATH (cached beside the report);
- staging.py: the export's tables streamed into DuckDB staging tables, one after the other;
- staging_threads.py: the same with several reader threads within one export.
"""

from __future__ import annotations

from .converter import convert_nsys

__all__ = ["convert_nsys"]
