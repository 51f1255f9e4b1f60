"""The HTML report's utilisation strip on the time base of every other time (runs.origin_ns, the
run's first event): a GPU whose first work starts 100 ms after the run's first event has its first
bin drawn at 100 ms on the strip's axis, not at 0."""

from __future__ import annotations

import re

from typer.testing import CliRunner

from support.handmade import Run, write
from xsp_trace.cli import app

MS = 1_000_000


def test_the_utilisation_strip_counts_time_from_the_runs_first_event(tmp_path):
    run = Run(1)
    run.span("op", "aten::zeros", 0, 1 * MS)  # the run's first event, at its origin
    run.gpu("kernel", "late", (99 * MS, 99 * MS + 10), (100 * MS, 150 * MS))
    run.gpu("kernel", "later", (150 * MS, 150 * MS + 10), (175 * MS, 200 * MS))
    db = write(tmp_path / "t.duckdb", [run])
    report = tmp_path / "report.html"
    result = CliRunner().invoke(app, ["analyze", str(db), "-a", "gpu_utilization_bins", "--report", str(report)])
    assert result.exit_code == 0, result.output
    (strip,) = re.findall(r'<svg[^>]*class="plot strip".*?</svg>', report.read_text(), re.S)
    ticks = {float(t): float(x) for x, t in re.findall(r'<text class="tick" x="([\d.]+)" y="[\d.]+"[^>]*text-anchor="middle">([\d.]+)</text>', strip)}
    bins = [(float(x), float(w)) for x, w in re.findall(r'<rect class="bin" x="([\d.]+)" y="[\d.]+" width="([\d.]+)"', strip)]
    (first, x0), (last, x1) = min(ticks.items()), max(ticks.items())
    assert first == 0.0

    def at_ms(x: float) -> float:
        return first + (x - x0) * (last - first) / (x1 - x0)

    # the first bin starts at the first kernel (100 ms), the last ends at the last one's end (200 ms)
    assert abs(at_ms(bins[0][0]) - 100) < 0.1, at_ms(bins[0][0])
    assert abs(at_ms(bins[-1][0] + bins[-1][1]) - 200) < 0.1
    assert "ms since the run&#x27;s first event" in strip or "ms since the run's first event" in strip
