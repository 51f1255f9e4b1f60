"""Streaming writer of Perfetto TracePackets on one sequence, with string interning.

A Perfetto trace file is the serialized `Trace` message: `repeated TracePacket packet = 1`,
so the concatenation of serialized `Trace` messages is one trace. Packets are built in a small
`Trace` of at most `chunk_packets` packets, which is serialized, appended to the file and
replaced by a fresh one -- nothing is kept in memory but that chunk and the intern tables.

Interning rules the trace processor enforces (it silently drops packets that break them):
  * the first packet of the sequence carries SEQ_INCREMENTAL_STATE_CLEARED;
  * every packet that uses interned ids carries SEQ_NEEDS_INCREMENTAL_STATE;
  * an interned string is defined (in `interned_data`) on, or before, the first packet that
    uses its id, on the same sequence, after the last clear.
The intern tables are bounded: when they reach `max_interned` entries the writer clears the
incremental state and starts over, so memory does not grow with the number of distinct names.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from concurrent.futures import Future
from typing import BinaryIO

from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from ..formats import perfetto_proto as wp

SEQ_INCREMENTAL_STATE_CLEARED = pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
SEQ_NEEDS_INCREMENTAL_STATE = pb.TracePacket.SEQ_NEEDS_INCREMENTAL_STATE
SLICE_BEGIN = pb.TrackEvent.TYPE_SLICE_BEGIN
SLICE_END = pb.TrackEvent.TYPE_SLICE_END
INSTANT = pb.TrackEvent.TYPE_INSTANT
COUNTER = pb.TrackEvent.TYPE_COUNTER

_EVENT_NAMES, _CATEGORIES = wp.INTERNED_EVENT_NAMES, wp.INTERNED_CATEGORIES
_ANNOTATION_NAMES, _STRING_VALUES = wp.INTERNED_ANNOTATION_NAMES, wp.INTERNED_STRING_VALUES
_TABLES = (_EVENT_NAMES, _CATEGORIES, _ANNOTATION_NAMES, _STRING_VALUES)


class PacketWriter:
    """Writes TracePackets of one trusted sequence to a binary file, interning strings."""

    def __init__(self, out: BinaryIO, sequence_id: int = 2, descriptor_sequence_id: int = 1, max_interned: int = 200_000, chunk_packets: int = 4096):
        self.out = out
        self.sequence_id = sequence_id
        # Track descriptors go on a sequence of their own: a thread descriptor would otherwise
        # make its thread the default of the event sequence, and the trace processor would tag
        # every event on GPU tracks with that thread (legacy_event.passthrough_utid).
        self.descriptor_sequence_id = descriptor_sequence_id
        self.max_interned = max_interned
        self.packets_written = 0
        self.bytes_written = 0
        self._tables: dict[str, dict[str, int]] = {t: {} for t in _TABLES}
        self._interned_count = 0
        self._cleared_pending = True  # the first packet clears the (empty) incremental state
        self.chunk_packets = chunk_packets
        # A fresh Trace per chunk: a reused upb message would keep its arena, which then grows
        # with every packet ever written.
        self._chunk = pb.Trace()
        self._in_chunk = 0

    # -- chunks ------------------------------------------------------------------------
    def _add(self) -> pb.TracePacket:
        if self._in_chunk >= self.chunk_packets:
            self.flush()
        self._in_chunk += 1
        self.packets_written += 1
        return self._chunk.packet.add()

    def flush(self) -> None:
        """Write the packets built so far. Call once at the end."""
        if self._in_chunk:
            data = self._chunk.SerializeToString()
            self.out.write(data)
            self.bytes_written += len(data)
            self._chunk = pb.Trace()
            self._in_chunk = 0

    def take_chunk(self) -> bytes:
        """The packets built so far, serialized and taken out instead of written (counted already:
        write them with write_raw(data, 0))."""
        data = self._chunk.SerializeToString() if self._in_chunk else b""
        if self._in_chunk:
            self._chunk = pb.Trace()
            self._in_chunk = 0
        return data

    def write_raw(self, data: bytes, packets: int) -> None:
        """Append serialized packets (a Trace fragment) after everything written so far."""
        self.flush()
        self.out.write(data)
        self.bytes_written += len(data)
        self.packets_written += packets

    def _new_packet(self, timestamp: int | None, uses_interning: bool) -> pb.TracePacket:
        packet = self._add()
        packet.trusted_packet_sequence_id = self.sequence_id
        if timestamp is not None:
            packet.timestamp = timestamp
        flags = 0
        if self._cleared_pending:
            flags |= SEQ_INCREMENTAL_STATE_CLEARED
            self._cleared_pending = False
        if uses_interning:
            flags |= SEQ_NEEDS_INCREMENTAL_STATE
        if flags:
            packet.sequence_flags = flags
        return packet

    # -- interning ---------------------------------------------------------------------
    def _reset_if_full(self) -> None:
        """Called before a packet is built: drop the intern tables once they are full."""
        if self._interned_count >= self.max_interned:
            for entries in self._tables.values():
                entries.clear()
            self._interned_count = 0
            self._cleared_pending = True

    def _intern(self, packet: pb.TracePacket, table: str, text: str) -> int:
        """The iid of a string not yet in `table`, defined in this packet's interned_data."""
        entries = self._tables[table]
        iid = len(entries) + 1  # iids start at 1; 0 means "not set"
        entries[text] = iid
        self._interned_count += 1
        add_interned(packet, table, iid, text)
        return iid

    # -- packets -----------------------------------------------------------------------
    def track_descriptor(self, descriptor: pb.TrackDescriptor) -> None:
        packet = self._add()
        packet.trusted_packet_sequence_id = self.descriptor_sequence_id
        packet.track_descriptor.CopyFrom(descriptor)

    def slice_begin(
        self,
        track_uuid: int,
        ts: int,
        name: str,
        category: str,
        int_args: Iterable[tuple[str, int]] = (),
        str_args: Iterable[tuple[str, str]] = (),
        float_args: Iterable[tuple[str, float]] = (),
        flow_ids: Iterable[int] = (),
        terminating_flow_ids: Iterable[int] = (),
        event_type: int = SLICE_BEGIN,
    ) -> None:
        # The hot path of the export: dictionary look-ups first, _intern only for new strings.
        self._reset_if_full()
        packet = self._new_packet(ts, uses_interning=True)
        tables, intern = self._tables, self._intern
        event = packet.track_event
        event.type = event_type
        event.track_uuid = track_uuid
        event.name_iid = tables[_EVENT_NAMES].get(name) or intern(packet, _EVENT_NAMES, name)
        event.category_iids.append(tables[_CATEGORIES].get(category) or intern(packet, _CATEGORIES, category))
        add = event.debug_annotations.add
        keys = tables[_ANNOTATION_NAMES]
        for key, value in int_args:
            annotation = add()
            annotation.name_iid = keys.get(key) or intern(packet, _ANNOTATION_NAMES, key)
            annotation.int_value = value
        for key, number in float_args:
            annotation = add()
            annotation.name_iid = keys.get(key) or intern(packet, _ANNOTATION_NAMES, key)
            annotation.double_value = number
        if str_args:
            values = tables[_STRING_VALUES]
            for key, text in str_args:
                annotation = add()
                annotation.name_iid = keys.get(key) or intern(packet, _ANNOTATION_NAMES, key)
                annotation.string_value_iid = values.get(text) or intern(packet, _STRING_VALUES, text)
        if flow_ids:
            event.flow_ids.extend(flow_ids)
        if terminating_flow_ids:
            event.terminating_flow_ids.extend(terminating_flow_ids)

    def instant(self, track_uuid: int, ts: int, name: str, category: str, str_args: Iterable[tuple[str, str]] = ()) -> None:
        self.slice_begin(track_uuid, ts, name, category, str_args=str_args, event_type=INSTANT)

    def slice_end(self, track_uuid: int, ts: int) -> None:
        packet = self._new_packet(ts, uses_interning=False)
        event = packet.track_event
        event.type = SLICE_END
        event.track_uuid = track_uuid

    def counter(self, track_uuid: int, ts: int, value: float) -> None:
        packet = self._new_packet(ts, uses_interning=False)
        event = packet.track_event
        event.type = COUNTER
        event.track_uuid = track_uuid
        event.double_counter_value = value


def add_interned(packet: pb.TracePacket, table: str, iid: int, text: str) -> None:
    """Define `text` as `iid` in `packet`'s interned_data table `table` (string values are bytes there)."""
    entry = getattr(packet.interned_data, table).add()
    entry.iid = iid
    if table == _STRING_VALUES:
        entry.str = text.encode("utf-8")
    else:
        entry.name = text


class OrderedWrites:
    """Writes to a PacketWriter in the order they were put, some of them still being computed on
    another thread (futures): the file's bytes never depend on which finished first. At most
    `ahead` futures wait; putting one more waits for the oldest."""

    def __init__(self, writer: PacketWriter, ahead: int = 2):
        self.writer = writer
        self.ahead = ahead
        self._queue: deque[tuple[bytes | Future[bytes], int]] = deque()
        self._futures = 0

    def put(self, data: bytes | Future[bytes], packets: int) -> None:
        self._queue.append((data, packets))
        self._futures += isinstance(data, Future)
        self._write_front(self.ahead)

    def drain(self) -> None:
        """Write everything put so far (waiting for what is still being computed)."""
        self._write_front(0)

    def _write_front(self, ahead: int) -> None:
        while self._queue:
            data, packets = self._queue[0]
            if isinstance(data, Future):
                if not data.done() and self._futures <= ahead:
                    return
                data = data.result()
                self._futures -= 1
            self._queue.popleft()
            self.writer.write_raw(data, packets)
