"""Protobuf wire encoding of many messages at once, with numpy.

A `Pieces` is a list of byte strings, each owned by an index (a row, an event, an annotation),
held as one byte array plus a length per piece. Fields are encoded for all their owners in a
few array operations (`varint_field`, `fixed64_field`), and `join` concatenates, per owner, the
pieces of several parts in order -- which is how a message is built from its fields, and a
length-delimited field (`message_field`) from a message. Nothing loops over rows in Python.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

_MAX_VARINT = 10


@dataclass
class Pieces:
    owners: np.ndarray  # int64, the owner of each piece; non-decreasing within a part
    lengths: np.ndarray  # int64, bytes per piece
    data: np.ndarray  # uint8, the pieces back to back

    @property
    def size(self) -> int:
        return len(self.owners)


def _starts(lengths: np.ndarray) -> np.ndarray:
    starts = np.zeros(len(lengths), dtype=np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    return starts


def varint_lengths(values: np.ndarray) -> np.ndarray:
    """Bytes of the varint of each uint64 value (1 to 10)."""
    lengths = np.ones(len(values), dtype=np.int64)
    for k in range(1, _MAX_VARINT):
        lengths += values >= np.uint64(1 << (7 * k))
    return lengths


def _put_varints(data: np.ndarray, at: np.ndarray, values: np.ndarray, lengths: np.ndarray) -> None:
    """Write the varint of values[i] at data[at[i]:at[i] + lengths[i]]."""
    rest = values.copy()
    for k in range(int(lengths.max(initial=0))):
        live = lengths > k
        byte = (rest[live] & np.uint64(0x7F)).astype(np.uint8)
        byte |= np.where(lengths[live] > k + 1, np.uint8(0x80), np.uint8(0))
        data[at[live] + k] = byte
        rest >>= np.uint64(7)


def _as_uint64(values) -> np.ndarray:
    values = np.asarray(values)
    return values.view(np.uint64) if values.dtype == np.int64 else values.astype(np.uint64)


def varint_field(tag: bytes, values, owners: np.ndarray) -> Pieces:
    """One `tag` + varint(value) piece per owner (int64 values: two's complement, as protobuf)."""
    values = _as_uint64(values)
    lengths = varint_lengths(values) + len(tag)
    starts = _starts(lengths)
    data = np.empty(int(lengths.sum()), dtype=np.uint8)
    for k, byte in enumerate(tag):
        data[starts + k] = byte
    _put_varints(data, starts + len(tag), values, lengths - len(tag))
    return Pieces(owners, lengths, data)


def fixed64_field(tag: bytes, values, owners: np.ndarray) -> Pieces:
    """One `tag` + 8 little-endian bytes piece per owner (uint64, int64 or float64 values)."""
    values = np.ascontiguousarray(values)
    width = len(tag) + 8
    data = np.empty((len(values), width), dtype=np.uint8)
    data[:, : len(tag)] = np.frombuffer(tag, dtype=np.uint8)
    data[:, len(tag) :] = values.astype(values.dtype.newbyteorder("<"), copy=False).view(np.uint8).reshape(-1, 8)
    return Pieces(owners, np.full(len(values), width, dtype=np.int64), data.reshape(-1))


def constant(blob: bytes, owners: np.ndarray) -> Pieces:
    """The same bytes for every owner."""
    data = np.tile(np.frombuffer(blob, dtype=np.uint8), len(owners))
    return Pieces(owners, np.full(len(owners), len(blob), dtype=np.int64), data)


def join(count: int, parts: list[Pieces]) -> Pieces:
    """One piece per owner 0..count-1: its pieces of parts[0], then of parts[1], ... (empty if none)."""
    parts = [p for p in parts if p.size]
    if not parts:
        return Pieces(np.arange(count), np.zeros(count, dtype=np.int64), np.empty(0, dtype=np.uint8))
    owners = np.concatenate([p.owners for p in parts])
    lengths = np.concatenate([p.lengths for p in parts])
    data = np.concatenate([p.data for p in parts])
    order = np.argsort(owners, kind="stable")  # stable: part order, then piece order, per owner
    destination = np.empty(len(lengths), dtype=np.int64)
    destination[order] = _starts(lengths[order])
    out = np.empty(len(data), dtype=np.uint8)
    out[np.arange(len(data), dtype=np.int64) + np.repeat(destination - _starts(lengths), lengths)] = data
    totals = np.bincount(owners, weights=lengths, minlength=count).astype(np.int64)
    return Pieces(np.arange(count), totals, out)


def message_field(tag: bytes, message: Pieces) -> Pieces:
    """Each piece of `message` as a length-delimited field (tag, length, bytes), same owners."""
    count = message.size
    index = np.arange(count)
    header = varint_field(tag, message.lengths, index)
    body = Pieces(index, message.lengths, message.data)
    framed = join(count, [header, body])
    return Pieces(message.owners, framed.lengths, framed.data)
