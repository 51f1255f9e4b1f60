"""`--align` of perfetto and analyze on the command line: the choices, --keep-clocks as --align own,
and one line for each misuse (the placement itself: tests/test_perfetto_align_utc.py)."""

from __future__ import annotations

from typer.testing import CliRunner

from perfetto_harness import handmade_db
from xsp_trace.cli import app

runner = CliRunner()


def _one_line_exit_2(args: list[str], message: str) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], result.output


def test_keep_clocks_is_align_own(tmp_path):
    """The two spellings write the same bytes; the default (origin) writes others (the handmade
    runs do not start at 0 on their own clocks)."""
    database = handmade_db.build(tmp_path / "h.duckdb")
    written = {}
    for name, args in {"keep": ["--keep-clocks"], "own": ["--align", "own"], "origin": [], "origin_named": ["--align", "origin"]}.items():
        out = tmp_path / f"{name}.pftrace"
        result = runner.invoke(app, ["perfetto", str(database), "-o", str(out), *args])
        assert result.exit_code == 0, result.output
        written[name] = out.read_bytes()
    assert written["keep"] == written["own"] != written["origin"] == written["origin_named"]


def test_misuse_is_one_line(tmp_path):
    database = handmade_db.build(tmp_path / "h.duckdb")
    out = tmp_path / "x.pftrace"
    perfetto = ["perfetto", str(database), "-o", str(out)]
    _one_line_exit_2([*perfetto, "--align", "utc", "--keep-clocks"], "--keep-clocks is --align own, and cannot go with --align utc")
    _one_line_exit_2([*perfetto, "--align", "UTC"], "--align 'UTC' is not one of origin, utc, own")
    # the handmade runs record no wall-clock time: neither can be placed
    _one_line_exit_2([*perfetto, "--align", "utc"], "run 1 (nsys: ")
    _one_line_exit_2([*perfetto, "--align", "utc"], "no selected run has one")
    assert not out.exists()
    analyze = ["analyze", str(database), "-a", "gpu_busy_idle"]
    _one_line_exit_2([*analyze, "--align", "utc"], "--align utc says which clock --window is on, and no --window is given")
    _one_line_exit_2([*analyze, "--window", "0:1ms", "--align", "own"], "--align 'own' is not one of origin, utc")
    _one_line_exit_2([*analyze, "--window", "0:1ms", "--align", "utc", "--run", "2"], "run 2 (kineto: ")
