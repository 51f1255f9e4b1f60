"""Many traces on a Ray cluster: one Ray Data task per trace, the results merged into one Parquet dataset.

The fan-out is `ray.data.from_items(inputs).map(convert one trace)`: every task runs exactly the
sequential converter on its trace into a private Parquet dataset (run ids from 1) under a staging
folder beside the output. A retried task first removes what an earlier attempt left, so retries
are idempotent. The driver then numbers the runs from the input list -- the runs of input i come
after those of inputs 0..i-1, starting at `run_id_offset + 1` -- and moves each
`<table>/run_id=N` folder into place under its final number: a rename per partition, no data is
rewritten (hive partitioning keeps run_id in the folder name only). The dataset is renamed into
place at the end by xsp_trace/output_files.py, so the output is all or nothing, like every convert.

Run ids therefore equal those of a sequential convert of the same list (offset 0), whatever
order the tasks finish in, and several jobs over disjoint input lists can share one dataset by
giving each its offset. The staging folder must be on storage every Ray worker can write (a
shared file system on a multi-node cluster; any local folder for a local Ray). A local Ray is
the command's own and dies with it (convert/ray_lifetime.py).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import InputError
from ..output_files import atomic_output, parts_path, run_interruptibly
from ..store.dataset import MARKER, write_marker
from .common import ConvertOptions, Progress, detect_source, no_progress
from .ray_lifetime import ray_session

RUN_PARTITION = "run_id="
RAY_LOGGERS = ("ray", "ray.data")  # each has its own handler on stderr and does not propagate


def _ray():
    try:
        import ray
        import ray.data  # noqa: F401  (Ray Data is a separate extra)
    except ImportError as exc:
        raise InputError(None, f"--engine ray needs Ray Data ({exc})", 'pip install "xsp-trace[ray]"') from None
    return ray


@contextmanager
def _quiet_ray_data(ray) -> Iterator[None]:
    """Nothing from Ray on the terminal while the data runs: no progress bars, no log lines (the
    console handlers of Ray's loggers are muted; Ray Data's printed the WARNING "Progress bars
    disabled" that turning them off brings, before convert's one error line), no deprecation
    warnings (the per-task retry limit is only reachable through ray_remote_args_fn, which newer
    Ray marks deprecated). Ray Data's log file keeps its lines; convert reports its own progress
    and errors."""
    context = ray.data.DataContext.get_current()
    saved = (context.enable_progress_bars, context.print_on_execution_start)
    context.enable_progress_bars, context.print_on_execution_start = False, False
    consoles = [
        handler
        for name in RAY_LOGGERS
        for handler in logging.getLogger(name).handlers
        if isinstance(handler, logging.StreamHandler) and not isinstance(handler, logging.FileHandler)
    ]
    levels = [h.level for h in consoles]
    for handler in consoles:
        handler.setLevel(logging.CRITICAL + 1)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*ray_remote_args_fn.*")
            yield
    finally:
        context.enable_progress_bars, context.print_on_execution_start = saved
        for handler, level in zip(consoles, levels, strict=True):
            handler.setLevel(level)


def _convert_task(row: dict, options: ConvertOptions) -> dict:
    """Ray task: one trace into its own Parquet dataset; idempotent (an earlier attempt's folder is removed)."""
    from .dataset_output import into_dataset
    from .local import convert_files

    part, trace = Path(row["part"]), Path(row["path"])
    shutil.rmtree(part, ignore_errors=True)
    try:
        into_dataset(part, [trace], lambda staging: convert_files([trace], staging, options, overwrite=True, analyses=False), overwrite=True)
    except InputError as exc:
        return {"index": row["index"], "runs": [], "error": str(exc)}
    runs = sorted(int(p.name[len(RUN_PARTITION) :]) for p in (part / "runs").iterdir() if p.name.startswith(RUN_PARTITION))
    return {"index": row["index"], "runs": runs, "error": ""}


def convert_with_ray(
    inputs: list[Path],
    output: Path,
    options: ConvertOptions,
    *,
    address: str | None = None,
    run_id_offset: int = 0,
    overwrite: bool = False,
    max_retries: int = 3,
    progress: Progress = no_progress,
) -> list[int]:
    """Convert `inputs` on Ray (the cluster at `address`, or a local one) into the Parquet dataset `output`."""
    inputs = [Path(p).resolve() for p in inputs]
    for path in inputs:  # check all inputs before starting anything
        detect_source(path)
    output = Path(output)
    if run_id_offset < 0:
        raise InputError(None, f"--run-id-offset {run_id_offset} is negative", "pass 0 or more")
    ray = _ray()
    with atomic_output(
        output, folder=True, replace=overwrite, inputs=inputs, exists_fix="pass --overwrite to replace it, or choose another output folder"
    ) as final:
        staging = parts_path(output)
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir()
        try:
            with ray_session(ray, address, leftovers=[staging, final], output=output):
                progress(f"converting {len(inputs)} traces on Ray", None)
                items = [{"index": i, "path": str(p), "part": str(staging / f"part{i:06d}")} for i, p in enumerate(inputs)]
                with _quiet_ray_data(ray):
                    dataset = ray.data.from_items(items, override_num_blocks=len(items)).map(
                        _convert_task, fn_kwargs={"options": options}, num_cpus=1, ray_remote_args_fn=lambda: {"max_retries": max_retries}
                    )
                    results = run_interruptibly(dataset.take_all)
            results.sort(key=lambda r: r["index"])
            failed = [r for r in results if r["error"]]
            if failed:
                raise InputError(None, failed[0]["error"], "fix or leave out that input; nothing was written")
            return _merge_parts(staging, final, results, run_id_offset)
        finally:
            shutil.rmtree(staging, ignore_errors=True)


def _merge_parts(staging: Path, final: Path, results: list[dict], run_id_offset: int) -> list[int]:
    """Move each part's run partitions into `final` under run ids numbered in input order."""
    final.mkdir()
    marker: dict | None = None
    run_ids: list[int] = []
    next_id = run_id_offset + 1
    for result in results:
        part = staging / f"part{result['index']:06d}"
        mapping = {local: next_id + n for n, local in enumerate(result["runs"])}
        next_id += len(mapping)
        run_ids.extend(mapping.values())
        part_marker = json.loads((part / MARKER).read_text())
        if marker is None:
            marker = part_marker
        for table in part_marker["tables"]:
            source, target = part / table, final / table
            if not source.is_dir():
                continue
            target.mkdir(exist_ok=True)
            for child in source.iterdir():
                if child.name.startswith(RUN_PARTITION):
                    local = int(child.name[len(RUN_PARTITION) :])
                    os.replace(child, target / f"{RUN_PARTITION}{mapping[local]}")
                elif not (target / child.name).exists():  # a table without runs (schema_info): the first part's copy
                    os.replace(child, target / child.name)
    assert marker is not None  # at least one input
    write_marker(final, marker["tables"])  # lists the files under their final run ids
    return run_ids
