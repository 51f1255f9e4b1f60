"""The intern tables of the slices' sequence: string -> iid per InternedData table, and the
interned_data packet that defines a batch's new strings, encoded with wire.py.

A batch's new strings come in bulk (a Kineto trace's arg values: millions, most seen once), so
they are defined from the Arrow strings' own buffers -- an iid range and the strings' bytes --
instead of one protobuf entry object per string; the packet's bytes are those protobuf would
write for the same entries (fields in number order, each table's entries in iid order).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..formats import perfetto_proto as wp
from .arrow_arrays import dictionary_encoded, indices
from .arrow_arrays import ints as _ints
from .wire import Bytes, Message, Varint

EVENT_NAMES, CATEGORIES = wp.INTERNED_EVENT_NAMES, wp.INTERNED_CATEGORIES
ANNOTATION_NAMES, STRING_VALUES = wp.INTERNED_ANNOTATION_NAMES, wp.INTERNED_STRING_VALUES
_TABLES_IN_FIELD_ORDER = sorted(wp.INTERNED_TABLES, key=lambda table: wp.INTERNED_TABLES[table][0])
_OFFSET_TYPES = {pa.string(): np.int32, pa.large_string(): np.int64}

# New entries of one table: (iids, offsets into data, data) -- the strings' UTF-8 bytes.
_Entries = tuple[np.ndarray, np.ndarray, np.ndarray]


def _offsets(lengths) -> np.ndarray:
    """Arrow-style offsets (n + 1, from 0) of values of these lengths."""
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return offsets


def _utf8(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(offsets, data) of strings given as Python text."""
    blobs = [t.encode("utf-8") for t in texts]
    return _offsets([len(b) for b in blobs]), np.frombuffer(b"".join(blobs), dtype=np.uint8)


def _buffers(strings: pa.Array, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(offsets, data) of an Arrow string array without NULLs, read from its buffers."""
    offset_type = _OFFSET_TYPES.get(strings.type)
    if offset_type is None:  # another layout (string views): through Python
        return _utf8(texts)
    _, offsets, data = strings.buffers()
    width = np.dtype(offset_type).itemsize
    found = np.frombuffer(offsets, dtype=offset_type, count=len(strings) + 1, offset=strings.offset * width).astype(np.int64)
    return found, (np.frombuffer(data, dtype=np.uint8) if data is not None else np.empty(0, dtype=np.uint8))


def _joined(chunks: list[_Entries]) -> _Entries:
    """One table's new entries of a batch as one (iids, offsets, data)."""
    if len(chunks) == 1:
        return chunks[0]
    iids = np.concatenate([c[0] for c in chunks])
    datas = [data[offsets[0] : offsets[-1]] for _, offsets, data in chunks]
    return iids, _offsets(np.concatenate([np.diff(offsets) for _, offsets, _ in chunks])), np.concatenate(datas)


class InternTables:
    """String -> iid per interned_data table, for one sequence; new strings are gathered into the
    batch's interned_data packet. Cleared (with the sequence's incremental state) when full."""

    def __init__(self, max_interned: int):
        self.max_interned = max_interned
        self.tables: dict[str, dict[str, int]] = {t: {} for t in _TABLES_IN_FIELD_ORDER}
        self.count = 0
        self.cleared = True  # the first packet of the sequence clears its (empty) state
        self._new: dict[str, list[_Entries]] = {t: [] for t in _TABLES_IN_FIELD_ORDER}  # defined by this batch
        # iid (0: not looked up yet) per entry of a dictionary the batches of one part share, per
        # column: a part's batches are takes of one batch, so most of their strings are looked up once.
        self._dictionary_iids: dict[str, tuple[pa.Array, tuple[int, int], np.ndarray]] = {}

    def start_part(self) -> None:
        self._dictionary_iids.clear()

    def start_batch(self) -> None:
        for chunks in self._new.values():
            chunks.clear()
        if self.count >= self.max_interned:
            for entries in self.tables.values():
                entries.clear()
            self.count = 0
            self.cleared = True
            self._dictionary_iids.clear()

    def _define(self, table: str, texts: list[str], strings: pa.Array | None = None) -> None:
        """Give `texts` (distinct, none in the table yet) the next iids; `strings`: the same as Arrow strings."""
        entries = self.tables[table]
        first = len(entries) + 1  # iids start at 1; 0 means "not set"
        entries.update(zip(texts, range(first, first + len(texts)), strict=True))
        self.count += len(texts)
        offsets, data = _utf8(texts) if strings is None else _buffers(strings, texts)
        self._new[table].append((np.arange(first, first + len(texts), dtype=np.uint64), offsets, data))

    def iid(self, table: str, text: str) -> int:
        found = self.tables[table].get(text)
        if found is None:
            self._define(table, [text])
            found = self.tables[table][text]
        return found

    def column(self, table: str, column: pa.Array, name: str | None) -> tuple[np.ndarray, np.ndarray]:
        """(iids, valid mask) of string column `name`: each distinct value the part uses looked up
        once, in order of first use (the dictionary's order follows the order DuckDB's threads
        delivered the part in, so interning in it would make the trace's bytes differ from run to run).
        With name None, nothing is kept for the next batch (a dictionary of this batch alone)."""
        fresh = not pa.types.is_dictionary(column.type)
        dictionary_array = dictionary_encoded(column)
        codes, valid = _ints(dictionary_array.indices)
        dictionary = dictionary_array.dictionary
        lookup = self._lookup(name, dictionary) if name is not None and not fresh else np.zeros(len(dictionary) + 1, dtype=np.uint64)
        if fresh:  # encoded here: the dictionary holds the values used, in order of first use
            used = np.arange(len(dictionary))
        else:
            wanted = codes[valid]
            unknown = wanted[lookup[wanted] == 0]
            if len(unknown):  # (after a part's first batch, mostly none)
                used, first = np.unique(unknown, return_index=True)  # (the part's dictionary may hold more)
                used = used[np.argsort(first, kind="stable")]
            else:
                used = unknown
        if len(used):
            strings = dictionary.take(indices(used))
            texts = strings.to_pylist()
            entries = self.tables[table]
            found = [*map(entries.get, texts)]  # most are known: one C call each
            new = [i for i, iid in enumerate(found) if iid is None]
            if new:  # (a dictionary's entries are distinct)
                if len(new) == len(texts):
                    self._define(table, texts, strings)
                else:
                    self._define(table, [texts[i] for i in new], strings.take(indices(np.array(new))))
                found = [*map(entries.__getitem__, texts)]
            lookup[used] = np.array(found, dtype=np.uint64)  # (every one found by now)
        return lookup[np.where(valid, codes, len(dictionary))], valid

    def _lookup(self, name: str, dictionary: pa.Array) -> np.ndarray:
        """The iids found so far for `dictionary`'s entries (the last entry stands for NULL)."""
        buffers = dictionary.buffers()
        identity = (buffers[-1].address if buffers[-1] is not None else 0, len(dictionary))
        known = self._dictionary_iids.get(name)
        if known is None or known[1] != identity:  # (the array is kept: its memory cannot be another's meanwhile)
            known = self._dictionary_iids[name] = (dictionary, identity, np.zeros(len(dictionary) + 1, dtype=np.uint64))
        return known[2]

    def take_packet(self, sequence_id: int) -> bytes | None:
        """The batch's interned_data packet (a Trace fragment), or None when it defines nothing new."""
        tables = [(table, _joined(chunks)) for table, chunks in self._new.items() if chunks]
        if not tables and not self.cleared:
            return None
        interned = []
        for table, (iids, offsets, data) in tables:
            _, entry_tag, iid_tag, text_tag = wp.INTERNED_TABLES[table]
            index = np.arange(len(iids))
            interned.append(Message(entry_tag, len(iids), [Varint(iid_tag, iids, index), Bytes(text_tag, offsets, data, index)]).encode())
        body = b"".join(interned)
        flags = wp.SEQ_NEEDS_INCREMENTAL_STATE | (wp.SEQ_INCREMENTAL_STATE_CLEARED if self.cleared else 0)
        self.cleared = False
        packet = wp.PACKET_SEQUENCE_ID + wp.varint_bytes(sequence_id)
        if body:
            packet += wp.PACKET_INTERNED_DATA + wp.varint_bytes(len(body)) + body
        packet += wp.PACKET_SEQUENCE_FLAGS + wp.varint_bytes(flags)
        return wp.TRACE_PACKET + wp.varint_bytes(len(packet)) + packet
