"""`xsp-trace diff` on real captures of different lengths, against the raw traces.

- nsys_2022_cpu_tiny_cnn_40_vs_64_steps: two runs of one model recorded here by nsys 2022.4 (40 and
  64 steps): calls, time per call and per step of every layer equal the raw NVTX ranges of NVIDIA's
  own sqlite export; "beyond the noise" equals scipy's Welch t statistic above 2.
- nsys_2026_pytorch_2xh100 cut short: a real GPU capture and a shorter capture of the same run
  (every event starting after 60 % of the kernel window left out, as `nsys --duration` would):
  per-call changes equal the raw export's, the window totals grew by far more than --fail-above,
  and the gate stays silent; ops with ", op_id = N" compare under one name.
- kineto_cpu_tiny_cnn_30_vs_50_calls: two torch.profiler captures without steps: diff says so and
  compares per call, equal to the raw JSON.
"""

from __future__ import annotations

import gzip
import json
import math
import shutil
import sqlite3
import statistics
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest
from scipy import stats
from typer.testing import CliRunner

from conftest import NSYS_EXPORTS, require_nsys
from xsp_trace.analyze.diff import NOISE_STANDARD_ERRORS, Gate, diff_databases
from xsp_trace.cli import app
from xsp_trace.convert import ConvertOptions, convert_files
from xsp_trace.naming import install_normalize_macro, normalize_name

pytestmark = pytest.mark.slow  # real traces

DATA = Path(__file__).parent / "data"
NSYS_PAIR = [DATA / "nsys_2022_cpu_tiny_cnn_40_vs_64_steps" / f"tiny_cnn_ML_{n}_steps.nsys-rep" for n in (40, 64)]
KINETO_PAIR = [DATA / "kineto_cpu_tiny_cnn_30_vs_50_calls" / f"tiny_cnn_{n}_inferences.json.gz" for n in (30, 50)]
H100 = NSYS_EXPORTS["nsys_2026_pytorch_2xh100"]


def _convert(trace: Path, out: Path) -> Path:
    convert_files([trace], out, ConvertOptions())
    return out


def _pct(base: float, new: float) -> float:
    return 100.0 * (new - base) / base


def _nvtx_ranges(export: Path) -> dict[str, list[int]]:
    """Durations (ns) of the NVTX ranges of an nsys sqlite export, by text."""
    with sqlite3.connect(export) as con:
        rows = con.execute(
            'SELECT coalesce(e.text, s.value), e."end" - e.start FROM NVTX_EVENTS AS e LEFT JOIN StringIds AS s ON s.id = e.textId WHERE e."end" IS NOT NULL'
        ).fetchall()
    ranges = defaultdict(list)
    for text, duration in rows:
        ranges[text].append(duration)
    return ranges


@pytest.fixture(scope="module")
def nsys_pair(tmp_path_factory):
    """(databases, raw NVTX ranges) of the recorded pair: the reports copied out of tests/data, then
    converted by xsp-trace and exported by nsys itself."""
    nsys = require_nsys()
    work = tmp_path_factory.mktemp("nsys_pair")
    dbs, raw = [], []
    for report in NSYS_PAIR:
        copy = work / report.name
        shutil.copyfile(report, copy)
        export = work / f"{report.stem}.sqlite"
        subprocess.run(
            [nsys, "export", "--type", "sqlite", "--force-overwrite", "true", "--output", str(export), str(copy)], check=True, capture_output=True
        )
        raw.append(_nvtx_ranges(export))
        dbs.append(_convert(copy, work / f"{report.stem}.duckdb"))
    return dbs, raw


def test_recorded_runs_of_different_lengths_per_call_and_per_step_equal_nvidias_export(nsys_pair):
    dbs, raw = nsys_pair
    steps = [sum(len(v) for k, v in r.items() if k.startswith("xsp.model:")) for r in raw]
    assert steps == [40, 64]
    result = diff_databases(*dbs)
    rows, story = result.rows, result.headline
    assert story.per_step and (story.base_steps, story.new_steps) == (40, 64)
    models = [[d for k, v in r.items() if k.startswith("xsp.model:") for d in v] for r in raw]
    assert story.step_change_pct == pytest.approx(_pct(statistics.median(models[0]), statistics.median(models[1])), abs=1e-9)
    layers = {r.name: r for r in rows if r.level == "layer"}
    assert sorted(layers) == sorted(k for k in raw[0] if k.startswith("xsp.layer:"))
    for name, row in layers.items():
        a, b = raw[0][name], raw[1][name]
        assert (row.calls_base, row.calls_new) == (len(a), len(b)) == (40, 64)
        assert row.per_call_change_pct == pytest.approx(_pct(sum(a) / len(a), sum(b) / len(b)), abs=1e-9)
        assert row.per_step_change_pct == pytest.approx(_pct(sum(a) / steps[0], sum(b) / steps[1]), abs=1e-9)
        # The window totals grew with the capture (+60 % calls); the comparison is not of totals.
        assert _pct(sum(a), sum(b)) - row.per_step_change_pct > 30
        # One call per step: the per-step spread is the per-call spread; Welch's t from scipy.
        t = stats.ttest_ind(b, a, equal_var=False).statistic
        assert row.significant == (abs(t) > NOISE_STANDARD_ERRORS), name


def test_recorded_runs_json_and_gate_follow_the_rule(nsys_pair):
    dbs, raw = nsys_pair
    result = CliRunner().invoke(app, ["diff", str(dbs[0]), str(dbs[1]), "--format", "json", "--limit", "0", "--fail-above", "10%"])
    payload = json.loads(result.stdout)
    assert payload["headline"]["lines"][0].endswith("compared per step (40 and 64 steps)")
    faster = payload["headline"]["step_change_pct"] < -10  # what grew inside faster steps does not gate
    expected_regressions = set()
    for entry in payload["entries"]:
        a, b = raw[0][entry["name"]], raw[1][entry["name"]]
        t = stats.ttest_ind(b, a, equal_var=False).statistic
        if t > NOISE_STANDARD_ERRORS and _pct(sum(a) / 40, sum(b) / 64) > 10 and entry["base_share_pct"] >= 1 and not faster:
            expected_regressions.add(entry["name"])
    assert {e["name"] for e in payload["entries"] if e["regression"]} == expected_regressions
    assert result.exit_code == (1 if expected_regressions or payload["gate"]["step_regression"] else 0)


def _cut_capture(source: Path, out: Path, share: float) -> int:
    """A copy of an nsys export holding only what started before `share` of its kernel window."""
    shutil.copyfile(source, out)
    with sqlite3.connect(out) as con:
        lo, hi = con.execute("SELECT min(start), max(start) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()
        cut = lo + int(share * (hi - lo))
        for (table,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
            if "start" in [c[1] for c in con.execute(f"PRAGMA table_info({table})")]:
                con.execute(f"DELETE FROM {table} WHERE start >= ?", [cut])
    return cut


def _kernels(export: Path) -> dict[str, list[int]]:
    with sqlite3.connect(export) as con:
        rows = con.execute(
            'SELECT s.value, k."end" - k.start FROM CUPTI_ACTIVITY_KIND_KERNEL AS k JOIN StringIds AS s ON s.id = k.demangledName'
        ).fetchall()
    kernels = defaultdict(list)
    for name, duration in rows:
        kernels[name].append(duration)
    return kernels


def test_a_longer_capture_alone_does_not_fire_the_gate(tmp_path):
    short = tmp_path / "short.sqlite"
    _cut_capture(H100, short, 0.6)
    dbs = [_convert(short, tmp_path / "short.duckdb"), _convert(H100, tmp_path / "full.duckdb")]
    raw = [_kernels(short), _kernels(H100)]
    result = CliRunner().invoke(app, ["diff", str(dbs[0]), str(dbs[1]), "--fail-above", "5%", "--format", "json", "--limit", "0"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["headline"]["per_step"] is False and "compared per window" in payload["headline"]["lines"][0]
    kernels = {e["name"]: e for e in payload["entries"] if e["level"] == "kernel"}
    grown = 0
    for name, entry in kernels.items():
        a, b = raw[0].get(name, []), raw[1][name]
        assert (entry["calls_base"], entry["calls_new"]) == (len(a), len(b))
        assert entry["per_step_change_pct"] is None
        if a:
            assert entry["per_call_change_pct"] == pytest.approx(_pct(sum(a) / len(a), sum(b) / len(b)), abs=1e-9)
            grown += _pct(sum(a), sum(b)) > 5  # what a comparison of window totals would call a regression
    assert grown >= 20
    # Ops: ", op_id = N" is new on every call; under their normalised names both captures share them.
    ops = [e for e in payload["entries"] if e["level"] == "op"]
    assert not [e for e in ops if "op_id" in e["name"]]
    with sqlite3.connect(H100) as con:
        mm_calls = con.execute("SELECT count(*) FROM NVTX_EVENTS WHERE text = 'aten::mm' OR text LIKE 'aten::mm, %'").fetchone()[0]
    (mm,) = [e for e in ops if e["name"] == "aten::mm"]
    assert mm["calls_new"] == mm_calls and mm["calls_base"] > 0


def test_runs_without_steps_compare_per_call_and_say_so(tmp_path):
    dbs = [_convert(trace, tmp_path / f"{trace.stem}.duckdb") for trace in KINETO_PAIR]
    raw = []
    for trace in KINETO_PAIR:
        with gzip.open(trace, "rt") as f:
            events = json.load(f)["traceEvents"]
        ops = defaultdict(list)
        for e in events:
            if e.get("cat") == "cpu_op":
                ops[e["name"]].append(e["dur"] * 1000)
        raw.append(ops)
    result = CliRunner().invoke(app, ["diff", str(dbs[0]), str(dbs[1]), "--limit", "0"])
    lines = result.output.splitlines()
    assert (
        lines[0]
        == "diff tiny_cnn_30_inferences.json.duckdb -> tiny_cnn_50_inferences.json.duckdb: compared per window: without >= 2 steps on both sides, each run first to last span"
    )
    assert lines[1] == "  steps of a trace without ProfilerStep#N ranges: convert --step-ranges REGEX"
    result_rows = diff_databases(*dbs, Gate(fail_above_pct=5.0))
    rows = result_rows.rows
    assert not result_rows.headline.per_step
    assert {r.basis for r in rows} == {"call"}  # 50 against 30 calls: within the factor of 2
    assert {r.name for r in rows} == set(raw[0]) | set(raw[1])
    for row in rows:
        a, b = raw[0][row.name], raw[1][row.name]
        assert (row.calls_base, row.calls_new) == (len(a), len(b))
        assert len(b) * 3 == len(a) * 5  # 50 against 30 inferences
        assert (row.per_step_ns_base, row.per_step_change_pct) == (None, None)
        assert row.per_call_change_pct == pytest.approx(_pct(sum(a) / len(a), sum(b) / len(b)), abs=1e-6)
        if len(a) >= 2 and len(b) >= 2 and (math.fsum(a) and row.per_call_change_pct):
            assert row.significant == (abs(stats.ttest_ind(b, a, equal_var=False).statistic) > NOISE_STANDARD_ERRORS), row.name
    assert result.exit_code == (1 if result_rows.failed else 0)


def test_normalize_name_strips_the_per_instance_details_torch_appends():
    # torch's getNvtxStr: name[, seq = N][, op_id = N][, sizes = [...]][, input_op_ids = [...]]
    assert normalize_name("aten::mm, seq = 12, op_id = 345, sizes = [[8, 16], [16, 4]], input_op_ids = [(344, 0)]") == "aten::mm"
    assert normalize_name("aten::mul, op_id = 314339") == "aten::mul"
    assert normalize_name("aten::add_, sizes = [[2], []]") == "aten::add_"
    assert normalize_name("autograd::engine::evaluate_function: AddmmBackward0") == "autograd::engine::evaluate_function: AddmmBackward0"
    assert normalize_name("xsp.layer:3:features.3:Conv2d") == "xsp.layer:3:features.3:Conv2d"
    import duckdb

    with sqlite3.connect(H100) as con:
        texts = [t for (t,) in con.execute("SELECT DISTINCT text FROM NVTX_EVENTS WHERE text IS NOT NULL")]
    duck = duckdb.connect()
    install_normalize_macro(duck)
    duck.execute("CREATE TABLE t AS SELECT unnest(?) AS name", [texts])
    in_sql = dict(duck.execute("SELECT name, xsp_normalized_name(name) FROM t").fetchall())
    assert in_sql == {t: normalize_name(t) for t in texts}
    assert len(texts) == 16_582 and len(set(in_sql.values())) == 176  # every op_id its own text; 176 names


def test_compare_runs_without_inferences_compares_per_call(tmp_path):
    from xsp_trace.analyze.session import AnalysisOptions, open_session, run_analysis

    short = tmp_path / "short.sqlite"
    _cut_capture(H100, short, 0.6)
    both = tmp_path / "both.duckdb"
    convert_files([short, H100], both, ConvertOptions())
    raw = [_kernels(short), _kernels(H100)]
    rows = run_analysis(open_session(both, AnalysisOptions(compare=(1, 2))), "compare_runs").records()
    assert {r["item"] for r in rows} == set(raw[1])
    for row in rows:
        a, b = raw[0].get(row["item"], []), raw[1][row["item"]]
        assert (row["base_calls"] or 0, row["other_calls"]) == (len(a), len(b))
        assert (row["base_ms"], row["other_ms"]) == (None, None)  # no inferences: no per-inference figure
        assert row["other_ms_per_call"] == round(sum(b) / len(b) / 1e6, 6)
        if a:
            assert row["per_call_ratio"] == round((sum(b) / len(b)) / (sum(a) / len(a)), 4)
