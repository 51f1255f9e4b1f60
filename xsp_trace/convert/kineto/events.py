"""The one raw event relation every Kineto reader fills, and its checks.

`_kineto_events` holds one row per element of `traceEvents`, in file order (rowid = position):
ph, cat, name, pid, tid and id as text (JSON numbers as their text), ts and dur as DECIMAL(38,9)
microseconds (exact), args as JSON (the object; NULL when absent or not an object for the
streaming reader, while DuckDB's reader keeps any JSON value: the mapping finds no keys in a
non-object either). DuckDB's JSON reader writes it directly (kineto/duckdb_reader.py); the streaming ijson reader (kineto/python_reader.py), for files DuckDB's reader does
not take, writes the same columns here. queries/ingest/kineto_map.sql then maps the relation
(the DuckDB reader fills it with one piece of the trace at a time, mapped before the next).

`check_events` is the one check of the relation before the mapping, whichever reader filled it:
the first event (in file order) that is not an object, or whose time the mapping needs and that
is missing, not a number or beyond +-TIME_LIMIT_US (ts, dur, ts + dur) is one InputError line.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from decimal import ROUND_HALF_UP, Context, Decimal
from typing import Any

import duckdb
import pyarrow as pa

from ...errors import InputError
from ...store.database import insert_relation
from ..validate import TIME_LIMIT_US
from .python_reader import NON_FINITE_TEXT

RAW_COLUMNS = ("ph", "cat", "name", "pid", "tid", "ts", "dur", "id", "args")
# read_json's column types (duckdb_reader): those of the table the Python reader fills. args stay
# one JSON value, parsed by the mapping once per event (a MAP(VARCHAR, JSON) would parse every object
# whole at read time, keys the mapping never uses included: BENCHMARKS.md, "Convert: Kineto").
ARGS_TYPE = "JSON"
READ_JSON_COLUMNS = (
    "{ph: 'VARCHAR', cat: 'VARCHAR', name: 'VARCHAR', pid: 'VARCHAR', tid: 'VARCHAR', "
    "ts: 'DECIMAL(38,9)', dur: 'DECIMAL(38,9)', id: 'VARCHAR', args: 'JSON'}"
)
RAW_DDL = f"""CREATE OR REPLACE TEMP TABLE _kineto_events (ph VARCHAR, cat VARCHAR, name VARCHAR, pid VARCHAR,
    tid VARCHAR, ts DECIMAL(38,9), dur DECIMAL(38,9), id VARCHAR, args {ARGS_TYPE})"""
FIX_EVENT = "export the trace again with torch.profiler, or repair the event"


class RepeatedArgKeys(Exception):
    """An args object of the relation repeats a key: the mapping reads the first, json.loads the
    last, so DuckDB's reader hands the file to the streaming reader (whose objects have unique keys)."""


_DECIMAL = pa.decimal128(38, 9)
_ARROW = pa.schema(
    [
        ("ph", pa.string()),
        ("cat", pa.string()),
        ("name", pa.string()),
        ("pid", pa.string()),
        ("tid", pa.string()),
        ("ts", _DECIMAL),
        ("dur", _DECIMAL),
        ("id", pa.string()),
        ("args", pa.string()),
    ]
)
_NANO = Decimal("1e-9")
_INF = float("inf")
_NON_FINITE_FLOAT = {"NaN": float("nan"), "Infinity": _INF, "-Infinity": -_INF}


def _json_number(value: Decimal) -> float:
    """A Decimal inside an args list or object, for json's encoder: its double (a non-finite
    number's stand-in: NaN or +-Infinity, which the encoder writes so)."""
    number = float(value)
    if number in (_INF, -_INF) and value in NON_FINITE_TEXT:
        return _NON_FINITE_FLOAT[NON_FINITE_TEXT[value]]
    return number


_ENCODE = json.JSONEncoder(default=lambda v: _json_number(v) if isinstance(v, Decimal) else str(v), ensure_ascii=False, separators=(",", ":")).encode


def _number_text(value: Decimal) -> str:
    """A non-integer JSON number as DuckDB's JSON reader writes it into VARCHAR: the shortest text
    of its double (1e3 -> '1000.0', 1.50 -> '1.5'); beyond a double, the decimal text; a non-finite
    number (its stand-in) NaN, Infinity or -Infinity."""
    number = float(value)
    if number not in (_INF, -_INF):
        return repr(number)
    return NON_FINITE_TEXT.get(value) or str(value)


def _text(value) -> str | None:
    """A scalar field as DuckDB's JSON reader writes it into a VARCHAR column."""
    kind = type(value)
    if kind is str:
        return value
    if value is None:
        return None
    if kind is bool:
        return "true" if value else "false"
    if kind is int:
        return str(value)
    if kind is Decimal:
        return _number_text(value)
    return _ENCODE(value)


def _object(value) -> str | None:
    """An args object as JSON text (keys unique, as json.loads keeps the last); None if not an object."""
    if type(value) is not dict:
        return None
    return "{" + ",".join(f"{json.dumps(k, ensure_ascii=False)}:{_json(v)}" for k, v in value.items()) + "}"


def _json(value) -> str:
    """An args value as JSON text."""
    kind = type(value)
    if kind is str:
        return json.dumps(value, ensure_ascii=False)
    if kind is int:
        return str(value)
    if kind is Decimal:
        return _number_text(value)
    if kind is bool:
        return "true" if value else "false"
    if value is None:
        return "null"
    return _ENCODE(value)


class PythonEventLoader:
    """Events from the streaming reader -> rows of `_kineto_events`, in batches.

    Times that are present but cannot be stored (not a number, not finite, beyond DECIMAL(38,9))
    are stored as NULL and remembered, and the first element that is not an object is
    remembered too (a row of NULLs stands for it), so `check_events` can name the first problem
    in file order, as for the DuckDB reader."""

    def __init__(self, con: duckdb.DuckDBPyConnection, path):
        self.con, self.path = con, path
        self.count = 0
        self.unstored: dict[tuple[int, str], tuple[str, object]] = {}  # (index, key) -> (problem, value)
        self.first_non_object: int | None = None
        con.execute(RAW_DDL)

    def _time(self, index: int, key: str, value: Any):
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, Decimal)):
            self.unstored[(index, key)] = ("non-numeric", value)
            return None
        # int or Decimal (typeshed cannot compare the union with an int); copy_abs: abs() overflows past 1e999999
        magnitude: Any = value.copy_abs() if isinstance(value, Decimal) else abs(value)
        if magnitude >= _STORABLE_CHECK and not _storable(value):
            name = NON_FINITE_TEXT.get(value) if isinstance(value, Decimal) else None
            self.unstored[(index, key)] = ("non-finite", name) if name else ("out-of-range", value)
            return None
        return value

    def add(self, events: Iterable) -> None:
        columns: list[list] = [[] for _ in RAW_COLUMNS]
        ph, cat, name, pid, tid, ts, dur, ids, args = columns
        for event in events:
            index = self.count
            self.count += 1
            if type(event) is not dict:
                if self.first_non_object is None:
                    self.first_non_object = index
                for col in columns:
                    col.append(None)
                continue
            get = event.get
            ph.append(_text(get("ph")))
            cat.append(_text(get("cat")))
            name.append(_text(get("name")))
            pid.append(_text(get("pid")))
            tid.append(_text(get("tid")))
            ts.append(self._time(index, "ts", get("ts")))
            dur.append(self._time(index, "dur", get("dur")))
            ids.append(_text(get("id")))
            args.append(_object(get("args")))
        arrays = []
        for col, f in zip(columns, _ARROW, strict=True):
            if f.type == _DECIMAL:
                try:
                    arrays.append(pa.array(col, f.type))
                except (pa.ArrowInvalid, pa.ArrowTypeError):  # more than 9 decimals, or out of range
                    arrays.append(self._decimals(col))
            else:
                arrays.append(pa.array(col, f.type))
        insert_relation(self.con, "_kineto_events", pa.Table.from_arrays(arrays, schema=_ARROW))

    def _decimals(self, values: list) -> pa.Array:
        """Times with more than 9 decimals, rounded half away from zero as DuckDB's reader does."""
        return pa.array([None if v is None else Decimal(v).quantize(_NANO, ROUND_HALF_UP, _WIDE) for v in values], _DECIMAL)


# DECIMAL(38,9) holds times below 10^29 us once rounded to 9 decimals; beneath _STORABLE_CHECK
# no test is needed.
_STORABLE_CHECK = 10**28
_DECIMAL_LIMIT = Decimal(10) ** 29


_WIDE = Context(prec=80)  # exact for every value DECIMAL(38,9) holds (the default context keeps 28 digits)


def _storable(value) -> bool:
    if isinstance(value, Decimal):
        if not value.is_finite() or value.adjusted() >= 29:
            return False
        value = value.quantize(_NANO, ROUND_HALF_UP, _WIDE)
    return abs(value) < _DECIMAL_LIMIT


# The first event whose time the mapping needs (complete events it keeps, instants, counters) and
# that is missing or out of range: ts, then dur, then the end ts + dur (as a span's end).
_BAD_TIMES = """
SELECT rowid, name, ts, dur,
       CASE WHEN ts IS NULL THEN 'ts'
            WHEN abs(ts) > getvariable('kineto_time_limit_us') THEN 'ts range'
            WHEN NOT complete THEN NULL
            WHEN dur IS NULL THEN 'dur'
            WHEN abs(dur) > getvariable('kineto_time_limit_us') THEN 'dur range'
            WHEN abs(ts + dur) > getvariable('kineto_time_limit_us') THEN 'end range' END AS problem
FROM (
    SELECT rowid, name, ts, dur, ph = getvariable('kineto_phase_complete') AS complete
    FROM _kineto_events
    WHERE (ph = getvariable('kineto_phase_complete')
           AND NOT list_contains(getvariable('kineto_dropped_categories'), coalesce(lower(cat), ''))
           AND (getvariable('kineto_include_python')
                OR NOT list_contains(getvariable('kineto_python_categories'), coalesce(lower(cat), ''))))
       OR list_contains(getvariable('kineto_phase_instant'), ph)
       OR ph = getvariable('kineto_phase_counter')
)
WHERE problem IS NOT NULL
ORDER BY rowid LIMIT 1
"""


def _plain(value: Decimal) -> str:
    """A DECIMAL time as the JSON number it was (no trailing zeros)."""
    text = format(value.normalize(_WIDE), "f")
    return text[:30]


def check_events(con: duckdb.DuckDBPyConnection, path, loader: PythonEventLoader | None = None, offset: int = 0) -> None:
    """InputError for the first event (file order) that is not an object, or that the mapping needs
    a time of and whose time is missing, not a number or out of range (kineto_* variables set).
    `offset`: the events before the relation (it holds one piece of the trace, the pieces before
    it checked already), so the line names the event's place in the whole trace."""
    rows = [(row[0] + offset, *row[1:]) for row in con.execute(_BAD_TIMES).fetchall()]
    first_non_object = loader.first_non_object if loader is not None else None
    if first_non_object is not None and (not rows or first_non_object < rows[0][0]):
        raise InputError(path, f"event #{first_non_object + 1} is not a JSON object", FIX_EVENT)
    if not rows:
        return
    index, name, ts, dur, problem = rows[0]
    what = f"event #{index + 1}" + (f" ({name[:60]!r})" if name else "")
    key = problem.split()[0]
    if problem == "end range":
        raise InputError(path, f"{what} ends out of range (ts + dur = {_plain(_WIDE.add(ts, dur))} us)", FIX_EVENT)
    if problem.endswith("range"):
        value = _plain(ts if key == "ts" else dur)
        raise InputError(path, f"{what} has an out-of-range '{key}' ({value}; more than {TIME_LIMIT_US} us)", FIX_EVENT)
    unstored: dict[tuple[int, str], tuple[str, object]] = loader.unstored if loader is not None else {}
    why, raw = unstored.get((index, key), (None, None))
    if why == "non-numeric":
        raise InputError(path, f"{what} has a non-numeric '{key}' ({str(raw)[:30]!r})", FIX_EVENT)
    if why == "non-finite":
        raise InputError(path, f"{what} has an out-of-range '{key}' ({raw}: a time must be a finite number)", FIX_EVENT)
    if why == "out-of-range":
        raise InputError(path, f"{what} has an out-of-range '{key}' ({str(raw)[:30]}; more than {TIME_LIMIT_US} us)", FIX_EVENT)
    raise InputError(path, f"{what} has no '{key}'", FIX_EVENT)


BATCH_EVENTS = 50_000  # events per Arrow batch inserted


def load_with_python(con: duckdb.DuckDBPyConnection, trace, progress: Callable[[float], None]) -> PythonEventLoader:
    """Fill `_kineto_events` from the streaming ijson reader; trace.metadata is complete afterwards.
    A file with non-finite numbers is read again, with them rewritten (ijson stops at the first)."""
    from .python_reader import NonFiniteNumbers

    try:
        return _load(con, trace, progress, non_finite=False)
    except NonFiniteNumbers:
        trace.event_count = 0
        return _load(con, trace, progress, non_finite=True)


def _load(con: duckdb.DuckDBPyConnection, trace, progress: Callable[[float], None], non_finite: bool) -> PythonEventLoader:
    from .python_reader import iter_event_batches

    loader = PythonEventLoader(con, trace.path)
    pending: list = []
    for batch in iter_event_batches(trace, progress, non_finite):
        pending.extend(batch)
        if len(pending) >= BATCH_EVENTS:
            loader.add(pending)
            pending = []
    if pending:
        loader.add(pending)
    return loader
