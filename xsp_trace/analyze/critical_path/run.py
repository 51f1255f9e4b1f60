"""A run as the critical path's walk reads it (walk.py): its CPU spans and GPU work as
columns in time order, the launch, stream, event and blocking edges between rows as arrays, and each
thread's call stack flattened into elementary segments owned by their innermost span."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

import duckdb
import numpy as np

from ...formats import kineto_fields as kf
from ...store.sql import registered
from ..sql_library import include
from . import chase

_FEW = 64  # lanes grouped by masks rather than by a sort
GPU_KIND = {"computation": "kernel", "communication": "communication", "memory": None, "other": "kernel"}


class ThreadSegments(NamedTuple):
    """A CPU thread's timeline as elementary segments, each owned by its innermost span (-1: idle).
    Memoryviews of int64 arrays: the walk reads them one item at a time as Python ints, without
    a list's copy of every value (np.asarray gives the arrays back)."""

    starts: memoryview
    ends: memoryview
    owners: memoryview


def thread_segments(starts, ends, owners) -> ThreadSegments:
    return ThreadSegments(*(np.ascontiguousarray(a, dtype=np.int64).data for a in (starts, ends, owners)))


class _Lists(NamedTuple):
    """Memoryviews of the columns the step-by-step walk reads one item at a time (Python ints and bools)."""

    start: memoryview
    end: memoryview
    blocking: memoryview
    launchers: memoryview
    stream_prev: memoryview
    launch_of: memoryview


@dataclass
class Run:
    """A run's spans as columns ordered by (start, end descending, depth, span_id) -- a row is a
    position in them -- and the dependencies between rows as arrays indexed by row."""

    run_id: int
    # columns of the run's spans, indexed by row: numpy arrays (pid and tid for CPU spans, device_id and
    # stream_id for GPU work, -1 for the other), Labels for kind, work_class and gpu_kind
    spans: dict[str, Any]
    threads: dict[tuple[int, int], np.ndarray]  # (pid, tid) -> rows of CPU spans, in row order
    streams: dict[tuple[int, int], np.ndarray]  # (device, stream) -> rows of GPU work, in row (start) order
    stream_prev: np.ndarray  # row -> the previous GPU row on its stream (-1: first, or not GPU work)
    launch_of: np.ndarray  # row -> the CPU row that launched it (-1: none)
    blocking: np.ndarray  # row -> True for a call that waits for the GPU
    launchers: np.ndarray  # row -> True for a call that launched GPU work
    waits_for: dict[int, int] = field(default_factory=dict)  # GPU row -> GPU row of another stream it waited for (event)
    gpu_ends: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # sorted GPU end times
    gpu_end_rows: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    flat: dict[tuple[int, int], ThreadSegments] = field(default_factory=dict)
    lists: _Lists | None = None  # the columns the walk reads one item at a time
    chase: chase.Chase | None = None  # the hops between nodes, precomputed (prepare_chase)
    cross: tuple | None = None  # the cross-thread edges for the step-by-step walk (critical_path.walk.thread_crossings)
    con: duckdb.DuckDBPyConnection | None = None  # where names are read from
    name_column: np.ndarray | None = None  # every row's name, once read (name())

    def names(self, rows: np.ndarray) -> np.ndarray:
        """The names of `rows` (object array), read from the database unless all are read already."""
        if self.name_column is not None:
            return self.name_column[rows]
        assert self.con is not None
        wanted = {"at": np.arange(len(rows), dtype=np.int64), "span_id": self.spans["span_id"][rows]}
        with registered(self.con, "_xsp_wanted", wanted) as table:
            found = self.con.execute(
                f"SELECT w.at, s.name FROM {table} AS w JOIN spans AS s ON s.span_id = w.span_id WHERE s.run_id = ?", [self.run_id]
            ).fetchnumpy()
        out = np.full(len(rows), None, dtype=object)
        out[np.asarray(found["at"], dtype=np.int64)] = np.asarray(found["name"], dtype=object)
        return out

    def name(self, row: int) -> str:
        """One row's name; the first call reads every row's (for callers that ask row by row)."""
        if self.name_column is None:
            self.name_column = self.names(np.arange(len(self.spans["span_id"])))
        return str(self.name_column[row])

    def walk_lists(self) -> _Lists:
        if self.lists is None:
            columns = (self.spans["start_ns"], self.spans["end_ns"], self.blocking, self.launchers, self.stream_prev, self.launch_of)
            self.lists = _Lists(*(np.ascontiguousarray(c).data for c in columns))
        return self.lists

    def start_end(self) -> tuple[memoryview, memoryview]:
        lists = self.walk_lists()
        return lists.start, lists.end

    def launcher(self, row: int) -> int | None:
        found = int(self.launch_of[row])
        return found if found >= 0 else None

    def previous_on_stream(self, row: int) -> int | None:
        found = int(self.stream_prev[row])
        return found if found >= 0 else None


class Labels:
    """A column of a few distinct strings (a span's kind, its work class) as small codes into them,
    not a Python string per row: indexing by a row gives its string, by rows another Labels, and
    comparing with a string gives a mask."""

    __slots__ = ("codes", "values")

    def __init__(self, codes: np.ndarray, values: list[str]):
        self.codes, self.values = codes, values

    def __len__(self) -> int:
        return len(self.codes)

    def __getitem__(self, at):
        if isinstance(at, (int, np.integer)):
            return self.values[int(self.codes[at])]
        return Labels(self.codes[at], self.values)

    def code(self, value: str) -> int:
        """The code of `value` (-1: none of the column's values)."""
        return self.values.index(value) if value in self.values else -1

    def __eq__(self, other: object) -> Any:
        return self.codes == self.code(other) if isinstance(other, str) else NotImplemented

    def __ne__(self, other: object) -> Any:
        return self.codes != self.code(other) if isinstance(other, str) else NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        return np.array(self.values, dtype=object)[self.codes]

    def isin(self, values) -> np.ndarray:
        """The mask of rows whose value is one of `values` (np.isin without a string per row)."""
        return np.isin(self.codes, [self.code(v) for v in values if v in self.values])

    def present(self) -> list[str]:
        """The values that occur, in code order."""
        return [self.values[c] for c in np.flatnonzero(np.bincount(self.codes, minlength=len(self.values)))]


def _row_lookup(span_ids: np.ndarray) -> tuple[np.ndarray, int]:
    """A table from span id to row (-1: not in the selection), indexed by span id - offset: dense,
    as converted span ids are; where they are not (ids spread over more than 4 per row), sorted ids."""
    if len(span_ids) == 0:
        return np.zeros(0, dtype=np.int64), 0
    low, high = int(span_ids.min()), int(span_ids.max())
    if high - low >= 4 * len(span_ids) + 1024:
        order = np.argsort(span_ids, kind="stable")
        return np.stack((span_ids[order], order)), -1
    table = np.full(high - low + 1, -1, dtype=np.int64)
    table[span_ids - low] = np.arange(len(span_ids))
    return table, low


def _rows_of(lookup: tuple[np.ndarray, int], wanted: np.ndarray) -> np.ndarray:
    """The rows of `wanted` span ids (-1 where a span is not in the run's selection)."""
    table, low = lookup
    if len(table) == 0 or len(wanted) == 0:
        return np.full(len(wanted), -1, dtype=np.int64)
    if table.ndim == 2:  # sorted ids and their rows
        at = np.minimum(np.searchsorted(table[0], wanted), table.shape[1] - 1)
        return np.where(table[0][at] == wanted, table[1][at], -1)
    inside = (wanted >= low) & (wanted < low + len(table))
    return np.where(inside, table[np.where(inside, wanted - low, 0)], -1)


def _few_values(values: np.ndarray) -> np.ndarray | None:
    """The distinct values, sorted, when there are at most _FEW of them (one pass each, no sort of
    the column); else None."""
    found: list = []
    rest = values
    while len(rest) and len(found) <= _FEW:
        found.append(rest[0])
        rest = rest[rest != rest[0]]
    return np.sort(np.array(found, dtype=values.dtype)) if len(found) <= _FEW else None


def _groups(keys_a: np.ndarray, keys_b: np.ndarray, rows: np.ndarray) -> dict[tuple[int, int], np.ndarray]:
    """rows grouped by (keys_a, keys_b), each group in row order, groups in key order."""
    if len(rows) == 0:
        return {}
    a, b = keys_a[rows], keys_b[rows]
    lanes = _few_values(a)
    if lanes is not None:  # a few processes or devices: a mask per lane instead of sorting the rows
        out: dict[tuple[int, int], np.ndarray] = {}
        for lane in lanes.tolist():
            mine = np.flatnonzero(a == lane)
            subs = _few_values(b[mine])
            if subs is None:
                break
            for sub in subs.tolist():
                out[(int(lane), int(sub))] = rows[mine[b[mine] == sub]]
        else:
            return out
    order = np.lexsort((rows, b, a))
    rows, a, b = rows[order], a[order], b[order]
    cuts = np.flatnonzero((a[1:] != a[:-1]) | (b[1:] != b[:-1])) + 1
    return {(int(a[g[0]]), int(b[g[0]])): rows[g[0] : g[-1] + 1] for g in np.split(np.arange(len(rows)), cuts)}


_CPU_SPANS = """
    SELECT span_id, start_ns, end_ns, coalesce(depth, 0) AS depth, list_position($kinds, kind) - 1 AS kind,
           coalesce(pid, -1) AS pid, tid
    FROM spans
    WHERE run_id = $run AND end_ns >= start_ns AND tid IS NOT NULL AND stream_id IS NULL
      AND kind NOT IN ('model', 'marker') AND NOT list_contains($gpu_kinds, kind)
"""
_GPU_SPANS = """
    SELECT span_id, start_ns, end_ns, coalesce(depth, 0) AS depth, list_position($kinds, kind) - 1 AS kind,
           coalesce(device_id, -1) AS device_id, coalesce(stream_id, -1) AS stream_id, hash(kind, name) AS kind_name
    FROM spans
    WHERE run_id = $run AND end_ns >= start_ns AND list_contains($gpu_kinds, kind)
"""


def _columns(con: duckdb.DuckDBPyConnection, sql: str, params: dict) -> dict[str, np.ndarray]:
    return {name: np.asarray(values) for name, values in con.execute(sql, params).fetchnumpy().items()}


def _time_order(start: np.ndarray, end: np.ndarray, depth: np.ndarray, span_id: np.ndarray) -> np.ndarray:
    """The rows by (start, end descending, depth, span_id). They come as a few runs already sorted
    by start (a table each), so a stable sort by start is a merge; only the rows that share their
    start with another are sorted by the other keys."""
    order = np.argsort(start, kind="stable")
    ordered = start[order]
    same = ordered[1:] == ordered[:-1]
    tied = np.zeros(len(order), dtype=bool)
    tied[1:] |= same
    tied[:-1] |= same
    at = np.flatnonzero(tied)
    if len(at):
        rows = order[at]
        order[at] = rows[np.lexsort((span_id[rows], depth[rows], -end[rows], start[rows]))]
    return order


def _work_classes(con: duckdb.DuckDBPyConnection, run_id: int, gpu: dict[str, np.ndarray]) -> Labels:
    """Each GPU row's work class (xsp_gpu_work_class), computed once per distinct kind and name,
    not per row, and matched to the rows by the hash of the two."""
    found = con.execute(
        "WITH n AS (SELECT DISTINCT kind, name FROM xsp_gpu_work WHERE run_id = ?) "
        "SELECT hash(kind, name) AS kind_name, xsp_gpu_work_class(kind, name) AS work_class FROM n",
        [run_id],
    ).fetchall()
    values = sorted({str(c) for _, c in found})
    hashes = np.array([h for h, _ in found], dtype=np.uint64)
    codes = np.array([values.index(str(c)) for _, c in found], dtype=np.int8)
    if len(np.unique(hashes)) == len(hashes):
        order = np.argsort(hashes)
        at = np.minimum(np.searchsorted(hashes[order], gpu["kind_name"]), max(len(order) - 1, 0))
        return Labels(codes[order][at] if len(order) else np.zeros(0, dtype=np.int8), values)
    # two kinds and names of one hash: the view's class of every row
    rows = con.execute("SELECT span_id, work_class FROM xsp_gpu_work WHERE run_id = ?", [run_id]).fetchnumpy()
    out = np.zeros(len(gpu["span_id"]), dtype=np.int8)
    out[_rows_of(_row_lookup(gpu["span_id"]), np.asarray(rows["span_id"], dtype=np.int64))] = [values.index(str(c)) for c in rows["work_class"]]
    return Labels(out, values)


def load_run(con: duckdb.DuckDBPyConnection, run_id: int) -> Run:
    """The run's CPU spans and GPU work as columns in time order, and its launch, stream and
    blocking edges: two narrow queries (CPU spans, GPU work); kind and work class as codes into
    their few values (Labels); names read when asked for (Run.names)."""
    include(con, "lib/gpu_work", "lib/sync")
    kinds = [r[0] for r in con.execute("SELECT DISTINCT kind FROM spans WHERE run_id = ? ORDER BY 1", [run_id]).fetchall()]
    gpu_kinds = [r[0] for r in con.execute("SELECT DISTINCT kind FROM xsp_gpu_work WHERE run_id = ?", [run_id]).fetchall()]
    params = {"run": run_id, "kinds": kinds, "gpu_kinds": gpu_kinds}
    cpu, gpu = _columns(con, _CPU_SPANS, params), _columns(con, _GPU_SPANS, params)
    work = _work_classes(con, run_id, gpu)
    n_cpu, n = len(cpu["span_id"]), len(cpu["span_id"]) + len(gpu["span_id"])
    both = {name: np.concatenate((cpu[name], gpu[name])).astype(np.int64, copy=False) for name in ("span_id", "start_ns", "end_ns", "depth")}
    order = _time_order(both["start_ns"], both["end_ns"], both["depth"], both["span_id"])
    spans: dict[str, Any] = {name: both.pop(name)[order] for name in ("span_id", "start_ns", "end_ns")}
    for name, part, at in (("pid", cpu, 0), ("tid", cpu, 0), ("device_id", gpu, n_cpu), ("stream_id", gpu, n_cpu)):
        ids = part.pop(name)
        # ids that fit 32 bits are kept in 32 (they only group rows into threads and streams)
        column = np.full(n, -1, dtype=np.int32 if len(ids) == 0 or (ids.min() >= -1 and ids.max() < 2**31) else np.int64)
        column[at : at + len(ids)] = ids
        spans[name] = column[order]
    spans["kind"] = Labels(np.concatenate((cpu.pop("kind"), gpu.pop("kind"))).astype(np.int8)[order], kinds)
    work_codes = np.concatenate((np.zeros(n_cpu, dtype=np.int8), work.codes + 1)).astype(np.int8)[order]
    del cpu, gpu, order
    spans["work_class"] = Labels(work_codes, [""] + work.values)
    spans["gpu_kind"] = _gpu_kinds(spans["kind"], spans["work_class"])
    return _edges(con, run_id, spans, work_codes > 0)


def _gpu_kinds(kind: Labels, work_class: Labels) -> Labels:
    """The kind a path segment of each row gets: memcpy and memset keep their kind, other GPU work
    is named by its class (GPU_KIND), CPU rows keep theirs."""
    values = list(kind.values) + sorted({v for v in GPU_KIND.values() if v is not None} - set(kind.values))
    codes = kind.codes.copy()
    keep = (kind == "memcpy") | (kind == "memset")
    for work, named in GPU_KIND.items():
        if named is not None:
            codes[(work_class == work) & ~keep] = values.index(named)
    return Labels(codes, values)


def _edges(con: duckdb.DuckDBPyConnection, run_id: int, spans: dict[str, Any], is_gpu: np.ndarray) -> Run:
    """The run of these columns, with its threads and streams and the launch, stream, event and
    blocking edges between its rows."""
    n = len(spans["span_id"])
    lookup = _row_lookup(spans["span_id"])
    threads = _groups(spans["pid"], spans["tid"], np.flatnonzero(~is_gpu))
    streams = _groups(spans["device_id"], spans["stream_id"], np.flatnonzero(is_gpu))
    stream_prev = np.full(n, -1, dtype=np.int64)
    for rows in streams.values():
        stream_prev[rows[1:]] = rows[:-1]
    pairs = con.execute("SELECT api_span_id, gpu_span_id FROM launches WHERE run_id = ? AND api_span_id IS NOT NULL", [run_id]).fetchnumpy()
    api = _rows_of(lookup, np.asarray(pairs["api_span_id"], dtype=np.int64))
    gpu = _rows_of(lookup, np.asarray(pairs["gpu_span_id"], dtype=np.int64))
    known = (api >= 0) & (gpu >= 0)
    launch_of = np.full(n, -1, dtype=np.int64)
    launch_of[gpu[known]] = api[known]
    launchers = np.zeros(n, dtype=bool)
    launchers[launch_of[launch_of >= 0]] = True
    sync = con.execute("SELECT span_id FROM xsp_cpu_calls WHERE run_id = ? AND cpu_class = 'sync'", [run_id]).fetchnumpy()
    sync_rows = _rows_of(lookup, np.asarray(sync["span_id"], dtype=np.int64))
    blocking = np.zeros(n, dtype=bool)
    blocking[sync_rows[sync_rows >= 0]] = True
    gpu_rows = np.flatnonzero(is_gpu)
    order = np.argsort(spans["end_ns"][gpu_rows], kind="stable")
    run = Run(run_id, spans, threads, streams, stream_prev, launch_of, blocking, launchers, con=con)
    run.waits_for = _event_waits(con, run)
    run.gpu_end_rows = gpu_rows[order]
    run.gpu_ends = spans["end_ns"][run.gpu_end_rows]
    return run


def _event_waits(con: duckdb.DuckDBPyConnection, run: Run) -> dict[int, int]:
    """Cross-stream waits the trace records (Kineto's "Stream Wait Event" activities): the first GPU
    item launched on the waiting stream after the cudaStreamWaitEvent call waits for the last item
    launched on the recording stream before the cudaEventRecord call."""
    rows = con.execute(
        """
        SELECT w.device_id, w.stream_id, TRY_CAST(o.value AS BIGINT) AS on_stream, wait_call.start_ns AS waited_at, record.start_ns AS recorded_at
        FROM spans AS w
        JOIN span_args AS o ON o.run_id = w.run_id AND o.span_id = w.span_id AND o.key = $on_stream
        JOIN span_args AS c ON c.run_id = w.run_id AND c.span_id = w.span_id AND c.key = $record_corr
        JOIN spans AS record ON record.run_id = w.run_id AND record.kind = 'api' AND record.correlation_id = TRY_CAST(c.value AS BIGINT)
        JOIN spans AS wait_call ON wait_call.run_id = w.run_id AND wait_call.kind = 'api' AND wait_call.correlation_id = w.correlation_id
        WHERE w.run_id = $run AND w.kind = 'sync' AND w.name = $name
          -- (a wait without its streams -- a NULL stream_id, an arg that is no number -- links nothing)
          AND w.device_id IS NOT NULL AND w.stream_id IS NOT NULL AND TRY_CAST(o.value AS BIGINT) IS NOT NULL
        """,
        {
            "run": run.run_id,
            "on_stream": kf.ARG_WAIT_ON_STREAM,
            "record_corr": kf.ARG_WAIT_ON_EVENT_RECORD_CORRELATION,
            "name": kf.STREAM_WAIT_EVENT_NAME,
        },
    ).fetchall()
    start = run.spans["start_ns"]
    launched: dict[tuple[int, int], np.ndarray] = {}  # stream -> when each of its items was launched (its start without a launch)

    def launch_times(key: tuple[int, int]) -> np.ndarray:
        if key not in launched:
            stream_rows = run.streams.get(key, np.zeros(0, dtype=np.int64))
            launcher = run.launch_of[stream_rows]
            launched[key] = np.where(launcher >= 0, start[np.maximum(launcher, 0)], start[stream_rows])
        return launched[key]

    waits = {}
    for device, stream, on_stream, waited_at, recorded_at in rows:
        recording_key, waiting_key = (int(device), int(on_stream)), (int(device), int(stream))
        recording = np.flatnonzero(launch_times(recording_key) <= recorded_at)
        waiting = np.flatnonzero(launch_times(waiting_key) >= waited_at)
        if len(recording) and len(waiting):
            waits[int(run.streams[waiting_key][waiting[0]])] = int(run.streams[recording_key][recording[-1]])
    return waits


def _flatten_loop(start_ns: list[int], end_ns: list[int], rows: list[int]) -> ThreadSegments:
    """flatten for a thread whose spans do not all nest: a call stack replayed span by span, a span
    that overlaps its enclosing one without nesting left out (not a call stack)."""
    starts: list[int] = []
    ends: list[int] = []
    owners: list[int] = []
    stack: list[int] = []  # open spans (rows), outermost first
    stack_ends: list[int] = []
    cursor: int | None = None

    def close_until(limit: float) -> None:
        """Pop the spans that end by `limit`, each owning the time from the cursor to its end."""
        nonlocal cursor
        while stack_ends and stack_ends[-1] <= limit:
            until = stack_ends.pop()
            owner = stack.pop()
            if cursor is not None and until > cursor:
                starts.append(cursor)
                ends.append(until)
                owners.append(owner)
                cursor = until

    for row, begin, finish in zip(rows, start_ns, end_ns, strict=True):  # in start order, outer before inner
        close_until(begin)
        if cursor is not None and begin > cursor:
            starts.append(cursor)
            ends.append(begin)
            owners.append(stack[-1] if stack else -1)
        if cursor is None or begin > cursor:
            cursor = begin
        if stack_ends and finish > stack_ends[-1]:
            continue
        stack.append(row)
        stack_ends.append(finish)
    close_until(float("inf"))
    return thread_segments(starts, ends, owners)


def _flatten_nested(start_ns: np.ndarray, end_ns: np.ndarray, rows: np.ndarray) -> ThreadSegments | None:
    """flatten in numpy for a thread whose spans nest (None when one does not): every span opens at
    its start and closes at its end; the owner between two boundaries is the innermost open span.
    An empty span owns nothing but still splits its enclosing span's time there, as the call stack
    does. `rows` come in time order (start, end descending), so the opens are sorted already and
    the sorts below mostly merge sorted runs."""
    n = len(rows)
    if n == 0:
        return thread_segments([], [], [])
    empty = end_ns == start_ns
    index = np.int32 if 2 * n < 2**31 else np.int64  # span indices (half the bytes of int64)
    spans = np.flatnonzero(~empty).astype(index)
    # Boundaries in call-stack order: by time, closes before opens (empty spans between), inner
    # closes first (later in time order), outer opens first. Closes sorted by (end, later first);
    # then one stable sort by time over closes, empties, opens (three sorted runs: a merge).
    backwards = spans[::-1]
    closes = backwards[np.argsort(end_ns[backwards], kind="stable")]
    empties = np.flatnonzero(empty).astype(index)
    times = np.concatenate((end_ns[closes], start_ns[empties], start_ns[spans]))
    order = np.argsort(times, kind="stable")
    times = times[order]
    kind = np.concatenate((np.zeros(len(closes), dtype=np.int8), np.ones(len(empties), dtype=np.int8), np.full(len(spans), 2, dtype=np.int8)))[order]
    span = np.concatenate((closes, empties, spans))[order]
    del order, closes
    depth = np.cumsum(kind - 1, dtype=index)
    # Each span's parent: the last span opened one level up before it, found among the opens
    # sorted by (depth, position).
    opens = np.flatnonzero(kind == 2)
    open_depth = depth[opens]
    small = open_depth.astype(np.int16) if len(open_depth) and int(open_depth.max()) < np.iinfo(np.int16).max else open_depth
    by_depth = opens[np.argsort(small, kind="stable")]  # opens by (depth, position): radix sort on small depths
    stride = len(times) + 1
    sorted_depth = depth[by_depth].astype(np.int64)
    key = sorted_depth * stride + by_depth
    # asked in key order, so the search walks the keys once
    found = np.searchsorted(key, (sorted_depth - 1) * stride + by_depth, side="right") - 1
    parent_at = np.where(sorted_depth > 1, by_depth[np.maximum(found, 0)], -1)
    parent = np.full(n, -1, dtype=index)
    parent[span[by_depth]] = np.where(parent_at >= 0, span[np.maximum(parent_at, 0)], -1)
    # The stack is right as long as every span closes no later than the span it opened inside.
    child = span[opens]
    inside = parent[child] >= 0
    if np.any(end_ns[child[inside]] > end_ns[parent[child[inside]]]):
        return None
    # A segment runs from the last boundary at a time to the next time; its owner is the innermost
    # open span after that boundary: after an open, that span; after a close, the span it had
    # opened inside (its parent); after an empty span, as after the boundary before it.
    segment = np.flatnonzero(times[1:] > times[:-1])
    at = segment
    if len(empties):
        last = np.where(kind == 1, -1, np.arange(len(kind)))
        np.maximum.accumulate(last, out=last)
        at = last[segment]  # -1: no span opened or closed before it
    opened = span[at]
    owner = np.where(kind[at] == 2, opened, parent[opened])
    owner[at < 0] = -1
    owners = np.append(rows, -1)[owner]  # -1 (idle) indexes the appended -1
    return thread_segments(times[segment], times[segment + 1], owners)


def flatten(run: Run, key: tuple[int, int]) -> ThreadSegments:
    """The thread's elementary segments: the innermost span running in each, gaps as -1."""
    if key not in run.flat:
        rows = run.threads.get(key, np.zeros(0, dtype=np.int64))
        start_ns, end_ns = run.spans["start_ns"][rows], run.spans["end_ns"][rows]
        nested = _flatten_nested(start_ns, end_ns, rows)
        run.flat[key] = nested if nested is not None else _flatten_loop(start_ns.tolist(), end_ns.tolist(), rows.tolist())
    return run.flat[key]


def waited_for(run: Run, call: int, before: int) -> int | None:
    """The GPU work that finished last inside the blocking call, before `before`."""
    i = int(np.searchsorted(run.gpu_ends, before, side="right")) - 1
    if i >= 0 and int(run.gpu_ends[i]) > run.start_end()[0][call]:
        return int(run.gpu_end_rows[i])
    return None
