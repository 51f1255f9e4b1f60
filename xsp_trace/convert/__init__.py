"""`convert`: any supported trace (or a capture run directory) into the unified DuckDB schema.

Each source has a module here with `convert_<source>(con, path, run_id, options, progress)`;
this module picks the source by looking at the file and runs the correlation afterwards.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

import duckdb

from ..correlate import correlate_run
from ..database import atomic_database, insert_run, next_run_id
from ..errors import InputError
from .validate import reading_errors

SQLITE_MAGIC = b"SQLite format 3\x00"
NSYS_REPORT_MAGIC = b"NVIDIA Tegra Profiler Report"
GZIP_MAGIC = b"\x1f\x8b"


@dataclass
class ConvertOptions:
    nsys: str | None = None  # path of the nsys binary for .nsys-rep inputs
    label: str | None = None
    run_fields: dict = field(default_factory=dict)  # extra runs columns (level, model, batch_size...)
    include_python_functions: bool = False  # Kineto python_function events (off by default, as HTA)
    kineto_reader: str = "auto"  # "auto": DuckDB's JSON reader (kineto_fast), Python for odd files; "python": always Python


Progress = Callable[[str, float | None], None]  # (what, fraction done or None)


def _no_progress(what: str, fraction: float | None) -> None:
    pass


def detect_source(path: Path) -> str:
    """'nsys-rep', 'nsys-sqlite', 'kineto' or 'run-dir' for a path, or InputError."""
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


def convert_into(con: duckdb.DuckDBPyConnection, path: Path, options: ConvertOptions, progress: Progress = _no_progress) -> list[int]:
    """Convert one input into an open database; returns the run ids it added."""
    path = Path(path)
    source = detect_source(path)
    if source == "stream":
        raise InputError(path, "is a pipe or device, read through convert_files only", "save it to a file first")
    if source == "run-dir":
        from .run_dir import convert_run_dir

        return convert_run_dir(con, path, options, progress)
    run_id = next_run_id(con)
    with reading_errors(path):
        if source in ("nsys-rep", "nsys-sqlite"):
            from .nsys import convert_nsys

            convert_nsys(con, path, run_id, options, progress)
        else:
            from .kineto import convert_kineto

            convert_kineto(con, path, run_id, options, progress)
    progress("correlating", None)
    correlate_run(con, run_id)
    return [run_id]


def register_run(con: duckdb.DuckDBPyConnection, run_id: int, options: ConvertOptions, **fields) -> None:
    """Insert the runs row: what the source says, overridden by what the caller knows (level, model...)."""
    merged = {**fields, **{k: v for k, v in options.run_fields.items() if v is not None}}
    if options.label is not None:
        merged["label"] = options.label
    insert_run(con, run_id, **merged)


def convert_files(
    inputs: list[Path],
    output: Path,
    options: ConvertOptions,
    *,
    append: bool = False,
    overwrite: bool = False,
    progress: Progress = _no_progress,
) -> list[int]:
    """Convert inputs into one database written atomically at `output`."""
    run_ids: list[int] = []
    for path in inputs:  # check all inputs before writing anything
        detect_source(Path(path))
    with atomic_database(output, append=append, overwrite=overwrite, inputs=inputs) as con, spooled(inputs) as paths:
        for path in paths:
            run_ids.extend(convert_into(con, Path(path), options, progress))
        restore_stream_names(con, inputs, paths)
    return run_ids


def restore_stream_names(con: duckdb.DuckDBPyConnection, inputs: list[Path], paths: list[Path]) -> None:
    """runs.source_path of a spooled pipe: the path the user gave, not the temporary copy."""
    for original, path in zip(inputs, paths):
        if Path(path) != Path(original):
            con.execute("UPDATE runs SET source_path = ? WHERE source_path = ?", [str(original), str(path)])


SPOOL_CHUNK = 1 << 20


@contextmanager
def spooled(inputs: list[Path]) -> Iterator[list[Path]]:
    """The inputs, with each pipe/device (a FIFO, `<(cat t.json)`) copied once into a temporary file
    (`$TMPDIR/xsp-stream-*`, removed afterwards): the converters read a file more than once.
    A FIFO without a writer reads as empty instead of blocking the open."""
    folder = None
    paths = []
    try:
        for path in map(Path, inputs):
            if path.exists() and not path.is_dir() and not path.is_file():
                folder = folder or Path(tempfile.mkdtemp(prefix="xsp-stream-"))
                copy = folder / f"{len(paths)}-{path.name}"
                fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
                os.set_blocking(fd, True)
                with os.fdopen(fd, "rb") as src, open(copy, "wb") as dst:
                    shutil.copyfileobj(src, dst, SPOOL_CHUNK)
                paths.append(copy)
            else:
                paths.append(path)
        try:
            yield paths
        except InputError as exc:  # name the pipe the user gave, not its temporary copy
            for original, path in zip(inputs, paths):
                if exc.path == str(path) and path != Path(original):
                    raise InputError(original, exc.problem, exc.fix) from exc
            raise
    finally:
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
