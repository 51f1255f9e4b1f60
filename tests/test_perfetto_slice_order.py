"""The numpy order of a part of the slices (xsp_trace/perfetto/slice_order.py) against DuckDB's
ORDER BY of the same rows, the Arrow-to-numpy reads (arrow_arrays.py) against pyarrow's own
to_numpy, and the export never importing pandas."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import xsp_trace.perfetto.slice_order as slice_order
from xsp_trace.perfetto.arrow_arrays import ints, valid, values

ROOT = Path(__file__).resolve().parents[1]
NSYS_FIXTURE = ROOT / "tests" / "data" / "nsys_2026_pytorch_2xh100" / "nsysai_h100_2gpu_1s_nsys2026.2.sqlite"

# Tracks of every class, NULL keys, equal starts (nested, zero-length, an end before its start),
# equal starts and ends at different depths, and rows in no particular order.
_ROWS = """
SELECT * FROM (VALUES
    (1, 'thread', 10, 11, NULL, NULL, 5, 100, 200, 200, 0),
    (1, 'thread', 10, 11, NULL, NULL, 6, 100, 150, 150, 1),
    (1, 'thread', 10, 11, NULL, NULL, 7, 100, 100, 90, 2),
    (1, 'thread', 10, 11, NULL, NULL, 8, 100, 100, 100, 2),
    (1, 'thread', 10, 11, NULL, NULL, 4, 100, 150, 150, 0),
    (1, 'thread', 10, 2, NULL, NULL, 9, 50, 60, 60, 0),
    (1, 'thread', 3, 11, NULL, NULL, 1, 10, 20, 20, 0),
    (1, 'gpu', NULL, NULL, 0, 7, 20, 100, 110, 110, 0),
    (1, 'gpu', NULL, NULL, 0, NULL, 21, 5, 6, 6, 0),
    (1, 'gpu', NULL, NULL, 1, 7, 22, 1, 2, 2, 0),
    (1, 'gpu', NULL, NULL, NULL, 7, 23, 1, 2, 2, 0),
    (1, 'process', 10, NULL, NULL, NULL, 30, 0, 1000, 1000, 0),
    (1, 'run', NULL, NULL, NULL, NULL, 31, 0, 1000, 1000, 0),
    (1, 'run', NULL, NULL, NULL, NULL, 32, 0, 1000, 1000, 0)
) AS t(run_id, track_class, pid, tid, device_id, stream_id, span_id, ts, end_ts, span_end_ns, depth)
"""
_DUCKDB_ORDER = """
SELECT span_id FROM rows
ORDER BY run_id, track_class = 'gpu', track_class, pid, tid, device_id, stream_id NULLS LAST,
         ts, span_end_ns DESC, depth, span_id
"""


def _hashed(table: pa.Table) -> tuple[pa.Table, slice_order.SpanTracks]:
    """A part as perfetto/slices.sql gives it (each row's track key as one hash; any distinct
    numbers do) and the tracks those hashes stand for, in no particular order."""
    keys = list(zip(*(table.column(k).to_pylist() for k in slice_order.TRACK_KEY), strict=True))
    hash_of = {key: (7919 * i + 104729) % 65521 for i, key in enumerate(dict.fromkeys(keys))}
    hashes = pa.array([hash_of[key] for key in keys], pa.uint64())
    rows = table.drop_columns(list(slice_order.TRACK_KEY)).append_column(slice_order.TRACK_HASH, hashes)
    return rows, slice_order.SpanTracks([(*key, h) for key, h in reversed(hash_of.items())])


def _rows() -> tuple[pa.RecordBatch, slice_order.SpanTracks, list[int]]:
    con = duckdb.connect()
    con.execute(f"CREATE TABLE rows AS {_ROWS} ORDER BY hash(span_id)")
    table, tracks = _hashed(con.sql("SELECT * FROM rows").to_arrow_table())
    expected = [r[0] for r in con.execute(_DUCKDB_ORDER).fetchall()]
    return table.combine_chunks().to_batches()[0], tracks, expected


def test_part_order_is_duckdbs_order_by():
    batch, tracks, expected = _rows()
    part, order = slice_order.sort_part([batch], tracks)
    assert part.column("span_id").take(pa.array(order)).to_pylist() == expected


def test_tracks_rank_in_the_track_key_order_and_refuse_a_shared_hash():
    _, tracks, _ = _rows()
    assert [key[1] for key in tracks.keys] == ["process", "run", "thread", "thread", "thread", "gpu", "gpu", "gpu", "gpu"]
    assert tracks.keys[2:5] == [(1, "thread", 3, 11, None, None), (1, "thread", 10, 2, None, None), (1, "thread", 10, 11, None, None)]
    assert tracks.keys[5:] == [
        (1, "gpu", None, None, 0, 7),
        (1, "gpu", None, None, 0, None),
        (1, "gpu", None, None, 1, 7),
        (1, "gpu", None, None, None, 7),
    ]
    with pytest.raises(slice_order.SharedTrackHash):
        slice_order.SpanTracks([(1, "thread", 1, 1, None, None, 5), (1, "thread", 1, 2, None, None, 5)])
    with pytest.raises(ValueError, match="not among the export's tracks"):
        tracks.ranks(pa.array([1], pa.uint64()))
    with pytest.raises(ValueError, match="not among the export's tracks"):
        slice_order.SpanTracks([]).ranks(pa.array([1], pa.uint64()))
    assert slice_order.SpanTracks([]).ranks(pa.array([], pa.uint64())).tolist() == []


def test_tracks_that_hash_alike_take_the_next_salt(converted_path, tmp_path, monkeypatch):
    """The export's tracks under salt 0 "sharing a hash": it takes salt 1, and writes the same bytes."""
    import xsp_trace.perfetto.export as export_module

    database = converted_path(NSYS_FIXTURE)
    export_module.export_perfetto(database, tmp_path / "salt0.pftrace")
    salts = []

    def tracks_refusing_salt_0(rows):
        tracks = slice_order.SpanTracks(rows)
        salts.append(len(salts))
        if len(salts) == 1:
            raise slice_order.SharedTrackHash("pretend")
        return tracks

    monkeypatch.setattr(export_module, "SpanTracks", tracks_refusing_salt_0)
    export_module.export_perfetto(database, tmp_path / "salt1.pftrace")
    assert salts == [0, 1]
    assert (tmp_path / "salt1.pftrace").read_bytes() == (tmp_path / "salt0.pftrace").read_bytes()


def test_duckdb_threads_come_back_after_a_block_on_fewer():
    from xsp_trace.store.connection import duckdb_connect, duckdb_threads, thread_count

    con = duckdb_connect()
    con.execute("SET threads = 2")
    with thread_count(con, 1):
        assert duckdb_threads(con) == 1
    assert duckdb_threads(con) == 2


def test_sorted_batches_keep_the_order_across_batches_and_dictionaries():
    batch, tracks, expected = _rows()
    halves = [batch.slice(0, 5), batch.slice(5)]  # two source batches: two dictionaries to unify
    out = list(slice_order.sorted_batches(halves, tracks, batch_rows=4))
    assert [b.num_rows for b in out] == [4, 4, 4, 2]
    assert [s for b in out for s in b.column("span_id").to_pylist()] == expected
    ranks = [t for b in out for t in b.column(slice_order.TRACK).to_pylist()]
    assert ranks == sorted(ranks) and [tracks.keys[t][1] for t in ranks] == ["process", "run", "run"] + ["thread"] * 7 + ["gpu"] * 4


def test_an_empty_part_gives_no_batches():
    batch, tracks, _ = _rows()
    assert list(slice_order.sorted_batches([], tracks, batch_rows=4)) == []
    assert list(slice_order.sorted_batches([batch.slice(0, 0)], tracks, batch_rows=4)) == []


@pytest.mark.parametrize(
    "array",
    [
        pa.array([1, None, 3, -4], pa.int64()),
        pa.array([1, None, 3, 4], pa.int32()).slice(1),
        pa.array([1.5, None, -2.0], pa.float64()),
        pa.array([True, None, False, True, True, False, True, False, True, None], pa.bool_()).slice(3),
        pa.array([], pa.int64()),
        pa.array([None, None], pa.int64()),
        pa.chunked_array([[1, 2], [None, 4]], pa.int64()),
    ],
)
def test_arrow_reads_match_pyarrow(array):
    expected_valid = np.array([v is not None for v in array.to_pylist()], dtype=bool)
    assert np.array_equal(valid(array), expected_valid)
    fill = False if pa.types.is_boolean(array.type) else 0
    expected = np.array([fill if v is None else v for v in array.to_pylist()], dtype=array.to_numpy(zero_copy_only=False).dtype)
    assert np.array_equal(values(array), expected)
    if pa.types.is_integer(array.type):
        got, ok = ints(array)
        assert got.dtype == np.int64 and np.array_equal(got, expected.astype(np.int64)) and np.array_equal(ok, expected_valid)


def test_export_does_not_import_pandas(converted_path, tmp_path):
    database = converted_path(NSYS_FIXTURE)
    script = (
        "import sys\n"
        "from xsp_trace.perfetto import export_perfetto\n"
        f"stats = export_perfetto({str(database)!r}, {str(tmp_path / 'out.pftrace')!r})\n"
        "print(stats.slices, 'pandas' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=ROOT)
    slices, pandas_loaded = done.stdout.split()
    assert int(slices) > 20_000 and pandas_loaded == "False"


def _part_of(spans: pa.Table) -> tuple[list[pa.RecordBatch], slice_order.SpanTracks]:
    rows, tracks = _hashed(spans)
    return rows.to_batches(), tracks


def test_args_go_beside_their_spans_rows_by_key_then_value():
    # Spans 4..8 of one thread track in the order written: 5 (starts first), then 4 and 6 (equal
    # starts: longest first -- 4), then 8, 7. Args arrive in no order; span 6 has key "a" twice.
    spans = pa.table(
        {
            "run_id": [1] * 5,
            "track_class": ["thread"] * 5,
            "pid": [10] * 5,
            "tid": [11] * 5,
            "device_id": pa.array([None] * 5, pa.int64()),
            "stream_id": pa.array([None] * 5, pa.int64()),
            "span_id": [4, 5, 6, 7, 8],
            "ts": [20, 10, 20, 40, 30],
            "end_ts": [30, 15, 25, 50, 35],
            "span_end_ns": [30, 15, 25, 50, 35],
            "depth": [0, 0, 1, 0, 0],
        }
    )
    part = slice_order.sort_part(*_part_of(spans))
    assert part is not None and part[0].column("span_id").take(pa.array(part[1])).to_pylist() == [5, 4, 6, 8, 7]
    args = pa.table(
        {
            "span_id": [7, 6, 4, 6, 6, 5, 99],
            "key": ["k", "b", "x", "a", "a", "k", "lost"],
            "value": ["7k", "6b", "4x", "6a-2", "6a-1", None, "no such span"],
        }
    )
    batches = slice_order.args_in_order(part, args, batch_rows=2)
    assert len(batches) == 3
    found = [None if b is None else list(zip(b.rows.tolist(), b.keys.to_pylist(), b.values.to_pylist(), strict=True)) for b in batches]
    assert found == [
        [(0, "k", None), (1, "x", "4x")],  # rows 0-1: spans 5, 4
        [(0, "a", "6a-1"), (0, "a", "6a-2"), (0, "b", "6b")],  # rows 2-3: spans 6, 8
        [(0, "k", "7k")],  # row 4: span 7
    ]
    assert slice_order.args_in_order(part, None, batch_rows=2) == [None, None, None]


def test_kernel_and_memop_columns_go_beside_their_spans_rows():
    # perfetto/slice_part_details.sql's rows arrive in no order, for some spans of the part only
    # (and one for a span the part does not hold): each goes beside its span's row in the encoder's
    # order, batch by batch; a batch without any gets None.
    spans = pa.table(
        {
            "run_id": [1] * 5,
            "track_class": ["gpu"] * 5,
            "pid": pa.array([None] * 5, pa.int64()),
            "tid": pa.array([None] * 5, pa.int64()),
            "device_id": [0] * 5,
            "stream_id": [7] * 5,
            "span_id": [40, 10, 30, 20, 50],
            "ts": [40, 10, 30, 20, 50],
            "end_ts": [45, 15, 35, 25, 55],
            "span_end_ns": [45, 15, 35, 25, 55],
            "depth": [0] * 5,
        }
    )
    details = pa.table(
        {
            "span_id": [30, 99, 10, 20],
            "grid": ["[1, 1, 1]", "[9, 9, 9]", None, "[1, 1, 1]"],
            "bytes": pa.array([None, 5, 4096, None], pa.int64()),
        }
    )
    part = slice_order.sort_part(*_part_of(spans))
    assert part is not None
    assert part[0].take(pa.array(part[1])).column("span_id").to_pylist() == [10, 20, 30, 40, 50]
    batches = slice_order.rows_in_order(part, details, batch_rows=2)
    assert len(batches) == 3 and batches[2] is None  # rows 4: span 50, no details
    found = [[(row, *(b.columns[n][i].as_py() for n in ("grid", "bytes"))) for i, row in enumerate(b.rows.tolist())] for b in batches[:2] if b]
    assert found == [
        [(0, None, 4096), (1, "[1, 1, 1]", None)],  # rows 0-1: spans 10, 20
        [(0, "[1, 1, 1]", None)],  # rows 2-3: spans 30, 40
    ]
    # a part's string columns share one dictionary across its batches (the encoder interns each once)
    assert batches[0].columns["grid"].dictionary.equals(batches[1].columns["grid"].dictionary)
    assert slice_order.rows_in_order(part, details.slice(0, 0), batch_rows=2) == [None, None, None]
    assert slice_order.rows_in_order(part, None, batch_rows=2) == [None, None, None]
    assert slice_order.rows_in_order(None, details, batch_rows=2) == []


def test_flows_go_beside_the_rows_that_start_and_end_them():
    # perfetto/slice_part_flows.sql's rows, unsorted: an API call (span 10) starting three flows
    # (kept in id order, as a TrackEvent lists them), one starting one (span 30), GPU work (spans
    # 20, 40) terminating one each, and a flow end on a span the part does not hold.
    spans = pa.table(
        {
            "run_id": [1] * 4,
            "track_class": ["gpu", "thread", "thread", "gpu"],
            "pid": pa.array([None, 5, 5, None], pa.int64()),
            "tid": pa.array([None, 6, 6, None], pa.int64()),
            "device_id": pa.array([0, None, None, 0], pa.int64()),
            "stream_id": pa.array([7, None, None, 7], pa.int64()),
            "span_id": [40, 10, 30, 20],
            "ts": [41, 10, 30, 20],
            "end_ts": [45, 15, 35, 25],
            "span_end_ns": [45, 15, 35, 25],
            "depth": [0] * 4,
        }
    )
    flows = pa.table(
        {
            "span_id": [10, 40, 10, 30, 99, 20, 10],
            "flow_id": [303, 404, 101, 707, 9, 202, 202],
            "outgoing": [True, False, True, True, True, False, True],
        }
    )
    part = slice_order.sort_part(*_part_of(spans))
    assert part is not None
    # CPU tracks first: spans 10, 30 (thread), then 20, 40 (gpu stream)
    assert part[0].take(pa.array(part[1])).column("span_id").to_pylist() == [10, 30, 20, 40]
    outgoing, terminating = slice_order.flows_in_order(part, flows, batch_rows=3)

    def listed(batches):
        return [None if b is None else list(zip(b.rows.tolist(), b.columns["flow_id"].to_pylist(), strict=True)) for b in batches]

    assert listed(outgoing) == [[(0, 101), (0, 202), (0, 303), (1, 707)], None]
    assert listed(terminating) == [[(2, 202)], [(0, 404)]]
    assert slice_order.flows_in_order(part, flows.slice(0, 0), batch_rows=3) == ([None, None], [None, None])
    assert slice_order.flows_in_order(None, flows, batch_rows=3) == ([], [])
