"""`convert --engine ray` on a local Ray cluster: four real traces, one Ray Data task each, give a
Parquet dataset whose every table equals a sequential convert of the same list; run ids follow the
input list (plus --run-id-offset); a retried task leaves what a single attempt leaves; and Ray Data
itself reads the dataset back with the kernel totals DuckDB sees."""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from test_scale_parallel_parquet import INPUTS, _rows, _tables
from xsp_trace.cli import app
from xsp_trace.convert import ConvertOptions, convert_files
from xsp_trace.convert.ray_engine import _convert_task
from xsp_trace.store.opening import open_store

pytestmark = pytest.mark.slow  # Ray, worker processes and big inputs

ray = pytest.importorskip("ray")
runner = CliRunner()


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def converted(local_ray, tmp_path_factory):
    folder = tmp_path_factory.mktemp("ray")
    sequential = folder / "seq.duckdb"
    assert convert_files(INPUTS, sequential, ConvertOptions()) == [1, 2, 3, 4]
    dataset = folder / "dataset"
    result = runner.invoke(app, ["convert", *map(str, INPUTS), "--engine", "ray", "-o", str(dataset), "-q"])
    assert result.exit_code == 0, result.output
    assert "(runs 1, 2, 3, 4)" in result.output
    return sequential, dataset


def test_ray_dataset_equals_a_sequential_convert(converted):
    sequential, dataset = converted
    reference, other = open_store(sequential), open_store(dataset)
    tables = _tables(reference)
    assert _tables(other) == tables
    for table, columns in tables.items():
        cols = ", ".join(f'"{c}"' for c in columns if c != "converted_at")
        assert _rows(other, f"SELECT {cols} FROM {table}") == _rows(reference, f"SELECT {cols} FROM {table}"), table
    assert reference.execute("SELECT count(*) FROM spans").fetchone()[0] > 20_000
    assert not [p for p in dataset.parent.iterdir() if p.name.startswith(".")]  # no staging left


def test_run_ids_follow_the_input_list_after_the_offset(local_ray, converted, tmp_path):
    sequential, _ = converted
    out = tmp_path / "offset"
    reversed_inputs = list(reversed(INPUTS))
    result = runner.invoke(app, ["convert", *map(str, reversed_inputs), "--engine", "ray", "-o", str(out), "--run-id-offset", "10", "-q"])
    assert result.exit_code == 0, result.output
    got = dict(open_store(out).execute("SELECT run_id, source_path FROM runs").fetchall())
    assert got == {11 + i: str(Path(p).resolve()) for i, p in enumerate(reversed_inputs)}
    # The same trace under another run id holds the same kernels.
    first = open_store(sequential).execute("SELECT count(*), sum(end_ns - start_ns) FROM spans WHERE kind = 'kernel' AND run_id = 4").fetchall()
    assert open_store(out).execute("SELECT count(*), sum(end_ns - start_ns) FROM spans WHERE kind = 'kernel' AND run_id = 11").fetchall() == first


def test_a_retried_task_leaves_what_one_attempt_leaves(tmp_path):
    row = {"index": 0, "path": str(INPUTS[1]), "part": str(tmp_path / "part000000")}
    first = _convert_task(row, ConvertOptions())
    files_once = sorted(str(p.relative_to(tmp_path)).split(".parquet")[0].rsplit("/", 1)[0] for p in tmp_path.rglob("*.parquet"))
    (tmp_path / "part000000" / "spans" / "run_id=1" / "half-written.parquet").write_bytes(b"PAR1")  # a crashed attempt
    again = _convert_task(row, ConvertOptions())
    files_twice = sorted(str(p.relative_to(tmp_path)).split(".parquet")[0].rsplit("/", 1)[0] for p in tmp_path.rglob("*.parquet"))
    assert first == again == {"index": 0, "runs": [1], "error": ""}
    assert files_twice == files_once


def test_bad_input_fails_the_job_with_one_line(local_ray, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"traceEvents": [{"ph": "X", "ts": "soon"')
    out = tmp_path / "out"
    result = runner.invoke(app, ["convert", str(INPUTS[1]), str(bad), "--engine", "ray", "-o", str(out), "-q"])
    assert result.exit_code == 2, result.output
    assert "bad.json" in result.output and "Traceback" not in result.output
    assert not out.exists() and os.listdir(tmp_path) == ["bad.json"]


def test_ray_data_reads_the_dataset(converted):
    """The query side with Ray itself: kernel count and time per run from ray.data equal DuckDB's."""
    _, dataset = converted
    spans = ray.data.read_parquet(str(dataset / "spans"))  # hive partitions (run_id=N) by default
    frame = spans.select_columns(["run_id", "kind", "start_ns", "end_ns"]).to_pandas()
    kernels = frame[frame["kind"] == "kernel"].copy()
    kernels["dur"] = kernels["end_ns"] - kernels["start_ns"]
    by_run = kernels.groupby(kernels["run_id"].astype(int))["dur"].agg(["count", "sum"])
    from_ray = {int(r): (int(c), int(s)) for r, (c, s) in by_run.iterrows()}
    from_duckdb = {
        r: (c, int(s))
        for r, c, s in duckdb.sql(
            f"SELECT run_id, count(*), sum(end_ns - start_ns) FROM read_parquet('{dataset}/spans/*/*.parquet', "
            "hive_partitioning = true) WHERE kind = 'kernel' GROUP BY run_id"
        ).fetchall()
    }
    assert from_ray == from_duckdb and len(from_ray) == 4
