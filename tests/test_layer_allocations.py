"""Layer memory from allocation events: on the H100 Qwen trace (recorded with profile_memory and
with_modules), every nn.Module layer's allocated-memory change and peak rise equal what the raw
[memory] events say, computed here straight from the JSON."""

from __future__ import annotations

import bisect
import gzip
import json

import pytest

from conftest import DATA
from xsp_trace.analyze.session import AnalysisOptions, open_session, run_analysis
from xsp_trace.convert import ConvertOptions, convert_files

pytestmark = pytest.mark.slow  # real traces

TRACE = DATA / "kineto_2025_all_options_h100" / "tracelens_h100_qwen1.5_0.5b.json.gz"


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    db = tmp_path_factory.mktemp("alloc") / "qwen.duckdb"
    convert_files([TRACE], db, ConvertOptions(include_python_functions=True))
    con = open_session(db, AnalysisOptions(layer_ranges="modules"))
    return [r for r in run_analysis(con, "layer_allocations").records() if r["device_id"] == 0]


def _raw_expectation():
    with gzip.open(TRACE) as f:
        events = json.load(f)["traceEvents"]
    memory = sorted((e["ts"], e["args"]["Total Allocated"]) for e in events if e.get("name") == "[memory]" and e["args"].get("Device Id") == 0)
    times = [t for t, _ in memory]
    per_layer: dict[str, list[tuple[float, float]]] = {}
    for e in events:
        if e.get("cat") != "python_function" or not e["name"].startswith("nn.Module: "):
            continue
        name = e["name"].removeprefix("nn.Module: ")
        start, end = e["ts"], e["ts"] + e["dur"]
        before = bisect.bisect_left(times, start) - 1  # last event strictly before the start
        if before < 0:
            continue
        start_bytes = memory[before][1]
        last = bisect.bisect_right(times, end) - 1
        inside = [v for t, v in memory[before + 1 : last + 1]]
        per_layer.setdefault(name, []).append((memory[last][1] - start_bytes, max([start_bytes, *inside]) - start_bytes))
    return {name: (sum(n for n, _ in calls) / len(calls), sum(p for _, p in calls) / len(calls), len(calls)) for name, calls in per_layer.items()}


def test_layer_allocations_equal_the_raw_memory_events(rows):
    expected = _raw_expectation()
    got = {r["layer_name"]: r for r in rows if r["net_allocated_bytes"] is not None}
    # The modules preset takes the innermost nn.Module ranges as layers; each of them is checked.
    assert len(got) > 200 and set(got) <= set(expected)
    for name in got:
        net, peak, calls = expected[name]
        assert got[name]["calls"] == calls, name
        assert got[name]["net_allocated_bytes"] == pytest.approx(net, abs=0.1), name
        assert got[name]["peak_increase_bytes"] == pytest.approx(peak, abs=0.1), name


def test_a_linear_layer_leaves_its_output_allocated(rows):
    """Linear_0 (q_proj: 16 x 559 tokens -> 1024 bf16) leaves exactly its output tensor allocated."""
    linear = next(r for r in rows if r["layer_name"] == "Linear_0")
    assert linear["net_allocated_bytes"] == 16 * 559 * 1024 * 2
