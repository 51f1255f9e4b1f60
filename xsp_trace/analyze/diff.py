"""Run diff across two databases with a regression gate: per kernel, op and layer name, the time per
step in the baseline and in the candidate (queries/analyses/diff_totals.sql), and which grew by more than a
threshold. `xsp-trace diff` is a thin wrapper; CI uses its exit code.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..database import connect
from ..resources import query_text

LEVELS = ("kernel", "op", "layer")


@dataclass(frozen=True)
class DiffRow:
    level: str
    name: str
    base_per_step_ns: float | None  # None: absent from the baseline
    new_per_step_ns: float | None  # None: absent from the candidate
    delta_ns: float
    delta_pct: float | None  # None when the baseline has no time
    base_share_pct: float  # share of its level's time in the baseline (0 when absent)
    regression: bool


def _totals(path: Path) -> dict[tuple[str, str], float]:
    con = connect(path, read_only=True)
    try:
        return {(level, name): float(per_step) for level, name, _, _, per_step in con.execute(query_text("analyses/diff_totals")).fetchall()}
    finally:
        con.close()


def diff_databases(base: Path, new: Path, fail_above_pct: float = 5.0, min_share_pct: float = 1.0, levels: tuple[str, ...] = LEVELS) -> list[DiffRow]:
    """Rows for every (level, name) in either database, biggest absolute change first.

    A row is a regression when its time per step grew by more than `fail_above_pct` percent and it
    held at least `min_share_pct` percent of its level's baseline time (tiny entries are noise), or
    when it is new and would hold that share of the baseline's level time.
    """
    a, b = _totals(base), _totals(new)
    level_total = {lvl: sum(v for (level, _), v in a.items() if level == lvl) for lvl in levels}
    rows = []
    for key in sorted(set(a) | set(b)):
        level, name = key
        if level not in levels:
            continue
        old, cur = a.get(key), b.get(key)
        delta = (cur or 0.0) - (old or 0.0)
        pct = 100.0 * delta / old if old else None
        share = 100.0 * (old if old is not None else (cur or 0.0)) / level_total[level] if level_total[level] else 100.0
        grew = (pct is not None and pct > fail_above_pct) or (old is None and (cur or 0) > 0)
        rows.append(DiffRow(level, name, old, cur, delta, pct, share, grew and share >= min_share_pct))
    rows.sort(key=lambda r: (-abs(r.delta_ns), r.level, r.name))
    return rows
