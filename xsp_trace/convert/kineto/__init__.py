"""PyTorch profiler (Kineto) Chrome traces into the unified schema, by role:

- converter.py: `convert_kineto` -- read the events, map them with queries/ingest/kineto_map.sql,
  link launches and flows (kineto_link.sql), register the run;
- events.py: the raw event relation both readers fill, and the checks on it;
- duckdb_reader.py: DuckDB's JSON reader over the `traceEvents` array, a piece at a time;
- python_reader.py: the streaming Python reader, for files the DuckDB reader does not take;
- pieces.py: the `traceEvents` array cut into pieces at element boundaries.
"""

from __future__ import annotations

from .converter import convert_kineto

__all__ = ["convert_kineto"]
