"""Text of the HTML report: short names for long (kernel) names, cells in readable units, and which
basis (per inference, per step, whole trace) each experiment's "per inference" numbers have.

Rendering only: the values come from the analyses' rows.
"""

from __future__ import annotations

import html

from ...naming import readable_kernel_name, short_names
from ...printable import printable
from ...terminal.readable_table import shorten_distinct

ELLIPSIS = "\u2026"
NAME_CHARS = 48  # a name cell or label longer than this is shortened (the full name on hover)
_TEXT_COLUMNS_SHORTENED = ("name", "kernel", "op", "kernel_name", "op_name", "layer_name")


def escape(text: str) -> str:
    """Text as the report writes it: HTML-escaped, and what a terminal would act on (a NUL, an ESC, a
    bidirectional override in a name from the trace) shown escaped as in the terminal (printable.py)."""
    return html.escape(printable(str(text)))


def short_name(name: str) -> str:
    """A kernel (or op) name as the report shows it: naming.readable_kernel_name (nsys's `:base`, a
    generic wrapper named by its first template argument); other text as it is."""
    return readable_kernel_name(name) if isinstance(name, str) else name


def shorten_middle(text: str, limit: int = NAME_CHARS) -> str:
    """Text cut in the middle to at most `limit` characters (start and end stay readable)."""
    if len(text) <= limit:
        return text
    keep = limit - 1
    return text[: (keep + 1) // 2] + ELLIPSIS + text[len(text) - keep // 2 :]


def display_name(name: str, limit: int = NAME_CHARS) -> str:
    return shorten_middle(short_name(name), limit)


def distinct_names(names: list[str], limit: int = NAME_CHARS) -> dict[str, str]:
    """Full name -> shown name, such that different names never show the same: kernels that share
    a short name show their template arguments (naming.short_names, as the terminal tables do), and
    the cut to `limit` is the terminal tables' own (readable_table.shorten_distinct: where each parts
    from its nearest look-alike, else numbered)."""
    unique = list(dict.fromkeys(names))
    readable = {n: short_name(n) for n in unique}
    by_short: dict[str, list[str]] = {}
    for n in unique:
        by_short.setdefault(readable[n], []).append(n)
    templated = short_names([n for group in by_short.values() if len(group) > 1 for n in group])
    texts = [templated.get(n, readable[n]) for n in unique]
    return dict(zip(unique, shorten_distinct(texts, limit), strict=True))


def is_name_column(column: str) -> bool:
    return column in _TEXT_COLUMNS_SHORTENED or column.endswith("_name")


def header_html(column: str, text: bool = False) -> str:
    """A column header (`text`: over text, aligned as it); `_ns` columns are shown in ms, said in
    the header (the data name on hover)."""
    breakable = escape(column[:-3] if column.endswith("_ns") else column).replace("_", "_<wbr>")  # long headers wrap at _
    align = ' class="text"' if text else ""
    if column.endswith("_ns"):
        return f'<th{align} title="{escape(column)} (ns in the data)">{breakable} (ms)</th>'
    return f"<th{align}>{breakable}</th>"


def number(value: float) -> str:
    """A number as read in a table: integers as they are (ids and counts, no separators)."""
    if value != value:  # NaN
        return "nan"
    if value in (float("inf"), float("-inf")):  # (a hand-edited peak: int() refuses infinity)
        return "inf" if value > 0 else "-inf"
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    if abs(value) >= 1000:
        return f"{value:.1f}"
    return f"{value:.4g}" if abs(value) < 1e-3 else f"{value:.4f}".rstrip("0").rstrip(".")


def cell_text(column: str, value) -> str:
    """A cell's text: `_ns` values in ms with µs precision, booleans as yes/no, lists joined."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if column.endswith("_ns") and isinstance(value, (int, float)):
        return f"{value / 1e6:.3f}"
    if isinstance(value, (int, float)):
        return number(value)
    if isinstance(value, list):
        return ", ".join(cell_text("", v) for v in value)
    return str(value)


def cell_html(column: str, value, shown: dict[str, str] | None = None) -> str:
    """One <td>; a long name is shortened (`shown`: full -> shown name), its full text in the
    title, shown on hover."""
    text = cell_text(column, value)
    if isinstance(value, str) and is_name_column(column):
        short = (shown or {}).get(text) or display_name(text)
        if short != text:
            return f'<td class="text name"><span class="short" title="{escape(text)}">{escape(short)}</span></td>'
        return f'<td class="text name">{escape(text)}</td>'
    if isinstance(value, str):
        return f'<td class="text">{escape(text)}</td>'
    return f'<td class="num">{escape(text)}</td>'


def step_basis(level_sources: list[dict], step_rows: list[dict]) -> dict[tuple[str, str], tuple[str, int]]:
    """(experiment, measured level) -> (what its "per inference" numbers are per, how many): "inference"
    (model ranges), "step" (iteration ranges such as ProfilerStep#N) or "trace" (no steps: totals)."""
    sources: dict[int, set[str]] = {}
    for r in step_rows:
        sources.setdefault(r["run_id"], set()).add(r["source"])
    basis = {}
    for r in level_sources:
        kinds = set().union(*(sources.get(run, set()) for run in r["run_ids"] or []))
        if "model range" in kinds:
            what = "inference"
        elif kinds:
            what = "step"
        else:
            what = "trace"
        basis[(r["experiment"], r["measured"])] = (what, int(r["inferences"] or 1))
    return basis


def per_basis(basis: tuple[str, int] | None, statistic: str = "") -> str:
    """How a title states its basis: "per step, over 3 steps", "trimmed mean per inference, over 30
    inferences", "total over the trace (it has no steps)"."""
    what, count = basis or ("inference", 0)
    if what == "trace":
        return "total over the trace (it has no steps)"
    said = f"{statistic} per {what}" if statistic else f"per {what}"
    if count == 1:
        return f"{said} (the trace's only {what})"
    return f"{said}, over {count} {what}s" if count else said
