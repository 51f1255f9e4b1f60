"""span_ancestors, built level by level (xsp_trace.convert.correlate.build_ancestors), against the
transitive closure of parent_id computed here independently: a recursive query that follows
parent pointers and knows nothing of depths or levels."""

from __future__ import annotations

from contextlib import closing
from pathlib import Path

import duckdb
import pytest

from conftest import NSYS_EXPORTS
from kineto_cases import KINETO_TRACES
from support.handmade import Run, write

CLOSURE = """
WITH RECURSIVE up(run_id, span_id, ancestor_id, distance) AS (
    SELECT run_id, span_id, parent_id, 1 FROM spans WHERE parent_id IS NOT NULL
    UNION ALL
    SELECT up.run_id, up.span_id, p.parent_id, up.distance + 1
    FROM up JOIN spans AS p ON p.run_id = up.run_id AND p.span_id = up.ancestor_id
    WHERE p.parent_id IS NOT NULL
)
SELECT run_id, span_id, ancestor_id, distance FROM up
"""


def _differences(con) -> tuple[int, int, int]:
    """(rows only in span_ancestors, rows only in the closure, closure size)."""
    extra = con.execute(
        f"SELECT count(*) FROM (SELECT run_id, span_id, ancestor_id, distance FROM span_ancestors EXCEPT ALL ({CLOSURE}))"
    ).fetchone()[0]
    missing = con.execute(
        f"SELECT count(*) FROM (({CLOSURE}) EXCEPT ALL SELECT run_id, span_id, ancestor_id, distance FROM span_ancestors)"
    ).fetchone()[0]
    size = con.execute(f"SELECT count(*) FROM ({CLOSURE})").fetchone()[0]
    return extra, missing, size


CASES = {**NSYS_EXPORTS, **KINETO_TRACES}


@pytest.mark.parametrize("case", sorted(CASES))
def test_span_ancestors_are_the_closure_of_parent_id(case, converted):
    con = converted(CASES[case])
    extra, missing, size = _differences(con)
    assert (extra, missing) == (0, 0)
    assert size >= con.execute("SELECT count(*) FROM spans WHERE parent_id IS NOT NULL").fetchone()[0]
    # What the levels rely on: a parent is exactly one level up.
    assert (
        con.execute(
            "SELECT count(*) FROM spans c JOIN spans p ON p.run_id = c.run_id AND p.span_id = c.parent_id WHERE c.depth <> p.depth + 1"
        ).fetchone()[0]
        == 0
    )


def test_launch_call_without_a_thread_keeps_its_kernels_ancestors(tmp_path):
    """A launching API call with no thread is never nested (depth 0 afterwards); its kernel still
    gets it as parent, one level down, and span_ancestors still holds the (kernel, call) pair --
    next to a threaded launch inside a range, whose kernel reaches the call and the range."""
    run = Run(1)
    step = run.span("op", "ProfilerStep#0", 0, 1_000)
    threaded = run.gpu("kernel", "k_threaded", (100, 200), (300, 400))
    threadless = run.gpu("kernel", "k_threadless", (500, 600), (700, 800), tid=None)
    with closing(duckdb.connect(str(write(tmp_path / "t.duckdb", [run])), read_only=True)) as con:
        depths = dict(con.execute("SELECT span_id, depth FROM spans").fetchall())
        assert (depths[threadless], depths[threadless - 1]) == (1, 0)
        assert (depths[threaded], depths[threaded - 1], depths[step]) == (2, 1, 0)
        assert sorted(con.execute("SELECT span_id, ancestor_id, distance FROM span_ancestors").fetchall()) == [
            (threaded - 1, step, 1),
            (threaded, step, 2),
            (threaded, threaded - 1, 1),
            (threadless, threadless - 1, 1),
        ]
        assert _differences(con)[:2] == (0, 0)


def test_closure_reference_catches_a_missing_row(converted):
    """The comparison above can fail: leave one row out and it is seen."""
    con = converted(Path(NSYS_EXPORTS["nsys_2026_mock_rtx3080"]))
    span_id, ancestor_id = con.execute("SELECT span_id, ancestor_id FROM span_ancestors ORDER BY distance DESC, span_id LIMIT 1").fetchone()
    one_less = con.execute(
        f"""SELECT count(*) FROM (({CLOSURE}) EXCEPT ALL
            SELECT run_id, span_id, ancestor_id, distance FROM span_ancestors WHERE NOT (span_id = ? AND ancestor_id = ?))""",
        [span_id, ancestor_id],
    ).fetchone()[0]
    assert one_less == 1
