"""The one place that picks how a convert runs: in this process (convert/local.py), in worker
processes (convert/processes.py) or on Ray (convert/ray_engine.py), into a DuckDB database or a
Parquet dataset (convert/dataset_output.py). The engines never call each other: each converts
its inputs and returns; the choice is made here, from the inputs and the options.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from ..errors import InputError
from .common import ConvertOptions, Progress, no_progress
from .dataset_output import into_dataset
from .local import convert_files
from .processes import convert_files_parallel, default_jobs

Engine = Literal["local", "ray"]
StoreFormat = Literal["duckdb", "parquet"]


def convert_inputs(
    inputs: list[Path],
    output: Path,
    options: ConvertOptions,
    *,
    engine: Engine = "local",
    store: StoreFormat = "duckdb",
    jobs: int | None = None,
    append: bool = False,
    overwrite: bool = False,
    ray_address: str | None = None,
    run_id_offset: int = 0,
    progress: Progress = no_progress,
) -> list[int]:
    """Convert `inputs` into `output`; the run ids added. `engine="ray"` writes a Parquet dataset
    on a Ray cluster; locally, `jobs` worker processes (default: one per usable core) convert
    several inputs at once, and one input or `jobs=1` converts in this process."""
    inputs = [Path(p) for p in inputs]  # each engine checks every input before it writes anything
    output = Path(output)
    if engine == "ray":
        from .ray_engine import convert_with_ray

        if append or store != "parquet" and output.suffix == ".duckdb":
            raise InputError(output, "--engine ray writes a new Parquet dataset folder", "pass -o FOLDER (and --format parquet), without --append")
        return convert_with_ray(inputs, output, options, address=ray_address, run_id_offset=run_id_offset, overwrite=overwrite, progress=progress)
    workers = default_jobs() if jobs is None else max(1, int(jobs))

    def into_database(database: Path, *, append: bool, overwrite: bool, analyses: bool = True) -> list[int]:
        if workers == 1 or len(inputs) == 1:
            return convert_files(inputs, database, options, append=append, overwrite=overwrite, progress=progress, analyses=analyses)
        return convert_files_parallel(
            inputs, database, options, jobs=workers, append=append, overwrite=overwrite, progress=progress, analyses=analyses
        )

    if store == "parquet":
        if append:
            raise InputError(output, "--append works on DuckDB databases only", "convert into a new Parquet folder")
        return into_dataset(
            output,
            inputs,
            lambda staging: into_database(staging, append=False, overwrite=True, analyses=False),
            overwrite=overwrite,
            progress=progress,
        )
    return into_database(output, append=append, overwrite=overwrite)
