"""`xsp-trace diff` on pairs whose difference we know because we made it, and its noise interval.

- known_cause_dataloader_sleep: the same training with and without a 3 ms sleep per item in a
  single-process DataLoader (4 items per step): without_sleep after with_sleep is an improvement
  (exit 0), with_sleep after without_sleep a regression (exit 1); the step-time change is the
  DataLoader's range leaving (joining) the critical path.
- diff_pair_slower_layer: features.3 sleeps 4 ms per call in slower_layer: a regression (exit 1)
  whose critical-path change is that range.
- diff_pair_same_run_twice: the identical script twice: no regression (exit 0).
- kineto_2021_profiler_step_operator: two real tb_plugin ResNet-50 runs (num_workers 0 -> 4), steps
  recorded as operators: the steps got faster, the ops that grew inside them do not fail the gate.
The step durations the assertions compare with are read from the raw JSON (ProfilerStep#N).
"""

from __future__ import annotations

import gzip
import itertools
import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from xsp_trace.analyze.diff import diff_databases
from xsp_trace.analyze.shift import rank_sum_counts, shift
from xsp_trace.cli import app

DATA = Path(__file__).parent / "data"
SLEEP = DATA / "known_cause_dataloader_sleep"
LAYER = DATA / "diff_pair_slower_layer"
TWICE = DATA / "diff_pair_same_run_twice"
RESNET = DATA / "kineto_2021_profiler_step_operator"
DATALOADER = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"


def _steps_ms(trace: Path) -> list[float]:
    with gzip.open(trace, "rt") as f:
        events = json.load(f)
    events = events["traceEvents"] if isinstance(events, dict) else events
    seen = {(e["name"], e["ts"]): e["dur"] / 1000 for e in events if e.get("name", "").startswith("ProfilerStep#") and e.get("ph") == "X"}
    return sorted(seen.values())


def _median(xs: list[float]) -> float:
    xs = sorted(xs)
    return (xs[(len(xs) - 1) // 2] + xs[len(xs) // 2]) / 2


def _diff(converted_path, base: Path, new: Path, *options: str):
    dbs = [converted_path(base), converted_path(new)]
    result = diff_databases(*dbs)
    cli = CliRunner().invoke(app, ["diff", str(dbs[0]), str(dbs[1]), "--format", "json", *options])
    return result, cli


def _check_step_time(result, base: Path, new: Path) -> None:
    a, b = _steps_ms(base), _steps_ms(new)
    h = result.headline
    assert h.per_step and (h.base_steps, h.new_steps) == (len(a), len(b)) == (6, 6)
    assert sorted(x / 1e6 for x in h.step_base) == pytest.approx(a, abs=1e-3)
    assert h.step_change_pct == pytest.approx(100 * (_median(b) - _median(a)) / _median(a), abs=0.05)


def _on_path(result, level: str, name: str) -> float:
    (row,) = [e for e in result.headline.by_level if (e.level, e.name) == (level, name)]
    return row.delta_ns / 1e6


@pytest.mark.parametrize("after_sleep", [True, False])
def test_dataloader_sleep_improves_one_way_and_regresses_the_other(converted_path, after_sleep):
    with_sleep, without_sleep = SLEEP / "with_sleep.json.gz", SLEEP / "without_sleep.json.gz"
    base, new = (with_sleep, without_sleep) if after_sleep else (without_sleep, with_sleep)
    result, cli = _diff(converted_path, base, new)
    _check_step_time(result, base, new)
    # 4 items x 3 ms of sleep per step: 12 ms at least, on the critical path in the DataLoader's range.
    sign = -1 if after_sleep else 1
    assert sign * result.headline.step_shift.estimate / 1e6 > 12
    assert result.headline.step_verdict(5.0) == ("improvement" if after_sleep else "regression")
    assert result.headline.by_level[0].name == DATALOADER and sign * _on_path(result, "range", DATALOADER) > 12
    assert result.headline.causes[0].name == "data_loading"  # analyses/step_causes: the loader's range
    assert cli.exit_code == (0 if after_sleep else 1), cli.output
    payload = json.loads(cli.stdout)
    assert payload["gate"]["step_regression"] is (not after_sleep)
    assert payload["rows_total"] == payload["rows_shown"] == len(payload["entries"])  # whole without --limit


def test_a_layer_made_slower_is_a_regression_named_on_the_path(converted_path):
    base, new = LAYER / "baseline.json.gz", LAYER / "slower_layer.json.gz"
    result, cli = _diff(converted_path, base, new)
    _check_step_time(result, base, new)
    assert result.headline.step_verdict(5.0) == "regression" and cli.exit_code == 1
    # The injected 4 ms per call (one call per step) is what the path gained, in the layer's range.
    top = max((e for e in result.headline.by_level if e.level == "range"), key=lambda e: e.delta_ns)
    assert top.name == "features.3" and 4.0 < top.delta_ns / 1e6 < 5.0


def test_the_same_run_twice_is_no_regression(converted_path):
    base, new = TWICE / "run_1.json.gz", TWICE / "run_2.json.gz"
    result, cli = _diff(converted_path, base, new)
    _check_step_time(result, base, new)
    assert result.headline.step_verdict(5.0) == "within noise" and not result.failed
    assert cli.exit_code == 0, cli.output
    limited = json.loads(
        CliRunner().invoke(app, ["diff", str(converted_path(base)), str(converted_path(new)), "--format", "json", "--limit", "2"]).stdout
    )
    assert (limited["rows_shown"], limited["rows_total"]) == (2, json.loads(cli.stdout)["rows_total"])


@pytest.mark.slow  # two real ResNet-50 traces, 2 MB
def test_faster_steps_with_batched_copies_do_not_fail_the_gate(converted_path):
    base, new = RESNET / "tb_plugin_resnet50_num_workers_0.json.gz", RESNET / "tb_plugin_resnet50_num_workers_4.json.gz"
    result, cli = _diff(converted_path, base, new)
    _check_step_time(result, base, new)
    assert result.headline.step_change_pct < -20
    assert _on_path(result, "op", DATALOADER) < -40  # it left the path: -45 ms per step (an op in 2021's format)
    copy = next(r for r in result.rows if (r.level, r.name) == ("op", "aten::copy_"))
    assert copy.basis == "step" and not copy.regression
    grew = [r for r in result.rows if r.significant and (r.change_pct or 0) > 5 and r.calls_base >= 10]
    assert grew and not any(r.regression for r in result.rows)  # ops that grew inside faster steps
    assert cli.exit_code == 0, cli.output
    table = CliRunner().invoke(
        app, ["diff", str(converted_path(base)), str(converted_path(new)), "--level", "kernel", "--limit", "0"], env={"COLUMNS": "120"}
    )
    assert table.output.splitlines()[1].startswith("step time: median 176.27 -> 126.55 ms (-28.2 %)")
    rows = table.output[table.output.index("Entries") :].splitlines()
    assert "dgrad_engine" in table.output and "(int, int" not in table.output  # names as analyze shortens them
    kernel_rows = [line for line in rows if line.startswith("kernel ")]
    assert len(kernel_rows) == 68 and all(len(line) <= 120 for line in kernel_rows)  # one line per row
    full = CliRunner().invoke(app, ["diff", str(converted_path(base)), str(converted_path(new)), "--level", "kernel", "--full-names", "--wide"])
    assert "void cudnn::detail::dgrad_engine<float, 512, 6, 5, 3, 3, 3, false>(int, int" in full.output


def test_rank_sum_counts_equal_counting_every_ordering():
    for n, m in ((2, 2), (3, 4), (6, 6)):
        counts = [0] * (n * m + 1)
        for picked in itertools.combinations(range(n + m), n):  # positions of the base sample
            counts[sum(sum(1 for j in range(n + m) if j not in picked and j < i) for i in picked)] += 1
        assert rank_sum_counts(n, m) == counts and sum(counts) == math.comb(n + m, n)


def test_shift_interval_is_the_textbook_one():
    # n = m = 6 at 95 %: the critical value of U is 5 (tables), so the interval is [d(6), d(31)].
    base, new = [float(x) for x in range(6)], [float(10 + 2 * x) for x in range(6)]
    diffs = sorted(b - a for a in base for b in new)
    s = shift(base, new)
    assert (s.low, s.high) == (diffs[5], diffs[30]) and s.beyond_noise and s.confidence == pytest.approx(1 - 2 * 19 / 924)
    # 2 against 2 steps cannot reach 95 %: the whole range, and the confidence it has.
    tiny = shift([1.0, 2.0], [3.0, 5.0])
    assert (tiny.low, tiny.high, tiny.confidence) == (1.0, 4.0, pytest.approx(2 / 3))
