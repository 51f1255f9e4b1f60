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
"""

from __future__ import annotations

import numpy as np


def nest(thread: np.ndarray, start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(parent index or -1, depth) for each span; inputs sorted as described above."""
    n = len(start)
    parent = np.full(n, -1, dtype=np.int64)
    depth = np.zeros(n, dtype=np.int32)
    if n == 0:
        return parent, depth
    bounds = np.flatnonzero(np.diff(thread)) + 1
    for lo, hi in zip(np.r_[0, bounds], np.r_[bounds, n], strict=True):
        s, e = start[lo:hi], end[lo:hi]
        result = _nest_laminar(s, e)
        if result is None:
            result = _nest_stack(s, e)
        p, d = result
        parent[lo:hi] = np.where(p >= 0, p + lo, -1)
        depth[lo:hi] = d
    return parent, depth


def _nest_laminar(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    n = len(start)
    order = np.arange(n)
    # Spans closed before span i starts: ended at or before its start and come before it. Only
    # zero-length spans at exactly that start (i itself included) end there without coming before it.
    # Ends in start order are nearly sorted already (nested spans end in order): the stable sort
    # (timsort on int64) runs in a few passes over such runs, ~15x faster here than the default.
    closed = np.searchsorted(np.sort(end, kind="stable"), start, side="right")
    zero = np.flatnonzero(start == end)
    if len(zero):
        zero_starts = start[zero]
        first_zero_at = np.searchsorted(zero_starts, start, side="left")
        last_zero_at = np.searchsorted(zero_starts, start, side="right")
        not_before = last_zero_at - np.maximum(first_zero_at, np.searchsorted(zero, order, side="left"))
        closed = closed - np.maximum(not_before, 0)
    depth = (order - closed).astype(np.int64)
    if depth.min(initial=0) < 0:
        return None
    parent = np.full(n, -1, dtype=np.int64)
    for level in range(1, int(depth.max(initial=0)) + 1):
        above = np.flatnonzero(depth == level - 1)
        here = np.flatnonzero(depth == level)
        slot = np.searchsorted(above, here, side="left") - 1
        if (slot < 0).any():
            return None
        parent[here] = above[slot]
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
