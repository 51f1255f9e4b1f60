"""Tables a person reads in a terminal: readable units, no wrapped numbers, and a layout that fits.

The values stay the analyses' own (their SQL is the source); only how they are shown changes here:

- a column whose name ends in `_ns` holds nanoseconds: it is shown in milliseconds with microsecond
  precision and its header says so (`total_ns` -> `total_ms`); `_ms` columns get the same precision;
- ids and counters are plain integers (no thousands separators); byte counts read `74.5 MB`; other
  numbers of a million or more read `51.6 G`;
- kernel names are demangled base names as nsys's `:base` prints them (xsp_trace.naming.short_names),
  full with `full_names`;
- every cell is one line: text too long for its column is shortened in the middle (`ab…yz`), and
  when the columns do not fit the width the rightmost ones of least priority are left out (and named
  below the table); prose columns (a finding's sentence) wrap at words instead;
- text a terminal would act on (an ESC sequence, a NUL, a bidirectional override in a name from the
  trace) is shown escaped (`\\x1b`, xsp_trace/printable.py), in cells, headers and titles.

CSV and JSON output (xsp_trace.analyze.output) keep the raw values.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..errors import InputError
from ..naming import short_names
from ..printable import printable

NS_SUFFIX = "_ns"
NS_PER_MS = 1e6
# Columns of kernel names (or names of any span, of which only the kernel signatures are shortened).
NAME_COLUMNS = frozenset({"name", "kernel_name", "next_gpu_name", "item"})
# Columns listing "name [kind] value; ..." entries whose names are shortened one by one.
NAME_LIST_COLUMNS = frozenset({"top_on_path", "new_top_on_path"})
# Sentences: they wrap at words rather than being cut.
PROSE_COLUMNS = frozenset({"finding", "note", "evidence", "not_modelled_reason", "share_by_kind_pct", "top_on_path", "new_top_on_path"})
# Columns kept when the table is too wide for the terminal: what a row is about.
KEY_COLUMNS = frozenset(
    {
        "run_id",
        "iteration",
        "device_id",
        "experiment",
        "name",
        "kernel_name",
        "item",
        "layer_name",
        "api_name",
        "operation",
        "range_name",
        "finding",
        "gate",
    }
)
_GAP = 3  # characters between two columns (rich's SIMPLE_HEAD box: padding, rule, padding)
_MIN_TEXT = 16  # a text column is not shortened below this many characters
_KEY_TEXT = 40  # nor a key column (a name) below this many, while other columns can make room
# Times and shares: what a table is read for, so left out last.
_MEASURE_RE = re.compile(r"(_ms|_pct|\(ms\))$")
# Columns left out first when a table is too wide: spreads and extremes, thread and process ids, ...
_LOW_PRIORITY_RE = re.compile(r"(^|_)(stddev|min|max|med|median|pid|tid|depth|category|row_num|span_id)(_|$)|^other_|_low$|_high$")
_PROSE_WIDTH = 60  # a prose column's width when the terminal leaves room for it
_SI = (("T", 1e12), ("G", 1e9), ("M", 1e6))
_SIZES = (("GB", 1e9), ("MB", 1e6), ("kB", 1e3))
ELLIPSIS = "…"


@dataclass(frozen=True)
class TableStyle:
    """How tables are printed: `width` None is as wide as the table needs (--wide)."""

    width: int | None = None
    full_names: bool = False

    @staticmethod
    def for_terminal(wide: bool = False, full_names: bool = False) -> TableStyle:
        return TableStyle(None if wide else terminal_width(), full_names)


def terminal_width() -> int:
    """The terminal's columns ($COLUMNS first); 120 when output goes to a file or pipe."""
    return shutil.get_terminal_size((120, 24)).columns


def display_name(column: str, columns: list[str]) -> str:
    """The header a column is shown under: `_ns` columns in ms (`total_ns` -> `total_ms`)."""
    if not column.endswith(NS_SUFFIX):
        return column
    shown = column[: -len(NS_SUFFIX)] + "_ms"
    return shown if shown not in columns else f"{column[: -len(NS_SUFFIX)]} (ms)"


def _is_bytes(column: str) -> bool:
    return column == "bytes" or column.endswith("_bytes") or column.startswith("bytes_per")


def _number(value: float) -> str:
    if value != value:  # NaN
        return "nan"
    if float(value).is_integer() and abs(value) < 1e6:
        return str(int(value))
    for suffix, scale in _SI:
        if abs(value) >= scale:
            return f"{value / scale:.4g} {suffix}"
    if abs(value) >= 1000:
        return f"{value:.1f}"
    return f"{value:.4g}" if value and abs(value) < 1e-3 else f"{value:.4f}".rstrip("0").rstrip(".")


def format_value(column: str, value) -> str:
    """One cell as shown: see the module's docstring."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        return ", ".join(format_value(column, v) for v in value)
    if isinstance(value, (int, float)) or type(value).__name__ == "Decimal":
        number = float(value)
        if column.endswith(NS_SUFFIX):
            return f"{number / NS_PER_MS:.3f}"
        if column.endswith("_ms"):
            return f"{number:.3f}"
        if _is_bytes(column):
            for unit, scale in _SIZES:
                if abs(number) >= scale:
                    return f"{number / scale:.3g} {unit}"
            return f"{number:.0f} B"
        if isinstance(value, int) and abs(value) < 1e9:
            return str(value)  # ids and counters: no separators
        return _number(number)
    text = str(value)
    return printable(" ".join(text.split()) if "\n" in text else text)


def shorten_middle(text: str, width: int) -> str:
    """`text` in at most `width` characters, its middle replaced by an ellipsis."""
    if len(text) <= width:
        return text
    if width <= 1:
        return ELLIPSIS[:width]
    head = -(-(width - 1) * 2 // 3)  # the head says more than the tail: two thirds of it
    tail = width - 1 - head
    return text[:head] + ELLIPSIS + (text[-tail:] if tail else "")


def _around(text: str, at: int, width: int) -> str:
    """`text` in at most `width` characters: its start, the part around `at`, and its end."""
    if len(text) <= width:
        return text
    head, tail = max(1, width // 5), max(1, width // 4)
    room = width - head - tail - 2
    start = max(head, at - 4)  # a few characters of context before the difference
    if room < 4 or start + room >= len(text) - tail:  # the part around `at` reaches the end: start, then end
        return text[:head] + ELLIPSIS + text[-(width - head - 1) :]
    return text[:head] + ELLIPSIS + text[start : start + room] + ELLIPSIS + text[-tail:]


def shorten_distinct(values: list[str], width: int) -> list[str]:
    """Each value shortened in the middle to `width`, different values never shown alike: values
    that would read the same (cuBLAS GEMMs that differ past the cut) show their start, the part
    where each parts from its nearest look-alike (the longest prefix it shares with one), and their
    end; what still reads alike is numbered (`#1`, `#2`). Equal values stay equal."""
    shown = {v: shorten_middle(v, width) for v in dict.fromkeys(values)}
    for group in _alike(shown):
        for v in group:
            shown[v] = _around(v, max(len(os.path.commonprefix([v, other])) for other in group if other != v), width)
    for group in _alike(shown):
        for i, v in enumerate(sorted(group), 1):
            mark = f" #{i}"
            shown[v] = shorten_middle(shown[v], max(1, width - len(mark))) + mark
    return [shown[v] for v in values]


def _alike(shown: dict[str, str]) -> list[list[str]]:
    """Groups of different values that are shown the same."""
    groups: dict[str, list[str]] = {}
    for value, short in shown.items():
        groups.setdefault(short, []).append(value)
    return [g for g in groups.values() if len(g) > 1]


def _short_name_map(columns: list[str], rows: list) -> dict[str, str]:
    names: list[str] = []
    for i, column in enumerate(columns):
        if column in NAME_COLUMNS:
            names += [r[i] for r in rows if isinstance(r[i], str)]
        elif column in NAME_LIST_COLUMNS:
            names += [_entry_name(e) for r in rows if isinstance(r[i], str) for e in r[i].split("; ")]
    return short_names(names)


def _entry_name(entry: str) -> str:
    """The name of a "name [kind] value" entry."""
    at = entry.rfind(" [")
    return entry[:at] if at > 0 else entry


def format_rows(columns: list[str], rows: list, full_names: bool = False) -> list[list[str]]:
    """The cells of `rows` as shown (kernel names shortened unless `full_names`)."""
    shorts = {} if full_names else _short_name_map(columns, rows)
    out = []
    for row in rows:
        cells = []
        for column, value in zip(columns, row, strict=True):
            if shorts and isinstance(value, str) and column in NAME_COLUMNS:
                value = shorts.get(value, value)
            elif shorts and isinstance(value, str) and column in NAME_LIST_COLUMNS:
                value = "; ".join(shorts.get(_entry_name(e), _entry_name(e)) + e[len(_entry_name(e)) :] for e in value.split("; "))
            cells.append(format_value(column, value))
        out.append(cells)
    return out


@dataclass
class _Column:
    index: int
    header: str
    natural: int  # widest cell or header
    minimum: int  # narrowest it may get
    numeric: bool
    prose: bool
    key: bool
    width: int = 0


def _columns(columns: list[str], cells: list[list[str]], rows: list) -> list[_Column]:
    out = []
    for i, column in enumerate(columns):
        header = printable(display_name(column, columns))
        values = [r[i] for r in rows if r[i] is not None]
        numeric = bool(values) and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
        natural = max([len(header)] + [len(c[i]) for c in cells])
        prose = column in PROSE_COLUMNS
        minimum = natural if numeric else min(natural, max(len(header), _MIN_TEXT))
        out.append(_Column(i, header, natural, minimum, numeric, prose, column in KEY_COLUMNS or i == 0))
    return out


def _low_priority(header: str) -> bool:
    return bool(_LOW_PRIORITY_RE.search(header))


def fit(columns: list[_Column], width: int | None) -> tuple[list[_Column], list[_Column]]:
    """(columns shown with their widths, columns left out) so that a row fits in `width` characters:
    text columns are shortened (a key column such as the name no further than _KEY_TEXT), then the
    columns of least priority are left out, rightmost first."""
    shown = list(columns)
    for c in shown:
        c.width = min(c.natural, _PROSE_WIDTH) if c.prose and width is not None else c.natural
    if width is None:
        return shown, []

    def total() -> int:
        return sum(c.width for c in shown) + _GAP * (len(shown) - 1)

    for c in shown:
        if not c.numeric and total() > width:
            floor = min(c.natural, _KEY_TEXT) if c.key else c.minimum
            c.width = max(floor, c.width - (total() - width))
    dropped: list[_Column] = []
    while total() > width and len(shown) > 1:
        droppable = [c for c in shown if not c.key]
        candidates = (
            [c for c in droppable if _low_priority(c.header)]
            or [c for c in droppable if not _MEASURE_RE.search(c.header)]  # keep times and shares longest
            or droppable
        )
        if not candidates:
            break
        dropped.append(candidates[-1])
        shown.remove(candidates[-1])
    for c in shown:  # only key columns left and still too wide: shorten them to their minimum
        if not c.numeric and total() > width:
            c.width = max(c.minimum, c.width - (total() - width))
    while total() > width and len(shown) > 1:
        dropped.append(shown.pop())
    for c in sorted(shown, key=lambda c: (not c.key, c.numeric)):  # give room back to shortened text columns
        spare = width - total()
        if spare > 0 and c.width < c.natural:
            c.width = min(c.natural, c.width + spare)
    if total() > width and shown and not shown[0].numeric:  # one text column wider than the terminal
        shown[0].width = max(1, shown[0].width - (total() - width))
    return shown, sorted(dropped, key=lambda c: c.index)


def render(
    console: Console, columns: list[str], rows: list, style: TableStyle, *, title: str | None = None, limit: int = 0, empty_note: str | None = None
) -> None:
    """Print `rows` (at most `limit`, 0 = all) as a table that fits `style.width`."""
    shown_rows = rows if limit <= 0 else rows[:limit]
    if title:
        console.print(Text(printable(title), style="bold"))
    if not rows:
        console.print(f"  ({printable(empty_note or 'no rows')})", markup=False, highlight=False)
        return
    cells = format_rows(columns, shown_rows, style.full_names)
    specs = _columns(columns, cells, shown_rows)
    empty = [c for c in specs if not any(r[c.index] is not None and r[c.index] != "" for r in shown_rows)]
    specs = [c for c in specs if c not in empty] or specs[:1]
    shown, dropped = fit(specs, style.width)
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for c in shown:
        table.add_column(
            Text(c.header), justify="right" if c.numeric else "left", no_wrap=not c.prose, overflow="fold", width=c.width, min_width=c.width
        )
    texts = {c.index: [row[c.index] for row in cells] if c.prose else shorten_distinct([row[c.index] for row in cells], c.width) for c in shown}
    for n in range(len(cells)):
        table.add_row(*(Text(texts[c.index][n]) for c in shown))  # Text(): names like [CUDA memset] are not markup
    needed = sum(c.width for c in shown) + _GAP * (len(shown) - 1)
    console.width = max(console.width, needed)
    console.print(table)
    if len(shown_rows) < len(rows):
        console.print(f"  ({len(rows) - len(shown_rows)} more rows; --limit 0 shows all)", markup=False, highlight=False)
    if dropped:
        names = ", ".join(c.header for c in dropped)
        console.print(f"  (not shown, to fit {style.width} columns: {names}; --wide or --columns shows them)", markup=False, highlight=False)
    if empty:
        console.print(f"  (no values in these rows: {', '.join(c.header for c in empty)})", markup=False, highlight=False)


def output_console(style: TableStyle) -> Console:
    """A console for stdout as wide as the style allows (wider tables widen it as they print)."""
    return Console(width=style.width or 80, soft_wrap=False)


# -- choosing and ordering columns and rows (--columns, --sort) ----------------------------------


def resolve_column(name: str, columns: list[str]) -> str | None:
    """The column `name` refers to, by its name or its shown header (`total_ms` for `total_ns`)."""
    if name in columns:
        return name
    for column in columns:
        if display_name(column, columns) == name:
            return column
    return None


def parse_sort(text: str) -> tuple[str, bool | None]:
    """(column, descending) of --sort COL[:asc|:desc]; descending None = by the column's kind."""
    name, _, order = text.partition(":")
    if order not in ("", "asc", "desc"):
        raise InputError(None, f"--sort {text!r}: the order is asc or desc", "e.g. --sort total_ms or --sort name:asc")
    return name.strip(), None if not order else order == "desc"


def sort_rows(columns: list[str], rows: list, column: str, descending: bool | None) -> list:
    """`rows` ordered by `column`: numbers largest first, text A to Z (unless told); NULLs last."""
    at = columns.index(column)
    present = [r for r in rows if r[at] is not None]
    numeric = all(isinstance(r[at], (int, float)) for r in present)
    if descending is None:
        descending = numeric
    key = (lambda r: float(r[at])) if numeric else (lambda r: str(r[at]))
    return sorted(present, key=key, reverse=descending) + [r for r in rows if r[at] is None]


def select_columns(columns: list[str], rows: list, wanted: list[str]) -> tuple[list[str], list]:
    """Only the `wanted` columns (by name or header), in that order."""
    picked = [resolve_column(w, columns) for w in wanted]
    keep = [c for c in picked if c is not None]
    at = [columns.index(c) for c in keep]
    return keep, [tuple(r[i] for i in at) for r in rows]
