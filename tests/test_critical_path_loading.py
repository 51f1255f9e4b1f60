"""How the critical path reads a run (xsp_trace/analyze/critical_path/run.py): the columns it loads
against a plain DuckDB query over spans and xsp_gpu_work, and the call stacks it flattens in numpy
against the span-by-span replay of the same stack."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from xsp_trace.analyze.critical_path.run import _flatten_loop, _flatten_nested, load_run
from xsp_trace.analyze.session import AnalysisOptions

DATA = Path(__file__).parent / "data"
TRACES = [
    DATA / "kineto_2024_ns_resolution" / "hta_v100_ns_resolution_2024.json.gz",
    DATA / "kineto_nccl_collectives" / "hta_a100_nccl_allreduce.json.gz",
]


def _prepared(converted, trace):
    from xsp_trace.analyze.session import prepare

    con = converted(trace)
    prepare(con, AnalysisOptions())
    return con


@pytest.mark.parametrize("trace", TRACES, ids=lambda p: p.parent.name)
def test_loaded_rows_are_the_spans_a_plain_query_orders(trace, converted):
    """Rows, their time order and their kind and work class, as one SQL query over the view gives them."""
    con = _prepared(converted, trace)
    run = load_run(con, 1)
    expected = con.execute(
        """
        SELECT s.span_id, s.kind, coalesce(g.work_class, ''),
               -- the thread of a CPU span, the stream of GPU work (-1 for the other)
               CASE WHEN g.span_id IS NULL THEN coalesce(s.pid, -1) ELSE -1 END, CASE WHEN g.span_id IS NULL THEN s.tid ELSE -1 END,
               CASE WHEN g.span_id IS NULL THEN -1 ELSE coalesce(s.device_id, -1) END, CASE WHEN g.span_id IS NULL THEN -1 ELSE coalesce(s.stream_id, -1) END
        FROM spans AS s LEFT JOIN xsp_gpu_work AS g ON g.run_id = s.run_id AND g.span_id = s.span_id
        WHERE s.run_id = 1 AND s.end_ns >= s.start_ns
          AND (g.span_id IS NOT NULL OR (s.tid IS NOT NULL AND s.stream_id IS NULL AND s.kind NOT IN ('model', 'marker')))
        ORDER BY s.start_ns, s.end_ns DESC, coalesce(s.depth, 0), s.span_id
        """
    ).fetchall()
    spans = run.spans
    got = list(
        zip(
            spans["span_id"].tolist(),
            [spans["kind"][i] for i in range(len(expected))],
            [spans["work_class"][i] for i in range(len(expected))],
            spans["pid"].tolist(),
            spans["tid"].tolist(),
            spans["device_id"].tolist(),
            spans["stream_id"].tolist(),
            strict=True,
        )
    )
    assert got == expected
    assert "communication" in {r[2] for r in expected} or "nccl" not in trace.name
    communication = np.flatnonzero(spans["work_class"] == "communication").tolist()
    assert communication == [i for i, r in enumerate(expected) if r[2] == "communication"]


def _segments(flat) -> list[tuple[int, int, int]]:
    return list(zip(*(np.asarray(part).tolist() for part in flat), strict=True))


@pytest.mark.parametrize("trace", TRACES, ids=lambda p: p.parent.name)
def test_numpy_flattening_replays_the_call_stack(trace, converted):
    """Every thread of a real trace: the same elementary segments and owners as the replay."""
    run = load_run(_prepared(converted, trace), 1)
    for rows in run.threads.values():
        start, end = run.spans["start_ns"][rows], run.spans["end_ns"][rows]
        nested = _flatten_nested(start, end, rows)
        assert nested is not None
        assert _segments(nested) == _segments(_flatten_loop(start.tolist(), end.tolist(), rows.tolist()))


@pytest.mark.parametrize(
    "spans",
    [
        [(5, 5), (9, 9)],  # only empty spans: idle between them
        [(0, 0), (0, 10), (0, 4), (4, 4), (4, 10), (10, 10)],  # empty spans at a span's start, between children, at its end
        [(0, 10), (0, 10), (2, 3), (3, 3), (12, 20), (20, 20), (25, 30)],  # equal spans nest, gaps are idle
        [(0, 10), (2, 12), (3, 4)],  # an overlap: not a call stack
    ],
)
def test_numpy_flattening_of_hand_made_stacks(spans):
    order = sorted(range(len(spans)), key=lambda i: (spans[i][0], -spans[i][1], i))
    start = np.array([spans[i][0] for i in order], dtype=np.int64)
    end = np.array([spans[i][1] for i in order], dtype=np.int64)
    rows = np.array(order, dtype=np.int64) + 100
    nested = _flatten_nested(start, end, rows)
    replayed = _segments(_flatten_loop(start.tolist(), end.tolist(), rows.tolist()))
    if spans[1] == (2, 12):
        assert nested is None
    else:
        assert nested is not None and _segments(nested) == replayed
    if spans[0] == (5, 5):
        assert replayed == [(5, 9, -1)]
