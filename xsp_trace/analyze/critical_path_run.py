"""A run as the critical path's walk reads it (critical_path.py): its CPU spans and GPU work as
columns in time order, the launch, stream, event and blocking edges between rows as arrays, and each
thread's call stack flattened into elementary segments owned by their innermost span."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import duckdb
import numpy as np

from ..formats import kineto_fields as kf
from . import critical_path_chase as chase

GPU_KIND = {"computation": "kernel", "communication": "communication", "memory": None, "other": "kernel"}


class _Thread(NamedTuple):
    """A CPU thread's timeline as elementary segments, each owned by its innermost span (-1: idle).
    Memoryviews of int64 arrays: the walk reads them one item at a time as Python ints, without
    a list's copy of every value (np.asarray gives the arrays back)."""

    starts: memoryview
    ends: memoryview
    owners: memoryview


def _thread(starts, ends, owners) -> _Thread:
    return _Thread(*(np.ascontiguousarray(a, dtype=np.int64).data for a in (starts, ends, owners)))


class _Lists(NamedTuple):
    """Memoryviews of the columns the step-by-step walk reads one item at a time (Python ints and bools)."""

    start: memoryview
    end: memoryview
    blocking: memoryview
    launchers: memoryview
    stream_prev: memoryview
    launch_of: memoryview


@dataclass
class _Run:
    """A run's spans as columns ordered by (start, end descending, depth, span_id) -- a row is a
    position in them -- and the dependencies between rows as arrays indexed by row."""

    run_id: int
    spans: dict[str, np.ndarray]  # columns of the run's spans, indexed by row
    threads: dict[tuple[int, int], np.ndarray]  # (pid, tid) -> rows of CPU spans, in row order
    streams: dict[tuple[int, int], np.ndarray]  # (device, stream) -> rows of GPU work, in row (start) order
    stream_prev: np.ndarray  # row -> the previous GPU row on its stream (-1: first, or not GPU work)
    launch_of: np.ndarray  # row -> the CPU row that launched it (-1: none)
    blocking: np.ndarray  # row -> True for a call that waits for the GPU
    launchers: np.ndarray  # row -> True for a call that launched GPU work
    waits_for: dict[int, int] = field(default_factory=dict)  # GPU row -> GPU row of another stream it waited for (event)
    gpu_ends: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # sorted GPU end times
    gpu_end_rows: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    flat: dict[tuple[int, int], _Thread] = field(default_factory=dict)
    lists: _Lists | None = None  # the columns the walk reads one item at a time
    chase: chase.Chase | None = None  # the hops between nodes, precomputed (prepare_chase)
    cross: tuple | None = None  # the cross-thread edges for the step-by-step walk (critical_path._cross)
    con: duckdb.DuckDBPyConnection | None = None  # where names are read from
    name_column: np.ndarray | None = None  # every row's name, once read (name())

    def names(self, rows: np.ndarray) -> np.ndarray:
        """The names of `rows` (object array), read from the database unless all are read already."""
        if self.name_column is not None:
            return self.name_column[rows]
        assert self.con is not None
        wanted = {"at": np.arange(len(rows), dtype=np.int64), "span_id": self.spans["span_id"][rows]}  # noqa: F841 -- read by the query below (replacement scan)
        found = self.con.execute(
            "SELECT w.at, s.name FROM wanted AS w JOIN spans AS s ON s.span_id = w.span_id WHERE s.run_id = ?", [self.run_id]
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


def _rows_of(span_ids: np.ndarray, order: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """The rows of `wanted` span ids (-1 where a span is not in the run's selection)."""
    if len(span_ids) == 0:
        return np.full(len(wanted), -1, dtype=np.int64)
    at = np.clip(np.searchsorted(span_ids, wanted, sorter=order), 0, len(span_ids) - 1)
    rows = order[at]
    return np.where(span_ids[rows] == wanted, rows, -1)


def _groups(keys_a: np.ndarray, keys_b: np.ndarray, rows: np.ndarray) -> dict[tuple[int, int], np.ndarray]:
    """rows grouped by (keys_a, keys_b), each group in row order."""
    if len(rows) == 0:
        return {}
    order = np.lexsort((rows, keys_b[rows], keys_a[rows]))
    rows = rows[order]
    a, b = keys_a[rows], keys_b[rows]
    cuts = np.flatnonzero((a[1:] != a[:-1]) | (b[1:] != b[:-1])) + 1
    return {(int(a[g[0]]), int(b[g[0]])): rows[g[0] : g[-1] + 1] for g in np.split(np.arange(len(rows)), cuts)}


def load_run(con: duckdb.DuckDBPyConnection, run_id: int) -> _Run:
    """The run's CPU spans and GPU work as columns, and its launch, stream and blocking edges. Kind
    and work class come as codes into their few values (an object array of shared strings, not a
    string per span); names are read when asked for (_Run.names)."""
    kinds = [r[0] for r in con.execute("SELECT DISTINCT kind FROM spans WHERE run_id = ? ORDER BY 1", [run_id]).fetchall()]
    classes = [""] + [r[0] for r in con.execute("SELECT DISTINCT work_class FROM xsp_gpu_work WHERE run_id = ? ORDER BY 1", [run_id]).fetchall()]
    spans = con.execute(
        """
        SELECT s.span_id, list_position($kinds, s.kind) - 1 AS kind, s.start_ns, s.end_ns, coalesce(s.pid, -1) AS pid, coalesce(s.tid, -1) AS tid,
               coalesce(s.device_id, -1) AS device_id, coalesce(s.stream_id, -1) AS stream_id, coalesce(s.depth, 0) AS depth,
               list_position($classes, coalesce(g.work_class, '')) - 1 AS work_class
        FROM spans AS s
        LEFT JOIN xsp_gpu_work AS g ON g.run_id = s.run_id AND g.span_id = s.span_id
        WHERE s.run_id = $run AND s.end_ns >= s.start_ns
          AND (g.span_id IS NOT NULL OR (s.tid IS NOT NULL AND s.stream_id IS NULL AND s.kind NOT IN ('model', 'marker')))
        """,
        {"run": run_id, "kinds": kinds, "classes": classes},
    ).fetchnumpy()
    for name in ("span_id", "start_ns", "end_ns", "pid", "tid", "device_id", "stream_id", "depth", "kind", "work_class"):
        spans[name] = np.asarray(spans[name], dtype=np.int64)
    # Rows in time order: by start, end descending (outer before inner), depth, span_id (sorting here
    # is cheaper than in DuckDB, which would carry the names through its sort).
    order = np.lexsort((spans["span_id"], spans["depth"], -spans["end_ns"], spans["start_ns"]))
    spans = {name: values[order] for name, values in spans.items()}
    spans["kind"] = np.array(kinds, dtype=object)[spans["kind"]]
    spans["work_class"] = np.array(classes, dtype=object)[spans["work_class"]]
    kind, work_class = spans["kind"], spans["work_class"]
    spans["gpu_kind"] = kind.copy()  # memcpy and memset keep their kind; other GPU work is named by its class
    for work, named in GPU_KIND.items():
        if named is not None:
            spans["gpu_kind"][(work_class == work) & (kind != "memcpy") & (kind != "memset")] = named
    n = len(spans["span_id"])
    by_id = np.argsort(spans["span_id"], kind="stable")
    is_gpu = spans["work_class"] != ""
    threads = _groups(spans["pid"], spans["tid"], np.flatnonzero(~is_gpu))
    streams = _groups(spans["device_id"], spans["stream_id"], np.flatnonzero(is_gpu))
    stream_prev = np.full(n, -1, dtype=np.int64)
    for rows in streams.values():
        stream_prev[rows[1:]] = rows[:-1]
    pairs = con.execute("SELECT api_span_id, gpu_span_id FROM launches WHERE run_id = ? AND api_span_id IS NOT NULL", [run_id]).fetchnumpy()
    api = _rows_of(spans["span_id"], by_id, np.asarray(pairs["api_span_id"], dtype=np.int64))
    gpu = _rows_of(spans["span_id"], by_id, np.asarray(pairs["gpu_span_id"], dtype=np.int64))
    known = (api >= 0) & (gpu >= 0)
    launch_of = np.full(n, -1, dtype=np.int64)
    launch_of[gpu[known]] = api[known]
    launchers = np.zeros(n, dtype=bool)
    launchers[launch_of[launch_of >= 0]] = True
    sync = con.execute("SELECT span_id FROM xsp_cpu_calls WHERE run_id = ? AND cpu_class = 'sync'", [run_id]).fetchnumpy()
    sync_rows = _rows_of(spans["span_id"], by_id, np.asarray(sync["span_id"], dtype=np.int64))
    blocking = np.zeros(n, dtype=bool)
    blocking[sync_rows[sync_rows >= 0]] = True
    gpu_rows = np.flatnonzero(is_gpu)
    order = np.argsort(spans["end_ns"][gpu_rows], kind="stable")
    run = _Run(run_id, spans, threads, streams, stream_prev, launch_of, blocking, launchers, con=con)
    run.waits_for = _event_waits(con, run)
    run.gpu_end_rows = gpu_rows[order]
    run.gpu_ends = spans["end_ns"][run.gpu_end_rows]
    return run


def _event_waits(con: duckdb.DuckDBPyConnection, run: _Run) -> dict[int, int]:
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


def _flatten_loop(start_ns: list[int], end_ns: list[int], rows: list[int]) -> _Thread:
    """_flatten for a thread whose spans do not all nest: a call stack replayed span by span, a span
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
    return _thread(starts, ends, owners)


def _flatten_nested(start_ns: np.ndarray, end_ns: np.ndarray, rows: np.ndarray) -> _Thread | None:
    """_flatten in numpy for a thread whose spans nest (None when one does not): every span opens at
    its start and closes at its end; the owner between two boundaries is the innermost open span,
    the last one opened at the depth the thread is at. An empty span owns nothing but still splits
    its enclosing span's time there, as the call stack does."""
    n = len(rows)
    if n == 0:
        return _thread([], [], [])
    index = np.arange(n)
    empty = end_ns == start_ns
    # Boundaries in call-stack order: by time, closes before opens (empty spans between), inner
    # closes first, outer opens first.
    times = np.concatenate((end_ns[~empty], start_ns))
    kind = np.concatenate((np.zeros(int(np.count_nonzero(~empty)), dtype=np.int64), np.where(empty, 1, 2)))
    rank = np.concatenate((-index[~empty], index))
    span = np.concatenate((index[~empty], index))
    order = np.lexsort((rank, kind, times))
    times, kind, span = times[order], kind[order], span[order]
    depth = np.cumsum(kind - 1)
    # The innermost open span after each boundary: the last open at that depth, found among the
    # opens sorted by (depth, position).
    positions = np.arange(len(times))
    opens = np.flatnonzero(kind == 2)
    stride = len(times) + 1
    open_key = depth[opens] * stride + opens
    by_key = np.argsort(open_key, kind="stable")
    found = np.searchsorted(open_key[by_key], depth * stride + positions, side="right") - 1
    innermost = np.where(depth > 0, span[opens[by_key[np.maximum(found, 0)]]], -1)
    # The stack is right as long as every span closes no later than the span it opened inside.
    parent = np.where(opens > 0, innermost[np.maximum(opens - 1, 0)], -1)
    child = span[opens]
    inside = parent >= 0
    if np.any(end_ns[child[inside]] > end_ns[parent[inside]]):
        return None
    segment = np.flatnonzero(times[1:] > times[:-1])
    owner = innermost[segment]
    owners = np.where(owner >= 0, rows[np.maximum(owner, 0)], -1)
    return _thread(times[segment], times[segment + 1], owners)


def _flatten(run: _Run, key: tuple[int, int]) -> _Thread:
    """The thread's elementary segments: the innermost span running in each, gaps as -1."""
    if key not in run.flat:
        rows = run.threads.get(key, np.zeros(0, dtype=np.int64))
        start_ns, end_ns = run.spans["start_ns"][rows], run.spans["end_ns"][rows]
        nested = _flatten_nested(start_ns, end_ns, rows)
        run.flat[key] = nested if nested is not None else _flatten_loop(start_ns.tolist(), end_ns.tolist(), rows.tolist())
    return run.flat[key]


def _waited_for(run: _Run, call: int, before: int) -> int | None:
    """The GPU work that finished last inside the blocking call, before `before`."""
    i = int(np.searchsorted(run.gpu_ends, before, side="right")) - 1
    if i >= 0 and int(run.gpu_ends[i]) > run.start_end()[0][call]:
        return int(run.gpu_end_rows[i])
    return None
