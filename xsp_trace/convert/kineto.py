"""`convert_kineto`: a PyTorch profiler (Kineto) trace.json[.gz] into the unified schema.

Events stream in batches from kineto_stream; KinetoMapper turns each into rows of the staging
tables (spans with their raw track and External id, launch flows, GPU launch configurations)
and of the side tables (kernels, memops, span_args, marks, counters), flushed as Arrow batches
of BATCH_ROWS rows. queries/ingest/kineto_link.sql then fills missing correlation ids (flows, then
External id), gives GPU spans the pid of the host process that launched them and moves the
spans into `spans`; correlate_run (called by the dispatcher) nests and links them.

Times: Kineto writes microseconds (int, or decimals with up to 3 places). They become integer
ns exactly: ns = round_half_away_from_zero(us * 1000) on the decimal text, never via float.
An end is rounded from ts + dur, so start + duration stays exact too.
"""

from __future__ import annotations

import gc
import json
import re
from contextlib import contextmanager
from datetime import datetime, timezone
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import duckdb
import pyarrow as pa

from ..database import insert_relation, run_script
from ..errors import InputError
from ..formats import kineto_fields as kf
from ..naming import classify_range
from ..resources import query_text
from . import ConvertOptions, Progress, register_run
from .kineto_stream import KinetoTrace, iter_event_batches
from .validate import TIME_LIMIT_NS, TIME_LIMIT_US, warn

BATCH_ROWS = 50_000
SKIPPED_NON_NUMERIC_TRACK = "CPU event on a non-numeric pid/tid track"
_MEMCPY_RE = re.compile(kf.MEMCPY_NAME_PATTERN)
_FIX_EVENT = "export the trace again with torch.profiler, or repair the event"

_STAGING_DDL = """
CREATE OR REPLACE TEMP TABLE _kineto_spans (
    span_id BIGINT, kind VARCHAR, name VARCHAR, category VARCHAR, start_ns BIGINT, end_ns BIGINT,
    pid BIGINT, tid BIGINT, device_id INTEGER, stream_id BIGINT, correlation_id BIGINT,
    iteration INTEGER, layer_index INTEGER, external_id BIGINT, track_pid BIGINT, track_tid BIGINT);
CREATE OR REPLACE TEMP TABLE _kineto_flows (phase VARCHAR, flow_id BIGINT, pid BIGINT, tid BIGINT, ts_ns BIGINT);
CREATE OR REPLACE TEMP TABLE _kineto_launch_config (
    correlation_id BIGINT, pid BIGINT, grid_x INTEGER, grid_y INTEGER, grid_z INTEGER,
    block_x INTEGER, block_y INTEGER, block_z INTEGER, shared_mem_bytes BIGINT);
"""
_STAGING_DROP = "DROP TABLE _kineto_spans; DROP TABLE _kineto_flows; DROP TABLE _kineto_launch_config;"

_I64, _I32, _F64, _STR = pa.int64(), pa.int32(), pa.float64(), pa.string()
_SCHEMAS = {
    "_kineto_spans": [("span_id", _I64), ("kind", _STR), ("name", _STR), ("category", _STR), ("start_ns", _I64),
                      ("end_ns", _I64), ("pid", _I64), ("tid", _I64), ("device_id", _I32), ("stream_id", _I64),
                      ("correlation_id", _I64), ("iteration", _I32), ("layer_index", _I32), ("external_id", _I64),
                      ("track_pid", _I64), ("track_tid", _I64)],
    "_kineto_flows": [("phase", _STR), ("flow_id", _I64), ("pid", _I64), ("tid", _I64), ("ts_ns", _I64)],
    "_kineto_launch_config": [("correlation_id", _I64), ("pid", _I64), ("grid_x", _I32), ("grid_y", _I32),
                              ("grid_z", _I32), ("block_x", _I32), ("block_y", _I32), ("block_z", _I32),
                              ("shared_mem_bytes", _I64)],
    "kernels": [("run_id", _I32), ("span_id", _I64), ("grid_x", _I32), ("grid_y", _I32), ("grid_z", _I32),
                ("block_x", _I32), ("block_y", _I32), ("block_z", _I32), ("registers_per_thread", _I32),
                ("shared_mem_bytes", _I64), ("occupancy_estimate", _F64), ("blocks_per_sm", _F64),
                ("warps_per_sm", _F64)],
    "memops": [("run_id", _I32), ("span_id", _I64), ("copy_kind", _STR), ("bytes", _I64), ("src_kind", _STR),
               ("dst_kind", _STR)],
    "span_args": [("run_id", _I32), ("span_id", _I64), ("key", _STR), ("value", _STR)],
    "marks": [("run_id", _I32), ("ts_ns", _I64), ("name", _STR), ("category", _STR), ("pid", _I64), ("tid", _I64)],
    "counters": [("run_id", _I32), ("name", _STR), ("ts_ns", _I64), ("value", _F64), ("pid", _I64), ("device_id", _I32)],
}


def us_to_ns(value) -> int:
    """Microseconds (int or Decimal from the JSON text) to integer ns, half away from zero."""
    if type(value) is int:
        return value * 1000
    if isinstance(value, Decimal):
        return int((value * 1000).to_integral_value(rounding=ROUND_HALF_UP))
    if isinstance(value, float):  # not produced by the reader; exact via the shortest repr
        return us_to_ns(Decimal(repr(value)))
    raise TypeError(value)


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


def _as_float(value) -> float | None:
    if isinstance(value, (int, Decimal)) and not isinstance(value, bool):
        return float(value)
    return None


def _json_default(value):
    if isinstance(value, Decimal):
        return float(value)
    raise TypeError(type(value).__name__)


_ENCODE = json.JSONEncoder(default=_json_default, ensure_ascii=False, separators=(",", ":")).encode  # compact, as DuckDB writes JSON


def _arg_text(value) -> str | None:
    kind = type(value)
    if kind is str:
        return value or None
    if kind is int or kind is Decimal:
        return str(value)
    if value is None:
        return None
    if kind is bool:
        return "true" if value else "false"
    return _ENCODE(value)


def _dims(value) -> tuple:
    if isinstance(value, list) and len(value) == 3 and all(type(v) is int for v in value):
        return tuple(value)
    return (None, None, None)


class KinetoMapper:
    """Kineto events -> row buffers of the staging and side tables."""

    def __init__(self, con: duckdb.DuckDBPyConnection, run_id: int, path: Path, options: ConvertOptions):
        self.con, self.run_id, self.path = con, run_id, path
        self.include_python = options.include_python_functions
        self.rows: dict[str, list[tuple]] = {name: [] for name in _SCHEMAS}
        self.next_span_id = 1
        self.event_index = 0
        self.process_names: dict[int, str] = {}
        self.process_labels: dict[int, str] = {}
        self.thread_names: dict[tuple[int, int], str] = {}
        self.skipped: dict[str, int] = {}

    # -- buffers -----------------------------------------------------------------------------
    def _add(self, table: str, row: tuple) -> None:
        self.rows[table].append(row)

    def flush_full(self) -> None:
        """Insert the tables that reached BATCH_ROWS (checked once per event batch)."""
        for name, rows in self.rows.items():
            if len(rows) >= BATCH_ROWS:
                self.flush(name)

    def flush(self, table: str | None = None) -> None:
        for name in [table] if table else list(self.rows):
            rows = self.rows[name]
            if not rows:
                continue
            schema = _SCHEMAS[name]
            columns = list(zip(*rows))
            batch = pa.table({col: pa.array(values, typ) for (col, typ), values in zip(schema, columns)})
            insert_relation(self.con, name, batch)
            rows.clear()

    def _skip(self, why: str) -> None:
        self.skipped[why] = self.skipped.get(why, 0) + 1

    def _bad(self, event, problem: str) -> InputError:
        name = event.get("name") if isinstance(event, dict) else None
        what = f"event #{self.event_index}" + (f" ({str(name)[:60]!r})" if name else "")
        return InputError(self.path, f"{what} {problem}", _FIX_EVENT)

    # -- events ------------------------------------------------------------------------------
    def map_events(self, events: list) -> None:
        for event in events:
            self.event_index += 1
            if type(event) is not dict:
                raise self._bad(None, "is not a JSON object")
            phase = event.get("ph")
            if phase == kf.PHASE_COMPLETE:
                self._complete(event)
            elif phase == kf.PHASE_FLOW_START or phase == kf.PHASE_FLOW_END:
                self._flow(event, phase)
            elif phase == kf.PHASE_METADATA:
                self._metadata(event)
            elif phase in kf.PHASE_INSTANT:
                self._instant(event)
            elif phase == kf.PHASE_COUNTER:
                self._counter(event)
            else:
                self._skip(f"phase {phase!r}")
        self.flush_full()

    def _time(self, event, key: str):
        value = event.get(key)
        if value is None:
            raise self._bad(event, f"has no '{key}'")
        if isinstance(value, bool) or not isinstance(value, (int, Decimal)):
            raise self._bad(event, f"has a non-numeric '{key}' ({str(value)[:30]!r})")
        if isinstance(value, Decimal) and not value.is_finite():
            raise self._bad(event, f"has a non-finite '{key}' ({value})")
        if abs(value) > TIME_LIMIT_US:
            raise self._bad(event, f"has an out-of-range '{key}' ({str(value)[:30]}; more than {TIME_LIMIT_US} us)")
        return value

    def _complete(self, event: dict) -> None:
        category = event.get("cat")
        lower = category.lower() if isinstance(category, str) else ""
        kind = kf.CATEGORY_KIND.get(lower, "other")
        if kind is None:
            return self._skip(f"category {category}")
        if lower in kf.PYTHON_FUNCTION_CATEGORIES and not self.include_python:
            return self._skip("python_function (use --python-functions)")
        ts = self._time(event, "ts")
        dur = self._time(event, "dur")
        if abs(ts + dur) > TIME_LIMIT_US:
            raise self._bad(event, f"ends out of range (ts + dur = {str(ts + dur)[:30]} us)")
        start = us_to_ns(ts)
        end = us_to_ns(ts + dur) if dur > 0 else start
        name = event.get("name")
        name = name if isinstance(name, str) else (str(name) if name is not None else str(category))
        args = event.get("args")
        if not isinstance(args, dict):
            args = {}
        track_pid, track_tid = _as_int(event.get("pid")), _as_int(event.get("tid"))
        external_id = _as_int(args.get(kf.ARG_EXTERNAL_ID[0], args.get(kf.ARG_EXTERNAL_ID[1]))) or None
        correlation = None
        iteration = layer_index = None
        on_gpu = kind in kf.GPU_ACTIVITY_KINDS or lower in kf.GPU_ANNOTATION_CATEGORIES
        if on_gpu:
            device = _as_int(args.get(kf.ARG_DEVICE))
            device = track_pid if device is None else device
            stream = _as_int(args.get(kf.ARG_STREAM)) if kf.ARG_STREAM in args else track_tid
            stream = None if stream in kf.NO_STREAM_VALUES else stream
            pid = tid = None
            correlation = _as_int(args.get(kf.ARG_CORRELATION))
        else:
            if track_pid is None or track_tid is None:
                return self._skip(SKIPPED_NON_NUMERIC_TRACK)
            device = stream = None
            pid, tid = track_pid, track_tid
            if kind == "api":
                correlation = _as_int(args.get(kf.ARG_CORRELATION))
            elif lower in kf.USER_ANNOTATION_CATEGORIES:
                kind, layer_index = classify_range(name)
        if lower in kf.USER_ANNOTATION_CATEGORIES or lower in kf.GPU_ANNOTATION_CATEGORIES:
            if name.startswith(kf.PROFILER_STEP_PREFIX):
                iteration = _as_int(name[len(kf.PROFILER_STEP_PREFIX):])
        span_id = self.next_span_id
        self.next_span_id += 1
        self._add("_kineto_spans", (span_id, kind, name, category, start, end, pid, tid, device, stream, correlation,
                                    iteration, layer_index, external_id, track_pid, track_tid))
        typed = kf.TYPED_ARGS if on_gpu else ((kf.ARG_CORRELATION,) if kind == "api" else ())
        if kind == "kernel":
            self._kernel(span_id, args)
        elif kind == "memcpy" or kind == "memset":
            self._memop(span_id, kind, name, args)
        elif kind == "api" and kf.ARG_GRID in args:
            self._launch_config(pid, correlation, args)
        run_id = self.run_id
        append = self.rows["span_args"].append
        dropped = kf.DROPPED_ARGS
        for key, value in args.items():
            if key in dropped or key in typed:
                continue
            if on_gpu and key in kf.GRAPH_ARGS and _as_int(value) == kf.NOT_IN_GRAPH:
                continue  # Kineto writes graph id 0 on every activity launched outside a graph
            text = _arg_text(value)
            if text is not None:
                append((run_id, span_id, key, text))

    def _kernel(self, span_id: int, args: dict) -> None:
        occupancy = _as_float(args.get(kf.ARG_OCCUPANCY_PERCENT))
        self._add("kernels", (self.run_id, span_id, *_dims(args.get(kf.ARG_GRID)), *_dims(args.get(kf.ARG_BLOCK)),
                              _as_int(args.get(kf.ARG_REGISTERS)), _as_int(args.get(kf.ARG_SHARED_MEMORY)),
                              None if occupancy is None else occupancy / 100.0,
                              _as_float(args.get(kf.ARG_BLOCKS_PER_SM)), _as_float(args.get(kf.ARG_WARPS_PER_SM))))

    def _memop(self, span_id: int, kind: str, name: str, args: dict) -> None:
        copy_kind = src = dst = None
        if kind == "memcpy":
            match = _MEMCPY_RE.match(name)
            if match:
                copy_kind, src, dst = match.groups()
            elif isinstance(args.get(kf.ARG_MEMCPY_KIND), str):
                copy_kind = args[kf.ARG_MEMCPY_KIND]
        self._add("memops", (self.run_id, span_id, copy_kind, _as_int(args.get(kf.ARG_BYTES)), src, dst))

    def _launch_config(self, pid: int, correlation: int | None, args: dict) -> None:
        # ROCm traces put the launch configuration on hipLaunchKernel, not on the kernel.
        if correlation is not None:
            self._add("_kineto_launch_config", (correlation, pid, *_dims(args.get(kf.ARG_GRID)),
                                                *_dims(args.get(kf.ARG_BLOCK)), _as_int(args.get(kf.ARG_SHARED_MEMORY))))

    def _flow(self, event: dict, phase: str) -> None:
        category = event.get("cat")
        if not isinstance(category, str) or category.lower() not in kf.LAUNCH_FLOW_CATEGORIES:
            return self._skip(f"flow {category}")
        flow_id, pid, tid = _as_int(event.get("id")), _as_int(event.get("pid")), _as_int(event.get("tid"))
        ts = event.get("ts")
        if flow_id is None or pid is None or tid is None or not isinstance(ts, (int, Decimal)) or isinstance(ts, bool) \
                or not abs(ts) <= TIME_LIMIT_US:
            return self._skip("flow without id/pid/tid/ts")
        self._add("_kineto_flows", (phase, flow_id, pid, tid, us_to_ns(ts)))

    def _metadata(self, event: dict) -> None:
        args = event.get("args") if isinstance(event.get("args"), dict) else {}
        pid, tid, what = _as_int(event.get("pid")), _as_int(event.get("tid")), event.get("name")
        if pid is None:
            return
        if what == "process_name" and isinstance(args.get("name"), str):
            self.process_names[pid] = args["name"]
        elif what == "process_labels" and isinstance(args.get("labels"), str):
            self.process_labels[pid] = args["labels"]
        elif what == "thread_name" and tid is not None and isinstance(args.get("name"), str):
            self.thread_names[(pid, tid)] = args["name"].strip()

    def _instant(self, event: dict) -> None:
        ts = us_to_ns(self._time(event, "ts"))
        pid, tid = _as_int(event.get("pid")), _as_int(event.get("tid"))
        name = event.get("name")
        args = event.get("args") if isinstance(event.get("args"), dict) else {}
        if name == kf.MEMORY_INSTANT_NAME:
            gpu = _as_int(args.get(kf.MEMORY_DEVICE_TYPE_ARG)) in kf.MEMORY_DEVICE_TYPES_GPU
            device = _as_int(args.get(kf.MEMORY_DEVICE_ID_ARG)) if gpu else None
            for key in kf.MEMORY_COUNTER_ARGS:
                value = _as_float(args.get(key))
                if value is not None:
                    self._add("counters", (self.run_id, key, ts, value, pid, device))
            return
        category = event.get("cat")
        self._add("marks", (self.run_id, ts, None if name is None else str(name),
                            category if isinstance(category, str) else None, pid, tid))

    def _counter(self, event: dict) -> None:
        ts = us_to_ns(self._time(event, "ts"))
        args = event.get("args") if isinstance(event.get("args"), dict) else {}
        name = str(event.get("name"))
        for key, value in args.items():
            number = _as_float(value)
            if number is not None:
                label = name if len(args) == 1 else f"{name}.{key}"
                self._add("counters", (self.run_id, label, ts, number, _as_int(event.get("pid")), None))

    # -- after the last event ----------------------------------------------------------------
    def insert_processes_and_threads(self) -> None:
        pids = [r[0] for r in self.con.execute(
            "SELECT DISTINCT pid FROM spans WHERE run_id = ? AND tid IS NOT NULL ORDER BY pid", [self.run_id]).fetchall()]
        threads = self.con.execute(
            "SELECT DISTINCT pid, tid FROM spans WHERE run_id = ? AND tid IS NOT NULL ORDER BY pid, tid",
            [self.run_id]).fetchall()
        insert_relation(self.con, "processes", pa.table({
            "run_id": pa.array([self.run_id] * len(pids), _I32), "pid": pa.array(pids, _I64),
            "name": pa.array([self.process_names.get(p) for p in pids], _STR)}))
        insert_relation(self.con, "threads", pa.table({
            "run_id": pa.array([self.run_id] * len(threads), _I32),
            "pid": pa.array([t[0] for t in threads], _I64), "tid": pa.array([t[1] for t in threads], _I64),
            "name": pa.array([self.thread_names.get(t) for t in threads], _STR)}))


def _device_rows(run_id: int, properties, used_ids: list[int], amd: bool) -> pa.Table:
    rows: dict[int, dict] = {}
    for prop in properties if isinstance(properties, list) else []:
        if not isinstance(prop, dict) or _as_int(prop.get(kf.DEVICE_ID)) is None:
            continue
        name = prop.get(kf.DEVICE_NAME)
        sm_count = next((_as_int(prop[k]) for k in kf.DEVICE_SM_COUNT if k in prop), None)
        clock_khz = _as_int(prop.get(kf.DEVICE_CLOCK_RATE_KHZ))
        is_amd = amd or (isinstance(name, str) and any(m in name for m in kf.AMD_DEVICE_MARKERS))
        rows[_as_int(prop[kf.DEVICE_ID])] = {
            "name": name if isinstance(name, str) else None, "vendor": "amd" if is_amd else "nvidia",
            "uuid": prop.get(kf.DEVICE_UUID) if isinstance(prop.get(kf.DEVICE_UUID), str) else None,
            "sm_count": sm_count, "memory_bytes": _as_int(prop.get(kf.DEVICE_MEMORY)),
            "clock_rate_hz": None if clock_khz is None else clock_khz * 1000,
            "compute_major": _as_int(prop.get(kf.DEVICE_COMPUTE_MAJOR)),
            "compute_minor": _as_int(prop.get(kf.DEVICE_COMPUTE_MINOR)),
        }
    for device_id in used_ids:  # devices with activities but no properties (e.g. ROCm device 2 of 16)
        rows.setdefault(device_id, {"vendor": "amd" if amd else "nvidia"})
    ids = sorted(rows)
    columns = {"run_id": pa.array([run_id] * len(ids), _I32), "device_id": pa.array(ids, _I32)}
    for col, typ in [("name", _STR), ("vendor", _STR), ("uuid", _STR), ("sm_count", _I32), ("memory_bytes", _I64),
                     ("clock_rate_hz", _I64), ("compute_major", _I32), ("compute_minor", _I32)]:
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
    path = Path(path)
    trace = KinetoTrace(path)
    mapper = KinetoMapper(con, run_id, path, options)
    con.execute(_STAGING_DDL)
    fast = None
    if options.kineto_reader != "python":
        from .kineto_fast import convert_kineto_fast

        progress(f"reading {path.name} (DuckDB JSON reader)", None)
        fast = convert_kineto_fast(con, path, run_id, options.include_python_functions)
    if fast is not None:
        meta, mapper.process_names, mapper.process_labels, mapper.thread_names = fast
    else:
        label = f"reading {path.name}"
        with _no_cyclic_gc():
            for batch in iter_event_batches(trace, lambda fraction: progress(label, fraction)):
                mapper.map_events(batch)
            mapper.flush()
        meta = trace.metadata
        if mapper.skipped.get(SKIPPED_NON_NUMERIC_TRACK):
            warn(path, f"skipped {mapper.skipped[SKIPPED_NON_NUMERIC_TRACK]} CPU event(s) whose pid or tid is not a number")
    progress("linking GPU activities", None)
    con.execute("SET VARIABLE kineto_graph_launch_apis = ?", [sorted(kf.GRAPH_LAUNCH_API_NAMES)])
    run_script(con, query_text("ingest/kineto_link"), run_id)
    con.execute(_STAGING_DROP)
    mapper.insert_processes_and_threads()
    first_start, has_hip = con.execute(
        "SELECT min(start_ns), bool_or(kind = 'api' AND starts_with(name, ?)) FROM spans WHERE run_id = ?",
        [kf.AMD_API_PREFIX, run_id]).fetchone()
    used_devices = [r[0] for r in con.execute(
        "SELECT DISTINCT device_id FROM spans WHERE run_id = ? AND device_id IS NOT NULL", [run_id]).fetchall()]
    insert_relation(con, "devices", _device_rows(run_id, meta.get(kf.DEVICE_PROPERTIES_KEY), used_devices, bool(has_hip)))
    base = meta.get(kf.BASE_TIME_NS_KEY)
    if base is not None and (_as_int(base) is None or not abs(_as_int(base)) <= TIME_LIMIT_NS):
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
        con, run_id, options,
        source_kind="kineto", source_path=str(path),
        source_format_version=None if schema_version is None else str(schema_version),
        tool="torch.profiler",
        tool_version=next((str(meta[k]) for k in kf.TOOL_VERSION_KEYS if k in meta), None),
        rank=_as_int(dist.get("rank")) if isinstance(dist, dict) else None,
        host=next((str(meta[k]) for k in kf.HOST_NAME_KEYS if k in meta), None),
        started_at=started_at, clock_origin_utc_ns=origin,
    )
