"""Export an xsp-trace database as one Perfetto protobuf trace (TrackEvent), streamed.

Each run's spans are read in parts cut by start time (queries/perfetto/slice_parts.sql,
slices.sql), each part as one Arrow batch, sorted with numpy (slice_order.py) and encoded a
batch at a time (slice_encoder.py) into a temporary file that replaces the output only at the
end: memory holds two parts (the next one is read while this one is encoded), the encoder one
batch and bounded intern tables, DuckDB its slices_memory_limit (the details the parts join spill
beyond it; a part reads only its own rows of them).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from ..errors import InputError
from ..output_files import atomic_output, check_output_path, refuse_inputs
from ..read_ahead import read_ahead
from ..resources import query_text
from ..store.connection import memory_limit, thread_count
from ..store.opening import open_store
from ..store.run_alignment import Alignment, check_alignment, create_time_zeros
from ..store.sql import set_variables, values_readable
from .cpu_activity import write_cpu_activity
from .packets import PacketWriter
from .slice_encoder import BatchExtras, SliceEncoder
from .slice_order import TRACK_HASH, TRACK_KEY, SharedTrackHash, SpanTracks, args_in_order, flows_in_order, in_order, rows_in_order, sort_part
from .tracks import TrackRegistry

SPAN_KINDS = ("model", "layer", "op", "annotation", "api", "kernel", "memcpy", "memset", "sync", "other")
EXTRA_KINDS = ("mark", "counter", "cpu_sample", "thread_state")  # --kinds values that select what is not a span
MARK_CATEGORY = "mark"
# The slices go on a sequence of their own (the writer's are 1: descriptors, 2: marks, counters, critical path).
SLICE_SEQUENCE_ID = 3
# Salts of the track hashes (perfetto_span_tracks, select.sql), tried in turn until no two tracks share one.
TRACK_HASH_SALTS = range(8)


@dataclass
class PerfettoOptions:
    run_ids: list[int] | None = None  # None: every run of the database
    kinds: list[str] | None = None  # span kinds, plus 'mark' and 'counter'; None: everything
    from_ns: int | None = None  # window start, ns after each run's time zero (xsp_trace/store/run_alignment.py)
    to_ns: int | None = None  # window end (exclusive)
    # where each run's time 0 lies (store/run_alignment.py): origin (its first event), utc (the runs' shared
    # first instant on the absolute clock), own (each run's own clock)
    align: Alignment = "origin"
    batch_rows: int = 25_000  # rows per Arrow batch read from DuckDB, and per batch the slice encoder writes
    # Rows (spans and their args) per part of the slices query (perfetto/slice_parts.sql): one part at a time is held
    # and sorted (slice_order.py), so memory follows this, not the trace size; fewer, larger parts pay each
    # part's fixed costs fewer times (BENCHMARKS.md, "Perfetto export").
    part_rows: int = 75_000
    max_interned: int = 200_000  # intern table entries before the incremental state is reset
    # DuckDB's memory for the joins and sorts of the export (tracks, marks, counters, critical path);
    # beyond it they spill to a temporary folder. The slices are sorted outside DuckDB.
    duckdb_memory_limit: str = "512MB"
    # DuckDB's memory while the details the slices join (perfetto/slice_args.sql, slice_parts.sql)
    # are built once; beyond it they spill. Lower, a large Kineto trace's args join runs out of memory.
    slice_details_memory_limit: str = "128MB"
    # DuckDB's memory while the parts are read (each part reads only its own rows of the details
    # back): the export's peak is set while streaming, so lower than the build's.
    slices_memory_limit: str = "64MB"
    critical_path: bool = False  # add each run's critical path as a track of its own, with flows along it


@dataclass
class ExportStats:
    slices: int = 0
    flows: int = 0
    instants: int = 0
    counter_samples: int = 0
    thread_tracks: int = 0
    gpu_stream_tracks: int = 0
    lane_tracks: int = 0
    counter_tracks: int = 0
    packets: int = 0
    bytes: int = 0
    runs: list[int] = field(default_factory=list)


def _check_options(con: duckdb.DuckDBPyConnection, database: Path | None, options: PerfettoOptions) -> None:
    if options.kinds is not None:
        unknown = sorted(set(options.kinds) - set(SPAN_KINDS) - set(EXTRA_KINDS))
        if unknown:
            raise InputError(None, f"unknown kind(s) {', '.join(unknown)}", f"choose from {', '.join(SPAN_KINDS + EXTRA_KINDS)}")
    if options.from_ns is not None and options.to_ns is not None and options.from_ns >= options.to_ns:
        raise InputError(
            None, f"the window start {options.from_ns} ns is not before its end {options.to_ns} ns", "give --from-ns smaller than --to-ns"
        )
    check_alignment(options.align)
    known = {r[0] for r in con.execute("SELECT run_id FROM runs").fetchall()}
    if not known:
        raise InputError(database, "holds no runs", "convert a trace into it first")
    if options.run_ids is not None:
        missing = sorted(set(options.run_ids) - known)
        if missing:
            raise InputError(database, f"has no run {', '.join(map(str, missing))}", f"pick from runs {', '.join(map(str, sorted(known)))}")


def _check_origins(con: duckdb.DuckDBPyConnection, database: Path | None) -> None:
    """One line for a run with an event before the time the export shifts to 0 (runs.origin_ns,
    the run's first event, edited by hand to a later time): Perfetto's timestamps are unsigned."""
    early = con.execute(
        """
        SELECT r.run_id, r.origin_ns FROM perfetto_runs AS r
        WHERE EXISTS (SELECT 1 FROM spans AS s WHERE s.run_id = r.run_id AND s.start_ns < r.shift_ns)
           OR EXISTS (SELECT 1 FROM marks AS m WHERE m.run_id = r.run_id AND m.ts_ns < r.shift_ns)
           OR EXISTS (SELECT 1 FROM counters AS c WHERE c.run_id = r.run_id AND c.ts_ns < r.shift_ns)
        ORDER BY r.run_id LIMIT 1
        """
    ).fetchall()
    if early:
        run_id, origin = early[0]
        raise InputError(
            database,
            f"run {run_id} has events before its runs.origin_ns ({origin}), which convert sets to its first event: edited by hand?",
            "convert the traces again",
        )


def _select(con: duckdb.DuckDBPyConnection, options: PerfettoOptions, database: Path | None = None) -> SpanTracks:
    """Select what the export shows (perfetto/select.sql); the tracks of its spans."""
    create_time_zeros(con, options.align, options.run_ids, database)
    variables = {
        "xsp_perfetto_run_ids": options.run_ids,
        "xsp_perfetto_kinds": options.kinds,
        "xsp_perfetto_from_ns": options.from_ns,
        "xsp_perfetto_to_ns": options.to_ns,
        "xsp_perfetto_align": options.align,
    }
    set_variables(con, variables)
    for salt in TRACK_HASH_SALTS:
        set_variables(con, {"xsp_perfetto_track_salt": salt})
        con.execute(query_text("perfetto/select"))
        try:
            return SpanTracks(con.execute(f"SELECT {', '.join(TRACK_KEY)}, {TRACK_HASH} FROM perfetto_span_tracks").fetchall())
        except SharedTrackHash:
            continue
    raise RuntimeError(f"the export's tracks share a hash under each of {len(TRACK_HASH_SALTS)} salts")


def _batches(con: duckdb.DuckDBPyConnection, query: str, batch_rows: int, skip_null_columns: bool = False):
    """Column dicts (name -> Python list) of a query's result, one per Arrow batch (streamed).
    With skip_null_columns, columns that are NULL throughout the batch are left out."""
    for batch in con.sql(query_text(query)).to_arrow_reader(batch_rows):
        if skip_null_columns:
            yield {
                name: column.to_pylist() for name, column in zip(batch.schema.names, batch.columns, strict=True) if column.null_count < batch.num_rows
            }
        else:
            yield batch.to_pydict()


def _rows(con: duckdb.DuckDBPyConnection, query: str, batch_rows: int):
    """Rows of a query as dicts."""
    for columns in _batches(con, query, batch_rows):
        names = list(columns)
        for values in zip(*(columns[n] for n in names), strict=True):
            yield dict(zip(names, values, strict=True))


def _write_slices(con, writer: PacketWriter, tracks: TrackRegistry, span_tracks: SpanTracks, options: PerfettoOptions, stats: ExportStats) -> None:
    """The spans as slices, encoded from Arrow batches (slice_encoder.py) on a sequence of their own."""
    parts = slice_parts(con, options)
    # Each part's queries on one DuckDB thread: a second one cost half as much CPU again for the
    # same wall time (the other core encodes), and split each part into two Arrow batches to join.
    with memory_limit(con, options.slices_memory_limit), thread_count(con, 1):
        _write_slice_parts(con, writer, tracks, span_tracks, options, stats, parts)


def slice_parts(con: duckdb.DuckDBPyConnection, options: PerfettoOptions) -> list[tuple[int, int, int]]:
    """(run, first start, last start) of each part of the slices, after building the details the
    parts join (under slice_details_memory_limit: they spill beyond it)."""
    with memory_limit(con, options.slice_details_memory_limit):
        con.execute(query_text("perfetto/slice_args"))
        set_variables(con, {"xsp_perfetto_part_rows": options.part_rows})
        return con.execute(query_text("perfetto/slice_parts")).fetchall()


def _write_slice_parts(
    con, writer: PacketWriter, tracks: TrackRegistry, span_tracks: SpanTracks, options: PerfettoOptions, stats: ExportStats, parts: list
) -> None:

    def fetch(run_id, part_first, part_last):
        set_variables(con, {"xsp_perfetto_part_run": run_id, "xsp_perfetto_part_first": part_first, "xsp_perfetto_part_last": part_last})
        part = sort_part(con.sql(query_text("perfetto/slices")).to_arrow_table().to_batches(), span_tracks)
        # what the part's rows carry beside their columns, each from a query of its own (none for an empty part)
        details, args, flows = (
            con.sql(query_text(f"perfetto/slice_part_{what}")).to_arrow_table() if part is not None else None for what in ("details", "args", "flows")
        )
        rows = options.batch_rows
        extras = zip(args_in_order(part, args, rows), rows_in_order(part, details, rows), *flows_in_order(part, flows, rows), strict=True)
        # taken in order here too: the encoder's thread gets batches ready to encode
        return list(zip(in_order(part, rows), (BatchExtras(*found) for found in extras), strict=True))

    # The next part is read and sorted on a thread of its own while the encoder writes this one
    # (DuckDB and numpy leave the GIL; only that thread uses the connection until the loop ends).
    with ThreadPoolExecutor(max_workers=1) as encoding:
        encoder = SliceEncoder(writer, tracks, span_tracks.keys, sequence_id=SLICE_SEQUENCE_ID, max_interned=options.max_interned, pool=encoding)
        for part in read_ahead(lambda bounds: fetch(*bounds), parts, "xsp-perfetto-part"):
            encoder.write_part(part)
            del part  # (two parts in memory at most: this one goes before the next is taken)
        encoder.finish()
    stats.slices += encoder.slices
    stats.flows += encoder.flows


def _write_marks(con, writer: PacketWriter, tracks: TrackRegistry, options: PerfettoOptions, stats: ExportStats) -> None:
    for row in _rows(con, "perfetto/marks", options.batch_rows):
        uuid = tracks.base_track(row["run_id"], row["track_class"], row["pid"], row["tid"], None, None)
        args = [("category", row["category"])] if row["category"] is not None else []
        writer.instant(uuid, row["ts"], row["name"], MARK_CATEGORY, args)
        stats.instants += 1


def _write_counters(con, writer: PacketWriter, tracks: TrackRegistry, options: PerfettoOptions, stats: ExportStats) -> None:
    current_key = None
    uuid = 0  # set at the first row (no key is None)
    for row in _rows(con, "perfetto/counters", options.batch_rows):
        key = (row["run_id"], row["name"], row["pid"], row["device_id"])
        if key != current_key:
            uuid = tracks.counter(*key)
            current_key = key
        writer.counter(uuid, row["ts"], row["value"])
        stats.counter_samples += 1


# Flow ids of the critical path's links: above every id perfetto/slices.sql gives a launch
# (run_id * 2^40 + span id), so the two never collide.
CRITICAL_PATH_FLOW_BASE = 1 << 62
CRITICAL_PATH_CATEGORY = "critical_path"


def _write_critical_path(con, writer: PacketWriter, tracks: TrackRegistry, options: PerfettoOptions, stats: ExportStats) -> None:
    """One slice per segment of each step's critical path on a track of its own per run, each
    linked to the next by a flow, on the same clock and window as the spans."""
    from ..analyze.critical_path.walk import TABLE, build_critical_path
    from ..analyze.session import AnalysisOptions, prepare

    prepare(con, AnalysisOptions(runs=options.run_ids))
    build_critical_path(con)
    rows = con.execute(
        f"""
        SELECT p.run_id, p.on_run_id, p.iteration, p.kind, p.name, p.span_id,
            -- (not before 0: Perfetto's times are unsigned, and a step edited to start before the run's origin starts its path there)
            greatest(p.start_ns - r.shift_ns, 0) AS ts, greatest(p.end_ns - r.shift_ns, 0) AS end_ts
        FROM {TABLE} AS p JOIN perfetto_runs AS r ON r.run_id = p.on_run_id
        WHERE p.end_ns > coalesce(r.window_start_ns, p.end_ns - 1) AND p.start_ns < coalesce(r.window_end_ns, p.start_ns + 1)
        ORDER BY p.run_id, p.iteration NULLS FIRST, p.step_span_id, p.seq
        """
    ).fetchall()
    track_of: dict[tuple[int, int], int] = {}
    flow = CRITICAL_PATH_FLOW_BASE
    incoming: tuple[int, ...] = ()
    for i, (run_id, on_run_id, iteration, kind, name, span_id, ts, end) in enumerate(rows):
        if i == 0 or rows[i - 1][0] != run_id:
            incoming = ()
        if (run_id, on_run_id) not in track_of:  # a path through another rank gets a track of its own (that rank's clock)
            track_of[(run_id, on_run_id)] = tracks.critical_path(run_id, on_run_id)
        outgoing = (flow + 1,) if i + 1 < len(rows) and rows[i + 1][0] == run_id else ()
        int_args = [(k, v) for k, v in (("span_id", span_id), ("iteration", iteration), ("on_path_ns", end - ts)) if v is not None]
        title = f"{kind}: {name}" if name else kind
        writer.slice_begin(track_of[(run_id, on_run_id)], ts, title, CRITICAL_PATH_CATEGORY, int_args, [("kind", kind)], (), outgoing, incoming)
        writer.slice_end(track_of[(run_id, on_run_id)], end)
        stats.slices += 1
        stats.flows += len(outgoing)
        flow += 1
        incoming = outgoing


def write_trace(con: duckdb.DuckDBPyConnection, out, options: PerfettoOptions, database: Path | None = None) -> ExportStats:
    """Write the trace of an open database to a binary file object."""
    _check_options(con, database, options)
    con.execute("SET enable_progress_bar = false")  # the CLI prints its own summary
    span_tracks = _select(con, options, database)
    _check_origins(con, database)
    stats = ExportStats(runs=[r[0] for r in con.execute("SELECT run_id FROM perfetto_runs ORDER BY run_id").fetchall()])
    writer = PacketWriter(out, max_interned=options.max_interned)
    tracks = TrackRegistry(writer, list(_rows(con, "perfetto/tracks", options.batch_rows)))
    _write_slices(con, writer, tracks, span_tracks, options, stats)
    _write_marks(con, writer, tracks, options, stats)
    _write_counters(con, writer, tracks, options, stats)
    instants, slices = write_cpu_activity(writer, tracks, lambda query: _rows(con, query, options.batch_rows))
    stats.instants += instants
    stats.slices += slices
    if options.critical_path:
        _write_critical_path(con, writer, tracks, options, stats)
    writer.flush()
    stats.thread_tracks = len(tracks.threads)
    stats.gpu_stream_tracks = len(tracks.streams)
    stats.lane_tracks = tracks.lane_tracks
    stats.counter_tracks = tracks.counter_tracks
    stats.packets = writer.packets_written
    stats.bytes = writer.bytes_written
    return stats


def export_perfetto(database: Path, output: Path, options: PerfettoOptions | None = None) -> ExportStats:
    """Write `database` as a Perfetto trace at `output`, atomically (temp file, then rename)."""
    options = options or PerfettoOptions()
    database, output = Path(database), Path(output)
    check_output_path(output)
    refuse_inputs(output, [database])
    con = open_store(database, read_only=True)
    try:
        with atomic_output(output, inputs=[database]) as tmp:
            # DuckDB spills into the reading connection's private folder (data_only.lock_reading).
            con.execute("SET memory_limit = ?", [options.duckdb_memory_limit])
            with open(tmp, "wb", buffering=1 << 20) as out, values_readable(database):
                stats = write_trace(con, out, options, database)
    finally:
        con.close()
    return stats
