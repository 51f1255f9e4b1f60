"""What the memory-operation summaries rely on (analyses/cuda_gpu_mem_time_sum.sql and
cuda_gpu_mem_size_sum.sql read memops alone): every converter writes exactly one memops row per
memcpy / memset span, memops rows for nothing else, and each row's kind and duration_ns are its
span's."""

from __future__ import annotations

import pytest

from conftest import NSYS_EXPORTS
from kineto_cases import KINETO_TRACES

pytestmark = pytest.mark.slow  # real traces

CASES = {**NSYS_EXPORTS, **KINETO_TRACES}


@pytest.mark.parametrize("case", sorted(CASES))
def test_one_memops_row_per_memory_operation_span(case, converted):
    con = converted(CASES[case])
    spans_without_row = con.execute(
        """SELECT count(*) FROM spans s
           WHERE s.kind IN ('memcpy', 'memset')
             AND NOT EXISTS (SELECT 1 FROM memops m WHERE m.run_id = s.run_id AND m.span_id = s.span_id)"""
    ).fetchone()[0]
    rows_of_other_spans = con.execute(
        """SELECT count(*) FROM memops m LEFT JOIN spans s ON s.run_id = m.run_id AND s.span_id = m.span_id
           WHERE s.kind IS NULL OR s.kind NOT IN ('memcpy', 'memset')"""
    ).fetchone()[0]
    duplicates = con.execute("SELECT count(*) - count(DISTINCT (run_id, span_id)) FROM memops").fetchone()[0]
    copies_unlike_the_span = con.execute(
        """SELECT count(*) FROM memops m JOIN spans s ON s.run_id = m.run_id AND s.span_id = m.span_id
           WHERE m.kind IS DISTINCT FROM s.kind OR m.duration_ns IS DISTINCT FROM s.end_ns - s.start_ns"""
    ).fetchone()[0]
    assert (spans_without_row, rows_of_other_spans, duplicates, copies_unlike_the_span) == (0, 0, 0, 0)


def test_the_memory_fixtures_have_memory_operations(converted):
    """The check above is not vacuous: the fixtures hold thousands of copies and sets."""
    total = sum(converted(path).execute("SELECT count(*) FROM memops").fetchone()[0] for path in CASES.values())
    assert total > 5_000
