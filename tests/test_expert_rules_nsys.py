"""The expert-rule analyses equal `nsys analyze -r RULE:rows=10000000` (nsys 2022.4, run here) on
every nsys export in tests/data, with the rules' defaults and with their options (gap, chunks,
threshold, start/end, nvtx, rows) set on both sides.

What the comparison leaves aside, and why:

- nsys runs on a copy of each export without its eventClass 67 (CUDA backtrace) runtime rows
  (conftest.without_backtrace_rows): the memcpy/memset/sync-api rules join
  CUPTI_ACTIVITY_KIND_RUNTIME on correlationId, and those rows repeat a call (`cudaMemcpy` beside
  `cudaMemcpy_v3020`, same correlationId), so on the 2022 export nsys lists every copy twice; the
  converter keeps one call per correlation id.
- API names: nsys prints the recorded name with its entry-point suffix (`cudaMemcpyAsync_v3020`);
  the schema strips it (formats/nsys_export.API_NAME_VERSION_SUFFIX, as nsys's cudaapisum does),
  so the suffix is stripped from nsys's rows here.
- Context ID is not kept by the schema and not compared; bytes are compared in bytes
  (`csv:mem=B`).
- nsys's GPU rules add PROFILER_OVERHEAD rows named "CUDA profiling ... overhead" to the GPU work;
  the schema does not keep them, and test_no_profiler_overhead_rows checks no export here has any.
- The exports written by nsys 2026.1/2026.2 are read by nsys 2022.4 without complaint (the rules
  only read columns that exist since 2022). The `.nsys-rep` in nsys_report_from_newer_nsys is not
  an export, and nsys 2022.4 cannot export it to analyze it ("Exportation error: Version number
  is invalid: 2026@1@2@63-..."; the converter refuses it likewise): compared with nothing,
  test_report_from_newer_nsys_cannot_be_analyzed checks that refusal.
- NVTX window: the H100 export's range names (`aten::mm, op_id = N`) hold ':' and ',', which
  split nsys's rule arguments; both sides read a copy with two ranges renamed (NVTX_RENAMES).
- Rows with equal durations come in no defined order from nsys (ORDER BY duration only): rows are
  compared as sorted lists, and ours are checked to be longest first.
"""

from __future__ import annotations

import csv
import re
import sqlite3
import subprocess
from pathlib import Path

import pytest

from conftest import NEWER_NSYS_REPORT, NSYS_EXPORTS, require_nsys, without_backtrace_rows
from xsp_trace.analyze.session import AnalysisOptions, open_session, run_analysis
from xsp_trace.analyze.settings import set_rule_variables

pytestmark = pytest.mark.slow  # reference tools on real traces

ALL = "rows=10000000"
RULES = {  # nsys rule -> our analysis
    "cuda-async-memcpy": "cuda_async_memcpy",
    "cuda-sync-memcpy": "cuda_sync_memcpy",
    "cuda-sync-memset": "cuda_sync_memset",
    "cuda-sync-api": "cuda_sync_api",
    "gpu-starv": "gpu_starvation",
    "gpu-low-util": "gpu_low_utilization",
}
# nsys's column headers (with csv:mem=B) -> ours.
COLUMNS = {
    "Row#": "row_num",
    "In-Use (%)": "in_use_pct",
    "Duration (ns)": "duration_ns",
    "Start (ns)": "start_ns",
    "Src Kind": "src_kind",
    "Dst Kind": "dst_kind",
    "Memory Kind": "memory_kind",
    "Bytes (B)": "bytes",
    "PID": "pid",
    "TID": "tid",
    "Device ID": "device_id",
    "Stream ID": "stream_id",
    "API Name": "api_name",
}
NUMERIC = {"row_num", "duration_ns", "start_ns", "bytes", "pid", "tid", "device_id", "stream_id"}
VERSION_SUFFIX = re.compile(r"_v\d+$")


def _window(export: Path) -> tuple[int, int]:
    """The middle third of the export's GPU work, from the raw tables."""
    raw = sqlite3.connect(f"file:{export}?mode=ro&immutable=1", uri=True)
    lo, hi = raw.execute('SELECT min(start), max("end") FROM CUPTI_ACTIVITY_KIND_KERNEL').fetchone()
    return lo + (hi - lo) // 3, lo + 2 * (hi - lo) // 3


# NVTX windows on the H100 export: its range names (`aten::item, op_id = 317106`) hold ':' and
# ',', which split nsys's rule arguments, so both sides read a copy where the two ranges are renamed.
# The first is a 428 ms range of process 112 around a cudaStreamSynchronize (process 111 runs
# meanwhile: the window keeps process 112 only); the second a 110 ms range of process 111.
NVTX_RENAMES = {"aten::item, op_id = 317106": "item_sync_112", "aten::einsum, op_id = 321597": "einsum_111"}


def _cases(case: str) -> dict[str, tuple[list[str], dict]]:
    """Option sets to compare: id -> (nsys rule specs, our --set settings)."""
    everything = list(RULES)
    lo, hi = _window(NSYS_EXPORTS[case])
    cases = {
        "defaults": ([f"{r}:{ALL}" for r in everything], {"rows": 10000000}),
        "gap0_chunks10_threshold80": (
            [f"gpu-starv:{ALL}:gap=0", f"gpu-low-util:{ALL}:chunks=10:threshold=80"],
            {"rows": 10000000, "gap": 0, "chunks": 10, "threshold": 80},
        ),
        "window": (
            [f"{r}:{ALL}:start={lo}:end={hi}" + (":gap=0" if r == "gpu-starv" else "") for r in everything],
            {"rows": 10000000, "start": lo, "end": hi, "gap": 0},
        ),
        "rows3": (["cuda-sync-api:rows=3"], {"rows": 3}),
        "chunks1000_threshold100": ([f"gpu-low-util:{ALL}:chunks=1000:threshold=100"], {"rows": 10000000, "chunks": 1000, "threshold": 100}),
    }
    if case == "nsys_2026_pytorch_2xh100":
        for nvtx in NVTX_RENAMES.values():
            cases[f"nvtx_{nvtx}"] = (
                [
                    f"{r}:{ALL}:nvtx={nvtx}" + (":gap=0" if r == "gpu-starv" else ":chunks=10:threshold=100" if r == "gpu-low-util" else "")
                    for r in everything
                ],
                {"rows": 10000000, "nvtx": nvtx, "gap": 0, "chunks": 10, "threshold": 100},
            )
    return cases


def _renamed_ranges(export: Path) -> None:
    """Rename the NVTX_RENAMES ranges in an export copy (inline text or string table)."""
    with sqlite3.connect(export) as raw:
        if not raw.execute("SELECT count(*) FROM sqlite_master WHERE name = 'NVTX_EVENTS'").fetchone()[0]:
            return
        for old, new in NVTX_RENAMES.items():
            raw.execute("UPDATE NVTX_EVENTS SET text = ? WHERE text = ?", [new, old])
            raw.execute("UPDATE StringIds SET value = ? WHERE value = ?", [new, old])


@pytest.fixture(scope="session")
def nsys_analyze(tmp_path_factory):
    """nsys_analyze(case) -> (the export nsys read, {case id: {rule: rows}}): one `nsys analyze` per export (cached)."""
    cache: dict[str, tuple[Path, dict[str, dict[str, list[dict]]]]] = {}

    def _run(case: str) -> tuple[Path, dict[str, dict[str, list[dict]]]]:
        if case not in cache:
            workdir = tmp_path_factory.mktemp("nsys_analyze")
            export = without_backtrace_rows(NSYS_EXPORTS[case], workdir)
            _renamed_ranges(export)
            specs = {(cid, spec) for cid, (specs, _) in _cases(case).items() for spec in specs}
            args = [a for _, spec in sorted(specs) for a in ("-r", spec)]
            prefix = workdir / "out"
            done = subprocess.run(
                [require_nsys(), "analyze", *args, "-f", "csv:mem=B", "-o", str(prefix), "--force-overwrite", "true", str(export)],
                capture_output=True,
                text=True,
                check=True,
            )
            for line in (done.stdout + done.stderr).splitlines():  # a rule that fails writes an empty file: it must not pass for "no rows"
                assert "ERROR" not in line and "could not be found" not in line, line
                if "SKIPPED" in line:
                    assert "does not contain the required" in line, line
            rows: dict[str, dict[str, list[dict]]] = {}
            for cid, spec in specs:
                out = Path(f"{prefix}_{spec.replace(':', '_')}.csv")
                with open(out, newline="") as f:
                    rows.setdefault(cid, {})[spec.split(":")[0]] = list(csv.DictReader(f)) if out.stat().st_size else []
            cache[case] = (export, rows)
        return cache[case]

    return _run


def _theirs(rows: list[dict]) -> list[dict]:
    out = []
    for row in rows:
        mapped = {COLUMNS[k]: v for k, v in row.items() if k in COLUMNS}
        for k in mapped:
            if k in NUMERIC:
                mapped[k] = int(mapped[k])
            elif k == "in_use_pct":
                mapped[k] = float(mapped[k])
        if "api_name" in mapped:
            mapped["api_name"] = VERSION_SUFFIX.sub("", mapped["api_name"])
        out.append(mapped)
    return out


def _ours(con, settings: dict) -> dict[str, list[dict]]:
    """Our rows of run 1, on nsys's session clock: --set start / end and the start_ns shown are after
    the run's origin (runs.origin_ns)."""
    (origin,) = con.execute("SELECT origin_ns FROM runs WHERE run_id = 1").fetchone()
    set_rule_variables(con, {k: v - origin if k in ("start", "end") else v for k, v in settings.items()})
    return {
        rule: [{**r, "start_ns": r["start_ns"] + origin} for r in run_analysis(con, name).records() if r.pop("run_id") == 1]
        for rule, name in RULES.items()
    }


def _key(row: dict) -> tuple:
    return tuple(sorted((k, str(v)) for k, v in row.items()))


@pytest.mark.parametrize("case", list(NSYS_EXPORTS))
def test_rules_equal_nsys_analyze(case, nsys_analyze, converted_path):
    compared = 0
    export, references = nsys_analyze(case)
    con = open_session(converted_path(export), AnalysisOptions())  # the copy nsys read (no backtrace rows, renamed ranges)
    for case_id, (specs, settings) in _cases(case).items():
        reference = references[case_id]
        ours = _ours(con, settings)
        for spec in specs:
            rule = spec.split(":")[0]
            theirs = _theirs(reference[rule])
            mine = [{k: v for k, v in r.items() if k in COLUMNS.values() and (not theirs or k in theirs[0])} for r in ours[rule]]
            assert sorted(mine, key=_key) == sorted(theirs, key=_key), (case, case_id, rule)
            if "row_num" in (mine[0] if mine else {}):
                assert mine == sorted(theirs, key=lambda r: r["row_num"]), (case, case_id, rule)
            durations = [r["duration_ns"] for r in mine]
            if rule != "gpu-low-util":
                assert durations == sorted(durations, reverse=True)
            compared += len(theirs)
    con.close()
    assert compared > 0


def test_defaults_are_nsys_defaults():
    """The defaults lib/rules.sql and --set use are those `nsys analyze --help-rules` documents."""
    from xsp_trace.analyze.settings import SETTINGS

    done = subprocess.run([require_nsys(), "analyze", "--help-rules", "ALL"], capture_output=True, text=True)  # exits 1 after printing
    help_text = done.stdout + done.stderr
    documented = {
        "gap": int(re.search(r"gap=<threshold>.*?Default is (\d+)ms", help_text, re.S).group(1)),
        "threshold": int(re.search(r"threshold=<percent>.*?Default is (\d+)%", help_text, re.S).group(1)),
        "chunks": int(re.search(r"chunks=<number>.*?Default is (\d+)\.", help_text, re.S).group(1)),
        "rows": int(re.search(r"rows=<limit>.*?Default is (\d+)\.", help_text, re.S).group(1)),
    }
    assert {name: SETTINGS[name].default for name in documented} == documented
    prelude = (Path(__file__).parent.parent / "queries" / "lib" / "rules.sql").read_text()
    for name, value in documented.items():
        assert re.search(rf"getvariable\('{SETTINGS[name].variable}'\), {value}\)", prelude), name


@pytest.mark.parametrize("case", list(NSYS_EXPORTS))
def test_no_profiler_overhead_rows(case):
    """nsys's GPU rules count these as GPU work; the comparison above holds because there are none."""
    raw = sqlite3.connect(f"file:{NSYS_EXPORTS[case]}?mode=ro&immutable=1", uri=True)
    tables = {r[0] for r in raw.execute("SELECT name FROM sqlite_master")}
    if "PROFILER_OVERHEAD" in tables:
        names = ("CUDA profiling data flush overhead", "CUDA profiling stop overhead", "CUDA profiling overhead")
        count = raw.execute(
            f"SELECT count(*) FROM PROFILER_OVERHEAD AS p JOIN StringIds AS s ON s.id = p.nameId WHERE s.value IN ({', '.join('?' * len(names))})",
            names,
        ).fetchone()[0]
        assert count == 0


def test_cli_set_options_reach_the_rules(nsys_analyze, converted_path):
    """`analyze --set gap=0 --set rows=2` prints the two longest gaps nsys finds with gap=0."""
    import json

    from typer.testing import CliRunner

    from xsp_trace.cli import app

    case = "nsys_2026_pytorch_2xh100"
    export, references = nsys_analyze(case)
    runner = CliRunner()
    result = runner.invoke(
        app, ["analyze", str(converted_path(export)), "-a", "gpu_starvation", "--set", "gap=0", "--set", "rows=2", "--format", "json", "--limit", "0"]
    )
    assert result.exit_code == 0, result.output
    con = open_session(converted_path(export))
    (origin,) = con.execute("SELECT origin_ns FROM runs").fetchone()  # start_ns is shown after it; nsys prints its session clock
    con.close()
    rows = [
        {**{k: v for k, v in r.items() if k != "run_id"}, "start_ns": r["start_ns"] + origin} for r in json.loads(result.stdout)["gpu_starvation"]
    ]
    assert rows == _theirs(references["gap0_chunks10_threshold80"]["gpu-starv"])[:2]
    import typer

    from xsp_trace.analyze.settings import SETTINGS

    option = next(p for p in typer.main.get_command(app).commands["analyze"].params if "--set" in p.opts)
    assert all(re.search(rf"\b{name}\b", option.help) for name in SETTINGS), option.help


@pytest.mark.parametrize(
    ("setting", "message"),
    [("gap=abc", "is not an integer"), ("nope=1", "is not NAME=VALUE with a known NAME"), ("chunks=5000", "is out of range")],
)
def test_cli_bad_setting_is_one_line_exit_2(setting, message, converted_path):
    from typer.testing import CliRunner

    from xsp_trace.cli import app

    result = CliRunner().invoke(
        app, ["analyze", str(converted_path(NSYS_EXPORTS["nsys_2026_mock_rtx3080"])), "-a", "gpu_starvation", "--set", setting]
    )
    assert result.exit_code == 2
    assert message in result.output and len(result.output.strip().splitlines()) == 1, result.output


def test_report_from_newer_nsys_cannot_be_analyzed(tmp_path):
    """Why the .nsys-rep fixture is not compared: nsys 2022.4 refuses to export a 2026.1 report."""
    import shutil

    copy = tmp_path / NEWER_NSYS_REPORT.name
    shutil.copyfile(NEWER_NSYS_REPORT, copy)
    done = subprocess.run([require_nsys(), "analyze", "-r", "cuda-sync-api", str(copy)], capture_output=True, text=True, cwd=tmp_path)
    assert "Version number is invalid: 2026@1@2" in done.stdout + done.stderr
    assert not copy.with_suffix(".sqlite").exists()
