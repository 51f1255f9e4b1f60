"""Names from someone else's trace reach the terminal as text, never as terminal commands (issue 45):
a kernel and an op of a converted trace renamed to carry an OSC 52 clipboard write, an OSC 8
hyperlink, a screen clear, a NUL, an 8-bit CSI and a right-to-left override are shown escaped
(`\\x1b`) by every table printer, the summary, the findings, the notes and the HTML report; CSV and
JSON keep the exact name; `--csv-safe` guards the CSV cells a spreadsheet would run as formulas."""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from conftest import DATA
from support.handmade import Run, write
from xsp_trace.cli import app
from xsp_trace.errors import InputError
from xsp_trace.printable import printable

TRITON = DATA / "kineto_triton_cuda_driver" / "hta_a100_triton.json.gz"  # one step, one kernel, its op
KERNEL = "triton_poi_fused_add_cos_sin_0"
ATTACK = "\x1b]52;c;cm0gLXJmIH4=\x07\x1b]8;;https://evil.example/\x07link\x1b]8;;\x07\x1b[2J\x1b]0;title\x07\x00\x9b31m\u202egnp.exe\x7f"
EVIL = "evil" + ATTACK
SHOWN = "evil" + printable(ATTACK)
# What a terminal acts on: C0 controls but the line feed a printer writes, DEL, C1, bidi controls.
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
FORMULA = '=HYPERLINK("https://evil.example","click")'

runner = CliRunner()


def _invoke(*args: str):
    return runner.invoke(app, list(args), env={"COLUMNS": "400"})


def _shown_safely(text: str) -> None:
    assert not RAW.findall(text), sorted(set(RAW.findall(text)))


@pytest.fixture(scope="module")
def evil_db(tmp_path_factory) -> Path:
    """The Triton trace converted, then its kernel renamed to EVIL and its op to "op" + EVIL."""
    from xsp_trace.convert import ConvertOptions, convert_files

    folder = tmp_path_factory.mktemp("evil")
    plain = folder / "plain.duckdb"
    convert_files([TRITON], plain, ConvertOptions())
    evil = folder / "evil.duckdb"
    shutil.copyfile(plain, evil)
    with duckdb.connect(str(evil)) as con:
        assert con.execute("UPDATE spans SET name = ? WHERE kind = 'kernel' AND name = ?", [EVIL, KERNEL]).fetchone() == (1,)
        assert con.execute("UPDATE spans SET name = ? WHERE kind = 'op' AND name = ?", ["op" + EVIL, KERNEL]).fetchone() == (1,)
    return evil


def _pair_db(path: Path, kernel_ns: int) -> Path:
    """12 steps, each one call of kernel EVIL (kernel_ns) and of kernel FORMULA (100 ns)."""
    run = Run(1)
    for step in range(12):
        t = step * 10_000
        run.span("annotation", f"ProfilerStep#{step}", t, t + 10_000, iteration=step)
        run.gpu("kernel", EVIL, (t + 1, t + 2), (t + 100, t + 100 + kernel_ns))
        run.gpu("kernel", FORMULA, (t + 3, t + 4), (t + 300, t + 400))
    return write(path, [run])


@pytest.fixture(scope="module")
def evil_pair(tmp_path_factory) -> tuple[str, str]:
    """A diff pair whose regressing kernel (+10 %) is named EVIL."""
    folder = tmp_path_factory.mktemp("evil_pair")
    return str(_pair_db(folder / "base.duckdb", 100)), str(_pair_db(folder / "new.duckdb", 110))


def test_printable_escapes_what_a_terminal_acts_on_and_nothing_else():
    acted_on = [
        chr(c) for c in [*range(0x20), *range(0x7F, 0xA0), 0x61C, 0x200E, 0x200F, 0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
    ]
    for char in acted_on:
        shown = printable(f"a{char}b")
        assert not RAW.search(shown) and "\n" not in shown, repr(char)
        assert (
            shown
            == "a" + ({"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(char) or repr(char)[1:-1] if ord(char) < 0x100 else f"\\u{ord(char):04x}") + "b"
        )
    assert printable("\x1b]52;c;x\x07") == "\\x1b]52;c;x\\x07"
    assert printable("\u202egnp.exe") == "\\u202egnp.exe"
    kept = "void gemm<float, 128>(float*) µs 核 🚀 C:\\path\\x1b é\u200d"  # text, a backslash, a joiner: kept as they are
    assert printable(kept) == kept
    for code in range(0x3000):  # ASCII takes a fast path: the same answer as the rule for every character
        assert bool(RAW.search(printable(chr(code)))) is False
        assert (printable(chr(code)) != chr(code)) == (chr(code) in acted_on), hex(code)


def test_an_error_line_escapes_a_file_name_with_terminal_commands():
    line = InputError("trace\x1b]0;owned\x07\u202e.json", "is not a trace").line()
    assert line == "trace\\x1b]0;owned\\x07\\u202e.json: is not a trace"


@pytest.mark.parametrize(
    "args",
    [
        ("query", "{db}", "SELECT name FROM spans ORDER BY name"),
        ("query", "{db}", "@top_kernels"),
        ("analyze", "{db}"),
        ("analyze", "{db}", "-a", "top_kernels", "--full-names"),
        ("analyze", "{db}", "-a", "top_kernels"),
        ("analyze", "{db}", "--findings", "-a", "top_kernels"),
        ("analyze", "{db}", "--all"),
    ],
    ids=["query", "query_analysis", "summary", "table_full_names", "table", "findings", "all"],
)
def test_tables_show_the_name_escaped(evil_db, args):
    result = _invoke(*(a.format(db=evil_db) for a in args))
    assert result.exit_code == 0, result.output
    _shown_safely(result.output)
    assert "evil\\x1b]52;c;cm0gLXJmIH4=\\x07" in result.output


@pytest.mark.parametrize(
    "args", [(), ("--findings",), ("--report", "{report}", "-a", "top_kernels", "--findings")], ids=["summary", "findings", "report"]
)
def test_a_finding_that_names_a_kernel_shows_it_escaped(evil_db, monkeypatch, tmp_path, args):
    """Findings name kernels and calls (the roofline's longest kernel, the calls a step waits in):
    one naming the renamed kernel, in the summary's list, the --findings table and the report."""
    import xsp_trace.analyze.findings.find as findings
    import xsp_trace.analyze.summary as summary
    from xsp_trace.analyze.findings.record import Finding

    named = [Finding("memory_bound", 0.5, f"the longest kernel, {EVIL}, is memory-bound", "top_kernels", "run_id = 1")]
    monkeypatch.setattr(findings, "find", lambda *_args: named)
    monkeypatch.setattr(summary, "find", lambda *_args: named)
    report = tmp_path / "report.html"
    result = _invoke("analyze", str(evil_db), *(a.format(report=report) for a in args))
    assert result.exit_code == 0, result.output
    shown = report.read_text(encoding="utf-8").replace("\n", "") if args[:1] == ("--report",) else result.output
    _shown_safely(shown)
    assert "the longest kernel, evil\\x1b]52;c;cm0gLXJmIH4=\\x07" in shown.replace("\n", "")


def test_the_query_table_shows_the_whole_name_escaped(evil_db):
    result = _invoke("query", str(evil_db), "SELECT name FROM spans WHERE kind = 'kernel'")
    assert result.exit_code == 0, result.output
    assert SHOWN in result.output  # every byte of the attack, as text: the column is wide enough for it


def test_diff_table_shows_the_name_escaped(evil_pair):
    result = _invoke("diff", *evil_pair)
    assert result.exit_code == 1, result.output  # the renamed kernel regressed: the gate still works
    _shown_safely(result.output)
    assert "REGRESSION" in result.output and "evil\\x1b]52" in result.output


def test_csv_and_json_keep_the_exact_name(evil_db, evil_pair):
    query_csv = _invoke("query", str(evil_db), "SELECT name FROM spans WHERE kind = 'kernel'", "--csv")
    assert list(csv.reader(io.StringIO(query_csv.stdout))) == [["name"], [EVIL]]
    analyze_csv = _invoke("analyze", str(evil_db), "-a", "top_kernels", "--format", "csv")
    assert [r["name"] for r in csv.DictReader(io.StringIO(analyze_csv.stdout))] == [EVIL]
    analyze_json = _invoke("analyze", str(evil_db), "-a", "top_kernels", "--format", "json")
    assert [r["name"] for r in json.loads(analyze_json.stdout)["top_kernels"]] == [EVIL]
    _shown_safely(analyze_json.stdout)  # JSON writes the control characters as \u escapes itself
    diff_csv = _invoke("diff", *evil_pair, "--format", "csv", "--level", "kernel")
    assert {r["name"] for r in csv.DictReader(io.StringIO(diff_csv.stdout))} == {EVIL, FORMULA}
    diff_json = _invoke("diff", *evil_pair, "--format", "json")
    assert {e["name"] for e in json.loads(diff_json.stdout)["entries"]} == {EVIL, FORMULA}


def test_csv_safe_guards_formula_cells_only_when_asked(evil_db, evil_pair):
    sql = f"SELECT '{FORMULA.replace(chr(39), chr(39) * 2)}' AS f, '+1' AS p, '-x' AS m, '@x' AS a, '\t1' AS t, 'plain' AS s, -5 AS n"
    raw = _invoke("query", str(evil_db), sql, "--csv")
    assert list(csv.reader(io.StringIO(raw.stdout)))[1] == [FORMULA, "+1", "-x", "@x", "\t1", "plain", "-5"]
    safe = _invoke("query", str(evil_db), sql, "--csv", "--csv-safe")
    assert list(csv.reader(io.StringIO(safe.stdout)))[1] == ["'" + FORMULA, "'+1", "'-x", "'@x", "'\t1", "plain", "-5"]
    diff_safe = _invoke("diff", *evil_pair, "--format", "csv", "--level", "kernel", "--csv-safe")
    assert {r["name"] for r in csv.DictReader(io.StringIO(diff_safe.stdout))} == {EVIL, "'" + FORMULA}
    with duckdb.connect(str(evil_pair[0])) as con:  # the analyses' CSV: the formula kernel of the pair
        assert con.execute("SELECT count(*) FROM spans WHERE name = ?", [FORMULA]).fetchone() == (12,)
    analyze_safe = _invoke("analyze", evil_pair[0], "-a", "top_kernels", "--format", "csv", "--csv-safe")
    assert {r["name"] for r in csv.DictReader(io.StringIO(analyze_safe.stdout))} == {EVIL, "'" + FORMULA}
    analyze_raw = _invoke("analyze", evil_pair[0], "-a", "top_kernels", "--format", "csv")
    assert {r["name"] for r in csv.DictReader(io.StringIO(analyze_raw.stdout))} == {EVIL, FORMULA}


def test_the_html_report_shows_the_name_escaped(evil_db, tmp_path):
    report = tmp_path / "report.html"
    result = _invoke("analyze", str(evil_db), "--report", str(report), "-a", "top_kernels", "-a", "kernel_info", "--findings")
    assert result.exit_code == 0, result.output
    html = report.read_text(encoding="utf-8")
    _shown_safely(html.replace("\n", ""))
    assert "evil\\x1b]52;c;cm0gLXJmIH4=\\x07" in html
