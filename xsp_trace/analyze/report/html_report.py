"""The self-contained HTML report: the findings first (xsp_trace/analyze/findings/find.py), then inline
SVG plots (roofline with the device's roof, layer latency, layer type shares, layer GPU vs non-GPU
time; per GPU: utilisation over time, GPU busy per step, computation/communication split) and the
analysis tables. No scripts, no network: open it anywhere. Written atomically.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from ... import __version__
from ...output_files import atomic_output
from ...timebase import format_time
from ..catalog import ANALYSES
from ..findings.find import Finding
from ..session import Result
from . import svg
from .categories import category_line
from .text import cell_html, distinct_names, escape, header_html, is_name_column, per_basis, step_basis

TABLE_ROWS = 200  # rows per table in the report; the CLI/CSV/JSON give all

_STYLE = """
body { font-family: sans-serif; margin: 1.5em; color: #222; max-width: 100em; }
h1 { font-size: 1.4em; } h2 { font-size: 1.2em; margin-top: 1.6em; border-bottom: 1px solid #ccc; }
h3 { font-size: 1.05em; }
.table-wrap { max-width: 100%; overflow-x: auto; }
table { border-collapse: collapse; font-size: 12px; margin: 0.5em 0 1em; }
th, td { border: 1px solid #ddd; padding: 2px 6px; text-align: right; }
th { background: #f3f3f3; } td.text, th.text { text-align: left; } td.text { overflow-wrap: break-word; }
td.num, td.name { white-space: nowrap; } span.short { text-decoration: underline dotted #999; cursor: help; }
.note { background: #eef4fb; border-left: 4px solid #7aa7d8; padding: 0.3em 0.8em; color: #333; }
.basis { color: #555; font-style: italic; }
.plots { display: flex; flex-wrap: wrap; gap: 1em; } .plot { border: 1px solid #eee; background: #fff; }
.findings { background: #fff4e5; border: 1px solid #f0c080; padding: 0.4em 1em; }
.findings li { margin: 0.4em 0; } .findings .sev { font-weight: bold; } .findings code { color: #555; overflow-wrap: anywhere; }
.absent li { margin: 0.15em 0; } .absent code { color: #555; }
"""
# Analyses whose "per inference" numbers a basis line explains, and the level they are measured at.
_BASIS_LEVEL = {"model": "model", "layer": "layer", "kernel": "kernel"}
_NO_BASIS = {"level_sources"}  # says where numbers come from; it has no per-inference numbers


def _table_html(result: Result) -> str:
    """The rows as a table; columns without a value in any row are named below it instead."""
    rows = result.rows[:TABLE_ROWS]
    keep = [i for i in range(len(result.columns)) if any(r[i] is not None for r in rows)]
    empty = [c for i, c in enumerate(result.columns) if i not in keep]
    head = "".join(header_html(result.columns[i], any(isinstance(r[i], str) for r in rows)) for i in keep)
    shown = {i: distinct_names([r[i] for r in rows if isinstance(r[i], str)]) for i in keep if is_name_column(result.columns[i])}
    body = [f"<tr>{''.join(cell_html(result.columns[i], r[i], shown.get(i)) for i in keep)}</tr>" for r in rows]
    more = f"<p>({len(result.rows) - TABLE_ROWS} more rows: xsp-trace analyze --format csv)</p>" if len(result.rows) > TABLE_ROWS else ""
    if empty:
        more += f'<p class="basis">No values here: {escape(", ".join(empty))}.</p>'
    return f'<div class="table-wrap"><table><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>{more}'


def _by_experiment(result: Result) -> dict[str | None, list[dict]]:
    groups: dict[str | None, list[dict]] = {}
    for rec in result.records():
        groups.setdefault(rec.get("experiment"), []).append(rec)
    return groups


def _basis(results: dict[str, Result]) -> dict[tuple[str, str], tuple[str, int]]:
    """(experiment, level) -> what its "per inference" numbers are per (report/text.py step_basis)."""
    steps = results["step_breakdown"].records() if "step_breakdown" in results else []
    return step_basis(results["level_sources"].records(), steps)


def _kernel_bars(rows: list[dict], title: str) -> str:
    """Bars of kernels by latency: short names on the bars, the full names on hover."""
    top = sorted(rows, key=lambda r: -(r["latency_ms"] or 0))[:15]
    shown = distinct_names([r["name"] for r in top], svg.LABEL_CHARS)
    return svg.bars([(shown[r["name"]], r["latency_ms"]) for r in top], title, "ms", hover=[r["name"] for r in top])


def _plots(results: dict[str, Result]) -> str:
    """Plots per experiment, from the analyses' rows; titles say what "per inference" means here."""
    experiments = sorted({r["experiment"] for r in results["level_sources"].records()})
    basis = _basis(results)
    layer_latency = _by_experiment(results["layer_latency"])
    type_share = _by_experiment(results["layer_type_latency_share"])
    gpu_split = _by_experiment(results["layer_gpu_vs_nongpu"])
    kernel_roof = _by_experiment(results["kernel_roofline"])
    kernels = _by_experiment(results["kernel_info"])
    roof = {r["experiment"]: r for r in results["model_roofline"].records()}
    parts = []
    for exp in experiments:
        plots = []
        layer_basis = per_basis(basis.get((exp, "layer")), "trimmed mean")
        layers = layer_latency.get(exp, [])
        if layers:
            plots.append(
                svg.bars([(f"{r['layer_index']} {r['layer_name'] or ''}", r["latency_ms"]) for r in layers], f"Layer latency: {layer_basis}", "ms")
            )
        shares = type_share.get(exp, [])
        if shares:
            plots.append(
                svg.bars(
                    [(r["layer_type"] or "?", r["latency_pct"]) for r in shares], "Layer type latency share", "%", axis="% of all layers' latency"
                )
            )
        split = gpu_split.get(exp, [])
        if split:
            plots.append(
                svg.stacked_bars(
                    [(f"{r['layer_index']} {r['layer_name'] or ''}", r["gpu_latency_ms"], r["non_gpu_latency_ms"]) for r in split],
                    f"Layer GPU vs non-GPU latency: {layer_basis}",
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
            kernel_basis = per_basis(basis.get((exp, "kernel")))
            plots.append(_kernel_bars(kernels[exp], f"Top kernels, ms {kernel_basis}; no metrics for a roofline"))
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
        if r["bin_start_ns"] is None or r["bin_end_ns"] is None:  # a run without an origin (runs.origin_ns NULL)
            continue
        bins.setdefault((r["run_id"], r["device_id"]), []).append(r)
    for (run, dev), rows in sorted(bins.items()):
        start_ms, end_ms = rows[0]["bin_start_ns"] / 1e6, rows[-1]["bin_end_ns"] / 1e6
        # The first bin's start after the run's first event: the time the Perfetto export shows.
        note = f"{len(rows)} bins of {(end_ms - start_ms) / len(rows):.4g} ms, the first at {format_time(rows[0]['bin_start_ns'])}"
        plots.append(svg.strip([r["busy_pct"] for r in rows], f"GPU {dev} of run {run}: busy % over time", start_ms, end_ms, note))
    steps: dict[int, list] = {}
    for r in results["step_bound"].records() if "step_bound" in results else []:
        steps.setdefault(r["run_id"], []).append(r)
    for run, rows in sorted(steps.items()):
        plots.append(
            svg.stacked_bars(
                [(f"step {r['iteration']} ({r['bound']})", r["gpu_busy_ms"] or 0, (r["step_ms"] or 0) - (r["gpu_busy_ms"] or 0)) for r in rows[:40]],
                f"Run {run}: GPU busy vs not, per step (wall time of each step)",
                "ms",
            )
        )
    path: dict[int, dict[object, dict[str, float]]] = {}
    for r in results["critical_path"].records() if "critical_path" in results else []:
        kinds = path.setdefault(r["run_id"], {}).setdefault(r["iteration"], {})
        kinds[r["kind"]] = kinds.get(r["kind"], 0.0) + r["on_path_ns"] / 1e6
    for run, by_step in sorted(path.items()):
        items = [(f"step {it}" if it is not None else "whole run", kinds) for it, kinds in list(by_step.items())[:40]]
        of = "the whole run (it has no steps)" if list(by_step) == [None] else "each step"
        plots.append(svg.segmented_bars(items, svg.PATH_COLORS, f"Run {run}: critical path of {of}, by kind", "ms"))
    split: dict[tuple, list] = {}
    for r in results["comm_compute_split"].records() if "comm_compute_split" in results else []:
        split.setdefault((r["run_id"], r["device_id"]), []).append(r)
    for (run, dev), rows in sorted(split.items()):
        if any("communication" in r["classes"] for r in rows):
            plots.append(
                svg.bars(
                    [(r["classes"], r["time_pct"]) for r in rows], f"GPU {dev} of run {run}: busy time by classes running", "%", axis="% of busy time"
                )
            )
    return f'<h3>GPUs</h3><div class="plots">{"".join(plots)}</div>' if plots else ""


def _notes(results: dict[str, Result]) -> str:
    """Where numbers include profiling overhead, in a user's words, styled as notes (not errors)."""
    plain: dict[str, list[str]] = {}
    lines = []
    for r in results["level_sources"].records():
        if r["corrected"] or not r.get("note"):
            continue
        if r["source_level"] is None:
            plain.setdefault(r["experiment"], []).append(r["measured"])
        else:
            lines.append(
                f"{r['experiment']}: {r['measured']} times come from the {r['source_level']} run, so they include the overhead of profiling the levels below it."
            )
    for exp, levels in plain.items():
        lines.append(
            f"{exp} is a profiler trace, not a leveled capture (xsp-trace capture): its {' and '.join(levels)} times "
            "include the profiler's overhead on everything below them."
        )
    return "".join(f'<p class="note">Note: {escape(line)}</p>' for line in lines)


def _basis_line(result: Result, level: str, basis: dict[tuple[str, str], tuple[str, int]]) -> str:
    """Under a model/layer/kernel table: what its "per inference" numbers are per, experiment by experiment."""
    if "experiment" not in result.columns:
        return ""
    experiments = sorted({r["experiment"] for r in result.records() if r["experiment"] is not None})
    said = [f"{exp}: {per_basis(basis.get((exp, level)))}" for exp in experiments]
    return f'<p class="basis">Per-inference numbers here, {escape("; ".join(said))}.</p>' if said else ""


def _sections(results: dict[str, Result]) -> tuple[list[str], list[str]]:
    """(a section per analysis with rows, a list item per analysis without)."""
    basis = _basis(results)
    sections, absent = [], []
    for analysis in ANALYSES:
        result = results.get(analysis.name)
        if result is None:
            continue
        name, source = escape(analysis.name), f"<code>queries/{escape(analysis.query)}.sql</code>"
        if not result.rows:
            absent.append(f'<li id="{name}">{escape(analysis.title)}: {source}</li>')
            continue
        level = None if analysis.name in _NO_BASIS else _BASIS_LEVEL.get(analysis.group)
        sections.append(
            f'<h2 id="{name}">{escape(analysis.title)}</h2><p>{source}</p>'
            + (_basis_line(result, level, basis) if level else "")
            + _table_html(result)
        )
    return sections, absent


def render_report(database: Path, results: dict[str, Result], findings: list[Finding] | None = None) -> str:
    sections, absent = _sections(results)
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    absent_html = (
        '<section class="absent"><h2 id="not-in-this-trace">Not in this trace</h2><p>These analyses found no rows: the trace '
        f"holds nothing they read (no layer ranges, no steps, no communication, no metrics...).</p><ul>{''.join(absent)}</ul></section>"
        if absent
        else ""
    )
    return (
        '<!DOCTYPE html><html><head><meta charset="utf-8">'
        f"<title>xsp-trace report: {escape(Path(database).name)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>xsp-trace report: {escape(str(database))}</h1>"
        f"<p>xsp-trace {escape(__version__)}, {stamp}. Latencies are leveled-corrected where the runs allow "
        "(model from M, layer from ML, kernel from MLG runs). Times (columns ending in _ns in the data) are shown in ms; "
        "points in time (a gap's start) count from each run's first event, as in its Perfetto export. "
        "Long kernel names are shortened to their base name, as nsys's <code>:base</code>: hover over a dotted name or a "
        "bar's label for the full name.</p>"
        + _findings_html(findings)
        + _notes(results)
        + category_line(results)
        + "<h2>Plots</h2>"
        + (_plots(results) + _gpu_plots(results) or "<p>(nothing to plot)</p>")
        + "".join(sections)
        + absent_html
        + "</body></html>"
    )


def write_report(path: Path, database: Path, results: dict[str, Result], findings: list[Finding] | None = None) -> None:
    path = Path(path)
    with atomic_output(path, inputs=[database]) as tmp:
        tmp.write_text(render_report(database, results, findings), encoding="utf-8")
