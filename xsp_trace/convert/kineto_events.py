"""The one raw event relation every Kineto reader fills, and its checks.

`_kineto_events` holds one row per element of `traceEvents`, in file order (rowid = position):
ph, cat, name, pid, tid and id as text (JSON numbers as their text), ts and dur as DECIMAL(38,9)
microseconds (exact), args as MAP(VARCHAR, JSON). DuckDB's JSON reader writes it directly
(kineto_fast.py); the streaming ijson reader (kineto_stream.py), for files DuckDB's reader does
not take, writes the same columns here. queries/kineto_map.sql then maps the relation once.
"""

from __future__ import annotations

import json
from decimal import ROUND_HALF_UP, Decimal
from typing import Callable, Iterable

import duckdb
import pyarrow as pa

from ..database import insert_relation
from ..errors import InputError

RAW_COLUMNS = ("ph", "cat", "name", "pid", "tid", "ts", "dur", "id", "args")
# read_json's column types (kineto_fast) and the table the Python reader fills: the same.
READ_JSON_COLUMNS = ("{ph: 'VARCHAR', cat: 'VARCHAR', name: 'VARCHAR', pid: 'VARCHAR', tid: 'VARCHAR', "
                     "ts: 'DECIMAL(38,9)', dur: 'DECIMAL(38,9)', id: 'VARCHAR', args: 'MAP(VARCHAR, JSON)'}")
RAW_DDL = """CREATE OR REPLACE TEMP TABLE _kineto_events (ph VARCHAR, cat VARCHAR, name VARCHAR, pid VARCHAR,
    tid VARCHAR, ts DECIMAL(38,9), dur DECIMAL(38,9), id VARCHAR, args MAP(VARCHAR, JSON))"""
FIX_EVENT = "export the trace again with torch.profiler, or repair the event"

_DECIMAL = pa.decimal128(38, 9)
_ARROW = pa.schema([("ph", pa.string()), ("cat", pa.string()), ("name", pa.string()), ("pid", pa.string()),
                    ("tid", pa.string()), ("ts", _DECIMAL), ("dur", _DECIMAL), ("id", pa.string()),
                    ("args", pa.map_(pa.string(), pa.string()))])
_NANO = Decimal("1e-9")
_ENCODE = json.JSONEncoder(default=lambda v: float(v) if isinstance(v, Decimal) else str(v),
                           ensure_ascii=False, separators=(",", ":")).encode


def _text(value) -> str | None:
    """A scalar field as DuckDB's JSON reader writes it into a VARCHAR column."""
    kind = type(value)
    if kind is str:
        return value
    if value is None:
        return None
    if kind is bool:
        return "true" if value else "false"
    if kind is int or kind is Decimal:
        return str(value)
    return _ENCODE(value)


def _json(value) -> str:
    """An args value as JSON text."""
    kind = type(value)
    if kind is str:
        return json.dumps(value, ensure_ascii=False)
    if kind is int or kind is Decimal:
        return str(value)
    if kind is bool:
        return "true" if value else "false"
    if value is None:
        return "null"
    return _ENCODE(value)


class PythonEventLoader:
    """Events from the streaming reader -> rows of `_kineto_events`, in batches.

    Times that are present but not numbers are stored as NULL and remembered, so the check
    after loading can name them (`check_times`)."""

    def __init__(self, con: duckdb.DuckDBPyConnection, path):
        self.con, self.path = con, path
        self.count = 0
        self.non_numeric: dict[int, tuple[str, object]] = {}
        con.execute(RAW_DDL)

    def _time(self, index: int, key: str, value):
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, Decimal)):
            self.non_numeric.setdefault(index, (key, value))
            return None
        return value

    def add(self, events: Iterable) -> None:
        columns: list[list] = [[] for _ in RAW_COLUMNS]
        ph, cat, name, pid, tid, ts, dur, ids, args = columns
        for event in events:
            index = self.count
            self.count += 1
            if type(event) is not dict:
                raise InputError(self.path, f"event #{index + 1} is not a JSON object", FIX_EVENT)
            get = event.get
            ph.append(_text(get("ph")))
            cat.append(_text(get("cat")))
            name.append(_text(get("name")))
            pid.append(_text(get("pid")))
            tid.append(_text(get("tid")))
            ts.append(self._time(index, "ts", get("ts")))
            dur.append(self._time(index, "dur", get("dur")))
            ids.append(_text(get("id")))
            a = get("args")
            args.append([(k, _json(v)) for k, v in a.items()] if type(a) is dict else [])
        arrays = []
        for col, f in zip(columns, _ARROW):
            if f.type == _DECIMAL:
                try:
                    arrays.append(pa.array(col, f.type))
                except (pa.ArrowInvalid, pa.ArrowTypeError):  # more than 9 decimals, or out of range
                    arrays.append(self._decimals(col))
            else:
                arrays.append(pa.array(col, f.type))
        insert_relation(self.con, "_kineto_events", pa.Table.from_arrays(arrays, schema=_ARROW))

    def _decimals(self, values: list) -> pa.Array:
        out = []
        for v in values:
            if v is not None:
                v = Decimal(v).quantize(_NANO, rounding=ROUND_HALF_UP)
                if v.adjusted() >= 29:
                    raise InputError(self.path, f"has a time beyond the range of microsecond timestamps ({v})", FIX_EVENT)
            out.append(v)
        return pa.array(out, _DECIMAL)


_MISSING_TIMES = """
SELECT rowid, name, CASE WHEN ts IS NULL THEN 'ts' ELSE 'dur' END
FROM _kineto_events
WHERE (ph = getvariable('kineto_phase_complete') AND (ts IS NULL OR dur IS NULL)
       AND NOT list_contains(getvariable('kineto_dropped_categories'), coalesce(lower(cat), ''))
       AND (getvariable('kineto_include_python') OR NOT list_contains(getvariable('kineto_python_categories'), coalesce(lower(cat), ''))))
   OR (list_contains(getvariable('kineto_phase_instant'), ph) AND ts IS NULL)
   OR (ph = getvariable('kineto_phase_counter') AND ts IS NULL)
ORDER BY rowid LIMIT 1
"""


def check_times(con: duckdb.DuckDBPyConnection, path, non_numeric: dict | None = None) -> None:
    """InputError for the first event the mapping needs a time of and that has none (variables set)."""
    rows = con.execute(_MISSING_TIMES).fetchall()
    if not rows:
        return
    index, name, key = rows[0]
    what = f"event #{index + 1}" + (f" ({name[:60]!r})" if name else "")
    bad = (non_numeric or {}).get(index)
    if bad is not None and bad[0] == key:
        raise InputError(path, f"{what} has a non-numeric '{key}' ({str(bad[1])[:30]!r})", FIX_EVENT)
    raise InputError(path, f"{what} has no '{key}'", FIX_EVENT)


BATCH_EVENTS = 50_000  # events per Arrow batch inserted


def load_with_python(con: duckdb.DuckDBPyConnection, trace, progress: Callable[[float], None]) -> PythonEventLoader:
    """Fill `_kineto_events` from the streaming ijson reader; trace.metadata is complete afterwards."""
    from .kineto_stream import iter_event_batches

    loader = PythonEventLoader(con, trace.path)
    pending: list = []
    for batch in iter_event_batches(trace, progress):
        pending.extend(batch)
        if len(pending) >= BATCH_EVENTS:
            loader.add(pending)
            pending = []
    if pending:
        loader.add(pending)
    return loader

