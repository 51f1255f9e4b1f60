"""Staging with several reader threads: what staging.stage_in_order does, on more than one core.

Every table of the plan is read as pieces: its whole query, or -- for a table naming a
`split_table` with at least PIECE_ROWS rowids -- one query per range of PIECE_ROWS rowids (SQLite
seeks a rowid range in its B-tree; the rows come in rowid order, as in one whole scan). Reader
threads take the pieces in plan order; each streams its piece over a SQLite connection and a
DuckDB cursor of its own (the SQLite driver and DuckDB release the GIL while they work) into a
table of an attached in-memory database (PIECES_DB), which every cursor sees (TEMP tables are
one cursor's). Each staging table then becomes a TEMP view: its pieces in order, the span ids
counted over the plan exactly as one reader assigns them (a piece's rowid + the rows before it).
No row is copied; the views read like the tables a single reader fills, row order included.
validate.py turns a view into a table before it changes rows (bad rows only);
`drop_pieces` removes the views and the pieces when the spans are built.
"""

from __future__ import annotations

import queue
import threading
from dataclasses import dataclass

import duckdb

from ...store.sql import is_temp_view
from ..common import Progress
from .staging import Plan, Source, Staging, create_table, staging_columns, stream_into, typed_query

# Rowids per piece of a split table: a piece's connection, query and append cost nothing next to
# its rows, two readers share a 1 M-row table evenly, and the rows waiting for an earlier piece
# (memory) stay a few pieces' worth.
PIECE_ROWS = 500_000
PIECES_DB = "_xsp_pieces"


@dataclass
class _Piece:
    item: Staging
    sql: str
    table: str  # in PIECES_DB
    rows: int = 0


def _pieces(plan: Plan, source: Source) -> list[_Piece]:
    pieces: list[_Piece] = []
    for index, item in enumerate(plan.items):
        if item.sql is None:
            continue
        queries = [item.sql]
        whole = f'FROM "{item.split_table}"'
        bounds = source.rowid_bounds(item.split_table) if item.split_table and item.sql.count(whole) == 1 else None
        if bounds is not None and bounds[1] - bounds[0] >= PIECE_ROWS:
            low, high = bounds
            queries = [
                item.sql.replace(
                    whole,
                    f'FROM (SELECT * FROM "{item.split_table}" WHERE rowid BETWEEN {a} AND {min(a + PIECE_ROWS - 1, high)}) AS "{item.split_table}"',
                )
                for a in range(low, high + 1, PIECE_ROWS)
            ]
        pieces += [_Piece(item, typed_query(item, sql), f"{PIECES_DB}.main.piece_{index}_{k}") for k, sql in enumerate(queries)]
    return pieces


def _read_pieces(source: Source, con: duckdb.DuckDBPyConnection, work: queue.SimpleQueue, done: queue.SimpleQueue, stop: threading.Event) -> None:
    """A reader thread: piece after piece into its table, each reported as (piece, None or the exception)."""
    try:
        cursor = con.cursor()
    except BaseException as exc:  # reported, or the calling thread would wait for pieces forever
        done.put((None, exc))
        return
    try:
        while not stop.is_set():
            try:
                piece = work.get_nowait()
            except queue.Empty:
                return
            try:
                with source.arrow_batches(piece.sql, own_connection=True) as reader:
                    piece.rows = stream_into(cursor, piece.table, piece.item.schema, piece.item, reader, source, lambda n: None)
                done.put((piece, None))
            except BaseException as exc:  # handed over: the calling thread raises it
                done.put((piece, exc))
                return
    finally:
        cursor.close()


def stage_with_readers(plan: Plan, source: Source, con: duckdb.DuckDBPyConnection, progress: Progress, readers: int) -> None:
    """Stage `plan` with `readers` reader threads: TEMP views (tables for queries without rows to
    read) that read as stage_in_order's tables. Call drop_pieces(con, plan) when done with them."""
    pieces = _pieces(plan, source)
    con.execute(f"ATTACH ':memory:' AS {PIECES_DB}")
    for piece in pieces:
        create_table(con, piece.table, piece.item.schema, temp=False)
    work: queue.SimpleQueue = queue.SimpleQueue()
    for piece in pieces:
        work.put(piece)
    done: queue.SimpleQueue = queue.SimpleQueue()
    stop = threading.Event()
    threads = [threading.Thread(target=_read_pieces, args=(source, con, work, done, stop), daemon=True) for _ in range(min(readers, len(pieces)))]
    for thread in threads:
        thread.start()
    try:
        read: dict[str, int] = {}
        for _ in pieces:
            piece, failure = done.get()
            if failure is not None:
                raise failure
            what = piece.item.what or piece.item.table
            read[what] = read.get(what, 0) + piece.rows
            progress(f"reading {what}: {read[what]:,} rows", None)
    finally:
        stop.set()  # a reader stops after its current piece
        for thread in threads:
            thread.join()
    next_span_id = 1
    for item in plan.items:
        own = [p for p in pieces if p.item is item]
        if not own:
            create_table(con, item.table, staging_columns(item))
            continue
        columns = ", ".join(f.name for f in item.schema)
        selects = []
        for piece in own:
            selects.append(f"SELECT {f'rowid + {next_span_id} AS span_id, ' if item.with_span_ids else ''}{columns} FROM {piece.table}")
            if item.with_span_ids:
                next_span_id += piece.rows
        con.execute(f"CREATE OR REPLACE TEMP VIEW {item.table} AS {' UNION ALL '.join(selects)}")


def drop_pieces(con: duckdb.DuckDBPyConnection, tables: tuple[str, ...]) -> None:
    """Drop the staging tables or views named, then the pieces behind the views."""
    for table in tables:
        con.execute(f"DROP {'VIEW' if is_temp_view(con, table) else 'TABLE'} IF EXISTS {table}")
    con.execute(f"DETACH DATABASE IF EXISTS {PIECES_DB}")
