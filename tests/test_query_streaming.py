"""`query` prints any number of rows in bounded memory (xsp_trace/terminal/streamed_table.py), and --timeout
stops even a sort that does not check DuckDB's interrupt (xsp_trace/store/connection.py interrupt_after)."""

from __future__ import annotations

import io
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from xsp_trace.cli import app
from xsp_trace.terminal.raw_table import print_table
from xsp_trace.terminal.streamed_table import StreamedTable

runner = CliRunner()
ROOT = Path(__file__).resolve().parent.parent
COLUMNS = ["id", "name", "x", "note"]
ROWS = [
    (1, "a", 1.5, None),
    (22, "kernel [CUDA memset]", 1234.5678, "é wide"),  # markup-like text, a non-ASCII cell
    (333, "x" * 30, float("nan"), "two\nlines"),  # a line break, shown escaped (printable.py)
    (4, "b", True, ""),
]


def _console(width: int = 80) -> Console:
    return Console(file=io.StringIO(), width=width)


def _streamed(batches: list[list[tuple]], width: int = 80, columns: list[str] = COLUMNS) -> str:
    console = _console(width)
    table = StreamedTable(console, columns)
    for batch in batches:
        table.add(batch)
    table.finish()
    return console.file.getvalue()  # type: ignore[attr-defined]


def test_one_batch_is_rich_own_table():
    """Rows written without rich (plain cells) and by rich (the others) read as rich's table of them."""
    console = _console()
    print_table(console, COLUMNS, ROWS)
    assert _streamed([ROWS]) == console.file.getvalue()  # type: ignore[attr-defined]
    lines = _streamed([ROWS]).splitlines()
    assert "│ 22  │ kernel [CUDA memset]           │ 1234.6 │ é wide     │" in lines
    assert "│ 333 │ xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx │ nan    │ two\\nlines │" in lines


def test_no_rows_is_the_header_alone():
    console = _console()
    print_table(console, COLUMNS, [])
    assert _streamed([]) == console.file.getvalue()  # type: ignore[attr-defined]


def test_a_wider_later_batch_starts_the_table_again():
    text = _streamed([[(i, "n") for i in range(5)], [(i, "n") for i in (10, 99999)], [(7, "n")]], columns=["id", "name"])
    lines = text.splitlines()
    assert [line for line in lines if line.startswith("┃")] == ["┃ id ┃ name ┃", "┃ id    ┃ name ┃"]
    assert [line.split("│")[1].strip() for line in lines if line.startswith("│")] == ["0", "1", "2", "3", "4", "10", "99999", "7"]
    assert "│ 7     │ n    │" in lines  # the wider layout stays for later batches
    assert lines[-1] == "└───────┴──────┘"


def test_wide_columns_are_capped_to_the_console_and_fold():
    """Text wider than the console: the widest columns are capped, the long cell folds (nothing cut)."""
    long = "k" * 300
    text = _streamed([[(1, long, "short")], [(2, "b" * 50, "s")]], width=100, columns=["id", "name", "other"])
    lines = text.splitlines()
    assert max(len(line) for line in lines) == 100
    assert "".join(line.split("│")[2].strip() for line in lines if line.startswith("│ ") or line.startswith("│   ")).count("k") == 300


def test_limit_counts_rows_over_batches(monkeypatch, tmp_path):
    """--limit N over several fetch batches prints N rows and says more exist."""
    import xsp_trace.terminal.streamed_table as table_stream

    monkeypatch.setattr(table_stream, "FETCH_BATCH_ROWS", 7)
    database = _empty_database(tmp_path)
    result = runner.invoke(app, ["query", str(database), "SELECT range AS n FROM range(100)", "--limit", "20"])
    assert result.exit_code == 0, result.output
    shown = [line.split("│")[1].strip() for line in result.stdout.splitlines() if line.startswith("│")]
    assert shown == [str(i) for i in range(20)]
    assert "(more rows; --limit 0 shows all" in result.stdout
    everything = runner.invoke(app, ["query", str(database), "SELECT range AS n FROM range(100)", "--limit", "0"])
    assert [line.split("│")[1].strip() for line in everything.stdout.splitlines() if line.startswith("│")] == [str(i) for i in range(100)]
    assert "more rows" not in everything.stdout


def _empty_database(folder: Path) -> Path:
    from xsp_trace.analyze.install import install_analyses
    from xsp_trace.store.database import atomic_database

    path = folder / "empty.duckdb"
    with atomic_database(path) as con:
        install_analyses(con)  # as convert does
    return path


# A console-script process that writes its peak memory (KiB) at exit into the file named first.
_RSS = """
import atexit, resource, sys
report = sys.argv.pop(1)
atexit.register(lambda: open(report, "w").write(str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)))
from xsp_trace.cli import main
main()
"""


def _peak_rss_kib(database: Path, rows: int, fmt: list[str], tmp_path: Path) -> tuple[int, str]:
    report = tmp_path / f"rss-{rows}-{len(fmt)}"
    result = subprocess.run(
        [sys.executable, "-c", _RSS, str(report), "query", str(database), f"SELECT range AS n FROM range({rows})", *fmt],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    return int(report.read_text()), result.stdout


@pytest.mark.slow
@pytest.mark.parametrize("fmt", [["--limit", "0"], ["--csv"]], ids=["table", "csv"])
def test_every_row_in_bounded_memory(fmt, tmp_path):
    """3 million rows print in the memory of 300,000 (before: every row fetched, then laid out by rich)."""
    database = _empty_database(tmp_path)
    small, _ = _peak_rss_kib(database, 300_000, fmt, tmp_path)
    large, out = _peak_rss_kib(database, 3_000_000, fmt, tmp_path)
    if fmt == ["--csv"]:
        values = out.splitlines()[1:]
    else:
        values = [line.split("│")[1].strip() for line in out.splitlines() if line.startswith("│")]
    assert len(values) == 3_000_000 and values[0] == "0" and values[-1] == "2999999"
    assert large - small < 60 * 1024, (small, large)


_STUCK = """
import signal, sys, time
from pathlib import Path
from xsp_trace.store.data_only import _spill_folder
from xsp_trace.store.connection import interrupt_after

class Ignored:  # DuckDB deep in a sort's merge: its interrupt is not looked at
    def interrupt(self): pass

spill = _spill_folder()  # a reading connection's, as DuckDB makes it when it spills
spill.mkdir()
(spill / "spill.tmp").write_text("x")
with interrupt_after(Ignored(), 1, Path("db.duckdb"), exit_when_stuck=True):
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})  # nor Python: the main thread is inside C++
    time.sleep(30)
print("not stopped")
"""


@pytest.mark.slow
def test_a_stuck_block_ends_the_process_after_the_grace(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-c", _STUCK], capture_output=True, text=True, timeout=60, cwd=ROOT)
    elapsed = time.monotonic() - started
    assert result.returncode == 2 and result.stdout == "", result
    assert result.stderr.splitlines() == [
        "xsp-trace: error: db.duckdb: stopped after 1 s (--timeout) (narrow it (a WHERE, a LIMIT, --run, --iteration), or raise --timeout)"
    ]
    assert elapsed < 1 + 1 + 5, elapsed  # the deadline, the grace, the interpreter's start
    assert list(tmp_path.iterdir()) == []  # the process's spill folder went with it


_TIMED = """
import sys, time
from xsp_trace.store import connection
stamp, real = sys.argv.pop(1), connection.interrupt_after
def timed(*args, **kwargs):
    open(stamp, "w").write(repr(time.time()))
    return real(*args, **kwargs)
connection.interrupt_after = timed
from xsp_trace.cli import main
main()
"""


@pytest.mark.slow
def test_timeout_stops_an_order_by_over_a_cross_join(tmp_path):
    """5 * 10^7 rows sorted on two keys (~40 s on the 2-core machine; DuckDB's merge phase ran 13-18 s
    past an interrupt): --timeout 3 ends the process with the one line within 3 + 3 s."""
    database = _empty_database(tmp_path)
    stamp = tmp_path / "started"
    sql = "SELECT * FROM range(10000) a, range(5000) b ORDER BY a.range DESC, b.range DESC"
    result = subprocess.run(
        [sys.executable, "-c", _TIMED, str(stamp), "query", str(database), sql, "--timeout", "3"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    ended = time.time()
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "stopped after 3 s (--timeout)" in lines[0], result.stderr
    assert ended - float(stamp.read_text()) < 3 + 3
