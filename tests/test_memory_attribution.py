"""Memory attribution from allocator events (lib/memory.sql, memory_peak_owners, memory_by_op).

References: the trace's own "Total Allocated" at every [memory] event, read here from the raw JSON
(the H100 Qwen trace, recorded with profile_memory, records block addresses); the 2021 V100 ResNet-50
trace, whose events record neither address nor total; and a CPU trace recorded here with a 4 MiB
allocation injected inside a layer range of our own.
"""

from __future__ import annotations

import gzip
import json
import shutil

import duckdb
import pytest
from typer.testing import CliRunner

from conftest import DATA
from xsp_trace.analyze.session import AnalysisOptions, open_session, run_analysis
from xsp_trace.analyze.sql_library import include
from xsp_trace.cli import app
from xsp_trace.convert import ConvertOptions, convert_files
from xsp_trace.naming import layer_range_name

pytestmark = pytest.mark.slow  # real traces, a torch recording

QWEN = DATA / "kineto_2025_all_options_h100" / "tracelens_h100_qwen1.5_0.5b.json.gz"
V100 = DATA / "kineto_2021_profiler_step_operator" / "tb_plugin_resnet50_num_workers_0.json.gz"
INJECTED_BYTES = 4 << 20


def _memory_events(path) -> list[dict]:
    with gzip.open(path) if str(path).endswith(".gz") else open(path) as f:
        events = json.load(f)["traceEvents"]
    return [e for e in events if e.get("name") == "[memory]"]


def _converted(tmp_path_factory, trace):
    db = tmp_path_factory.mktemp("memory") / "trace.duckdb"
    convert_files([trace], db, ConvertOptions(include_python_functions=True))
    return db


def _memory_session(db, options):
    """A session with the memory library loaded: the tests read its views directly."""
    con = open_session(db, options)
    include(con, "lib/memory")
    return con


def _session(tmp_path_factory, trace, layer_ranges=None):
    return _memory_session(_converted(tmp_path_factory, trace), AnalysisOptions(layer_ranges=layer_ranges))


@pytest.fixture(scope="module")
def qwen_db(tmp_path_factory):
    return _converted(tmp_path_factory, QWEN)


@pytest.fixture(scope="module")
def qwen(qwen_db):
    return _memory_session(qwen_db, AnalysisOptions(layer_ranges="modules"))


def test_live_allocations_equal_the_traces_total_allocated_at_every_event(qwen):
    """The allocations the address matching leaves live after each event, plus what was in use
    before the trace began, are the trace's own "Total Allocated" after that event -- at all 2,450."""
    raw = sorted(enumerate(_memory_events(QWEN)), key=lambda item: (item[1]["ts"], item[0]))
    allocations = qwen.execute("SELECT device_key, pid, alloc_seq, free_seq, bytes FROM xsp_allocations").fetchall()
    checked = 0
    for device in {e["args"]["Device Id"] for _, e in raw}:
        events = [e["args"] for _, e in raw if e["args"]["Device Id"] == device]
        before = events[0]["Total Allocated"] - events[0]["Bytes"]  # in use before the first event
        mine = [a for a in allocations if a[0] == device]
        frees = sum(1 for e in events if e["Bytes"] < 0)
        assert sum(1 for a in mine if a[3] is not None) == frees  # every free matched to an allocation of the trace
        for seq, event in enumerate(events, start=1):
            live = sum(b for _, _, made, freed, b in mine if made <= seq and (freed is None or freed > seq))
            assert before + live == event["Total Allocated"], (device, seq)
            checked += 1
    assert checked == len(raw) == 2450


def test_the_peak_is_the_traces_highest_total_and_its_owners_add_up_to_it(qwen):
    raw = [e["args"] for e in _memory_events(QWEN) if e["args"]["Device Id"] == 0]
    rows = [r for r in run_analysis(qwen, "memory_peak_owners").records() if r["device_id"] == 0]
    peak = max(e["Total Allocated"] for e in raw)
    assert {r["peak_bytes"] for r in rows} == {peak} == {2088508416}
    for level in ("op", "layer"):
        assert sum(r["bytes"] for r in rows if r["level"] == level) == peak, level
    before = {r["bytes"] for r in rows if r["name"] == "(allocated before the trace)"}
    assert before == {raw[0]["Total Allocated"] - raw[0]["Bytes"]}  # no free in the trace is of an older block
    ops = [r for r in rows if r["level"] == "op" and not r["name"].startswith("(")]
    assert ops[0]["name"] == "aten::add" and ops[0]["shapes"]  # the largest owner, with the shapes it recorded


def test_by_op_sums_every_allocation_of_the_trace(qwen):
    raw = [e["args"] for e in _memory_events(QWEN)]
    rows = run_analysis(qwen, "memory_by_op").records()
    for device in (0, -1):
        allocated = sum(e["Bytes"] for e in raw if e["Bytes"] > 0 and e["Device Id"] == device)
        count = sum(1 for e in raw if e["Bytes"] > 0 and e["Device Id"] == device)
        for level in ("op", "layer"):
            mine = [r for r in rows if r["device_id"] == device and r["level"] == level]
            assert sum(r["allocated_bytes"] for r in mine) == allocated and sum(r["allocations"] for r in mine) == count, (device, level)
            assert sum(r["live_at_end_bytes"] for r in mine) == 0  # the trace frees all it allocates


def test_a_trace_without_addresses_has_a_peak_but_says_its_owners_are_unknown(tmp_path_factory):
    """The 2021 V100 trace records Bytes only: the peak is the highest running sum of them since the
    trace began; frees cannot be matched, so no op is named as an owner."""
    db = _converted(tmp_path_factory, V100)
    con = _memory_session(db, AnalysisOptions())
    raw = sorted(enumerate(_memory_events(V100)), key=lambda item: (item[1]["ts"], item[0]))
    expected = {}
    for device in (0, -1):
        running, peak = 0, 0
        for _, e in raw:
            if (e["args"]["Device Id"] if e["args"]["Device Type"] == 1 else -1) == device:
                running += e["args"]["Bytes"]
                peak = max(peak, running)
        expected[device] = peak
    rows = run_analysis(con, "memory_peak_owners").records()
    assert {r["device_id"]: r["peak_bytes"] for r in rows} == expected == {0: 2791636480, -1: 57803264}
    assert all(r["name"].startswith("(unknown") and r["allocations"] is None for r in rows)
    by_op = run_analysis(con, "memory_by_op").records()
    assert by_op and all(r["peak_bytes"] is None and r["mean_lifetime_us"] is None for r in by_op)
    # Its Perfetto export has a memory counter track per device all the same, summed from the events.
    assert _perfetto_counter_peaks(db, db.with_suffix(".pftrace")) == {
        "Allocated since the trace began · GPU 0": expected[0],
        "Allocated since the trace began": expected[-1],
    }


def _perfetto_counter_peaks(db, trace) -> dict[str, float]:
    """The highest value of every counter track of the Perfetto export of `db`, read back from the protobuf."""
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

    from xsp_trace.perfetto import export_perfetto

    export_perfetto(db, trace)
    packets = pb.Trace.FromString(trace.read_bytes()).packet
    names = {
        p.track_descriptor.uuid: p.track_descriptor.name for p in packets if p.HasField("track_descriptor") and p.track_descriptor.HasField("counter")
    }
    peaks: dict[str, float] = {}
    for p in packets:
        if p.HasField("track_event") and p.track_event.track_uuid in names:
            value = p.track_event.double_counter_value if p.track_event.HasField("double_counter_value") else p.track_event.counter_value
            name = names[p.track_event.track_uuid]
            peaks[name] = max(peaks.get(name, value), value)
    return peaks


def test_an_injected_allocation_is_owned_by_its_op_and_layer(tmp_path_factory):
    """A CPU trace recorded here: a 4 MiB tensor made inside a layer range and held past it is, at
    the host peak, owned by the aten::mul that made it (with its operands' shapes) and by that
    layer, a small one made after the layer by no layer; the trace's own Total Allocated is the live
    sum at every event."""
    torch = pytest.importorskip("torch")
    from torch.profiler import ProfilerActivity, profile, record_function

    work = tmp_path_factory.mktemp("inject")
    trace = work / "trace.json"
    base = torch.ones(INJECTED_BYTES // 4, dtype=torch.float32)  # made before the recording
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=True) as prof:
        with record_function(layer_range_name(0, "inject", "Buffer")):
            held = base * 2
        small = torch.ones(16)
        del held, small
    prof.export_chrome_trace(str(trace))
    con = _session(tmp_path_factory, trace)
    rows = [r for r in run_analysis(con, "memory_peak_owners").records() if r["device_id"] == -1]
    ops = {r["name"]: r for r in rows if r["level"] == "op"}
    layers = {r["name"]: r for r in rows if r["level"] == "layer"}
    assert ops["aten::mul"]["bytes"] == INJECTED_BYTES and ops["aten::mul"]["allocations"] == 1
    assert ops["aten::mul"]["shapes"] == [f"[[{INJECTED_BYTES // 4}],[]]"]  # what the op recorded
    assert ops["aten::empty"]["bytes"] == 64  # torch.ones(16) allocates through aten::empty
    assert layers["inject"]["bytes"] == INJECTED_BYTES and layers["(no layer)"]["bytes"] == 64
    raw = [e["args"] for e in _memory_events(trace) if e["args"].get("Device Type") == 0]
    assert rows[0]["peak_bytes"] == max(e["Total Allocated"] for e in raw)
    live = 0
    for e in raw:
        live += e["Bytes"]  # the recording began with nothing of the program's allocated
        assert live == e["Total Allocated"]


def test_a_database_from_before_memory_events_reads_with_none(qwen_db, tmp_path):
    """A schema-6 database (no memory_events) is still read: the memory analyses are empty, the
    others unchanged; appending to it is refused in one line."""
    old = tmp_path / "old.duckdb"
    shutil.copy(qwen_db, old)
    con = duckdb.connect(str(old))
    con.execute("DROP TABLE memory_events")
    con.execute("UPDATE schema_info SET value = '6' WHERE key = 'schema_version'")
    con.close()
    for args in (["-a", "memory_peak_owners", "-a", "top_kernels"], ["--run", "1", "-a", "memory_by_op"]):
        result = CliRunner().invoke(app, ["analyze", str(old), *args, "--format", "json", "--limit", "0"])
        assert result.exit_code == 0, result.output
        tables = json.loads(result.output)
        assert all(tables[name] == [] for name in tables if name.startswith("memory_"))
        assert "top_kernels" not in tables or tables["top_kernels"]
    result = CliRunner().invoke(app, ["convert", str(QWEN), "-o", str(old), "--append"])
    assert result.exit_code == 2 and "schema version 6" in result.output


def test_every_reader_and_any_cut_into_pieces_store_the_same_events(tmp_path, monkeypatch):
    """The memory events of the Qwen trace read whole, in many small pieces (positions carried across
    them), and by the streaming reader are the same rows -- as many as the trace has."""
    from xsp_trace.convert.kineto import duckdb_reader
    from xsp_trace.convert.kineto import pieces as kineto_pieces

    def events(name: str, reader: str = "auto") -> list[tuple]:
        db = tmp_path / f"{name}.duckdb"
        convert_files([QWEN], db, ConvertOptions(kineto_reader=reader))
        with duckdb.connect(str(db), read_only=True) as con:
            return con.execute("SELECT * FROM memory_events ORDER BY event_index").fetchall()

    whole = events("whole")
    python = events("python", "python")
    monkeypatch.setattr(duckdb_reader, "PIECE_BYTES", 64 << 10)
    monkeypatch.setattr(duckdb_reader, "CHUNK_BYTES", 16 << 10)
    made: list[int] = []
    close = kineto_pieces.PieceWriter._close
    monkeypatch.setattr(kineto_pieces.PieceWriter, "_close", lambda self: made.append(self.size) or close(self))
    pieces = events("pieces")
    assert len(made) >= 10, made
    assert len(whole) == len(_memory_events(QWEN)) == 2450
    assert pieces == whole and python == whole
