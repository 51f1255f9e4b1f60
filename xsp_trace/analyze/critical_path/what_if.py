"""What-if: the step time predicted when some work gets faster (or vanishes), by replaying each step
with changed durations over the dependencies the critical path walks (walk.py).

Rules (`analyze --what-if RULE`, repeatable; the first rule that matches a span applies):

    KIND:REGEX*FACTOR    scale the matching spans' time by FACTOR (0.5: twice as fast, 0: gone)
    KIND:REGEX=DURATION  set their time to DURATION (a number of ns, or with a unit: 3us, 1.5ms, 0)

A FACTOR is a finite number of 0 or more, a DURATION below 2^62 ns (timebase.LIMIT_NS); a rule
that moves a replayed time past 2^62 ns stops the analysis with one line.

KIND is kernel, memcpy, memset, communication, gpu (any GPU work), op (CPU ops and annotations:
their own time, not their children's), api (runtime calls), sync (calls that block on the GPU:
`sync:cudaStreamSynchronize=0` also removes the wait, so the call no longer waits for the GPU) or
region (a CPU span with everything nested in it on its thread: `region:DataLoader=0` removes the
DataLoader's whole time, its children's own time too; a DURATION is the whole region's new time;
GPU work launched inside still runs, launched earlier, and blocking calls inside still wait for it).
REGEX is a Python regular expression searched in the span's name.

The replay keeps what the trace shows about each dependency: a thread runs its spans in order and
keeps its idle gaps; a GPU item starts after the previous item of its stream, the item of another
stream it waited for (a recorded event wait; or, where the item started after all of those and its
launch, the item of another stream of its device that ended last before it: an unrecorded wait --
a CUDA graph's node, a collective, an event an older trace leaves out, _implied_wait), or its launch
plus the queue delay it had, each with the gap it had where it bound the item in the trace; a
blocking call returns as long after the GPU work it waited for as it did; a thread waiting for
another thread of its process (the critical path's cross-thread edges, threads.py:
PyTorch's backward on the autograd engine's thread) resumes as long after the worker's last op as
it did (an earlier stretch of the same wait that ended while the worker still ran, at that point
of the worker's work), and the worker's first op after its idle stretch starts as long after the
wait began as it did. Work launched before the step keeps its times. A step ends when its thread
does or when the GPU work that ran in it does (what ran past the step's end in the trace still
may), whichever is later: a prediction is never below what the busiest stream must still run.
The new critical path is walked over the replayed times.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_right
from dataclasses import dataclass, replace

import duckdb
import numpy as np
import pyarrow as pa

from ...errors import InputError
from ...store.sql import registered
from ...timebase import LIMIT_NS, parse_time
from .run import Run, flatten, load_run, waited_for
from .walk import last_dependency, merged, thread_crossings, units, walk

KINDS = ("kernel", "memcpy", "memset", "communication", "gpu", "op", "api", "sync", "region")
_RULE = re.compile(r"^(?P<kind>[a-z]+):(?P<pattern>.+)(?P<op>[*=])(?P<value>[0-9.]+(?:[eE][+-]?[0-9]+)?)(?P<unit>ns|us|ms|s)?$")
GRAMMAR = "KIND:REGEX*FACTOR or KIND:REGEX=DURATION (e.g. kernel:gemm*0.5, sync:cudaStreamSynchronize=0, op:aten::to*0, region:DataLoader=0)"


@dataclass(frozen=True)
class Rule:
    kind: str
    pattern: re.Pattern
    scale: float | None  # *FACTOR
    set_ns: int | None  # =DURATION

    def duration(self, measured: int, total: int) -> int:
        """The new duration of a piece of `measured` ns of a span whose time is `total` ns."""
        if self.scale is not None:
            scaled = measured * self.scale
            if scaled >= LIMIT_NS:  # a float past the clock, or inf: round() would fail or overflow int64 later
                raise past_the_clock()
            return round(scaled)
        assert self.set_ns is not None
        return round(self.set_ns * measured / total) if total > 0 else 0


def past_the_clock() -> InputError:
    return InputError(None, "--what-if: the rules move replayed times past 2^62 ns, beyond any trace's clock", "use a smaller FACTOR or DURATION")


def parse_rule(text: str) -> Rule:
    match = _RULE.match(text.strip())
    if not match or match["kind"] not in KINDS:
        raise InputError(None, f"--what-if {text!r} is not a rule", f"write {GRAMMAR}; KIND is one of {', '.join(KINDS)}")
    try:
        pattern = re.compile(match["pattern"])
    except re.error as exc:
        raise InputError(None, f"--what-if {text!r}: the regular expression does not compile ({exc})", "fix the REGEX part") from exc
    if match["op"] == "*":
        if match["unit"]:
            raise InputError(None, f"--what-if {text!r}: a factor has no unit", f"write {GRAMMAR}")
        try:
            factor = float(match["value"])
        except ValueError:  # 1.2.3
            factor = math.nan
        if not math.isfinite(factor):
            raise InputError(None, f"--what-if {text!r}: the factor is not a finite number", f"write {GRAMMAR}")
        return Rule(match["kind"], pattern, factor, None)
    try:
        duration = parse_time(match["value"] + (match["unit"] or ""))
    except ValueError:
        raise InputError(None, f"--what-if {text!r}: the duration is not a time below 2^62 ns", f"write {GRAMMAR}") from None
    return Rule(match["kind"], pattern, None, duration)


def _kinds_of(run: Run, row: int) -> tuple[str, ...]:
    """The rule kinds a span answers to."""
    spans = run.spans
    if spans["work_class"][row] != "":
        kind = str(spans["kind"][row])
        if kind == "kernel" and spans["work_class"][row] == "communication":
            return ("communication", "kernel", "gpu")
        return (kind, "gpu")
    if run.blocking[row]:
        return ("sync", "api")
    return ("api",) if str(spans["kind"][row]) == "api" else ("op",)


class _Lengths:
    """The replayed length of each piece of work under the rules (the first rule that matches applies)."""

    def __init__(self, run: Run, rules: list[Rule], start_ns: int, end_ns: int, self_time: dict[int, int]):
        self.run, self.rules, self.self_time = run, rules, self_time
        self.window = (start_ns, end_ns)
        self.regions = {i: _region_instances(run, rule.pattern) for i, rule in enumerate(rules) if rule.kind == "region"}
        self.found: dict[int, tuple[Rule | None, int]] = {}

    def rule(self, row: int) -> tuple[Rule | None, int]:
        """The rule for a span and the time a DURATION spreads over: a region's whole (clipped) time,
        else the span's own time in the window (a GPU item's duration)."""
        if row not in self.found:
            self.found[row] = self._rule(row)
        return self.found[row]

    def _rule(self, row: int) -> tuple[Rule | None, int]:
        run = self.run
        kinds = _kinds_of(run, row)
        name = run.name(row) if any(r.kind != "region" for r in self.rules) else ""
        for i, rule in enumerate(self.rules):
            if rule.kind == "region":
                instance = int(self.regions[i][row]) if kinds[-1] in ("op", "api") else -1
                if instance >= 0:
                    spans = run.spans
                    low, high = max(int(spans["start_ns"][instance]), self.window[0]), min(int(spans["end_ns"][instance]), self.window[1])
                    return rule, max(high - low, 0)
            elif rule.kind in kinds and rule.pattern.search(name):
                return rule, self.self_time.get(row, int(run.spans["end_ns"][row]) - int(run.spans["start_ns"][row]))
        return None, 0

    def length(self, row: int, measured: int) -> int:
        """The replayed length of `measured` ns of the span's time (row -1: idle, kept)."""
        if row < 0:
            return measured
        rule, total = self.rule(row)
        return rule.duration(measured, total) if rule else measured


_REGIONS: dict[tuple[int, re.Pattern], tuple[Run, np.ndarray]] = {}  # the last runs' regions (every step of a run asks)


def _region_instances(run: Run, pattern: re.Pattern) -> np.ndarray:
    """Each CPU row's outermost enclosing span on its thread (itself included) whose name the pattern
    matches (-1: none): the region the row's time belongs to."""
    found = _REGIONS.get((id(run), pattern))
    if found is not None and found[0] is run:
        return found[1]
    if len(_REGIONS) >= 8:
        _REGIONS.clear()
    out = _regions(run, pattern)
    _REGIONS[(id(run), pattern)] = (run, out)
    return out


def _regions(run: Run, pattern: re.Pattern) -> np.ndarray:
    """_region_instances, computed."""
    out = np.full(len(run.spans["span_id"]), -1, dtype=np.int64)
    if len(out) == 0:
        return out
    run.name(0)  # reads every row's name once
    assert run.name_column is not None
    start, end = run.spans["start_ns"], run.spans["end_ns"]
    for rows in run.threads.values():
        names = run.name_column[rows]
        distinct = {str(n) for n in set(names.tolist())}
        hits = {n for n in distinct if pattern.search(n)}
        if not hits:
            continue
        matches = np.isin(names.astype(str), list(hits))
        instance, until = -1, -1
        # rows come in time order (start, end descending): an enclosing span before what it holds
        for row, begin, finish, hit in zip(rows.tolist(), start[rows].tolist(), end[rows].tolist(), matches.tolist(), strict=True):
            if instance >= 0 and begin < until and finish <= until:
                out[row] = instance
            elif hit:
                instance, until = row, finish
                out[row] = row
    return out


@dataclass
class _Piece:
    """An elementary CPU segment of a thread (owner -1: idle), measured and replayed."""

    start: int
    end: int
    owner: int
    segment: int = -1  # its segment in the thread's flattened timeline (-1: an idle piece added at the window's ends)
    new_start: int = 0
    new_end: int = 0


def _pieces(run: Run, key: tuple[int, int], start_ns: int, end_ns: int) -> list[_Piece]:
    """The thread's segments clipped to the window, its idle gaps as pieces of their own."""
    flat = flatten(run, key)
    out: list[_Piece] = []
    cursor = start_ns
    for segment, (s, e, owner) in enumerate(zip(flat.starts, flat.ends, flat.owners, strict=True)):
        s, e = max(s, start_ns), min(e, end_ns)
        if e <= s:
            continue
        if s > cursor:
            out.append(_Piece(cursor, s, -1))
        out.append(_Piece(s, e, owner, segment))
        cursor = e
    if cursor < end_ns:
        out.append(_Piece(cursor, end_ns, -1))
    return out


# A cross-thread wait by piece: (the other thread, the measured time on it the piece depends on, the
# measured hand-off from that time to the piece's end).
_Wait = tuple[tuple[int, int], int, int]
_Waits = dict[tuple[tuple[int, int], int], _Wait]  # (thread, piece index) -> its wait


def _thread_waits(run: Run, threads: dict[tuple[int, int], list[_Piece]]) -> tuple[_Waits, _Waits]:
    """The critical path's cross-thread edges (threads.py) by (thread, piece index):
    (resumes) a waiting piece -> the end of the worker's last op it waited for; (starts) an idle
    piece before a worker's op -> the start of the other thread's wait that started that op."""
    keys, first, cross, ends = thread_crossings(run)
    resumes: _Waits = {}
    starts: _Waits = {}
    index = {key: k for k, key in enumerate(keys)}
    for key, pieces in threads.items():
        if key not in index or not pieces or len(ends) == 0:
            continue
        segment = np.array([p.segment for p in pieces], dtype=np.int64)
        owner = np.array([p.owner for p in pieces], dtype=np.int64)
        end = np.array([p.end for p in pieces], dtype=np.int64)
        at = np.where(segment >= 0, int(first[index[key]]) + segment, 0)
        target = np.where(segment >= 0, cross.fwd[at], -1)
        # a wait whose end the window holds (a piece clipped by the window's end is not one)
        waiting = np.flatnonzero((target >= 0) & (owner >= 0) & (end == ends[at]))
        worker = np.searchsorted(first, target[waiting], side="right") - 1
        for i, k, j in zip(waiting.tolist(), worker.tolist(), target[waiting].tolist(), strict=True):
            resumes[(key, i)] = (keys[k], int(ends[j]), int(end[i] - ends[j]))
        # The same span's earlier waits that ended while the worker still worked (it handed the
        # waiting thread a task -- PyTorch's AccumulateGrad -- and went on): they end at that point
        # of the worker's replayed work.
        worker_of = {int(owner[i]): keys[k] for i, k in zip(waiting.tolist(), worker.tolist(), strict=True)}
        for i in np.flatnonzero(np.isin(owner, list(worker_of)) & (segment >= 0) & (end == ends[at])).tolist():
            other = worker_of[int(owner[i])]
            if (key, i) not in resumes and _working(run, other, int(end[i])):
                resumes[(key, i)] = (other, int(end[i]), 0)
        began = np.where(segment[1:] >= 0, cross.back_t[at[1:]], -1)
        idle = np.flatnonzero((owner[:-1] < 0) & (began >= 0))  # an idle piece, then the op the wait started
        for i, k, w0 in zip(idle.tolist(), cross.back_thread[at[idle + 1]].tolist(), began[idle].tolist(), strict=True):
            starts[(key, i)] = (keys[k], w0, int(end[i]) - w0)
    return resumes, starts


IMPLIED_LOOKBACK = 64  # GPU items, latest ending first, searched for an unrecorded cross-stream wait


def _implied_wait(run: Run, row: int, bound_at: int) -> int | None:
    """The item of another stream of the same device that ended last before GPU item `row` started,
    if it ended after every dependency the trace records for `row` (its stream, event and launch)
    was met: `row` waited for something the trace does not record -- a CUDA graph's node on another
    stream, an event wait older traces leave out, a collective -- and this is the likeliest."""
    spans = run.spans
    begin = int(spans["start_ns"][row])
    if begin <= bound_at:
        return None
    device, stream = spans["device_id"][row], spans["stream_id"][row]
    i = int(np.searchsorted(run.gpu_ends, begin, side="right")) - 1
    for _ in range(IMPLIED_LOOKBACK):
        if i < 0 or int(run.gpu_ends[i]) <= bound_at:
            return None
        other = int(run.gpu_end_rows[i])
        if spans["device_id"][other] == device and spans["stream_id"][other] != stream and int(spans["start_ns"][other]) < begin:
            return other
        i -= 1
    return None


def _working(run: Run, key: tuple[int, int], t: int) -> bool:
    """Whether the thread runs one of its spans at t."""
    flat = flatten(run, key)
    i = bisect_right(flat.starts, t) - 1
    return i >= 0 and flat.ends[i] > t and flat.owners[i] >= 0


def replay(run: Run, start_ns: int, end_ns: int, rules: list[Rule]) -> tuple[dict[int, tuple[int, int]], dict[tuple[int, int], list[_Piece]]]:
    """New (start, end) of every GPU item of the window and the replayed pieces of every thread."""
    spans = run.spans
    start, end = spans["start_ns"], spans["end_ns"]
    threads = {key: _pieces(run, key, start_ns, end_ns) for key in run.threads}
    self_time: dict[int, int] = {}
    for pieces in threads.values():
        for p in pieces:
            if p.owner >= 0:
                self_time[p.owner] = self_time.get(p.owner, 0) + p.end - p.start
    lengths = _Lengths(run, rules, start_ns, end_ns, self_time)
    last_piece = {p.owner: p for pieces in threads.values() for p in pieces if p.owner >= 0}  # pieces are in time order
    # (time, 0 = CPU piece / 1 = GPU item, thread, piece index or GPU row): replayed in this order,
    # a CPU piece at its end, a GPU item at its start -- every dependency is replayed before its user.
    # A waiting piece comes after the other thread's op that ends at the same time (2).
    resumes, starts = _thread_waits(run, threads)
    events: list[tuple[int, int, tuple[int, int], int]] = []
    for key, pieces in threads.items():
        events += [(p.end, 2 if (key, i) in resumes else 0, key, i) for i, p in enumerate(pieces)]
    gpu_rows = [int(row) for rows in run.streams.values() for row in rows[(start[rows] >= start_ns) & (start[rows] < end_ns)]]
    events += [(int(start[row]), 1, (0, 0), row) for row in gpu_rows]
    events.sort(key=lambda e: (e[0], e[1]))
    cursor = {key: start_ns for key in threads}
    done = {key: 0 for key in threads}  # pieces replayed so far
    gpu_new: dict[int, tuple[int, int]] = {}
    piece_starts = {key: [p.start for p in pieces] for key, pieces in threads.items()}

    def new_time(key: tuple[int, int], at: int) -> int:
        pieces = threads[key]
        i = bisect_right(piece_starts[key], at) - 1
        if i < 0:
            return at
        p = pieces[i]
        begin = p.new_start if i < done[key] else cursor[key]
        measured = p.end - p.start
        if i < done[key]:
            replayed = p.new_end - p.new_start
        else:  # a piece still running there: at its rule's pace
            replayed = lengths.length(p.owner, measured)
        return begin + (round((at - p.start) * replayed / measured) if measured else 0)

    for _, order, key, item in events:
        if order == 1:
            row = item
            previous = run.previous_on_stream(row)
            prev_end = int(end[previous]) if previous is not None else None
            prev_new = gpu_new[previous][1] if previous in gpu_new else prev_end
            launcher = run.launcher(row)
            launched_at = launch_new = 0
            if launcher is not None:
                call_end = int(end[launcher])
                launched_at = call_end if call_end <= int(start[row]) else int(start[launcher])
                caller = (int(spans["pid"][launcher]), int(spans["tid"][launcher]))
                launch_new = new_time(caller, launched_at) if caller in threads else launched_at
            other = run.waits_for.get(row)  # another stream's item it waited for (an event)
            other_end = int(end[other]) if other is not None else None
            other_new = gpu_new[other][1] if other in gpu_new else other_end
            binding = last_dependency(prev_end, other_end, launched_at if launcher is not None else None)
            bound_at = max((t for t in (prev_end, other_end, launched_at if launcher is not None else None) if t is not None), default=start_ns)
            implied = _implied_wait(run, row, bound_at)
            implied_end = int(end[implied]) if implied is not None else None
            implied_new = gpu_new[implied][1] if implied in gpu_new else implied_end
            if implied is not None:
                binding = "implied"
            # Each dependency keeps the gap it had when it was the one that bound the item, else none.
            candidates = []
            for kind, measured_at, replayed_at in (
                ("stream", prev_end, prev_new),
                ("event", other_end, other_new),
                ("launch", launched_at, launch_new),
                ("implied", implied_end, implied_new),
            ):
                if measured_at is None or replayed_at is None or (kind == "launch" and launcher is None):
                    continue
                candidates.append(replayed_at + (int(start[row]) - measured_at if binding == kind else 0))
            new_start = max(candidates) if candidates else int(start[row])
            gpu_new[row] = (new_start, new_start + lengths.length(row, int(end[row]) - int(start[row])))
            continue
        i = item
        p = threads[key][i]
        p.new_start = cursor[key]
        measured = p.end - p.start
        rule = lengths.rule(p.owner)[0] if p.owner >= 0 else None
        p.new_end = p.new_start + lengths.length(p.owner, measured)
        if p.owner >= 0 and run.blocking[p.owner] and last_piece.get(p.owner) is p and not (rule and rule.kind == "sync" and rule.set_ns is not None):
            waited = waited_for(run, p.owner, int(end[p.owner]))
            if waited is not None and int(end[waited]) > p.start and waited in gpu_new:
                returned = int(end[p.owner]) - int(end[waited])
                p.new_end = max(p.new_start + min(measured, returned), gpu_new[waited][1] + returned)
        if (key, i) in starts:  # idle until another thread's wait started this thread's next op
            peer, began, handed = starts[(key, i)]
            p.new_end = max(p.new_start, new_time(peer, began) + handed)
        if (key, i) in resumes:  # waiting for another thread's last op
            peer, ended, handed = resumes[(key, i)]
            p.new_end = max(p.new_start + min(p.new_end - p.new_start, handed), new_time(peer, ended) + handed)
        cursor[key] = p.new_end
        done[key] = i + 1
    return gpu_new, threads


def _gpu_end(run: Run, start_ns: int, end_ns: int, gpu_new: dict[int, tuple[int, int]]) -> tuple[int, int]:
    """(when, row) the GPU work of the window ends in the replay, each item keeping what it ran past
    the window's end in the trace: a step ends no earlier than the work its streams had to run in it
    (-1 row: none). Work begun before the window keeps its times."""
    spans = run.spans
    start, end = spans["start_ns"], spans["end_ns"]
    best, best_row = start_ns, -1
    for row, (_, new_end) in gpu_new.items():
        at = new_end - max(int(end[row]) - end_ns, 0)
        if at > best:
            best, best_row = at, row
    for rows in run.streams.values():  # the item running as the window opens
        i = int(np.searchsorted(start[rows], start_ns, side="left")) - 1
        if i >= 0 and int(end[rows[i]]) > start_ns and min(int(end[rows[i]]), end_ns) > best:
            best, best_row = min(int(end[rows[i]]), end_ns), int(rows[i])
    return best, best_row


def replayed_run(run: Run, start_ns: int, end_ns: int, rules: list[Rule]) -> tuple[Run, dict[tuple[int, int], int], tuple[int, int]]:
    """A copy of `run` on replayed times (to walk the new critical path), each thread's new end of
    the window, and (when, row) its GPU work ends (_gpu_end)."""
    gpu_new, threads = replay(run, start_ns, end_ns, rules)
    if max([e for _, e in gpu_new.values()] + [p.new_end for pieces in threads.values() for p in pieces], default=0) >= LIMIT_NS:
        raise past_the_clock()  # the int64 arrays below would overflow
    new_start = run.spans["start_ns"].copy()
    new_end = run.spans["end_ns"].copy()
    for row, (s, e) in gpu_new.items():
        new_start[row], new_end[row] = s, e
    for key, pieces in threads.items():
        starts = [p.start for p in pieces]

        def mapped(at: int, pieces=pieces, starts=starts) -> int:
            i = bisect_right(starts, at) - 1
            if i < 0:
                return at
            p = pieces[i]
            measured = p.end - p.start
            return p.new_start + (round(min(at - p.start, measured) * (p.new_end - p.new_start) / measured) if measured else 0)

        for row in run.threads[key]:
            if int(run.spans["end_ns"][row]) > start_ns and int(run.spans["start_ns"][row]) < end_ns:
                if int(run.spans["start_ns"][row]) >= start_ns:
                    new_start[row] = mapped(int(run.spans["start_ns"][row]))
                new_end[row] = max(new_start[row], mapped(min(int(run.spans["end_ns"][row]), end_ns)))
    copy = replace(run, spans=dict(run.spans, start_ns=new_start, end_ns=new_end), flat={}, lists=None, chase=None, cross=None)
    order = np.argsort(new_end[run.gpu_end_rows], kind="stable")
    copy.gpu_end_rows = run.gpu_end_rows[order]
    copy.gpu_ends = new_end[copy.gpu_end_rows]
    return copy, {key: pieces[-1].new_end for key, pieces in threads.items() if pieces}, _gpu_end(run, start_ns, end_ns, gpu_new)


def predicted_latency(run: Run, start_ns: int, end_ns: int, thread: tuple[int, int], rules: list[Rule]) -> int:
    """predict's latency alone, without walking the new critical path (what a gain needs)."""
    _, new_ends, (gpu_end, _) = replayed_run(run, start_ns, end_ns, rules)
    return max(new_ends.get(thread, end_ns), gpu_end) - start_ns


def predict(run: Run, start_ns: int, end_ns: int, thread: tuple[int, int], rules: list[Rule]) -> tuple[int, list]:
    """(predicted latency ns, the new critical path's segments latest first) of the step [start_ns,
    end_ns] ending on `thread`: it ends when its thread does, or when the GPU work of the step does
    if that is later (without its waits the thread would run ahead, and the next step's work queue
    behind this one's: the hardware sets the step time)."""
    copy, new_ends, (gpu_end, gpu_row) = replayed_run(run, start_ns, end_ns, rules)
    new_end = new_ends.get(thread, end_ns)
    if gpu_end > new_end:
        return gpu_end - start_ns, walk(copy, start_ns, gpu_end, thread, gpu_row=gpu_row)
    return new_end - start_ns, walk(copy, start_ns, new_end, thread)


def replay_gain(
    con: duckdb.DuckDBPyConnection, run_id: int, iterations: list, rules: list[Rule], loaded: dict | None = None
) -> list[tuple[int | None, int, int]]:
    """(iteration, measured ns, predicted ns) of each of a run's steps of these iterations under the
    rules, in time order; a run without steps is one unit of iteration None (ask for [None]).
    `loaded`: a dict that keeps each run loaded between calls (several replays of one run)."""
    loaded = {} if loaded is None else loaded
    if run_id not in loaded:
        loaded[run_id] = load_run(con, run_id)
    run = loaded[run_id]
    wanted = set(iterations)
    out = []
    for unit_run, iteration, _, start_ns, end_ns, pid, tid in units(con):
        if unit_run == run_id and iteration in wanted:
            latency = predicted_latency(run, int(start_ns), int(end_ns), (int(pid), int(tid)), rules)
            out.append((iteration, int(end_ns) - int(start_ns), latency))
    return out


def step_gain(con: duckdb.DuckDBPyConnection, run_id: int, iterations: list, rules: list[Rule], loaded: dict | None = None) -> tuple[int, int]:
    """(measured, predicted) total latency of a run's steps of these iterations under the rules."""
    gains = replay_gain(con, run_id, iterations, rules, loaded)
    return sum(g[1] for g in gains), sum(g[2] for g in gains)


TABLE = "xsp_what_if"
TOP_ITEMS = 5


def _top(run: Run, segments: list) -> str:
    """The spans with the most time on a path, 'name [kind] 1.234 ms; ...'."""
    totals: dict[tuple[str, str], int] = {}
    for seg in segments:
        if seg.row >= 0:
            key = (run.name(seg.row), seg.kind)
            totals[key] = totals.get(key, 0) + seg.end_ns - seg.start_ns
    ranked = sorted(totals.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP_ITEMS]
    return "; ".join(f"{name} [{kind}] {ns / 1e6:.3f} ms" for (name, kind), ns in ranked)


def build_what_if(con: duckdb.DuckDBPyConnection) -> None:
    """Fill the TEMP table xsp_what_if: every step's measured and predicted latency under the
    session's rules (the variable xsp_what_if_rules) and the top of its new critical path."""
    exists = con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = ? AND temporary", [TABLE]).fetchone()
    if exists and exists[0]:
        return
    found = con.execute("SELECT getvariable('xsp_what_if_rules')").fetchone()
    texts = [str(t) for t in (found[0] if found and found[0] else [])]
    rules = [parse_rule(t) for t in texts]
    columns: dict[str, list] = {k: [] for k in ("run_id", "iteration", "step_span_id", "latency_ns", "predicted_ns", "rules", "new_top_on_path")}
    runs: dict[int, Run] = {}
    for run_id, iteration, step_span_id, start_ns, end_ns, pid, tid in units(con):
        run = runs.get(run_id) or runs.setdefault(run_id, load_run(con, run_id))
        predicted, segments = predict(run, int(start_ns), int(end_ns), (int(pid), int(tid)), rules)
        for name, value in zip(
            columns,
            (
                run_id,
                iteration,
                step_span_id,
                int(end_ns) - int(start_ns),
                predicted,
                "  ".join(texts),
                _top(run, merged(segments[::-1])),
            ),
            strict=True,
        ):
            columns[name].append(value)
    with registered(con, "_xsp_what_if_rows", pa.table(columns)) as rows:
        con.execute(f"CREATE TEMP TABLE {TABLE} AS SELECT * FROM {rows}")
