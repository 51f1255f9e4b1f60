"""Protobuf wire encoding of many messages at once, with numpy, in two passes.

A field is described for all its occurrences at once: a `Varint`, `Fixed64` or `Constant` part
holds one value per occurrence and the index of the message each belongs to (its owner); a
`Message` is a part too (a length-delimited field), made of parts whose owners are its own
occurrences. The first pass sums sizes bottom-up (`sizes`), the second writes every field
straight to its place in one output buffer (`write`), a few array operations per field and
byte position -- nothing loops over rows in Python, and no byte is copied twice.

Within one part the owners must not decrease (repeated occurrences of a field keep their order).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

_MAX_VARINT = 10


def varint_lengths(values: np.ndarray) -> np.ndarray:
    """Bytes of the varint of each uint64 value (1 to 10)."""
    lengths = np.ones(len(values), dtype=np.int64)
    for k in range(1, _MAX_VARINT):
        above = values >= np.uint64(1 << (7 * k))
        if not above.any():
            break
        lengths += above
    return lengths


def _as_uint64(values) -> np.ndarray:
    """protobuf's view of an integer: int64 as two's complement (a negative value takes 10 bytes)."""
    values = np.asarray(values)
    if values.dtype == np.uint64:
        return values
    return values.astype(np.int64, copy=False).view(np.uint64)


def _put_varints(out: np.ndarray, at: np.ndarray, values: np.ndarray, lengths: np.ndarray) -> None:
    """Byte k of every varint at once, k = 0, 1, ...: only the values still that long (a field's
    values in a batch are mostly all the same length, which needs no masks at all)."""
    if len(lengths) == 0:
        return
    longest, shortest = int(lengths.max()), int(lengths.min())
    rest = values
    for k in range(longest):
        if shortest <= k:  # some values ended: keep the others
            live = np.flatnonzero(lengths > k)
            at, rest, lengths = at[live], rest[live], lengths[live]
            shortest = int(lengths.min())
        byte = (rest & np.uint64(0x7F)).astype(np.uint8)
        if k + 1 < shortest:  # every value goes on
            byte |= np.uint8(0x80)
        elif k + 1 < longest:
            byte[lengths > k + 1] |= np.uint8(0x80)
        out[at + k if k else at] = byte
        if k + 1 < longest:
            rest = rest >> np.uint64(7)


def _put_bytes(out: np.ndarray, at: np.ndarray, blob: bytes) -> None:
    for k, byte in enumerate(blob):
        out[at + k if k else at] = byte


def _exclusive_cumsum(values: np.ndarray) -> np.ndarray:
    starts = np.zeros(len(values), dtype=np.int64)
    np.cumsum(values[:-1], out=starts[1:])
    return starts


def _repeats(owners: np.ndarray) -> bool:
    """Whether some message holds more than one occurrence (owners do not decrease)."""
    return len(owners) > 1 and not np.all(owners[1:] != owners[:-1])


def _totals(owners: np.ndarray, sizes: np.ndarray, count: int, repeated: bool) -> np.ndarray:
    """Bytes of a part's occurrences per message."""
    if len(owners) == count and not repeated:  # one occurrence per message
        return sizes.astype(np.int64, copy=False)
    if not repeated:
        totals = np.zeros(count, dtype=np.int64)
        totals[owners] = sizes
        return totals
    return np.bincount(owners, weights=sizes, minlength=count).astype(np.int64)


class Part:
    """Occurrences of one field; `owners[i]` is the message occurrence i belongs to."""

    owners: np.ndarray

    def sizes(self) -> np.ndarray:
        raise NotImplementedError

    def write(self, out: np.ndarray, at: np.ndarray) -> None:
        raise NotImplementedError


class Varint(Part):
    def __init__(self, tag: bytes, values, owners: np.ndarray):
        self.tag, self.values, self.owners = tag, _as_uint64(values), owners
        self._lengths = varint_lengths(self.values)

    def sizes(self) -> np.ndarray:
        return self._lengths + len(self.tag)

    def write(self, out: np.ndarray, at: np.ndarray) -> None:
        _put_bytes(out, at, self.tag)
        _put_varints(out, at + len(self.tag), self.values, self._lengths)


class Fixed64(Part):
    """uint64, int64 or float64 values, 8 little-endian bytes each."""

    def __init__(self, tag: bytes, values, owners: np.ndarray):
        values = np.ascontiguousarray(values)
        self.tag, self.owners = tag, owners
        self.bytes = values.astype(values.dtype.newbyteorder("<"), copy=False).view(np.uint8).reshape(-1, 8)

    def sizes(self) -> np.ndarray:
        return np.full(len(self.owners), len(self.tag) + 8, dtype=np.int64)

    def write(self, out: np.ndarray, at: np.ndarray) -> None:
        _put_bytes(out, at, self.tag)
        out[(at + len(self.tag))[:, None] + np.arange(8)] = self.bytes


class Constant(Part):
    """The same bytes (whole fields) for every owner."""

    def __init__(self, blob: bytes, owners: np.ndarray):
        self.blob, self.owners = blob, owners

    def sizes(self) -> np.ndarray:
        return np.full(len(self.owners), len(self.blob), dtype=np.int64)

    def write(self, out: np.ndarray, at: np.ndarray) -> None:
        _put_bytes(out, at, self.blob)


class Bytes(Part):
    """Length-delimited bytes (a string or bytes field), one value per owner: value i is
    data[offsets[i]:offsets[i + 1]] (offsets as Arrow keeps them, n + 1 of them)."""

    def __init__(self, tag: bytes, offsets: np.ndarray, data: np.ndarray, owners: np.ndarray):
        self.tag, self.owners, self.data = tag, owners, data
        self.offsets = offsets.astype(np.int64, copy=False)
        self._lengths = np.diff(self.offsets)
        self._length_bytes = varint_lengths(self._lengths.astype(np.uint64))

    def sizes(self) -> np.ndarray:
        return len(self.tag) + self._length_bytes + self._lengths

    def write(self, out: np.ndarray, at: np.ndarray) -> None:
        _put_bytes(out, at, self.tag)
        _put_varints(out, at + len(self.tag), self._lengths.astype(np.uint64), self._length_bytes)
        first, last = int(self.offsets[0]), int(self.offsets[-1])
        if last > first:  # each value's bytes where its length ends
            values_at = at + len(self.tag) + self._length_bytes
            out[np.repeat(values_at - self.offsets[:-1], self._lengths) + np.arange(first, last)] = self.data[first:last]


class Message(Part):
    """`count` messages made of `parts` (their owners index the messages), each written as a
    length-delimited field `tag` of owners[i] -- or, with tag b"", bare, one after the other."""

    def __init__(self, tag: bytes, count: int, parts: Sequence[Part], owners: np.ndarray | None = None):
        self.tag, self.count = tag, count
        self.parts = [p for p in parts if len(p.owners)]
        self.owners = np.arange(count) if owners is None else owners
        self._part_sizes = [p.sizes() for p in self.parts]
        self._repeated = [_repeats(p.owners) for p in self.parts]
        self._part_totals = [_totals(p.owners, s, count, r) for p, s, r in zip(self.parts, self._part_sizes, self._repeated, strict=True)]
        self.body = np.zeros(count, dtype=np.int64)
        for totals in self._part_totals:
            self.body += totals
        self._length_bytes = varint_lengths(self.body.astype(np.uint64)) if tag else np.zeros(count, dtype=np.int64)

    def sizes(self) -> np.ndarray:
        return len(self.tag) + self._length_bytes + self.body

    def write(self, out: np.ndarray, at: np.ndarray) -> None:
        if self.tag:
            _put_bytes(out, at, self.tag)
            _put_varints(out, at + len(self.tag), self.body.astype(np.uint64), self._length_bytes)
        cursor = at + len(self.tag) + self._length_bytes  # where each message's next field goes (an array of its own: moved in place)
        for part, sizes, totals, repeated in zip(self.parts, self._part_sizes, self._part_totals, self._repeated, strict=True):
            # owners that do not decrease, one per message, no repeats: 0, 1, ..., count - 1
            place = cursor if len(part.owners) == self.count and not repeated else cursor[part.owners]
            if repeated:
                # repeated field: later occurrences of an owner go after its earlier ones
                before = _exclusive_cumsum(sizes)
                first = np.searchsorted(part.owners, part.owners, side="left")
                place = place + before - before[first]
            part.write(out, place)
            cursor += totals

    def encode(self) -> bytes:
        """The bytes of all occurrences, back to back."""
        sizes = self.sizes()
        out = np.empty(int(sizes.sum()), dtype=np.uint8)
        self.write(out, _exclusive_cumsum(sizes))
        return out.tobytes()
