"""The slices of an export, encoded batch by batch from Arrow columns (queries/perfetto/slices.sql).

Each batch of spans becomes, with array operations only:
  1. one packet defining the strings the batch uses that the sequence does not know yet (its
     names, categories, annotation keys and values: interned per batch, not per row);
  2. the begin and end packets of its slices, in the order the trace processor must see them.
Order and interning carry state from batch to batch and run on the caller's thread; the packets'
bytes depend on nothing else and are encoded on `pool` when one is given (packets.OrderedWrites
keeps them in batch order).

Order. Within a track the spans come sorted by start (longest first). The end of slice i goes
right before the first later begin j with ts_j >= end_i (or at the end of the track), inner ends
first -- `_nest`, with one searchsorted and one lexsort. That is the order the per-row stack of
tracks.Lanes gives whenever the slices nest (GPU: do not overlap), which `_nest` checks: the
begin/end sequence is balanced (pairs match level by level) and its times never go back. A
track segment that fails the check -- ranges that cross, kernels that overlap -- goes through
tracks.Lanes row by row and stays there to its end (lane tracks, as before); on a GPU stream
only the rows that start before the row ahead of them ended (or follow one on another lane) need
Lanes, the runs between them are made as arrays (`_place_on_stream`). Slices still open
at the end of a batch are carried into the next one; every track stays open until `finish`,
as the parts of the query (perfetto/slice_parts.sql: runs cut by start time) visit each track
several times, in start order.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterable
from concurrent.futures import Executor
from dataclasses import dataclass, field
from functools import partial

import numpy as np
import pyarrow as pa

from ..formats import perfetto_proto as wp
from ..naming import parse_layer_name
from .arrow_arrays import dictionary_encoded
from .arrow_arrays import ints as _ints
from .arrow_arrays import valid as _valid
from .arrow_arrays import values as _values
from .intern_tables import ANNOTATION_NAMES, CATEGORIES, EVENT_NAMES, STRING_VALUES, InternTables
from .packets import OrderedWrites, PacketWriter
from .slice_order import TRACK, BatchArgs, BatchDetails
from .tracks import Lanes, TrackRegistry
from .wire import Constant, Fixed64, Message, Part, Varint

# Columns of perfetto_slices written as debug annotations, by value type, in the order written.
INT_ANNOTATIONS = (
    "span_id",
    "correlation_id",
    "iteration",
    "layer_index",
    "registers_per_thread",
    "shared_mem_static_bytes",
    "shared_mem_dynamic_bytes",
    "bytes",
)
STR_ANNOTATIONS = ("category", "range_style", "phase", "grid", "block", "copy_kind", "src_kind", "dst_kind")
FLOAT_ANNOTATIONS = ("occupancy_estimate",)


@dataclass
class BatchExtras:
    """What a batch's rows carry beside its columns (slice_order.py), each for the rows that have it:
    span_args, kernel/memop columns, the flows the rows start and those they terminate."""

    args: BatchArgs | None = None
    details: BatchDetails | None = None
    flows_out: BatchDetails | None = None
    flows_in: BatchDetails | None = None


PartMaker = Callable[[], Part]  # makes the occurrences of one field (the encoding's work, done where the packets are encoded)


class _Recorder:
    """Stands in for the PacketWriter of tracks.Lanes: keeps the events it would write, in order."""

    def __init__(self):
        self.events: list[tuple[int, int, int]] = []  # (row or -1 for an end, uuid, ts), since the last chunk
        self.chunks: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def slice_end(self, uuid: int, ts: int) -> None:
        self.events.append((-1, uuid, ts))

    def add(self, rows: np.ndarray, uuids: np.ndarray, times: np.ndarray) -> None:
        """Events made as arrays, after those recorded one by one so far."""
        self._flush()
        self.chunks.append((rows, uuids, times))

    def take(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        self._flush()
        taken = _concat(self.chunks)
        self.chunks = []
        return taken

    def _flush(self) -> None:
        if self.events:
            events = np.array(self.events, dtype=np.int64).reshape(-1, 3)
            self.events.clear()
            self.chunks.append((events[:, 0], events[:, 1], events[:, 2]))


def _nest(ts: np.ndarray, end: np.ndarray, carried: np.ndarray, nest: bool):
    """Begin/end order of one track segment whose slices nest (GPU: never overlap), or None.

    carried: ends of the slices still open from earlier batches, outermost first. Returns
    (row or -1 per event, ts per event, ends still open, outermost first)."""
    m, n = len(carried), len(ts)
    total = m + n
    starts = np.concatenate([np.full(m, np.iinfo(np.int64).min), ts])
    ends = np.concatenate([carried, end])
    index = np.arange(total)
    # the begin each end goes right before (total: after the last begin)
    position = np.maximum(index + 1, np.searchsorted(starts, ends, side="left"))
    # ends in emission order: by that begin, innermost (latest begun) first (distinct keys, nearly
    # in order already: numpy's stable sort takes such runs whole)
    end_order = np.argsort(position * (total + 1) + (total - index), kind="stable")
    end_position = position[end_order]
    # where each event goes: begin p after the ends placed at or before p; end k after k ends and its begins
    begin_at = index + np.cumsum(np.bincount(position, minlength=total + 1))[:total]
    end_at = np.empty(total, dtype=np.int64)
    end_at[end_order] = np.arange(total) + end_position
    is_begin = np.zeros(2 * total, dtype=bool)
    is_begin[begin_at] = True
    slice_of = np.empty(2 * total, dtype=np.int64)
    slice_of[begin_at], slice_of[end_at] = index, index
    depth_after = np.cumsum(np.where(is_begin, 1, -1))
    level = np.where(is_begin, depth_after - 1, depth_after)
    # Each end follows its begin, so every level alternates begin, end: the ends pair with their own
    # begins exactly when each slice begins and ends on one level (else two slices cross).
    if not np.array_equal(level[begin_at], level[end_at]):
        return None
    times = np.where(is_begin, starts[slice_of], ends[slice_of])
    real = ~(is_begin & (slice_of < m))  # the carried slices began in an earlier batch
    if np.any(np.diff(times[real]) < 0):
        return None
    if not nest and np.any(level[begin_at[m:]] != 0):
        return None
    still_open = position == total
    emitted = real & ~(~is_begin & still_open[slice_of])
    rows = np.where(is_begin, slice_of - m, -1)[emitted]
    return rows, times[emitted], ends[still_open]


@dataclass
class _Track:
    key: tuple
    uuid: int
    nest: bool
    carried: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    lanes: Lanes | None = None  # set once the track needs lanes (rows go through Lanes from then on)
    recorder: _Recorder | None = None


class SliceEncoder:
    """Writes the slices of perfetto/slices.sql, batch by batch, on a sequence of their own."""

    def __init__(
        self, writer: PacketWriter, tracks: TrackRegistry, track_keys: list[tuple], sequence_id: int, max_interned: int, pool: Executor | None = None
    ):
        """track_keys: the TRACK_KEY tuple of each track rank of the batches' TRACK column (slice_order.SpanTracks.keys)."""
        self.writer = writer
        self.track_keys = track_keys
        # The packets of a batch are encoded on `pool` (when given) while the next batch is ordered
        # and interned here; they reach the file in batch order all the same.
        self.pool = pool
        self.output = OrderedWrites(writer)
        self.tracks = tracks
        self.sequence_id = sequence_id
        self.interned = InternTables(max_interned)
        self.open_tracks: dict[tuple, _Track] = {}  # every track seen: the parts visit them in turn
        self.slices = 0
        self.flows = 0

    # -- order -----------------------------------------------------------------------
    def _close_track(self, track: _Track, events: list) -> None:
        if track.lanes is not None and track.recorder is not None:
            track.lanes.close()
            events.append(track.recorder.take())
        elif len(track.carried):
            ends = track.carried[::-1]  # innermost first
            events.append((np.full(len(ends), -1), np.full(len(ends), track.uuid), ends))

    def _segment(self, key: tuple, first_row: int, ts: np.ndarray, end: np.ndarray, events: list) -> None:
        """Events of the rows [first_row, first_row + len(ts)) of one track."""
        track = self.open_tracks.get(key)
        if track is None:
            track = self.open_tracks[key] = _Track(key, self.tracks.base_track(*key), nest=key[1] != "gpu")
        if track.lanes is None:
            nested = _nest(ts, end, track.carried, track.nest)
            if nested is not None:
                rows, times, track.carried = nested
                rows = np.where(rows >= 0, rows + first_row, -1)
                events.append((rows, np.full(len(rows), track.uuid), times))
                return
            track.recorder = _Recorder()
            track.lanes = Lanes(track.recorder, track.uuid, nest=track.nest, new_lane=self.tracks.lane)  # type: ignore[arg-type]
            track.lanes.stacks[0] = [int(e) for e in track.carried]
        assert track.recorder is not None
        if track.nest:
            place, record = track.lanes.place, track.recorder.events.append
            for i, (start, stop) in enumerate(zip(ts.tolist(), end.tolist(), strict=True)):
                uuid = place(start, stop)
                record((first_row + i, uuid, start))
        else:
            _place_on_stream(track.lanes, track.recorder, first_row, ts, end)
        events.append(track.recorder.take())

    def _order(self, batch: pa.RecordBatch, events: list) -> None:
        track = _values(batch.column(TRACK))
        n = batch.num_rows
        bounds = np.append(np.flatnonzero(np.r_[True, track[1:] != track[:-1]]), n)
        ts = _values(batch.column("ts"))
        end = _values(batch.column("end_ts"))
        for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
            self._segment(self.track_keys[int(track[a])], a, ts[a:b], end[a:b], events)

    # -- packets ---------------------------------------------------------------------
    def write_batch(self, batch: pa.RecordBatch, extras: BatchExtras | None = None) -> None:
        n = batch.num_rows
        if n == 0:
            return
        events: list = []
        self._order(batch, events)
        descriptors = self.writer.take_chunk()  # of lanes opened by this batch: before its events
        if descriptors:
            self.output.put(descriptors, 0)
        rows, uuids, times = _concat(events)
        begins = rows >= 0
        row_uuid = np.empty(n, dtype=np.int64)
        row_uuid[rows[begins]] = uuids[begins]
        self.interned.start_batch()
        begin_events = self._begin_events(batch, row_uuid, extras or BatchExtras())
        intern_packet = self.interned.take_packet(self.sequence_id)
        if intern_packet is not None:
            self.output.put(intern_packet, 1)
        self._put_events(begin_events, rows, uuids, times)
        self.slices += n

    def write_part(self, batches: Iterable[tuple[pa.RecordBatch, BatchExtras]]) -> None:
        """The batches of one part with what their rows carry (slice_order.in_order and the
        *_in_order placements: takes of one batch each, sharing its dictionaries)."""
        self.interned.start_part()
        for batch, extras in batches:
            self.write_batch(batch, extras)
        self.interned.start_part()

    def finish(self) -> None:
        events: list = []
        for track in self.open_tracks.values():
            self._close_track(track, events)
        if events:
            self._put_events([], *_concat(events))
        self.output.drain()

    def _begin_events(self, batch: pa.RecordBatch, row_uuid: np.ndarray, extras: BatchExtras) -> list[PartMaker]:
        """The fields of each row's begin TrackEvent (in field-number order; owners: rows), each to
        be made by calling it: the strings are interned here, the encoding may go to another thread."""
        n = batch.num_rows
        rows = np.arange(n)
        interned = self.interned
        category_iids, _ = interned.column(CATEGORIES, batch.column("kind"), "kind")
        name_iids, _ = interned.column(EVENT_NAMES, batch.column("name"), "name")
        parts: list[PartMaker] = [partial(Varint, wp.EVENT_CATEGORY_IID, category_iids, rows)]

        def annotated(key: str) -> tuple[pa.Array, np.ndarray] | None:
            """The column `key` and the rows it is for: the batch's own, or its kernel/memop rows'."""
            if key in batch.schema.names:
                return batch.column(key), rows
            if extras.details is not None and key in extras.details.columns:
                return extras.details.columns[key], extras.details.rows
            return None

        for key in INT_ANNOTATIONS:
            if (found := annotated(key)) is not None:
                values, valid = _ints(found[0])
                if valid.any():
                    parts.append(partial(_annotation, interned.iid(ANNOTATION_NAMES, key), Varint, wp.ANNOTATION_INT, values[valid], found[1][valid]))
        for key in FLOAT_ANNOTATIONS:
            if (found := annotated(key)) is not None:
                valid = _valid(found[0])
                if valid.any():
                    values = _values(found[0], 0.0).astype(np.float64)
                    parts.append(
                        partial(_annotation, interned.iid(ANNOTATION_NAMES, key), Fixed64, wp.ANNOTATION_DOUBLE, values[valid], found[1][valid])
                    )
        for key in STR_ANNOTATIONS:
            if (found := annotated(key)) is not None:
                iids, valid = interned.column(STRING_VALUES, found[0], key)
                if valid.any():
                    parts.append(
                        partial(_annotation, interned.iid(ANNOTATION_NAMES, key), Varint, wp.ANNOTATION_STRING_IID, iids[valid], found[1][valid])
                    )
        parts += [partial(_string_annotations, found) for found in (self._layer_annotations(batch), self._args(extras.args))]
        parts.append(partial(Constant, wp.EVENT_TYPE + wp.varint_bytes(wp.TYPE_SLICE_BEGIN), rows))
        parts.append(partial(Varint, wp.EVENT_NAME_IID, name_iids, rows))
        parts.append(partial(Varint, wp.EVENT_TRACK_UUID, row_uuid, rows))
        for tag, flows in ((wp.EVENT_FLOW_ID, extras.flows_out), (wp.EVENT_TERMINATING_FLOW_ID, extras.flows_in)):
            if flows is not None:  # (a span's outgoing flows in id order)
                parts.append(partial(Fixed64, tag, _ints(flows.columns["flow_id"])[0], flows.rows))
        self.flows += 0 if extras.flows_out is None else len(extras.flows_out.rows)
        return parts

    def _layer_annotations(self, batch: pa.RecordBatch) -> np.ndarray:
        """(row, name iid, string value iid) of the layer name and type of layer spans (few rows,
        looked at one by one)."""
        iid = self.interned.iid
        layers: list[tuple[int, int, int]] = []
        names = batch.column("name")
        kinds = dictionary_encoded(batch.column("kind"))  # (pc.equal with a str would import pandas)
        layer = kinds.dictionary.to_pylist().index("layer") if "layer" in kinds.dictionary.to_pylist() else -1
        is_layer = _valid(kinds) & (_values(kinds.indices) == layer)
        for row in np.flatnonzero(is_layer).tolist():
            parsed = parse_layer_name(names[row].as_py())
            if parsed is not None:
                layers += [
                    (row, iid(ANNOTATION_NAMES, key), iid(STRING_VALUES, text))
                    for key, text in (("layer_name", parsed[1]), ("layer_type", parsed[2]))
                ]
        return np.array(layers, dtype=np.int64).reshape(-1, 3)

    def _args(self, args: BatchArgs | None) -> np.ndarray:
        """(row, key iid, value iid) of each span_args entry with a value, rows in order: each
        distinct key and value of the batch looked up once."""
        if args is None:
            return np.empty((0, 3), dtype=np.int64)
        key_iids, _ = self.interned.column(ANNOTATION_NAMES, args.keys, None)
        value_iids, has_value = self.interned.column(STRING_VALUES, args.values, None)
        return np.stack([args.rows, key_iids.astype(np.int64), value_iids.astype(np.int64)], axis=1)[has_value]

    def _put_events(self, begin_events: list[PartMaker], rows: np.ndarray, uuids: np.ndarray, times: np.ndarray) -> None:
        """Queue the batch's begin and end packets, encoded here or on the pool."""
        args = (self.sequence_id, begin_events, rows, uuids, times)
        self.output.put(self.pool.submit(_encode_events, *args) if self.pool is not None else _encode_events(*args), len(rows))


def _encode_events(sequence_id: int, begin_events: list[PartMaker], rows: np.ndarray, uuids: np.ndarray, times: np.ndarray) -> bytes:
    """Begin and end packets in event order, framed as Trace.packet fields (begins: one per row
    of the batch, in row order; none when begin_events is empty)."""
    count = len(rows)
    events = np.arange(count)
    begins = np.flatnonzero(rows >= 0)
    ends = np.flatnonzero(rows < 0)
    end_index = np.arange(len(ends))
    end_events = [Constant(wp.EVENT_TYPE + wp.varint_bytes(wp.TYPE_SLICE_END), end_index), Varint(wp.EVENT_TRACK_UUID, uuids[ends], end_index)]
    parts: list[Part] = [Varint(wp.PACKET_TIMESTAMP, times, events), Constant(wp.PACKET_SEQUENCE_ID + wp.varint_bytes(sequence_id), events)]
    if begin_events:
        parts.append(Message(wp.PACKET_TRACK_EVENT, len(begins), [make() for make in begin_events], owners=begins))
    parts.append(Message(wp.PACKET_TRACK_EVENT, len(ends), end_events, owners=ends))
    parts.append(Constant(wp.PACKET_SEQUENCE_FLAGS + wp.varint_bytes(wp.SEQ_NEEDS_INCREMENTAL_STATE), begins))
    return Message(wp.TRACE_PACKET, count, parts).encode()


def _annotation(key_iid: int, kind: type[Varint] | type[Fixed64], value_tag: bytes, values: np.ndarray, owners: np.ndarray) -> Message:
    """One DebugAnnotation field {name_iid, value} per owner (the name the same bytes for all)."""
    index = np.arange(len(owners))
    fields = [Constant(wp.ANNOTATION_NAME_IID + wp.varint_bytes(key_iid), index), kind(value_tag, values, index)]
    return Message(wp.EVENT_DEBUG_ANNOTATION, len(owners), fields, owners=owners)


def _string_annotations(found: np.ndarray) -> Message:
    """DebugAnnotation fields from (owner, name iid, string value iid) rows."""
    index = np.arange(len(found))
    fields = [Varint(wp.ANNOTATION_NAME_IID, found[:, 1], index), Varint(wp.ANNOTATION_STRING_IID, found[:, 2], index)]
    return Message(wp.EVENT_DEBUG_ANNOTATION, len(found), fields, owners=found[:, 0])


def _place_on_stream(lanes: Lanes, recorder: _Recorder, first_row: int, ts: np.ndarray, end: np.ndarray) -> None:
    """tracks.Lanes.place for the rows of a GPU stream that has lanes, with the same events: a row
    that starts after the row before it ended, which went on the stream's own track, goes there
    too (Lanes closes that one slice and opens it; no other lane is looked at). Such runs -- most
    rows of a stream whose kernels overlap now and then -- are made as arrays; the rest row by row."""
    base, n = lanes.base_uuid, len(ts)
    starts, stops = ts.tolist(), end.tolist()
    # rows that do not start after the row before them ended: each needs Lanes
    unchained = np.flatnonzero(np.r_[True, end[:-1] > ts[1:]]).tolist() + [n]
    i = 0
    while i < n:
        uuid = lanes.place(starts[i], stops[i])
        recorder.events.append((first_row + i, uuid, starts[i]))
        last = unchained[bisect_right(unchained, i)] if uuid == base else i + 1  # the run chained to row i ends there
        if last > i + 1:
            chained = np.arange(i + 1, last)
            rows = np.empty(2 * len(chained), dtype=np.int64)
            rows[0::2], rows[1::2] = -1, first_row + chained
            times = np.empty(2 * len(chained), dtype=np.int64)
            times[0::2], times[1::2] = end[chained - 1], ts[chained]
            recorder.add(rows, np.full(len(rows), base, dtype=np.int64), times)
            lanes.stacks[0] = [stops[last - 1]]
        i = last


def _concat(events: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if not events:
        empty = np.empty(0, dtype=np.int64)
        return empty, empty, empty
    return tuple(np.concatenate([e[k] for e in events]).astype(np.int64) for k in range(3))  # type: ignore[return-value]
