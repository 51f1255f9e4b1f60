"""CPU nesting: the vectorised path must give exactly what the stack walk gives, on laminar
and crossing spans alike, including zero-length spans and identical intervals."""

from __future__ import annotations

import numpy as np
import pytest

from xsp_trace.nesting import _nest_laminar, _nest_stack, nest


def _brute_force_parents(start, end):
    """Tightest earlier span still open at each span's start that encloses it (every pair examined)."""
    parents = []
    for i in range(len(start)):
        best = -1
        for j in range(i):
            if start[j] <= start[i] and end[j] >= end[i] and end[j] > start[i]:
                if best == -1 or end[j] - start[j] <= end[best] - start[best]:
                    best = j
        parents.append(best)
    return parents


def _laminar(rng, n):
    """Random properly nested intervals (a random tree laid out in time), some zero-length."""
    spans = []

    def build(lo, hi, budget):
        t = lo
        while budget > 0 and t < hi:
            length = int(rng.integers(0, max(1, (hi - t) // 2) + 1))
            if rng.random() < 0.15:
                length = 0
            s, e = t, min(hi, t + length)
            spans.append((s, e))
            budget -= 1
            if e - s > 2 and budget > 0:
                inner = int(rng.integers(0, budget + 1))
                build(s, e, inner)
                budget -= inner
            t = e + int(rng.integers(0, 3))

    build(0, 10_000, n)
    return spans


def _sorted(spans):
    spans = sorted(spans, key=lambda se: (se[0], -se[1]))
    return np.array([s for s, _ in spans], dtype=np.int64), np.array([e for _, e in spans], dtype=np.int64)


@pytest.mark.parametrize("seed", range(40))
def test_laminar_spans_take_the_fast_path_and_match_brute_force(seed):
    rng = np.random.default_rng(seed)
    start, end = _sorted(_laminar(rng, 60))
    thread = np.zeros(len(start), dtype=np.int64)
    assert _nest_laminar(start, end) is not None  # the fast path accepts it
    parent, depth = nest(thread, start, end)
    stack_parent, stack_depth = _nest_stack(start, end)
    assert parent.tolist() == stack_parent.tolist()
    assert depth.tolist() == stack_depth.tolist()
    assert parent.tolist() == _brute_force_parents(start.tolist(), end.tolist())


@pytest.mark.parametrize("seed", range(40))
def test_crossing_spans_fall_back_to_the_stack_walk(seed):
    rng = np.random.default_rng(100 + seed)
    starts = rng.integers(0, 1000, 50)
    spans = [(int(s), int(s + rng.integers(0, 300))) for s in starts]
    start, end = _sorted(spans)
    thread = np.repeat([0, 1], [25, 25])
    order = np.lexsort((-end, start, thread))
    start, end = start[order], end[order]
    thread = thread[order]
    parent, depth = nest(thread, start, end)
    for lo, hi in ((0, 25), (25, 50)):
        p, d = _nest_stack(start[lo:hi], end[lo:hi])
        assert parent[lo:hi].tolist() == [x + lo if x >= 0 else -1 for x in p.tolist()]
        assert depth[lo:hi].tolist() == d.tolist()


def test_identical_intervals_nest_in_order():
    start = np.array([0, 0, 0, 5], dtype=np.int64)
    end = np.array([10, 10, 10, 5], dtype=np.int64)
    parent, depth = nest(np.zeros(4, dtype=np.int64), start, end)
    assert parent.tolist() == [-1, 0, 1, 2]
    assert depth.tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize("batch", [1, 3, 17, 10_000])
def test_nesting_streamed_in_batches_matches_nesting_each_thread_whole(batch, monkeypatch):
    """nest_cpu_spans fetches the spans in batches and cuts them where nothing is open: any batch
    size gives what nest() gives on each whole thread (laminar and crossing threads, a NULL pid)."""
    import duckdb

    from xsp_trace import correlate

    rng = np.random.default_rng(7)
    rows = []
    for pid, tid, spans in [
        (1, 1, _laminar(rng, 80)),
        (1, 2, [(int(s), int(s + rng.integers(0, 300))) for s in rng.integers(0, 1000, 60)]),
        (None, 2, _laminar(rng, 30)),
        (-1, 2, _laminar(rng, 30)),
    ]:
        rows += [(pid, tid, s, e) for s, e in spans]
    con = duckdb.connect()
    con.execute(
        "CREATE TABLE spans (run_id INTEGER, span_id BIGINT, kind VARCHAR, pid BIGINT, tid BIGINT, start_ns BIGINT, end_ns BIGINT, parent_id BIGINT, depth INTEGER)"
    )
    con.executemany("INSERT INTO spans VALUES (1, ?, 'op', ?, ?, ?, ?, NULL, NULL)", [(i + 1, *r) for i, r in enumerate(rows)])
    monkeypatch.setattr(correlate, "NEST_BATCH_SPANS", batch)
    correlate.nest_cpu_spans(con, 1)
    got = con.execute("SELECT span_id, parent_id, depth FROM spans ORDER BY span_id").fetchall()

    expected = {}
    for group in _group_threads(rows).values():
        order = sorted(group, key=lambda r: (r[1], -r[2], r[0]))
        parent, depth = nest(np.zeros(len(order), dtype=np.int64), np.array([r[1] for r in order]), np.array([r[2] for r in order]))
        for k, (span_id, _, _) in enumerate(order):
            expected[span_id] = (order[parent[k]][0] if parent[k] >= 0 else None, int(depth[k]))
    assert got == [(i, *expected[i]) for i in sorted(expected)]
    assert any(p is not None for _, p, _ in got) and any(d >= 2 for _, _, d in got)


def _group_threads(rows):
    groups: dict = {}
    for i, (pid, tid, s, e) in enumerate(rows):
        groups.setdefault((pid, tid), []).append((i + 1, s, e))
    return groups
