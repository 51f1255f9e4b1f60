"""`convert NSYS KINETO --one-execution`: one execution recorded by nsys and torch.profiler at once.

The reference is the two raw traces (tests/data/nsys_2022_torch_one_execution_tiny_cnn): nsys's
NVTX_EVENTS on its UTC session clock, the Kineto annotations on baseTimeNanoseconds, each read
here with sqlite3 and json, not through the converters.
"""

from __future__ import annotations

import gzip
import json
import sqlite3
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from xsp_trace.cli import app

DATA = Path(__file__).parent / "data"
CASE = DATA / "nsys_2022_torch_one_execution_tiny_cnn"
NSYS = CASE / "tiny_cnn_nsys.sqlite"
KINETO = CASE / "tiny_cnn_kineto.json.gz"
OTHER_EXECUTION = DATA / "kineto_cpu_tiny_cnn_30_vs_50_calls" / "tiny_cnn_30_inferences.json.gz"
# The two records of one layer range agree on UTC within this (measured: 54 us at most, the first
# model range; docs/two_profilers.md).
COINCIDE_NS = 60_000


def _nsys_ranges() -> list[tuple[str, int, int]]:
    """(name, UTC start, UTC end) of the xsp NVTX ranges, from the raw export."""
    with sqlite3.connect(NSYS) as db:
        (origin,) = db.execute("SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME").fetchone()
        rows = db.execute(
            "SELECT coalesce(e.text, s.value), e.start, e.end FROM NVTX_EVENTS e LEFT JOIN StringIds s ON s.id = e.textId WHERE e.end IS NOT NULL"
        ).fetchall()
    return sorted((n, origin + s, origin + e) for n, s, e in rows if n and n.startswith("xsp."))


def _kineto_ranges() -> list[tuple[str, int, int]]:
    """(name, UTC start, UTC end) of the xsp annotations, from the raw Kineto JSON."""
    trace = json.loads(gzip.decompress(KINETO.read_bytes()))
    base = trace["baseTimeNanoseconds"]
    events = [e for e in trace["traceEvents"] if e.get("ph") == "X" and e.get("name", "").startswith("xsp.")]
    return sorted((e["name"], base + round(e["ts"] * 1000), base + round((e["ts"] + e["dur"]) * 1000)) for e in events)


@pytest.fixture(scope="module")
def merged(tmp_path_factory):
    out = tmp_path_factory.mktemp("merged") / "merged.duckdb"
    result = CliRunner().invoke(app, ["convert", str(NSYS), str(KINETO), "--one-execution", "-o", str(out), "-q"])
    assert result.exit_code == 0, result.output
    con = duckdb.connect(str(out), read_only=True)
    yield con
    con.close()


def test_one_run_with_its_alignment(merged):
    assert merged.execute("SELECT count(*) FROM runs").fetchone() == (1,)
    paired, spread, tolerance = merged.execute("SELECT paired_spans, spread_ns, tolerance_ns FROM one_execution_alignments").fetchone()
    assert paired == len(_kineto_ranges()) == 80
    assert 0 < spread < tolerance


def test_layer_ranges_of_both_sources_coincide(merged):
    """Each merged model/layer span is where both raw traces put it in UTC, within COINCIDE_NS."""
    nsys, kineto = _nsys_ranges(), _kineto_ranges()
    assert [n for n, _, _ in nsys] == [n for n, _, _ in kineto]
    for (name, ns, ne), (_, ks, ke) in zip(nsys, kineto, strict=True):
        assert abs((ns + ne) / 2 - (ks + ke) / 2) < COINCIDE_NS, name
    origin = merged.execute("SELECT clock_origin_utc_ns FROM runs").fetchone()[0]
    rows = merged.execute(
        "SELECT name, start_ns + ?, end_ns + ? FROM spans WHERE kind IN ('model', 'layer') ORDER BY name, start_ns", [origin, origin]
    ).fetchall()
    assert sorted(rows) == nsys  # each range once: the nsys row, on the nsys clock


def test_no_span_doubled(merged, tmp_path):
    """Layer ranges: as many as one source recorded; every span of either source, converted alone, once."""
    layers = merged.execute("SELECT count(*) FROM spans WHERE kind = 'layer'").fetchone()[0]
    assert layers == sum(1 for n, _, _ in _kineto_ranges() if n.startswith("xsp.layer:")) == 70
    apart = tmp_path / "apart.duckdb"
    assert CliRunner().invoke(app, ["convert", str(NSYS), str(KINETO), "-o", str(apart), "-q"]).exit_code == 0
    with duckdb.connect(str(apart), read_only=True) as con:
        alone = dict(con.execute("SELECT kind || '/' || r.source_kind, count(*) FROM spans JOIN runs r USING (run_id) GROUP BY ALL").fetchall())
    merged_kinds = dict(
        merged.execute("SELECT kind || '/' || source, count(*) FROM spans JOIN span_sources USING (run_id, span_id) GROUP BY ALL").fetchall()
    )
    assert alone["model/nsys"] == alone["model/kineto"] == 10
    assert alone["layer/nsys"] == alone["layer/kineto"] == 70
    both = {"model/both": 10, "layer/both": 70}
    assert merged_kinds == {**both, "op/kineto": alone["op/kineto"], "other/nsys": alone["other/nsys"]}
    assert merged.execute("SELECT count(*) FROM spans").fetchone()[0] == sum(alone.values()) - 80
    latency = merged.execute("SELECT layer_name, samples FROM xsp.layer_latency").fetchall()
    assert len(latency) == len({name for name, _ in latency}) == 7  # one row per layer
    assert {samples for _, samples in latency} == {10}  # 10 inferences, counted once


def test_torch_ops_nest_under_the_nsys_layer_ranges(merged):
    """One stack per thread: each aten op of the torch trace sits inside a layer or model range kept from nsys."""
    rows = merged.execute(
        """SELECT count(*), count(*) FILTER (a.span_id IS NOT NULL)
           FROM spans AS o LEFT JOIN (SELECT sa.span_id FROM span_ancestors sa JOIN spans p ON p.run_id = sa.run_id AND p.span_id = sa.ancestor_id
                                      JOIN span_sources src ON src.run_id = p.run_id AND src.span_id = p.span_id
                                      WHERE src.source = 'both' AND p.kind = 'model') AS a USING (span_id)
           WHERE o.kind = 'op'"""
    ).fetchone()
    assert rows[0] == rows[1] == 1160
    args = merged.execute(
        "SELECT count(DISTINCT a.span_id) FROM span_args a JOIN span_sources s USING (run_id, span_id) WHERE s.source = 'both'"
    ).fetchone()[0]
    assert args == 80  # the Kineto annotation's args kept on the merged span


def test_two_executions_are_refused(tmp_path):
    result = CliRunner().invoke(app, ["convert", str(NSYS), str(OTHER_EXECUTION), "--one-execution", "-o", str(tmp_path / "x.duckdb")])
    assert result.exit_code == 2
    assert "not one execution" in result.output or "holds no range" in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert not (tmp_path / "x.duckdb").exists()


@pytest.mark.parametrize("inputs", [[NSYS], [KINETO, NSYS], [NSYS, KINETO, KINETO]])
def test_bad_combinations_are_one_line(tmp_path, inputs):
    result = CliRunner().invoke(app, ["convert", *map(str, inputs), "--one-execution", "-o", str(tmp_path / "x.duckdb")])
    assert result.exit_code == 2, result.output
    assert len(result.output.strip().splitlines()) == 1


def _edited_kineto(tmp_path: Path, edit) -> Path:
    trace = json.loads(gzip.decompress(KINETO.read_bytes()))
    edit(trace)
    path = tmp_path / "edited.json.gz"
    path.write_bytes(gzip.compress(json.dumps(trace).encode()))
    return path


def _one_layer_late(trace: dict) -> None:
    """An injected cause: one conv layer annotation 50 us later, past the end of its NVTX range."""
    layer = next(e for e in trace["traceEvents"] if e.get("name", "").startswith("xsp.layer:0:"))
    layer["ts"] += 50


def _clock_100_ms_off(trace: dict) -> None:
    """An injected cause: the recorded absolute time 100 ms off, so no annotation lies near its NVTX range."""
    trace["baseTimeNanoseconds"] += 100_000_000


@pytest.mark.parametrize(
    ("edit", "says"), [(_one_layer_late, "no single clock offset"), (_clock_100_ms_off, "no NVTX range of that name of their own around them")]
)
def test_ranges_that_do_not_match_are_refused(tmp_path, edit, says):
    edited = _edited_kineto(tmp_path, edit)
    result = CliRunner().invoke(app, ["convert", str(NSYS), str(edited), "--one-execution", "-o", str(tmp_path / "x.duckdb")])
    assert result.exit_code == 2, result.output
    assert says in result.output and "not one execution" in result.output
    assert len(result.output.strip().splitlines()) == 1
