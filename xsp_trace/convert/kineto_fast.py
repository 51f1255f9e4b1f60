"""The fast path of the Kineto converter: DuckDB's own JSON reader instead of one Python dict per event.

DuckDB reads a top-level JSON *array* of objects in parallel and in bounded memory, but not the
`traceEvents` array inside Kineto's top-level object (bench: 28 s / 6.4 GB at 1 GB). So:
1. `extract_events`: the decompressed trace is streamed once; the bytes of the `traceEvents`
   array (and only those) go to a temporary file, the top-level metadata keys before and after
   it are parsed in Python (the same tail rule as kineto_stream).
2. read_json(format='array') loads the events into a temp table, times as DECIMAL(38,9) (exact
   for Kineto's microseconds with up to 9 decimals), pid/tid/id/args as JSON.
3. queries/ingest/kineto_map.sql maps them to the same staging and side tables as the Python mapper
   (KinetoMapper), with the facts of xsp_trace.formats.kineto_fields passed as variables.

Anything unusual (not a trace object, events that are not objects, a missing or non-numeric
time, a reader error) makes `convert_kineto_fast` return None before it has written a row; the
caller then runs the Python path, which reports the exact problem. tests/test_scale_kineto_fast.py
checks that both paths write identical tables on every Kineto fixture.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from decimal import Decimal
from json.decoder import scanstring
from pathlib import Path

import duckdb

from ..database import run_script
from ..formats import kineto_fields as kf
from ..naming import install_sql_macros
from ..resources import query_text
from .kineto_stream import closing_bracket
from .validate import TIME_LIMIT_US

CHUNK_BYTES = 1 << 20
MAX_HEAD_BYTES = 64 << 20  # as kineto_stream: metadata before the events beyond this is not a trace
TAIL_BYTES = 1 << 20  # bytes kept from the end to find where traceEvents closes
# DuckDB's buffer pool while the events table is read and mapped: beyond it, DuckDB spills to
# disk (1 GB trace: 1 GB limit 58 s / 1.6 GB peak RSS, no limit ~35 s / ~4 GB; bench/run.py).
MEMORY_LIMIT = "2GB"


class _NotSimple(Exception):
    """The file is not the plain shape the fast path handles; the Python path takes over."""


def _find_events(buf: bytes) -> tuple[int, dict] | None:
    """(byte offset of the '[' opening traceEvents, metadata keys before it) in the head of the
    file; None if more bytes are needed; _NotSimple if the head is not a trace object."""
    try:
        text = buf.decode("utf-8")
    except UnicodeDecodeError as exc:  # a character cut at the end of the chunk
        text = buf[: exc.start].decode("utf-8", errors="strict") if exc.start > len(buf) - 4 else None
        if text is None:
            raise _NotSimple from exc
    decoder = json.JSONDecoder(parse_float=Decimal)
    pos = _skip_ws(text, 1 if text.startswith("\ufeff") else 0)
    if pos >= len(text):
        return None
    if text[pos] != "{":
        raise _NotSimple
    pos += 1
    meta: dict = {}
    while True:
        pos = _skip_ws(text, pos)
        if pos >= len(text):
            return None
        if text[pos] != '"':
            raise _NotSimple
        try:
            key, pos = scanstring(text, pos + 1)
        except ValueError:
            return None
        pos = _skip_ws(text, pos)
        if pos >= len(text):
            return None
        if text[pos] != ":":
            raise _NotSimple
        pos = _skip_ws(text, pos + 1)
        if pos >= len(text):
            return None
        if key == kf.EVENTS_KEY:
            if text[pos] != "[":
                raise _NotSimple
            return len(text[:pos].encode("utf-8")), meta
        try:
            meta[key], pos = decoder.raw_decode(text, pos)
        except ValueError:
            return None  # the value goes on in the next chunk (or is broken: the head limit ends it)
        pos = _skip_ws(text, pos)
        if pos >= len(text):
            return None
        if text[pos] != ",":
            raise _NotSimple
        pos += 1


# A "ts" or "dur" whose value is not a JSON number (true, "12", null...): DuckDB would cast it
# (true -> 1), the Python reader rejects it, so such a file goes to the Python path.
_NON_NUMERIC_TIME = re.compile(rb'"(?:ts|dur)"\s*:\s*(?![-0-9\s])')
_OVERLAP = 32


def _check_times(previous: bytes, chunk: bytes) -> None:
    if _NON_NUMERIC_TIME.search(previous[-_OVERLAP:] + chunk):
        raise _NotSimple


def _skip_ws(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


def extract_events(path: Path, target: Path) -> dict | None:
    """Write the traceEvents array of the trace at `path` to `target`; returns the top-level metadata,
    or None when the file is not a plain Kineto trace object (the Python path handles those)."""
    from .kineto_stream import _Source

    source = _Source(path)
    try:
        head = b""
        found = None
        while found is None:
            chunk = source.read(CHUNK_BYTES)
            if not chunk:
                return None
            head += chunk
            found = _find_events(head)
            if found is None and len(head) > MAX_HEAD_BYTES:
                return None
        start, meta = found
        tail = bytearray()
        written = 0
        with open(target, "wb") as out:
            first = head[start:]
            _check_times(b"", first)
            out.write(first)
            written += len(first)
            tail += first
            previous = first
            while chunk := source.read(CHUNK_BYTES):
                _check_times(previous, chunk)
                previous = chunk
                out.write(chunk)
                written += len(chunk)
                tail += chunk
                if len(tail) > 2 * TAIL_BYTES:
                    del tail[:-TAIL_BYTES]
            # Where traceEvents closes: the tail rule of kineto_stream, on the last bytes.
            tail_bytes = bytes(tail)
            closing = closing_bracket(tail_bytes)
            if closing is None:
                return None
            cut, tail_meta = closing
            out.truncate(written - (len(tail_bytes) - cut - 1))
        meta.update(tail_meta)
        return meta
    except _NotSimple:
        return None
    finally:
        source.close()


_READ_EVENTS = """
CREATE OR REPLACE TEMP TABLE _kineto_events AS
SELECT * FROM read_json(?, format = 'array', maximum_object_size = 67108864,
    columns = {ph: 'VARCHAR', cat: 'VARCHAR', name: 'VARCHAR', pid: 'VARCHAR', tid: 'VARCHAR',
               ts: 'DECIMAL(38,9)', dur: 'DECIMAL(38,9)', id: 'VARCHAR', args: 'MAP(VARCHAR, JSON)'})
"""


def _not_cpu_categories(include_python: bool) -> list[str]:
    """Lower-case categories whose complete events are dropped or GPU activities (no pid/tid needed)."""
    cats = {c for c, k in kf.CATEGORY_KIND.items() if k is None or k in kf.GPU_ACTIVITY_KINDS}
    cats |= set(kf.GPU_ANNOTATION_CATEGORIES)
    if not include_python:
        cats |= set(kf.PYTHON_FUNCTION_CATEGORIES)
    return sorted(cats)


def _set_variables(con: duckdb.DuckDBPyConnection, run_id: int, include_python: bool) -> None:
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
        "kineto_step_prefix": kf.PROFILER_STEP_PREFIX,
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
    }
    for name, value in values.items():
        con.execute(f"SET VARIABLE {name} = ?", [value])


def convert_kineto_fast(con: duckdb.DuckDBPyConnection, path: Path, run_id: int, include_python: bool):
    """Fill the Kineto staging and side tables with DuckDB; returns (metadata, process names,
    process labels, thread names), or None (nothing written) when the Python path must run."""
    folder = tempfile.mkdtemp(prefix="xsp-kineto-")
    events_file = Path(folder) / "events.json"
    try:
        meta = extract_events(path, events_file)
        if meta is None:
            return None
        previous_limit = con.execute("SELECT current_setting('memory_limit')").fetchone()[0]
        con.execute("SET memory_limit = ?", [MEMORY_LIMIT])
        try:
            con.execute(_READ_EVENTS, [str(events_file)])
        except duckdb.Error:
            con.execute("SET memory_limit = ?", [previous_limit])
            return None
        finally:
            events_file.unlink(missing_ok=True)
        bad = con.execute(
            """SELECT count(*) FROM _kineto_events
               WHERE (ph = ? AND (ts IS NULL OR dur IS NULL)) OR (ph IN (SELECT unnest(?)) AND ts IS NULL)
                  OR (ph = ? AND ts IS NULL)
                  OR abs(ts) > ? OR abs(ts + coalesce(dur, 0)) > ?""",
            [kf.PHASE_COMPLETE, list(kf.PHASE_INSTANT), kf.PHASE_COUNTER, TIME_LIMIT_US, TIME_LIMIT_US],
        ).fetchone()[0]
        if not bad:  # CPU events on a non-numeric pid/tid are skipped with a warning by the Python path
            bad = con.execute(
                """SELECT count(*) FROM _kineto_events WHERE ph = ? AND coalesce(lower(cat), '') NOT IN (SELECT unnest(?))
                   AND NOT (regexp_full_match(coalesce(pid, ''), '-?[0-9]+([.]0*)?')
                            AND regexp_full_match(coalesce(tid, ''), '-?[0-9]+([.]0*)?'))""",
                [kf.PHASE_COMPLETE, _not_cpu_categories(include_python)]).fetchone()[0]
        if bad or not con.execute("SELECT count(*) FROM _kineto_events").fetchone()[0]:
            con.execute("DROP TABLE _kineto_events")
            con.execute("SET memory_limit = ?", [previous_limit])
            return None
        _set_variables(con, run_id, include_python)
        install_sql_macros(con)
        run_script(con, query_text("ingest/kineto_map"), run_id)
        names = con.execute("SELECT what, pid, tid, value FROM _kineto_names ORDER BY what, pid, tid").fetchall()
        con.execute("DROP TABLE _kineto_events; DROP TABLE _kineto_names")
        con.execute("SET memory_limit = ?", [previous_limit])
        processes = {pid: value for what, pid, tid, value in names if what == "process_name"}
        labels = {pid: value for what, pid, tid, value in names if what == "process_labels"}
        threads = {(pid, tid): value for what, pid, tid, value in names if what == "thread_name"}
        return meta, processes, labels, threads
    finally:
        shutil.rmtree(folder, ignore_errors=True)  # whatever failed: no decompressed copy is left
