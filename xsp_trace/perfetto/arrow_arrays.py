"""Arrow columns as numpy arrays, read straight from their buffers.

pyarrow's own Array.to_numpy goes through its pandas bridge, which imports pandas on first use
(about half a second, once per process, for an export that never needs pandas); these read the
values and validity bitmaps directly instead (zero-copy for numbers without NULLs; the arrays
returned are read-only).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_NUMPY_TYPES = {
    pa.int8(): np.int8,
    pa.int16(): np.int16,
    pa.int32(): np.int32,
    pa.int64(): np.int64,
    pa.uint8(): np.uint8,
    pa.uint16(): np.uint16,
    pa.uint32(): np.uint32,
    pa.uint64(): np.uint64,
    pa.float32(): np.float32,
    pa.float64(): np.float64,
}


def _single(array: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(array, pa.ChunkedArray):
        return array.combine_chunks()
    return array


def _bits(buffer: pa.Buffer | None, offset: int, length: int) -> np.ndarray:
    if length == 0 or buffer is None:
        return np.zeros(length, dtype=bool)
    bits = np.unpackbits(np.frombuffer(buffer, dtype=np.uint8), bitorder="little")
    return bits[offset : offset + length].astype(bool)


def valid(array: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """True where the value is not NULL."""
    array = _single(array)
    if array.null_count == 0:
        return np.ones(len(array), dtype=bool)
    if array.null_count == len(array):
        return np.zeros(len(array), dtype=bool)
    return _bits(array.buffers()[0], array.offset, len(array))


def values(array: pa.Array | pa.ChunkedArray, fill=0) -> np.ndarray:
    """The values of a numeric or boolean column, `fill` for NULL."""
    array = _single(array)
    if pa.types.is_boolean(array.type):
        found = _bits(array.buffers()[1], array.offset, len(array))
    else:
        dtype = np.dtype(_NUMPY_TYPES[array.type])
        if len(array) == 0:
            return np.empty(0, dtype=dtype)
        found = np.frombuffer(array.buffers()[1], dtype=dtype, count=len(array), offset=array.offset * dtype.itemsize)
    if array.null_count:  # (pc.fill_null would import pandas, for its fill scalar)
        return np.where(valid(array), found, np.asarray(fill, dtype=found.dtype))
    return found


def ints(array: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """(int64 values with 0 for NULL, valid mask) of an integer column."""
    return values(array).astype(np.int64, copy=False), valid(array)


def dictionary_encoded(column: pa.Array | pa.ChunkedArray, memory_pool: pa.MemoryPool | None = None) -> pa.DictionaryArray:
    """A string column dictionary-encoded (values numbered as they are met), or as it is if it is already."""
    if pa.types.is_dictionary(column.type):
        return _single(column)
    return _single(pc.dictionary_encode(column, memory_pool=memory_pool))


def indices(rows: np.ndarray) -> pa.Array:
    """Row numbers as an Arrow int64 array, for take (pa.array would import pandas)."""
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), len(rows), [None, pa.py_buffer(rows)])
