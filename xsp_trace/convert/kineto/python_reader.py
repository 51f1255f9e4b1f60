"""Streaming reader of Kineto Chrome-trace JSON (plain or gzip): events in batches, plus metadata.

Memory stays bounded whatever the trace size: the decompressed bytes are fed chunk by chunk
to ijson's C (yajl2_c) push parser, which builds one dict per event of `traceEvents` and
nothing else (BENCHMARKS.md, "Kineto parser choice", measured it against orjson and DuckDB read_json).
The top-level metadata keys may sit before or after `traceEvents`; the reader keeps only the
bytes before the first event and the bytes from the chunk that completed the last event, and
parses the metadata from those two pieces.

Numbers come as int or Decimal (never float): microsecond timestamps with 3 decimals stay exact.
Non-finite numbers (NaN, Infinity...), which ijson refuses, come as stand-in Decimals (NON_FINITE_TEXT):
a file whose parse stops at one is read again with each such word outside strings rewritten.
"""

from __future__ import annotations

import gzip
import io
import json
import re
import secrets
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

import ijson

from ...errors import InputError
from ...formats import kineto_fields as kf
from ...formats.file_magic import GZIP_MAGIC
from ..input_limits import MAX_VALUE_BYTES, InputLimits, value_too_large

CHUNK_BYTES = 64 << 10  # ijson's own default buffer; larger ones were slower
BATCH_EVENTS = 1_000  # small batches stay in cache; 10k-event batches parsed 1.5x slower
# Bytes a file may hold before its first event; past this it is not a trace we can stream.
MAX_BYTES_BEFORE_FIRST_EVENT = 64 << 20
_FIX_DAMAGED = "re-copy the file, or export the trace again with torch.profiler"


def require_c_backend() -> None:
    """The pure-Python ijson backends are 20x slower; say so instead of silently crawling."""
    if ijson.backend != "yajl2_c":  # pragma: no cover - depends on the installation
        raise InputError(
            None,
            f"ijson uses its slow '{ijson.backend}' backend (the C backend yajl2_c is missing)",
            "reinstall ijson from a binary wheel: pip install --force-reinstall ijson",
        )


@dataclass
class KinetoTrace:
    """What the reader learnt besides the events; complete once the event batches are exhausted."""

    path: Path
    limits: InputLimits = field(default_factory=InputLimits)
    metadata: dict = field(default_factory=dict)
    uncompressed_bytes: int = 0
    event_count: int = 0


def _json_error_line(exc: Exception) -> str:
    text = str(exc)
    if text.startswith(("b'", 'b"')):
        text = text[2:]
    first = text.replace("\\n", "\n").splitlines()[0].strip().rstrip(".")
    if "invalid bytes in UTF8" in first:
        return "contains text that is not valid UTF-8"
    if "premature EOF" in first:
        return "ends in the middle of the JSON (truncated file?)"
    return f"is not valid JSON ({first})"


# ijson builds a prefix string per nesting level, so memory grows with the square of the depth
# (20,000 levels: 1 GB); a trace nests a few levels. Checked (brackets counted, strings included:
# an over-estimate) on the bytes the Python reader parses.
MAX_NESTING = 5_000
_OPENERS, _CLOSERS = (ord("["), ord("{")), (ord("]"), ord("}"))
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


# Non-finite numbers (kf.NON_FINITE_WORDS, any case, optional minus) outside strings are rewritten
# into numbers that stand for them: beyond any time or double, around a nonce drawn per process, so
# no number written in a file reads as one (odds 10^-18). Spaces around a stand-in keep a word
# glued to a number (`1inf`, `inf5`) invalid JSON.
_NONCE = secrets.randbelow(9 * 10**17) + 10**17
_NAN, _INFINITY = f"{_NONCE}1e999999", f"{_NONCE}2e999999"
NON_FINITE_TEXT = {Decimal(_NAN): "NaN", Decimal(_INFINITY): "Infinity", Decimal("-" + _INFINITY): "-Infinity"}
_STAND_INS = {  # word as written (lower-cased) -> its stand-in; -nan is NaN, as DuckDB reads it
    sign + word.encode(): f" {'-' if sign and word != 'nan' else ''}{_NAN if word == 'nan' else _INFINITY} ".encode()
    for word in kf.NON_FINITE_WORDS
    for sign in (b"", b"-")
}
_WORD_OR_QUOTE = re.compile(rb'"|-?[A-Za-z]+')
_REST_OF_STRING = re.compile(rb'[^"\\]*(?:\\.[^"\\]*)*', re.DOTALL)  # up to the closing quote, or a lone backslash at the end
_MAY_BE_NON_FINITE = re.compile(r"(?i)nan|inf")  # in yajl's error text, which quotes the bytes around the error


class NonFiniteNumbers(Exception):
    """ijson stopped at what may be a non-finite number: the file is read again with them rewritten."""


class _NonFiniteAsNumbers:
    """Rewrites the bytes ijson reads, chunk after chunk: each non-finite word outside strings
    becomes its stand-in; the bytes that may go on in the next chunk (a word, a minus sign, a
    backslash inside a string) wait for it."""

    def __init__(self) -> None:
        self.in_string = False
        self.held = b""

    def feed(self, chunk: bytes) -> bytes:
        """The rewritten bytes of `chunk` (b"" at the end of the input: the held bytes, once)."""
        data, self.held = self.held + chunk, b""
        final = not chunk
        out: list[bytes] = []
        pos, end = 0, len(data)
        while pos < end:
            if self.in_string:
                stop = _REST_OF_STRING.match(data, pos).end()  # type: ignore[union-attr]  # matches the empty string
                if stop < end and data[stop] == 0x22:  # the closing quote
                    self.in_string = False
                    stop += 1
                elif stop < end and not final:  # a backslash ends the data: its escaped byte comes next
                    self.held = data[stop:]
                    end = stop
                else:
                    stop = end
                out.append(data[pos:stop])
                pos = stop
                continue
            match = _WORD_OR_QUOTE.search(data, pos)
            if match is None:
                if not final and data.endswith(b"-"):  # maybe the sign of a word in the next chunk
                    self.held, end = b"-", end - 1
                out.append(data[pos:end])
                break
            out.append(data[pos : match.start()])
            pos = match.end()
            word = match.group()
            if word == b'"':
                self.in_string = True
                out.append(word)
            elif pos == end and not final:
                self.held = word
            else:
                out.append(_STAND_INS.get(word.lower(), word))
        return b"".join(out)


class _Source:
    """The decompressed byte stream ijson reads, remembering the chunks the metadata may be in.
    A gzip file stops with one line past the limits (input_limits.py); the Python reader's source
    (keep_chunks) also stops when MAX_VALUE_BYTES pass without an event ending."""

    def __init__(self, path: Path, limits: InputLimits, check_nesting: bool = False, keep_chunks: bool = True):
        self.path = path
        self.limits = limits
        self.check_nesting = check_nesting
        self.keep_chunks = keep_chunks  # False: a reader that needs no chunk back (duckdb_reader)
        self.marked = False  # events reached: the 64 MiB limit before the first event no longer applies
        self.since_mark = 0  # bytes read after the chunk in which the last event ended (keep_chunks), or from the start
        self.depth = 0
        self.raw = open(path, "rb")
        self.size = max(path.stat().st_size, 1)
        self.is_gzip = self.raw.read(len(GZIP_MAGIC)) == GZIP_MAGIC
        self.raw.seek(0)
        self.stream = gzip.GzipFile(fileobj=self.raw, mode="rb") if self.is_gzip else self.raw
        self.bytes_read = 0
        self.first = b""  # the first chunk, once _peek has read it
        self.reads = 0
        self.recent: list[bytes] = []  # chunks read since mark() (all of them before the first mark)

    def read(self, size: int = CHUNK_BYTES) -> bytes:
        if self.keep_chunks:
            # No event ended for a while: read more at once. yajl lexes an unfinished token again
            # from its start with every chunk, so a long string in fixed chunks costs the square of
            # its length (64 MiB: 60 s); chunks that grow with it cost twice its length.
            size = max(size, self.since_mark)
        try:
            chunk = self.stream.read(size)
        except EOFError as exc:
            raise InputError(self.path, "is a truncated gzip file (it ends before the compressed stream does)", _FIX_DAMAGED) from exc
        except (gzip.BadGzipFile, zlib.error) as exc:
            raise InputError(self.path, f"is a damaged gzip file ({exc})", _FIX_DAMAGED) from exc
        if self.check_nesting and chunk:
            self._check_nesting(chunk)
        self.bytes_read += len(chunk)
        self.reads += 1
        if self.is_gzip:
            self.limits.check_decompressed(self.path, self.bytes_read, self.raw.tell())  # tell: read ahead, never less
        if self.keep_chunks:
            self.recent.append(chunk)
            self.since_mark += len(chunk)
            if self.marked and self.since_mark > MAX_VALUE_BYTES:  # all of it after the last event's end
                raise value_too_large(self.path)
            if not self.marked and self.bytes_read > MAX_BYTES_BEFORE_FIRST_EVENT:
                raise InputError(
                    self.path, "has no trace events in its first 64 MiB", "pass a PyTorch profiler trace (a JSON object with traceEvents)"
                )
        return chunk

    def _check_nesting(self, chunk: bytes) -> None:
        import numpy as np

        brackets = chunk.translate(None, _NOT_BRACKETS)  # at C speed first: a long string holds none
        if not brackets:
            return
        data = np.frombuffer(brackets, np.uint8)
        step = (np.isin(data, _OPENERS).astype(np.int32) - np.isin(data, _CLOSERS).astype(np.int32)).cumsum()
        if self.depth + int(step.max()) > MAX_NESTING:
            raise InputError(
                self.path,
                f"nests JSON more than {MAX_NESTING} levels deep near byte {self.bytes_read}",
                "pass a PyTorch profiler trace (its events nest a few levels)",
            )
        self.depth += int(step[-1])

    def mark(self) -> None:
        """An event just completed: only the chunk being parsed can still hold what follows it."""
        self.marked = True
        del self.recent[:-1]
        self.since_mark = 0  # counts the chunks after this one

    def fraction(self) -> float:
        return min(self.raw.tell() / self.size, 1.0)

    def close(self) -> None:
        self.stream.close()
        self.raw.close()


def _first_byte(data: bytes) -> bytes:
    stripped = data.lstrip(b" \t\r\n\xef\xbb\xbf")
    return stripped[:1]


def _head_metadata(head: bytes) -> dict:
    """Top-level keys that precede `traceEvents`, from the bytes up to the first event."""
    meta: dict = {}
    try:
        for key, value in ijson.kvitems(io.BytesIO(head), "", use_float=False):
            if key == kf.EVENTS_KEY:
                break
            meta[key] = value
    except ijson.JSONError:
        pass  # the head ends inside traceEvents; everything before it was already yielded
    return meta


def _tail_metadata(tail: bytes, non_finite: bool = False) -> dict | None:
    """Top-level keys after `traceEvents`, from bytes that start inside the last event (see closing_bracket)."""
    found = closing_bracket(tail, non_finite)
    return None if found is None else found[1]


def _rewritten(data: bytes) -> bytes:
    """`data` (starting outside a string) with its non-finite numbers as their stand-ins."""
    rewrite = _NonFiniteAsNumbers()
    return rewrite.feed(data) + rewrite.feed(b"")


# Tokens of JSON read right to left, on the reversed bytes: a whole string (from its closing quote
# to its opening one, the first quote not escaped: in reversed bytes, not followed by an odd run of
# backslashes), a lone quote (a string opened before these bytes), or a bracket.
_REVERSED_TOKEN = re.compile(rb'"[^"]*(?:"\\(?:\\\\)*(?!\\)[^"]*)*"(?=(?:\\\\)*(?!\\))|"|[\[\]{}]')
_QUOTE, _CLOSE_ARRAY = ord('"'), ord("]")


def _leftmost_member_array_end(tail: bytes) -> int | None:
    """Offset of the leftmost `]` that closes an array directly inside the object that ends
    `tail`, found in one pass from the right (where the state is known: outside any string)."""
    reversed_tail = tail[::-1]
    depth = 0  # containers open at this point, counted from the right
    found = None
    for token in _REVERSED_TOKEN.finditer(reversed_tail):
        byte = reversed_tail[token.start()]
        if byte == _QUOTE:
            if token.end() - token.start() == 1:  # the rest to the left is inside one string
                break
        elif byte in _CLOSERS:
            if depth == 1 and byte == _CLOSE_ARRAY:
                found = token.start()
            depth += 1
        else:
            depth -= 1
            if depth <= 0:  # the object's own `{`: nothing further left belongs to it
                break
    return None if found is None else len(tail) - 1 - found


def closing_bracket(tail: bytes, non_finite: bool = False) -> tuple[int, dict] | None:
    """(offset of the `]` closing traceEvents, top-level keys after it) in bytes that start inside
    the last event.

    The `]` closing traceEvents is the leftmost `]` after which the rest of the file reads as
    the end of one object: `}` alone, or `, "key": value, ... }`. In JSON that is the leftmost `]`
    closing an array directly inside the top-level object (a `]` inside an event leaves the rest
    closing more objects than it opens; the `]`s of arrays in the trailing metadata lie further
    right), which one pass from the right finds; the rest after it is then parsed once.
    Returns None when that rest does not read as the end of one object.
    """
    pos = _leftmost_member_array_end(tail)
    if pos is None:
        return None
    rest = tail[pos + 1 :].lstrip()
    if rest.startswith(b"}") and not rest[1:].strip():
        return pos, {}
    if rest.startswith(b","):
        try:
            value = json.loads(_rewritten(b"{" + rest[1:]) if non_finite else b"{" + rest[1:], parse_float=Decimal)
        except ValueError:
            return None
        if isinstance(value, dict):
            return pos, value
    return None


def iter_event_batches(trace: KinetoTrace, progress: Callable[[float], None] | None = None, non_finite: bool = False) -> Iterator[list]:
    """Yield the trace's events in batches of up to BATCH_EVENTS; fill trace.metadata at the end.
    `non_finite`: rewrite non-finite numbers into their stand-ins (NonFiniteNumbers asks for it)."""
    require_c_backend()
    path = trace.path
    source = _Source(path, trace.limits, check_nesting=True)
    head = b""
    seen_event = False
    try:
        kind = _first_byte(_peek(source))
        if kind not in (b"{", b"["):
            raise InputError(path, "is not JSON (it does not start with { or [)", "pass a PyTorch profiler trace .json or .json.gz")
        top_is_object = kind == b"{"
        prefix = kf.EVENTS_KEY + ".item" if top_is_object else "item"
        batch: list = []
        last_reads = -1
        try:
            replay = _Replay(source, _NonFiniteAsNumbers() if non_finite else None)
            for event in ijson.items(replay, prefix, use_float=False, buf_size=CHUNK_BYTES):
                if source.reads != last_reads:  # the first event completed in a newly read chunk
                    if not seen_event:
                        head = b"".join(source.recent)
                        seen_event = True
                    source.mark()
                    last_reads = source.reads
                batch.append(event)
                if len(batch) >= BATCH_EVENTS:
                    trace.event_count += len(batch)
                    yield batch
                    batch = []
                    if progress is not None:
                        progress(source.fraction())
        except ijson.JSONError as exc:
            if not non_finite and _MAY_BE_NON_FINITE.search(str(exc)):
                raise NonFiniteNumbers from exc
            raise InputError(path, f"{_json_error_line(exc)} near byte {source.bytes_read}", _FIX_DAMAGED) from exc
        if batch:
            trace.event_count += len(batch)
            yield batch
        trace.uncompressed_bytes = source.bytes_read
        rest = b"".join(source.recent)
    finally:
        source.close()
    if not seen_event:
        _check_empty_document(path, rest)
    if top_is_object:
        meta = _head_metadata(_NonFiniteAsNumbers().feed(head) if non_finite else head)
        tail_meta = _tail_metadata(rest, non_finite)
        if tail_meta is None:
            raise InputError(path, "has traceEvents whose end could not be located", _FIX_DAMAGED)
        meta.update(tail_meta)
        trace.metadata = meta


def _peek(source: _Source) -> bytes:
    source.first = source.read(CHUNK_BYTES)
    return source.first


class _Replay:
    """File-like view of the source that first returns the chunk already peeked at (rewritten by
    `rewrite`, if given)."""

    def __init__(self, source: _Source, rewrite: _NonFiniteAsNumbers | None = None):
        self.source = source
        self.pending: bytes | None = source.first
        self.rewrite = rewrite

    def read(self, size: int) -> bytes:
        if size == 0:  # ijson probes bytes vs str with read(0)
            return b""
        while True:
            if self.pending is not None:
                chunk, self.pending = self.pending, None
            else:
                chunk = self.source.read(size)
            if self.rewrite is None:
                return chunk
            out = self.rewrite.feed(chunk)
            if out or not chunk:  # b"" only at the end: bytes held back come with the next chunk
                return out


def _check_empty_document(path: Path, data: bytes) -> None:
    """A complete JSON document without events: say whether traceEvents is missing or empty."""
    try:
        doc = json.loads(data)
    except ValueError:
        doc = None
    if isinstance(doc, dict) and kf.EVENTS_KEY in doc:
        if isinstance(doc[kf.EVENTS_KEY], list):
            raise InputError(path, "has an empty traceEvents list", "profile at least one step before exporting the trace")
        raise InputError(path, "has a traceEvents that is not a list", "pass a PyTorch profiler trace")
    if isinstance(doc, list):
        raise InputError(path, "is a JSON list without trace events", "pass a PyTorch profiler trace")
    raise InputError(path, "is JSON but not a trace (no traceEvents key)", "pass a PyTorch profiler trace (torch.profiler export_chrome_trace)")
