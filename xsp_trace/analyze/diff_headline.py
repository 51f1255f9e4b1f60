"""The step-level story `xsp-trace diff` tells first: per database pair, the step time (median, spread,
and a noise interval from the steps: analyze/shift.py), GPU busy and idle, kernel calls and GPU time,
communication, and the change in each; then what explains the change in step time, along the
critical path by cause and by level (layer, range, op, kernel).

Per step when both databases have at least MIN_STEPS steps; else per window (each run from its first
to its last span), every figure then per second of its window (two captures of different lengths
are never compared by their totals). The causes come from one function, `step_causes`.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from statistics import median

import duckdb

from ..resources import query_text
from .session import run_analysis
from .shift import Shift, shift
from .sql_library import include

# Steps each database needs for a per-step comparison (one step shows no spread).
MIN_STEPS = 2
# Names per level that the headline lists as explaining the step-time change.
TOP_PER_LEVEL = 3
NS_PER_S = 1e9

Unit = tuple[int, int | None]  # (run_id, iteration): a step, or a run without steps


def step_causes(con: duckdb.DuckDBPyConnection) -> list[tuple[int, int | None, str, float]]:
    """(run_id, iteration, cause, on_path_ns) of every step: its critical-path time by cause, the
    causes the findings tell (analyses/step_causes.sql)."""
    rows = run_analysis(con, "step_causes").records()
    return [(r["run_id"], r["iteration"], r["cause"], float(r["on_path_ns"])) for r in rows]


@dataclass
class StepData:
    """One database's units (steps, or whole runs without steps) with their measures."""

    has_steps: bool
    measures: dict[Unit, dict[str, float]] = field(default_factory=dict)  # diff_steps' columns
    causes: dict[Unit, dict[str, float]] = field(default_factory=dict)
    on_path: dict[tuple[str, str], dict[Unit, float]] = field(default_factory=dict)  # (level, name)

    @property
    def steps(self) -> int:
        return len(self.measures) if self.has_steps else 0


def read_steps(con: duckdb.DuckDBPyConnection) -> StepData:
    include(con, "analyses/diff_steps")
    cursor = con.execute(query_text("analyses/diff_steps"))
    columns = [d[0] for d in cursor.description]
    data = StepData(has_steps=False)
    for row in cursor.fetchall():
        rec = dict(zip(columns, row, strict=True))
        data.has_steps = data.has_steps or rec["iteration"] is not None
        data.measures[(rec["run_id"], rec["iteration"])] = {k: float(v) for k, v in rec.items() if k not in ("run_id", "iteration")}
    for run_id, iteration, cause, ns in step_causes(con):
        data.causes.setdefault((run_id, iteration), {})[cause] = ns
    for run_id, iteration, level, name, ns in con.execute(query_text("analyses/diff_on_path")).fetchall():
        data.on_path.setdefault((level, name), {})[(run_id, iteration)] = float(ns)
    return data


@dataclass(frozen=True)
class Measure:
    """One headline figure on both sides (per step, or per second of window) and its change."""

    what: str
    unit: str  # ms, %, calls
    base: float | None
    new: float | None

    @property
    def change_pct(self) -> float | None:
        return 100.0 * (self.new - self.base) / self.base if self.base and self.new is not None else None


@dataclass(frozen=True)
class Explained:
    """A cause or a name: its critical-path time per step (per s of window) on each side."""

    level: str  # cause, kernel, op or layer
    name: str
    base_ns: float
    new_ns: float

    @property
    def delta_ns(self) -> float:
        return self.new_ns - self.base_ns


@dataclass(frozen=True)
class Headline:
    per_step: bool
    base_steps: int
    new_steps: int
    step_base: list[float]  # step durations, ns (whole runs without steps)
    step_new: list[float]
    step_shift: Shift | None  # new - base, ns (per step only)
    measures: list[Measure]
    causes: list[Explained]  # by |change|, the biggest first
    by_level: list[Explained]  # the TOP_PER_LEVEL names per level by |change|

    @property
    def step_change_pct(self) -> float | None:
        if not self.step_base or not self.step_new:
            return None
        base = median(self.step_base)
        return 100.0 * (median(self.step_new) - base) / base if base else None

    def step_verdict(self, fail_above_pct: float) -> str:
        """regression, improvement, within noise, or '' (no per-step comparison)."""
        change = self.step_change_pct
        if not self.per_step or self.step_shift is None or change is None:
            return ""
        if self.step_shift.low > 0 and change > fail_above_pct:
            return "regression"
        if self.step_shift.high < 0:
            return "improvement"
        return "within noise"

    def steps_faster(self, fail_above_pct: float) -> bool:
        """The median step got faster by more than fail_above_pct: what grew inside it does not gate."""
        change = self.step_change_pct
        return self.per_step and change is not None and change < -fail_above_pct


def _per_unit(data: StepData, values: dict[Unit, float], per_step: bool) -> list[float]:
    """One value per unit: as it is per step, per second of the unit's window without steps."""
    out = []
    for unit, m in data.measures.items():
        value = values.get(unit, 0.0)
        out.append(value if per_step else value * NS_PER_S / m["step_ns"] if m["step_ns"] else 0.0)
    return out


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def headline(base: StepData, new: StepData) -> Headline:
    per_step = min(base.steps, new.steps) >= MIN_STEPS

    def column(data: StepData, key: str) -> dict[Unit, float]:
        return {u: m[key] for u, m in data.measures.items()}

    def mean_of(data: StepData, key: str) -> float | None:
        return _mean(_per_unit(data, column(data, key), per_step))

    def busy_pct(data: StepData) -> float | None:
        room = sum(m["step_ns"] * m["gpus"] for m in data.measures.values())
        return 100.0 * sum(m["gpu_busy_ns"] for m in data.measures.values()) / room if room else None

    def idle(data: StepData) -> dict[Unit, float]:
        return {u: m["step_ns"] * m["gpus"] - m["gpu_busy_ns"] for u, m in data.measures.items()}

    per = "per step" if per_step else "per s of window"
    measures = [
        Measure(f"GPU busy {per}", "ms", mean_of(base, "gpu_busy_ns"), mean_of(new, "gpu_busy_ns")),
        Measure(f"GPU idle {per}", "ms", _mean(_per_unit(base, idle(base), per_step)), _mean(_per_unit(new, idle(new), per_step))),
        Measure("GPU busy share of the GPUs' time", "%", busy_pct(base), busy_pct(new)),
        Measure(f"kernel calls {per}", "calls", mean_of(base, "kernel_calls"), mean_of(new, "kernel_calls")),
        Measure(f"GPU kernel time {per}", "ms", mean_of(base, "kernel_ns"), mean_of(new, "kernel_ns")),
        Measure(f"communication (GPU time) {per}", "ms", mean_of(base, "communication_ns"), mean_of(new, "communication_ns")),
    ]
    causes = _explained("cause", _by_name(base.causes), _by_name(new.causes), base, new, per_step)
    by_level = []
    for level in ("layer", "range", "op", "kernel"):
        rows = _explained(level, _level(base.on_path, level), _level(new.on_path, level), base, new, per_step)
        by_level += rows[:TOP_PER_LEVEL]
    steps_a, steps_b = [m["step_ns"] for m in base.measures.values()], [m["step_ns"] for m in new.measures.values()]
    return Headline(per_step, base.steps, new.steps, steps_a, steps_b, shift(steps_a, steps_b) if per_step else None, measures, causes, by_level)


def _by_name(per_unit: dict[Unit, dict[str, float]]) -> dict[str, dict[Unit, float]]:
    out: dict[str, dict[Unit, float]] = defaultdict(dict)
    for unit, values in per_unit.items():
        for name, ns in values.items():
            out[name][unit] = ns
    return out


def _level(on_path: dict[tuple[str, str], dict[Unit, float]], level: str) -> dict[str, dict[Unit, float]]:
    return {name: values for (lvl, name), values in on_path.items() if lvl == level}


def _explained(
    level: str, a: dict[str, dict[Unit, float]], b: dict[str, dict[Unit, float]], base: StepData, new: StepData, per_step: bool
) -> list[Explained]:
    """Mean critical-path time per step (per s of window) of each name on each side, the biggest
    change first; the names' changes add up to the change of the mean step time."""
    rows = []
    for name in set(a) | set(b):
        mean_a = _mean(_per_unit(base, a.get(name, {}), per_step)) or 0.0
        mean_b = _mean(_per_unit(new, b.get(name, {}), per_step)) or 0.0
        rows.append(Explained(level, name, mean_a, mean_b))
    rows.sort(key=lambda e: (-abs(e.delta_ns), e.name))
    return [e for e in rows if e.delta_ns]
