"""How far an input may expand while it is read: the guards against decompression bombs.

A `.json.gz` is decompressed as it is read, and a pipe is copied once into `$TMPDIR`; neither size
is known up front. Three limits stop such an input with one line instead of filling `$TMPDIR` or
memory:

- the gzip ratio: decompressed bytes past `max_gzip_ratio` x the compressed bytes read so far
  (real Kineto traces decompress 7-21x; judged from RATIO_FLOOR_BYTES of output on, so a bomb
  stops there, whatever its size, and a small file is never judged);
- the input size: decompressed bytes of a gzip file, or the bytes of a pipe, past `max_input_bytes`;
- one JSON value: MAX_VALUE_BYTES of the events array without a boundary between two events (one
  event, a string in it, a run of whitespace) -- no profiler writes one; DuckDB's JSON reader
  takes objects up to that size.

The first two can be changed per command (`convert --max-gzip-ratio/--max-input-size`) or for
every command by environment (XSP_MAX_GZIP_RATIO, XSP_MAX_INPUT_SIZE: `analyze` of a raw trace
too); 0 turns a limit off.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError

DEFAULT_MAX_GZIP_RATIO = 100.0
DEFAULT_MAX_INPUT_BYTES = 64 << 30
RATIO_FLOOR_BYTES = 64 << 20
MAX_VALUE_BYTES = 64 << 20
RATIO_ENV = "XSP_MAX_GZIP_RATIO"
SIZE_ENV = "XSP_MAX_INPUT_SIZE"

_SIZE = re.compile(r"\s*([0-9]+(?:\.[0-9]*)?)\s*([kmgt]?)(i?b?)\s*", re.IGNORECASE)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(text: str, where: str) -> int:
    """Bytes of a size such as `64GB`, `500MiB`, `1.5G` or `123456` (units of 1024); InputError otherwise."""
    match = _SIZE.fullmatch(text)
    size = float(match.group(1)) * _UNITS[match.group(2).lower()] if match else math.nan
    if not 0 <= size < 2**63:  # not a size, or 400 digits (inf)
        raise InputError(None, f"{where} {text!r} is not a size", "write e.g. 64GB, 500MB or 0 for no limit")
    return int(size)


def _parse_ratio(text: str, where: str) -> float:
    try:
        ratio = float(text)
    except ValueError:
        ratio = -1.0
    if not 0 <= ratio < math.inf:
        raise InputError(None, f"{where} {text!r} is not a ratio", "write a number such as 100, or 0 for no limit")
    return ratio


def human_bytes(count: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if count < 1024 or unit == "GiB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024
    return f"{count:.1f} GiB"  # pragma: no cover - the loop always returns


@dataclass(frozen=True)
class InputLimits:
    max_gzip_ratio: float = DEFAULT_MAX_GZIP_RATIO  # 0: none
    max_input_bytes: int = DEFAULT_MAX_INPUT_BYTES  # 0: none

    @classmethod
    def from_env(cls, max_gzip_ratio: float | None = None, max_input_size: str | None = None) -> InputLimits:
        """The limits given, else those of the environment, else the defaults."""
        ratio, size = max_gzip_ratio, None
        if ratio is None and os.environ.get(RATIO_ENV, "").strip():
            ratio = _parse_ratio(os.environ[RATIO_ENV], RATIO_ENV)
        if ratio is not None and not 0 <= ratio < math.inf:  # nan, inf, negative
            raise InputError(None, f"--max-gzip-ratio {ratio} is not a ratio", "pass a number such as 100, or 0 for no limit")
        if max_input_size is not None:
            size = parse_size(max_input_size, "--max-input-size")
        elif os.environ.get(SIZE_ENV, "").strip():
            size = parse_size(os.environ[SIZE_ENV], SIZE_ENV)
        return cls(
            DEFAULT_MAX_GZIP_RATIO if ratio is None else ratio,
            DEFAULT_MAX_INPUT_BYTES if size is None else size,
        )

    def check_decompressed(self, path: Path, decompressed: int, compressed: int) -> None:
        """InputError once the first `compressed` bytes of a gzip file at `path` decompressed to `decompressed` bytes too many."""
        if self.max_gzip_ratio and decompressed > RATIO_FLOOR_BYTES and decompressed > self.max_gzip_ratio * compressed:
            raise InputError(
                path,
                f"decompresses more than {self.max_gzip_ratio:g}x ({human_bytes(compressed)} of gzip gave "
                f"{human_bytes(decompressed)}): a decompression bomb, not a trace",
                f"if it is a real trace, raise the limit: --max-gzip-ratio N or {RATIO_ENV}=N (0: none)",
            )
        self.check_size(path, decompressed, "decompresses to")

    def check_size(self, path: Path, size: int, what: str = "holds") -> None:
        """InputError once an input at `path` (a gzip file's contents, a pipe) passes max_input_bytes."""
        if self.max_input_bytes and size > self.max_input_bytes:
            raise InputError(
                path,
                f"{what} more than {human_bytes(self.max_input_bytes)} of trace",
                f"if it is a real trace, raise the limit: --max-input-size SIZE or {SIZE_ENV}=SIZE (0: none)",
            )


def value_too_large(path: Path) -> InputError:
    """The one line for MAX_VALUE_BYTES of events without a boundary between two (both Kineto readers)."""
    return InputError(
        path,
        f"holds more than {human_bytes(MAX_VALUE_BYTES)} of JSON in one trace event (a huge string or whitespace run): no profiler writes one",
        "pass a PyTorch profiler trace as it was exported",
    )
