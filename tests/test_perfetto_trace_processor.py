"""The Perfetto export, read back by Perfetto's own trace processor (the wasm build of the UI).

Each trace is compared with the DuckDB database it was written from: slices per kind, flows,
tracks, counters, times, nesting depth, and the trace processor's own error counters.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import duckdb
import pytest
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from perfetto_harness import handmade_db
from perfetto_harness.checks import (
    assert_cpu_nesting,
    assert_trace_matches_database,
    cpu_slices_tp,
    cpu_spans_db,
    db_origins,
)
from perfetto_harness.trace_processor import WasmTraceProcessor
from xsp_trace.perfetto import PerfettoOptions, export_perfetto

pytestmark = pytest.mark.slow  # the browser and Perfetto's trace processor

DATA = Path(__file__).parent / "data"
NSYS_FIXTURE = DATA / "nsys_2026_pytorch_2xh100" / "nsysai_h100_2gpu_1s_nsys2026.2.sqlite"
KINETO_FIXTURE = DATA / "kineto_cuda_sync_alexnet" / "hta_a100_alexnet.json.gz"


@pytest.fixture(scope="module")
def handmade(tmp_path_factory):
    folder = tmp_path_factory.mktemp("handmade")
    database = handmade_db.build(folder / "handmade.duckdb")
    trace = folder / "handmade.pftrace"
    stats = export_perfetto(database, trace)
    con = duckdb.connect(str(database), read_only=True)
    with WasmTraceProcessor(trace) as tp:
        yield database, trace, stats, con, tp
    con.close()


def test_handmade_trace_matches_database(handmade):
    database, trace, stats, con, tp = handmade
    assert_trace_matches_database(tp, con)
    assert stats.slices == con.execute("SELECT count(*) FROM spans").fetchone()[0]


def test_cpu_nesting_depths_match_database(handmade):
    """Every CPU span sits on its thread track at its database depth -- except the range that
    crosses another one on its thread, which goes on a lane track at depth 0."""
    _, _, _, con, tp = handmade
    expected = cpu_spans_db(con)
    crossing = [k for k in expected if k[0] == "crossing"]
    assert len(crossing) == 1
    del expected[crossing[0]]
    assert cpu_slices_tp(tp) == expected
    assert assert_cpu_nesting(tp, con) == 1
    lane = tp.query("SELECT t.name AS track, s.depth, s.ts, s.dur FROM slice s JOIN track t ON s.track_id = t.id WHERE s.name = 'crossing'")
    assert lane == [{"track": "loader 101 · overlapping ranges 1", "depth": 0, "ts": 14_000, "dur": 10_000}]


def test_known_layer_nesting(handmade):
    """model > layer > op > API: the Conv2d layer at depth 1 under the model, its op at 2, its launch at 3."""
    _, _, _, con, tp = handmade
    rows = tp.query(
        "SELECT s.name, s.depth, p.name AS parent FROM slice s LEFT JOIN slice p ON s.parent_id = p.id "
        "WHERE s.name IN ('xsp.layer:0:features.0:Conv2d', 'aten::conv2d') OR (s.name = 'cudaLaunchKernel' AND s.ts = 3000) "
        "ORDER BY s.depth"
    )
    db_depths = dict(
        con.execute("SELECT name, depth FROM spans WHERE run_id = 1 AND name IN ('xsp.layer:0:features.0:Conv2d', 'aten::conv2d')").fetchall()
    )
    assert rows == [
        {"name": "xsp.layer:0:features.0:Conv2d", "depth": db_depths["xsp.layer:0:features.0:Conv2d"], "parent": "xsp.model:cnn"},
        {"name": "aten::conv2d", "depth": db_depths["aten::conv2d"], "parent": "xsp.layer:0:features.0:Conv2d"},
        {"name": "cudaLaunchKernel", "depth": 3, "parent": "aten::conv2d"},
    ]
    args = {
        r["key"]: r["display_value"]
        for r in tp.query(
            "SELECT key, display_value FROM args WHERE arg_set_id = (SELECT arg_set_id FROM slice WHERE name = 'xsp.layer:0:features.0:Conv2d')"
        )
    }
    assert (args["debug.layer_index"], args["debug.layer_name"], args["debug.layer_type"]) == ("0", "features.0", "Conv2d")


def test_gpu_tracks_lanes_and_details(handmade):
    _, _, _, con, tp = handmade
    # One group per (run, GPU), named after the run and the device; streams in explicit order.
    groups = tp.query("SELECT id, name FROM track WHERE name LIKE 'run % · GPU %' ORDER BY name")
    assert [g["name"] for g in groups] == [
        "run 1 · nsys · MLG · cnn · batch 1 · GPU 0 · NVIDIA H100 80GB HBM3",
        "run 2 · kineto · graphs · GPU 0 · NVIDIA H100 80GB HBM3",
        "run 2 · kineto · graphs · GPU 1 · NVIDIA H100 80GB HBM3",
    ]
    # The kernel that overlaps another one on stream 7 goes on a lane of its own, not nested.
    overlap = tp.query("SELECT t.name AS track, s.depth FROM slice s JOIN track t ON s.track_id = t.id WHERE s.name = 'late_overlapping_kernel'")
    assert overlap == [{"track": "stream 7 · overlap 1", "depth": 0}]
    contained = tp.query("SELECT t.name AS track, s.depth FROM slice s JOIN track t ON s.track_id = t.id WHERE s.name = 'contained_kernel'")
    assert contained == [{"track": "stream 7 · overlap 1", "depth": 0}]
    # memcpy and memset are visible, with their bytes; kernels carry grid/block.
    args = {}
    for name in ("Memcpy HtoD", "Memset", "implicit_convolve_sgemm", "aten::conv2d"):
        args[name] = {
            r["key"]: r["display_value"]
            for r in tp.query(f"SELECT key, display_value FROM args WHERE arg_set_id = (SELECT arg_set_id FROM slice WHERE name = '{name}')")
        }
    assert args["Memcpy HtoD"]["debug.bytes"] == "602112"
    assert args["Memcpy HtoD"]["debug.copy_kind"] == "HtoD"
    assert args["Memset"]["debug.bytes"] == "4096"
    assert args["implicit_convolve_sgemm"]["debug.grid"] == "[128, 2, 1]"
    assert args["implicit_convolve_sgemm"]["debug.block"] == "[256, 1, 1]"
    assert args["implicit_convolve_sgemm"]["debug.correlation_id"] == "1"
    assert args["aten::conv2d"]["debug.Input Dims"] == handmade_db.INPUT_DIMS


def test_nvtx_range_style_is_a_debug_annotation(handmade):
    _, _, _, _, tp = handmade
    styles = tp.query(
        "SELECT s.name, a.display_value AS style FROM slice s LEFT JOIN args a ON a.arg_set_id = s.arg_set_id AND a.key = 'debug.range_style' "
        "WHERE s.name IN ('dataloader', 'crossing', 'aten::conv2d') ORDER BY s.name"
    )
    assert styles == [
        {"name": "aten::conv2d", "style": None},
        {"name": "crossing", "style": "start_end"},
        {"name": "dataloader", "style": "push_pop"},
    ]


def test_flows_one_api_call_launching_two_kernels(handmade):
    _, _, _, con, tp = handmade
    rows = tp.query(
        "SELECT a.name AS api, g.name AS gpu FROM flow f JOIN slice a ON f.slice_out = a.id "
        "JOIN slice g ON f.slice_in = g.id WHERE a.name = 'cudaGraphLaunch' ORDER BY g.name"
    )
    assert rows == [{"api": "cudaGraphLaunch", "gpu": "graph_kernel_a"}, {"api": "cudaGraphLaunch", "gpu": "graph_kernel_b"}]
    assert tp.scalar("SELECT count(*) FROM flow f JOIN slice g ON f.slice_in = g.id WHERE g.name = 'unlaunched_kernel'") == 0


def test_runs_told_apart_and_aligned(handmade):
    """Both runs used pid 100: they stay two processes, named after their runs; each run starts at 0."""
    _, _, _, con, tp = handmade
    processes = tp.query("SELECT pid, name FROM process WHERE upid != 0 ORDER BY name")
    assert [p["name"] for p in processes] == [
        "run 1 · nsys · MLG · cnn · batch 1 · python",
        "run 2 · kineto · graphs · python (pid 100)",
    ]
    assert len({p["pid"] for p in processes}) == 2
    first = {r["name"]: r["ts"] for r in tp.query("SELECT name, ts FROM slice WHERE name IN ('xsp.model:cnn', 'aten::linear')")}
    origins = db_origins(con)
    assert first == {
        "xsp.model:cnn": 1_000 - origins[1],
        "aten::linear": handmade_db.EPOCH + 1_000 - origins[2],
    }
    assert tp.scalar("SELECT max(ts + dur) FROM slice") < 1_000_000  # not 1.7e18 apart


def test_counters_and_marks(handmade):
    _, _, _, con, tp = handmade
    rows = tp.query("SELECT t.name, c.ts, c.value FROM counter c JOIN track t ON c.track_id = t.id ORDER BY t.name, c.ts")
    assert [(r["name"], r["ts"], r["value"]) for r in rows] == [
        ("memory allocated · GPU 0", 1_000, 1.5e6),
        ("memory allocated · GPU 0", 49_000, 2.5e6),
        ("sm active", 9_000, 0.75),
        ("sm active", 29_000, 0.25),
    ]
    marks = tp.query("SELECT name, ts, dur FROM slice WHERE category = 'mark' ORDER BY name")
    assert marks == [{"name": "profiler start", "ts": 0, "dur": 0}, {"name": "step begin", "ts": 500, "dur": 0}]


def test_window_runs_and_kinds_selection(handmade, tmp_path):
    database, _, _, con, _ = handmade
    trace = tmp_path / "window.pftrace"
    # Run 1, kernels and API calls overlapping [40 us, 60 us) after the run's start (1 us).
    stats = export_perfetto(database, trace, PerfettoOptions(run_ids=[1], kinds=["api", "kernel"], from_ns=40_000, to_ns=60_000))
    expected = con.execute(
        "SELECT kind, count(*) FROM spans WHERE run_id = 1 AND kind IN ('api', 'kernel') "
        "AND start_ns < 61000 AND greatest(end_ns, start_ns + 1) > 41000 GROUP BY kind"
    ).fetchall()
    with WasmTraceProcessor(trace) as tp:
        assert tp.problems() == []
        got = tp.query("SELECT category, count(*) AS n FROM slice GROUP BY category")
        assert {r["category"]: r["n"] for r in got} == dict(expected)
        # Only launches with both ends in the selection become flows.
        assert tp.scalar("SELECT count(*) FROM flow") == stats.flows == 2
        assert tp.scalar("SELECT count(*) FROM slice WHERE dur < 0") == 0


def test_broken_sequence_flags_are_caught(handmade, tmp_path):
    """The checks above would notice a trace whose interning the trace processor cannot resolve:
    without SEQ_INCREMENTAL_STATE_CLEARED it skips every packet that uses interned names."""
    _, trace, _, con, _ = handmade
    broken = pb.Trace()
    broken.ParseFromString(trace.read_bytes())
    for packet in broken.packet:
        if packet.sequence_flags & pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED:
            packet.sequence_flags = pb.TracePacket.SEQ_NEEDS_INCREMENTAL_STATE
    path = tmp_path / "broken.pftrace"
    path.write_bytes(broken.SerializeToString())
    with WasmTraceProcessor(path) as tp:
        assert "tokenizer_skipped_packets" in {p["name"] for p in tp.problems()}
        assert tp.scalar("SELECT count(*) FROM slice") < con.execute("SELECT count(*) FROM spans").fetchone()[0]


def test_intern_table_reset_keeps_every_name(handmade, tmp_path):
    """With tiny intern tables the writer clears the incremental state many times; the trace
    processor must still resolve every name and annotation."""
    database, _, _, con, _ = handmade
    trace = tmp_path / "reset.pftrace"
    export_perfetto(database, trace, PerfettoOptions(max_interned=3))
    with WasmTraceProcessor(trace) as tp:
        assert_trace_matches_database(tp, con)
        names = Counter(r["name"] for r in tp.query("SELECT name FROM slice WHERE category != 'mark'"))
        assert names == Counter(r[0] for r in con.execute("SELECT name FROM spans").fetchall())


@pytest.fixture(scope="module")
def nsys_export(tmp_path_factory):
    from xsp_trace.convert import ConvertOptions, convert_files

    folder = tmp_path_factory.mktemp("nsys")
    database = folder / "nsys.duckdb"
    convert_files([NSYS_FIXTURE], database, ConvertOptions())
    trace = folder / "nsys.pftrace"
    stats = export_perfetto(database, trace)
    con = duckdb.connect(str(database), read_only=True)
    with WasmTraceProcessor(trace) as tp:
        yield stats, con, tp
    con.close()


def test_nsys_fixture_trace_matches_database(nsys_export):
    stats, con, tp = nsys_export
    assert_trace_matches_database(tp, con)
    assert stats.flows == 2336  # launches of the H100 export, as correlate_launches links them


def test_nsys_fixture_cpu_nesting(nsys_export):
    """Every NVTX op range and CUDA API call at its database depth on its thread track."""
    _, con, tp = nsys_export
    assert cpu_slices_tp(tp) == cpu_spans_db(con)
    deepest = con.execute("SELECT name, depth FROM spans WHERE kind = 'op' ORDER BY depth DESC, start_ns LIMIT 1").fetchone()
    assert deepest[1] >= 3
    assert tp.scalar(f"SELECT max(depth) FROM slice WHERE name = '{deepest[0]}'") == deepest[1]


def _require_kineto_converter() -> None:
    try:
        import xsp_trace.convert.kineto  # noqa: F401
    except ImportError:
        pytest.skip("the Kineto converter (xsp_trace/convert/kineto/converter.py) is not merged into this branch yet")


def _export(inputs, folder):
    from xsp_trace.convert import ConvertOptions, convert_files

    database = folder / "db.duckdb"
    convert_files(list(inputs), database, ConvertOptions())
    trace = folder / "trace.pftrace"
    stats = export_perfetto(database, trace)
    return database, trace, stats


def test_kineto_gpu_fixture_trace_matches_database(tmp_path):
    """A PyTorch profiler trace (AlexNet on an A100): ops > CUDA runtime calls, kernels and
    memcpy on their streams, flows from the launches."""
    _require_kineto_converter()
    database, trace, stats = _export([KINETO_FIXTURE], tmp_path)
    con = duckdb.connect(str(database), read_only=True)
    with WasmTraceProcessor(trace) as tp:
        assert_trace_matches_database(tp, con)
        assert_cpu_nesting(tp, con)
        assert stats.flows > 0 and tp.scalar("SELECT count(*) FROM slice WHERE category = 'kernel'") > 0


def test_merged_database_keeps_runs_apart(tmp_path):
    """nsys and Kineto runs in one database: one trace, each run's tracks named after it."""
    _require_kineto_converter()
    database, trace, stats = _export([NSYS_FIXTURE, KINETO_FIXTURE], tmp_path)
    con = duckdb.connect(str(database), read_only=True)
    assert stats.runs == [1, 2]
    with WasmTraceProcessor(trace) as tp:
        assert_trace_matches_database(tp, con)
        assert_cpu_nesting(tp, con)
        names = [r["name"] for r in tp.query("SELECT name FROM process WHERE upid != 0")]
        assert {n.split(" · ")[0] for n in names} == {"run 1", "run 2"}
        assert any(n.startswith("run 1 · nsys") for n in names) and any(n.startswith("run 2 · kineto") for n in names)


def test_phase_of_training_work_is_a_debug_annotation(tmp_path):
    """A ROCm training step (MI250): the backward ops and kernels carry phase = backward in Perfetto."""
    _require_kineto_converter()
    database, trace, _ = _export([DATA / "kineto_rocm_mi250" / "hta_mi250_rocm62_minitoy.json.gz"], tmp_path)
    con = duckdb.connect(str(database), read_only=True)
    expected = dict(con.execute("SELECT phase, count(*) FROM attribution WHERE phase IS NOT NULL GROUP BY phase").fetchall())
    assert expected.get("backward", 0) > 0 and expected.get("optimizer", 0) > 0
    with WasmTraceProcessor(trace) as tp:
        got = {
            r["phase"]: r["n"]
            for r in tp.query(
                "SELECT a.string_value AS phase, count(*) AS n FROM slice s JOIN args a USING (arg_set_id) "
                "WHERE a.key = 'debug.phase' GROUP BY a.string_value"
            )
        }
    assert got == expected
