"""`convert`: any supported trace (or a capture run directory) into the unified DuckDB schema.

By role: `common.py` (options, progress, source detection), `dispatch.py` (one trace file: the
converter for its source, then the correlation), one package per source -- `kineto/` (PyTorch
profiler traces) and `nsys/` (Nsight Systems reports and exports) -- plus `ncu.py` (Nsight Compute
metrics) and `run_dir.py` (a capture run directory); `validate.py` and `input_limits.py` (what
every reader checks). The engines: `local.py` (in this process), `processes.py` (worker
processes), `ray_engine.py` (Ray), writing a database or, through `dataset_output.py`, a Parquet
dataset; `engine.py` (`convert_inputs`) is the one place that picks among them. This module only
re-exports.
"""

from __future__ import annotations

from .common import (
    GZIP_MAGIC,
    NSYS_REPORT_MAGIC,
    SQLITE_MAGIC,
    ConvertOptions,
    Progress,
    default_output,
    detect_source,
    no_progress,
    register_run,
)
from .dispatch import convert_trace
from .engine import convert_inputs
from .local import convert_files, convert_into, restore_stream_names, spooled

__all__ = [
    "GZIP_MAGIC",
    "NSYS_REPORT_MAGIC",
    "SQLITE_MAGIC",
    "ConvertOptions",
    "Progress",
    "convert_files",
    "convert_inputs",
    "convert_into",
    "convert_trace",
    "default_output",
    "detect_source",
    "no_progress",
    "register_run",
    "restore_stream_names",
    "spooled",
]
