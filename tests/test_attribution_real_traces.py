"""What every kernel is charged to -- step, phase, forward op, layer -- on real traces recorded by
others, against references computed here straight from the raw Kineto JSON (plain json, no
project code): the step windows of the CPU ProfilerStep#N annotations, the launching runtime
call of each kernel by its correlation id, torch's own autograd sequence numbers.
"""

from __future__ import annotations

import gzip
import json
import statistics
from collections import defaultdict
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import pytest

from xsp_trace.analyze.session import AnalysisOptions, prepare, run_analysis
from xsp_trace.convert import ConvertOptions, convert_files

pytestmark = pytest.mark.slow  # real traces

DATA = Path(__file__).parent / "data"
RANK3 = DATA / "kineto_2022_integer_us_rank3" / "hta_a100_rank3_of_8_2022.json.gz"
H100 = DATA / "kineto_2025_all_options_h100" / "tracelens_h100_qwen1.5_0.5b.json.gz"
MI250 = DATA / "kineto_rocm_mi250" / "hta_mi250_rocm62_minitoy.json.gz"
V100_GRAPHS = DATA / "kineto_cuda_graphs_v100_2022" / "hta_v100_cuda_graphs_rank1_2022.json.gz"

RUNTIME_CATEGORIES = {"cuda_runtime", "runtime", "cuda_driver"}
KERNEL_CATEGORIES = {"kernel"}


def _events(path: Path) -> list[dict]:
    with gzip.open(path, "rt") as f:
        return [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]


def _ns(us) -> int:
    """Microseconds as written (int, or float with 3 decimals) to integer ns, exactly."""
    return int((Decimal(str(us)) * 1000).to_integral_value(ROUND_HALF_UP))


def _cpu_steps(events):
    """(pid, tid, start_ns, end_ns, N) of the CPU ProfilerStep#N annotations, in time order."""
    return sorted(
        (e["pid"], e["tid"], _ns(e["ts"]), _ns(e["ts"]) + _ns(e["dur"]), int(e["name"].split("#")[1]))
        for e in events
        if e.get("cat", "").lower() == "user_annotation" and e["name"].startswith("ProfilerStep#")
    )


def _kernels_with_launch(events):
    """(kernel event, its launching runtime event) for every kernel with a launch in the trace."""
    runtime = {}
    for e in events:
        if e.get("cat", "").lower() in RUNTIME_CATEGORIES and "correlation" in e.get("args", {}):
            runtime[e["args"]["correlation"]] = e
    return [(k, runtime.get(k["args"].get("correlation"))) for k in events if e_cat(k) in KERNEL_CATEGORIES]


def e_cat(e) -> str:
    return e.get("cat", "").lower()


def _session(path: Path, tmp_path_factory, **convert_options):
    out = tmp_path_factory.mktemp("attribution") / "out.duckdb"
    convert_files([path], out, ConvertOptions(**convert_options))
    import duckdb

    con = duckdb.connect(str(out), read_only=True)
    prepare(con, AnalysisOptions())
    return con


@pytest.fixture(scope="module")
def rank3(tmp_path_factory):
    return _session(RANK3, tmp_path_factory), _events(RANK3)


def test_rank3_every_kernel_launched_in_a_step_window_is_charged_to_that_step(rank3):
    con, events = rank3
    steps = _cpu_steps(events)
    assert len(steps) == 6
    expected = {n: [0, 0, 0] for *_, n in steps}  # kernels, kernel ns, launched from another thread
    for kernel, launch in _kernels_with_launch(events):
        if launch is None:
            continue
        t = _ns(launch["ts"])
        for pid, tid, start, end, n in steps:
            if launch["pid"] == pid and start <= t < end:
                expected[n][0] += 1
                expected[n][1] += _ns(kernel["dur"])
                expected[n][2] += launch["tid"] != tid
    got = {r["iteration"]: r for r in run_analysis(con, "step_breakdown").records()}
    assert sorted(got) == sorted(expected)
    for n, (kernels, kernel_ns, other_thread) in expected.items():
        assert got[n]["kernels"] == kernels
        assert got[n]["gpu_kernel_ms"] == pytest.approx(kernel_ns / 1e6, abs=1e-6)
        assert got[n]["kernels_other_threads"] == other_thread
    # The autograd thread launched most kernels; before cross-thread attribution none counted.
    assert sum(v[2] for v in expected.values()) > 5000
    # Per inference: ~75 ms of GPU work, not the 34.6 ms of the launching thread alone.
    (model_gpu,) = run_analysis(con, "model_gpu_aggregates").records()
    assert model_gpu["kernels_per_inference"] == pytest.approx(sum(v[0] for v in expected.values()) / 6)
    assert 70 < model_gpu["gpu_latency_ms"] < 80


def _trimmed_mean(values, frac=0.2):
    """rai-project/evaluation's TrimmedMean (XSP's code), written out independently."""
    v = sorted(values)
    if len(v) < 3:
        return sum(v) / len(v)
    if len(v) == 3:
        return v[1]
    cut = int(len(v) * frac)
    # floor(n * frac) off each tail, but at least the largest value off the top.
    return statistics.fmean(v[cut : len(v) - max(cut, 1)])


def test_rank3_backward_thread_kernel_is_in_kernel_info(rank3):
    con, events = rank3
    name = next(k["name"] for k in events if e_cat(k) == "kernel" and "split_embedding_backward" in k["name"])
    durations = [_ns(k["dur"]) for k in events if e_cat(k) == "kernel" and k["name"] == name]
    assert len(durations) == 6
    row = next(r for r in run_analysis(con, "kernel_info").records() if r["name"] == name)
    assert row["calls_per_inference"] == 1
    assert row["latency_ms"] == pytest.approx(_trimmed_mean(durations) / 1e6, abs=1e-3)


def _backward_references(events):
    """Per backward op (Fwd thread id > 0): the start of the forward op with its sequence number --
    same process, not a backward op, started no later; the latest -- as torch numbers them."""
    forward = defaultdict(list)
    backward = []
    for e in events:
        args = e.get("args", {})
        if "Sequence number" not in args or e_cat(e) not in {"cpu_op", "operator"}:
            continue
        key = (e["pid"], int(args["Sequence number"]))
        if int(args.get("Fwd thread id", 0) or 0) > 0:
            backward.append((e, key))
        else:
            forward[key].append(_ns(e["ts"]))
    refs = {}
    for e, key in backward:
        starts = [t for t in forward.get(key, []) if t <= _ns(e["ts"])]
        refs[(e["tid"], _ns(e["ts"]), e["name"])] = max(starts) if starts else None
    return refs


@pytest.mark.parametrize("trace", [RANK3, MI250], ids=["rank3_a100", "mi250"])
def test_backward_ops_find_their_forward_op_by_sequence_number(trace, tmp_path_factory):
    events = _events(trace)
    refs = _backward_references(events)
    assert len(refs) >= 8
    con = _session(trace, tmp_path_factory)
    rows = con.execute(
        """SELECT b.tid, b.start_ns, b.name, f.start_ns, att.phase
           FROM attribution AS att
           JOIN spans AS b ON b.run_id = att.run_id AND b.span_id = att.span_id
           LEFT JOIN spans AS f ON f.run_id = att.run_id AND f.span_id = att.forward_span_id
           JOIN span_args AS a ON a.run_id = b.run_id AND a.span_id = b.span_id AND a.key = 'Fwd thread id'
           WHERE TRY_CAST(a.value AS BIGINT) > 0"""
    ).fetchall()
    got = {(tid, start, name): (fwd, phase) for tid, start, name, fwd, phase in rows}
    assert set(got) == set(refs)
    mismatched = [k for k, ref in refs.items() if got[k][0] != ref]
    assert not mismatched
    assert {phase for _, phase in got.values()} == {"backward"}


def test_rank3_backward_kernels_take_the_backward_phase(rank3):
    con, events = rank3
    # Kernels launched by a runtime call inside an autograd engine op, found on the raw timeline.
    engine = defaultdict(list)
    for e in events:
        if e_cat(e) == "cpu_op" and e["name"].startswith("autograd::engine::evaluate_function: "):
            engine[e["tid"]].append((_ns(e["ts"]), _ns(e["ts"]) + _ns(e["dur"])))
    in_engine = []
    for kernel, launch in _kernels_with_launch(events):
        if launch is not None and any(s <= _ns(launch["ts"]) < e for s, e in engine.get(launch["tid"], [])):
            in_engine.append((_ns(kernel["ts"]), kernel["name"]))
    phases = dict(
        ((start, name), phase)
        for start, name, phase in con.execute(
            """SELECT k.start_ns, k.name, a.phase FROM spans k JOIN attribution a USING (run_id, span_id)
           WHERE k.kind = 'kernel'"""
        ).fetchall()
    )
    assert len(in_engine) > 5000
    assert {phases[k] for k in in_engine} == {"backward"}


@pytest.mark.parametrize("trace", [H100, MI250], ids=["h100", "mi250"])
def test_model_info_reports_the_cpu_profiler_steps_only(trace, tmp_path_factory):
    events = _events(trace)
    steps = _cpu_steps(events)
    gpu_copies = [e for e in events if e_cat(e) == "gpu_user_annotation" and e["name"].startswith("ProfilerStep#")]
    assert gpu_copies, "the fixture carries GPU copies of its steps"
    con = _session(trace, tmp_path_factory)
    (info,) = run_analysis(con, "model_info").records()
    durations = sorted(end - start for _, _, start, end, _ in steps)
    assert info["inferences"] == len(steps)
    assert info["median_ms"] == pytest.approx(statistics.median(durations) / 1e6, abs=1e-6)
    rows = run_analysis(con, "step_breakdown").records()
    assert [r["iteration"] for r in rows] == [n for *_, n in steps]
    assert [r["step_ms"] for r in rows] == pytest.approx([(e - s) / 1e6 for _, _, s, e, _ in steps], abs=1e-6)


def test_layer_view_from_module_events_charges_kernels_to_the_innermost_module(tmp_path_factory):
    """H100 Qwen trace recorded with with_modules: nn.Module python_function events as layers."""
    events = _events(H100)
    modules = [e for e in events if e_cat(e) == "python_function" and e["name"].startswith("nn.Module: ")]
    (step,) = _cpu_steps(events)

    def contains(outer, inner):
        return (
            outer is not inner
            and outer["tid"] == inner["tid"]
            and _ns(outer["ts"]) <= _ns(inner["ts"])
            and _ns(inner["ts"]) + _ns(inner["dur"]) <= _ns(outer["ts"]) + _ns(outer["dur"])
        )

    leaves = [m for m in modules if not any(contains(m, o) for o in modules)]
    expected: dict[str, int] = defaultdict(int)
    for kernel, launch in _kernels_with_launch(events):
        if launch is None or not (step[2] <= _ns(launch["ts"]) < step[3]):
            continue
        t = _ns(launch["ts"])
        holding = [m for m in modules if m["tid"] == launch["tid"] and _ns(m["ts"]) <= t < _ns(m["ts"]) + _ns(m["dur"])]
        if holding:
            inner = max(holding, key=lambda m: (_ns(m["ts"]), -_ns(m["dur"])))
            if any(inner is leaf for leaf in leaves):
                expected[inner["name"].removeprefix("nn.Module: ")] += _ns(kernel["dur"])
    out = tmp_path_factory.mktemp("modules") / "out.duckdb"
    convert_files([H100], out, ConvertOptions(include_python_functions=True))
    import duckdb

    con = duckdb.connect(str(out), read_only=True)
    prepare(con, AnalysisOptions(layer_ranges="modules"))
    got = {r["layer_name"]: r["gpu_latency_ms"] for r in run_analysis(con, "layer_gpu_aggregates").records() if r["layer_name"] is not None}
    assert len(expected) > 50
    assert set(got) == set(expected)
    for name, ns in expected.items():
        assert got[name] == pytest.approx(ns / 1e6, abs=1e-4), name
    leaf_types = {leaf["name"].removeprefix("nn.Module: ").rsplit("_", 1)[0] for leaf in leaves}
    assert {r["layer_type"] for r in run_analysis(con, "layer_latency").records()} == leaf_types
    # --layer-depth 3: the modules with two enclosing modules (decoder layer's attention, MLP, norms).
    level3 = {m["name"].removeprefix("nn.Module: ") for m in modules if sum(contains(o, m) for o in modules) == 2}
    deep = duckdb.connect(str(out), read_only=True)
    prepare(deep, AnalysisOptions(layer_ranges="modules", layer_depth=3))
    assert {r["layer_name"] for r in run_analysis(deep, "layer_latency").records()} == level3
    assert any(name.startswith("Qwen2MLP_") for name in level3)


def test_layer_view_from_hash_annotations(rank3):
    """TorchRec-style "## name ##" record_function ranges of the rank-3 trace as layers (outermost)."""
    con, events = rank3
    ranges = [e for e in events if e_cat(e) == "user_annotation" and e["name"].startswith("## ")]
    durations: dict[str, list[int]] = defaultdict(list)
    for e in ranges:
        if not any(
            o is not e and o["tid"] == e["tid"] and _ns(o["ts"]) <= _ns(e["ts"]) and _ns(e["ts"]) + _ns(e["dur"]) <= _ns(o["ts"]) + _ns(o["dur"])
            for o in ranges
        ):
            durations[e["name"].strip("# ")].append(_ns(e["dur"]))
    import duckdb

    path = con.execute("SELECT path FROM duckdb_databases() WHERE database_name = current_database()").fetchone()[0]
    view = duckdb.connect(path, read_only=True)
    prepare(view, AnalysisOptions(layer_ranges="hash-ranges", layer_depth=1))
    rows = {r["layer_name"]: r for r in run_analysis(view, "layer_latency").records()}
    assert set(rows) == set(durations)
    for name, values in durations.items():
        calls = len(values) // 6
        assert rows[name]["calls_per_inference"] == calls, name
        if calls == 1:
            assert rows[name]["latency_ms"] == pytest.approx(_trimmed_mean(values) / 1e6, abs=1e-6), name


def test_cuda_graph_replays_are_charged_to_the_step_and_phase_of_their_launch(tmp_path_factory):
    """V100 trace with torch.compile CUDA graphs: 12 cudaGraphLaunch calls, the backward ones on
    the autograd thread. Every replayed kernel counts in the step whose window holds its launch."""
    events = _events(V100_GRAPHS)
    steps = _cpu_steps(events)
    expected: dict[int, list[int]] = {n: [0, 0] for *_, n in steps}
    backward_launch_kernels = 0
    for kernel, launch in _kernels_with_launch(events):
        if launch is None or launch["name"] != "cudaGraphLaunch":
            continue
        t = _ns(launch["ts"])
        for pid, tid, start, end, n in steps:
            if launch["pid"] == pid and start <= t < end:
                expected[n][0] += 1
                expected[n][1] += _ns(kernel["dur"])
                backward_launch_kernels += launch["tid"] != tid
    assert sum(v[0] for v in expected.values()) > 4000 and backward_launch_kernels > 2000
    con = _session(V100_GRAPHS, tmp_path_factory)
    got = {
        n: [k, ns]
        for n, k, ns in con.execute(
            """SELECT st.iteration, count(*), sum(k.end_ns - k.start_ns)
           FROM spans k JOIN attribution a USING (run_id, span_id)
           JOIN steps st ON st.run_id = a.run_id AND st.step_span_id = a.step_span_id
           JOIN launches l ON l.run_id = k.run_id AND l.gpu_span_id = k.span_id
           JOIN spans api ON api.run_id = l.run_id AND api.span_id = l.api_span_id
           WHERE k.kind = 'kernel' AND api.name = 'cudaGraphLaunch' GROUP BY ALL"""
        ).fetchall()
    }
    assert got == {n: v for n, v in expected.items() if v[0]}
    phases = dict(
        con.execute(
            """SELECT api.tid = st.tid, list(DISTINCT a.phase) FROM spans k JOIN attribution a USING (run_id, span_id)
           JOIN steps st ON st.run_id = a.run_id AND st.step_span_id = a.step_span_id
           JOIN launches l ON l.run_id = k.run_id AND l.gpu_span_id = k.span_id
           JOIN spans api ON api.run_id = l.run_id AND api.span_id = l.api_span_id
           WHERE k.kind = 'kernel' AND api.name = 'cudaGraphLaunch' GROUP BY ALL"""
        ).fetchall()
    )
    assert phases[False] == ["backward"]  # replays launched by the autograd thread


def test_attribution_written_in_span_id_ranges_equals_one_range(converted_path, tmp_path, monkeypatch):
    """insert_attribution writes one range of span ids per statement: ranges of 997 ids give every span
    exactly the row one range gives (no id skipped or written twice at a range's ends)."""
    import duckdb

    from xsp_trace.convert import correlate

    monkeypatch.setattr(correlate, "ATTRIBUTION_BATCH_SPANS", 997)
    out = tmp_path / "ranges.duckdb"
    convert_files([RANK3], out, ConvertOptions())
    con = duckdb.connect()
    con.execute(f"ATTACH '{out}' AS ranges (READ_ONLY)")
    con.execute(f"ATTACH '{converted_path(RANK3)}' AS one (READ_ONLY)")
    spans = con.execute("SELECT count(*) FROM one.spans").fetchall()[0][0]
    assert spans > 10 * 997  # many ranges
    assert con.execute("SELECT count(*), count(DISTINCT span_id) FROM ranges.attribution").fetchall() == [(spans, spans)]
    for a, b in [("ranges", "one"), ("one", "ranges")]:
        assert con.execute(f"SELECT count(*) FROM (FROM {a}.attribution EXCEPT ALL FROM {b}.attribution)").fetchall() == [(0,)]
    assert con.execute("SELECT count(*) FROM ranges.attribution WHERE step_span_id IS NOT NULL AND phase IS NOT NULL").fetchall()[0][0] > 0
