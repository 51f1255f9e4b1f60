"""Settings an analysis reads as DuckDB variables, given on the command line as `--set NAME=VALUE`.

The options of the expert rules (queries/lib/rules.sql) are named as `nsys analyze -r RULE:NAME=VALUE`
names them; the facts the rules match on (API-name patterns, memory kinds) are set with them from
xsp_trace/formats/nsys_rules.py. Other analyses' settings (step_causes, kernel_sequences, kernel_pace,
cuda_gpu_kern_hist) are named after what they set.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import duckdb

from ..errors import InputError
from ..formats import nsys_rules
from ..store.sql import set_variables
from ..timebase import LIMIT_NS

# A launch costs its GPU ~5-20 µs from call to start; GPU work that started over 100 µs after its
# launch on a free stream waited for something else the trace does not record (another stream's work
# inside a CUDA graph, an event): step_causes calls that time a stall, not launch latency.
QUEUE_STALL_NS = 100_000

# Every integer setting has both bounds: a value past them would overflow the SQL's BIGINT arithmetic.
_ROWS_MAX = 2**31 - 1
_TIME_NS = LIMIT_NS - 1  # the time base's range (timebase.py)


@dataclass(frozen=True)
class Setting:
    name: str  # as --set takes it
    variable: str  # the DuckDB variable the SQL reads
    kind: type  # int or str
    default: int | str | None  # None: unset (the SQL's own default applies)
    help: str
    minimum: int | None = None  # both set for an int setting
    maximum: int | None = None


SETTINGS: dict[str, Setting] = {
    s.name: s
    for s in (
        Setting(
            "stall",
            "xsp_queue_stall_ns",
            int,
            QUEUE_STALL_NS,
            "step_causes: a launch's queue delay on the critical path longer than this, ns, is a stall on a dependency (stream_wait), not launch latency",
            0,
            _TIME_NS,
        ),
        Setting(
            "sequence_op",
            "xsp_sequence_op",
            str,
            None,
            "kernel_sequences: the ops whose name contains TEXT (HTA's operator_name; default: the outermost ops)",
        ),
        Setting(
            "sequence_min",
            "xsp_sequence_min",
            int,
            3,
            "kernel_sequences: ops that launched at least this many GPU operations (HTA's min_pattern_len)",
            1,
            _ROWS_MAX,
        ),
        Setting(
            "pace_kernel",
            "xsp_pace_kernel",
            str,
            None,
            "kernel_pace: the kernel NAME (or short name) to pace (default: the one run once per step with the most GPU time)",
        ),
        Setting("hist_bins", "xsp_hist_bins", int, 10, "cuda_gpu_kern_hist: duration bins per kernel", 1, 10_000),
        Setting("rows", "xsp_rule_rows", int, nsys_rules.DEFAULT_ROWS, "expert rules: at most this many rows per rule and run", 1, _ROWS_MAX),
        Setting(
            "start",
            "xsp_rule_start_ns",
            int,
            None,
            "expert rules: only work ending at or after this time (ns after the run's origin)",
            -_TIME_NS,
            _TIME_NS,
        ),
        Setting(
            "end", "xsp_rule_end_ns", int, None, "expert rules: only work starting before this time (ns after the run's origin)", -_TIME_NS, _TIME_NS
        ),
        Setting("nvtx", "xsp_rule_nvtx", str, None, "expert rules: only the window (and process) of the first range named TEXT[@DOMAIN]"),
        Setting(
            "gap", "xsp_rule_gap_ms", int, nsys_rules.DEFAULT_GAP_MS, "gpu_starvation: GPU idle gaps longer than this, ms", 0, _TIME_NS // 1_000_000
        ),
        Setting(
            "threshold", "xsp_rule_threshold_pct", int, nsys_rules.DEFAULT_THRESHOLD_PCT, "gpu_low_utilization: regions used below this, %", 0, 100
        ),
        Setting(
            "chunks", "xsp_rule_chunks", int, nsys_rules.DEFAULT_CHUNKS, "gpu_low_utilization: chunks per process and GPU", 1, nsys_rules.MAX_CHUNKS
        ),
    )
}


def parse_settings(texts: Iterable[str] | None) -> dict[str, int | str]:
    """{'gap': 100, ...} from ['gap=100', ...]; one clear InputError for a bad one."""
    parsed: dict[str, int | str] = {}
    for text in texts or ():
        name, sep, value = text.partition("=")
        name = name.strip()
        if not sep or name not in SETTINGS:
            raise InputError(None, f"--set {text!r} is not NAME=VALUE with a known NAME", "names: " + ", ".join(SETTINGS))
        setting = SETTINGS[name]
        if setting.kind is int:
            try:
                number = int(value)
            except ValueError:
                raise InputError(None, f"--set {name}={value!r} is not an integer", f"e.g. --set {name}={setting.default or 0}") from None
            low, high = setting.minimum, setting.maximum
            if (low is not None and number < low) or (high is not None and number > high):
                bounds = f"{low if low is not None else '...'} to {high if high is not None else '...'}"
                raise InputError(None, f"--set {name}={number} is out of range", f"use {bounds}")
            parsed[name] = number
        else:
            parsed[name] = value
    return parsed


def set_rule_variables(con: duckdb.DuckDBPyConnection, settings: dict[str, int | str] | None) -> None:
    """The rules' facts and settings (given ones over the defaults) as DuckDB variables; a setting
    without a default that is not given is reset, so one session can run the rules with several."""
    for s in SETTINGS.values():
        if s.default is None and s.name not in (settings or {}):
            con.execute(f"RESET VARIABLE {s.variable}")
    values: dict[str, object] = {s.variable: s.default for s in SETTINGS.values() if s.default is not None}
    values.update({SETTINGS[name].variable: value for name, value in (settings or {}).items()})
    values.update(rule_facts())
    set_variables(con, values)


def rule_facts() -> dict[str, object]:
    """The facts the rules match on (xsp_trace/formats/nsys_rules.py), as DuckDB variables."""
    return {
        "xsp_rule_nvtx_separator": nsys_rules.NVTX_DOMAIN_SEPARATOR,
        "xsp_rule_async_memcpy_api": nsys_rules.ASYNC_MEMCPY_API_LIKE,
        "xsp_rule_pageable_kind": nsys_rules.ASYNC_MEMCPY_HOST_KIND,
        "xsp_rule_sync_memcpy_api": nsys_rules.SYNC_MEMCPY_API_LIKE,
        "xsp_rule_sync_memcpy_not_api": nsys_rules.SYNC_MEMCPY_API_NOT_LIKE,
        "xsp_rule_small_htod_bytes": nsys_rules.SMALL_HTOD_BYTES,
        "xsp_rule_small_copy_kind": nsys_rules.SMALL_COPY_KIND,
        "xsp_rule_sync_memset_api": nsys_rules.SYNC_MEMSET_API_LIKE,
        "xsp_rule_sync_memset_not_api": nsys_rules.SYNC_MEMSET_API_NOT_LIKE,
        "xsp_rule_sync_memset_kinds": list(nsys_rules.SYNC_MEMSET_MEM_KINDS),
        "xsp_rule_sync_api": list(nsys_rules.SYNC_API_LIKE),
    }
