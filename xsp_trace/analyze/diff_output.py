"""How `xsp-trace diff` prints its result: the headline (the step-level story) first, then the rows,
as a table a person reads (kernel names shortened as `analyze` does, one line per row, the order
said in the header), or whole as JSON or CSV (every row unless --limit; rows_total / rows_shown).
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from statistics import median

from ..naming import short_names
from ..printable import printable
from ..terminal.raw_table import write_csv
from ..terminal.readable_table import TableStyle, output_console, render, shorten_distinct
from .diff import ORDER, DiffResult, DiffRow
from .diff_headline import Explained, Headline

TABLE_ROWS = 20  # rows a table shows unless --limit says otherwise (regressions always)
HEADLINE_NAME_CHARS = 60  # a name in a headline line: one terminal line with its figures
BASIS_TEXT = {"step": "step", "call": "call", "window": "s of window"}


def _ms(ns: float | None) -> str:
    return "-" if ns is None else f"{ns / 1e6:.4g}" if abs(ns) < 1e5 else f"{ns / 1e6:.2f}"


def _pct(pct: float | None) -> str:
    return "-" if pct is None else f"{pct:+.1f} %"


def _round(pct: float | None) -> float | None:
    return None if pct is None else round(pct, 1)


def _value(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "ms":
        return f"{_ms(value)} ms"
    if unit == "%":
        return f"{value:.1f} %"
    return f"{value:,.1f}"


def _step_line(h: Headline, fail_above_pct: float) -> list[str]:
    if not h.step_base or not h.step_new:
        return ["step time: no steps or spans on a side"]
    if not h.per_step:
        return [f"window (each run first to last span, summed): {_ms(sum(h.step_base))} -> {_ms(sum(h.step_new))} ms"]
    what = "step time"
    lines = [
        f"{what}: median {_ms(median(h.step_base))} -> {_ms(median(h.step_new))} ms ({_pct(h.step_change_pct)}); "
        f"spread (min..max) {_ms(min(h.step_base))}..{_ms(max(h.step_base))} -> {_ms(min(h.step_new))}..{_ms(max(h.step_new))} ms"
    ]
    s = h.step_shift
    if s is not None:
        verdict = h.step_verdict(fail_above_pct)
        lines.append(
            f"  noise: shift new - base {_ms(s.estimate)} ms, {100 * s.confidence:.1f} % interval {_ms(s.low)}..{_ms(s.high)} ms "
            f"(Hodges-Lehmann, Mann-Whitney over the {h.base_steps}x{h.new_steps} step pairs): {verdict.upper() if verdict == 'regression' else verdict}"
        )
    return lines


def headline_lines(result: DiffResult, full_names: bool = False) -> list[str]:
    h, gate = result.headline, result.gate
    mode = (
        f"per step ({h.base_steps} and {h.new_steps} steps)"
        if h.per_step
        else "per window: without >= 2 steps on both sides, each run first to last span"
    )
    lines = [f"diff {result.base.name} -> {result.new.name}: compared {mode}"]
    if not h.per_step and 0 in (h.base_steps, h.new_steps):
        lines.append("  steps of a trace without ProfilerStep#N ranges: convert --step-ranges REGEX")
    lines += _step_line(h, gate.fail_above_pct)
    gpu_work = any(m.base or m.new for m in h.measures)
    if not gpu_work:
        lines.append("GPU: no GPU work on either side (busy, kernels and communication: none)")
    for m in h.measures if gpu_work else []:
        lines.append(f"{m.what}: {_value(m.base, m.unit)} -> {_value(m.new, m.unit)} ({_pct(m.change_pct)})")
    per = "per step" if h.per_step else "per s of window"
    if h.causes:
        total_a, total_b = sum(e.base_ns for e in h.causes), sum(e.new_ns for e in h.causes)
        lines.append(f"critical path {per} by cause, mean {_ms(total_a)} -> {_ms(total_b)} ms ({_ms(total_b - total_a)} ms), biggest change first:")
        lines += [_explained(e, full_names, {}) for e in h.causes]
    if not h.causes:
        lines.append(f"critical path {per}: no change by cause")
    if h.by_level:
        names = _shown([e.name for e in h.by_level if e.level == "kernel"], full_names)
        lines.append(f"critical path {per} by level, the biggest changes:")
        lines += [_explained(e, full_names, names) for e in h.by_level]
    return lines


def _shown(names: list[str], full_names: bool) -> dict[str, str]:
    if full_names:
        return {n: n for n in names}
    shorts = short_names(names)
    return dict(zip(names, shorten_distinct([shorts[n] for n in names], HEADLINE_NAME_CHARS), strict=True))


def _explained(e: Explained, full_names: bool, names: dict[str, str]) -> str:
    name = names.get(e.name) or (e.name if full_names else shorten_distinct([e.name], HEADLINE_NAME_CHARS)[0])
    level = "" if e.level == "cause" else f"{e.level:<6} "
    return f"  {level}{printable(name)}: {_ms(e.base_ns)} -> {_ms(e.new_ns)} ms ({'+' if e.delta_ns > 0 else ''}{_ms(e.delta_ns)} ms)"


def _status(row: DiffRow) -> str:
    if row.regression:
        return "REGRESSION"
    if not row.calls_base or not row.calls_new:
        return "new" if not row.calls_base else "gone"
    if row.basis == "window":
        return "calls changed >2x: no noise estimate"
    if row.significant and (row.change_pct or 0) > 0:
        return "grew"
    if row.significant:
        return "fell"
    return "within noise"


def footer(result: DiffResult) -> str:
    """The verdict in one line; the rule in full is in the JSON and `xsp-trace diff --help`."""
    gate, regressions = result.gate, sum(r.regression for r in result.rows)
    step = "step time regression; " if result.step_regression else ""
    return (
        f"{step}{regressions} entry regression(s) among {len(result.rows)} entries (gate: > {gate.fail_above_pct:g} % and beyond noise, "
        f">= {gate.min_calls} calls, >= {gate.min_share_pct:g} % of the level; entries only while the steps did not get faster; see --help)"
    )


def print_diff(result: DiffResult, fmt: str, limit: int | None, full_names: bool = False, wide: bool = False, csv_safe: bool = False) -> None:
    """The headline, then the rows: at most `limit` (None: TABLE_ROWS in a table, every row in JSON
    and CSV; 0 = all), regressions always."""
    rows = result.rows
    cap = (TABLE_ROWS if fmt == "table" else 0) if limit is None else limit
    shown = [r for i, r in enumerate(rows) if r.regression or cap <= 0 or i < cap]
    lines = headline_lines(result, full_names)
    if fmt == "json":
        h = result.headline
        payload = {
            "headline": {
                "lines": lines,
                **asdict(h),
                "step_change_pct": h.step_change_pct,
                "step_verdict": h.step_verdict(result.gate.fail_above_pct),
            },
            "gate": {
                "failed": result.failed,
                "step_regression": result.step_regression,
                "regressions": sum(r.regression for r in rows),
                "rule": result.gate.rule(h.per_step),
            },
            "order": ORDER,
            "rows_total": len(rows),
            "rows_shown": len(shown),
            "entries": [asdict(r) for r in shown],
        }
        json.dump(payload, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return
    if fmt == "csv":
        for line in lines:
            print(line, file=sys.stderr)
        write_csv(list(DiffRow.__dataclass_fields__), [list(asdict(r).values()) for r in shown], safe=csv_safe)
        if len(shown) < len(rows):
            print(f"rows_total {len(rows)}, rows_shown {len(shown)} (--limit 0 writes all)", file=sys.stderr)
        print(footer(result), file=sys.stderr)
        return
    style = TableStyle.for_terminal(wide, full_names)
    console = output_console(style)
    for line in lines:
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    columns = ["level", "per", "calls", "base_ms", "new_ms", "change_pct", "gate", "name"]
    table = [
        [
            r.level,
            BASIS_TEXT[r.basis],
            f"{r.calls_base:,} -> {r.calls_new:,}",
            _ms(r.compared_base),
            _ms(r.compared_new),
            _round(r.change_pct),
            _status(r),
            r.name,
        ]
        for r in shown
    ]
    render(
        console,
        columns,
        table,
        style,
        title=f"Entries, {ORDER} (base_ms, new_ms: ms per the 'per' column)",
        empty_note="no kernel, op or layer in either database",
    )
    if len(shown) < len(rows):
        console.print(f"  ({len(rows) - len(shown):,} more rows; --limit 0 shows all)", markup=False, highlight=False)
    console.print(footer(result), markup=False, highlight=False, soft_wrap=True)
