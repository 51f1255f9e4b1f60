"""Steps from every format, against the raw traces.

- kineto_2021_profiler_step_operator: two real ResNet-50 training runs (DataLoader num_workers 0
  and 4) recorded by the 2021 Kineto, whose ProfilerStep#N are `Operator` events: the steps equal
  the ProfilerStep events of the raw JSON, a ProfilerStep recorded twice (an annotation around the
  operator, as later Kineto writes it, or a copy on another thread) is still one step, and `diff`
  of the two runs compares per step.
- `convert --step-ranges REGEX`: on the nsys capture of nsys_2022_cpu_tiny_cnn_40_vs_64_steps the
  NVTX ranges it names are the steps, equal to the ranges of NVIDIA's own sqlite export; on the
  2021 trace, operator ranges without a number are numbered in order. A bad or empty regex, and
  one naming no range, are one line and exit 2.
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
import sqlite3
import subprocess
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from conftest import require_nsys
from xsp_trace.cli import app

pytestmark = pytest.mark.slow  # real traces

DATA = Path(__file__).parent / "data"
RUNS_2021 = [DATA / "kineto_2021_profiler_step_operator" / f"tb_plugin_resnet50_num_workers_{n}.json.gz" for n in (0, 4)]
NSYS_40_STEPS = DATA / "nsys_2022_cpu_tiny_cnn_40_vs_64_steps" / "tiny_cnn_ML_40_steps.nsys-rep"


def _invoke(*args: object):
    return CliRunner().invoke(app, [str(a) for a in args])


def _convert(trace: Path, out: Path, *options: str) -> Path:
    result = _invoke("convert", trace, "-o", out, "-q", *options)
    assert result.exit_code == 0, result.output
    return out


def _raw_events(trace: Path) -> list[dict]:
    with gzip.open(trace, "rt") as f:
        return json.load(f)["traceEvents"]


def _raw_ranges(events: list[dict], name: re.Pattern) -> list[tuple[int, int, int]]:
    """(pid, start ns, end ns) of the complete events whose name matches, in start order (2021 ts
    and dur are integer us)."""
    return sorted((int(e["pid"]), e["ts"] * 1000, (e["ts"] + e["dur"]) * 1000) for e in events if e.get("ph") == "X" and name.search(e["name"]))


def _steps(db: Path) -> list[tuple]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute("SELECT iteration, pid, start_ns, end_ns, source FROM steps ORDER BY start_ns").fetchall()


PROFILER_STEP = re.compile(r"^ProfilerStep#(\d+)$")


@pytest.fixture(scope="module")
def converted_2021(tmp_path_factory):
    work = tmp_path_factory.mktemp("steps_2021")
    return [_convert(trace, work / f"{trace.name}.duckdb") for trace in RUNS_2021]


@pytest.mark.parametrize("index", [0, 1], ids=[p.name for p in RUNS_2021])
def test_profiler_steps_recorded_as_operators_are_the_steps(converted_2021, index):
    events = _raw_events(RUNS_2021[index])
    raw = [(e["cat"], e["name"], e["ts"], e["dur"]) for e in events if PROFILER_STEP.match(str(e.get("name")))]
    assert {cat for cat, *_ in raw} == {"Operator"} and len(raw) == 6  # the 2021 format, six active steps
    expected = [(int(PROFILER_STEP.match(name)[1]), ts * 1000, (ts + dur) * 1000) for _, name, ts, dur in raw]
    steps = _steps(converted_2021[index])
    assert [(it, start, end) for it, _, start, end, _ in steps] == sorted(expected, key=lambda s: s[1])
    assert {source for *_, source in steps} == {"iteration range"}
    with duckdb.connect(str(converted_2021[index]), read_only=True) as con:
        # The profiler's range, not an operator: kept out of the op tables.
        assert con.execute("SELECT DISTINCT kind FROM spans WHERE name LIKE 'ProfilerStep#%'").fetchall() == [("annotation",)]
        # Every kernel launched in the window of a step belongs to it (CPU work of one thread: all of it).
        counts = con.execute(
            "SELECT st.iteration, count(*) FROM attribution AS a JOIN steps AS st USING (run_id, step_span_id) "
            "JOIN spans AS s ON s.run_id = a.run_id AND s.span_id = a.span_id WHERE s.kind = 'kernel' GROUP BY ALL ORDER BY 1"
        ).fetchall()
    assert [it for it, _ in counts] == [it for it, *_ in steps] and all(n > 1000 for _, n in counts)


def test_a_profiler_step_recorded_twice_is_one_step(converted_2021, tmp_path):
    """Each ProfilerStep#N of the real trace also as a user_annotation around it (the later Kineto
    category) and as a cpu_op copy on another thread of the process: still one step per N, same
    bounds."""
    events = _raw_events(RUNS_2021[0])
    copies = []
    for e in events:
        if PROFILER_STEP.match(str(e.get("name"))):
            copies.append({**e, "cat": "user_annotation", "ts": e["ts"] - 1, "dur": e["dur"] + 2})
            copies.append({**e, "cat": "cpu_op", "tid": "1"})
    assert len(copies) == 12
    trace = tmp_path / "twice.json"
    trace.write_text(json.dumps({"traceEvents": events + copies}))
    steps = _steps(_convert(trace, tmp_path / "twice.duckdb"))
    original = _steps(converted_2021[0])
    assert len(steps) == 6
    assert [(it, start + 1000, end - 1000) for it, _, start, end, _ in steps] == [(it, start, end) for it, _, start, end, _ in original]


def test_diff_of_two_2021_runs_compares_per_step(converted_2021):
    """Before, both runs had no steps and diff compared per call; now per step: the steps got faster
    (num_workers 0 -> 4), and the ops that grew inside them do not fail the gate (exit 0)."""
    result = _invoke("diff", *converted_2021)
    first = result.output.splitlines()[0]
    assert first.endswith("compared per step (6 and 6 steps)"), first
    assert "per window" not in result.output and "step time: median 176.27 -> 126.55 ms (-28.2 %)" in result.output
    assert result.exit_code == 0, result.output


def test_step_ranges_without_numbers_are_numbered_in_order(converted_2021, tmp_path):
    """`Optimizer.step#SGD.step` (an Operator with no integer in its name): the steps in start order from 0."""
    db = _convert(RUNS_2021[0], tmp_path / "optimizer.duckdb", "--step-ranges", r"^Optimizer\.step#")
    expected = _raw_ranges(_raw_events(RUNS_2021[0]), re.compile(r"^Optimizer\.step#"))
    assert len(expected) == 6
    assert _steps(db) == [(i, pid, start, end, "iteration range") for i, (pid, start, end) in enumerate(expected)]


def test_step_ranges_name_nvtx_steps(tmp_path):
    """The 40-step nsys capture: its first layer's NVTX ranges (all named with index 0, so numbered
    in order) are the steps with --step-ranges, instead of its model ranges."""
    nsys = require_nsys()
    report = shutil.copyfile(NSYS_40_STEPS, tmp_path / NSYS_40_STEPS.name)
    export = tmp_path / "export.sqlite"
    subprocess.run(
        [nsys, "export", "--type", "sqlite", "--force-overwrite", "true", "--output", str(export), str(report)], check=True, capture_output=True
    )
    with sqlite3.connect(export) as con:
        ranges = con.execute(
            'SELECT e.start, e."end", coalesce(e.text, s.value) AS name FROM NVTX_EVENTS AS e LEFT JOIN StringIds AS s ON s.id = e.textId '
            "WHERE e.\"end\" IS NOT NULL AND name LIKE 'xsp.layer:0:%' ORDER BY e.start"
        ).fetchall()
        models = con.execute(
            "SELECT count(*) FROM NVTX_EVENTS AS e LEFT JOIN StringIds AS s ON s.id = e.textId WHERE coalesce(e.text, s.value) LIKE 'xsp.model:%'"
        ).fetchone()[0]
    assert len(ranges) == models == 40
    default = _steps(_convert(report, tmp_path / "default.duckdb"))
    assert len(default) == 40 and {source for *_, source in default} == {"model range"}
    steps = _steps(_convert(report, tmp_path / "layer0.duckdb", "--step-ranges", r"^xsp\.layer:0:"))
    assert [(it, start, end, source) for it, _, start, end, source in steps] == [
        (i, start, end, "iteration range") for i, (start, end, _) in enumerate(ranges)
    ]


@pytest.mark.parametrize(
    ("regex", "says"),
    [("a(", "--step-ranges 'a(' is not a regular expression (missing ): a()"), ("", "--step-ranges '' matches every range")],
)
def test_a_bad_step_ranges_regex_is_one_line(tmp_path, regex, says):
    result = _invoke("convert", RUNS_2021[0], "-o", tmp_path / "out.duckdb", "--step-ranges", regex)
    assert result.exit_code == 2, result.output
    assert result.output.count("\n") == 1 and result.output.startswith(f"xsp-trace: error: {says}"), result.output
    assert not (tmp_path / "out.duckdb").exists()


def test_step_ranges_naming_no_range_is_one_line(tmp_path):
    trace = DATA / "kineto_cpu_only" / "hta_cpu_only.json.gz"
    result = _invoke("convert", trace, "-o", tmp_path / "out.duckdb", "--step-ranges", "^no such range$")
    assert result.exit_code == 2, result.output
    assert result.output.count("\n") == 1, result.output
    assert result.output.startswith(f"xsp-trace: error: {trace}: no range is named by --step-ranges '^no such range$'"), result.output
