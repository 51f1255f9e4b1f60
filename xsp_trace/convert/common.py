"""What every converter shares: the options, the progress callback, the source detection and the runs row.

The converters import these from here (not from the package `xsp_trace.convert`, which imports them in
turn), so that the package and its submodules form no import cycle.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from ..errors import InputError
from ..formats.file_magic import GZIP_MAGIC, NSYS_REPORT_MAGIC, SQLITE_MAGIC
from ..store.database import insert_run
from .input_limits import InputLimits


@dataclass
class ConvertOptions:
    nsys: str | None = None  # path of the nsys binary for .nsys-rep inputs
    label: str | None = None
    run_fields: dict[str, Any] = field(default_factory=dict)  # extra runs columns (level, model, batch_size...)
    include_python_functions: bool = False  # Kineto python_function events (off by default, as HTA)
    kineto_reader: str = "auto"  # "auto": DuckDB's JSON reader (duckdb_reader), Python for odd files; "python": always Python
    # nsys OS runtime calls (OSRT_API) as spans; a leveled capture turns them off: it traces osrt
    # only so that nsys 2022.4 records on a machine without a GPU, and its M/ML runs hold ranges only.
    include_os_runtime: bool = True
    # The regular expression naming the step ranges (convert --step-ranges); None: ProfilerStep#N (xsp_trace/convert/step_ranges.py).
    step_ranges: str | None = None
    # How far a gzip trace may decompress and a pipe may run (input_limits.py): the environment's, else the defaults.
    limits: InputLimits = field(default_factory=InputLimits.from_env)


Progress = Callable[[str, float | None], None]  # (what, fraction done or None)


def no_progress(what: str, fraction: float | None) -> None:
    """The Progress that reports nothing."""


def detect_source(path: Path) -> str:
    """'nsys-rep', 'nsys-sqlite', 'kineto', 'run-dir' or 'stream' (a pipe or device) for a path, or InputError."""
    if not path.exists():
        raise InputError(path, "does not exist", "check the path")
    if path.is_dir():
        return "run-dir"
    if not path.is_file():  # a FIFO, <(process substitution) or device: read once, into a temporary copy
        return "stream"
    try:
        with open(path, "rb") as f:
            head = f.read(64)
    except OSError as exc:
        raise InputError(path, f"cannot be read ({exc.strerror})", "check its permissions") from exc
    if head.startswith(NSYS_REPORT_MAGIC):
        return "nsys-rep"
    if head.startswith(SQLITE_MAGIC):
        return "nsys-sqlite"
    if head.startswith(GZIP_MAGIC):
        return "kineto"
    stripped = head.lstrip()
    if stripped.startswith(b"{") or stripped.startswith(b"["):
        return "kineto"
    if path.suffix in (".nsys-rep", ".qdrep"):
        raise InputError(path, "is not an Nsight Systems report (no report header)", "pass a .nsys-rep written by nsys profile")
    if path.suffix in (".sqlite", ".db"):
        raise InputError(path, "is not a SQLite file", "pass an export from `nsys export --type sqlite`")
    raise InputError(
        path,
        "is not a trace xsp-trace knows (expected .nsys-rep, nsys .sqlite export, or PyTorch profiler .json/.json.gz)",
        "pass one of those",
    )


TRACE_SUFFIXES = (".gz", ".json", ".nsys-rep", ".qdrep", ".sqlite")


def default_output(first_input: Path, *, dataset: bool = False) -> Path:
    """Where convert writes when not told: beside the first input, named after it (trace.json.gz ->
    trace.duckdb; a capture run directory -> <dir>/xsp.duckdb); a dataset folder drops the suffix."""
    first_input = Path(first_input)
    if first_input.is_dir():
        output = first_input / "xsp.duckdb"
    else:
        base = first_input.name
        for suffix in TRACE_SUFFIXES:
            base = base.removesuffix(suffix)
        output = first_input.parent / f"{base}.duckdb"
    return output.with_suffix("") if dataset else output


def register_run(con: duckdb.DuckDBPyConnection, run_id: int, options: ConvertOptions, **fields: Any) -> None:
    """Insert the runs row: what the source says, overridden by what the caller knows (level, model...)."""
    merged = {**fields, **{k: v for k, v in options.run_fields.items() if v is not None}}
    if options.label is not None:
        merged["label"] = options.label
    insert_run(con, run_id, **merged)
