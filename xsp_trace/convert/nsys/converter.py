"""Nsight Systems (.nsys-rep or its SQLite export) into the unified schema.

Two steps: the export's tables are projected into DuckDB staging tables (`_nsys_*`, one SQLite
query each, run by ADBC's native SQLite driver and streamed as Arrow batches straight into
DuckDB -- no Python rows; pid/tid decoded, strings kept as ids), then queries/ingest/nsys.sql
turns the staging tables into spans, kernels, memops, devices, threads. Why ADBC and not
DuckDB's sqlite extension (built only for DuckDB 1.5.5): BENCHMARKS.md, "Convert: nsys".
Everything version-specific is resolved here from the export's own tables and columns, using
the facts in xsp_trace.formats.nsys_export.
"""

from __future__ import annotations

import sqlite3
import urllib.parse
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing, contextmanager, nullcontext
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import adbc_driver_manager
import adbc_driver_sqlite
import adbc_driver_sqlite.dbapi as adbc_sqlite
import duckdb
import pyarrow as pa

from ...errors import InputError
from ...formats import nsys_export as fmt
from ...formats.file_magic import NSYS_REPORT_MAGIC
from ...naming import install_sql_macros
from ...resources import query_text
from ...store.connection import duckdb_threads
from ...store.database import run_script
from ...store.sql import insert_rows
from ..common import ConvertOptions, Progress, register_run
from ..validate import validate_nsys_staging, warn
from .report import exported_sqlite
from .staging import FIX_VALUES, Plan, schema, stage_in_order
from .staging_threads import drop_pieces, stage_with_readers

BATCH_ROWS = 65_536
# SQLite's >> and & turn any operand into an integer (1.5 -> 1, '7x' -> 7): only integers are
# decoded; anything else passes through unchanged, so the Arrow step rejects it (wrong type).
_PID = f"CASE WHEN typeof({{col}}) = 'integer' THEN (({{col}} >> {fmt.PID_SHIFT}) & {fmt.ID_MASK}) ELSE {{col}} END"
_TID = f"CASE WHEN typeof({{col}}) = 'integer' THEN ({{col}} & {fmt.ID_MASK}) ELSE {{col}} END"


def _pid(col: str) -> str:
    return _PID.format(col=col)


def _tid(col: str) -> str:
    return _TID.format(col=col)


class _Export:
    """A read-only view of one SQLite export: which tables and columns it has."""

    def __init__(self, path: Path):
        self.path = path
        self.uri = urllib.parse.urlunsplit(
            ["file", "", urllib.parse.quote(str(path.resolve())), urllib.parse.urlencode({"mode": "ro", "immutable": "1"}), ""]
        )
        self._arrow: Any = None  # the ADBC connection, opened on first use
        self.con = self.own_connection()
        try:
            names = {r[0] for r in self.con.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
        except sqlite3.DatabaseError as exc:
            raise self.corrupt(exc) from exc
        self.tables = {base: fmt.resolve_table_with_rows(names, base, self._has_rows) for base in _ALL_TABLES}
        for base, name in self.tables.items():
            if name != fmt.resolve_table(names, base):
                warn(path, f"table {fmt.resolve_table(names, base)} is empty: read {name} instead")
        self.meta_table = next((t for t in fmt.META_TABLES if t in names), None)
        if self.meta_table is None and fmt.STRING_IDS not in names:
            raise InputError(
                path,
                "is a SQLite file but not an Nsight Systems export (no export metadata or StringIds table)",
                "pass a file written by `nsys export --type sqlite`",
            )
        self._columns: dict[str, set[str]] = {}

    def _has_rows(self, name: str) -> bool:
        return self.execute(f'SELECT 1 FROM "{name}" LIMIT 1').fetchone() is not None

    def gpu_pid(self, base: str) -> str:
        """The process id of a GPU activity table's rows, or NULL (repaired in validate) without globalPid."""
        return _pid(fmt.GPU_PID_COLUMN) if fmt.GPU_PID_COLUMN in self.columns(base) else "NULL"

    def corrupt(self, exc: Exception) -> InputError:
        return InputError(self.path, f"is truncated or corrupt ({exc})", "export the report again with `nsys export --type sqlite`")

    def wrong_type(self, what: str, detail: str) -> InputError:
        """A value of the wrong type (text, blob, a fraction, a number beyond 64 bits) in a numeric column."""
        return InputError(self.path, f"holds a value of the wrong type or size in its {what} ({detail})", FIX_VALUES)

    def table(self, base: str) -> str | None:
        return self.tables.get(base)

    def columns(self, base: str) -> set[str]:
        name = self.table(base)
        if name is None:
            return set()
        if name not in self._columns:
            self._columns[name] = {r[1] for r in self.execute(f'PRAGMA table_info("{name}")')}
        return self._columns[name]

    def own_connection(self) -> sqlite3.Connection:
        """A read-only SQLite connection to the export (one per thread: a connection serves the thread that opened it)."""
        try:
            return sqlite3.connect(self.uri, uri=True)
        except sqlite3.DatabaseError as exc:
            raise self.corrupt(exc) from exc

    def execute(self, sql: str, connection: sqlite3.Connection | None = None):
        try:
            return (connection or self.con).execute(sql)
        except sqlite3.DatabaseError as exc:
            raise self.corrupt(exc) from exc

    @contextmanager
    def arrow_batches(self, sql: str, own_connection: bool = False) -> Iterator[pa.RecordBatchReader]:
        """The rows of one query as Arrow batches, read by ADBC's SQLite driver (native code); over a
        connection of its own (closed afterwards) for a reader thread."""
        connection = None
        try:
            if own_connection:
                connection = adbc_sqlite.connect(self.uri)
            elif self._arrow is None:
                self._arrow = adbc_sqlite.connect(self.uri)
            cursor = (connection or self._arrow).cursor()
        except adbc_driver_manager.Error as exc:
            if connection is not None:
                connection.close()
            raise self.corrupt(exc) from exc
        with closing(connection) if connection is not None else nullcontext(), closing(cursor):
            try:
                cursor.adbc_statement.set_options(**{adbc_driver_sqlite.StatementOptions.BATCH_ROWS.value: str(BATCH_ROWS)})
                cursor.execute(sql)
                reader = cursor.fetch_record_batch()
            except adbc_driver_manager.Error as exc:
                raise self.corrupt(exc) from exc
            yield reader

    def rowid_bounds(self, table: str) -> tuple[int, int] | None:
        """The lowest and highest rowid of a table; None for an empty table or one without rowids.

        Two subqueries: SQLite answers a lone min(rowid) or max(rowid) from the b-tree's ends, but
        scans the whole table for both in one SELECT."""
        try:
            low, high = self.con.execute(f'SELECT (SELECT min(rowid) FROM "{table}"), (SELECT max(rowid) FROM "{table}")').fetchone()
        except sqlite3.DatabaseError:
            return None
        return (low, high) if isinstance(low, int) and isinstance(high, int) else None

    def close(self) -> None:
        if self._arrow is not None:
            self._arrow.close()
        self.con.close()

    def check_required(self, base: str) -> None:
        missing = [c for c in fmt.REQUIRED_COLUMNS.get(base, ()) if c not in self.columns(base)]
        if missing:
            raise InputError(
                self.path,
                f"table {self.table(base)} lacks required column(s) {', '.join(missing)}",
                "export it again with a complete nsys export (nsys 2022.2 or newer)",
            )
        lacking = [c for c in fmt.DEGRADABLE_COLUMNS.get(base, ()) if c not in self.columns(base)]
        if lacking:
            warn(self.path, f"table {self.table(base)} lacks column(s) {', '.join(lacking)}: converted without them")

    def metadata(self) -> dict[str, str]:
        if self.meta_table is None:
            return {}
        return dict(self.execute(f'SELECT name, value FROM "{self.meta_table}"').fetchall())

    def optional(self, base: str, column: str, alias: str, default: str = "NULL") -> str:
        return f"{column} AS {alias}" if column in self.columns(base) else f"{default} AS {alias}"


_ALL_TABLES = (
    fmt.KERNEL,
    fmt.RUNTIME,
    fmt.MEMCPY,
    fmt.MEMSET,
    fmt.SYNCHRONIZATION,
    fmt.OSRT_API,
    fmt.NVTX_EVENTS,
    fmt.STRING_IDS,
    fmt.THREAD_NAMES,
    fmt.PROCESSES,
    fmt.TARGET_INFO_GPU,
    fmt.TARGET_INFO_CUDA_DEVICE,
    fmt.SESSION_START,
    fmt.ENUM_MEMCPY_OPER,
    fmt.ENUM_MEM_KIND,
    fmt.ENUM_SYNC_TYPE,
    fmt.COMPOSITE_EVENTS,
    fmt.SAMPLING_CALLCHAINS,
    fmt.SCHED_EVENTS,
    fmt.ENUM_SAMPLING_THREAD_STATE,
)


def convert_nsys(con: duckdb.DuckDBPyConnection, path: Path, run_id: int, options: ConvertOptions, progress: Progress) -> None:
    path = Path(path)
    with open(path, "rb") as f:
        is_report = f.read(len(NSYS_REPORT_MAGIC)) == NSYS_REPORT_MAGIC
    exporting = exported_sqlite(path, options.nsys) if is_report else nullcontext(path)
    with exporting as sqlite_path:
        if is_report:
            progress("exported with nsys", None)
        export = _Export(Path(sqlite_path))
        with closing(export):
            _register(con, export, path, run_id, options)
            try:
                # The last NVTX timestamp is a scan of the whole NVTX table of its own: it runs
                # beside the staging readers, in the time they leave a core idle.
                with ThreadPoolExecutor(1, thread_name_prefix="xsp-nvtx-max") as pool:
                    nvtx_max_ts = pool.submit(_nvtx_max_ts, export)
                    _stage_all(export, con, progress, include_os_runtime=options.include_os_runtime)
                    progress("building spans", None)
                    _set_format_variables(con)
                    con.execute("SET VARIABLE nsys_nvtx_max_ts = ?", [nvtx_max_ts.result()])
                validate_nsys_staging(con, path)
                install_sql_macros(con)
                run_script(con, query_text("ingest/nsys"), run_id)
                run_script(con, query_text("ingest/nsys_cpu"), run_id)
            finally:
                drop_pieces(con, _STAGING_TABLES)


def _register(con, export: _Export, source: Path, run_id: int, options: ConvertOptions) -> None:
    meta = export.metadata()
    started_at = origin = None
    if export.table(fmt.SESSION_START) and "utcEpochNs" in export.columns(fmt.SESSION_START):
        row = export.execute(f'SELECT utcEpochNs FROM "{export.table(fmt.SESSION_START)}"').fetchone()
        if row and row[0]:
            origin = int(row[0])
            started_at = datetime.fromtimestamp(origin / 1e9, tz=timezone.utc).replace(tzinfo=None)
    register_run(
        con,
        run_id,
        options,
        source_kind="nsys",
        source_path=str(source),
        source_format_version=meta.get(fmt.META_SCHEMA_VERSION),
        tool="nsys",
        tool_version=meta.get(fmt.META_PRODUCT_VERSION),
        host=meta.get(fmt.META_HOST),
        started_at=started_at,
        clock_origin_utc_ns=origin,
    )


_STAGING_TABLES = (
    "_nsys_strings",
    "_nsys_nvtx",
    "_nsys_api",
    "_nsys_osrt",
    "_nsys_kernel",
    "_nsys_memcpy",
    "_nsys_memset",
    "_nsys_sync",
    "_nsys_enums",
    "_nsys_threads",
    "_nsys_processes",
    "_nsys_gpus",
    "_nsys_cuda_devices",
    "_nsys_samples",
    "_nsys_sample_frames",
    "_nsys_sched",
)


_GRAPH_FIELDS = ("graph_id", "graph_node_id")


@dataclass(frozen=True)
class _Stage:
    """One staging table read from one export table: `columns(export, base)` is the SELECT list
    (optional columns as NULL where the export lacks them), `where(export, base)` the filter."""

    target: str
    base: str  # the export table (xsp_trace/formats/nsys_export.py), found under any of its variant names
    columns: Callable[[_Export, str], str]
    schema: pa.Schema
    what: str
    spans: bool = False  # rows become spans: span ids assigned, and the table may be read in pieces
    where: Callable[[_Export, str], str] = lambda _export, _base: ""


_NVTX_WANTED = (*fmt.NVTX_RANGE_TYPES, *fmt.NVTX_MARK_TYPES, fmt.NvtxEventType.DOMAIN_CREATE)
_GPU_COLUMNS = ("start_ns", "end_ns", "device_id", "stream_id", "correlation_id", "pid")
_GPUS_SCHEMA = pa.schema(
    [
        pa.field("gpu_id", pa.int64()),
        pa.field("cu_device", pa.int64()),
        pa.field("name", pa.string()),
        pa.field("uuid", pa.string()),
        pa.field("bus_location", pa.string()),
        pa.field("sm_count", pa.int64()),
        pa.field("memory_bytes", pa.int64()),
        pa.field("memory_bandwidth", pa.float64()),
        pa.field("clock_rate", pa.int64()),
        pa.field("compute_major", pa.int64()),
        pa.field("compute_minor", pa.int64()),
    ]
)
_KERNEL_DETAILS = (
    ("registersPerThread", "regs"),
    ("staticSharedMemory", "smem_static"),
    ("dynamicSharedMemory", "smem_dynamic"),
    ("localMemoryPerThread", "lmem"),
)
_GPU_DETAILS = (
    ("uuid", "uuid"),
    ("busLocation", "bus_location"),
    ("smCount", "sm_count"),
    ("totalMemory", "memory_bytes"),
    ("memoryBandwidth", "memory_bandwidth"),
    ("clockRate", "clock_rate"),
    ("computeMajor", "compute_major"),
    ("computeMinor", "compute_minor"),
)


def _optionals(export: _Export, base: str, pairs) -> str:
    return ", ".join(export.optional(base, column, alias) for column, alias in pairs)


# The staging tables in staging order (span ids are handed out in this order), one spec each.
_STAGES: tuple[_Stage, ...] = (
    _Stage("_nsys_strings", fmt.STRING_IDS, lambda e, b: "id, value", schema("id", "value", strings=("value",)), "strings"),
    _Stage(
        "_nsys_nvtx",
        fmt.NVTX_EVENTS,
        lambda e, b: (
            f"""start, "end", eventType, {e.optional(b, "text", "text")}, {e.optional(b, "textId", "text_id")},
            {e.optional(b, "domainId", "domain_id", "0")}, {_pid("globalTid")}, {_tid("globalTid")},
            {_tid("endGlobalTid") if "endGlobalTid" in e.columns(b) else "NULL"}"""
        ),
        schema("start_ns", "end_ns", "event_type", "text", "text_id", "domain_id", "pid", "tid", "end_tid", strings=("text",)),
        "NVTX events",
        spans=True,
        where=lambda e, b: f"WHERE eventType IN ({', '.join(map(str, _NVTX_WANTED))})",
    ),
    _Stage(
        "_nsys_api",
        fmt.RUNTIME,
        lambda e, b: (
            f"""start, "end", {e.optional(b, "eventClass", "event_class", str(fmt.ApiEventClass.CUDA_RUNTIME))},
            {_pid("globalTid")}, {_tid("globalTid")}, correlationId, nameId"""
        ),
        schema("start_ns", "end_ns", "event_class", "pid", "tid", "correlation_id", "name_id"),
        "CUDA API calls",
        spans=True,
        where=lambda e, b: f"WHERE eventClass IN ({', '.join(map(str, fmt.API_CLASSES))})" if "eventClass" in e.columns(b) else "",
    ),
    _Stage(
        "_nsys_osrt",
        fmt.OSRT_API,
        lambda e, b: f"""start, "end", {_pid("globalTid")}, {_tid("globalTid")}, nameId""",
        schema("start_ns", "end_ns", "pid", "tid", "name_id"),
        "OS runtime calls",
        spans=True,
        where=lambda e, b: f"WHERE eventClass = {fmt.OsrtEventClass.CALL}",
    ),
    _Stage(
        "_nsys_kernel",
        fmt.KERNEL,
        lambda e, b: (
            f"""start, "end", deviceId, streamId, correlationId, {e.gpu_pid(b)}, demangledName,
            {e.optional(b, "shortName", "short_id")}, {e.optional(b, "mangledName", "mangled_id")},
            gridX, gridY, gridZ, blockX, blockY, blockZ, {_optionals(e, b, _KERNEL_DETAILS)}, {_graph_columns(e, b)}"""
        ),
        schema(
            *_GPU_COLUMNS,
            "name_id",
            "short_id",
            "mangled_id",
            "grid_x",
            "grid_y",
            "grid_z",
            "block_x",
            "block_y",
            "block_z",
            "registers_per_thread",
            "shared_mem_static_bytes",
            "shared_mem_dynamic_bytes",
            "local_mem_per_thread_bytes",
            *_GRAPH_FIELDS,
        ),
        "kernels",
        spans=True,
    ),
    _Stage(
        "_nsys_memcpy",
        fmt.MEMCPY,
        lambda e, b: (
            f"""start, "end", deviceId, streamId, correlationId, {e.gpu_pid(b)}, bytes, copyKind,
            {e.optional(b, "srcKind", "src_kind")}, {e.optional(b, "dstKind", "dst_kind")}, {_graph_columns(e, b)}"""
        ),
        schema(*_GPU_COLUMNS, "bytes", "copy_kind", "src_kind", "dst_kind", *_GRAPH_FIELDS),
        "memory copies",
        spans=True,
    ),
    _Stage(
        "_nsys_memset",
        fmt.MEMSET,
        lambda e, b: (
            f"""start, "end", deviceId, streamId, correlationId, {e.gpu_pid(b)}, bytes,
            {e.optional(b, "value", "fill_value")}, {e.optional(b, "memKind", "mem_kind")}, {_graph_columns(e, b)}"""
        ),
        schema(*_GPU_COLUMNS, "bytes", "fill_value", "mem_kind", *_GRAPH_FIELDS),
        "memsets",
        spans=True,
    ),
    _Stage(
        "_nsys_sync",
        fmt.SYNCHRONIZATION,
        lambda e, b: (
            f"""start, "end", {e.optional(b, "deviceId", "device_id")}, streamId, correlationId,
            {e.gpu_pid(b)}, {e.optional(b, "syncType", "sync_type")}"""
        ),
        schema(*_GPU_COLUMNS, "sync_type"),
        "synchronizations",
        spans=True,
    ),
    _Stage(
        "_nsys_threads",
        fmt.THREAD_NAMES,
        lambda e, b: f"""{_pid("globalTid")}, {_tid("globalTid")}, nameId""",
        schema("pid", "tid", "name_id"),
        "thread names",
    ),
    _Stage("_nsys_processes", fmt.PROCESSES, lambda e, b: "pid, name", schema("pid", "name", strings=("name",)), "processes"),
    _Stage(
        "_nsys_gpus",
        fmt.TARGET_INFO_GPU,
        lambda e, b: f"""id, {e.optional(b, "cuDevice", "cu_device")}, name, {_optionals(e, b, _GPU_DETAILS)}""",
        _GPUS_SCHEMA,
        "GPUs",
    ),
    _Stage("_nsys_cuda_devices", fmt.TARGET_INFO_CUDA_DEVICE, lambda e, b: "gpuId, cudaId, pid", schema("gpu_id", "cuda_id", "pid"), "CUDA devices"),
    _Stage(
        "_nsys_samples",
        fmt.COMPOSITE_EVENTS,
        lambda e, b: (
            f"""id, start, {_pid("globalTid")}, {_tid("globalTid")}, {e.optional(b, "cpu", "cpu")}, {e.optional(b, "threadState", "thread_state")}"""
        ),
        schema("sample_id", "ts_ns", "pid", "tid", "cpu", "thread_state"),
        "CPU samples",
    ),
    _Stage(
        "_nsys_sample_frames",
        fmt.SAMPLING_CALLCHAINS,
        lambda e, b: "id, stackDepth, symbol, module",
        schema("sample_id", "depth", "function_id", "module_id"),
        "CPU sample call chains",
    ),
    _Stage(
        "_nsys_sched",
        fmt.SCHED_EVENTS,
        lambda e, b: f"""start, {e.optional(b, "cpu", "cpu")}, isSchedIn, {_pid("globalTid")}, {_tid("globalTid")}""",
        schema("ts_ns", "cpu", "sched_in", "pid", "tid"),
        "thread scheduling events",
    ),
)


def _stage_all(
    export: _Export, con: duckdb.DuckDBPyConnection, progress: Progress, include_os_runtime: bool = True, readers: int | None = None
) -> None:
    """Read the export's tables into the `_nsys_*` staging tables (_STAGES): with `readers` reader
    threads (default reader_threads(con)), or one table after the other with one."""
    for base in fmt.REQUIRED_COLUMNS:
        if export.table(base):
            export.check_required(base)
    plan = Plan()
    for stage in _STAGES:
        table = export.table(stage.base) if include_os_runtime or stage.base != fmt.OSRT_API else None
        sql = table and f'SELECT {stage.columns(export, stage.base)} FROM "{table}" {stage.where(export, stage.base)}'
        plan.stage(stage.target, sql, stage.schema, with_span_ids=stage.spans, what=stage.what, split_table=table if stage.spans else None)
    _stage_enums(export, con)
    readers = reader_threads(con) if readers is None else readers
    if readers > 1:
        stage_with_readers(plan, export, con, progress, readers)
    else:
        stage_in_order(plan, export, con, progress)


def reader_threads(con: duckdb.DuckDBPyConnection) -> int:
    """As many SQLite readers as the connection has DuckDB threads (database.duckdb_threads)."""
    return duckdb_threads(con)


def _graph_columns(export: _Export, base: str) -> str:
    """The graph and graph node ids of GPU activities replayed by a graph launch (columns of newer exports)."""
    return f"{export.optional(base, fmt.GRAPH_ID_COLUMN, 'graph_id')}, {export.optional(base, fmt.GRAPH_NODE_ID_COLUMN, 'graph_node_id')}"


def _nvtx_max_ts(export: _Export) -> int | None:
    """Where unclosed NVTX ranges end: the last NVTX timestamp, as nsys stats computes it. Over a
    SQLite connection of its own: it runs in a thread beside the staging."""
    table = export.table(fmt.NVTX_EVENTS)
    if table is None:
        return None
    with closing(export.own_connection()) as own:
        return export.execute(f'SELECT max(coalesce(max(start), 0), coalesce(max("end"), 0)) FROM "{table}"', own).fetchone()[0]


def _stage_enums(export: _Export, con: duckdb.DuckDBPyConnection) -> None:
    """Labels of memcpy kinds, memory kinds and sync types: the export's ENUM tables, else the built-in ones."""
    rows = []
    for enum, base, fallback in (
        ("memcpy_kind", fmt.ENUM_MEMCPY_OPER, fmt.MEMCPY_KIND_LABELS),
        ("mem_kind", fmt.ENUM_MEM_KIND, fmt.MEM_KIND_LABELS),
        ("sync_type", fmt.ENUM_SYNC_TYPE, fmt.SYNC_TYPE_LABELS),
        ("thread_state", fmt.ENUM_SAMPLING_THREAD_STATE, fmt.SAMPLING_THREAD_STATE_LABELS),
    ):
        table = export.table(base)
        labels = dict(fallback)
        if table and {"id", "label"} <= export.columns(base):
            labels.update(dict(export.execute(f'SELECT id, label FROM "{table}"').fetchall()))
        rows += [(enum, code, label, fmt.MEMCPY_KIND_SHORT.get(code) if enum == "memcpy_kind" else None) for code, label in labels.items()]
    con.execute("CREATE OR REPLACE TEMP TABLE _nsys_enums (enum VARCHAR, code BIGINT, label VARCHAR, short VARCHAR)")
    insert_rows(con, "_nsys_enums", rows)


def _set_format_variables(con: duckdb.DuckDBPyConnection) -> None:
    """Expose the export's codes to queries/ingest/nsys.sql by name (no magic numbers in the SQL)."""
    values = {
        "nsys_nvtx_range_types": list(fmt.NVTX_RANGE_TYPES),
        "nsys_nvtx_pushpop_types": list(fmt.NVTX_PUSHPOP_TYPES),
        "nsys_nvtx_mark_types": list(fmt.NVTX_MARK_TYPES),
        "nsys_nvtx_domain_create": fmt.NvtxEventType.DOMAIN_CREATE,
        "nsys_api_class_runtime": fmt.ApiEventClass.CUDA_RUNTIME,
        "nsys_api_class_driver": fmt.ApiEventClass.CUDA_DRIVER,
        "nsys_osrt_category": fmt.OSRT_CATEGORY,
        "nsys_api_version_suffix": fmt.API_NAME_VERSION_SUFFIX.pattern,
        "nsys_memcpy_name": fmt.MEMCPY_NAME.replace("{label}", "%s"),
        "nsys_memset_name": fmt.MEMSET_NAME,
        "nsys_graph_id_arg": fmt.GRAPH_ID_ARG,
        "nsys_graph_node_id_arg": fmt.GRAPH_NODE_ID_ARG,
        "nsys_not_in_graph": fmt.NOT_IN_GRAPH,
        "nsys_sched_in_state": fmt.SCHED_IN_STATE,
        "nsys_sched_out_state": fmt.SCHED_OUT_STATE,
    }
    for name, value in values.items():
        con.execute(f"SET VARIABLE {name} = ?", [value])
