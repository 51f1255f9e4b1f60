"""Parent of every CPU span: the tightest span enclosing it on its thread.

Input arrays are sorted per thread by (start, end descending, kind rank, span id), so an
enclosing span always comes before the spans it encloses.

Two algorithms, one answer:
- `_nest_laminar` (vectorised, numpy): when a thread's spans are properly nested (laminar, the
  normal case: push/pop ranges, API calls, profiler ops), a span's depth is the number of spans
  before it that are still open at its start, and its parent is the latest earlier span one level
  up. Its result is accepted only if every parent found encloses its child -- which holds
  exactly when the thread is laminar.
- `_nest_stack` (a stack walk, Python): for threads where ranges cross (start/end ranges,
  rounding in profiler timestamps): the parent is the innermost open span that encloses the child.

All threads are nested in one vectorised pass, not one by one: `separate_threads` moves each
thread's times into a range of its own, after the previous thread's, so the pass sees each thread
as it would alone; only threads whose spans cross go through the per-thread path (a Python loop
over threads grows with the thread count; docs/robustness.md has the 10^6-thread trace).
"""

from __future__ import annotations

import numpy as np


def thread_starts(thread: np.ndarray) -> np.ndarray:
    """Index of each thread's first row (`thread` sorted, not empty)."""
    return np.r_[0, np.flatnonzero(np.diff(thread)) + 1]


def separate_threads(thread: np.ndarray, start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start and end moved so that every thread's times lie after the previous thread's (`thread`
    sorted, ends >= starts): comparisons within a thread are unchanged, none crosses threads.
    Each thread is shifted to begin one past the latest end of the threads before it; where the
    threads' time ranges add up to more than int64 holds, each time becomes its rank in
    (thread, time) order instead."""
    n = len(start)
    if n == 0:
        return start, end
    firsts = thread_starts(thread)
    thread_index = np.repeat(np.arange(len(firsts)), np.diff(np.r_[firsts, n]))
    lowest = np.minimum.reduceat(start, firsts)
    highest = np.maximum.reduceat(end, firsts)
    if float((highest.astype(np.float64) - lowest + 1).sum()) < 2.0**61:  # a float sum: an int64 one could wrap
        base = np.r_[0, np.cumsum(highest - lowest + 1)[:-1]] - lowest
        return start + base[thread_index], end + base[thread_index]
    keys = np.r_[start, end]
    threads = np.r_[thread_index, thread_index]
    order = np.lexsort((keys, threads))
    new_value = np.r_[True, (np.diff(keys[order]) != 0) | (np.diff(threads[order]) != 0)]
    rank = np.empty(2 * n, dtype=np.int64)
    rank[order] = np.cumsum(new_value)
    return rank[:n], rank[n:]


def nest(thread: np.ndarray, start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(parent index or -1, depth) for each span; inputs sorted as described above."""
    n = len(start)
    parent = np.full(n, -1, dtype=np.int64)
    depth = np.zeros(n, dtype=np.int32)
    if n == 0:
        return parent, depth
    firsts = thread_starts(thread)
    thread_index = np.repeat(np.arange(len(firsts)), np.diff(np.r_[firsts, n]))
    start, end = separate_threads(thread, start, end)
    all_parent, all_depth, wrong = _nest_laminar_all(start, end, thread_index)
    crossing = np.zeros(len(firsts), dtype=bool)
    crossing[thread_index[wrong]] = True
    take = ~crossing[thread_index]
    parent[take], depth[take] = all_parent[take], all_depth[take]
    for lo, hi in zip(firsts[crossing], np.r_[firsts[1:], n][crossing], strict=True):
        s, e = start[lo:hi], end[lo:hi]
        result = _nest_laminar(s, e)
        if result is None:
            result = _nest_stack(s, e)
        p, d = result
        parent[lo:hi] = np.where(p >= 0, p + lo, -1)
        depth[lo:hi] = d
    return parent, depth


def _open_before(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Per span, how many spans before it are still open at its start (negative where spans cross)."""
    n = len(start)
    order = np.arange(n)
    # Spans closed before span i starts: ended at or before its start and come before it. Only
    # zero-length spans at exactly that start (i itself included) end there without coming before it.
    # Ends in start order are nearly sorted already (nested spans end in order): the stable sort
    # (timsort on int64) runs in a few passes over such runs.
    closed = np.searchsorted(np.sort(end, kind="stable"), start, side="right")
    zero = np.flatnonzero(start == end)
    if len(zero):
        zero_starts = start[zero]
        first_zero_at = np.searchsorted(zero_starts, start, side="left")
        last_zero_at = np.searchsorted(zero_starts, start, side="right")
        not_before = last_zero_at - np.maximum(first_zero_at, np.searchsorted(zero, order, side="left"))
        closed = closed - np.maximum(not_before, 0)
    return (order - closed).astype(np.int64)


def _parents_by_level(depth: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(parent, missing): each span's parent is the latest earlier span one level up; `missing`
    marks spans with none."""
    parent = np.full(len(depth), -1, dtype=np.int64)
    missing = np.zeros(len(depth), dtype=bool)
    for level in range(1, int(depth.max(initial=0)) + 1):
        above = np.flatnonzero(depth == level - 1)
        here = np.flatnonzero(depth == level)
        slot = np.searchsorted(above, here, side="left") - 1
        missing[here[slot < 0]] = True
        parent[here] = np.where(slot >= 0, above[np.maximum(slot, 0)], -1)
    return parent, missing


def _nest_laminar_all(start: np.ndarray, end: np.ndarray, thread_index: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`_nest_laminar` over the spans of all threads at once (times from separate_threads):
    (parent, depth, the spans where it fails). A thread with no such span gets exactly what
    `_nest_laminar` gives it alone: the threads before it are all closed at its spans' starts, so
    its depths count its own open spans only, and a parent found in another thread, or one that
    does not enclose its child, marks the child."""
    depth = _open_before(start, end)
    wrong = depth < 0
    depth = np.maximum(depth, 0)
    parent, wrong_parent = _parents_by_level(depth)
    wrong |= wrong_parent
    child = np.flatnonzero(parent >= 0)
    up = parent[child]
    wrong[child] |= (thread_index[up] != thread_index[child]) | (end[up] < end[child]) | (start[up] > start[child])
    return parent, depth.astype(np.int32), wrong


def _nest_laminar(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    depth = _open_before(start, end)
    if depth.min(initial=0) < 0:
        return None
    parent, missing = _parents_by_level(depth)
    if missing.any():
        return None
    has = parent >= 0
    if not (end[parent[has]] >= end[has]).all() or not (start[parent[has]] <= start[has]).all():
        return None
    return parent, depth.astype(np.int32)


def _nest_stack(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    starts, ends = start.tolist(), end.tolist()
    n = len(starts)
    parent = [-1] * n
    depth = [0] * n
    stack: list[int] = []  # open spans, outermost first
    for i in range(n):
        s, e = starts[i], ends[i]
        while stack and ends[stack[-1]] <= s:
            stack.pop()
        # The top is the innermost open span; if it only partly overlaps, look further down.
        for j in range(len(stack) - 1, -1, -1):
            if ends[stack[j]] >= e:
                parent[i] = stack[j]
                depth[i] = depth[stack[j]] + 1
                break
        stack.append(i)
    return np.array(parent, dtype=np.int64), np.array(depth, dtype=np.int32)
