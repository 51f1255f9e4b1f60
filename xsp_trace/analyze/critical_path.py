"""The critical path of each step: the chain of CPU work, launches, queue delays, GPU work and
synchronisation waits that set the step's latency, found by walking back from the step's end.

The walk is HTA's lightweight critical path (CPU ops serial per thread and nested, launch edges
CPU -> GPU, GPU work serial per stream, synchronisation edges GPU -> CPU) taken as *last-arriving
dependencies*: starting at the end of the step on its thread, at every point it steps back to
whatever the work there had to wait for last --
- on a CPU thread, the innermost span running just before that point (a gap between spans is CPU
  idle); inside a call that blocks on the GPU (the prelude's CPU-time taxonomy, xsp_cpu_calls'
  'sync' class: an explicit sync, a synchronous copy or set, an async copy to or from pageable
  memory), the GPU work that finished last before the call returned;
- on a GPU stream, the work item itself, then the later of its two dependencies: the previous work
  on the stream (GPU-bound: the gap between them is GPU idle) or the call that launched it
  (CPU-bound: the time from the call to the start is queue delay).
Every step back is contiguous in time, so the segments tile the step: the path's length is the
step's latency. HTA assumes, and so does this walk, that a thread's CPU spans run serially, that a
stream runs its work in order, and that nothing else orders work across streams (event waits
between streams are not followed).

Computed in Python over numpy arrays of time-ordered spans (no graph library), once per session,
into the TEMP table `xsp_critical_path` that analyses/critical_path.sql and
analyses/critical_path_summary.sql read.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

import duckdb
import numpy as np
import pyarrow as pa

from ..formats import kineto_fields as kf

# Segment kinds, in the words the analyses print.
CPU_OP = "cpu_op"
LAUNCH = "launch"
QUEUE_DELAY = "queue_delay"
SYNC_WAIT = "sync_wait"
CPU_IDLE = "cpu_idle"
GPU_IDLE = "gpu_idle"
GPU_KIND = {"computation": "kernel", "communication": "communication", "memory": None, "other": "kernel"}

TABLE = "xsp_critical_path"
_MAX_HOPS_PER_SPAN = 8  # a guard: every hop moves back in time or to an earlier item


@dataclass
class _Thread:
    """A CPU thread's timeline as elementary segments, each owned by its innermost span (-1: idle)."""

    starts: list[int]
    ends: list[int]
    owners: list[int]


@dataclass
class _Run:
    run_id: int
    spans: dict[str, np.ndarray]  # columns of the run's spans, indexed by row
    row_of: dict[int, int]  # span_id -> row
    threads: dict[tuple[int, int], list[int]]  # (pid, tid) -> rows of CPU spans
    streams: dict[tuple[int, int], list[int]]  # (device, stream) -> rows of GPU work in start order
    stream_pos: dict[int, tuple[tuple[int, int], int]]  # GPU row -> (stream key, position)
    launch_of: dict[int, int]  # GPU row -> launching CPU row
    blocking: set[int]  # CPU rows of calls that wait for the GPU
    launchers: set[int] = field(default_factory=set)  # CPU rows of calls that launched GPU work
    waits_for: dict[int, int] = field(default_factory=dict)  # GPU row -> GPU row of another stream it waited for (event)
    gpu_ends: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # sorted GPU end times
    gpu_end_rows: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    flat: dict[tuple[int, int], _Thread] = field(default_factory=dict)


def load_run(con: duckdb.DuckDBPyConnection, run_id: int) -> _Run:
    arrays = con.execute(
        """
        SELECT s.span_id, s.kind, s.name, s.start_ns, s.end_ns, coalesce(s.pid, -1) AS pid, coalesce(s.tid, -1) AS tid,
               coalesce(s.device_id, -1) AS device_id, coalesce(s.stream_id, -1) AS stream_id, coalesce(s.depth, 0) AS depth,
               coalesce(g.work_class, '') AS work_class
        FROM spans AS s
        LEFT JOIN xsp_gpu_work AS g ON g.run_id = s.run_id AND g.span_id = s.span_id
        WHERE s.run_id = ? AND s.end_ns >= s.start_ns
          AND (g.span_id IS NOT NULL OR (s.tid IS NOT NULL AND s.stream_id IS NULL AND s.kind NOT IN ('model', 'marker')))
        ORDER BY s.start_ns, s.end_ns DESC, s.depth
        """,
        [run_id],
    ).fetchnumpy()
    spans = {name: np.asarray(values) for name, values in arrays.items()}
    row_of = {int(span_id): row for row, span_id in enumerate(spans["span_id"])}
    threads: dict[tuple[int, int], list[int]] = {}
    streams: dict[tuple[int, int], list[int]] = {}
    is_gpu = spans["work_class"] != ""
    for row in range(len(row_of)):
        if is_gpu[row]:
            streams.setdefault((int(spans["device_id"][row]), int(spans["stream_id"][row])), []).append(row)
        else:
            threads.setdefault((int(spans["pid"][row]), int(spans["tid"][row])), []).append(row)
    stream_pos = {row: (key, i) for key, rows in streams.items() for i, row in enumerate(rows)}
    launch_of = {}
    for api_id, gpu_id in con.execute("SELECT api_span_id, gpu_span_id FROM launches WHERE run_id = ?", [run_id]).fetchall():
        if gpu_id in row_of and api_id in row_of:
            launch_of[row_of[gpu_id]] = row_of[api_id]
    blocking = {
        row_of[span_id]
        for (span_id,) in con.execute("SELECT span_id FROM xsp_cpu_calls WHERE run_id = ? AND cpu_class = 'sync'", [run_id]).fetchall()
        if span_id in row_of
    }
    gpu_rows = np.flatnonzero(is_gpu)
    order = np.argsort(spans["end_ns"][gpu_rows], kind="stable")
    run = _Run(run_id, spans, row_of, threads, streams, stream_pos, launch_of, blocking, set(launch_of.values()))
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

    def launched(row: int) -> int:
        return int(start[run.launch_of[row]]) if row in run.launch_of else int(start[row])

    waits = {}
    for device, stream, on_stream, waited_at, recorded_at in rows:
        recording = [r for r in run.streams.get((int(device), int(on_stream)), []) if launched(r) <= recorded_at]
        waiting = [r for r in run.streams.get((int(device), int(stream)), []) if launched(r) >= waited_at]
        if recording and waiting:
            waits[waiting[0]] = recording[-1]
    return waits


def _flatten(run: _Run, key: tuple[int, int]) -> _Thread:
    """The thread's elementary segments: the innermost span running in each, gaps as -1."""
    if key in run.flat:
        return run.flat[key]
    starts: list[int] = []
    ends: list[int] = []
    owners: list[int] = []
    start_ns, end_ns = run.spans["start_ns"], run.spans["end_ns"]
    stack: list[int] = []  # open spans, outermost first
    cursor = None

    def emit(until: int) -> None:
        nonlocal cursor
        if cursor is not None and until > cursor:
            starts.append(cursor)
            ends.append(until)
            owners.append(stack[-1] if stack else -1)
        cursor = until if cursor is None or until > cursor else cursor

    for row in run.threads.get(key, []):  # in start order, outer before inner
        begin = int(start_ns[row])
        while stack and int(end_ns[stack[-1]]) <= begin:
            emit(int(end_ns[stack[-1]]))
            stack.pop()
        emit(begin)
        if stack and int(end_ns[row]) > int(end_ns[stack[-1]]):
            continue  # overlaps its enclosing span without nesting: not a call stack, left out
        stack.append(row)
    while stack:
        emit(int(end_ns[stack[-1]]))
        stack.pop()
    run.flat[key] = _Thread(starts, ends, owners)
    return run.flat[key]


@dataclass
class Segment:
    start_ns: int
    end_ns: int
    kind: str
    row: int  # the span the time is charged to (-1: none)
    run_id: int = 0  # the run (rank) the segment lies on


def _gpu_kind(run: _Run, row: int) -> str:
    kind = str(run.spans["kind"][row])
    return kind if kind in ("memcpy", "memset") else (GPU_KIND.get(str(run.spans["work_class"][row])) or kind)


def _waited_for(run: _Run, call: int, before: int) -> int | None:
    """The GPU work that finished last inside the blocking call, before `before`."""
    i = int(np.searchsorted(run.gpu_ends, before, side="right")) - 1
    if i >= 0 and int(run.gpu_ends[i]) > int(run.spans["start_ns"][call]):
        return int(run.gpu_end_rows[i])
    return None


def walk(run: _Run, start_ns: int, end_ns: int, thread: tuple[int, int], ranks: Ranks | None = None) -> list[Segment]:
    """The critical path of [start_ns, end_ns] ending on `thread`, as contiguous segments, latest first.
    With `ranks`, a collective that waited for a later rank continues the path on that rank."""
    spans = run.spans
    segments: list[Segment] = []
    t = end_ns
    lane: tuple[str, object] = ("cpu", thread)
    hops = 0
    limit = _MAX_HOPS_PER_SPAN * (len(run.row_of) + 1) * (len(ranks.runs) if ranks else 1)

    def add(low: int, high: int, kind: str, row: int) -> None:
        segments.append(Segment(low, high, kind, row, run.run_id))

    while t > start_ns and hops < limit:
        hops += 1
        if lane[0] == "cpu":
            key = lane[1]
            assert isinstance(key, tuple)
            flat = _flatten(run, key)
            i = bisect.bisect_left(flat.ends, t)  # first segment ending at or after t
            if i >= len(flat.ends) or flat.starts[i] >= t:  # t lies in a gap before segment i (or after all)
                gap_start = flat.ends[i - 1] if i > 0 else start_ns
                low = max(gap_start, start_ns)
                add(low, t, CPU_IDLE, -1)
                t = low
                continue
            owner, low = flat.owners[i], max(flat.starts[i], start_ns)
            if owner < 0:
                add(low, t, CPU_IDLE, -1)
                t = low
                continue
            if owner in run.blocking:
                waited = _waited_for(run, owner, t)
                if waited is not None and int(spans["end_ns"][waited]) > low:
                    gpu_end = max(int(spans["end_ns"][waited]), start_ns)
                    add(gpu_end, t, SYNC_WAIT, owner)
                    t = gpu_end
                    lane = ("gpu", waited)
                    continue
            add(low, t, LAUNCH if owner in run.launchers else CPU_OP, owner)
            t = low
            continue
        row = lane[1]
        assert isinstance(row, int)
        if lane[0] == "gpu":
            late = ranks.later_arrival(run, row) if ranks is not None and spans["work_class"][row] == "communication" else None
            if late is not None:  # the collective ran once the last rank arrived: its time, then that rank
                other, other_row, other_start, other_thread = late
                low = max(int(spans["end_ns"][row]) - (int(other.spans["end_ns"][other_row]) - int(other.spans["start_ns"][other_row])), start_ns)
                if low < t:
                    add(low, t, _gpu_kind(run, row), row)
                run, spans, start_ns, thread = other, other.spans, other_start, other_thread
                t, lane = int(spans["start_ns"][other_row]), ("arrived", other_row)
                continue
            begin = max(int(spans["start_ns"][row]), start_ns)
            if begin < t:
                add(begin, t, _gpu_kind(run, row), row)
            t = begin
        if t <= start_ns:
            break
        stream, position = run.stream_pos[row]
        previous = run.streams[stream][position - 1] if position > 0 else None
        previous_end = min(int(spans["end_ns"][previous]), t) if previous is not None else None
        launcher: int | None = run.launch_of.get(row)
        launched_at = None
        if launcher is not None:
            call_end = int(spans["end_ns"][launcher])
            launched_at = min(call_end if call_end <= t else int(spans["start_ns"][launcher]), t)
        waited = run.waits_for.get(row)
        waited_end = min(int(spans["end_ns"][waited]), t) if waited is not None else None
        binding = _binding(previous_end, waited_end, launched_at)
        if binding == "stream" and previous_end is not None:
            low = max(previous_end, start_ns)
            if low < t:
                add(low, t, GPU_IDLE, -1)
            t, lane = low, ("gpu", previous)
        elif binding == "event" and waited is not None and waited_end is not None:  # waited for another stream's work
            low = max(waited_end, start_ns)
            if low < t:
                add(low, t, GPU_IDLE, -1)
            t, lane = low, ("gpu", waited)
        elif binding == "launch" and launched_at is not None and launcher is not None:
            low = max(launched_at, start_ns)
            if low < t:
                add(low, t, QUEUE_DELAY, launcher)
            t, lane = low, ("cpu", (int(spans["pid"][launcher]), int(spans["tid"][launcher])))
        else:  # launched before the trace began and first on its stream: back to the step's thread
            lane = ("cpu", thread)
    return segments


def _binding(previous_end: int | None, waited_end: int | None, launched_at: int | None) -> str | None:
    """Which dependency of a GPU item was satisfied last: 'stream' (the previous item on its stream),
    'event' (another stream's item it waited for) or 'launch' (its launch call); ties in that order."""
    options = [
        (v, -i, name) for i, (v, name) in enumerate(((previous_end, "stream"), (waited_end, "event"), (launched_at, "launch"))) if v is not None
    ]
    return max(options)[2] if options else None


class Ranks:
    """The collectives of the runs (ranks) of one database matched across ranks -- the k-th
    communication kernel of a name on one rank is the k-th of that name on every other -- and each
    rank's steps, for walking a path from a rank into the rank it waited for.

    A collective ends at the same moment on every rank, once the last one has arrived; the ranks'
    clocks need not agree, so the last to arrive is the one whose kernel is shortest (it waited for
    nobody): the others' kernels waited for it for the difference. Iterations match by number."""

    def __init__(self, runs: dict[int, _Run], unit_rows: list[tuple]):
        self.runs = runs
        self.matches: dict[tuple[str, int], list[tuple[int, int]]] = {}
        self.key_of: dict[tuple[int, int], tuple[str, int]] = {}
        for run in runs.values():
            seen: dict[str, int] = {}
            comm = np.flatnonzero(run.spans["work_class"] == "communication")
            for row in comm[np.argsort(run.spans["start_ns"][comm], kind="stable")]:
                name = str(run.spans["name"][row])
                key = (name, seen.get(name, 0))
                seen[name] = key[1] + 1
                self.matches.setdefault(key, []).append((run.run_id, int(row)))
                self.key_of[(run.run_id, int(row))] = key
        self.steps: dict[int, list[tuple[int, int, tuple[int, int]]]] = {}
        for run_id, _, _, start, end, pid, tid in unit_rows:
            self.steps.setdefault(run_id, []).append((int(start), int(end), (int(pid), int(tid))))

    def later_arrival(self, run: _Run, row: int) -> tuple[_Run, int, int, tuple[int, int]] | None:
        """(rank, its kernel, the start of its step, its step's thread) of the last rank to arrive at
        this collective, when that is another rank than `run`'s; else None."""
        key = self.key_of.get((run.run_id, row))
        if key is None:
            return None

        def length(run_id: int, r: int) -> int:
            spans = self.runs[run_id].spans
            return int(spans["end_ns"][r]) - int(spans["start_ns"][r])

        run_id, other_row = min(self.matches[key], key=lambda m: (length(*m), m[0] != run.run_id, m[0]))
        if run_id == run.run_id or length(run_id, other_row) >= length(run.run_id, row):
            return None
        other = self.runs[run_id]
        at = int(other.spans["start_ns"][other_row])
        for start, end, thread in self.steps.get(run_id, []):
            if start <= at <= end:
                return other, other_row, start, thread
        return None


_COLUMNS = (
    "run_id INTEGER, iteration INTEGER, step_span_id BIGINT, seq INTEGER, on_run_id INTEGER, span_id BIGINT, name VARCHAR, kind VARCHAR, "
    "start_ns BIGINT, end_ns BIGINT, on_path_ns BIGINT"
)


def units(con: duckdb.DuckDBPyConnection) -> list[tuple]:
    """(run_id, iteration, step_span_id, start_ns, end_ns, pid, tid) of every step; a run without
    steps is one unit from its first to its last CPU span, ending on the thread of that last span."""
    return con.execute(
        """
        SELECT run_id, iteration, step_span_id, start_ns, end_ns, coalesce(pid, -1), coalesce(tid, -1) FROM steps
        UNION ALL
        SELECT run_id, NULL, NULL, min(start_ns), max(end_ns), arg_max(coalesce(pid, -1), end_ns), arg_max(tid, end_ns)
        FROM spans
        WHERE tid IS NOT NULL AND stream_id IS NULL AND run_id NOT IN (SELECT run_id FROM steps)
        GROUP BY run_id
        ORDER BY 1, 4
        """
    ).fetchall()


def build_critical_path(con: duckdb.DuckDBPyConnection) -> None:
    """Fill the TEMP table xsp_critical_path (once per session) with the path of every step."""
    exists = con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = ? AND temporary", [TABLE]).fetchone()
    if exists and exists[0]:
        return
    con.execute(f"CREATE TEMP TABLE {TABLE} ({_COLUMNS})")
    unit_rows = units(con)
    runs = {run_id: load_run(con, run_id) for run_id in sorted({u[0] for u in unit_rows})}
    ranks = Ranks(runs, unit_rows) if len(runs) > 1 else None
    columns: dict[str, list] = {name.split()[0]: [] for name in _COLUMNS.split(", ")}
    for run_id, iteration, step_span_id, start_ns, end_ns, pid, tid in unit_rows:
        segments = merged(walk(runs[run_id], int(start_ns), int(end_ns), (int(pid), int(tid)), ranks)[::-1])
        for seq, s in enumerate(segments):
            spans = runs[s.run_id].spans
            row = (
                run_id,
                iteration,
                step_span_id,
                seq,
                s.run_id,
                int(spans["span_id"][s.row]) if s.row >= 0 else None,
                str(spans["name"][s.row]) if s.row >= 0 else None,
                s.kind,
                s.start_ns,
                s.end_ns,
                s.end_ns - s.start_ns,
            )
            for values, value in zip(columns.values(), row, strict=True):
                values.append(value)
    segments_table = pa.table(columns)  # noqa: F841 -- read by the INSERT below through DuckDB's replacement scan
    con.execute(f"INSERT INTO {TABLE} SELECT * FROM segments_table")


def merged(segments: list[Segment]) -> list[Segment]:
    """Adjacent segments of the same span and kind as one (a parent op split by its children's time is not)."""
    out: list[Segment] = []
    for s in segments:
        if out and out[-1].row == s.row and out[-1].kind == s.kind and out[-1].run_id == s.run_id and out[-1].end_ns == s.start_ns:
            out[-1] = Segment(out[-1].start_ns, s.end_ns, s.kind, s.row, s.run_id)
        else:
            out.append(s)
    return out
