"""`convert`: any supported trace (or a capture run directory) into the unified DuckDB schema.

Each source has a module here with `convert_<source>(con, path, run_id, options, progress)`;
dispatch.py picks the source by looking at the file and runs the correlation afterwards, run_dir.py
converts a capture run directory, and this module writes the database. What the converters share
(options, progress, source detection) lives in common.py and is re-exported here.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

from ..database import atomic_database
from ..errors import InputError
from ..output_files import private_temp_prefix
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
from .input_limits import InputLimits

__all__ = [
    "GZIP_MAGIC",
    "NSYS_REPORT_MAGIC",
    "SQLITE_MAGIC",
    "ConvertOptions",
    "Progress",
    "convert_files",
    "convert_into",
    "convert_trace",
    "default_output",
    "detect_source",
    "no_progress",
    "register_run",
    "restore_stream_names",
    "spooled",
]


def convert_into(con: duckdb.DuckDBPyConnection, path: Path, options: ConvertOptions, progress: Progress = no_progress) -> list[int]:
    """Convert one input into an open database; returns the run ids it added."""
    path = Path(path)
    source = detect_source(path)
    if source == "stream":
        raise InputError(path, "is a pipe or device, read through convert_files only", "save it to a file first")
    if source == "run-dir":
        from .run_dir import convert_run_dir

        return convert_run_dir(con, path, options, progress)
    return convert_trace(con, path, options, progress)


def convert_files(
    inputs: list[Path],
    output: Path,
    options: ConvertOptions,
    *,
    append: bool = False,
    overwrite: bool = False,
    progress: Progress = no_progress,
) -> list[int]:
    """Convert inputs into one database written atomically at `output`."""
    run_ids: list[int] = []
    for path in inputs:  # check all inputs before writing anything
        detect_source(Path(path))
    with atomic_database(output, append=append, overwrite=overwrite, inputs=inputs) as con, spooled(inputs, options.limits) as paths:
        for path in paths:
            run_ids.extend(convert_into(con, Path(path), options, progress))
        restore_stream_names(con, inputs, paths)
    return run_ids


def restore_stream_names(con: duckdb.DuckDBPyConnection, inputs: list[Path], paths: list[Path]) -> None:
    """runs.source_path of a spooled pipe: the path the user gave, not the temporary copy."""
    for original, path in zip(inputs, paths, strict=True):
        if Path(path) != Path(original):
            con.execute("UPDATE runs SET source_path = ? WHERE source_path = ?", [str(original), str(path)])


SPOOL_CHUNK = 1 << 20


@contextmanager
def spooled(inputs: list[Path], limits: InputLimits) -> Iterator[list[Path]]:
    """The inputs, with each pipe/device (a FIFO, `<(cat t.json)`) copied once into a temporary file
    (`$TMPDIR/xsp-stream-*`, removed afterwards): the converters read a file more than once.
    A FIFO without a writer reads as empty instead of blocking the open; a copy stops at
    limits.max_input_bytes with one line."""
    folder = None
    paths: list[Path] = []
    try:
        for path in map(Path, inputs):
            if path.exists() and not path.is_dir() and not path.is_file():
                folder = folder or Path(tempfile.mkdtemp(prefix=private_temp_prefix("stream")))
                copy = folder / f"{len(paths)}-{path.name}"
                fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
                os.set_blocking(fd, True)
                with os.fdopen(fd, "rb") as src, open(copy, "wb") as dst:
                    while chunk := src.read(SPOOL_CHUNK):
                        dst.write(chunk)
                        limits.check_size(path, dst.tell(), "runs to")
                paths.append(copy)
            else:
                paths.append(path)
        try:
            yield paths
        except InputError as exc:  # name the pipe the user gave, not its temporary copy
            for original, path in zip(inputs, paths, strict=True):
                if exc.path == str(path) and path != Path(original):
                    raise InputError(original, exc.problem, exc.fix) from exc
            raise
    finally:
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
