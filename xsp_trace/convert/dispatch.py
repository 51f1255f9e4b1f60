"""One trace file (nsys report or export, PyTorch profiler JSON) into an open database, then correlated.

`xsp_trace.convert.convert_into` uses it for a trace given on the command line, and the run-directory
converter (run_dir.py) for each trace a capture wrote; neither imports the other.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from ..errors import InputError
from ..store.connection import CONVERT_MEMORY_LIMIT, convert_block_memory, keep_block_memory, memory_limit
from ..store.database import next_run_id
from ..store.sql import scalar
from .common import ConvertOptions, Progress, detect_source
from .correlate import correlate_run
from .validate import reading_errors


def convert_trace(con: duckdb.DuckDBPyConnection, path: Path, options: ConvertOptions, progress: Progress) -> list[int]:
    """Convert the trace file at `path` as one new run, correlate it, and return [its run id]."""
    source = detect_source(path)
    if source not in ("nsys-rep", "nsys-sqlite", "kineto"):
        raise InputError(
            path,
            f"is a {'folder' if source == 'run-dir' else 'pipe or device'}, not a trace file",
            "pass an nsys report or export, or a PyTorch profiler trace",
        )
    run_id = next_run_id(con)
    keep_block_memory(con, convert_block_memory(path.stat().st_size))
    read_trace(con, path, source, run_id, options, progress)
    progress("correlating", None)
    correlate_run(con, run_id, options.step_ranges)
    if options.step_ranges is not None and not scalar(con, "SELECT getvariable('xsp_step_ranges_found')"):
        raise InputError(
            path,
            f"no range is named by --step-ranges {options.step_ranges!r}",
            f"list the range names with: xsp-trace query {path} \"SELECT name, count(*) FROM spans WHERE kind IN ('annotation', 'model', 'layer') GROUP BY name\"",
        )
    return [run_id]


def read_trace(con: duckdb.DuckDBPyConnection, path: Path, source: str, run_id: int, options: ConvertOptions, progress: Progress) -> None:
    """Read the nsys or Kineto trace at `path` (`source` as detect_source names it) into run `run_id`,
    uncorrelated, under the convert's memory cap; a reading error names `path`."""
    # One cap for both converters' reading (uncapped, the peak grew with the trace).
    with reading_errors(path), memory_limit(con, CONVERT_MEMORY_LIMIT):
        if source in ("nsys-rep", "nsys-sqlite"):
            from .nsys import convert_nsys

            convert_nsys(con, path, run_id, options, progress)
        else:
            from .kineto import convert_kineto

            convert_kineto(con, path, run_id, options, progress)
