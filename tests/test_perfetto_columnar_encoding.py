"""The columnar slice encoder (xsp_trace/perfetto/slice_encoder.py) against the per-row writer
it replaced (tests/support/perfetto_reference_writer.py), both read back by Perfetto's trace processor:
every slice (track, ts, dur exact, name, category, depth, parent, debug annotations), every flow
and every track must come out the same -- on the real nsys and Kineto fixtures and on the
handmade database (crossing ranges, lanes, layers), with small batches (open slices carried
from batch to batch) and a small intern table (incremental state cleared mid-trace)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

import xsp_trace.perfetto.export as export_module
from bench.peers.make_scaled_nsys import grow
from perfetto_harness import handmade_db
from perfetto_harness.trace_processor import WasmTraceProcessor
from support.perfetto_reference_writer import write_slices_per_row
from xsp_trace.convert import ConvertOptions, convert_inputs
from xsp_trace.formats import perfetto_proto as wp
from xsp_trace.perfetto import PerfettoOptions, export_perfetto
from xsp_trace.perfetto.wire import Fixed64, Message, Varint

DATA = Path(__file__).parent / "data"
NSYS_FIXTURE = DATA / "nsys_2026_pytorch_2xh100" / "nsysai_h100_2gpu_1s_nsys2026.2.sqlite"
KINETO_FIXTURE = DATA / "kineto_cuda_sync_alexnet" / "hta_a100_alexnet.json.gz"

_SLICES = """
SELECT s.ts, s.dur, s.name, s.category, s.depth, t.name AS track, pt.name AS parent_track,
       th.tid, th.name AS thread, p.name AS parent,
       (SELECT group_concat(key || '=' || display_value, ';') FROM (
            SELECT key, display_value FROM args WHERE arg_set_id = s.arg_set_id ORDER BY key)) AS args
FROM slice s JOIN track t ON s.track_id = t.id LEFT JOIN track pt ON pt.id = t.parent_id
LEFT JOIN thread_track tt ON tt.id = s.track_id LEFT JOIN thread th USING (utid)
LEFT JOIN slice p ON p.id = s.parent_id
"""
_FLOWS = """
SELECT so.ts AS out_ts, so.name AS out_name, si.ts AS in_ts, si.name AS in_name, si.category AS in_category
FROM flow f JOIN slice so ON f.slice_out = so.id JOIN slice si ON f.slice_in = si.id
"""
_TRACKS = """
SELECT t.name, pt.name AS parent, th.tid, th.name AS thread, pr.pid, pr.name AS process
FROM track t LEFT JOIN track pt ON pt.id = t.parent_id LEFT JOIN thread_track tt ON tt.id = t.id
LEFT JOIN thread th USING (utid) LEFT JOIN process pr ON pr.upid = th.upid
"""


def _decoded(trace: Path) -> dict:
    with WasmTraceProcessor(trace) as tp:
        assert tp.problems() == []
        return {
            "slices": Counter(tuple(r.values()) for r in tp.query(_SLICES)),
            "flows": Counter(tuple(r.values()) for r in tp.query(_FLOWS)),
            "tracks": Counter(tuple(r.values()) for r in tp.query(_TRACKS)),
        }


def _both(database: Path, folder: Path, options: PerfettoOptions | None = None):
    old, new = folder / "per_row.pftrace", folder / "columnar.pftrace"
    with mock.patch.object(export_module, "_write_slices", write_slices_per_row):
        old_stats = export_perfetto(database, old, options)
    new_stats = export_perfetto(database, new, options)
    return old_stats, new_stats, _decoded(old), _decoded(new)


def _assert_same(database: Path, folder: Path, options: PerfettoOptions | None = None) -> dict:
    old_stats, new_stats, old, new = _both(database, folder, options)
    assert new_stats.slices == old_stats.slices and new_stats.flows == old_stats.flows
    assert new_stats.lane_tracks == old_stats.lane_tracks
    assert sum(new["slices"].values()) == new_stats.slices + new_stats.instants  # marks are slices too
    for table in ("slices", "flows", "tracks"):
        assert new[table] == old[table], table
    return new


@pytest.fixture(scope="module")
def nsys_database(converted_path):
    return converted_path(NSYS_FIXTURE)  # the session's conversion, only read


def test_nsys_fixture_decodes_like_the_per_row_writer(nsys_database, tmp_path):
    new = _assert_same(nsys_database, tmp_path)
    assert sum(new["flows"].values()) == 2336  # launches of the H100 export, as correlate_launches links them


def test_small_batches_and_intern_resets_decode_the_same(nsys_database, tmp_path):
    """Open slices carried across 997-row batches; the intern tables cleared every few batches."""
    _assert_same(nsys_database, tmp_path, PerfettoOptions(batch_rows=997, max_interned=300))


@pytest.mark.slow  # Perfetto's trace processor reads both files back
def test_handmade_lanes_layers_and_windows_decode_the_same(tmp_path):
    database = handmade_db.build(tmp_path / "handmade.duckdb")
    new = _assert_same(database, tmp_path)
    assert any((row[5] or "").endswith("overlapping ranges 1") for row in new["slices"])  # the crossing range's lane
    assert any("layer_type=Conv2d" in (row[10] or "") for row in new["slices"])
    _assert_same(database, tmp_path, PerfettoOptions(batch_rows=3, from_ns=2_000, to_ns=40_000))


def test_kineto_fixture_decodes_the_same(converted_path, tmp_path):
    _assert_same(converted_path(KINETO_FIXTURE), tmp_path, PerfettoOptions(batch_rows=5_000))


def test_wire_encoding_parses_as_the_protobuf_classes_write_it():
    """Hand-encoded TrackEvents, read back by the protobuf classes: varints of every length, all
    of one length (several bytes), negative int64, fixed64 flow ids (repeated), doubles, nested annotations."""
    values = np.array([0, 1, 127, 128, 300, 1 << 35, (1 << 63) - 1, -1, -(1 << 40)], dtype=np.int64)
    n = len(values)
    owners = np.arange(n)
    keys = np.full(n, 7, np.uint64)
    annotation = Message(wp.EVENT_DEBUG_ANNOTATION, n, [Varint(wp.ANNOTATION_NAME_IID, keys, owners), Varint(wp.ANNOTATION_INT, values, owners)])
    double = Message(
        wp.EVENT_DEBUG_ANNOTATION, n, [Varint(wp.ANNOTATION_NAME_IID, keys, owners), Fixed64(wp.ANNOTATION_DOUBLE, values / 3.0, owners)]
    )
    flows = Fixed64(wp.EVENT_FLOW_ID, np.stack([np.abs(values), np.abs(values) + 1], axis=1).reshape(-1).astype(np.uint64), np.repeat(owners, 2))
    event = Message(wp.PACKET_TRACK_EVENT, n, [annotation, double, Varint(wp.EVENT_TRACK_UUID, np.abs(values), owners), flows])
    trace = pb.Trace()
    timestamps = (1 << 35) + owners * 1000  # five bytes each
    trace.ParseFromString(Message(wp.TRACE_PACKET, n, [Varint(wp.PACKET_TIMESTAMP, timestamps, owners), event]).encode())
    assert [p.timestamp for p in trace.packet] == timestamps.tolist()
    assert [p.track_event.debug_annotations[0].int_value for p in trace.packet] == values.tolist()
    assert [p.track_event.debug_annotations[1].double_value for p in trace.packet] == (values / 3.0).tolist()
    assert [p.track_event.track_uuid for p in trace.packet] == np.abs(values).tolist()
    assert [list(p.track_event.flow_ids) for p in trace.packet] == [[v, v + 1] for v in np.abs(values).tolist()]


@pytest.mark.slow  # a six-fold export converted, then written four times
def test_the_same_database_exports_to_the_same_bytes(tmp_path):
    """Parts cut by counts of start times: exports of one database are byte for byte equal.
    With approximate quantiles (merged in parallel) the cuts, hence the batches and the interning,
    moved from run to run once a run held more spans than one DuckDB row group."""
    export = tmp_path / "h100_x6.sqlite"
    grow(NSYS_FIXTURE, export, 6)  # 163 k spans
    database = tmp_path / "h100_x6.duckdb"
    convert_inputs([export], database, ConvertOptions())
    options = PerfettoOptions(part_rows=2_000, batch_rows=1_000)
    written = []
    for i in range(4):
        export_perfetto(database, tmp_path / f"{i}.pftrace", options)
        written.append((tmp_path / f"{i}.pftrace").read_bytes())
    assert all(w == written[0] for w in written[1:])


@pytest.mark.parametrize("overlap_every", [1, 3, 50, 10**9])
def test_stream_rows_after_an_overlap_go_where_lanes_puts_them(overlap_every):
    """A GPU stream that has lanes: the rows placed as arrays when each starts after the row
    before it ended (slice_encoder._place_on_stream) give the events and lanes that tracks.Lanes
    gives placing every row alone -- with overlaps every row, now and then, or never after the
    first; back-to-back and zero-length kernels; rows fed in uneven batches."""
    from xsp_trace.perfetto.slice_encoder import _place_on_stream, _Recorder
    from xsp_trace.perfetto.tracks import Lanes

    rng = np.random.default_rng(overlap_every)
    n, start, ts, end = 3_000, 0, [], []
    for i in range(n):
        duration = int(rng.choice([0, 5, 40, 300]))
        # a kernel usually starts when (or after) the one before ended; now and then inside it
        start = start + int(rng.integers(0, 20)) if i % overlap_every == 0 else max(start, end[-1] if end else 0) + int(rng.integers(0, 3))
        ts.append(start)
        end.append(start + duration)
    order = np.lexsort((-np.array(end), np.array(ts)))  # as the query sorts: by start, longest first
    ts_a, end_a = np.array(ts)[order], np.array(end)[order]

    def lanes() -> tuple[Lanes, _Recorder, list]:
        recorder, made = _Recorder(), []
        return Lanes(recorder, 1, nest=False, new_lane=lambda base, lane: made.append(lane) or 100 + lane), recorder, made  # type: ignore[arg-type]

    one, one_recorder, one_lanes = lanes()
    for i, (a, b) in enumerate(zip(ts_a.tolist(), end_a.tolist(), strict=True)):
        one_recorder.events.append((i, one.place(a, b), a))
    one.close()
    expected = one_recorder.take()

    batched, recorder, made = lanes()
    bounds = [0, 1, 2, 7, 500, 501, 1_700, n]
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        _place_on_stream(batched, recorder, a, ts_a[a:b], end_a[a:b])
    batched.close()
    got = recorder.take()
    assert made == one_lanes and (overlap_every == 10**9 or len(made) > 0)
    for e, g in zip(expected, got, strict=True):
        np.testing.assert_array_equal(e, g)


def _nested_slices(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """n slices that nest (a random call tree: zero-length ones, a child ending with its parent,
    a sibling starting where the one before ended), sorted as the query sorts: by start, longest first."""
    ts, end, open_ends, clock = [], [], [], 0
    while len(ts) < n:
        while open_ends and rng.random() < 0.4:  # return from some calls
            clock = max(clock, open_ends.pop())
        start = clock + int(rng.choice([0, 0, 1, 5]))
        limit = open_ends[-1] if open_ends else start + 1_000
        if start > limit:
            clock = max(clock, open_ends.pop())
            continue
        stop = int(rng.choice([start, limit, min(limit, start + int(rng.integers(1, 60)))]))
        ts.append(start)
        end.append(stop)
        open_ends.append(stop)
        clock = start
    order = np.lexsort((-np.array(end), np.array(ts)))
    return np.array(ts)[order], np.array(end)[order]


@pytest.mark.parametrize("seed", range(6))
def test_nested_rows_give_the_events_lanes_gives(seed):
    """slice_encoder._nest, fed a CPU track's rows in uneven batches (slices left open carried from
    batch to batch), gives the begin/end events of tracks.Lanes placing every row alone -- and
    refuses (None) a batch with two slices that cross, where Lanes opens a lane."""
    from xsp_trace.perfetto.slice_encoder import _nest, _Recorder
    from xsp_trace.perfetto.tracks import Lanes

    rng = np.random.default_rng(seed)
    ts, end = _nested_slices(rng, 2_000)
    recorder = _Recorder()
    lanes = Lanes(recorder, 1, nest=True, new_lane=lambda base, lane: pytest.fail("a nested row got a lane"))  # type: ignore[arg-type]
    for i, (a, b) in enumerate(zip(ts.tolist(), end.tolist(), strict=True)):
        recorder.events.append((i, lanes.place(a, b), a))
    lanes.close()
    expected_rows, _, expected_times = recorder.take()

    rows, times, carried = [], [], np.empty(0, dtype=np.int64)
    bounds = sorted({0, len(ts), *rng.integers(0, len(ts), 12).tolist()})
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        nested = _nest(ts[a:b], end[a:b], carried, True)
        assert nested is not None
        batch_rows, batch_times, carried = nested
        rows.append(np.where(batch_rows >= 0, batch_rows + a, -1))
        times.append(batch_times)
    rows.append(np.full(len(carried), -1))
    times.append(carried[::-1])  # closed at the end, innermost first (as SliceEncoder._close_track)
    np.testing.assert_array_equal(np.concatenate(rows), expected_rows)
    np.testing.assert_array_equal(np.concatenate(times), expected_times)
    assert len(expected_rows) == 2 * len(ts)

    # [10, 30) and [20, 40) cross; a slice at 35 puts the first end before a begin, so that the
    # events' times still never go back: only the pairing tells
    after = int(end.max())
    crossing_ts, crossing_end = np.append(ts, np.array([10, 20, 35]) + after), np.append(end, np.array([30, 40, 36]) + after)
    assert _nest(crossing_ts, crossing_end, np.empty(0, dtype=np.int64), True) is None


def test_interned_data_packets_are_the_bytes_protobuf_writes():
    """The interned_data packet of a batch (intern_tables.InternTables, wire-encoded from Arrow
    buffers and Python text alike) is byte for byte what the protobuf classes serialize for the
    same entries: tables in field order, entries in iid order, strings of every length (empty,
    multi-byte UTF-8, over 127 bytes: a two-byte length), strings met again, the cleared flag on
    the first packet only, a batch defining nothing (no packet), a reset when full."""
    import pyarrow as pa

    from xsp_trace.perfetto.intern_tables import ANNOTATION_NAMES, CATEGORIES, EVENT_NAMES, STRING_VALUES, InternTables
    from xsp_trace.perfetto.packets import add_interned

    def expected(entries: list[tuple[str, int, str]], cleared: bool) -> bytes:
        packet = pb.TracePacket(trusted_packet_sequence_id=3)
        for table, iid, text in entries:
            add_interned(packet, table, iid, text)  # the protobuf classes' entries, as PacketWriter defines them
        packet.sequence_flags = wp.SEQ_NEEDS_INCREMENTAL_STATE | (wp.SEQ_INCREMENTAL_STATE_CLEARED if cleared else 0)
        return pb.Trace(packet=[packet]).SerializeToString()

    long_text = "é" * 100  # 200 bytes
    tables = InternTables(max_interned=8)
    tables.start_batch()
    names, valid = tables.column(EVENT_NAMES, pa.array(["b", None, "a", "b", "", long_text]), "name")
    assert names[valid].tolist() == [1, 2, 1, 3, 4] and not valid[1]
    assert tables.iid(ANNOTATION_NAMES, "span_id") == 1 and tables.iid(ANNOTATION_NAMES, "span_id") == 1
    values, _ = tables.column(STRING_VALUES, pa.array(["x", "日本", "x"]), None)
    assert values.tolist() == [1, 2, 1]
    assert tables.iid(STRING_VALUES, "y") == 3
    assert tables.take_packet(3) == expected(
        [(EVENT_NAMES, 1, "b"), (EVENT_NAMES, 2, "a"), (EVENT_NAMES, 3, ""), (EVENT_NAMES, 4, long_text),
         (ANNOTATION_NAMES, 1, "span_id"), (STRING_VALUES, 1, "x"), (STRING_VALUES, 2, "日本"), (STRING_VALUES, 3, "y")],
        cleared=True,
    )  # fmt: skip
    tables.start_batch()  # 8 entries: full, cleared before this batch
    tables.column(CATEGORIES, pa.array(["kernel"]), "kind")
    # a part's dictionary (slice_order.sort_part) in another order than the batch's first uses
    part_dictionary = pa.DictionaryArray.from_arrays(pa.array([1, 0, 1], pa.int32()), pa.array(["a", "c"]))
    assert tables.column(EVENT_NAMES, part_dictionary, "name")[0].tolist() == [1, 2, 1]
    assert tables.take_packet(3) == expected([(CATEGORIES, 1, "kernel"), (EVENT_NAMES, 1, "c"), (EVENT_NAMES, 2, "a")], cleared=True)
    tables.start_batch()
    assert tables.column(EVENT_NAMES, pa.array(["c", "a"]), "name")[0].tolist() == [1, 2]
    assert tables.take_packet(3) is None
    tables.start_batch()
    assert tables.column(EVENT_NAMES, pa.array(["a", "d", "c", "e"]), "name")[0].tolist() == [2, 3, 1, 4]
    assert tables.take_packet(3) == expected([(EVENT_NAMES, 3, "d"), (EVENT_NAMES, 4, "e")], cleared=False)
