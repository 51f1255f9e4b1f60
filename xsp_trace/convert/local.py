"""In this process: inputs into one database (convert_files), one input into an open database
(convert_into: a trace through dispatch.py, a capture run directory through run_dir.py), pipes
spooled into temporary files first (spooled). The engine every other engine's workers run."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

from ..analyze.install import install_analyses
from ..errors import InputError
from ..output_files import private_temp_prefix
from ..store.database import atomic_database
from .common import ConvertOptions, Progress, detect_source, no_progress
from .dispatch import convert_trace
from .input_limits import InputLimits


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
    analyses: bool = True,
    facts: dict[str, str] | None = None,
) -> list[int]:
    """Convert inputs into one database written atomically at `output` (with the analyses installed
    in it unless `analyses` is False: a staging database that becomes a Parquet dataset), with
    `facts` added to its schema_info (what a cache entry records of its trace)."""
    run_ids: list[int] = []
    for path in inputs:  # check all inputs before writing anything
        detect_source(Path(path))
    with (
        atomic_database(output, append=append, overwrite=overwrite, inputs=inputs) as con,
        spooled(inputs, options.limits) as paths,
    ):
        for path in paths:
            run_ids.extend(convert_into(con, Path(path), options, progress))
        restore_stream_names(con, inputs, paths)
        if facts:
            con.executemany("INSERT OR REPLACE INTO schema_info VALUES (?, ?)", list(facts.items()))
        if analyses:
            install_analyses(con)
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
