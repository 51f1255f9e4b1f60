"""The critical path's walk as pointer chasing: every place the walk can stand -- a GPU item it
arrived at, or the end of an elementary CPU segment of a thread -- is a node, and the hop the walk
takes from it (the segments it records, the node it moves to, the time it leaves at) is computed
for all nodes at once in numpy, once per run. Walking a path is then one Python loop that follows
`next` pointers and stops where the window starts; the segments of the nodes it passed are
gathered afterwards in numpy.

A hop whose times reach the window's start, a GPU item first on its stream and not launched in
the trace, a collective that another rank may have held up, and any place that is not a node are
left to the step-by-step walk of walk.py (NO_EXIT): the chase only takes hops that the
window's start does not clip, so both give the same segments.

The rules are those of walk.walk, written over arrays:
- a CPU position (thread, t) lies in a gap (idle back to the previous segment's end) or in the
  segment that ends at or after t: idle, a call that waited for the GPU work that ended last
  before t (and after the call began), or its owner's time back to the segment's start -- then a
  gap back to the previous segment when the two do not touch;
- a GPU item is its own time (when it starts before the time the walk arrived at), then the
  latest of its dependencies: the previous item of its stream (GPU idle between), the item of
  another stream it waited for (an event: a stream wait, charged to that item, the waiting item
  beside it), or its launch call (queue delay, then the CPU position at the launch);
- the end of a segment with a cross-thread edge (threads.py) hands off to the other
  thread: a wait to the worker's last op, an idle segment before work to the wait that started it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from .threads import CrossEdges, cross_edges

# Segment kinds, in the words the analyses print (GPU work adds its own: kernel, memcpy, ...).
CPU_OP = "cpu_op"
LAUNCH = "launch"
QUEUE_DELAY = "queue_delay"
SYNC_WAIT = "sync_wait"
CPU_IDLE = "cpu_idle"
# A stream idle between an item and its next one, which was launched already and waited for no
# recorded event: the device's own delay, or a dependency the trace does not record.
GPU_IDLE = "gpu_idle"
STREAM_WAIT = "stream_wait"  # a stream whose next item waited for another stream's work (an event): charged to that work
THREAD_WAIT = "thread_wait"  # a thread waiting for another thread of its process (threads.py)
FIXED_KINDS = (CPU_OP, LAUNCH, QUEUE_DELAY, SYNC_WAIT, CPU_IDLE, GPU_IDLE, THREAD_WAIT, STREAM_WAIT)
_OP, _LAUNCH, _QUEUE, _SYNC, _CPU_IDLE, _GPU_IDLE, _THREAD, _STREAM_WAIT = range(len(FIXED_KINDS))

NO_EXIT = np.iinfo(np.int64).min  # the exit time of a node the step-by-step walk takes (below every window start)
_CHUNK = 1 << 19  # nodes per numpy pass while preparing (bounds the temporary arrays)
_SLOTS = 4  # segments a hop records at most: a GPU item, its idle or queue delay, a CPU segment, a gap


class Columns(NamedTuple):
    """The run's columns the hops read, indexed by row (run.Run)."""

    start: np.ndarray
    end: np.ndarray
    kind_code: np.ndarray  # GPU row -> its segment kind, as an index into the run's kinds
    stream_prev: np.ndarray
    launch_of: np.ndarray
    event_of: np.ndarray  # GPU row -> the other stream's row it waited for (-1: none)
    blocking: np.ndarray
    launchers: np.ndarray
    gpu_ends: np.ndarray  # GPU end times, sorted
    gpu_end_rows: np.ndarray
    thread_of: np.ndarray  # CPU row -> index of its thread in Chase.keys (-1: GPU row)
    stop: np.ndarray  # GPU row -> the step-by-step walk must take it (a collective across ranks)
    # CPU row -> whether its own time can wait for another thread and is work (threads.roles);
    # None: no cross-thread edges (a caller that predates them)
    roles: np.ndarray | None = None


@dataclass
class Chase:
    """The nodes of one run: rows 0..n-1 are GPU items, n + i the end of CPU segment i (the threads'
    segments concatenated, thread k's from first[k] to last[k] excluded)."""

    n: int
    keys: list[tuple[int, int]]
    first: np.ndarray
    last: np.ndarray
    seg_start: np.ndarray
    seg_end: np.ndarray
    seg_owner: np.ndarray
    next_node: np.ndarray
    exit_t: np.ndarray
    kinds: np.ndarray  # kind code -> its name
    cols: Columns
    cross: CrossEdges
    index: dict[tuple[int, int], int] = field(init=False)  # thread key -> k
    _next: memoryview = field(init=False)
    _exit: memoryview = field(init=False)

    def __post_init__(self) -> None:
        self.index = {key: k for k, key in enumerate(self.keys)}
        self._next = self.next_node.data
        self._exit = self.exit_t.data

    def cpu_node(self, key: tuple[int, int], t: int) -> int | None:
        """The node of the CPU position (thread, t) when t is the end of one of its segments."""
        if key not in self.index:
            return None
        k = self.index[key]
        lo, hi = int(self.first[k]), int(self.last[k])
        i = lo + int(np.searchsorted(self.seg_end[lo:hi], t))
        return self.n + i if i < hi and int(self.seg_end[i]) == t else None

    def follow(self, node: int, start_ns: int, budget: int) -> tuple[list[int], int]:
        """The nodes the walk passes from `node` while its hops stay inside the window (at most
        `budget`), and the node it stops at."""
        nxt, exit_t = self._next, self._exit
        passed: list[int] = []
        append = passed.append
        for _ in range(budget):
            if exit_t[node] <= start_ns:
                break
            append(node)
            node = nxt[node]
        return passed, node


def _resolve(ch: Chase, cols: Columns, thread: np.ndarray, t: np.ndarray, segment: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """The hop from CPU positions (thread index, t): segment A (ending at t), optional gap B
    (ending at A's start), the next node and the exit time. `segment`: the segments the positions
    are the ends of, when they are (else found)."""
    m = len(t)
    i = np.zeros(m, dtype=np.int64) if segment is None else segment
    for k in np.unique(thread) if segment is None else ():
        sel = thread == k
        lo, hi = int(ch.first[k]), int(ch.last[k])
        i[sel] = lo + np.searchsorted(ch.seg_end[lo:hi], t[sel], side="left")
    first, last = ch.first[thread], ch.last[thread]
    at = np.minimum(i, max(len(ch.seg_end) - 1, 0))
    gap = (i >= last) | (ch.seg_start[at] >= t)
    prev = i - 1
    has_prev = prev >= first
    prev_end = ch.seg_end[np.maximum(prev, 0)]
    owner = np.where(gap, -1, ch.seg_owner[at])
    seg_start = ch.seg_start[at]
    a_kind = np.where(owner < 0, _CPU_IDLE, np.where(cols.launchers[owner], _LAUNCH, _OP))
    a_start = seg_start.copy()
    a_row = owner.copy()
    # a call that blocked on the GPU: the GPU work that ended last before t, after the call began
    w_at = np.full(m, -1, dtype=np.int64)
    calls = np.flatnonzero(~gap & (owner >= 0) & cols.blocking[owner])
    w_at[calls] = np.searchsorted(cols.gpu_ends, t[calls], side="right") - 1
    waited = cols.gpu_end_rows[np.maximum(w_at, 0)] if len(cols.gpu_ends) else np.zeros(m, dtype=np.int64)
    waited_end = cols.end[waited] if len(cols.gpu_ends) else np.zeros(m, dtype=np.int64)
    sync = (w_at >= 0) & (waited_end > cols.start[owner]) & (waited_end > seg_start)
    a_kind[sync], a_start[sync] = _SYNC, waited_end[sync]
    touching = has_prev & (prev_end == seg_start)
    b_valid = ~gap & ~sync & has_prev & ~touching
    next_node = np.where(sync, waited, ch.n + prev)
    exit_t = np.where(sync, waited_end, np.where(gap | b_valid, prev_end, seg_start))
    _cross_thread(ch, i, last, owner, ~gap & ~sync & (ch.seg_end[at] == t), a_kind, a_start, a_row, b_valid, next_node, exit_t)
    # the first segment of a thread, or a gap before it: the walk reaches the window's start there
    exit_t[~sync & ~has_prev] = NO_EXIT
    a_kind[gap], a_start[gap], a_row[gap] = _CPU_IDLE, prev_end[gap], -1
    return {"a_kind": a_kind, "a_start": a_start, "a_row": a_row, "b_valid": b_valid, "b_start": prev_end, "next": next_node, "exit": exit_t}


def _cross_thread(ch: Chase, i, last, owner, at_end, a_kind, a_start, a_row, b_valid, next_node, exit_t) -> None:
    """Overwrite, in place, the hops from the end of a segment that has a cross-thread edge: a
    waiting segment to the other thread's work that ended last, an idle segment before work that
    another thread's wait started to that wait's start."""
    cross = ch.cross
    if len(ch.seg_end) == 0:
        return
    at = np.minimum(i, len(ch.seg_end) - 1)
    fwd = at_end & (owner >= 0) & (cross.fwd[at] >= 0)
    target = cross.fwd[at[fwd]]
    a_kind[fwd], a_start[fwd], a_row[fwd], b_valid[fwd] = _THREAD, ch.seg_end[target], cross.wait_row[at[fwd]], False
    next_node[fwd], exit_t[fwd] = ch.n + target, ch.seg_end[target]
    after = np.minimum(at + 1, len(ch.seg_end) - 1)
    back = at_end & (owner < 0) & (at + 1 < last) & (cross.back_t[after] >= 0)
    work = after[back]
    a_kind[back], a_start[back], a_row[back], b_valid[back] = _THREAD, cross.back_t[work], cross.back_row[work], False
    node = cross.back_node[work]
    next_node[back], exit_t[back] = ch.n + np.maximum(node, 0), np.where(node >= 0, cross.back_t[work], NO_EXIT)


def _gpu_hops(ch: Chase, cols: Columns, rows: np.ndarray) -> dict[str, np.ndarray]:
    """The hop from GPU items (after their own time): idle or queue delay back to the dependency that
    bound it, then (for a launch) the CPU position of the launch."""
    start = cols.start[rows]
    prev, event, launcher = cols.stream_prev[rows], cols.event_of[rows], cols.launch_of[rows]
    prev_end = np.where(prev >= 0, np.minimum(cols.end[prev], start), NO_EXIT)
    event_end = np.where(event >= 0, np.minimum(cols.end[event], start), NO_EXIT)
    call_end = cols.end[launcher]
    launched = np.where(launcher >= 0, np.minimum(np.where(call_end <= start, call_end, cols.start[launcher]), start), NO_EXIT)
    # the dependency satisfied last; ties: stream, then event, then launch (walk.last_dependency)
    binding = np.where(prev >= 0, 0, -1)
    best = prev_end
    take = (event >= 0) & ((binding < 0) | (event_end > best))
    binding[take], best = 1, np.where(take, event_end, best)
    take = (launcher >= 0) & ((binding < 0) | (launched > best))
    binding[take], best = 2, np.where(take, launched, best)
    is_launch, is_event = binding == 2, binding == 1
    out = {
        "r1_kind": np.where(is_launch, _QUEUE, np.where(is_event, _STREAM_WAIT, _GPU_IDLE)),
        "r1_start": best,
        "r1_row": np.where(is_launch, launcher, np.where(is_event, event, -1)),
        "r1_valid": (binding >= 0) & (best < start),
        "next": np.where(binding == 0, prev, event),
        "exit": best.copy(),
    }
    empty = np.zeros(len(rows), dtype=bool)
    out["a_valid"], out["b_valid"] = empty, empty.copy()
    out["a_kind"], out["a_start"], out["a_row"], out["b_start"] = (np.zeros(len(rows), dtype=np.int64) for _ in range(4))
    if np.any(is_launch):
        hop = _resolve(ch, cols, cols.thread_of[launcher[is_launch]], launched[is_launch])
        out["a_valid"][is_launch] = True
        for name in ("a_kind", "a_start", "a_row", "b_valid", "b_start", "next", "exit"):
            out[name][is_launch] = hop[name]
    out["exit"][(binding < 0) | cols.stop[rows]] = NO_EXIT
    return out


def prepare(cols: Columns, keys: list[tuple[int, int]], threads: list[tuple[np.ndarray, np.ndarray, np.ndarray]], gpu_kinds: list[str]) -> Chase:
    """The nodes and hops of a run: `threads` holds each thread's segments (starts, ends, owners),
    `gpu_kinds` the names of the kind codes past FIXED_KINDS."""
    n = len(cols.start)
    sizes = np.array([len(s) for s, _, _ in threads], dtype=np.int64)
    last = np.cumsum(sizes)
    first = last - sizes

    def joined(part: int) -> np.ndarray:
        return np.concatenate([np.asarray(t[part], dtype=np.int64) for t in threads]) if threads else np.zeros(0, dtype=np.int64)

    seg_start, seg_end, seg_owner = joined(0), joined(1), joined(2)
    total = n + len(seg_start)
    kinds = np.array(FIXED_KINDS + tuple(str(k) for k in gpu_kinds), dtype=object)
    roles = cols.roles if cols.roles is not None else np.zeros(len(cols.start), dtype=np.int8)
    cross = cross_edges(keys, first, last, seg_start, seg_end, seg_owner, roles)
    ch = Chase(n, keys, first, last, seg_start, seg_end, seg_owner, np.zeros(total, dtype=np.int64), np.full(total, NO_EXIT), kinds, cols, cross)
    gpu = np.flatnonzero(cols.thread_of < 0)
    for lo in range(0, len(gpu), _CHUNK):
        rows = gpu[lo : lo + _CHUNK]
        hop = _gpu_hops(ch, cols, rows)
        ch.next_node[rows], ch.exit_t[rows] = hop["next"], hop["exit"]
    segment_thread = np.repeat(np.arange(len(threads)), sizes)
    for lo in range(0, len(seg_start), _CHUNK):
        hi = min(lo + _CHUNK, len(seg_start))
        hop = _resolve(ch, cols, segment_thread[lo:hi], seg_end[lo:hi], np.arange(lo, hi))
        ch.next_node[n + lo : n + hi], ch.exit_t[n + lo : n + hi] = hop["next"], hop["exit"]
    return ch


def segments(ch: Chase, passed: list[int], t: int) -> dict[str, np.ndarray]:
    """The segments recorded at the nodes `passed` (arrived at time t first), latest first, as
    columns start, end, kind (name), row, waiter (the GPU item a stream wait held, else -1)."""
    cols = ch.cols
    nodes = np.array(passed, dtype=np.int64)
    m = len(nodes)
    start, end = np.zeros((m, _SLOTS), dtype=np.int64), np.zeros((m, _SLOTS), dtype=np.int64)
    kind, row = np.zeros((m, _SLOTS), dtype=np.int64), np.full((m, _SLOTS), -1, dtype=np.int64)
    valid = np.zeros((m, _SLOTS), dtype=bool)
    waiter = np.full((m, _SLOTS), -1, dtype=np.int64)
    arrived = np.concatenate(([t], ch.exit_t[nodes[:-1]])) if m else np.zeros(0, dtype=np.int64)
    on_gpu = nodes < ch.n
    g, c = np.flatnonzero(on_gpu), np.flatnonzero(~on_gpu)
    rows = nodes[g]
    own_start = cols.start[rows]
    start[g, 0], end[g, 0], kind[g, 0], row[g, 0], valid[g, 0] = own_start, arrived[g], cols.kind_code[rows], rows, own_start < arrived[g]
    hop = _gpu_hops(ch, cols, rows)
    start[g, 1], end[g, 1], kind[g, 1], row[g, 1], valid[g, 1] = hop["r1_start"], own_start, hop["r1_kind"], hop["r1_row"], hop["r1_valid"]
    waiter[g, 1] = np.where(hop["r1_kind"] == _STREAM_WAIT, rows, -1)
    a_end = hop["r1_start"]
    a_valid = hop["a_valid"]
    _put_cpu(start, end, kind, row, valid, g, hop, a_end, a_valid)
    seg = nodes[c] - ch.n
    thread = np.searchsorted(ch.last, seg, side="right")
    hop = _resolve(ch, cols, thread, ch.seg_end[seg], seg)
    _put_cpu(start, end, kind, row, valid, c, hop, ch.seg_end[seg], np.ones(len(c), dtype=bool))
    keep = valid.ravel()
    return {
        "start": start.ravel()[keep],
        "end": end.ravel()[keep],
        "kind": ch.kinds[kind.ravel()[keep]],
        "row": row.ravel()[keep],
        "waiter": waiter.ravel()[keep],
    }


def _put_cpu(start, end, kind, row, valid, at: np.ndarray, hop: dict[str, np.ndarray], a_end: np.ndarray, a_valid: np.ndarray) -> None:
    """Fill slots 2 (the CPU segment, ending at a_end) and 3 (the gap before it) of the hops at `at`."""
    empty_wait = (hop["a_kind"] == _THREAD) & (hop["a_start"] >= a_end)  # a hand-off at the same instant records nothing
    start[at, 2], end[at, 2], kind[at, 2], row[at, 2], valid[at, 2] = hop["a_start"], a_end, hop["a_kind"], hop["a_row"], a_valid & ~empty_wait
    start[at, 3], end[at, 3], kind[at, 3], valid[at, 3] = hop["b_start"], hop["a_start"], _CPU_IDLE, a_valid & hop["b_valid"]
