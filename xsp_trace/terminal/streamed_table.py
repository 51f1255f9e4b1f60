"""A table printed while its rows arrive: `query`'s table of any number of rows in bounded memory.

rich lays a table out over all of its rows at once and renders about a thousand rows a second, and
`query --limit 0` may print 10^8 rows. So the table is laid out from the rows seen so far:

- each column is as wide as its widest cell so far (header included), the widest columns capped so
  that a row fits the console;
- a row whose cells are printable ASCII that fit their columns is written as rich writes it, padded
  between the box's bars, without rich; any other row (a longer, multi-line or non-ASCII cell) is
  rendered by rich at the same widths (folded onto more lines, as rich's table always did);
- when a later batch has a wider cell in a column not yet at its cap, the table is closed and starts
  again under its header at the new widths (at most a few times for numbers: one per added digit).
"""

from __future__ import annotations

import csv
import sys
from collections.abc import Sequence

from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text

from .raw_table import csv_rows, format_cell, wide_console

_MIN_CAPPED = 8  # a capped column keeps at least this many characters (more columns widen the console)


def _plain(text: str) -> bool:
    """Printable ASCII only: one character a column, no line breaks or escapes."""
    return text.isascii() and text.isprintable()


def _width(cell: str) -> int:
    if _plain(cell):
        return len(cell)
    return max((cell_len(line) for line in cell.splitlines()), default=0)


def _cells(values: Sequence) -> list[str]:
    """A column's values as shown (integers, the usual column, without format_cell's checks)."""
    if set(map(type, values)) <= {int}:
        return list(map(str, values))
    return [format_cell(value) for value in values]


class StreamedTable:
    """Rows added batch by batch; only the column widths are kept between batches."""

    def __init__(self, console: Console, columns: list[str], title: str | None = None) -> None:
        self.console = console
        self.columns = columns
        self.title = title
        self.natural = [_width(name) for name in columns]
        self.widths: list[int] | None = None
        self.bottom = ""  # the closing line of the table at the current widths

    def add(self, rows: Sequence[Sequence]) -> None:
        if not rows:
            return
        columns = [_cells(column) for column in zip(*rows, strict=True)]
        plain = [_plain("".join(column)) for column in columns]
        longest = [max(map(len if simple else _width, column)) for column, simple in zip(columns, plain, strict=True)]
        self.natural = [max(a, b) for a, b in zip(self.natural, longest, strict=True)]
        widths = self._fit()
        if widths != self.widths:
            self._close()
            self._open(widths)
        bar = Table().box.mid_vertical  # type: ignore[union-attr]  # rich's default box
        template = f"{bar} " + f" {bar} ".join(f"%-{width}s" for width in widths) + f" {bar}"
        cells = list(zip(*columns, strict=True))
        if all(plain) and all(n <= width for n, width in zip(longest, widths, strict=True)):
            lines = [template % row for row in cells]  # every cell fits: the batch without rich
        else:
            lines = self._mixed(cells, widths, template)
        self.console.file.write("\n".join(lines) + "\n")

    def _mixed(self, cells: list[tuple[str, ...]], widths: list[int], template: str) -> list[str]:
        """The lines of rows some of which rich renders (runs of consecutive ones together)."""
        lines: list[str] = []
        folded: list[tuple[str, ...]] = []
        for row in cells:
            if all(_plain(cell) and len(cell) <= width for cell, width in zip(row, widths, strict=True)):
                if folded:
                    lines += self._rendered(folded)
                    folded = []
                lines.append(template % row)
            else:
                folded.append(row)
        if folded:
            lines += self._rendered(folded)
        return lines

    def finish(self) -> None:
        """Close the table (a table of no rows is its header alone)."""
        if self.widths is None:
            self._open(self._fit())
        self._close()

    def _fit(self) -> list[int]:
        """The natural widths, the widest capped so that a row fits the console."""
        n = len(self.columns)
        room = self.console.width - (3 * n + 1)  # "│ " and " │" at the edges, " │ " between columns
        if sum(self.natural) <= room:
            return list(self.natural)
        low, high = _MIN_CAPPED, max(self.natural)  # the largest cap at which the row fits
        while low < high:
            cap = (low + high + 1) // 2
            if sum(min(w, cap) for w in self.natural) <= room:
                low = cap
            else:
                high = cap - 1
        widths = [min(w, low) for w in self.natural]
        self.console.width = max(self.console.width, sum(widths) + 3 * n + 1)  # too many columns even at the minimum
        return widths

    def _table(self, widths: list[int], show_header: bool) -> Table:
        title = self.title if show_header and self.widths is None else None
        table = Table(title=title, title_justify="left", show_header=show_header, show_lines=False)
        for name, width in zip(self.columns, widths, strict=True):
            table.add_column(Text(name), overflow="fold", width=width)
        return table

    def _lines(self, table: Table) -> list[str]:
        with self.console.capture() as capture:
            self.console.print(table)
        return capture.get().rstrip("\n").split("\n")

    def _open(self, widths: list[int]) -> None:
        """The header at `widths` (with the title the first time); its closing line kept for later."""
        lines = self._lines(self._table(widths, show_header=True))
        self.widths = widths
        self.bottom = lines.pop()
        self.console.file.write("\n".join(lines) + "\n")

    def _close(self) -> None:
        if self.widths is not None:
            self.console.file.write(self.bottom + "\n")

    def _rendered(self, rows: list[tuple[str, ...]]) -> list[str]:
        """rich's lines of `rows` at the current widths, without the table's top and bottom."""
        assert self.widths is not None
        table = self._table(self.widths, show_header=False)
        for row in rows:
            table.add_row(*(Text(cell) for cell in row))  # Text: names like [CUDA memset] are not markup
        return self._lines(table)[1:-1]


# Rows fetched from DuckDB at a time when a whole result is printed.
FETCH_BATCH_ROWS = 10_000


def print_result(result, *, limit: int = 50, as_csv: bool = False, title: str | None = None, csv_safe: bool = False) -> None:
    """Print a DuckDB result (cursor after execute) as a table or CSV on stdout, streaming it in
    batches of FETCH_BATCH_ROWS (memory does not grow with the rows): a table fetches only the `limit`
    rows it shows (0 = all; and one to tell whether more exist), CSV every row (`csv_safe`: formula-like
    text guarded). A statement without a result (empty SQL, a lone SET VARIABLE) prints nothing."""
    if result is None or result.description is None:
        return
    columns = [d[0] for d in result.description]
    if as_csv:
        writer = csv.writer(sys.stdout)
        writer.writerows(csv_rows([columns], csv_safe))
        while batch := result.fetchmany(FETCH_BATCH_ROWS):
            writer.writerows(csv_rows(batch, csv_safe))
        return
    console = wide_console()
    table = StreamedTable(console, columns, title=title)
    shown = 0
    while limit <= 0 or shown < limit:
        batch = result.fetchmany(FETCH_BATCH_ROWS if limit <= 0 else min(FETCH_BATCH_ROWS, limit - shown))
        if not batch:
            break
        table.add(batch)
        shown += len(batch)
    table.finish()
    if limit > 0 and shown == limit and result.fetchmany(1):
        console.print("  (more rows; --limit 0 shows all, --csv streams them all)")
