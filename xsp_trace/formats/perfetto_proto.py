"""The protobuf wire facts of a Perfetto trace that xsp_trace.perfetto encodes by hand.

A trace file is the `Trace` message (`repeated TracePacket packet = 1`). The slices are written
as raw protobuf bytes from columns (xsp_trace/perfetto/wire.py), so the tag of every field it
writes lives here, taken from the `perfetto` package's own compiled protos -- the field numbers
and types are read from their descriptors, and a type that is not the wire type the encoder
writes fails at import, not in a trace.

Protobuf wire types: 0 varint, 1 fixed 64-bit, 2 length-delimited. A tag is the varint of
(field number << 3 | wire type).
"""

from __future__ import annotations

from google.protobuf.descriptor import FieldDescriptor  # type: ignore[import-untyped]
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

VARINT, FIXED64, LENGTH_DELIMITED = 0, 1, 2
_WIRE_TYPE = {
    FieldDescriptor.TYPE_UINT64: VARINT,
    FieldDescriptor.TYPE_INT64: VARINT,  # two's complement: a negative value takes 10 bytes
    FieldDescriptor.TYPE_UINT32: VARINT,
    FieldDescriptor.TYPE_ENUM: VARINT,
    FieldDescriptor.TYPE_FIXED64: FIXED64,
    FieldDescriptor.TYPE_DOUBLE: FIXED64,
    FieldDescriptor.TYPE_MESSAGE: LENGTH_DELIMITED,
    FieldDescriptor.TYPE_STRING: LENGTH_DELIMITED,
    FieldDescriptor.TYPE_BYTES: LENGTH_DELIMITED,
}


def varint_bytes(value: int) -> bytes:
    """The varint of a non-negative integer (a tag, a length, a constant field's value)."""
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def tag(message, field: str, wire_type: int) -> bytes:
    """The tag bytes of `message.field`, checked to have `wire_type` (and, if repeated, not packed)."""
    descriptor = message.DESCRIPTOR.fields_by_name[field]
    if _WIRE_TYPE.get(descriptor.type) != wire_type or descriptor.is_packed:
        raise RuntimeError(f"perfetto proto {message.DESCRIPTOR.name}.{field} is not of wire type {wire_type}: the encoder needs updating")
    return varint_bytes(descriptor.number << 3 | wire_type)


# Trace
TRACE_PACKET = tag(pb.Trace, "packet", LENGTH_DELIMITED)
# TracePacket
PACKET_TIMESTAMP = tag(pb.TracePacket, "timestamp", VARINT)
PACKET_SEQUENCE_ID = tag(pb.TracePacket, "trusted_packet_sequence_id", VARINT)
PACKET_TRACK_EVENT = tag(pb.TracePacket, "track_event", LENGTH_DELIMITED)
PACKET_INTERNED_DATA = tag(pb.TracePacket, "interned_data", LENGTH_DELIMITED)
PACKET_SEQUENCE_FLAGS = tag(pb.TracePacket, "sequence_flags", VARINT)
# TrackEvent
EVENT_CATEGORY_IID = tag(pb.TrackEvent, "category_iids", VARINT)
EVENT_DEBUG_ANNOTATION = tag(pb.TrackEvent, "debug_annotations", LENGTH_DELIMITED)
EVENT_TYPE = tag(pb.TrackEvent, "type", VARINT)
EVENT_NAME_IID = tag(pb.TrackEvent, "name_iid", VARINT)
EVENT_TRACK_UUID = tag(pb.TrackEvent, "track_uuid", VARINT)
EVENT_FLOW_ID = tag(pb.TrackEvent, "flow_ids", FIXED64)
EVENT_TERMINATING_FLOW_ID = tag(pb.TrackEvent, "terminating_flow_ids", FIXED64)
# DebugAnnotation
ANNOTATION_NAME_IID = tag(pb.DebugAnnotation, "name_iid", VARINT)
ANNOTATION_INT = tag(pb.DebugAnnotation, "int_value", VARINT)
ANNOTATION_DOUBLE = tag(pb.DebugAnnotation, "double_value", FIXED64)
ANNOTATION_STRING_IID = tag(pb.DebugAnnotation, "string_value_iid", VARINT)


def _interned_table(table: str) -> tuple[int, bytes, bytes, bytes]:
    """(field number, tag of an entry, tag of its iid, tag of its text) of an InternedData table."""
    descriptor = pb.InternedData.DESCRIPTOR.fields_by_name[table]
    entry = descriptor.message_type
    text = "str" if "str" in entry.fields_by_name else "name"
    message = getattr(pb, entry.name)
    return descriptor.number, tag(pb.InternedData, table, LENGTH_DELIMITED), tag(message, "iid", VARINT), tag(message, text, LENGTH_DELIMITED)


# InternedData: the tables the writers intern into (fields of InternedData), each with its entry
# message's iid and text (`name`, or `str` for debug annotation string values).
INTERNED_EVENT_NAMES = "event_names"
INTERNED_CATEGORIES = "event_categories"
INTERNED_ANNOTATION_NAMES = "debug_annotation_names"
INTERNED_STRING_VALUES = "debug_annotation_string_values"
INTERNED_TABLES = {
    table: _interned_table(table) for table in (INTERNED_CATEGORIES, INTERNED_EVENT_NAMES, INTERNED_ANNOTATION_NAMES, INTERNED_STRING_VALUES)
}

# Enum values
SEQ_INCREMENTAL_STATE_CLEARED = pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
SEQ_NEEDS_INCREMENTAL_STATE = pb.TracePacket.SEQ_NEEDS_INCREMENTAL_STATE
TYPE_SLICE_BEGIN = pb.TrackEvent.TYPE_SLICE_BEGIN
TYPE_SLICE_END = pb.TrackEvent.TYPE_SLICE_END
