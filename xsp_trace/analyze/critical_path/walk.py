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
- on a GPU stream, the work item itself, then the latest of its dependencies: the previous work
  on the stream (GPU-bound: the gap between them is GPU idle), the work of another stream it
  waited for through an event the trace records (the gap is a stream wait, charged to that work,
  the waiting item beside it: "stream S waited for stream T"), or the call that launched it
  (CPU-bound: the time from the call to the start is queue delay, charged to the call as recorded:
  cudaLaunchKernel, cudaGraphLaunch, ...);
- across threads of a process (threads.py): at the end of a wait -- an annotation's
  or Python function's own time while another thread worked -- the other thread's last op, and
  from that thread's first op after an idle stretch back to where the wait began (thread_wait:
  PyTorch's backward runs on the autograd engine's thread while the caller waits).
Every step back is contiguous in time, so the segments tile the step: the path's length is the
step's latency. HTA assumes, and so does this walk, that a thread's CPU spans run serially, that a
stream runs its work in order, and that nothing else orders work across streams than the event
waits the trace records; and this walk assumes that a thread resuming just after another thread of
its process finished (TOLERANCE_NS) waited for it.

Computed over numpy arrays of time-ordered spans (no graph library; the run as columns:
run.py), once per session, into the
TEMP table `xsp_critical_path` that analyses/critical_path.sql and analyses/critical_path_summary.sql
read: the hops between nodes are precomputed in numpy and chased (chase.py); this
module's step-by-step walk takes the hops the chase leaves to it (the window's ends, across ranks)
and every walk of a run without precomputed hops (what_if.py's replayed runs).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

import duckdb
import numpy as np

from ...store.sql import registered
from . import chase, threads
from .chase import CPU_IDLE, CPU_OP, GPU_IDLE, LAUNCH, QUEUE_DELAY, STREAM_WAIT, SYNC_WAIT, THREAD_WAIT
from .run import Run, flatten, load_run, thread_segments, waited_for

TABLE = "xsp_critical_path"
_MAX_HOPS_PER_SPAN = 8  # a guard: every hop moves back in time or to an earlier item


@dataclass(slots=True)
class Segment:
    start_ns: int
    end_ns: int
    kind: str
    row: int  # the span the time is charged to (-1: none); of a stream wait, the other stream's item it waited for
    run_id: int = 0  # the run (rank) the segment lies on
    waiter: int = -1  # of a stream wait, the GPU item that waited (-1: any other segment)


def _gpu_kind(run: Run, row: int) -> str:
    return str(run.spans["gpu_kind"][row])


class _Walker:
    """One walk, step by step: where it stands (a lane and a time, on a run) and what it recorded,
    latest first -- stepped segments, and stretches of chased hops as columns."""

    def __init__(self, run: Run, start_ns: int, end_ns: int, thread: tuple[int, int], ranks: Ranks | None):
        self.run, self.start_ns, self.thread, self.ranks = run, start_ns, thread, ranks
        self.t = end_ns
        self.lane: tuple[str, object] = ("cpu", thread)
        self.segments: list[Segment] = []
        self.parts: list[dict[str, np.ndarray]] = []

    def chase(self, budget: int) -> int:
        """Follow the precomputed hops from where the walk stands, if that is a node; the hops taken."""
        ch = self.run.chase
        if ch is None:
            return 0
        kind, where = self.lane
        node = (
            where if kind == "gpu" and isinstance(where, int) else ch.cpu_node(where, self.t) if kind == "cpu" and isinstance(where, tuple) else None
        )
        if node is None:
            return 0
        passed, node = ch.follow(node, self.start_ns, budget)
        if passed:
            self.flush()
            part = chase.segments(ch, passed, self.t)
            part["run_id"] = np.full(len(part["start"]), self.run.run_id, dtype=np.int64)
            self.parts.append(part)
            self.t = int(ch.exit_t[passed[-1]])
            self.lane = ("gpu", node) if node < ch.n else ("cpu", ch.keys[int(np.searchsorted(ch.last, node - ch.n, side="right"))])
        return len(passed)

    def flush(self) -> None:
        """The stepped segments so far as a part of columns."""
        if self.segments:
            s = self.segments
            self.parts.append(
                {
                    "start": np.array([x.start_ns for x in s], dtype=np.int64),
                    "end": np.array([x.end_ns for x in s], dtype=np.int64),
                    "kind": np.array([x.kind for x in s], dtype=object),
                    "row": np.array([x.row for x in s], dtype=np.int64),
                    "run_id": np.array([x.run_id for x in s], dtype=np.int64),
                    "waiter": np.array([x.waiter for x in s], dtype=np.int64),
                }
            )
            self.segments = []

    def columns(self) -> dict[str, np.ndarray]:
        self.flush()
        names = (("start", np.int64), ("end", np.int64), ("kind", object), ("row", np.int64), ("run_id", np.int64), ("waiter", np.int64))
        return {name: np.concatenate([p[name] for p in self.parts]) if self.parts else np.zeros(0, dtype=dtype) for name, dtype in names}

    def step(self) -> None:
        """One step back from where the walk stands."""
        run, t, start_ns = self.run, self.t, self.start_ns
        lists = run.walk_lists()
        start, end = lists.start, lists.end
        kind, where = self.lane
        if kind == "cpu":
            assert isinstance(where, tuple)
            flat = flatten(run, where)
            i = bisect.bisect_left(flat.ends, t)  # first segment ending at or after t
            if self._cross_thread(where, flat, i):
                return
            if i >= len(flat.ends) or flat.starts[i] >= t:  # t lies in a gap before segment i (or after all)
                low = max(flat.ends[i - 1] if i > 0 else start_ns, start_ns)
                self.segments.append(Segment(low, t, CPU_IDLE, -1, run.run_id))
                self.t = low
                return
            owner, low = flat.owners[i], max(flat.starts[i], start_ns)
            if owner >= 0 and lists.blocking[owner]:
                waited = waited_for(run, owner, t)
                if waited is not None and end[waited] > low:
                    gpu_end = max(end[waited], start_ns)
                    self.segments.append(Segment(gpu_end, t, SYNC_WAIT, owner, run.run_id))
                    self.t, self.lane = gpu_end, ("gpu", waited)
                    return
            kind = CPU_IDLE if owner < 0 else LAUNCH if lists.launchers[owner] else CPU_OP
            self.segments.append(Segment(low, t, kind, owner, run.run_id))
            self.t = low
            return
        row = where
        assert isinstance(row, int)
        if kind == "gpu":
            late = self.ranks.later_arrival(run, row) if self.ranks is not None and run.spans["work_class"][row] == "communication" else None
            if late is not None:  # the collective ran once the last rank arrived: its time, then that rank
                other, other_row, other_start, other_thread = late
                low = max(end[row] - (int(other.spans["end_ns"][other_row]) - int(other.spans["start_ns"][other_row])), start_ns)
                if low < t:
                    self.segments.append(Segment(low, t, _gpu_kind(run, row), row, run.run_id))
                self.run, self.start_ns, self.thread = other, other_start, other_thread
                self.t, self.lane = other.walk_lists().start[other_row], ("arrived", other_row)
                return
            begin = max(start[row], start_ns)
            if begin < t:
                self.segments.append(Segment(begin, t, _gpu_kind(run, row), row, run.run_id))
            t = self.t = begin
        if t <= start_ns:
            return
        self._dependency(row)

    def _cross_thread(self, key: tuple[int, int], flat, i: int) -> bool:
        """At the end of a segment with a cross-thread edge (threads.py), the hand-off
        back to the other thread; whether there was one."""
        t, run = self.t, self.run
        n = len(flat.ends)
        keys, first, cross, ends = thread_crossings(run)
        try:
            at = int(first[keys.index(key)]) + i
        except ValueError:  # a thread with no CPU span the walk reads (only model ranges): no edges
            return False
        if i < n and flat.ends[i] == t and flat.starts[i] < t:
            if flat.owners[i] >= 0 and cross.fwd[at] >= 0:  # a wait: to the work that ended last
                target, row = int(cross.fwd[at]), int(cross.wait_row[at])
                to_t = int(ends[target])
                to_key = keys[int(np.searchsorted(first, target, side="right")) - 1]
            elif flat.owners[i] < 0 and i + 1 < n and cross.back_t[at + 1] >= 0:  # idle before work: to the wait that started it
                to_t, row, to_key = int(cross.back_t[at + 1]), int(cross.back_row[at + 1]), keys[int(cross.back_thread[at + 1])]
            else:
                return False
        elif i < n and flat.starts[i] == t and (i == 0 or flat.ends[i - 1] < t) and cross.back_t[at] >= 0:  # work after a gap
            to_t, row, to_key = int(cross.back_t[at]), int(cross.back_row[at]), keys[int(cross.back_thread[at])]
        else:
            return False
        low = max(to_t, self.start_ns)
        if low < t:
            self.segments.append(Segment(low, t, THREAD_WAIT, row, run.run_id))
        self.t, self.lane = low, ("cpu", to_key)
        return True

    def _dependency(self, row: int) -> None:
        """From the start of GPU item `row`, back to the dependency that bound it."""
        run, t, start_ns = self.run, self.t, self.start_ns
        lists = run.walk_lists()
        start, end = lists.start, lists.end
        previous: int | None = lists.stream_prev[row]
        if previous is not None and previous < 0:
            previous = None
        previous_end = min(end[previous], t) if previous is not None else None
        launcher: int | None = lists.launch_of[row]
        if launcher is not None and launcher < 0:
            launcher = None
        launched_at = None
        if launcher is not None:
            call_end = end[launcher]
            launched_at = min(call_end if call_end <= t else start[launcher], t)
        waited = run.waits_for.get(row)
        waited_end = min(end[waited], t) if waited is not None else None
        binding = last_dependency(previous_end, waited_end, launched_at)
        if binding == "stream" and previous_end is not None:
            low = max(previous_end, start_ns)
            if low < t:
                self.segments.append(Segment(low, t, GPU_IDLE, -1, run.run_id))
            self.t, self.lane = low, ("gpu", previous)
        elif binding == "event" and waited is not None and waited_end is not None:  # waited for another stream's work
            low = max(waited_end, start_ns)
            if low < t:
                self.segments.append(Segment(low, t, STREAM_WAIT, waited, run.run_id, row))
            self.t, self.lane = low, ("gpu", waited)
        elif binding == "launch" and launched_at is not None and launcher is not None:
            low = max(launched_at, start_ns)
            if low < t:
                self.segments.append(Segment(low, t, QUEUE_DELAY, launcher, run.run_id))
            self.t, self.lane = low, ("cpu", (int(run.spans["pid"][launcher]), int(run.spans["tid"][launcher])))
        else:  # launched before the trace began and first on its stream: back to the step's thread
            self.lane = ("cpu", self.thread)


def walk_columns(
    run: Run, start_ns: int, end_ns: int, thread: tuple[int, int], ranks: Ranks | None = None, gpu_row: int | None = None
) -> dict[str, np.ndarray]:
    """The critical path of [start_ns, end_ns] ending on `thread` (or, with `gpu_row`, at the end of
    that GPU item), as contiguous segments, latest first, in columns start, end, kind, row (the span
    the time is charged to, -1: none), run_id, waiter (of a stream wait, the item that waited). With `ranks`, a collective that waited for a later
    rank continues the path on that rank. Where the run has precomputed hops (prepare_chase) the
    walk chases them."""
    w = _Walker(run, start_ns, end_ns, thread, ranks)
    if gpu_row is not None:
        w.lane = ("gpu", gpu_row)
    hops = 0
    limit = _MAX_HOPS_PER_SPAN * (len(run.spans["span_id"]) + 1) * (len(ranks.runs) if ranks else 1)
    while w.t > w.start_ns and hops < limit:
        hops += 1 + w.chase(limit - hops)
        if w.t > w.start_ns:
            w.step()
    return w.columns()


def walk(run: Run, start_ns: int, end_ns: int, thread: tuple[int, int], ranks: Ranks | None = None, gpu_row: int | None = None) -> list[Segment]:
    """walk_columns as segments, latest first."""
    c = walk_columns(run, start_ns, end_ns, thread, ranks, gpu_row)
    return [
        Segment(*values)
        for values in zip(
            c["start"].tolist(), c["end"].tolist(), c["kind"].tolist(), c["row"].tolist(), c["run_id"].tolist(), c["waiter"].tolist(), strict=True
        )
    ]


def prepare_chase(run: Run, ranks: Ranks | None = None) -> None:
    """Precompute the run's hops (chase.py); with `ranks`, its collectives are left to the step-by-step walk."""
    keys = sorted(run.threads)
    thread_of = np.full(len(run.spans["span_id"]), -1, dtype=np.int64)
    for k, key in enumerate(keys):
        thread_of[run.threads[key]] = k
    flats = [flatten(run, key) for key in keys]
    gpu_rows = np.flatnonzero(thread_of < 0)
    names = run.spans["gpu_kind"][gpu_rows]
    gpu_kinds = sorted(names.present())
    kind_code = np.zeros(len(thread_of), dtype=np.int8)
    for code, name in enumerate(gpu_kinds, start=len(chase.FIXED_KINDS)):
        kind_code[gpu_rows[names == name]] = code
    event_of = np.full(len(thread_of), -1, dtype=np.int64)
    for waiting, waited in run.waits_for.items():
        event_of[waiting] = waited
    stop = np.zeros(len(thread_of), dtype=bool)
    if ranks is not None:
        stop = run.spans["work_class"] == "communication"
    cols = chase.Columns(
        run.spans["start_ns"], run.spans["end_ns"], kind_code, run.stream_prev, run.launch_of,
        event_of, run.blocking, run.launchers, run.gpu_ends, run.gpu_end_rows, thread_of, stop,
        threads.roles(run.spans["kind"], run.blocking, run.launchers),
    )  # fmt: skip
    run.chase = ch = chase.prepare(cols, keys, [(np.asarray(f.starts), np.asarray(f.ends), np.asarray(f.owners)) for f in flats], gpu_kinds)
    for k, key in enumerate(keys):  # the threads' segments as views of the chase's, not a second copy
        lo, hi = int(ch.first[k]), int(ch.last[k])
        run.flat[key] = thread_segments(ch.seg_start[lo:hi], ch.seg_end[lo:hi], ch.seg_owner[lo:hi])


def thread_crossings(run: Run) -> tuple[list[tuple[int, int]], np.ndarray, threads.CrossEdges, np.ndarray]:
    """The run's threads (sorted), where each one's segments begin in their concatenation, the
    cross-thread edges between them and the segments' ends: the chase's where the run has one."""
    if run.chase is not None:
        return run.chase.keys, run.chase.first, run.chase.cross, run.chase.seg_end
    if run.cross is None:
        keys = sorted(run.threads)
        flats = [flatten(run, key) for key in keys]
        sizes = np.array([len(f.ends) for f in flats], dtype=np.int64)
        last = np.cumsum(sizes)
        parts = [np.concatenate([np.asarray(f[p], dtype=np.int64) for f in flats]) if flats else np.zeros(0, dtype=np.int64) for p in range(3)]
        waits = threads.roles(run.spans["kind"], run.blocking, run.launchers)
        run.cross = (keys, last - sizes, threads.cross_edges(keys, last - sizes, last, parts[0], parts[1], parts[2], waits), parts[1])
    return run.cross


def last_dependency(previous_end: int | None, waited_end: int | None, launched_at: int | None) -> str | None:
    """Which dependency of a GPU item was satisfied last: 'stream' (the previous item on its stream),
    'event' (another stream's item it waited for) or 'launch' (its launch call); ties in that order."""
    best, binding = None, None
    for at, name in ((previous_end, "stream"), (waited_end, "event"), (launched_at, "launch")):
        if at is not None and (best is None or at > best):
            best, binding = at, name
    return binding


class Ranks:
    """The collectives of the runs (ranks) of one database matched across ranks -- the k-th
    communication kernel of a name on one rank is the k-th of that name on every other -- and each
    rank's steps, for walking a path from a rank into the rank it waited for.

    A collective ends at the same moment on every rank, once the last one has arrived; the ranks'
    clocks need not agree, so the last to arrive is the one whose kernel is shortest (it waited for
    nobody): the others' kernels waited for it for the difference. Iterations match by number."""

    def __init__(self, runs: dict[int, Run], unit_rows: list[tuple]):
        self.runs = runs
        self.matches: dict[tuple[str, int], list[tuple[int, int]]] = {}
        self.key_of: dict[tuple[int, int], tuple[str, int]] = {}
        for run in runs.values():
            seen: dict[str, int] = {}
            comm = np.flatnonzero(run.spans["work_class"] == "communication")
            ordered = comm[np.argsort(run.spans["start_ns"][comm], kind="stable")]
            for row, name in zip(ordered.tolist(), run.names(ordered).tolist(), strict=True):
                name = str(name)
                key = (name, seen.get(name, 0))
                seen[name] = key[1] + 1
                self.matches.setdefault(key, []).append((run.run_id, int(row)))
                self.key_of[(run.run_id, int(row))] = key
        self.steps: dict[int, list[tuple[int, int, tuple[int, int]]]] = {}
        for run_id, _, _, start, end, pid, tid in unit_rows:
            self.steps.setdefault(run_id, []).append((int(start), int(end), (int(pid), int(tid))))

    def later_arrival(self, run: Run, row: int) -> tuple[Run, int, int, tuple[int, int]] | None:
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
    "start_ns BIGINT, end_ns BIGINT, on_path_ns BIGINT, waiter_span_id BIGINT"
)

_COLUMN_NAMES = tuple(part.split()[0] for part in _COLUMNS.split(", "))


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
    for run in runs.values():
        prepare_chase(run, ranks)
    paths = [walk_columns(runs[u[0]], int(u[3]), int(u[4]), (int(u[5]), int(u[6])), ranks) for u in unit_rows]
    with registered(con, "_xsp_segments", _segment_table(unit_rows, paths, runs)) as segments:
        con.execute(f"INSERT INTO {TABLE} SELECT * FROM {segments}")


def _segment_table(unit_rows: list[tuple], paths: list[dict[str, np.ndarray]], runs: dict[int, Run]) -> dict[str, np.ndarray]:
    """The rows of xsp_critical_path: each unit's segments (walk_columns) in time order, adjacent
    ones of the same span and kind merged (as merged() does), as columns."""
    sizes = [len(p["start"]) for p in paths]
    total = sum(sizes)
    unit = np.repeat(np.arange(len(paths)), sizes)
    if total == 0:  # no step, or steps without a span to walk (a database without spans): no rows
        return {name: np.zeros(0, dtype=object if name in ("name", "kind") else np.int64) for name in _COLUMN_NAMES}

    def column(name: str, dtype) -> np.ndarray:
        return np.concatenate([p[name][::-1] for p in paths]).astype(dtype) if paths else np.zeros(0, dtype=dtype)

    start, end, row, on_run, waiter = (column(name, np.int64) for name in ("start", "end", "row", "run_id", "waiter"))
    kind = column("kind", object)
    same = (unit[1:] == unit[:-1]) & (row[1:] == row[:-1]) & (kind[1:] == kind[:-1]) & (on_run[1:] == on_run[:-1]) & (start[1:] == end[:-1])
    same &= waiter[1:] == waiter[:-1]
    first = np.flatnonzero(np.concatenate(([True], ~same)))
    last = np.concatenate((first[1:], [total])) - 1
    unit, kind, row, on_run, start, end, waiter = unit[first], kind[first], row[first], on_run[first], start[first], end[last], waiter[first]
    unit_first = np.flatnonzero(np.concatenate(([True], unit[1:] != unit[:-1]))) if len(unit) else np.zeros(0, dtype=np.int64)
    seq = np.arange(len(unit)) - np.repeat(unit_first, np.diff(np.concatenate((unit_first, [len(unit)]))))
    span_id, waiter_span_id = np.zeros(len(unit), dtype=np.int64), np.zeros(len(unit), dtype=np.int64)
    name = np.full(len(unit), None, dtype=object)
    for run_id, run in runs.items():
        mine = np.flatnonzero((on_run == run_id) & (row >= 0))
        span_id[mine] = run.spans["span_id"][row[mine]]
        name[mine] = run.names(row[mine])
        waited = np.flatnonzero((on_run == run_id) & (waiter >= 0))
        waiter_span_id[waited] = run.spans["span_id"][waiter[waited]]
    unit_columns = [np.asarray([u[i] for u in unit_rows], dtype=object) for i in range(3)]
    no_unit = [np.zeros(len(unit_rows), dtype=bool)] * 3
    masks = [np.asarray([u[i] is None for u in unit_rows], dtype=bool) if unit_rows else no_unit[i] for i in range(3)]
    # Numpy columns (masked where NULL): DuckDB scans them without pyarrow or pandas.
    return {
        "run_id": unit_columns[0][unit].astype(np.int64),
        "iteration": np.ma.masked_array(np.where(masks[1], 0, unit_columns[1]).astype(np.int64)[unit], mask=masks[1][unit]),
        "step_span_id": np.ma.masked_array(np.where(masks[2], 0, unit_columns[2]).astype(np.int64)[unit], mask=masks[2][unit]),
        "seq": seq,
        "on_run_id": on_run,
        "span_id": np.ma.masked_array(span_id, mask=row < 0),
        "name": name,
        "kind": kind,
        "start_ns": start,
        "end_ns": end,
        "on_path_ns": end - start,
        "waiter_span_id": np.ma.masked_array(waiter_span_id, mask=waiter < 0),
    }


def merged(segments: list[Segment]) -> list[Segment]:
    """Adjacent segments of the same span and kind as one (a parent op split by its children's time is not)."""
    out: list[Segment] = []
    for s in segments:
        last = out[-1] if out else None
        if last and last.row == s.row and last.kind == s.kind and last.run_id == s.run_id and last.waiter == s.waiter and last.end_ns == s.start_ns:
            out[-1] = Segment(last.start_ns, s.end_ns, s.kind, s.row, s.run_id, s.waiter)
        else:
            out.append(s)
    return out
