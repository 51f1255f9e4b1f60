"""The one time base of what xsp-trace shows: times relative to each run's origin (runs.origin_ns,
the run clock's time of its first event), read and written in ms with µs precision.

The tables keep the run clock; analyses, findings, diff, the report and the Perfetto export show
`time - origin_ns`, so a time printed anywhere is the time ui.perfetto.dev shows for the export.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

# Units a time may be given in, as ns per unit; a number without one is ns (what --window took before).
UNITS_NS = {"ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000}
LIMIT_NS = 2**62
_TIME = re.compile(r"\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(ns|us|µs|ms|s)?\s*")


def parse_time(text: str) -> int:
    """ns of a time such as "120ms", "0.12 s", "120000us" or "120000000" (ns), rounded to the ns.
    ValueError when it is none of these."""
    match = _TIME.fullmatch(text)
    if match is None:
        raise ValueError(text)
    try:
        value = Decimal(match.group(1)) * UNITS_NS[match.group(2) or "ns"]
    except InvalidOperation:
        raise ValueError(text) from None
    if abs(value) >= LIMIT_NS:  # beyond any trace, and beyond what BIGINT arithmetic on it holds
        raise ValueError(text)
    return int(value.to_integral_value())


def format_time(ns: float | None) -> str:
    """A time after a run's origin as printed in prose: ms with µs precision ("120.532 ms"); None
    (the run has no origin: runs.origin_ns NULL, as only a hand edit leaves it beside spans) says so."""
    return "? (runs.origin_ns is NULL)" if ns is None else f"{float(ns) / 1e6:.3f} ms"
