"""A convert into a Parquet dataset folder (xsp_trace.store.dataset): the runs are converted into a
staging DuckDB database inside the folder being written, which is then written out as Parquet and
renamed into place, all or nothing. Used by every engine that writes a dataset (convert/engine.py,
and each task of convert/ray_engine.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..output_files import atomic_output, remove_temp
from .common import Progress, no_progress


def into_dataset(
    output: Path, inputs: list[Path], convert: Callable[[Path], list[int]], *, overwrite: bool = False, progress: Progress = no_progress
) -> list[int]:
    """`convert(staging_database)` the inputs, then write them as the Parquet dataset `output`."""
    from ..store.dataset import write_dataset_folder

    output = Path(output)
    with atomic_output(
        output, folder=True, replace=overwrite, inputs=inputs, exists_fix="pass --overwrite to replace it, or choose another output folder"
    ) as tmp:
        tmp.mkdir()
        staging = tmp / ".staging.duckdb"
        run_ids = convert(staging)
        progress("writing Parquet", None)
        write_dataset_folder(staging, tmp)
        remove_temp(staging)
    return run_ids
