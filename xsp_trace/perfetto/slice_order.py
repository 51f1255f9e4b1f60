"""The order the slice encoder needs, computed with numpy over one part of the spans.

perfetto/slices.sql returns a part's spans unsorted; sorting them in DuckDB (ten keys, some of
them strings, every column carried through the sort) cost more than the rest of the export.
Each row names its track by a hash of the track's key (perfetto_span_tracks, select.sql):
SpanTracks ranks the export's tracks once like the track key order -- run, CPU tracks before
GPU tracks (at equal timestamps the trace processor keeps packet order, and a flow must start
on its API call before it ends on the GPU work), class, pid, tid, device, stream, NULLs last --
so each row's rank is one lookup, and one lexsort gives: track, start, longest first (by the
span's own end), outermost first, span id.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .arrow_arrays import dictionary_encoded, indices, ints
from .arrow_arrays import values as _values

TRACK_KEY = ("run_id", "track_class", "pid", "tid", "device_id", "stream_id")
TRACK_HASH = "track_hash"  # perfetto/slices.sql's column naming a row's track
TRACK = "track"  # the column sort_part puts in its place: the track's rank (SpanTracks.keys)
# The parts' Arrow buffers come from the system allocator: pyarrow's default (jemalloc) keeps the
# pages of each freed part for reuse, which held more memory than two parts need.
PART_MEMORY = pa.system_memory_pool()


def _nulls_last(value) -> tuple:
    return (value is None, value if value is not None else 0)


def track_sort_key(key: tuple) -> tuple:
    """Sort key of a track key tuple (TRACK_KEY order): CPU tracks before GPU tracks, NULLs last."""
    run_id, track_class, *rest = key
    return (run_id, track_class == "gpu", track_class, *(_nulls_last(v) for v in rest))


class SharedTrackHash(ValueError):
    """Two tracks of an export hash alike (perfetto_span_tracks): the export picks another salt."""


class SpanTracks:
    """The tracks of an export's spans in the encoder's order: track i has the TRACK_KEY tuple
    `keys[i]`; `ranks` turns the track hashes of perfetto/slices.sql's rows into those i."""

    def __init__(self, rows: Iterable[tuple]):
        """rows: (*TRACK_KEY, track_hash) of each track (perfetto_span_tracks)."""
        ordered = sorted(rows, key=lambda row: track_sort_key(row[:-1]))
        self.keys: list[tuple] = [tuple(row[:-1]) for row in ordered]
        hashes = np.array([row[-1] for row in ordered], dtype=np.uint64)
        self._by_hash = np.argsort(hashes, kind="stable")  # track ranks in hash order
        self._hashes = hashes[self._by_hash]
        if np.any(self._hashes[1:] == self._hashes[:-1]):
            raise SharedTrackHash("two tracks share a hash")

    def ranks(self, hashes: pa.Array) -> np.ndarray:
        """The rank of each row's track."""
        wanted = _values(hashes)
        if len(wanted) == 0:
            return np.empty(0, dtype=np.int64)
        at = np.minimum(np.searchsorted(self._hashes, wanted), max(len(self._hashes) - 1, 0))
        if len(self._hashes) == 0 or not np.array_equal(self._hashes[at], wanted):
            raise ValueError("a row's track is not among the export's tracks (perfetto_span_tracks)")
        return self._by_hash[at]


def _dictionary_encoded(columns: Iterable[pa.Array]) -> list[pa.Array]:
    """String columns dictionary-encoded (one dictionary per column for the whole part: reordering
    moves indices, and the encoder interns each distinct string of the part once; encoding batch by
    batch and unifying the dictionaries cost more); the others as they are."""
    return [dictionary_encoded(c, PART_MEMORY) if c.type == pa.string() else c for c in columns]


def sort_part(part: Iterable[pa.RecordBatch], tracks: SpanTracks) -> tuple[pa.RecordBatch, np.ndarray] | None:
    """One part of perfetto/slices.sql as one batch, its strings dictionary-encoded and its track
    hashes turned into track ranks (column TRACK), with the order the encoder writes its rows in
    (None when empty)."""
    batches = [b for b in part if b.num_rows]
    if not batches:
        return None
    whole = batches[0] if len(batches) == 1 else pa.Table.from_batches(batches).combine_chunks(memory_pool=PART_MEMORY).to_batches()[0]
    del batches
    names = [name for name in whole.schema.names if name != TRACK_HASH]
    columns = [indices(tracks.ranks(whole.column(TRACK_HASH))), *_dictionary_encoded(whole.column(name) for name in names)]
    encoded = pa.record_batch(columns, names=[TRACK, *names])
    return encoded, part_order(encoded)


def _positions(ids: np.ndarray, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(index into `ids` of each value of `wanted`, whether it is there at all); `ids` are unique."""
    if len(ids) == 0:
        return np.zeros(len(wanted), dtype=np.int64), np.zeros(len(wanted), dtype=bool)
    by_id = np.argsort(ids, kind="stable")
    at = by_id[np.minimum(np.searchsorted(ids[by_id], wanted), len(ids) - 1)]
    return at, ids[at] == wanted


def in_order(sorted_part: tuple[pa.RecordBatch, np.ndarray] | None, batch_rows: int) -> Iterator[pa.RecordBatch]:
    """The rows of a sorted part in its order, `batch_rows` at a time."""
    if sorted_part is not None:
        whole, order = sorted_part
        for first in range(0, len(order), batch_rows):
            yield pc.take(whole, indices(order[first : first + batch_rows]), memory_pool=PART_MEMORY)


@dataclass
class BatchArgs:
    """The span_args of one batch of slices: arg i (`keys[i]`, `values[i]`) belongs to row `rows[i]`
    of the batch; rows do not decrease, and a span's args come ordered by key."""

    rows: np.ndarray
    keys: pa.Array
    values: pa.Array


def _places(sorted_part: tuple[pa.RecordBatch, np.ndarray], table: pa.Table) -> np.ndarray:
    """Where each row of `table` (a query of the part, keyed by span_id) goes in the part's order:
    its span's position there (-1: a span the part does not hold)."""
    whole, order = sorted_part
    at, found = _positions(ints(whole.column("span_id"))[0], ints(table.column("span_id"))[0])
    position = np.empty(len(order), dtype=np.int64)
    position[order] = np.arange(len(order))
    return np.where(found, position[at], -1)


def _per_batch(place: np.ndarray, batches: int, batch_rows: int) -> list[tuple[int, int, np.ndarray] | None]:
    """For each batch of in_order, the slice [a, z) of `place` (sorted) that falls in it and those
    rows within the batch (None: none)."""
    bounds = np.searchsorted(place, np.arange(batches + 1) * batch_rows)
    return [
        (a, z, place[a:z] - b * batch_rows) if z > a else None for b, (a, z) in enumerate(zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True))
    ]


def _batch_count(sorted_part: tuple[pa.RecordBatch, np.ndarray], batch_rows: int) -> int:
    return -(-len(sorted_part[1]) // batch_rows)


def args_in_order(sorted_part: tuple[pa.RecordBatch, np.ndarray] | None, args: pa.Table | None, batch_rows: int) -> list[BatchArgs | None]:
    """The rows of perfetto/slice_part_args.sql for a sorted part, one entry per batch of in_order
    (None: no args), each placed beside its span's row."""
    if sorted_part is None:
        return []
    if args is None or args.num_rows == 0:
        return [None] * _batch_count(sorted_part, batch_rows)
    args = args.combine_chunks(memory_pool=PART_MEMORY)
    place = _places(sorted_part, args)  # (the same start range: every arg's span is in the part)
    keys, values = args.column("key").chunk(0), args.column("value").chunk(0)
    key_rank = _values_rank(keys)
    arg_order = np.lexsort((key_rank, place))
    same = (place[arg_order][1:] == place[arg_order][:-1]) & (key_rank[arg_order][1:] == key_rank[arg_order][:-1])
    if same.any():  # a key twice on one span: by value too, so that the order does not follow DuckDB's threads
        arg_order = np.lexsort((_values_rank(values), key_rank, place))
    arg_order = arg_order[place[arg_order] >= 0]
    keys = pc.take(keys, indices(arg_order), memory_pool=PART_MEMORY)
    values = pc.take(values, indices(arg_order), memory_pool=PART_MEMORY)
    return [
        None if found is None else BatchArgs(found[2], keys.slice(found[0], found[1] - found[0]), values.slice(found[0], found[1] - found[0]))
        for found in _per_batch(place[arg_order], _batch_count(sorted_part, batch_rows), batch_rows)
    ]


@dataclass
class BatchDetails:
    """Columns of one batch of slices for the rows that have them (kernel and memop columns, flow
    ids): row `rows[i]` of the batch has `columns[name][i]` (rows do not decrease)."""

    rows: np.ndarray
    columns: dict[str, pa.Array]


def rows_in_order(
    sorted_part: tuple[pa.RecordBatch, np.ndarray] | None, table: pa.Table | None, batch_rows: int, then_by: str | None = None
) -> list[BatchDetails | None]:
    """The rows of a query of the part keyed by span_id (perfetto/slice_part_details.sql: at most
    one per span; slice_part_flows.sql: any number, ordered by `then_by`), one entry per batch of
    in_order (None: none there), each beside its span's row -- kept apart from the batch: most spans
    have none, and a column of NULLs for each of them cost more to make, take and read than these."""
    if sorted_part is None:
        return []
    if table is None or table.num_rows == 0:
        return [None] * _batch_count(sorted_part, batch_rows)
    table = table.combine_chunks(memory_pool=PART_MEMORY)
    place = _places(sorted_part, table)  # (-1 comes before the first batch)
    row_order = np.argsort(place, kind="stable") if then_by is None else np.lexsort((ints(table.column(then_by))[0], place))
    names = table.schema.names[1:]
    columns = _dictionary_encoded(pc.take(table.column(name).chunk(0), indices(row_order), memory_pool=PART_MEMORY) for name in names)
    return [
        None if found is None else BatchDetails(found[2], {n: c.slice(found[0], found[1] - found[0]) for n, c in zip(names, columns, strict=True)})
        for found in _per_batch(place[row_order], _batch_count(sorted_part, batch_rows), batch_rows)
    ]


def flows_in_order(
    sorted_part: tuple[pa.RecordBatch, np.ndarray] | None, flows: pa.Table | None, batch_rows: int
) -> tuple[list[BatchDetails | None], list[BatchDetails | None]]:
    """The rows of perfetto/slice_part_flows.sql for a sorted part as rows_in_order gives them, the
    flows the spans start (a span's in id order) and the flows they terminate."""
    if flows is None or flows.num_rows == 0:
        none = rows_in_order(sorted_part, None, batch_rows)
        return none, none[:]
    flows = flows.combine_chunks(memory_pool=PART_MEMORY)
    outgoing = _values(flows.column("outgoing"))
    ends = [flows.select(["span_id", "flow_id"]).take(indices(np.flatnonzero(side))) for side in (outgoing, ~outgoing)]
    return rows_in_order(sorted_part, ends[0], batch_rows, then_by="flow_id"), rows_in_order(sorted_part, ends[1], batch_rows)


def _values_rank(strings: pa.Array) -> np.ndarray:
    """Rank of each string in byte order (equal strings: equal ranks; NULL last)."""
    return np.asarray(pc.rank(strings, sort_keys="ascending", tiebreaker="dense")).astype(np.int64)


def sorted_batches(part: Iterable[pa.RecordBatch], tracks: SpanTracks, batch_rows: int) -> Iterator[pa.RecordBatch]:
    """One part of perfetto/slices.sql in the encoder's order, `batch_rows` rows at a time."""
    return in_order(sort_part(part, tracks), batch_rows)


def part_order(table: pa.RecordBatch) -> np.ndarray:
    """Row indices of `table` (one part of perfetto/slices.sql, with its TRACK column: sort_part)
    in the order the encoder writes."""
    n = table.num_rows
    if n == 0:
        return np.empty(0, dtype=np.int64)
    track = ints(table.column(TRACK))[0]
    start = ints(table.column("ts"))[0]
    end = ints(table.column("span_end_ns"))[0]
    depth, span_id = ints(table.column("depth"))[0], ints(table.column("span_id"))[0]
    low, span = int(start.min()), int(start.max()) - int(start.min()) + 1
    if (int(track.max()) + 1) * span >= 1 << 62:  # (track, start) does not fit one int64
        return np.lexsort((span_id, depth, -end, start, track))
    primary = track * span + (start - low)
    order = np.argsort(primary, kind="stable")
    # equal (track, start): only those rows are sorted by the remaining keys, in their own places
    in_tie = np.zeros(n, dtype=bool)
    tie = np.flatnonzero(primary[order][1:] == primary[order][:-1])
    in_tie[tie], in_tie[tie + 1] = True, True
    places = np.flatnonzero(in_tie)
    rows = order[places]
    order[places] = rows[np.lexsort((span_id[rows], depth[rows], -end[rows], primary[rows]))]
    return order
