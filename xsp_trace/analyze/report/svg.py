"""Small self-contained SVG plots for the HTML report (no plotting library, no network).

Rendering only: the numbers come from the analyses; nothing here computes an analysis.
"""

from __future__ import annotations

import math

from .text import escape, shorten_middle

ROOF_COLOR = "#d62728"  # the device roof line (the report test looks for this colour)
POINT_COLOR = "#1f77b4"
GPU_COLOR = "#2ca02c"
NON_GPU_COLOR = "#ff7f0e"
BAR_COLOR = "#1f77b4"
UTIL_COLOR = "#9467bd"  # busy share of each time bin in the utilisation strip (the report test looks for it)
FONT = 'font-family="sans-serif" font-size="11"'
# One colour per kind of critical-path segment (analyses/critical_path.sql), GPU work in greens.
PATH_COLORS = {
    "cpu_op": "#1f77b4",
    "launch": "#17becf",
    "queue_delay": "#bcbd22",
    "kernel": "#2ca02c",
    "communication": "#9467bd",
    "memcpy": "#98df8a",
    "memset": "#c5e1a5",
    "sync_wait": "#d62728",
    "cpu_idle": "#c7c7c7",
    "thread_wait": "#e377c2",
    "gpu_idle": "#8c564b",
    "stream_wait": "#f7b6d2",
}


def _fmt(value: float) -> str:
    for unit, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:.3g}{unit}"
    return f"{value:.3g}"


def _log_ticks(lo: float, hi: float) -> list[float]:
    return [10.0**e for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)]


def roofline(
    points: list[tuple[str, float, float]], peak_flops: float | None, peak_bytes_per_s: float | None, title: str, width: int = 640, height: int = 420
) -> str:
    """Log-log scatter of (label, intensity FLOP/B, FLOP/s) under the roof min(peak, intensity * bandwidth)."""
    pts = [(label, x, y) for label, x, y in points if x and y and x > 0 and y > 0]
    xs = [x for _, x, _ in pts] or [1.0]
    ys = [y for _, _, y in pts] or [1.0]
    if peak_flops and peak_bytes_per_s:
        ridge = peak_flops / peak_bytes_per_s
        xs += [ridge / 100, ridge * 10]
        ys += [peak_flops * 2]
    x_lo, x_hi = min(xs) / 2, max(xs) * 2
    y_lo, y_hi = min(ys) / 2, max(ys) * 2
    left, right, top, bottom = 70, 20, 30, 45
    pw, ph = width - left - right, height - top - bottom

    def sx(x: float) -> float:
        return left + pw * (math.log10(x) - math.log10(x_lo)) / (math.log10(x_hi) - math.log10(x_lo))

    def sy(y: float) -> float:
        return top + ph * (1 - (math.log10(y) - math.log10(y_lo)) / (math.log10(y_hi) - math.log10(y_lo)))

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" class="plot roofline">',
        f'<text x="{left}" y="18" {FONT} font-weight="bold">{escape(title)}</text>',
        f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#999"/>',
    ]
    out.append('<g class="axis x-axis">')
    for t in _log_ticks(x_lo, x_hi):
        if x_lo <= t <= x_hi:
            out.append(
                f'<line x1="{sx(t):.1f}" y1="{top}" x2="{sx(t):.1f}" y2="{top + ph}" stroke="#eee"/>'
                f'<text class="tick" x="{sx(t):.1f}" y="{top + ph + 14}" {FONT} text-anchor="middle">{_fmt(t)}</text>'
            )
    out.append(f'<text class="unit" x="{left + pw / 2}" y="{height - 8}" {FONT} text-anchor="middle">arithmetic intensity (FLOP/byte)</text></g>')
    out.append('<g class="axis y-axis">')
    for t in _log_ticks(y_lo, y_hi):
        if y_lo <= t <= y_hi:
            out.append(
                f'<line x1="{left}" y1="{sy(t):.1f}" x2="{left + pw}" y2="{sy(t):.1f}" stroke="#eee"/>'
                f'<text class="tick" x="{left - 4}" y="{sy(t) + 4:.1f}" {FONT} text-anchor="end">{_fmt(t)}</text>'
            )
    out.append(
        f'<text class="unit" x="14" y="{top + ph / 2}" {FONT} text-anchor="middle" transform="rotate(-90 14 {top + ph / 2})">FLOP/s</text></g>'
    )
    if peak_flops and peak_bytes_per_s:
        ridge = peak_flops / peak_bytes_per_s
        x0 = x_lo
        y0 = x0 * peak_bytes_per_s
        out.append(
            f'<polyline class="roof" fill="none" stroke="{ROOF_COLOR}" stroke-width="3" points="'
            f'{sx(x0):.1f},{sy(max(y0, y_lo)):.1f} {sx(ridge):.1f},{sy(peak_flops):.1f} {sx(x_hi):.1f},{sy(peak_flops):.1f}"/>'
        )
        peak = f"peak {_fmt(peak_flops)}FLOP/s, {_fmt(peak_bytes_per_s)}B/s"
        anchor = "end" if sx(ridge) + CHAR_PX * len(peak) > width - right else "start"  # stays inside the plot
        out.append(
            f'<text x="{min(sx(ridge), width - right):.1f}" y="{sy(peak_flops) - 6:.1f}" {FONT} fill="{ROOF_COLOR}" '
            f'text-anchor="{anchor}">{escape(peak)}</text>'
        )
    else:
        out.append(f'<text x="{left + 8}" y="{top + 16}" {FONT} fill="#666">no device peaks: pass --peak-flops and --peak-dram-bw</text>')
    for label, x, y in pts:
        out.append(
            f'<circle class="point" cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="5" fill="{POINT_COLOR}" fill-opacity="0.7">'
            f"<title>{escape(label)}: {x:.4g} FLOP/B, {_fmt(y)}FLOP/s</title></circle>"
        )
    out.append("</svg>")
    return "".join(out)


CHAR_PX = 7.0  # an upper bound of the mean width of an 11 px sans-serif character (labels are sized by it)
LABEL_CHARS = 40  # longer bar labels are cut in the middle (the full label on hover)


def _labels(labels: list[str], limit: int = LABEL_CHARS) -> tuple[list[str], int]:
    """(labels cut to `limit` characters, the left margin that holds the longest)."""
    shown = [shorten_middle(label, limit) for label in labels]
    return shown, int(12 + CHAR_PX * max((len(t) for t in shown), default=4))


def nice_ticks(vmax: float, count: int = 4) -> list[float]:
    """0 and round steps (1, 2, 2.5 or 5 times a power of ten) up to the first tick >= vmax."""
    vmax = vmax if vmax and vmax > 0 else 1.0
    raw = vmax / count
    mag = 10.0 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw * (1 - 1e-9))
    return [step * i for i in range(math.ceil(vmax / step - 1e-9) + 1)]


def _x_axis(left: float, pw: float, y: float, ticks: list[float], unit: str, lo: float = 0.0) -> list[str]:
    """A horizontal axis under a plot: line, ticks with values, the unit after the last tick."""
    span = (ticks[-1] - lo) or 1.0
    out = [f'<g class="axis x-axis"><line x1="{left}" y1="{y}" x2="{left + pw}" y2="{y}" stroke="#888"/>']
    for t in ticks:
        tx = left + pw * (t - lo) / span
        out.append(
            f'<line x1="{tx:.1f}" y1="{y}" x2="{tx:.1f}" y2="{y + 4}" stroke="#888"/>'
            f'<text class="tick" x="{tx:.1f}" y="{y + 15}" {FONT} text-anchor="middle">{_fmt(t)}</text>'
        )
    out.append(f'<text class="unit" x="{left + pw / 2:.1f}" y="{y + 29}" {FONT} text-anchor="middle" fill="#555">{escape(unit)}</text></g>')
    return out


def _label(x: float, y: float, shown: str, full: str) -> str:
    return f'<text class="label" x="{x}" y="{y}" {FONT} text-anchor="end">{escape(shown)}<title>{escape(full)}</title></text>'


def bars(items: list[tuple[str, float]], title: str, unit: str, width: int = 720, hover: list[str] | None = None, axis: str = "") -> str:
    """Horizontal bars, one per (label, value), in the given order, over an axis in `unit` (named
    `axis` when given); `hover`: the full label of each bar (shown on hover) where labels are shortened."""
    shown, left = _labels([label for label, _ in items])
    full = hover or [label for label, _ in items]
    row, top = 18, 28
    ticks = nice_ticks(max((v or 0 for _, v in items), default=0))
    axis_y = top + row * len(items) + 4
    height = axis_y + 36
    pw = width - left - 90
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" class="plot bars" data-plot-left="{left}">',
        f'<text x="4" y="16" {FONT} font-weight="bold">{escape(title)}</text>',
    ]
    for i, ((_, value), label, name) in enumerate(zip(items, shown, full, strict=True)):
        y = top + i * row
        w = max(pw * (value or 0) / ticks[-1], 0)
        out.append(
            _label(left - 6, y + 12, label, name) + f'<rect class="bar" x="{left}" y="{y + 2}" width="{w:.1f}" height="{row - 5}" fill="{BAR_COLOR}">'
            f"<title>{escape(name)}: {value or 0:.4g} {escape(unit)}</title></rect>"
            f'<text x="{left + w + 4:.1f}" y="{y + 12}" {FONT}>{value or 0:.4g} {escape(unit)}</text>'
        )
    out += _x_axis(left, pw, axis_y, ticks, axis or unit)
    out.append("</svg>")
    return "".join(out)


def stacked_bars(items: list[tuple[str, float, float]], title: str, unit: str, width: int = 720, hover: list[str] | None = None) -> str:
    """Horizontal bars split in two: (label, GPU part, non-GPU part), over an axis in `unit`."""
    shown, left = _labels([label for label, _, _ in items])
    full = hover or [label for label, _, _ in items]
    row, top = 18, 44
    ticks = nice_ticks(max(((a or 0) + max(b or 0, 0) for _, a, b in items), default=0))
    axis_y = top + row * len(items) + 4
    height = axis_y + 36
    pw = width - left - 90
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" class="plot stacked" data-plot-left="{left}">',
        f'<text x="4" y="16" {FONT} font-weight="bold">{escape(title)}</text>',
        f'<rect x="{left}" y="24" width="10" height="10" fill="{GPU_COLOR}"/><text x="{left + 14}" y="33" {FONT}>GPU</text>',
        f'<rect x="{left + 60}" y="24" width="10" height="10" fill="{NON_GPU_COLOR}"/><text x="{left + 74}" y="33" {FONT}>non-GPU</text>',
    ]
    for i, ((_, gpu, other), label, name) in enumerate(zip(items, shown, full, strict=True)):
        y = top + i * row
        gpu, other = gpu or 0, other or 0
        wg = pw * max(gpu, 0) / ticks[-1]
        wo = pw * max(other, 0) / ticks[-1]
        out.append(
            _label(left - 6, y + 12, label, name)
            + f'<rect x="{left}" y="{y + 2}" width="{wg:.1f}" height="{row - 5}" fill="{GPU_COLOR}"><title>GPU: {gpu:.4g} {escape(unit)}</title></rect>'
            f'<rect x="{left + wg:.1f}" y="{y + 2}" width="{wo:.1f}" height="{row - 5}" fill="{NON_GPU_COLOR}">'
            f"<title>non-GPU: {other:.4g} {escape(unit)}</title></rect>"
            f'<text x="{left + wg + wo + 4:.1f}" y="{y + 12}" {FONT}>{gpu + other:.4g} {escape(unit)}</text>'
        )
    out += _x_axis(left, pw, axis_y, ticks, unit)
    out.append("</svg>")
    return "".join(out)


def strip(values: list[float], title: str, start_ms: float, end_ms: float, note: str = "", width: int = 720, height: int = 120) -> str:
    """A strip of equal time bins from start_ms to end_ms (ms after the run's first event, the time
    base of every other time shown), each a column as tall as its value in percent (0..100): where in
    the run a GPU was busy and where it sat idle. The time axis starts at the run's first event, so
    the bins start where the GPU's first work does. Axes: busy % and time."""
    left, top, right = 40, 30, 20
    ph = height - top - 48
    pw = width - left - right
    n = max(len(values), 1)
    ticks = nice_ticks(max(end_ms, 0.0))
    scale = pw / (ticks[-1] or 1.0)  # px per ms
    bin_ms = (end_ms - start_ms) / n
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" class="plot strip">',
        f'<text x="4" y="15" {FONT} font-weight="bold">{escape(title)}</text>',
        f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="#f4f4f4" stroke="#999"/>',
        '<g class="axis y-axis">',
    ]
    for pct in (0, 50, 100):
        ty = top + ph * (1 - pct / 100)
        out.append(
            f'<line x1="{left - 4}" y1="{ty:.1f}" x2="{left}" y2="{ty:.1f}" stroke="#888"/>'
            f'<text class="tick" x="{left - 6}" y="{ty + 4:.1f}" {FONT} text-anchor="end">{pct} %</text>'
        )
    out.append("</g>")
    for i, value in enumerate(values):
        h = ph * max(min(float(value or 0), 100.0), 0.0) / 100
        out.append(
            f'<rect class="bin" x="{left + scale * (start_ms + bin_ms * i):.1f}" y="{top + ph - h:.1f}" width="{scale * bin_ms:.1f}" height="{h:.1f}" '
            f'fill="{UTIL_COLOR}"><title>bin {i}: {float(value or 0):.1f} % busy</title></rect>'
        )
    out += _x_axis(left, pw, top + ph, ticks, "ms since the run's first event" + (f"; {note}" if note else ""))
    out.append("</svg>")
    return "".join(out)


def segmented_bars(items: list[tuple[str, dict[str, float]]], colors: dict[str, str], title: str, unit: str, width: int = 720) -> str:
    """Horizontal bars, each split into parts by key (in `colors`' order), with a legend and an axis."""
    keys = [k for k in colors if any(parts.get(k) for _, parts in items)]
    legend, x, y = [], 4, 24
    for k in keys:  # the legend, wrapped onto further lines as it runs out of room
        if x + 20 + CHAR_PX * len(k) > width:
            x, y = 4, y + 14
        legend.append(f'<rect x="{x}" y="{y}" width="10" height="10" fill="{colors[k]}"/><text x="{x + 13}" y="{y + 9}" {FONT}>{escape(k)}</text>')
        x += int(20 + CHAR_PX * len(k))
    shown, left = _labels([label for label, _ in items], 28)
    row, top = 18, y + 20
    height = top + row * len(items) + 40
    ticks = nice_ticks(max((sum(parts.values()) for _, parts in items), default=0))
    vmax = ticks[-1]
    pw = width - left - 90
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" class="plot segmented" data-plot-left="{left}">',
        f'<text x="4" y="16" {FONT} font-weight="bold">{escape(title)}</text>',
        *legend,
    ]
    for i, ((label, parts), short) in enumerate(zip(items, shown, strict=True)):
        y = top + i * row
        out.append(_label(left - 6, y + 12, short, label))
        x0 = float(left)
        for k in keys:
            w = pw * max(parts.get(k, 0), 0) / vmax
            if w > 0:
                out.append(
                    f'<rect x="{x0:.1f}" y="{y + 2}" width="{w:.1f}" height="{row - 5}" fill="{colors[k]}">'
                    f"<title>{escape(k)}: {parts[k]:.4g} {escape(unit)}</title></rect>"
                )
            x0 += w
        out.append(f'<text x="{x0 + 4:.1f}" y="{y + 12}" {FONT}>{sum(parts.values()):.4g} {escape(unit)}</text>')
    out += _x_axis(left, pw, top + row * len(items) + 4, ticks, unit)
    out.append("</svg>")
    return "".join(out)
