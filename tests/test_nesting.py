"""CPU nesting: the vectorised path must give exactly what the stack walk gives, on laminar
and crossing spans alike, including zero-length spans and identical intervals."""

from __future__ import annotations

import numpy as np
import pytest

from xsp_trace.convert.nesting import _nest_laminar, _nest_stack, nest


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

    from xsp_trace.convert import correlate

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


def _spans_table(rows):
    """An in-memory `spans` table of run 1 from (span_id, pid, tid, start, end) rows, kind 'op'."""
    import duckdb

    con = duckdb.connect()
    con.execute(
        "CREATE TABLE spans (run_id INTEGER, span_id BIGINT, kind VARCHAR, pid BIGINT, tid BIGINT, start_ns BIGINT, end_ns BIGINT, parent_id BIGINT, depth INTEGER)"
    )
    con.executemany("INSERT INTO spans VALUES (1, ?, 'op', ?, ?, ?, ?, NULL, NULL)", rows)
    return con


def test_a_span_open_since_the_first_window_is_the_parent_of_spans_in_the_third(monkeypatch):
    """Windows of 4 spans: thread 1's span 1 (0-1000) stays open over every window and is the parent
    of spans starting in the third; thread 2's span 20 (5-700) stays open too, while thread 3 (last
    in sort order) closes everything it opens, so each window ends with thread 3 complete."""
    from xsp_trace.convert import correlate

    rows = [
        (1, 1, 1, 0, 1000),
        (2, 1, 1, 10, 20),
        (3, 1, 1, 400, 450),
        (4, 1, 1, 410, 420),
        (5, 1, 1, 800, 810),
        (20, 1, 2, 5, 700),
        (21, 1, 2, 15, 16),
        (22, 1, 2, 405, 406),
        (23, 1, 2, 805, 900),
        (30, 1, 3, 1, 2),
        (31, 1, 3, 12, 13),
        (32, 1, 3, 30, 31),
        (33, 1, 3, 401, 402),
        (34, 1, 3, 420, 421),
        (35, 1, 3, 801, 802),
        (36, 1, 3, 820, 821),
    ]
    con = _spans_table(rows)
    monkeypatch.setattr(correlate, "NEST_BATCH_SPANS", 4)
    bounds = correlate._window_bounds(con, 1)
    window = {span_id: int(np.searchsorted(bounds, start, side="right")) for span_id, _, _, start, _ in rows}
    assert window[1] == 0 and window[5] >= 2 and window[22] >= 2  # the parents are two windows back or more
    correlate.nest_cpu_spans(con, 1)
    got = {span_id: (parent, depth) for span_id, parent, depth in con.execute("SELECT span_id, parent_id, depth FROM spans").fetchall()}
    assert got == {
        1: (None, 0),
        2: (1, 1),
        3: (1, 1),
        4: (3, 2),
        5: (1, 1),
        20: (None, 0),
        21: (20, 1),
        22: (20, 1),
        23: (None, 0),
        **{span_id: (None, 0) for span_id in range(30, 37)},
    }


def _real_fixture_cases():
    from conftest import NSYS_EXPORTS
    from kineto_cases import KINETO_TRACES

    cases = {**NSYS_EXPORTS, **KINETO_TRACES}
    # Several thousand CPU spans and more than one thread; rank3 and alexnet repeat start times; b200 has pid -1.
    names = ["nsys_2026_pytorch_2xh100", "nsys_2022_saxpy_mpi_a100", "kineto_2022_integer_us_rank3", "kineto_cuda_sync_alexnet"]
    names += ["kineto_relative_ts_b200", "kineto_rocm_mi250", "kineto_nccl_collectives"]
    return {name: cases[name] for name in names}


REAL_FIXTURES = _real_fixture_cases()
REPEATED_STARTS = {"kineto_2022_integer_us_rank3", "kineto_cuda_sync_alexnet"}  # spans of a thread starting at the same time


@pytest.mark.parametrize("crossing", [False, True], ids=["as_converted", "crossing_thread"])
@pytest.mark.parametrize("case", list(REAL_FIXTURES))
def test_nesting_in_small_windows_matches_one_window_on_real_traces(case, crossing, converted_path, tmp_path, monkeypatch):
    """Tiny windows give every CPU span of a converted trace the parent and depth one window gives.
    crossing_thread: every 13th span of the busiest thread made to end late, so it crosses the spans
    after it (the stack walk) and stays open over many windows."""
    import shutil

    import duckdb

    from xsp_trace.convert import correlate

    path = converted_path(REAL_FIXTURES[case])
    results = {}
    for label, batch in [("one window", 10**12), ("windows of 7", 7), ("windows of 50", 50), ("windows of 997", 997)]:
        copy = tmp_path / f"{batch}.duckdb"
        shutil.copyfile(path, copy)
        con = duckdb.connect(str(copy))
        count = con.execute("SELECT count(*) FROM spans WHERE run_id = 1 AND tid IS NOT NULL").fetchone()[0]
        if count / batch > 400:  # keep the test quick: the bigger traces with the bigger windows only
            con.close()
            continue
        if crossing:
            con.execute(
                """UPDATE spans SET end_ns = end_ns + 3 * (end_ns - start_ns) + 1000
                   WHERE run_id = 1 AND span_id % 13 = 0 AND (pid, tid) = (
                       SELECT (pid, tid) FROM spans WHERE run_id = 1 AND tid IS NOT NULL GROUP BY pid, tid ORDER BY count(*) DESC LIMIT 1)"""
            )
        con.execute("UPDATE spans SET parent_id = NULL, depth = NULL WHERE tid IS NOT NULL")
        monkeypatch.setattr(correlate, "NEST_BATCH_SPANS", batch)
        bounds = correlate._window_bounds(con, 1)
        if count > batch:
            assert len(bounds) >= 1
            # Bounds are start times of spans (quantile_disc): spans start exactly on a window bound.
            on_bounds = con.execute(
                "SELECT count(*) FROM spans WHERE run_id = 1 AND tid IS NOT NULL AND list_contains(?, start_ns)", [bounds]
            ).fetchone()[0]
            assert on_bounds >= len(bounds)
            if case in REPEATED_STARTS and batch == 50:
                assert on_bounds > len(bounds)  # spans with equal starts on a bound (never split between windows)
        correlate.nest_cpu_spans(con, 1)
        results[label] = con.execute("SELECT span_id, parent_id, depth FROM spans WHERE run_id = 1 AND tid IS NOT NULL ORDER BY span_id").fetchall()
        if crossing and label == "one window":
            threads = con.execute(
                f"""SELECT list(start_ns ORDER BY start_ns, end_ns DESC, {correlate._RANK_CASE}, span_id),
                           list(end_ns ORDER BY start_ns, end_ns DESC, {correlate._RANK_CASE}, span_id)
                    FROM spans WHERE run_id = 1 AND tid IS NOT NULL GROUP BY pid, tid"""
            ).fetchall()
            if count > 100:
                assert any(_nest_laminar(np.array(s), np.array(e)) is None for s, e in threads)  # the stack walk runs
        con.close()
    one = results.pop("one window")
    assert all(depth is not None for _, _, depth in one) and any(parent is not None for _, parent, _ in one)
    assert results  # at least one windowed run
    for label, got in results.items():
        assert got == one, label


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("far_apart", [False, True])
def test_many_threads_in_one_pass_match_each_thread_alone(seed, far_apart):
    """nest() nests all threads at once; each thread must get what the stack walk gives it alone,
    laminar threads and crossing ones mixed, also with times so far apart that shifting threads
    past each other would not fit in int64 (then ranks are used)."""
    rng = np.random.default_rng(1000 + seed)
    threads, starts, ends = [], [], []
    for t in range(300):
        if rng.random() < 0.2:
            spans = [(int(s), int(s + rng.integers(0, 300))) for s in rng.integers(0, 1000, int(rng.integers(1, 12)))]
        else:
            spans = _laminar(rng, int(rng.integers(1, 12)))
        if far_apart:  # a thread's spans at both ends of the time range
            spans = [(a + o, b + o) for a, b in spans for o in [int(rng.choice([-(2**62) + 10**6, 0, 2**62 - 10**6]))]]
        s, e = _sorted(spans)
        threads += [t] * len(s)
        starts.append(s)
        ends.append(e)
    thread, start, end = np.array(threads), np.concatenate(starts), np.concatenate(ends)
    parent, depth = nest(thread, start, end)
    lo = 0
    for s in starts:
        hi = lo + len(s)
        p, d = _nest_stack(start[lo:hi], end[lo:hi])
        assert parent[lo:hi].tolist() == [x + lo if x >= 0 else -1 for x in p.tolist()]
        assert depth[lo:hi].tolist() == d.tolist()
        lo = hi
