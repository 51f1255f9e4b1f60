"""Run diff across two databases with a regression gate that compares like with like.

Per kernel, op and layer name (per-instance details removed by `naming.normalize_name`), both sides
give their calls and mean time per call, and, when both databases have steps, the time per step
(queries/analyses/diff_totals.sql). Two captures of different lengths hold different numbers of
calls, so their window totals are never compared.

The gate (`Gate`): an entry is a regression when the compared figure -- time per step when both
databases have at least MIN_STEPS steps, else mean time per call -- grew by more than
`fail_above_pct`, with at least `min_calls` calls on both sides, by more than NOISE_STANDARD_ERRORS
standard errors of the difference (Welch: the spread of the per-call times, or of the per-step
times, over their counts), and the entry held at least `min_share_pct` of its level's baseline time.
Entries on one side only are listed (new / gone) and never gate: they have nothing to compare with.
`xsp-trace diff` is a thin wrapper; CI uses its exit code.
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from ..database import connect
from ..naming import install_normalize_macro
from ..resources import query_text
from ..sql import values_readable
from ..tables import print_table, wide_console, write_csv

LEVELS = ("kernel", "op", "layer")
# Standard errors of the difference a change must exceed to count (about a 97.5 % one-sided test).
NOISE_STANDARD_ERRORS = 2.0
# Steps each database needs for a per-step comparison (one step shows no spread).
MIN_STEPS = 2
DEFAULT_MIN_CALLS = 10


@dataclass
class _Tally:
    """Count, sum and sum of squares of a series: its mean and sample variance."""

    n: int = 0
    total: float = 0.0
    total_sq: float = 0.0

    def add(self, n: int, total: float, total_sq: float) -> None:
        self.n, self.total, self.total_sq = self.n + n, self.total + total, self.total_sq + total_sq

    @property
    def mean(self) -> float | None:
        return self.total / self.n if self.n else None

    def variance(self) -> float:
        if self.n < 2:
            return 0.0
        return max(0.0, (self.total_sq - self.total * self.total / self.n) / (self.n - 1))


@dataclass
class _Entry:
    calls: _Tally  # one sample per call
    step_totals: _Tally  # filled in with one sample per step (0 for steps without a call)


@dataclass(frozen=True)
class Capture:
    """One database as diff reads it: per (level, name) its calls, and its number of steps."""

    path: Path
    steps: int
    entries: dict[tuple[str, str], _Entry]


def read_capture(path: Path) -> Capture:
    con = connect(path, read_only=True)
    try:
        with values_readable(path):
            install_normalize_macro(con)
            rows = con.execute(query_text("analyses/diff_totals")).fetchall()
    finally:
        con.close()
    steps = int(rows[0][-1]) if rows else 0
    entries: dict[tuple[str, str], _Entry] = {}
    for level, name, step, calls, total, total_sq, _ in rows:
        entry = entries.setdefault((level, name), _Entry(_Tally(), _Tally()))
        entry.calls.add(int(calls), float(total), float(total_sq))
        if step is not None:
            entry.step_totals.add(0, float(total), float(total) ** 2)
    for entry in entries.values():
        entry.step_totals.n = steps  # the steps without a call of the entry add 0 to both sums
    return Capture(path, steps, entries)


@dataclass(frozen=True)
class Gate:
    fail_above_pct: float = 5.0
    min_calls: int = DEFAULT_MIN_CALLS
    min_share_pct: float = 1.0

    def rule(self, per_step: bool) -> str:
        what = "time per step" if per_step else "mean time per call"
        return (
            f"regression: {what} grew by more than {self.fail_above_pct:g} %, by more than {NOISE_STANDARD_ERRORS:g} "
            f"standard errors, with >= {self.min_calls} calls on both sides and >= {self.min_share_pct:g} % of its level's baseline time"
        )


@dataclass(frozen=True)
class DiffRow:
    level: str
    name: str
    calls_base: int
    calls_new: int
    mean_ns_base: float | None  # None: absent from that side
    mean_ns_new: float | None
    per_call_change_pct: float | None  # None: absent from a side, or no time in the baseline
    per_step_ns_base: float | None  # None: a side has no steps (or lacks the entry)
    per_step_ns_new: float | None
    per_step_change_pct: float | None
    base_share_pct: float  # share of its level's time in the baseline (0 when absent)
    significant: bool  # the compared figure changed by more than the noise
    regression: bool


@dataclass(frozen=True)
class Summary:
    per_step: bool  # the comparison is per step (else per call)
    base_steps: int
    new_steps: int
    level: str | None  # the level the summary figure is about (kernel if both sides have kernels)
    base_ns: float | None  # its time per step (or per call) in each database
    new_ns: float | None
    base_calls: int
    new_calls: int

    def lines(self) -> list[str]:
        out = []
        if not self.per_step:
            sides = [
                f"{side} has {n} step{'s' if n != 1 else ''}" for side, n in (("base", self.base_steps), ("new", self.new_steps)) if n < MIN_STEPS
            ]
            out.append(f"no per-step comparison ({', '.join(sides)}; needs >= {MIN_STEPS} on both): comparing calls and mean time per call")
            if 0 in (self.base_steps, self.new_steps):
                out.append("steps of a trace without ProfilerStep#N ranges: convert --step-ranges REGEX")
        if self.level is None or self.base_ns is None or self.new_ns is None:
            return out + ["no kernel, op or layer is on both sides"]
        unit = "step" if self.per_step else "call"
        what = "GPU kernel time" if self.level == "kernel" else f"{self.level} time (CPU)"
        counts = (
            f"{self.base_steps:,} -> {self.new_steps:,} steps" if self.per_step else f"{self.base_calls:,} -> {self.new_calls:,} {self.level} calls"
        )
        change = f" ({_pct_text(_change_pct(self.base_ns, self.new_ns))})" if self.base_ns else ""
        return [f"{what} per {unit}: {_ms(self.base_ns)} ms -> {_ms(self.new_ns)} ms{change}, {counts}", *out]


def _change_pct(base: float | None, new: float | None) -> float | None:
    return 100.0 * (new - base) / base if base and new is not None else None


def _welch_se(a: _Tally, b: _Tally) -> float:
    """Standard error of the difference of the means; infinite when a side has no spread to measure."""
    return math.sqrt(a.variance() / a.n + b.variance() / b.n) if a.n >= 2 and b.n >= 2 else math.inf


def _row(level: str, name: str, a: _Entry | None, b: _Entry | None, per_step: bool, level_total: float, gate: Gate) -> DiffRow:
    none = _Entry(_Tally(), _Tally())
    ea, eb = a or none, b or none
    per_step_a = ea.step_totals.mean if per_step and a else None
    per_step_b = eb.step_totals.mean if per_step and b else None
    call_change = _change_pct(ea.calls.mean, eb.calls.mean)
    step_change = _change_pct(per_step_a, per_step_b)
    share = 100.0 * ea.calls.total / level_total if level_total else 0.0
    if per_step:
        change, delta, se = step_change, (per_step_b or 0.0) - (per_step_a or 0.0), _welch_se(ea.step_totals, eb.step_totals)
    else:
        change, delta, se = call_change, (eb.calls.mean or 0.0) - (ea.calls.mean or 0.0), _welch_se(ea.calls, eb.calls)
    significant = a is not None and b is not None and abs(delta) > NOISE_STANDARD_ERRORS * se
    regression = (
        significant
        and change is not None
        and change > gate.fail_above_pct
        and min(ea.calls.n, eb.calls.n) >= gate.min_calls
        and share >= gate.min_share_pct
    )
    return DiffRow(
        level,
        name,
        ea.calls.n,
        eb.calls.n,
        ea.calls.mean,
        eb.calls.mean,
        call_change,
        per_step_a,
        per_step_b,
        step_change,
        share,
        significant,
        regression,
    )


def _cost_ns(row: DiffRow) -> float:
    """What the change costs: per step, or per call times the new side's calls (the biggest first)."""
    if row.per_step_ns_base is not None or row.per_step_ns_new is not None:
        return abs((row.per_step_ns_new or 0.0) - (row.per_step_ns_base or 0.0))
    if row.mean_ns_base is None or row.mean_ns_new is None:  # on one side only: all its time
        return (row.mean_ns_new or row.mean_ns_base or 0.0) * (row.calls_new or row.calls_base)
    return abs(row.mean_ns_new - row.mean_ns_base) * row.calls_new


def diff_captures(base: Capture, new: Capture, gate: Gate | None = None, levels: tuple[str, ...] = LEVELS) -> tuple[Summary, list[DiffRow]]:
    """The summary and one row per (level, name) in either capture, regressions first, then the
    biggest change (per step, else per call times the candidate's calls) first."""
    gate = gate or Gate()
    per_step = min(base.steps, new.steps) >= MIN_STEPS
    level_total = {lvl: sum(e.calls.total for (level, _), e in base.entries.items() if level == lvl) for lvl in levels}
    keys = sorted(k for k in set(base.entries) | set(new.entries) if k[0] in levels)
    rows = [
        _row(level, name, base.entries.get((level, name)), new.entries.get((level, name)), per_step, level_total[level], gate) for level, name in keys
    ]
    rows.sort(key=lambda r: (not r.regression, -_cost_ns(r), r.level, r.name))
    return _summary(base, new, per_step), rows


def _summary(base: Capture, new: Capture, per_step: bool) -> Summary:
    def level_tally(capture: Capture, level: str) -> tuple[int, float]:
        tallies = [e.calls for (lvl, _), e in capture.entries.items() if lvl == level]
        return sum(t.n for t in tallies), sum(t.total for t in tallies)

    for level in LEVELS:
        (calls_a, total_a), (calls_b, total_b) = level_tally(base, level), level_tally(new, level)
        if calls_a and calls_b:
            if per_step:
                return Summary(True, base.steps, new.steps, level, total_a / base.steps, total_b / new.steps, calls_a, calls_b)
            return Summary(False, base.steps, new.steps, level, total_a / calls_a, total_b / calls_b, calls_a, calls_b)
    return Summary(per_step, base.steps, new.steps, None, None, None, 0, 0)


def diff_databases(base: Path, new: Path, gate: Gate | None = None, levels: tuple[str, ...] = LEVELS) -> tuple[Summary, list[DiffRow]]:
    return diff_captures(read_capture(base), read_capture(new), gate, levels)


def _ms(ns: float | None) -> str:
    return "-" if ns is None else f"{ns / 1e6:.6f}"


def _pct_text(pct: float | None) -> str:
    return "-" if pct is None else f"{pct:+.2f} %"


TABLE_COLUMNS = [
    "level",
    "calls base -> new",
    "ms/call base",
    "ms/call new",
    "per call",
    "ms/step base",
    "ms/step new",
    "per step",
    "gate",
    "name",
]


def _status(row: DiffRow) -> str:
    if row.regression:
        return "REGRESSION"
    if not row.calls_base or not row.calls_new:
        return "new" if not row.calls_base else "gone"
    return "" if row.significant else "within noise"


def print_diff(summary: Summary, rows: list[DiffRow], gate: Gate, fmt: str, limit: int, csv_safe: bool = False) -> None:
    """The summary line first, then the rows (at most `limit`, 0 = all; regressions always) as a
    table, CSV (the summary on stderr; `csv_safe`: formula-like names guarded) or JSON ({"summary": ...,
    "entries": [one object per entry]})."""
    shown = [r for i, r in enumerate(rows) if r.regression or limit <= 0 or i < limit]
    regressions = sum(r.regression for r in rows)
    footer = f"{regressions} regression(s) among {len(rows)} entries ({gate.rule(summary.per_step)})"
    if fmt == "json":
        payload = {
            "summary": {"lines": summary.lines(), **asdict(summary), "regressions": regressions, "rule": gate.rule(summary.per_step)},
            "entries": [asdict(r) for r in shown],
        }
        json.dump(payload, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return
    if fmt == "csv":
        for line in summary.lines():
            print(line, file=sys.stderr)
        write_csv(list(DiffRow.__dataclass_fields__), [list(asdict(r).values()) for r in shown], safe=csv_safe)
        print(footer, file=sys.stderr)
        return
    console = wide_console()
    for line in summary.lines():
        console.print(line, markup=False, highlight=False)
    table_rows = [
        [
            r.level,
            f"{r.calls_base:,} -> {r.calls_new:,}",
            _ms(r.mean_ns_base),
            _ms(r.mean_ns_new),
            _pct_text(r.per_call_change_pct),
            _ms(r.per_step_ns_base),
            _ms(r.per_step_ns_new),
            _pct_text(r.per_step_change_pct),
            _status(r),
            r.name,
        ]
        for r in shown
    ]
    print_table(console, TABLE_COLUMNS, table_rows, empty_note="no kernel, op or layer in either database")
    if len(shown) < len(rows):
        console.print(f"  ({len(rows) - len(shown):,} more rows; --limit 0 shows all)", markup=False, highlight=False)
    console.print(footer, markup=False, highlight=False)
