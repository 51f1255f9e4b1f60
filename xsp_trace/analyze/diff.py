"""Run diff across two databases: the step-level story first (analyze/diff_headline.py), then per
kernel, op and layer name (per-instance details removed by `naming.normalize_name`) a comparison
of like with like, and a regression gate that fails only for what a reviewer would call one.

Each entry is compared by (`DiffRow.basis`):
- `step`: its time per step, when both databases have at least MIN_STEPS steps (the default);
- `window`: without steps, when its calls changed by more than CALL_COUNT_FACTOR (the same work
  batched into fewer calls, or a capture of another length): its time per second of the capture
  window, never its time per call;
- `call`: else, its mean time per call.

Beyond noise (`DiffRow.significant`): the change exceeds NOISE_STANDARD_ERRORS standard errors of
the difference (Welch: the spread of the per-step, or per-call, times over their counts); one call
on each side is held against the runs' step-to-step spread (the standard deviation of the step
times), and a window comparison has no spread to measure: it never gates.

The gate (`Gate`) fails for a step-time regression (diff_headline: the median step grew by more
than `fail_above_pct` and the steps' 95 % interval of the shift lies above 0), or an entry whose
compared figure grew by more than `fail_above_pct`, beyond noise, with at least `min_calls` calls
on both sides and at least `min_share_pct` of its level's baseline time -- unless the median step
got faster by more than `fail_above_pct`: what grew inside a faster step was paid for (its row
still says it grew). Entries on one side only never gate. `xsp-trace diff` is a thin wrapper.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path

from ..resources import query_text
from ..store.sql import scalar, values_readable
from .diff_headline import NS_PER_S, Headline, StepData, headline, read_steps
from .session import open_session
from .sql_library import include

LEVELS = ("kernel", "op", "layer")
# Standard errors of the difference a change must exceed to count (about a 97.5 % one-sided test).
NOISE_STANDARD_ERRORS = 2.0
# Calls changing by more than this factor (either way) are not compared per call: per step or window.
CALL_COUNT_FACTOR = 2.0
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
    """One database as diff reads it: per (level, name) its calls, its steps and their measures."""

    path: Path
    steps: int
    entries: dict[tuple[str, str], _Entry]
    window_ns: float  # summed over its runs: first to last span
    step_data: StepData


def read_capture(path: Path) -> Capture:
    con = open_session(path)
    try:
        with values_readable(path):
            include(con, "analyses/diff_totals")
            rows = con.execute(query_text("analyses/diff_totals")).fetchall()
            step_data = read_steps(con)
            window = scalar(con, "SELECT coalesce(sum(w), 0) FROM (SELECT max(end_ns) - min(start_ns) AS w FROM spans GROUP BY run_id)")
    finally:
        con.close()
    steps = int(rows[0][-1]) if rows else step_data.steps
    entries: dict[tuple[str, str], _Entry] = {}
    for level, name, step, calls, total, total_sq, _ in rows:
        entry = entries.setdefault((level, name), _Entry(_Tally(), _Tally()))
        entry.calls.add(int(calls), float(total), float(total_sq))
        if step is not None:
            entry.step_totals.add(0, float(total), float(total) ** 2)
    for entry in entries.values():
        entry.step_totals.n = steps  # the steps without a call of the entry add 0 to both sums
    return Capture(path, steps, entries, float(window or 0), step_data)


@dataclass(frozen=True)
class Gate:
    fail_above_pct: float = 5.0
    min_calls: int = DEFAULT_MIN_CALLS
    min_share_pct: float = 1.0

    def rule(self, per_step: bool) -> str:
        what = "time per step" if per_step else "mean time per call (per s of window where calls changed more than 2x: never gates)"
        return (
            f"regression: the median step grew by more than {self.fail_above_pct:g} % beyond its 95 % interval, or an entry's {what} "
            f"grew by more than {self.fail_above_pct:g} %, by more than {NOISE_STANDARD_ERRORS:g} standard errors, with >= {self.min_calls} "
            f"calls on both sides and >= {self.min_share_pct:g} % of its level's baseline time, while the median step did not get "
            f"faster by more than {self.fail_above_pct:g} %"
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
    basis: str  # what is compared: step (time per step), call (mean per call), window (ns per s of window)
    compared_base: float | None  # the compared figure, ns per step / per call / per s of window
    compared_new: float | None
    change_pct: float | None  # its change
    significant: bool  # the compared figure changed by more than the noise
    regression: bool


@dataclass(frozen=True)
class DiffResult:
    headline: Headline
    rows: list[DiffRow]
    gate: Gate
    base: Path
    new: Path

    @property
    def step_regression(self) -> bool:
        return self.headline.step_verdict(self.gate.fail_above_pct) == "regression"

    @property
    def failed(self) -> bool:
        return self.step_regression or any(r.regression for r in self.rows)


def _change_pct(base: float | None, new: float | None) -> float | None:
    return 100.0 * (new - base) / base if base and new is not None else None


def _welch_se(a: _Tally, b: _Tally) -> float:
    """Standard error of the difference of the means; infinite when a side has no spread to measure."""
    return math.sqrt(a.variance() / a.n + b.variance() / b.n) if a.n >= 2 and b.n >= 2 else math.inf


def _step_spread_se(base: Capture, new: Capture) -> float:
    """Standard error of the difference of one call on each side: the steps' standard deviations
    (a side with fewer than 2 steps adds none); infinite when neither side has steps to measure."""
    variances = []
    for capture in (base, new):
        steps = [m["step_ns"] for m in capture.step_data.measures.values()] if capture.step_data.has_steps else []
        tally = _Tally()
        tally.add(len(steps), sum(steps), sum(x * x for x in steps))
        if tally.n >= 2:
            variances.append(tally.variance())
    return math.sqrt(sum(variances)) if variances else math.inf


def _basis(a: _Entry | None, b: _Entry | None, per_step: bool) -> str:
    if per_step:
        return "step"
    if a and b and a.calls.n and b.calls.n and max(a.calls.n, b.calls.n) > CALL_COUNT_FACTOR * min(a.calls.n, b.calls.n):
        return "window"
    return "call"


def _row(
    level: str, name: str, a: _Entry | None, b: _Entry | None, base: Capture, new: Capture, per_step: bool, share: float, gate: Gate, faster: bool
) -> DiffRow:
    none = _Entry(_Tally(), _Tally())
    ea, eb = a or none, b or none
    per_step_a = ea.step_totals.mean if per_step and a else None
    per_step_b = eb.step_totals.mean if per_step and b else None
    basis = _basis(a, b, per_step)
    if basis == "step":
        compared_a, compared_b, se = per_step_a, per_step_b, _welch_se(ea.step_totals, eb.step_totals)
    elif basis == "window":
        compared_a = ea.calls.total * NS_PER_S / base.window_ns if base.window_ns else None
        compared_b = eb.calls.total * NS_PER_S / new.window_ns if new.window_ns else None
        se = math.inf  # one figure per capture: no spread to measure the noise by
    else:
        compared_a, compared_b = (ea.calls.mean if a else None), (eb.calls.mean if b else None)
        se = _step_spread_se(base, new) if ea.calls.n == 1 and eb.calls.n == 1 else _welch_se(ea.calls, eb.calls)
    change = _change_pct(compared_a, compared_b)
    delta = (compared_b or 0.0) - (compared_a or 0.0)
    significant = a is not None and b is not None and abs(delta) > NOISE_STANDARD_ERRORS * se
    regression = (
        significant
        and not faster
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
        _change_pct(ea.calls.mean, eb.calls.mean),
        per_step_a,
        per_step_b,
        _change_pct(per_step_a, per_step_b),
        share,
        basis,
        compared_a,
        compared_b,
        change,
        significant,
        regression,
    )


def cost_ns(row: DiffRow) -> float:
    """What the change costs, the rows' order: per step; per call times the new side's calls (a
    side's only: all its time); per s of window."""
    if row.basis == "call" and row.mean_ns_base is not None and row.mean_ns_new is not None:
        return abs(row.mean_ns_new - row.mean_ns_base) * row.calls_new
    if row.basis == "call":
        return (row.mean_ns_new or row.mean_ns_base or 0.0) * (row.calls_new or row.calls_base)
    return abs((row.compared_new or 0.0) - (row.compared_base or 0.0))


ORDER = "regressions first, then the largest change first (per step; per call: times the new calls; per s of window)"


def diff_captures(base: Capture, new: Capture, gate: Gate | None = None, levels: tuple[str, ...] = LEVELS) -> DiffResult:
    """The headline and one row per (level, name) in either capture, in ORDER."""
    gate = gate or Gate()
    story = headline(base.step_data, new.step_data)
    per_step = story.per_step
    faster = story.steps_faster(gate.fail_above_pct)
    level_total = {lvl: sum(e.calls.total for (level, _), e in base.entries.items() if level == lvl) for lvl in levels}
    keys = sorted(k for k in set(base.entries) | set(new.entries) if k[0] in levels)
    rows = []
    for level, name in keys:
        a, b = base.entries.get((level, name)), new.entries.get((level, name))
        share = 100.0 * a.calls.total / level_total[level] if a and level_total[level] else 0.0
        rows.append(_row(level, name, a, b, base, new, per_step, share, gate, faster))
    rows.sort(key=lambda r: (not r.regression, -cost_ns(r), r.level, r.name))
    return DiffResult(story, rows, gate, base.path, new.path)


def diff_databases(
    base: Path, new: Path, gate: Gate | None = None, levels: tuple[str, ...] = LEVELS, labels: tuple[Path, Path] | None = None
) -> DiffResult:
    """`labels`: the paths to name the two sides by (the raw traces a cached database was made from)."""
    result = diff_captures(read_capture(base), read_capture(new), gate, levels)
    return replace(result, base=labels[0], new=labels[1]) if labels else result
