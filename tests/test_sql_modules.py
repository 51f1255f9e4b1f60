"""The SQL modules as modules (docs/design.md, "The SQL library"): every analysis declares in its
header what it includes, its title and group and its output columns' types; a session loads only
the library modules the analyses it runs reach; a `_xsp_` name is private to the module that makes it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from support.leveled import build
from xsp_trace.analyze import open_session, run_analysis
from xsp_trace.analyze.catalog import ANALYSES, BY_NAME
from xsp_trace.resources import query_text
from xsp_trace.sqllib import LOADED_TABLE, declared_columns, header_fields, includes, load_order, module_names, reached

QUERIES = Path(__file__).parent.parent / "queries"
ANALYSIS_FILES = sorted(QUERIES.glob("analyses/*.sql"))
LIBRARY_FILES = sorted(QUERIES.glob("lib/*.sql"))
CREATES = re.compile(r"CREATE\s+OR\s+REPLACE\s+TEMP\s+(?:VIEW|TABLE|MACRO)\s+(\w+)", re.IGNORECASE)


def _code(sql: str) -> str:
    """The SQL without string literals and comments."""
    return re.sub(r"'(?:[^']|'')*'|--[^\n]*", " ", sql)


def _name(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}"


def _owners() -> dict[str, str]:
    return {made: _name(p) for p in LIBRARY_FILES for made in CREATES.findall(_code(p.read_text()))}


@pytest.mark.parametrize("path", ANALYSIS_FILES, ids=_name)
def test_every_analysis_includes_what_it_uses(path):
    fields = header_fields(_name(path))
    assert "include" in fields, f"{path.name}: needs a '-- include: lib/a, lib/b' header line (empty when it includes none)"
    reachable = set(load_order(includes(_name(path))))
    owner = _owners()
    used = {owner[w] for w in set(re.findall(r"\b(_?xsp_\w+)\b", _code(path.read_text()))) if w in owner}
    assert used <= reachable, f"{path.name} uses names of {sorted(used - reachable)} without including them"


@pytest.mark.parametrize("path", [*ANALYSIS_FILES, *LIBRARY_FILES], ids=_name)
def test_private_names_stay_in_their_module(path):
    """A `_xsp_` name is used only in the module that creates it: what others read is public (xsp_)."""
    code = _code(path.read_text())
    own = set(CREATES.findall(code))
    borrowed = sorted(set(re.findall(r"\b(_xsp_\w+)\b", code)) - own)
    assert borrowed == [], f"{_name(path)} uses private names made elsewhere: {borrowed} (make them public, xsp_...)"


def test_private_name_check_catches_a_borrowed_name(tmp_path):
    borrowed = tmp_path / "analyses" / "borrowing.sql"
    borrowed.parent.mkdir()
    borrowed.write_text("-- analyses/borrowing: reads a private view.\n-- include: lib/experiments\nSELECT * FROM _xsp_level_preference\n")
    with pytest.raises(AssertionError, match="_xsp_level_preference"):
        test_private_names_stay_in_their_module(borrowed)


def test_every_analysis_file_is_in_the_catalog_with_its_header_title_and_group():
    in_catalog = {a.name for a in ANALYSES}
    # Read by `xsp-trace diff` and by capture checks, not printed by analyze: no title or group.
    outside = {"diff_totals", "diff_steps", "diff_on_path", "capture_level_overhead"}
    assert {p.stem for p in ANALYSIS_FILES} == in_catalog | outside
    kernel_info = BY_NAME["kernel_info"]
    assert (kernel_info.title, kernel_info.group, kernel_info.builds) == ("Kernel information", "kernel", ())
    assert BY_NAME["what_if"].builds == ("xsp_what_if",)
    assert {a.group for a in ANALYSES} == {"model", "layer", "kernel", "gpu", "rules", "comm", "summary", "compare"}


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
