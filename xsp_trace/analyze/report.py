"""The self-contained HTML report: the findings first (xsp_trace/analyze/findings.py), then inline
SVG plots (roofline with the device's roof, layer latency, layer type shares, layer GPU vs non-GPU
time; per GPU: utilisation over time, GPU busy per step, computation/communication split) and the
analysis tables. No scripts, no network: open it anywhere. Written atomically.
"""

from __future__ import annotations

from datetime import datetime, timezone
from html import escape
from pathlib import Path

from .. import __version__
from ..output_files import atomic_output
from ..tables import format_cell as _cell
from ..timebase import format_time
from . import svg
from .catalog import ANALYSES
from .findings import Finding
from .session import Result

TABLE_ROWS = 200  # rows per table in the report; the CLI/CSV/JSON give all

_STYLE = """
body { font-family: sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.2em; margin-top: 1.6em; border-bottom: 1px solid #ccc; }
h3 { font-size: 1.05em; }
table { border-collapse: collapse; font-size: 12px; margin: 0.5em 0 1em; }
th, td { border: 1px solid #ddd; padding: 2px 6px; text-align: right; }
th { background: #f3f3f3; } td.text { text-align: left; }
.note { color: #a33; } .plots { display: flex; flex-wrap: wrap; gap: 1em; }
.plot { border: 1px solid #eee; background: #fff; }
.findings { background: #fff4e5; border: 1px solid #f0c080; padding: 0.4em 1em; }
.findings li { margin: 0.4em 0; } .findings .sev { font-weight: bold; } .findings code { color: #555; }
"""


def _table_html(result: Result) -> str:
    if not result.rows:
        return '<p class="empty">(no rows)</p>'
    head = "".join(f"<th>{escape(c)}</th>" for c in result.columns)
    body = []
    for row in result.rows[:TABLE_ROWS]:
        cells = "".join(f'<td class="{"text" if isinstance(v, str) else "num"}">{escape(_cell(v))}</td>' for v in row)
        body.append(f"<tr>{cells}</tr>")
    more = f"<p>({len(result.rows) - TABLE_ROWS:,} more rows: xsp-trace analyze --format csv)</p>" if len(result.rows) > TABLE_ROWS else ""
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>{more}"


def _by_experiment(result: Result) -> dict[str | None, list[dict]]:
    groups: dict[str | None, list[dict]] = {}
    for rec in result.records():
        groups.setdefault(rec.get("experiment"), []).append(rec)
    return groups


def _plots(results: dict[str, Result]) -> str:
    """Plots per experiment, from the analyses' rows."""
    experiments = sorted({r["experiment"] for r in results["level_sources"].records()})
    layer_latency = _by_experiment(results["layer_latency"])
    type_share = _by_experiment(results["layer_type_latency_share"])
    gpu_split = _by_experiment(results["layer_gpu_vs_nongpu"])
    kernel_roof = _by_experiment(results["kernel_roofline"])
    kernels = _by_experiment(results["kernel_info"])
    roof = {r["experiment"]: r for r in results["model_roofline"].records()}
    parts = []
    for exp in experiments:
        plots = []
        layers = layer_latency.get(exp, [])
        if layers:
            plots.append(
                svg.bars(
                    [(f"{r['layer_index']} {r['layer_name'] or ''}", r["latency_ms"]) for r in layers],
                    "Layer latency (trimmed mean per inference)",
                    "ms",
                )
            )
        shares = type_share.get(exp, [])
        if shares:
            plots.append(svg.bars([(r["layer_type"] or "?", r["latency_pct"]) for r in shares], "Layer type latency share", "%"))
        split = gpu_split.get(exp, [])
        if split:
            plots.append(
                svg.stacked_bars(
                    [(f"{r['layer_index']} {r['layer_name'] or ''}", r["gpu_latency_ms"], r["non_gpu_latency_ms"]) for r in split],
                    "Layer GPU vs non-GPU latency",
                    "ms",
                )
            )
        points = kernel_roof.get(exp, [])
        if points:
            first = points[0]
            model = roof.get(exp)
            pts = [(r["name"], r["arithmetic_intensity"], r["flops_per_s"]) for r in points]
            if model:
                pts.append(("whole model", model["arithmetic_intensity"], model["flops_per_s"]))
            plots.append(
                svg.roofline(pts, first["peak_flops"], first["peak_dram_bytes_per_s"], f"Kernel roofline ({first['device_name'] or 'device'})")
            )
        elif kernels.get(exp):
            top = sorted(kernels[exp], key=lambda r: -(r["latency_ms"] or 0))[:15]
            plots.append(
                svg.bars([(r["name"], r["latency_ms"]) for r in top], "Top kernels (latency per inference; no metrics for a roofline)", "ms")
            )
        if plots:
            parts.append(f'<h3>{escape(exp)}</h3><div class="plots">{"".join(plots)}</div>')
    return "".join(parts)


def _findings_html(findings: list[Finding] | None) -> str:
    if findings is None:
        return ""
    if not findings:
        body = "<p>Nothing stands out: no finding puts 1 % or more of its time at stake.</p>"
    else:
        items = [
            f'<li><span class="sev">{100 * f.severity:.1f} %</span> <b>{escape(f.kind)}</b>: {escape(f.text)}<br>'
            f'<code><a href="#{escape(f.analysis)}">{escape(f.analysis)}</a> WHERE {escape(f.where)}</code></li>'
            for f in findings
        ]
        body = f"<ol>{''.join(items)}</ol>"
    return (
        '<section id="findings" class="findings"><h2>Findings</h2><p>Ranked by severity: the share of the time '
        f"each is measured against that is at stake; each names the analysis rows that show it.</p>{body}</section>"
    )


def _gpu_plots(results: dict[str, Result]) -> str:
    """Per GPU of every run: utilisation over time, GPU busy per step, the computation/communication split."""
    plots = []
    bins: dict[tuple, list] = {}
    for r in results["gpu_utilization_bins"].records() if "gpu_utilization_bins" in results else []:
        bins.setdefault((r["run_id"], r["device_id"]), []).append(r)
    for (run, dev), rows in sorted(bins.items()):
        # Bin edges are after the run's first event: the times of the Perfetto export.
        caption = f"{len(rows)} bins from {format_time(rows[0]['bin_start_ns'])} to {format_time(rows[-1]['bin_end_ns'])}"
        plots.append(svg.strip([r["busy_pct"] for r in rows], f"GPU {dev} of run {run}: busy % over time", caption))
    steps: dict[int, list] = {}
    for r in results["step_bound"].records() if "step_bound" in results else []:
        steps.setdefault(r["run_id"], []).append(r)
    for run, rows in sorted(steps.items()):
        plots.append(
            svg.stacked_bars(
                [(f"step {r['iteration']} ({r['bound']})", r["gpu_busy_ms"] or 0, (r["step_ms"] or 0) - (r["gpu_busy_ms"] or 0)) for r in rows[:40]],
                f"Run {run}: GPU busy vs not, per step",
                "ms",
            )
        )
    path: dict[int, dict[object, dict[str, float]]] = {}
    for r in results["critical_path"].records() if "critical_path" in results else []:
        kinds = path.setdefault(r["run_id"], {}).setdefault(r["iteration"], {})
        kinds[r["kind"]] = kinds.get(r["kind"], 0.0) + r["on_path_ns"] / 1e6
    for run, by_step in sorted(path.items()):
        items = [(f"step {it}" if it is not None else "whole run", kinds) for it, kinds in list(by_step.items())[:40]]
        plots.append(svg.segmented_bars(items, svg.PATH_COLORS, f"Run {run}: critical path of each step, by kind", "ms"))
    split: dict[tuple, list] = {}
    for r in results["comm_compute_split"].records() if "comm_compute_split" in results else []:
        split.setdefault((r["run_id"], r["device_id"]), []).append(r)
    for (run, dev), rows in sorted(split.items()):
        if any("communication" in r["classes"] for r in rows):
            plots.append(svg.bars([(r["classes"], r["time_pct"]) for r in rows], f"GPU {dev} of run {run}: busy time by classes running", "%"))
    return f'<h3>GPUs</h3><div class="plots">{"".join(plots)}</div>' if plots else ""


def render_report(database: Path, results: dict[str, Result], findings: list[Finding] | None = None) -> str:
    notes = [
        f"{r['experiment']}: {r['measured']} level {r['note']}" for r in results["level_sources"].records() if not r["corrected"] and r.get("note")
    ]
    sections = []
    for analysis in ANALYSES:
        result = results.get(analysis.name)
        if result is None:
            continue
        sections.append(
            f'<h2 id="{analysis.name}">{escape(analysis.title)}</h2><p><code>queries/{escape(analysis.query)}.sql</code></p>{_table_html(result)}'
        )
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return (
        '<!DOCTYPE html><html><head><meta charset="utf-8">'
        f"<title>xsp-trace report: {escape(Path(database).name)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>xsp-trace report: {escape(str(database))}</h1>"
        f"<p>xsp-trace {escape(__version__)}, {stamp}. Latencies are leveled-corrected where the runs allow "
        "(model from M, layer from ML, kernel from MLG runs).</p>"
        + _findings_html(findings)
        + "".join(f'<p class="note">uncorrected: {escape(n)}</p>' for n in notes)
        + "<h2>Plots</h2>"
        + (_plots(results) + _gpu_plots(results) or "<p>(nothing to plot)</p>")
        + "".join(sections)
        + "</body></html>"
    )


def write_report(path: Path, database: Path, results: dict[str, Result], findings: list[Finding] | None = None) -> None:
    path = Path(path)
    with atomic_output(path, inputs=[database]) as tmp:
        tmp.write_text(render_report(database, results, findings), encoding="utf-8")
