"""`convert_kineto`: a PyTorch profiler (Kineto) trace.json[.gz] into the unified schema.

One mapping, in SQL: a reader fills the raw event relation `_kineto_events` (kineto/events.py)
-- DuckDB's JSON reader (kineto/duckdb_reader.py), one piece of ~128 MB of JSON at a time, or, for files it
does not take, the streaming ijson reader (kineto/python_reader.py), all at once -- and
queries/ingest/kineto_map.sql maps it (piece after piece, `_PieceMapper`) into the staging tables (spans
with their raw track and External id, launch flows, launch configurations) and the side tables
(kernels, memops, span_args, marks, counters; memory_events by queries/ingest/kineto_memory.sql).
queries/ingest/kineto_link.sql then fills missing correlation ids (flows, then External id), gives
GPU spans the pid of the host process that launched them and moves the spans into `spans`;
correlate_run (called by the dispatcher) nests and links them.

Times: Kineto writes microseconds (int, or decimals with up to 3 places). They become integer
ns exactly: ns = round_half_away_from_zero(us * 1000) of the DECIMAL value, never via float.
An end is rounded from ts + dur, so start + duration stays exact too.
"""

from __future__ import annotations

import gc
import re
from contextlib import contextmanager
from datetime import datetime, timezone
from decimal import Decimal
from pathlib import Path

import duckdb
import pyarrow as pa

from ...errors import InputError
from ...formats import kineto_fields as kf
from ...naming import install_sql_macros
from ...resources import query_text
from ...store.database import insert_relation, run_script
from ...store.sql import one_row
from ..common import ConvertOptions, Progress, register_run
from ..validate import TIME_LIMIT_NS, TIME_LIMIT_US, warn
from .events import PythonEventLoader, RepeatedArgKeys, check_events, load_with_python
from .python_reader import KinetoTrace

_STAGING_DDL = """
CREATE OR REPLACE TEMP TABLE _kineto_spans (
    span_id BIGINT, kind VARCHAR, name VARCHAR, category VARCHAR, start_ns BIGINT, end_ns BIGINT,
    pid BIGINT, tid BIGINT, device_id INTEGER, stream_id BIGINT, correlation_id BIGINT,
    layer_index INTEGER, external_id BIGINT, track_pid BIGINT, track_tid BIGINT);
CREATE OR REPLACE TEMP TABLE _kineto_flows (phase VARCHAR, flow_id BIGINT, pid BIGINT, tid BIGINT, ts_ns BIGINT);
CREATE OR REPLACE TEMP TABLE _kineto_launch_config (
    correlation_id BIGINT, pid BIGINT, grid_x INTEGER, grid_y INTEGER, grid_z INTEGER,
    block_x INTEGER, block_y INTEGER, block_z INTEGER, shared_mem_bytes BIGINT);
CREATE OR REPLACE TEMP TABLE _kineto_name_events (what VARCHAR, pid BIGINT, tid BIGINT, value VARCHAR, event_index BIGINT);
"""
_STAGING_DROP = (
    "DROP TABLE _kineto_spans; DROP TABLE _kineto_flows; DROP TABLE _kineto_launch_config; DROP TABLE _kineto_name_events; DROP TABLE _kineto_names;"
)
# The tables kineto_map.sql appends the rows of a run to, besides the staging tables.
_MAPPED_TABLES = ("kernels", "memops", "span_args", "marks", "counters", "memory_events")

_I64, _I32, _STR = pa.int64(), pa.int32(), pa.string()


_INT_TEXT = re.compile(r"-?[0-9]+")


def _as_int(value) -> int | None:
    """An integer field (JSON integer, integral decimal or digit string) within BIGINT, else None (as queries/ingest/kineto_map.sql)."""
    if type(value) is int:
        number = value
    elif isinstance(value, str) and _INT_TEXT.fullmatch(value):
        number = int(value)
    elif isinstance(value, Decimal) and value.is_finite() and value == value.to_integral_value():
        number = int(value)
    else:
        return None
    return number if _INT64_MIN <= number <= _INT64_MAX else None


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _set_variables(con: duckdb.DuckDBPyConnection, run_id: int, include_python: bool) -> None:
    """The facts of xsp_trace.formats.kineto_fields, by name, for kineto_map.sql and the checks."""
    values = {
        "kineto_run_id": run_id,
        "kineto_include_python": include_python,
        "kineto_category_names": [c for c, k in kf.CATEGORY_KIND.items() if k is not None],
        "kineto_category_kinds": [k for k in kf.CATEGORY_KIND.values() if k is not None],
        "kineto_dropped_categories": [c for c, k in kf.CATEGORY_KIND.items() if k is None],
        "kineto_user_annotation_categories": sorted(kf.USER_ANNOTATION_CATEGORIES),
        "kineto_gpu_annotation_categories": sorted(kf.GPU_ANNOTATION_CATEGORIES),
        "kineto_python_categories": sorted(kf.PYTHON_FUNCTION_CATEGORIES),
        "kineto_gpu_kinds": sorted(kf.GPU_ACTIVITY_KINDS),
        "kineto_flow_categories": sorted(kf.LAUNCH_FLOW_CATEGORIES),
        "kineto_phase_complete": kf.PHASE_COMPLETE,
        "kineto_phase_instant": list(kf.PHASE_INSTANT),
        "kineto_phase_counter": kf.PHASE_COUNTER,
        "kineto_phase_metadata": kf.PHASE_METADATA,
        "kineto_phase_flows": [kf.PHASE_FLOW_START, kf.PHASE_FLOW_END],
        "kineto_memory_instant": kf.MEMORY_INSTANT_NAME,
        "kineto_memory_counter_args": list(kf.MEMORY_COUNTER_ARGS),
        "kineto_memory_device_type_arg": kf.MEMORY_DEVICE_TYPE_ARG,
        "kineto_memory_device_id_arg": kf.MEMORY_DEVICE_ID_ARG,
        "kineto_memory_gpu_types": sorted(kf.MEMORY_DEVICE_TYPES_GPU),
        "kineto_memory_addr_arg": kf.MEMORY_ADDR_ARG,
        "kineto_memory_bytes_arg": kf.MEMORY_BYTES_ARG,
        "kineto_step_prefix": kf.PROFILER_STEP_PREFIX,
        "kineto_step_op_categories": sorted(kf.PROFILER_STEP_OP_CATEGORIES),
        "kineto_arg_correlation": kf.ARG_CORRELATION,
        "kineto_arg_external_id": kf.ARG_EXTERNAL_ID[0],
        "kineto_arg_external_id_old": kf.ARG_EXTERNAL_ID[1],
        "kineto_arg_device": kf.ARG_DEVICE,
        "kineto_arg_stream": kf.ARG_STREAM,
        "kineto_arg_bytes": kf.ARG_BYTES,
        "kineto_arg_memcpy_kind": kf.ARG_MEMCPY_KIND,
        "kineto_arg_grid": kf.ARG_GRID,
        "kineto_arg_block": kf.ARG_BLOCK,
        "kineto_arg_registers": kf.ARG_REGISTERS,
        "kineto_arg_shared_memory": kf.ARG_SHARED_MEMORY,
        "kineto_arg_blocks_per_sm": kf.ARG_BLOCKS_PER_SM,
        "kineto_arg_warps_per_sm": kf.ARG_WARPS_PER_SM,
        "kineto_arg_occupancy_percent": kf.ARG_OCCUPANCY_PERCENT,
        "kineto_no_stream_values": sorted(kf.NO_STREAM_VALUES),
        "kineto_typed_args": sorted(kf.TYPED_ARGS),
        "kineto_dropped_args": sorted(kf.DROPPED_ARGS),
        "kineto_graph_args": sorted(kf.GRAPH_ARGS),
        "kineto_not_in_graph": kf.NOT_IN_GRAPH,
        "kineto_memcpy_pattern": kf.MEMCPY_NAME_PATTERN,
        "kineto_memset_pattern": kf.MEMSET_NAME_PATTERN,
        "kineto_time_limit_us": TIME_LIMIT_US,
    }
    for name, value in values.items():
        con.execute(f"SET VARIABLE {name} = ?", [value])


class _PieceMapper:
    """Maps `_kineto_events` (then dropped) with kineto_map.sql, piece after piece in file order:
    keeps the running event and span offsets and the count of CPU events off their track."""

    def __init__(self, con: duckdb.DuckDBPyConnection, run_id: int, path: Path):
        self.con, self.run_id, self.path = con, run_id, path
        self.off_track = 0
        install_sql_macros(con)

    def __call__(self, event_offset: int, loader: PythonEventLoader | None = None) -> None:
        con = self.con
        check_events(con, self.path, loader, event_offset)
        con.execute("SET VARIABLE kineto_event_offset = ?", [event_offset])
        con.execute("SET VARIABLE kineto_span_offset = (SELECT count(*) FROM _kineto_spans)")  # span ids 1..n
        run_script(con, query_text("ingest/kineto_map"), self.run_id)
        run_script(con, query_text("ingest/kineto_memory"), self.run_id)
        off_track, repeating = one_row(con, "SELECT cpu_events_off_track, events_repeating_arg_keys FROM _kineto_skipped")
        con.execute("DROP TABLE _kineto_events; DROP TABLE _kineto_skipped")
        if repeating:  # DuckDB's reader only (RepeatedArgKeys): the caller undoes the pieces mapped
            raise RepeatedArgKeys(f"{repeating} event(s) whose args repeat a key")
        self.off_track += off_track

    def undo(self) -> None:
        """Forget every piece mapped: the run's rows and the staging tables (before another reader)."""
        for table in _MAPPED_TABLES:
            self.con.execute(f"DELETE FROM {table} WHERE run_id = ?", [self.run_id])
        self.con.execute(_STAGING_DDL + "; DROP TABLE IF EXISTS _kineto_events; DROP TABLE IF EXISTS _kineto_skipped")
        self.off_track = 0

    def warn_off_track(self) -> None:
        """CPU events on a track whose pid or tid is not an integer are not mapped: one counted warning."""
        if self.off_track:
            warn(self.path, f"skipped {self.off_track} CPU event(s) whose pid or tid is not a number")


# The processes and threads that own CPU spans, named by the metadata events (kineto_link.sql's
# _kineto_names): one join, not a Python loop per thread, so a trace of many threads costs its rows.
_INSERT_PROCESSES_AND_THREADS = """
INSERT INTO processes BY NAME
SELECT getvariable('kineto_run_id') AS run_id, p.pid, n.value AS name
FROM (SELECT DISTINCT pid FROM spans WHERE run_id = getvariable('kineto_run_id') AND tid IS NOT NULL) p
LEFT JOIN _kineto_names n ON n.what = 'process_name' AND n.pid = p.pid
ORDER BY p.pid;
INSERT INTO threads BY NAME
SELECT getvariable('kineto_run_id') AS run_id, t.pid, t.tid, n.value AS name
FROM (SELECT DISTINCT pid, tid FROM spans WHERE run_id = getvariable('kineto_run_id') AND tid IS NOT NULL) t
LEFT JOIN _kineto_names n ON n.what = 'thread_name' AND n.pid = t.pid AND n.tid = t.tid
ORDER BY t.pid, t.tid;
"""


def _device_rows(run_id: int, properties, used_ids: list[int], amd: bool) -> pa.Table:
    rows: dict[int, dict] = {}
    for prop in properties if isinstance(properties, list) else []:
        device = _as_int(prop.get(kf.DEVICE_ID)) if isinstance(prop, dict) else None
        if not isinstance(prop, dict) or device is None:
            continue
        name = prop.get(kf.DEVICE_NAME)
        sm_count = next((_as_int(prop[k]) for k in kf.DEVICE_SM_COUNT if k in prop), None)
        clock_khz = _as_int(prop.get(kf.DEVICE_CLOCK_RATE_KHZ))
        is_amd = amd or (isinstance(name, str) and any(m in name for m in kf.AMD_DEVICE_MARKERS))
        rows[device] = {
            "name": name if isinstance(name, str) else None,
            "vendor": "amd" if is_amd else "nvidia",
            "uuid": prop.get(kf.DEVICE_UUID) if isinstance(prop.get(kf.DEVICE_UUID), str) else None,
            "sm_count": sm_count,
            "memory_bytes": _as_int(prop.get(kf.DEVICE_MEMORY)),
            "clock_rate_hz": None if clock_khz is None else clock_khz * 1000,
            "compute_major": _as_int(prop.get(kf.DEVICE_COMPUTE_MAJOR)),
            "compute_minor": _as_int(prop.get(kf.DEVICE_COMPUTE_MINOR)),
        }
    for device_id in used_ids:  # devices with activities but no properties (e.g. ROCm device 2 of 16)
        rows.setdefault(device_id, {"vendor": "amd" if amd else "nvidia"})
    ids = sorted(rows)
    columns = {"run_id": pa.array([run_id] * len(ids), _I32), "device_id": pa.array(ids, _I32)}
    for col, typ in [
        ("name", _STR),
        ("vendor", _STR),
        ("uuid", _STR),
        ("sm_count", _I32),
        ("memory_bytes", _I64),
        ("clock_rate_hz", _I64),
        ("compute_major", _I32),
        ("compute_minor", _I32),
    ]:
        columns[col] = pa.array([rows[i].get(col) for i in ids], typ)
    return pa.table(columns)


def _clock_origin(meta: dict, first_start_ns: int | None) -> int | None:
    base = _as_int(meta.get(kf.BASE_TIME_NS_KEY))
    if base is not None:
        return base
    # Before baseTimeNanoseconds, ts was UNIX-epoch microseconds (any value past 2001 says so).
    if first_start_ns is not None and first_start_ns > 10**18:
        return 0
    return None


@contextmanager
def _no_cyclic_gc():
    """Millions of short-lived event dicts and row tuples (none in a reference cycle) make the
    cyclic collector rescan the growing row buffers over and over; reference counting frees them."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def convert_kineto(con: duckdb.DuckDBPyConnection, path: Path, run_id: int, options: ConvertOptions, progress: Progress) -> None:
    """Read, map and link a Kineto trace as run `run_id` (under the dispatcher's memory cap)."""
    path = Path(path)
    con.execute(_STAGING_DDL)
    _set_variables(con, run_id, options.include_python_functions)
    mapper = _PieceMapper(con, run_id, path)
    meta = None
    try:
        if options.kineto_reader != "python":
            from .duckdb_reader import read_events

            progress(f"reading and mapping {path.name} (DuckDB JSON reader, in pieces)", None)
            meta = read_events(con, path, mapper, options.limits)
            if meta is None:
                mapper.undo()
        if meta is None:
            trace = KinetoTrace(path, options.limits)
            label = f"reading {path.name}"
            with _no_cyclic_gc():
                loader = load_with_python(con, trace, lambda fraction: progress(label, fraction))
            meta = trace.metadata
            progress("mapping events", None)
            mapper(0, loader)
    except InputError:
        mapper.undo()  # no rows of a run that failed (a caller's open database keeps none)
        raise
    mapper.warn_off_track()
    progress("linking GPU activities", None)
    con.execute("SET VARIABLE kineto_graph_launch_apis = ?", [sorted(kf.GRAPH_LAUNCH_API_NAMES)])
    run_script(con, query_text("ingest/kineto_link"), run_id)
    con.execute(_INSERT_PROCESSES_AND_THREADS)
    con.execute(_STAGING_DROP)
    first_start, has_hip = one_row(
        con, "SELECT min(start_ns), bool_or(kind = 'api' AND starts_with(name, ?)) FROM spans WHERE run_id = ?", [kf.AMD_API_PREFIX, run_id]
    )
    used_devices = [r[0] for r in con.execute("SELECT DISTINCT device_id FROM spans WHERE run_id = ? AND device_id IS NOT NULL", [run_id]).fetchall()]
    insert_relation(con, "devices", _device_rows(run_id, meta.get(kf.DEVICE_PROPERTIES_KEY), used_devices, bool(has_hip)))
    base = meta.get(kf.BASE_TIME_NS_KEY)
    base_ns = _as_int(base) if base is not None else None
    if base is not None and (base_ns is None or not abs(base_ns) <= TIME_LIMIT_NS):
        warn(path, f"{kf.BASE_TIME_NS_KEY} {str(base)[:40]} is not a time in range: ignored")
        meta = {k: v for k, v in meta.items() if k != kf.BASE_TIME_NS_KEY}
    origin = _clock_origin(meta, first_start)
    started_at = None
    if origin is not None and first_start is not None:
        try:
            started_at = datetime.fromtimestamp((origin + first_start) / 1e9, tz=timezone.utc).replace(tzinfo=None)
        except (OverflowError, ValueError, OSError):
            warn(path, "the trace's wall-clock start is not a valid date: left unknown")
    dist = meta.get(kf.DISTRIBUTED_INFO_KEY)
    schema_version = meta.get(kf.SCHEMA_VERSION_KEY)
    register_run(
        con,
        run_id,
        options,
        source_kind="kineto",
        source_path=str(path),
        source_format_version=None if schema_version is None else str(schema_version),
        tool="torch.profiler",
        tool_version=next((str(meta[k]) for k in kf.TOOL_VERSION_KEYS if k in meta), None),
        rank=_as_int(dist.get(kf.DISTRIBUTED_RANK)) if isinstance(dist, dict) else None,
        world_size=_as_int(dist.get(kf.DISTRIBUTED_WORLD_SIZE)) if isinstance(dist, dict) else None,
        host=next((str(meta[k]) for k in kf.HOST_NAME_KEYS if k in meta), None),
        started_at=started_at,
        clock_origin_utc_ns=origin,
    )
