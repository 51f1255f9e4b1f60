"""The report's one line on op categories: each run's GPU time split by category (op_categories)."""

from __future__ import annotations

from ..session import Result
from .text import escape


def category_line(results: dict[str, Result]) -> str:
    """'GPU time by op category, run 1: GEMM 60.2 %, attention 10.1 %, ...' (categories above 0.05 %)."""
    result = results.get("op_categories")
    if result is None or not result.rows:
        return ""
    by_run: dict[object, list[str]] = {}
    for r in result.records():
        if r["kernel_pct"] is not None and r["kernel_pct"] >= 0.05:
            by_run.setdefault(r["run_id"], []).append(f"{r['category']} {r['kernel_pct']:.1f} %")
    parts = [f"run {run}: {', '.join(shares)}" for run, shares in by_run.items()]
    return f'<p class="basis">GPU time by op category (<a href="#op_categories">op_categories</a>), {escape("; ".join(parts))}.</p>' if parts else ""
