"""Cutting the bytes of the `traceEvents` array into pieces, each a JSON array of whole events.

duckdb_reader streams the array through `PieceWriter`; every piece of about `piece_bytes` is a file
read and mapped on its own (kineto.py), so DuckDB never holds the raw events of the whole trace.

A cut is made at a `,` between two top-level elements: outside strings, at bracket depth 1. The
state (depth, inside a string or not) is carried over every byte, at C speed: per chunk the
escapes are removed with bytes.replace, everything but quotes and brackets with bytes.translate,
the strings with one regex substitution, and the brackets left are counted. Only a chunk in
which a cut is wanted is scanned token by token (a regex over strings and structural bytes,
about one chunk per piece). A chunk never ends inside an escape: trailing backslashes wait for
the next one.

No cut is made in the last `lag_bytes` read: the `]` closing the array (found by python_reader's
tail rule in those bytes) and the metadata after it always lie in the last piece, and no cut can
fall in that metadata (where depth 1 means something else). The pieces joined with commas give
back the array exactly, so a file that is not valid JSON stays so (a piece fails to read).

Nothing grows without bound: when about `max_value_bytes` pass without an element of the array
ending (one huge event or string, a run of whitespace, metadata after the array), or a piece
passes its size by that much without a cut, `write` raises ValueTooLarge. The caller hands the file
to the streaming reader, which judges it (input_limits.MAX_VALUE_BYTES): the ends are seen per
chunk here, so the hand-over comes a few chunks early, before any size that reader refuses.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ..input_limits import MAX_VALUE_BYTES

# A string (closed, or running to the end of the chunk) or a structural byte.
_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*(?:(")|\Z)|[\[\]{},]', re.S)
_NOT_STRUCTURE = bytes(b for b in range(256) if b not in b'"[]{}')


class ValueTooLarge(Exception):
    """About max_value_bytes passed without an element of the array ending, or a piece without a cut."""


def _closes_to(structure: bytes, depth: int, level: int) -> bool:
    """Whether a closing bracket in `structure` (brackets only, outside strings, entered at `depth`) brings the depth to `level`."""
    if b"}" not in structure and b"]" not in structure:
        return False
    data = np.frombuffer(structure, np.uint8)
    closing = (data == 0x7D) | (data == 0x5D)
    running = depth + np.cumsum(np.where(closing, -1, 1))
    return bool((closing & (running == level)).any())


class ScanState:
    """Bracket depth (1 inside the array, between its elements), whether a string is open, and
    whether an element of the array ended (a bracket closed back to depth 1) since `ended` was reset."""

    __slots__ = ("depth", "ended", "in_string")

    def __init__(self) -> None:
        self.depth = 0
        self.in_string = False
        self.ended = False

    def skip(self, data: bytes) -> None:
        """Carry the state over `data` (which must not end inside an escape)."""
        start = 0
        if self.in_string:
            end = _string_rest_end(data)
            if end is None:
                return  # the string goes on
            start = end
            self.in_string = False
        rest = data[start:]
        if b"\\" in rest:  # backslashes occur in strings only: pairs first (a run pairs up from its left), then \"
            rest = rest.replace(b"\\\\", b"").replace(b'\\"', b"")
        # Quotes and brackets only. Two adjacent quotes are an empty string or the end of one string
        # and the start of the next: dropping them changes nothing; left are strings with brackets.
        structure = rest.translate(None, _NOT_STRUCTURE).replace(b'""', b"")
        if b'"' in structure:
            parts = structure.split(b'"')
            self.in_string = len(parts) % 2 == 0
            structure = b"".join(parts[::2])
        if not self.ended:
            self.ended = _closes_to(structure, self.depth, 1)
        self.depth += structure.count(b"{") + structure.count(b"[") - structure.count(b"}") - structure.count(b"]")

    def find_cut(self, data: bytes) -> int | None:
        """The offset of the first `,` between top-level elements in `data`, the state carried up
        to it; None (the state carried over all of `data`) if there is none."""
        pos = 0
        if self.in_string:
            end = _string_rest_end(data)
            if end is None:
                return None
            pos = end
            self.in_string = False
        depth = self.depth
        for match in _TOKEN.finditer(data, pos):
            byte = data[match.start()]
            if byte == 0x22:  # '"'
                if match.group(1) is None:  # runs to the end of the data
                    self.in_string = True
            elif byte == 0x2C:  # ','
                if depth == 1:
                    self.depth = depth
                    return match.start()
            elif byte in (0x5B, 0x7B):  # '[' '{'
                depth += 1
            else:
                depth -= 1
                self.ended = self.ended or depth == 1
        self.depth = depth
        return None


def _string_rest_end(data: bytes) -> int | None:
    """Offset just past the quote closing a string that is open at the start of `data` (which does
    not start inside an escape); None if it runs past `data`. A quote closes it when an even run of
    backslashes precedes it. bytes.find, not a regex: the regex of a string's rest backtracked
    over every byte of a string longer than the data."""
    pos = 0
    while (quote := data.find(b'"', pos)) >= 0:
        before = data[pos:quote]
        if (len(before) - len(before.rstrip(b"\\"))) % 2 == 0:
            return quote + 1
        pos = quote + 1
    return None


def _trailing_backslashes(data: bytes) -> int:
    return len(data) - len(data.rstrip(b"\\"))


class PieceWriter:
    """Writes the bytes of the traceEvents array (from its `[`) into piece files in `folder`,
    handing each finished piece (`[` ... `]`, a valid array when the trace is) to `on_piece`.

    `write` takes the bytes in order; `finish(end)` keeps the first `end` bytes of the last piece
    (the caller finds where the array closes in the last `lag_bytes`) and hands it over."""

    def __init__(self, folder: Path, piece_bytes: int, lag_bytes: int, on_piece: Callable[[Path], None], max_value_bytes: int = MAX_VALUE_BYTES):
        self.folder, self.piece_bytes, self.lag_bytes, self.on_piece = folder, piece_bytes, lag_bytes, on_piece
        self.max_piece_bytes = piece_bytes + max_value_bytes
        self.max_unended_bytes = max_value_bytes - (3 << 20)  # ends seen per chunk: a few chunks early
        self.unended = 0  # bytes scanned since the chunk in which an element last ended
        self.state = ScanState()
        self.pieces = 0
        self.pending: deque[bytes] = deque()  # read, not yet scanned: the last lag_bytes and more
        self.pending_bytes = 0
        self.carry = b""  # trailing backslashes of the last scanned bytes
        self.closed = False  # the array closed (depth 0): no more cuts
        self._open()

    def _open(self) -> None:
        self.path = self.folder / f"piece-{self.pieces:06d}.json"
        self.out = open(self.path, "wb")  # closed in _close (or discard)
        self.size = 0
        if self.pieces:
            self._put(b"[")

    def _put(self, data: bytes) -> None:
        if self.size + len(data) > self.max_piece_bytes:
            raise ValueTooLarge
        self.out.write(data)
        self.size += len(data)

    def _close(self) -> Path:
        self.out.close()
        self.pieces += 1
        return self.path

    def write(self, chunk: bytes) -> None:
        self.pending.append(chunk)
        self.pending_bytes += len(chunk)
        while self.pending and self.pending_bytes - len(self.pending[0]) >= self.lag_bytes:
            first = self.pending.popleft()
            self.pending_bytes -= len(first)
            self._scan(first)
            self.unended = 0 if self.state.ended else self.unended + len(first)
            self.state.ended = False
            if self.unended > self.max_unended_bytes:
                raise ValueTooLarge

    def _scan(self, chunk: bytes) -> None:
        data = self.carry + chunk
        keep = len(data) - _trailing_backslashes(data)
        data, self.carry = data[:keep], data[keep:]
        while data:
            if self.closed or self.size < self.piece_bytes:
                self.state.skip(data)
                self._put(data)
                if self.state.depth <= 0:
                    self.closed = True
                return
            cut = self.state.find_cut(data)
            if cut is None:
                self._put(data)
                if self.state.depth <= 0:
                    self.closed = True
                return
            self._put(data[:cut] + b"]")
            self.on_piece(self._close())
            self._open()
            data = data[cut + 1 :]

    def finish(self, tail_cut: int) -> None:
        """Write what is still pending, then cut the last piece `tail_cut` bytes before its end
        (just after the `]` closing the array) and hand it over."""
        rest = self.carry + b"".join(self.pending)
        self.pending.clear()
        self._put(rest)
        self.out.truncate(self.size - tail_cut)
        self.on_piece(self._close())

    def discard(self) -> None:
        if not self.out.closed:
            self.out.close()
