"""Every numeric option is finite and in range, every output path names a file (issue 45): `nan`,
`inf`, `1e400`, a negative count, an integer past int64, a what-if factor or duration past the
clock, or `-o ''` is one line and exit 2 before anything runs -- never a traceback, and never a
value that quietly turns a check off (`diff --fail-above nan%` passed every regression)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import DATA
from support.handmade import Run, write
from xsp_trace.cli import app

TRITON = DATA / "kineto_triton_cuda_driver" / "hta_a100_triton.json.gz"  # one step, one kernel triton_poi_...
runner = CliRunner()


def _pair_db(path: Path, kernel_ns: int) -> Path:
    """12 steps, each one call of kernel k (kernel_ns)."""
    run = Run(1)
    for step in range(12):
        t = step * 10_000
        run.span("annotation", f"ProfilerStep#{step}", t, t + 10_000, iteration=step)
        run.gpu("kernel", "k", (t + 1, t + 2), (t + 100, t + 100 + kernel_ns))
    return write(path, [run])


@pytest.fixture(scope="module")
def dbs(tmp_path_factory) -> dict[str, str]:
    """db: the Triton trace converted; base/new: a pair whose kernel k grew 10 % (diff exits 1 at 5 %)."""
    from xsp_trace.convert import ConvertOptions, convert_files

    folder = tmp_path_factory.mktemp("numeric")
    convert_files([TRITON], folder / "t.duckdb", ConvertOptions())
    return {
        "db": str(folder / "t.duckdb"),
        "base": str(_pair_db(folder / "base.duckdb", 100)),
        "new": str(_pair_db(folder / "new.duckdb", 110)),
        "trace": str(TRITON),
        "out": str(folder / "out.duckdb"),
    }


BAD = [
    # (arguments, what the one line says)
    ("query {db} @top_kernels --timeout nan", "'--timeout': nan is not a number of seconds from 0 to 604800"),
    ("query {db} @top_kernels --timeout inf", "'--timeout': inf is not a number of seconds"),
    ("query {db} @top_kernels --timeout 1e400", "'--timeout': inf is not a number of seconds"),
    ("query {db} @top_kernels --timeout -1", "'--timeout': -1 is not a number of seconds"),
    ("query {db} @top_kernels --timeout 604801", "'--timeout': 604801 is not a number of seconds"),
    ("query {db} @top_kernels --limit 99999999999999999999", "'--limit': 99999999999999999999 is not a whole number from 0 to 9223372036854775807"),
    ("query {db} @top_kernels --limit -1", "'--limit': -1 is not a whole number"),
    ("query {db} @top_kernels --memory-limit lots", "'--memory-limit': 'lots' is not a memory size"),
    ("analyze {db} -a top_kernels --timeout nan", "'--timeout': nan is not a number of seconds"),
    ("analyze {db} -a top_kernels --limit -5", "'--limit': -5 is not a whole number"),
    ("analyze {db} -a top_kernels --memory-limit 4XB", "'--memory-limit': '4XB' is not a memory size"),
    ("analyze {db} -a top_kernels --peak-flops nan", "'--peak-flops': nan is not a rate above 0"),
    ("analyze {db} -a top_kernels --peak-flops 0", "'--peak-flops': 0 is not a rate above 0"),
    ("analyze {db} -a top_kernels --peak-dram-bw inf", "'--peak-dram-bw': inf is not a rate above 0"),
    ("analyze {db} -a top_kernels --layer-depth 0", "'--layer-depth': 0 is not a nesting level from 1 to 2147483647"),
    ("analyze {db} -a top_kernels --iteration 1-99999999999", "--iteration '1-99999999999' is past the iteration numbers a trace holds"),
    ("analyze {db} -a top_kernels --iteration 0-2000000", "--iteration '0-2000000' lists more than 1,000,000 iterations"),
    ("analyze {db} --what-if kernel:triton*1e400", "--what-if 'kernel:triton*1e400': the factor is not a finite number"),
    ("analyze {db} --what-if kernel:triton*1.2.3", "--what-if 'kernel:triton*1.2.3': the factor is not a finite number"),
    ("analyze {db} --what-if kernel:triton=1e30s", "--what-if 'kernel:triton=1e30s': the duration is not a time below 2^62 ns"),
    ("analyze {db} --what-if kernel:triton*1e30", "--what-if: the rules move replayed times past 2^62 ns"),
    ("analyze {db} --what-if op:.*=4611686018427387903", "--what-if: the rules move replayed times past 2^62 ns"),
    ("analyze {db} -a gpu_starvation --set start=99999999999999999999", "--set start=99999999999999999999 is out of range"),
    ("analyze {db} -a gpu_starvation --set end=-99999999999999999999", "--set end=-99999999999999999999 is out of range"),
    ("analyze {db} -a gpu_starvation --set gap=99999999999999999999", "--set gap=99999999999999999999 is out of range"),
    ("analyze {db} -a gpu_low_utilization --set threshold=101", "--set threshold=101 is out of range (use 0 to 100)"),
    ("analyze {db} -a top_kernels --report ''", "'--report': an empty path names no file"),
    ("diff {base} {new} --fail-above nan%", "--fail-above 'nan%' is not a finite percentage of 0 or more"),
    ("diff {base} {new} --fail-above inf", "--fail-above 'inf' is not a finite percentage of 0 or more"),
    ("diff {base} {new} --fail-above -5%", "--fail-above '-5%' is not a finite percentage of 0 or more"),
    ("diff {base} {new} --min-share nan", "--min-share 'nan' is not a finite percentage from 0 to 100"),
    ("diff {base} {new} --min-share 101%", "--min-share '101%' is not a finite percentage from 0 to 100"),
    ("diff {base} {new} --min-calls -1", "'--min-calls': -1 is not a whole number"),
    ("diff {base} {new} --limit 99999999999999999999", "'--limit': 99999999999999999999 is not a whole number"),
    ("convert {trace} -o ''", "'-o' / '--output': an empty path names no file"),
    ("convert {trace} -o {out} --perfetto ''", "'--perfetto': an empty path names no file"),
    ("convert {trace} -o {out} -j 0", "'-j' / '--jobs': 0 is not a whole number from 1"),
    ("convert {trace} -o {out} -j -3", "'-j' / '--jobs': -3 is not a whole number from 1"),
    ("convert {trace} -o {out} --run-id-offset -1", "'--run-id-offset': -1 is not a whole number from 0 to 2147483647"),
    ("convert {trace} -o {out} --run-id-offset 2147483647", "--run-id-offset 2147483647 numbers runs past 2147483647"),
    ("convert {trace} -o {out} --max-gzip-ratio inf", "--max-gzip-ratio inf is not a ratio"),
    ("convert {trace} -o {out} --max-input-size " + "9" * 400, "--max-input-size '999"),
    ("perfetto {db} -o ''", "'-o' / '--output': an empty path names no file"),
    ("perfetto {db} -o {out} --from-ns 99999999999999999999", "'--from-ns': 99999999999999999999 is not a time in ns"),
    ("perfetto {db} -o {out} --to-ns -4611686018427387904", "'--to-ns': -4611686018427387904 is not a time in ns"),
    ("capture -o '' -- true", "'-o' / '--output': an empty path names no file"),
    ("capture --timeout 0 -- true", "'--timeout': 0 is not a number of seconds above 0 up to 604800"),
    ("capture --timeout nan -- true", "'--timeout': nan is not a number of seconds"),
    ("metrics {db} {trace} --run 0", "'--run': 0 is not a run id from 1 to 2147483647"),
    ("metrics {db} {trace} --run 99999999999999999999", "'--run': 99999999999999999999 is not a run id"),
]


@pytest.mark.parametrize(("args", "says"), BAD, ids=[a[:80] for a, _ in BAD])
def test_a_bad_number_or_empty_path_is_one_line_and_exit_2(dbs, tmp_path, monkeypatch, args, says):
    import shlex

    monkeypatch.chdir(tmp_path)  # `-o ''` would have written here
    result = runner.invoke(app, [a.format(**dbs) for a in shlex.split(args)])
    assert result.exit_code == 2, result.output
    assert result.output.count("\n") == 1 and result.output.startswith("xsp-trace: error: "), result.output
    assert says in result.output
    assert "Traceback" not in result.output and not isinstance(result.exception, (ValueError, OverflowError, MemoryError))
    assert list(tmp_path.iterdir()) == [] and not Path(dbs["out"]).exists()


def test_the_gate_cannot_be_turned_off_by_a_number(dbs):
    """The pair fails the gate at 5 %; nan, inf and a negative threshold used to pass it (exit 0)."""
    pair = [dbs["base"], dbs["new"]]
    assert runner.invoke(app, ["diff", *pair, "--fail-above", "5%"]).exit_code == 1
    assert runner.invoke(app, ["diff", *pair, "--fail-above", "0", "--min-calls", "0", "--min-share", "100%"]).exit_code == 1  # the bounds: accepted
    assert runner.invoke(app, ["diff", *pair, "--fail-above", "15%"]).exit_code == 0
    for threshold in ("nan%", "NaN", "inf", "-inf%", "1e400", "-5%"):
        assert runner.invoke(app, ["diff", *pair, "--fail-above", threshold]).exit_code == 2, threshold


def test_the_bounds_themselves_are_accepted(dbs):
    ok = runner.invoke(app, ["query", dbs["db"], "SELECT count(*) AS n FROM spans", "--timeout", "0", "--limit", "0", "--memory-limit", "1GB"])
    assert ok.exit_code == 0, ok.output
    assert "7" in ok.output
    assert runner.invoke(app, ["query", dbs["db"], "SELECT 1", "--timeout", "604800", "--limit", "9223372036854775807"]).exit_code == 0
    zero = runner.invoke(app, ["analyze", dbs["db"], "--what-if", "kernel:triton*0", "--what-if", "op:Torch=0", "--format", "csv"])
    assert zero.exit_code == 0, zero.output


def test_an_output_option_left_out_still_takes_its_default(dbs, tmp_path, monkeypatch):
    """The path check also sees capture's default (a Path, not text) and convert's absent -o."""
    monkeypatch.chdir(tmp_path)
    capture = runner.invoke(app, ["capture", "--levels", "X", "--", "true"])
    assert (capture.exit_code, capture.output) == (2, "xsp-trace: error: unknown level(s) X (use a comma list of M, ML, MLG)\n")
    trace = tmp_path / "t.json.gz"
    trace.write_bytes(TRITON.read_bytes())
    convert = runner.invoke(app, ["convert", str(trace), "-q"])
    assert convert.exit_code == 0, convert.output
    assert (tmp_path / "t.duckdb").is_file()
