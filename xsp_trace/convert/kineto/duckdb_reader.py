"""DuckDB's JSON reader for Kineto traces: fills the raw event relation `_kineto_events`
(kineto/events.py) without one Python object per event.

DuckDB reads a top-level JSON *array* of objects in bounded memory (one thread per file), but
not the `traceEvents` array inside Kineto's top-level object (BENCHMARKS.md, "Convert: Kineto"). So:
1. `extract_events`: the decompressed trace is streamed once; the bytes of the `traceEvents`
   array (and only those) go to a temporary file, the top-level metadata keys before and after
   it are parsed in Python (the same tail rule as python_reader).
   The array is cut into pieces of about PIECE_BYTES of JSON at element boundaries as it goes
   (kineto/pieces.py), each written as one file per DuckDB thread (files_per_piece).
   A second thread does this (read_events) while the pieces before are read and mapped.
2. read_json(format='array') loads one piece (its files in parallel, rows in file order) at a
   time into `_kineto_events`, times as
   DECIMAL(38,9) (exact for Kineto's microseconds with up to 9 decimals), pid/tid/id as text,
   args as JSON (the mapping parses each object once); the caller maps it (kineto_map.sql) and
   drops it before the next, so the raw events of the whole trace are never held (held whole, they spilled under the memory cap).

Anything unusual (not a trace object, a `ts`/`dur` that is not a JSON number, a non-finite number
(NaN, Infinity), a `null` event, a value the column types do not take, a reader error, no events, an args object repeating a key)
makes `read_events` return None;
the caller undoes the pieces mapped so far and runs the streaming ijson reader into the same
relation, which also reports the exact problem. So both readers accept and reject the same
files; the checks of the relation (events.check_events) and the mapping are shared.
"""

from __future__ import annotations

import json
import queue
import re
import shutil
import tempfile
import threading
from collections.abc import Callable
from decimal import Decimal
from json.decoder import scanstring  # type: ignore[attr-defined]  # public since 2.6, not in the stubs
from pathlib import Path

import duckdb

from ...formats import kineto_fields as kf
from ...output_files import private_temp_prefix
from ...store.connection import duckdb_threads
from ...store.sql import one_row
from ..input_limits import MAX_VALUE_BYTES, InputLimits
from .events import READ_JSON_COLUMNS, RepeatedArgKeys
from .pieces import PieceWriter, ValueTooLarge
from .python_reader import closing_bracket

CHUNK_BYTES = 1 << 20
MAX_HEAD_BYTES = 64 << 20  # as python_reader: metadata before the events beyond this is not a trace
TAIL_BYTES = 1 << 20  # bytes kept from the end to find where traceEvents closes


class _NotSimple(Exception):
    """The file is not the plain shape the fast path handles; the Python path takes over."""


def _find_events(buf: bytes) -> tuple[int, dict] | None:
    """(byte offset of the '[' opening traceEvents, metadata keys before it) in the head of the
    file; None if more bytes are needed; _NotSimple if the head is not a trace object."""
    try:
        text = buf.decode("utf-8")
    except UnicodeDecodeError as exc:  # a character cut at the end of the chunk
        if exc.start <= len(buf) - 4:
            raise _NotSimple from exc
        text = buf[: exc.start].decode("utf-8", errors="strict")
    decoder = json.JSONDecoder(parse_float=Decimal)
    pos = _skip_ws(text, 1 if text.startswith("\ufeff") else 0)
    if pos >= len(text):
        return None
    if text[pos] != "{":
        raise _NotSimple
    pos += 1
    meta: dict = {}
    while True:
        pos = _skip_ws(text, pos)
        if pos >= len(text):
            return None
        if text[pos] != '"':
            raise _NotSimple
        try:
            key, pos = scanstring(text, pos + 1)
        except ValueError:
            return None
        pos = _skip_ws(text, pos)
        if pos >= len(text):
            return None
        if text[pos] != ":":
            raise _NotSimple
        pos = _skip_ws(text, pos + 1)
        if pos >= len(text):
            return None
        if key == kf.EVENTS_KEY:
            if text[pos] != "[":
                raise _NotSimple
            return len(text[:pos].encode("utf-8")), meta
        try:
            meta[key], pos = decoder.raw_decode(text, pos)
        except ValueError:
            return None  # the value goes on in the next chunk (or is broken: the head limit ends it)
        pos = _skip_ws(text, pos)
        if pos >= len(text):
            return None
        if text[pos] != ",":
            raise _NotSimple
        pos += 1


# A "ts" or "dur" whose value is not a JSON number (true, "12", null...): DuckDB would cast it
# (true -> 1), the Python reader rejects it, so such a file goes to the Python path. The value's
# first byte must be seen (a key at the very end of a chunk is decided with the next one): the
# carry is the whitespace-free text of the chunk's last bytes before its trailing whitespace, so
# only a key and value parted by over _WINDOW bytes of whitespace across a chunk end go unseen.
_NON_NUMERIC_TIME = re.compile(rb'"(?:ts|dur)"\s*:\s*[^-0-9\s]')
_WHITESPACE = re.compile(rb"\s+")
_CARRY = 32
_WINDOW = 128


# A non-finite number (NaN, -inf...: kf.NON_FINITE_WORDS) anywhere: DuckDB reads each spelling as
# written, the streaming reader as one stand-in, so such a file goes to the streaming reader, which
# alone decides what it holds. Found on the lower-cased bytes: a word not glued to a letter, digit,
# '_' or '.' before it and followed by `,` `}` or `]` (a word inside a string may send a file over too).
# Searched by the words' first three letters (nan, inf), each followed by the rest of one of its words.
_WORD_ENDS = {
    stem.encode(): re.compile(
        b"(?:"
        + b"|".join(re.escape(rest.encode()) for rest in sorted((w[3:] for w in kf.NON_FINITE_WORDS if w[:3] == stem), key=len, reverse=True))
        + rb")\s*[,}\]]"
    )
    for stem in {w[:3] for w in kf.NON_FINITE_WORDS}
}
_GLUED = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789_.")


def _has_non_finite(data: bytes) -> bool:
    low = data.lower()
    for stem, word_end in _WORD_ENDS.items():
        pos = low.find(stem)
        while pos >= 0:
            before = pos - 1 if pos and low[pos - 1] == 0x2D else pos  # a minus sign
            if (before == 0 or low[before - 1] not in _GLUED) and word_end.match(low, pos + 3):
                return True
            pos = low.find(stem, pos + 1)
    return False


def _check_times(carry: bytes, chunk: bytes) -> bytes:
    """Raise _NotSimple on a non-numeric time or a non-finite number in carry + chunk; returns the carry for the next chunk."""
    data = carry + chunk
    if _NON_NUMERIC_TIME.search(data) or _has_non_finite(data):
        raise _NotSimple
    end = len(chunk.rstrip(b" \t\r\n\f\v"))  # at C speed: no Python step per byte of whitespace
    return (carry + _WHITESPACE.sub(b"", chunk[max(0, end - _WINDOW) : end]))[-_CARRY:]


def _skip_ws(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


def extract_events(path: Path, writer: PieceWriter, limits: InputLimits) -> dict | None:
    """Write the traceEvents array of the trace at `path` through `writer` (cut into pieces);
    returns the top-level metadata, or None when the file is not a plain Kineto trace object
    (the Python path handles those; pieces already handed over must then be undone).
    InputError past the gzip limits (input_limits.py); None as well when about MAX_VALUE_BYTES pass
    without an event ending (the streaming reader judges such a file): the pieces stay bounded."""
    from .python_reader import _Source

    source = _Source(path, limits, keep_chunks=False)  # bytes are copied through, never parsed back
    try:
        head = b""
        found = None
        while found is None:
            chunk = source.read(CHUNK_BYTES)
            if not chunk:
                return None
            head += chunk
            found = _find_events(head)
            if found is None and len(head) > MAX_HEAD_BYTES:
                return None
        start, meta = found
        if _has_non_finite(head[:start]):  # in the metadata before the events
            return None
        source.mark()  # the events begin: past here, no limit on bytes before the first event
        tail = bytearray()
        first = head[start:]
        del head
        carry = _check_times(b"", first)
        writer.write(first)
        tail += first
        while chunk := source.read(CHUNK_BYTES):
            carry = _check_times(carry, chunk)
            writer.write(chunk)
            tail += chunk
            if len(tail) > 2 * TAIL_BYTES:
                del tail[:-TAIL_BYTES]
        # Where traceEvents closes: the tail rule of python_reader, on the last bytes (which the
        # writer keeps in the last piece: its lag is 2 * TAIL_BYTES).
        tail_bytes = bytes(tail)
        closing = closing_bracket(tail_bytes)
        if closing is None:
            return None
        cut, tail_meta = closing
        writer.finish(len(tail_bytes) - cut - 1)
        meta.update(tail_meta)
        return meta
    except (_NotSimple, ValueTooLarge):
        return None
    finally:
        source.close()
        writer.discard()


_READ_EVENTS = f"""
CREATE OR REPLACE TEMP TABLE _kineto_events AS
SELECT * FROM read_json(?, format = 'array', maximum_object_size = {MAX_VALUE_BYTES}, columns = {READ_JSON_COLUMNS})
"""
# A `null` element of traceEvents reads as a row of NULLs (an empty object `{}` too): the
# streaming reader tells them apart (null is not an event: one line).
_COUNT_EVENTS = """
SELECT count(*), count(*) FILTER (WHERE ph IS NULL AND cat IS NULL AND name IS NULL AND pid IS NULL
    AND tid IS NULL AND ts IS NULL AND dur IS NULL AND id IS NULL AND args IS NULL)
FROM _kineto_events
"""

# JSON bytes per piece: each piece runs the whole mapping script once (a fixed cost), larger pieces
# bring little past 128 MB and hold more raw events at once, and a small trace is one piece
# (BENCHMARKS.md, "Convert: Kineto").
PIECE_BYTES = 128 << 20


def files_per_piece(con: duckdb.DuckDBPyConnection) -> int:
    """Files a piece is written as: one per DuckDB thread. read_json parses one file on one thread;
    several files of one call are read in parallel and their rows kept in file order."""
    return duckdb_threads(con)


class _Stopped(Exception):
    """The reader gave up on the file: the thread writing its pieces stops at the next one."""


def read_events(con: duckdb.DuckDBPyConnection, path: Path, map_piece: Callable[[int], None], limits: InputLimits) -> dict | None:
    """Read the trace's events with DuckDB's JSON reader, one piece of about PIECE_BYTES of JSON
    at a time (written as files_per_piece files, read by one read_json): each fills `_kineto_events`,
    then `map_piece(events before it)` maps (and drops) it. The file holding the array's end is read
    alone, as the last piece: it alone can hold no event (`[a, ]`), which the reader must see.
    Returns the top-level metadata, or None when the streaming reader must take the file: the
    pieces mapped until then are the caller's to undo (a piece DuckDB cannot read, a null event,
    no events, a non-numeric time further on, no closing bracket where the tail rule looks).

    A second thread decompresses and cuts the trace (extract_events) while this one reads and
    maps the pieces before: DuckDB releases the GIL, so the Python work of the next piece runs
    beside the SQL of this one. The files written ahead are bounded (one piece's worth)."""
    files = files_per_piece(con)
    written: queue.Queue[Path | None] = queue.Queue(maxsize=files)  # None: the writer is done
    stop = threading.Event()
    outcome: dict = {}

    def on_file(file: Path) -> None:
        if stop.is_set():
            raise _Stopped
        written.put(file)

    def write_pieces() -> None:
        try:
            pieces = PieceWriter(folder, max(1, PIECE_BYTES // files), 2 * TAIL_BYTES, on_file)
            outcome["meta"] = extract_events(path, pieces, limits)
        except _Stopped:
            pass
        except BaseException as exc:  # handed to the reading thread, which raises it
            outcome["error"] = exc
        finally:
            written.put(None)

    events = 0

    def read_piece(piece: list[Path]) -> None:
        nonlocal events
        try:
            con.execute(_READ_EVENTS, [[str(f) for f in piece]])
        except duckdb.Error as exc:
            raise _NotSimple from exc
        finally:
            for f in piece:
                f.unlink(missing_ok=True)
        count, empty = one_row(con, _COUNT_EVENTS)
        if empty or not count:  # no events at all, or a piece of none (`[a, ]`): the Python reader judges
            con.execute("DROP TABLE _kineto_events")
            raise _NotSimple
        try:
            map_piece(events)
        except RepeatedArgKeys as exc:
            raise _NotSimple from exc
        events += count

    # Made just before the `try` whose `finally` removes it: a signal during a query in between
    # (files_per_piece's) left it behind.
    folder = Path(tempfile.mkdtemp(prefix=private_temp_prefix("kineto")))
    writer = threading.Thread(target=write_pieces, name="xsp-kineto-pieces", daemon=True)
    writer.start()
    waiting: list[Path] = []  # files not read yet; a full piece is read when the next file comes
    try:
        while (file := written.get()) is not None:
            if len(waiting) == files:
                read_piece(waiting[:])
                waiting.clear()
            waiting.append(file)
        if "error" in outcome:
            raise outcome["error"]
        meta = outcome.get("meta")
        if meta is not None:
            if len(waiting) > 1:
                read_piece(waiting[:-1])
            read_piece(waiting[-1:])
        return meta
    except _NotSimple:
        return None
    finally:
        stop.set()
        while writer.is_alive():  # let a writer blocked on a full queue see the stop
            try:
                written.get(timeout=0.1)
            except queue.Empty:
                pass
        shutil.rmtree(folder, ignore_errors=True)  # whatever failed: no decompressed copy is left
