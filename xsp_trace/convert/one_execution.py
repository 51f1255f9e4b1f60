"""One execution recorded by two profilers at once (nsys outside, the PyTorch profiler inside): one run.

`convert NSYS_EXPORT KINETO_TRACE --one-execution` and `convert` of a `capture --tool torch+nsys`
run directory come here. Both traces are read as they always are (no correlation yet), then:
1. One clock: the Kineto clock is put on the nsys clock first by the absolute times both recorded
   (runs.clock_origin_utc_ns: nsys's session start, Kineto's baseTimeNanoseconds), then refined by
   the ranges both recorded: the capture's model and layer ranges (NVTX in nsys, record_function
   annotations of the same names in Kineto), each Kineto range paired with the NVTX range of its
   name on its thread around its middle (on the absolute clocks: the first annotation the
   profiler records can start milliseconds after its NVTX range, so the nearest start misleads). On one clock the NVTX range encloses its annotation
   (it opens first, closes last): the offset is the middle of the offsets under which every pair
   does; the spread, the width of that interval, must stay within SPREAD_TOLERANCE_NS.
2. Merged, not doubled: a paired range is kept once (the nsys row, with the Kineto range's
   span_args added to it); every other Kineto row joins the run shifted onto the nsys clock under
   new span ids. span_sources says where each span came from, one_execution_alignments the offset.
3. The merged run is correlated once, so CPU spans of both sources nest in one stack per thread.
CUDA activity recorded by both is refused: two CUPTI clients in one process do not both see it
(docs/two_profilers.md), so there is nothing of it to pair.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np

from ..errors import InputError
from ..naming import GPU_KINDS
from ..store.connection import convert_block_memory, keep_block_memory
from ..store.database import next_run_id
from ..store.sql import one_row
from .common import ConvertOptions, Progress, detect_source, no_progress
from .correlate import correlate_run
from .dispatch import read_trace

# The paired ranges must leave the clock offset open over at most this much: a range's two records
# are taken by adjacent calls (NVTX push and the profiler's record_function enter), so the tightest
# pair bounds it by the cost of those calls; measured in docs/two_profilers.md, well under it.
SPREAD_TOLERANCE_NS = 200_000
# Pairs may contradict each other by this much (the two profilers' clock conversions round apart)
# before no single offset is accepted.
CONSISTENCY_TOLERANCE_NS = 2_000
# The span kinds both profilers record by name: the capture's ranges and user annotations.
_PAIRED_KINDS = ("model", "layer", "annotation")


def convert_one_execution_files(
    inputs: list[Path], output: Path, options: ConvertOptions, *, append: bool = False, overwrite: bool = False, progress: Progress = no_progress
) -> list[int]:
    """`convert NSYS KINETO --one-execution`: the two traces as one run of a database written atomically at `output`."""
    from ..analyze.install import install_analyses
    from ..store.database import atomic_database

    if len(inputs) != 2:
        raise InputError(
            None,
            f"--one-execution takes two traces of one execution, not {len(inputs)}",
            "pass the nsys report or export, then the PyTorch profiler trace",
        )
    with atomic_database(output, append=append, overwrite=overwrite, inputs=inputs) as con:
        run_ids = convert_one_execution(con, inputs[0], inputs[1], options, progress)
        install_analyses(con)
    return run_ids


def convert_one_execution(
    con: duckdb.DuckDBPyConnection, nsys_path: Path, kineto_path: Path, options: ConvertOptions, progress: Progress
) -> list[int]:
    """Convert an nsys export and a Kineto trace of one execution into one run; returns [its run id]."""
    nsys_path, kineto_path = Path(nsys_path), Path(kineto_path)
    nsys_source = detect_source(nsys_path)
    if nsys_source not in ("nsys-rep", "nsys-sqlite") or detect_source(kineto_path) != "kineto":
        raise InputError(
            nsys_path, "--one-execution takes an nsys report or export, then a PyTorch profiler trace", "pass the two files in that order"
        )
    run_id = next_run_id(con)
    scratch = run_id + 1
    keep_block_memory(con, convert_block_memory(nsys_path.stat().st_size + kineto_path.stat().st_size))
    read_trace(con, nsys_path, nsys_source, run_id, options, progress)
    read_trace(con, kineto_path, "kineto", scratch, options, progress)
    progress("aligning the two clocks", None)
    offset_ns, spread_ns, pairs = align(con, run_id, scratch, kineto_path)
    merge(con, run_id, scratch, offset_ns, pairs)
    con.execute(
        "INSERT INTO one_execution_alignments SELECT ?, 'kineto', ?, ?, ?, ?, ?",
        [run_id, str(kineto_path), offset_ns, spread_ns, len(pairs), SPREAD_TOLERANCE_NS],
    )
    progress("correlating", None)
    correlate_run(con, run_id, options.step_ranges)
    return [run_id]


def _ranges(con: duckdb.DuckDBPyConnection, run_id: int) -> dict[tuple[str, int | None], tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(name, tid) -> (span ids, starts, ends) sorted by start, of the run's paired kinds."""
    rows = con.execute(
        f"SELECT name, tid, span_id, start_ns, end_ns FROM spans WHERE run_id = ? AND kind IN {_PAIRED_KINDS} ORDER BY name, tid, start_ns",
        [run_id],
    ).fetchall()
    grouped: dict[tuple[str, int | None], list[tuple[int, int, int]]] = {}
    for name, tid, span_id, start, end in rows:
        grouped.setdefault((name, tid), []).append((span_id, start, end))
    return {key: tuple(np.array(column, dtype=np.int64) for column in zip(*values, strict=True)) for key, values in grouped.items()}  # type: ignore[misc]


def align(con: duckdb.DuckDBPyConnection, run_id: int, scratch: int, kineto_path: Path) -> tuple[int, int, dict[int, int]]:
    """(offset, spread, {Kineto span id: nsys span id}): Kineto time + offset = nsys time."""
    nsys_origin, kineto_origin = one_row(
        con,
        "SELECT max(clock_origin_utc_ns) FILTER (run_id = ?), max(clock_origin_utc_ns) FILTER (run_id = ?) FROM runs",
        [run_id, scratch],
    )
    if nsys_origin is None or kineto_origin is None:
        raise InputError(
            kineto_path,
            "one of the two traces records no absolute time (nsys session start, Kineto baseTimeNanoseconds)",
            "record both with their clocks",
        )
    gpu_kinds = (*GPU_KINDS, "api")
    both_gpu = one_row(
        con,
        f"SELECT count(*) FILTER (run_id = ? AND kind IN {gpu_kinds}) > 0 AND count(*) FILTER (run_id = ? AND kind IN {gpu_kinds}) > 0 FROM spans",
        [run_id, scratch],
    )[0]
    if both_gpu:
        raise InputError(
            kineto_path, "both traces hold CUDA activity, which one execution cannot record twice", "record CUDA with one of the profilers only"
        )
    coarse = kineto_origin - nsys_origin
    nsys_ranges, kineto_ranges = _ranges(con, run_id), _ranges(con, scratch)
    pairs: dict[int, int] = {}
    start_diffs: list[np.ndarray] = []
    end_diffs: list[np.ndarray] = []
    for key, (kineto_ids, kineto_starts, kineto_ends) in kineto_ranges.items():
        if key not in nsys_ranges:
            continue
        nsys_ids, nsys_starts, nsys_ends = nsys_ranges[key]
        nearest = _around(nsys_starts, nsys_ends, (kineto_starts + kineto_ends) // 2 + coarse)
        found = nearest >= 0
        if not found.all() or len(set(nearest.tolist())) != len(nearest):
            raise InputError(
                kineto_path,
                f"{int((~found).sum()) or 'some'} of its {key[0]!r} ranges have no NVTX range of that name of their own around them: not one execution",
                "pass the nsys export and the Kineto trace of one process",
            )
        pairs.update(zip(kineto_ids.tolist(), nsys_ids[nearest].tolist(), strict=True))
        start_diffs.append(nsys_starts[nearest] - kineto_starts)
        end_diffs.append(nsys_ends[nearest] - kineto_ends)
    if not pairs:
        raise InputError(
            kineto_path,
            "holds no range the nsys trace also holds (NVTX ranges and record_function annotations of the same names)",
            "record the capture's model and layer ranges with both profilers",
        )
    return (*_enclosing_offset(np.concatenate(start_diffs), np.concatenate(end_diffs), kineto_path), pairs)


def _enclosing_offset(start_diffs: np.ndarray, end_diffs: np.ndarray, kineto_path: Path) -> tuple[int, int]:
    """(offset, spread): the middle and the width of the offsets under which every NVTX range
    encloses its annotation (or every annotation its NVTX range: the order the program opened them).

    A range's two records are taken by adjacent calls, so on one clock the outer one opens first and
    closes last; each pair bounds the offset on one side by its start, on the other by its end. A
    thread descheduled between the two calls only widens its pair's bounds, where a mean or median
    of differences would move.
    """
    nvtx_outside = (int(start_diffs.max()), int(end_diffs.min()))
    annotation_outside = (int(end_diffs.max()), int(start_diffs.min()))
    low, high = max((nvtx_outside, annotation_outside), key=lambda bounds: bounds[1] - bounds[0])
    if high - low < -CONSISTENCY_TOLERANCE_NS:
        raise InputError(
            kineto_path,
            f"no single clock offset puts its ranges around or inside the nsys ranges of the same names (they disagree by {low - high} ns): not one execution",
            "pass the nsys export and the Kineto trace of one process",
        )
    if high - low > SPREAD_TOLERANCE_NS:
        raise InputError(
            kineto_path,
            f"its ranges leave the clock offset open over {high - low} ns, more than the {SPREAD_TOLERANCE_NS} ns tolerance: not one execution",
            "pass the nsys export and the Kineto trace of one process",
        )
    return (low + high) // 2, high - low


def _around(starts: np.ndarray, ends: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Index of the latest-starting range [starts, ends] (sorted by start) around each point, -1 where none is."""
    found = np.full(len(points), -1, dtype=np.int64)
    for number, candidate in enumerate(np.searchsorted(starts, points, side="right") - 1):
        while candidate >= 0 and ends[candidate] < points[number]:  # a range of the same name nested deeper, or an earlier one
            candidate -= 1
        found[number] = candidate
    return found


# The tables a converter writes (before correlation) and how a Kineto row joins the nsys run:
# its span ids renumbered, its times shifted. Processes, threads and devices of both are one set.
_SPAN_ID_TABLES = {
    "span_args": ("span_id",),
    "kernels": ("span_id",),
    "memops": ("span_id",),
    "metrics": ("span_id",),
    "launches": ("api_span_id", "gpu_span_id"),
}
_TIME_TABLES = {"marks": ("ts_ns",), "counters": ("ts_ns",), "memory_events": ("ts_ns",), "thread_states": ("start_ns", "end_ns")}
_SET_TABLES = {"processes": ("pid",), "threads": ("pid", "tid"), "devices": ("device_id",)}


def merge(con: duckdb.DuckDBPyConnection, run_id: int, scratch: int, offset_ns: int, pairs: dict[int, int]) -> None:
    """The Kineto run `scratch` into the nsys run `run_id`: paired ranges once, the rest shifted and renumbered."""
    base = one_row(
        con,
        "SELECT coalesce(max(span_id), -1) + 1 - (SELECT coalesce(min(span_id), 0) FROM spans WHERE run_id = ?) FROM spans WHERE run_id = ?",
        [scratch, run_id],
    )[0]
    con.execute("CREATE OR REPLACE TEMP TABLE _xsp_paired (kineto_id BIGINT, nsys_id BIGINT)")
    con.executemany("INSERT INTO _xsp_paired VALUES (?, ?)", list(pairs.items()))
    con.execute(
        """INSERT INTO span_sources
           SELECT $run, span_id, CASE WHEN span_id IN (SELECT nsys_id FROM _xsp_paired) THEN 'both' ELSE 'nsys' END FROM spans WHERE run_id = $run
           UNION ALL
           SELECT $run, span_id + $base, 'kineto' FROM spans WHERE run_id = $scratch AND span_id NOT IN (SELECT kineto_id FROM _xsp_paired)""",
        {"run": run_id, "scratch": scratch, "base": base},
    )
    columns = [
        r[0]
        for r in con.execute(
            "SELECT column_name FROM duckdb_columns() WHERE table_name = 'spans' AND schema_name = 'main' ORDER BY column_index"
        ).fetchall()
    ]
    moved = {"run_id": "$run", "span_id": "span_id + $base", "start_ns": "start_ns + $offset", "end_ns": "end_ns + $offset"}
    select = ", ".join(moved.get(c, c) for c in columns)
    con.execute(
        f"INSERT INTO spans SELECT {select} FROM spans WHERE run_id = $scratch AND span_id NOT IN (SELECT kineto_id FROM _xsp_paired)",
        {"run": run_id, "scratch": scratch, "base": base, "offset": offset_ns},
    )
    # A paired range's Kineto details go to the nsys row it is merged into.
    con.execute(
        "UPDATE span_args SET run_id = $run, span_id = p.nsys_id FROM _xsp_paired AS p WHERE span_args.run_id = $scratch AND span_args.span_id = p.kineto_id",
        {"run": run_id, "scratch": scratch},
    )
    for table, id_columns in _SPAN_ID_TABLES.items():
        assignments = ", ".join(f"{c} = {c} + $base" for c in id_columns)
        con.execute(f"UPDATE {table} SET run_id = $run, {assignments} WHERE run_id = $scratch", {"run": run_id, "scratch": scratch, "base": base})
    for table, time_columns in _TIME_TABLES.items():
        assignments = ", ".join(f"{c} = {c} + $offset" for c in time_columns)
        con.execute(
            f"UPDATE {table} SET run_id = $run, {assignments} WHERE run_id = $scratch", {"run": run_id, "scratch": scratch, "offset": offset_ns}
        )
    for table, keys in _SET_TABLES.items():
        same = " AND ".join(f"o.{k} IS NOT DISTINCT FROM {table}.{k}" for k in keys)
        con.execute(
            f"UPDATE {table} SET run_id = $run WHERE run_id = $scratch AND NOT EXISTS (SELECT 1 FROM {table} AS o WHERE o.run_id = $run AND {same})",
            {"run": run_id, "scratch": scratch},
        )
        con.execute(f"DELETE FROM {table} WHERE run_id = $scratch", {"scratch": scratch})
    con.execute("DELETE FROM spans WHERE run_id = ?", [scratch])
    con.execute("DELETE FROM runs WHERE run_id = ?", [scratch])
    con.execute("DROP TABLE _xsp_paired")
