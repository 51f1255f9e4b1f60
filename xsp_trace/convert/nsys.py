"""Nsight Systems (.nsys-rep or its SQLite export) into the unified schema.

Two steps: the export's tables are projected into DuckDB staging tables (`_nsys_*`, one SQLite
query each, run by ADBC's native SQLite driver and streamed as Arrow batches straight into
DuckDB -- no Python rows; pid/tid decoded, strings kept as ids), then queries/ingest/nsys.sql
turns the staging tables into spans, kernels, memops, devices, threads. Why ADBC and not
DuckDB's sqlite extension: BENCHMARKS.md (nsys ingest).
Everything version-specific is resolved here from the export's own tables and columns, using
the facts in xsp_trace.formats.nsys_export.
"""

from __future__ import annotations

import sqlite3
import urllib.parse
from collections.abc import Iterator
from contextlib import closing, contextmanager, nullcontext
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import adbc_driver_manager
import adbc_driver_sqlite
import adbc_driver_sqlite.dbapi as adbc_sqlite
import duckdb
import pyarrow as pa

from ..connection import duckdb_threads
from ..database import run_script
from ..errors import InputError
from ..formats import nsys_export as fmt
from ..formats.file_magic import NSYS_REPORT_MAGIC
from ..naming import install_sql_macros
from ..resources import query_text
from .common import ConvertOptions, Progress, register_run
from .nsys_report import exported_sqlite
from .nsys_staging import FIX_VALUES, Plan, schema, stage_in_order
from .nsys_staging_parallel import drop_pieces, stage_with_readers
from .validate import validate_nsys_staging, warn

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
        try:
            self.con = sqlite3.connect(self.uri, uri=True)
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

    def execute(self, sql: str):
        try:
            return self.con.execute(sql)
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
        scans the whole table for both in one SELECT (0.75 s for 4.9 M NVTX rows)."""
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
                _stage_all(export, con, progress, include_os_runtime=options.include_os_runtime)
                progress("building spans", None)
                _set_format_variables(con)
                con.execute("SET VARIABLE nsys_nvtx_max_ts = ?", [_nvtx_max_ts(export)])
                validate_nsys_staging(con, path)
                install_sql_macros(con)
                run_script(con, query_text("ingest/nsys"), run_id)
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
)


def _stage_all(
    export: _Export, con: duckdb.DuckDBPyConnection, progress: Progress, include_os_runtime: bool = True, readers: int | None = None
) -> None:
    """Read the export's tables into the `_nsys_*` staging tables: with `readers` reader threads
    (default reader_threads(con)), or one table after the other with one."""
    for base in fmt.REQUIRED_COLUMNS:
        if export.table(base):
            export.check_required(base)
    s = Plan()
    t = export.table

    s.stage(
        "_nsys_strings",
        f'SELECT id, value FROM "{t(fmt.STRING_IDS)}"' if t(fmt.STRING_IDS) else None,
        schema("id", "value", strings=("value",)),
        what="strings",
    )

    nvtx = fmt.NVTX_EVENTS
    wanted = (*fmt.NVTX_RANGE_TYPES, *fmt.NVTX_MARK_TYPES, fmt.NvtxEventType.DOMAIN_CREATE)
    s.stage(
        "_nsys_nvtx",
        t(nvtx)
        and f"""SELECT start, "end", eventType, {export.optional(nvtx, "text", "text")},
                {export.optional(nvtx, "textId", "text_id")}, {export.optional(nvtx, "domainId", "domain_id", "0")},
                {_pid("globalTid")}, {_tid("globalTid")},
                {_tid("endGlobalTid") if "endGlobalTid" in export.columns(nvtx) else "NULL"}
            FROM "{t(nvtx)}" WHERE eventType IN ({", ".join(map(str, wanted))})""",
        schema("start_ns", "end_ns", "event_type", "text", "text_id", "domain_id", "pid", "tid", "end_tid", strings=("text",)),
        with_span_ids=True,
        what="NVTX events",
        split_table=t(nvtx),
    )

    rt = fmt.RUNTIME
    class_filter = f"WHERE eventClass IN ({', '.join(map(str, fmt.API_CLASSES))})" if "eventClass" in export.columns(rt) else ""
    s.stage(
        "_nsys_api",
        t(rt)
        and f"""SELECT start, "end", {export.optional(rt, "eventClass", "event_class", str(fmt.ApiEventClass.CUDA_RUNTIME))},
                {_pid("globalTid")}, {_tid("globalTid")}, correlationId, nameId
            FROM "{t(rt)}" {class_filter}""",
        schema("start_ns", "end_ns", "event_class", "pid", "tid", "correlation_id", "name_id"),
        with_span_ids=True,
        what="CUDA API calls",
        split_table=t(rt),
    )

    os_rt = fmt.OSRT_API
    s.stage(
        "_nsys_osrt",
        (t(os_rt) if include_os_runtime else None)
        and f"""SELECT start, "end", {_pid("globalTid")}, {_tid("globalTid")}, nameId
            FROM "{t(os_rt)}" WHERE eventClass = {fmt.OsrtEventClass.CALL}""",
        schema("start_ns", "end_ns", "pid", "tid", "name_id"),
        with_span_ids=True,
        what="OS runtime calls",
        split_table=t(os_rt),
    )

    k = fmt.KERNEL
    s.stage(
        "_nsys_kernel",
        t(k)
        and f"""SELECT start, "end", deviceId, streamId, correlationId, {export.gpu_pid(k)}, demangledName,
                {export.optional(k, "shortName", "short_id")}, {export.optional(k, "mangledName", "mangled_id")},
                gridX, gridY, gridZ, blockX, blockY, blockZ,
                {export.optional(k, "registersPerThread", "regs")}, {export.optional(k, "staticSharedMemory", "smem_static")},
                {export.optional(k, "dynamicSharedMemory", "smem_dynamic")}, {export.optional(k, "localMemoryPerThread", "lmem")},
                {_graph_columns(export, k)}
            FROM "{t(k)}" """,
        schema(
            "start_ns",
            "end_ns",
            "device_id",
            "stream_id",
            "correlation_id",
            "pid",
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
        with_span_ids=True,
        what="kernels",
        split_table=t(k),
    )

    m = fmt.MEMCPY
    s.stage(
        "_nsys_memcpy",
        t(m)
        and f"""SELECT start, "end", deviceId, streamId, correlationId, {export.gpu_pid(m)}, bytes, copyKind,
                {export.optional(m, "srcKind", "src_kind")}, {export.optional(m, "dstKind", "dst_kind")},
                {_graph_columns(export, m)}
            FROM "{t(m)}" """,
        schema("start_ns", "end_ns", "device_id", "stream_id", "correlation_id", "pid", "bytes", "copy_kind", "src_kind", "dst_kind", *_GRAPH_FIELDS),
        with_span_ids=True,
        what="memory copies",
        split_table=t(m),
    )

    ms = fmt.MEMSET
    s.stage(
        "_nsys_memset",
        t(ms)
        and f"""SELECT start, "end", deviceId, streamId, correlationId, {export.gpu_pid(ms)}, bytes,
                {export.optional(ms, "value", "fill_value")}, {export.optional(ms, "memKind", "mem_kind")},
                {_graph_columns(export, ms)}
            FROM "{t(ms)}" """,
        schema("start_ns", "end_ns", "device_id", "stream_id", "correlation_id", "pid", "bytes", "fill_value", "mem_kind", *_GRAPH_FIELDS),
        with_span_ids=True,
        what="memsets",
        split_table=t(ms),
    )

    sy = fmt.SYNCHRONIZATION
    s.stage(
        "_nsys_sync",
        t(sy)
        and f"""SELECT start, "end", {export.optional(sy, "deviceId", "device_id")}, streamId, correlationId,
                {export.gpu_pid(sy)}, {export.optional(sy, "syncType", "sync_type")}
            FROM "{t(sy)}" """,
        schema("start_ns", "end_ns", "device_id", "stream_id", "correlation_id", "pid", "sync_type"),
        with_span_ids=True,
        what="synchronizations",
        split_table=t(sy),
    )

    _stage_enums(export, con)

    tn = fmt.THREAD_NAMES
    s.stage(
        "_nsys_threads",
        t(tn) and f'SELECT {_pid("globalTid")}, {_tid("globalTid")}, nameId FROM "{t(tn)}"',
        schema("pid", "tid", "name_id"),
        what="thread names",
    )
    pr = fmt.PROCESSES
    s.stage("_nsys_processes", t(pr) and f'SELECT pid, name FROM "{t(pr)}"', schema("pid", "name", strings=("name",)), what="processes")

    g = fmt.TARGET_INFO_GPU
    s.stage(
        "_nsys_gpus",
        t(g)
        and f"""SELECT id, {export.optional(g, "cuDevice", "cu_device")}, name, {export.optional(g, "uuid", "uuid")},
                {export.optional(g, "busLocation", "bus_location")}, {export.optional(g, "smCount", "sm_count")},
                {export.optional(g, "totalMemory", "memory_bytes")}, {export.optional(g, "memoryBandwidth", "memory_bandwidth")},
                {export.optional(g, "clockRate", "clock_rate")}, {export.optional(g, "computeMajor", "compute_major")},
                {export.optional(g, "computeMinor", "compute_minor")}
            FROM "{t(g)}" """,
        pa.schema(
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
        ),
        what="GPUs",
    )
    cd = fmt.TARGET_INFO_CUDA_DEVICE
    s.stage("_nsys_cuda_devices", t(cd) and f'SELECT gpuId, cudaId, pid FROM "{t(cd)}"', schema("gpu_id", "cuda_id", "pid"), what="CUDA devices")
    readers = reader_threads(con) if readers is None else readers
    if readers > 1:
        stage_with_readers(s, export, con, progress, readers)
    else:
        stage_in_order(s, export, con, progress)


_GRAPH_FIELDS = ("graph_id", "graph_node_id")


def reader_threads(con: duckdb.DuckDBPyConnection) -> int:
    """As many SQLite readers as the connection has DuckDB threads (database.duckdb_threads)."""
    return duckdb_threads(con)


def _graph_columns(export: _Export, base: str) -> str:
    """The graph and graph node ids of GPU activities replayed by a graph launch (columns of newer exports)."""
    return f"{export.optional(base, fmt.GRAPH_ID_COLUMN, 'graph_id')}, {export.optional(base, fmt.GRAPH_NODE_ID_COLUMN, 'graph_node_id')}"


def _nvtx_max_ts(export: _Export) -> int | None:
    """Where unclosed NVTX ranges end: the last NVTX timestamp, as nsys stats computes it."""
    table = export.table(fmt.NVTX_EVENTS)
    if table is None:
        return None
    return export.execute(f'SELECT max(coalesce(max(start), 0), coalesce(max("end"), 0)) FROM "{table}"').fetchone()[0]


def _stage_enums(export: _Export, con: duckdb.DuckDBPyConnection) -> None:
    """Labels of memcpy kinds, memory kinds and sync types: the export's ENUM tables, else the built-in ones."""
    rows = []
    for enum, base, fallback in (
        ("memcpy_kind", fmt.ENUM_MEMCPY_OPER, fmt.MEMCPY_KIND_LABELS),
        ("mem_kind", fmt.ENUM_MEM_KIND, fmt.MEM_KIND_LABELS),
        ("sync_type", fmt.ENUM_SYNC_TYPE, fmt.SYNC_TYPE_LABELS),
    ):
        table = export.table(base)
        labels = dict(fallback)
        if table and {"id", "label"} <= export.columns(base):
            labels.update(dict(export.execute(f'SELECT id, label FROM "{table}"').fetchall()))
        rows += [(enum, code, label, fmt.MEMCPY_KIND_SHORT.get(code) if enum == "memcpy_kind" else None) for code, label in labels.items()]
    con.execute("CREATE OR REPLACE TEMP TABLE _nsys_enums (enum VARCHAR, code BIGINT, label VARCHAR, short VARCHAR)")
    con.executemany("INSERT INTO _nsys_enums VALUES (?, ?, ?, ?)", rows)


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
    }
    for name, value in values.items():
        con.execute(f"SET VARIABLE {name} = ?", [value])
