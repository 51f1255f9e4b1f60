"""The SQL modules as modules (docs/design.md, "The SQL library"), checked by running them: a session
loads only the library modules the analyses it runs reach, and every analysis's header states its
output columns' types as DuckDB returns them. (The headers' static rules: test_sql_module_conventions.py.)
"""

from __future__ import annotations

from pathlib import Path

import pytest

from support.leveled import build
from xsp_trace.analyze.catalog import ANALYSES, BY_NAME
from xsp_trace.analyze.session import open_session, run_analysis
from xsp_trace.analyze.sql_library import LOADED_TABLE, declared_columns, module_names, reached
from xsp_trace.resources import query_text

QUERIES = Path(__file__).parent.parent / "queries"
ANALYSIS_FILES = sorted(QUERIES.glob("analyses/*.sql"))


def _name(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}"


@pytest.fixture(scope="module")
def leveled(tmp_path_factory):
    return build(tmp_path_factory.mktemp("modules") / "leveled.duckdb")


def _loaded(con) -> list[str]:
    return sorted(row[0] for row in con.execute(f"SELECT name FROM {LOADED_TABLE}").fetchall())


def test_a_session_loads_only_what_its_analyses_reach(leveled):
    con = open_session(leveled)
    try:
        assert con.execute(f"SELECT count(*) FROM duckdb_tables() WHERE table_name = '{LOADED_TABLE}'").fetchone() == (0,)
        assert con.execute("SELECT count(*) FROM duckdb_views() WHERE temporary AND view_name LIKE 'xsp\\_%' ESCAPE '\\'").fetchone() == (0,)
        run_analysis(con, "level_sources")
        assert _loaded(con) == ["lib/experiments"]
        run_analysis(con, "kernel_roofline")
        assert _loaded(con) == sorted({"lib/experiments", "lib/stats", "lib/layers", "lib/kernels", "lib/roofline"})
        assert "lib/nsys_stats" not in _loaded(con) and "lib/op_perf" not in _loaded(con)
    finally:
        con.close()


def test_every_module_is_reached_by_some_analysis_or_builder():
    reached_by_analyses = set(reached(_name(p) for p in ANALYSIS_FILES))
    # lib/sync and lib/gpu_work are read by the critical path's loader; lib/scope by --scope (analyze/scope.py).
    assert set(module_names()) - reached_by_analyses <= {"lib/scope"}


@pytest.fixture(scope="module")
def session(leveled):
    con = open_session(leveled)
    yield con
    con.close()


@pytest.mark.parametrize("analysis", [a.name for a in ANALYSES])
def test_declared_column_types_are_what_duckdb_returns(session, analysis):
    """Each analysis's `-- columns:` header lists its output columns in order with the types DuckDB gives them."""
    result = run_analysis(session, analysis)  # loads its modules and builds its tables
    returned = [(d[0], str(d[1])) for d in session.execute(query_text(BY_NAME[analysis].query)).description]
    assert [c for c, _ in declared_columns(BY_NAME[analysis].query)] == result.columns
    assert declared_columns(BY_NAME[analysis].query) == returned
