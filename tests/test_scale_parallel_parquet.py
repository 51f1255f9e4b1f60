"""Many traces: a parallel convert and a Parquet dataset answer every query exactly like one
database converted sequentially -- and that database's kernel totals are nsys stats' own."""

from __future__ import annotations

import duckdb
import pytest
from typer.testing import CliRunner

from conftest import DATA, NSYS_EXPORTS, nsys_stats
from xsp_trace.analyze.session import AnalysisOptions, prepare, run_analysis
from xsp_trace.cli import app
from xsp_trace.convert import ConvertOptions, convert_files, convert_inputs
from xsp_trace.errors import InputError
from xsp_trace.resources import query_text
from xsp_trace.store.dataset import is_dataset
from xsp_trace.store.opening import open_store as connect

pytestmark = pytest.mark.slow  # Ray, worker processes and big inputs

INPUTS = [
    NSYS_EXPORTS["nsys_2026_pytorch_2xh100"],
    DATA / "kineto_cuda_sync_alexnet" / "hta_a100_alexnet.json.gz",
    NSYS_EXPORTS["nsys_2022_saxpy_mpi_a100"],
    DATA / "kineto_2021_format" / "hta_2021_format_inference.json.gz",
]
QUERIES = ["analyses/top_kernels", "analyses/nvtx_gpu_projection"]
ANALYSES = ["kernel_info", "gpu_busy_idle", "launch_queue_delay", "model_gpu_aggregates", "layer_gpu_aggregates"]


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("scale")
    sequential, parallel, dataset = folder / "seq.duckdb", folder / "par.duckdb", folder / "dataset"
    seq_runs = convert_files(INPUTS, sequential, ConvertOptions())
    par_runs = convert_inputs(INPUTS, parallel, ConvertOptions(), jobs=2)
    pq_runs = convert_inputs(INPUTS, dataset, ConvertOptions(), jobs=2, store="parquet")
    assert seq_runs == par_runs == pq_runs == [1, 2, 3, 4]
    return {"sequential": sequential, "parallel": parallel, "parquet": dataset}


def _rows(con: duckdb.DuckDBPyConnection, sql: str) -> list[tuple]:
    return sorted(con.execute(sql).fetchall(), key=repr)


def _tables(con: duckdb.DuckDBPyConnection) -> dict[str, list[str]]:
    catalog = con.execute("SELECT current_database()").fetchone()[0]
    rows = con.execute(
        "SELECT table_name, list(column_name ORDER BY column_index) FROM duckdb_columns() "
        "WHERE database_name = ? AND schema_name = 'main' GROUP BY table_name",
        [catalog],
    ).fetchall()
    return dict(rows)


@pytest.mark.parametrize("form", ["parallel", "parquet"])
def test_every_table_holds_the_same_rows(outputs, form):
    reference, other = connect(outputs["sequential"]), connect(outputs[form])
    tables = _tables(reference)
    assert _tables(other) == tables  # same tables, same columns in the same order
    for table, columns in tables.items():
        cols = ", ".join(f'"{c}"' for c in columns if c != "converted_at")
        expected = _rows(reference, f"SELECT {cols} FROM {table}")
        assert _rows(other, f"SELECT {cols} FROM {table}") == expected, table
    spans = reference.execute("SELECT count(*) FROM spans").fetchone()[0]
    assert spans > 20_000  # the comparison covered real traces, not empty tables


@pytest.mark.parametrize("form", ["parallel", "parquet"])
def test_queries_and_analyses_agree(outputs, form):
    reference, other = connect(outputs["sequential"]), connect(outputs[form])
    for name in QUERIES:
        sql = query_text(name)
        expected = _rows(reference, sql)
        assert expected, name
        assert _rows(other, sql) == expected, name
    prepare(reference, AnalysisOptions(), outputs["sequential"])
    prepare(other, AnalysisOptions(), outputs[form])
    for name in ANALYSES:
        expected = run_analysis(reference, name)
        got = run_analysis(other, name)
        assert got.columns == expected.columns, name
        assert sorted(got.rows, key=repr) == sorted(expected.rows, key=repr), name


def test_dataset_kernel_totals_are_nsys_stats_own(outputs, tmp_path):
    """Run 1 of the Parquet dataset is the H100 export: its kernel totals are gpukernsum's."""
    reference = nsys_stats(INPUTS[0], "gpukernsum", tmp_path)
    con = connect(outputs["parquet"])
    ours = {name: (instances, total) for run, name, instances, total, *rest in con.execute(query_text("analyses/top_kernels")).fetchall() if run == 1}
    theirs: dict[str, tuple[int, int]] = {}
    for r in reference:  # gpukernsum splits a name by launch configuration; add those up
        count, total = theirs.get(r["Name"], (0, 0))
        theirs[r["Name"]] = (count + int(r["Instances"]), total + int(r["Total Time (ns)"]))
    assert len(theirs) > 10
    assert {n: ours.get(n) for n in theirs} == theirs


def test_dataset_layout_is_hive_partitioned_by_run(outputs):
    folder = outputs["parquet"]
    assert is_dataset(folder)
    runs = sorted(p.name for p in (folder / "spans").iterdir())
    assert runs == ["run_id=1", "run_id=2", "run_id=3", "run_id=4"]
    # Any engine reading hive partitions sees the same rows (here: plain DuckDB, no xsp-trace view layer).
    plain = duckdb.connect()
    counts = plain.execute(
        f"SELECT run_id, count(*) FROM read_parquet('{folder}/spans/**/*.parquet', hive_partitioning = true) GROUP BY run_id ORDER BY run_id"
    ).fetchall()
    assert counts == connect(outputs["sequential"]).execute("SELECT run_id, count(*) FROM spans GROUP BY run_id ORDER BY run_id").fetchall()


def test_cli_convert_parquet_then_query(tmp_path):
    runner = CliRunner()
    out = tmp_path / "ds"
    result = runner.invoke(app, ["convert", str(INPUTS[1]), str(INPUTS[3]), "--format", "parquet", "-o", str(out), "-j", "2", "-q"])
    assert result.exit_code == 0, result.output
    assert "runs 1, 2" in result.output
    result = runner.invoke(app, ["query", str(out), "select run_id, count(*) as n from spans where kind = 'kernel' group by 1 order by 1", "--csv"])
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    assert lines[0] == "run_id,n" and [line.split(",")[0] for line in lines[1:]] == ["1", "2"]
    # Writing over it needs --overwrite; nothing is changed without it.
    before = sorted(p.relative_to(out) for p in out.rglob("*"))
    result = runner.invoke(app, ["convert", str(INPUTS[1]), "--format", "parquet", "-o", str(out), "-q"])
    assert result.exit_code == 2 and "already exists" in result.output
    assert sorted(p.relative_to(out) for p in out.rglob("*")) == before


def test_a_bad_input_in_a_worker_is_one_clear_error_and_writes_nothing(tmp_path):
    broken = tmp_path / "broken.json"
    broken.write_text('{"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1}]}')  # no dur
    out = tmp_path / "out.duckdb"
    with pytest.raises(InputError) as err:
        convert_inputs([INPUTS[1], broken], out, ConvertOptions(), jobs=2)
    assert "has no 'dur'" in str(err.value) and str(broken) in str(err.value)
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["broken.json"]  # no temp files or parts left
