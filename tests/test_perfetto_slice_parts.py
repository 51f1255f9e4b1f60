"""queries/perfetto/slice_parts.sql cuts each run's spans into parts of about part_rows by start
time: tiny runs whose parts are known by hand -- a short run (BIGINT buckets) and runs longer than
2^47 ns (HUGEINT buckets), far from zero or not."""

from __future__ import annotations

import duckdb
import pytest

from xsp_trace.perfetto.export import PerfettoOptions, _select, slice_parts
from xsp_trace.store.database import create_schema, insert_run

STEP_LONG = 1 << 50  # 8 spans this far apart: a run of 7 * 2^50 ns, past BIGINT buckets


def _parts(starts_by_run: dict[int, list[int]], part_rows: int) -> dict[int, list[list[int]]]:
    """The start times of each part's spans, per run, as slice_parts cuts them."""
    con = duckdb.connect()
    create_schema(con)
    for run_id, starts in starts_by_run.items():
        insert_run(con, run_id, source_kind="nsys")
        for span_id, start in enumerate(starts):
            con.execute(
                "INSERT INTO spans (run_id, span_id, kind, name, start_ns, end_ns, pid, tid) VALUES (?, ?, 'api', 'x', ?, ?, 1, 1)",
                [run_id, span_id, start, start + 5],
            )
        con.execute("UPDATE runs SET origin_ns = ? WHERE run_id = ?", [min(starts), run_id])
    _select(con, PerfettoOptions())
    parts: dict[int, list[list[int]]] = {}
    bounds = slice_parts(con, PerfettoOptions(part_rows=part_rows))
    for run_id, first, last in bounds:
        starts = [
            r[0]
            for r in con.execute(
                "SELECT start_ns FROM perfetto_spans WHERE run_id = ? AND start_ns BETWEEN ? AND ? ORDER BY 1", [run_id, first, last]
            ).fetchall()
        ]
        parts.setdefault(run_id, []).append(starts)
    # the parts of a run follow each other without gap or overlap, from the smallest BIGINT to the largest
    for run_id in parts:
        runs = [(f, z) for r, f, z in bounds if r == run_id]
        assert runs[0][0] == -(1 << 63) and runs[-1][1] == (1 << 63) - 1
        assert all(z + 1 == f for (_, z), (f, _) in zip(runs[:-1], runs[1:], strict=True))
    return parts


@pytest.mark.parametrize(
    "starts",
    [
        [0, 10, 20, 30, 40, 50, 60, 70],  # short: the BIGINT buckets
        [i * STEP_LONG for i in range(8)],  # 7 * 2^50 ns long: HUGEINT buckets
        [(1 << 62) + i * STEP_LONG for i in range(8)],  # long and far from zero
    ],
    ids=["short-run", "run-past-2^47-ns", "long-run-far-from-zero"],
)
def test_eight_spans_in_parts_of_two(starts):
    assert _parts({1: starts}, part_rows=2) == {1: [starts[0:2], starts[2:4], starts[4:6], starts[6:8]]}


def test_each_run_is_cut_on_its_own():
    short, long = [0, 10, 20, 30], [i * STEP_LONG for i in range(6)]
    assert _parts({1: short, 2: long}, part_rows=3) == {1: [short[0:2], short[2:4]], 2: [long[0:3], long[3:6]]}


def test_one_part_when_the_run_fits():
    assert _parts({1: [5, 6, 7]}, part_rows=10) == {1: [[5, 6, 7]]}
