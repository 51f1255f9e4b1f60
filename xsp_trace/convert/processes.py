"""Many traces at once: each input converted in its own worker process, then merged in input order.

Every worker converts one input into a private DuckDB file (its runs numbered from 1) with
the same code as a sequential convert. The parent attaches the parts in input order and
copies every table into the output, shifting run ids past those already there -- so run ids
are the same as a sequential `convert` of the same inputs, whatever order the workers finish
in. The output is written atomically (temp file, then rename) like every convert; the parts
live in a temporary folder beside it and are removed whatever happens.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import shutil
import signal
import sys
import threading
import time
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path

import duckdb

from ..analyze.install import install_analyses
from ..output_files import (
    STOP_SIGNALS,
    install_signal_handlers,
    on_signal,
    parts_path,
    received_signal,
    remove_own_temp,
    remove_stale_temp,
    remove_temp,
    signals_held,
)
from ..store.connection import usable_cores
from ..store.database import atomic_database, next_run_id
from ..store.sql import quote_identifier
from .common import ConvertOptions, Progress, detect_source, no_progress
from .local import convert_into, restore_stream_names, spooled

_PR_SET_PDEATHSIG = 1  # linux/prctl.h
PARENT_POLL_S = 0.5  # a worker whose parent is gone stops within this (where PR_SET_PDEATHSIG is missing)
WORKER_STOP_S = 10.0  # after SIGTERM, a worker gets this long to remove its part before SIGKILL


def default_jobs() -> int:
    """Worker processes when the caller does not say: one per usable core."""
    return usable_cores()


_converting = threading.Event()  # set in a worker while it converts a part


def _worker_signal(signum, frame) -> None:
    """A worker converting unwinds (its part file and $TMPDIR folders are removed); an idle one,
    waiting for work in concurrent.futures' loop, exits at once -- unwinding there prints
    multiprocessing's traceback. A second signal while unwinding is ignored: a Ctrl-C reaches the
    worker and then the parent's SIGTERM does, and raising again would stop the clean-up half-way."""
    if _converting.is_set():
        if received_signal() is None:
            on_signal(signum, frame)
        return
    os._exit(128 + signum)


def _worker_start(parent_pid: int) -> None:
    """In each worker: unwind on SIGTERM/SIGINT (its part file is removed) and die with the parent,
    even a parent killed with SIGKILL: PR_SET_PDEATHSIG on Linux, and a thread watching the parent pid."""
    install_signal_handlers()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _worker_signal)
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os._exit(128 + signal.SIGTERM)
    threading.Thread(target=_watch_parent, args=(parent_pid,), daemon=True, name="xsp-parent-watch").start()
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)  # blocked since the spawn (output_files.signals_held)


def _watch_parent(parent_pid: int) -> None:
    while os.getppid() == parent_pid:
        time.sleep(PARENT_POLL_S)
    os.kill(os.getpid(), signal.SIGTERM)  # unwind: the part file is removed
    # A worker inside native code (a DuckDB or ADBC call that does not check for signals) may not
    # unwind soon; without its parent nobody waits for it, so it ends itself after the grace period,
    # removing its $TMPDIR folders first (the next writer would otherwise have to).
    deadline = time.monotonic() + WORKER_STOP_S
    while _converting.is_set() and time.monotonic() < deadline:
        time.sleep(0.05)
    remove_own_temp()
    os._exit(128 + signal.SIGTERM)


def _stop_workers(pool: ProcessPoolExecutor) -> None:
    """Cancel what has not started and stop the running workers now (SIGTERM: each removes its part)."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        if process.is_alive():
            process.terminate()
    deadline = time.monotonic() + WORKER_STOP_S
    for process in processes:
        process.join(max(0.0, deadline - time.monotonic()))
        if process.is_alive():
            process.kill()
            process.join(WORKER_STOP_S)  # reaped: a zombie would still count as alive below
    remove_stale_temp()  # the $TMPDIR folders of a worker killed before it could remove them


def _convert_part(path: str, part: str, options: ConvertOptions, threads: int) -> list[int]:
    """Worker: one input into its own database file (run ids from 1)."""
    _converting.set()
    try:
        with atomic_database(Path(part)) as con:
            con.execute(f"SET threads = {int(threads)}")
            return convert_into(con, Path(path), options)
    finally:
        remove_own_temp()  # none is left by a finished input; one is if a signal cut its clean-up short
        _converting.clear()


def merge_part(con: duckdb.DuckDBPyConnection, part: Path) -> list[int]:
    """Copy every run of the xsp-trace database `part` into `con`, with run ids after its own."""
    con.execute(f"ATTACH '{str(part).replace(chr(39), chr(39) * 2)}' AS _xsp_part (READ_ONLY)")
    try:
        offset = next_run_id(con) - 1
        part_runs = [r[0] for r in con.execute("SELECT run_id FROM _xsp_part.main.runs ORDER BY run_id").fetchall()]
        columns = dict(
            con.execute(
                "SELECT table_name, list(column_name ORDER BY column_index) FROM duckdb_columns() "
                "WHERE database_name = '_xsp_part' AND schema_name = 'main' GROUP BY table_name"
            ).fetchall()
        )
        mine = {
            r[0]
            for r in con.execute(
                "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() AND schema_name = 'main'"
            ).fetchall()
        }
        # runs first: the other tables refer to it.
        for table in sorted(columns, key=lambda t: (t != "runs", t)):
            if "run_id" not in columns[table]:
                continue  # schema_info: the output's own
            source = f"SELECT * REPLACE (run_id + {offset} AS run_id) FROM _xsp_part.main.{quote_identifier(table)}"
            if table in mine:
                con.execute(f"INSERT INTO main.{quote_identifier(table)} BY NAME {source}")
            else:  # a table only some inputs have (e.g. the capture side's)
                con.execute(f"CREATE TABLE main.{quote_identifier(table)} AS {source}")
        return [r + offset for r in part_runs]
    finally:
        con.execute("DETACH _xsp_part")


def convert_files_parallel(
    inputs: list[Path],
    output: Path,
    options: ConvertOptions,
    *,
    jobs: int | None = None,
    append: bool = False,
    overwrite: bool = False,
    progress: Progress = no_progress,
    analyses: bool = True,
) -> list[int]:
    """Convert inputs into one database at `output` with up to `jobs` worker processes.

    Same result as convert_files (same tables, same run ids), whatever `jobs` is (convert/engine.py
    converts one input, or with jobs=1, in this process instead). Workers are started with "spawn" (a fork would copy this
    process's DuckDB threads half-way), so a script calling this needs the usual
    `if __name__ == "__main__":` guard of multiprocessing.
    """
    inputs = [Path(p) for p in inputs]
    for path in inputs:  # check all inputs before starting anything
        detect_source(path)
    jobs = default_jobs() if jobs is None else max(1, int(jobs))
    output = Path(output)
    workers = min(jobs, len(inputs))
    threads = max(1, default_jobs() // workers)
    run_ids: list[int] = []
    with (
        atomic_database(output, append=append, overwrite=overwrite, inputs=inputs) as con,
        spooled(inputs, options.limits) as paths,
    ):
        parts_dir = parts_path(output)
        remove_temp(parts_dir)
        parts_dir.mkdir()
        try:
            # spawn: this process holds DuckDB threads, which a fork would copy half-way.
            pool = ProcessPoolExecutor(
                max_workers=workers, mp_context=multiprocessing.get_context("spawn"), initializer=_worker_start, initargs=(os.getpid(),)
            )
            try:
                parts = [parts_dir / f"part{i:05d}.duckdb" for i in range(len(inputs))]
                with signals_held():  # submit spawns the workers
                    futures: list[Future] = [
                        pool.submit(_convert_part, str(path), str(part), options, threads) for path, part in zip(paths, parts, strict=True)
                    ]
                for i, (future, part) in enumerate(zip(futures, parts, strict=True)):
                    future.result()  # an InputError of the worker is raised here, unchanged
                    progress(f"merging {inputs[i].name} ({i + 1}/{len(inputs)})", (i + 1) / len(inputs))
                    run_ids.extend(merge_part(con, part))
                    part.unlink()
            except BaseException:
                _stop_workers(pool)
                raise
            pool.shutdown(wait=True)
            restore_stream_names(con, inputs, paths)
            if analyses:
                install_analyses(con)
        finally:
            shutil.rmtree(parts_dir, ignore_errors=True)
    return run_ids
