"""`analyze --what-if`: the step time predicted with some work changed (xsp_trace/analyze/critical_path/what_if.py).

Hand-made steps (the ones of tests/test_critical_path.py) with each rule form, the prediction worked
out by hand; on a real trace, no rule predicts exactly the measured latency of every step, and the
new critical path adds up to the predicted latency.
"""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from conftest import DATA
from support.handmade import Run, write
from support.steps import backward_step, event_step, pageable_step, sync_step
from xsp_trace.analyze.critical_path.walk import load_run, units
from xsp_trace.analyze.critical_path.what_if import parse_rule, predict
from xsp_trace.analyze.session import AnalysisOptions, open_session, run_analysis
from xsp_trace.cli import app
from xsp_trace.errors import InputError

runner = CliRunner()


def _predicted(tmp_path, run: Run, *rules: str) -> int:
    db = write(tmp_path / "t.duckdb", [run])
    con = open_session(db, AnalysisOptions(what_if=rules))
    result = run_analysis(con, "what_if")
    (row,) = result.rows
    record = dict(zip(result.columns, row, strict=True))
    assert record["latency_ns"] == 1000
    return record["predicted_ns"]


@pytest.mark.parametrize(
    "build,rules,expected",
    [
        (sync_step, (), 1000),
        # B 200 -> 100 ns: the sync returns 50 ns after B's new end (800), the step 50 ns later.
        (sync_step, ("kernel:^B$*0.5",), 900),
        # A 400 -> 100 ns: B keeps its 100 ns behind A on the stream (300 + 100 .. 600), sync 650, end 700.
        (sync_step, ("kernel:^A$=100ns",), 700),
        # The sync no longer waits and takes 0 ns: the thread is done at 180 + 50 ns, but the stream
        # still runs A and B (B 100 ns after A, as measured) until 900: the step ends with its GPU work.
        (sync_step, ("sync:cudaDeviceSynchronize=0",), 900),
        # aten::to's own 20 ns go; the blocking copy still waits for K and the copy: 990.
        (pageable_step, ("op:aten::to*0",), 990),
        # K twice as fast (390 -> 195 ns): the copy runs [505,555), the call returns at 605.
        (pageable_step, ("kernel:^K$*0.5",), 805),
        # All GPU work gone: K and the copy take 0 ns at 310 (K keeps its 60 ns queue after its launch);
        # the call (from 300) returns 50 ns after the copy, at 360; then 10 + 190 ns of CPU: 560.
        (pageable_step, ("gpu:.**0",), 560),
        # A twice as fast [100,300): B still waits for it over the event, [300,400); sync 450; end 1000 - 200.
        (event_step, ("kernel:^A$*0.5",), 800),
    ],
    ids=["no_rule", "scale_kernel", "set_kernel_duration", "sync_removed", "op_removed", "kernel_before_blocking_copy", "all_gpu_gone", "event_wait"],
)
def test_rule_forms_on_hand_made_steps(build, rules, expected, tmp_path):
    assert _predicted(tmp_path, build(), *rules) == expected


@pytest.mark.parametrize("text", ["bogus:x*2", "kernel:gemm", "kernel:(*0.5", "kernel:gemm*2ms", "op:x=fast"])
def test_a_rule_that_does_not_parse_is_one_line(text):
    with pytest.raises(InputError):
        parse_rule(text)
    result = runner.invoke(app, ["analyze", str(DATA / "critical_path_hta" / "cuda_event_sync.json.gz"), "--what-if", text])
    assert result.exit_code == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "--what-if" in lines[0]


def test_no_rule_predicts_the_measured_steps_of_a_real_trace(converted):
    con = converted(DATA / "kineto_2022_integer_us_rank3" / "hta_a100_rank3_of_8_2022.json.gz")
    from xsp_trace.analyze.session import prepare

    prepare(con, AnalysisOptions())
    run = load_run(con, 1)
    steps = [u for u in units(con) if u[2] is not None]
    assert len(steps) == 6
    for _, _, _, start, end, pid, tid in steps:
        latency, segments = predict(run, start, end, (pid, tid), [])
        assert latency == end - start
        faster, new_path = predict(run, start, end, (pid, tid), [parse_rule("kernel:.**0.5")])
        assert start < start + faster <= end and sum(s.end_ns - s.start_ns for s in new_path) == faster


def _backward_step() -> Run:
    """The step's thread calls backward ("## backward ##" [300,1800), its own op [300,350), then no
    child) while the autograd thread (tid 101) runs it: MulBackward0 [500,900) launches kernel G
    ([600,620) -> [700,1400)); aten::_local_scalar_dense [950,1700) waits in cudaStreamSynchronize
    [1000,1650) for G; the step's thread resumes at 1800, 100 ns after the worker's last op, and
    runs aten::add [1850,1950). aten::mul [100,200) runs before the backward."""
    run = backward_step(sync_op_start=950)
    run.span("op", "aten::add", 1850, 1950)
    return run


@pytest.mark.parametrize(
    "rules,expected",
    [
        ((), 2000),
        # G 700 -> 350 ns [700,1050) (80 ns after its launch); the sync returns 250 ns after it, at 1300;
        # _local_scalar_dense ends at 1350; the step's thread resumes 100 ns later (1450) and has
        # 50 + 100 + 50 ns left: 1650 (a thread-by-thread replay kept the wait's end: 2000).
        (("kernel:^G$*0.5",), 1650),
        # aten::mul gone as well: the wait begins at 250, so the autograd thread starts 150 ns later
        # (400) -- everything on it 100 ns earlier: G [600,950), sync returns at 1200, its last op ends
        # at 1250, the step's thread resumes at 1350 and ends at 1550.
        (("op:aten::mul*0", "kernel:^G$*0.5"), 1550),
    ],
    ids=["no_rule", "kernel_on_the_autograd_thread", "and_an_op_before_the_wait"],
)
def test_a_wait_for_another_thread_ends_when_its_replayed_work_does(rules, expected, tmp_path):
    db = write(tmp_path / "t.duckdb", [_backward_step()])
    result = run_analysis(open_session(db, AnalysisOptions(what_if=rules)), "what_if")
    (row,) = result.rows
    record = dict(zip(result.columns, row, strict=True))
    assert (record["latency_ns"], record["predicted_ns"]) == (2000, expected)


def test_a_wait_the_worker_interrupted_ends_at_that_point_of_its_work(tmp_path):
    """The autograd thread (tid 101) runs MulBackward0 [500,900) and AddBackward0 [1000,1700); at 1300,
    while AddBackward0 runs, the step's thread leaves its wait in "## backward ##" [300,1800) for
    AccumulateGrad [1300,1310) and waits again until 1800, 100 ns after the worker's last op.
    AddBackward0 gone: the first stretch of the wait ends where the worker now is at 1300 (1000), so
    AccumulateGrad runs [1000,1010); the worker ends at 1000, the step's thread resumes at
    max(1010 + 100, 1000 + 100) = 1110 and has 50 + 100 + 50 ns left: 1310 (with the first stretch
    kept at its measured length, 1610)."""
    run = Run(1)
    run.span("annotation", "ProfilerStep#1", 0, 2000, iteration=1)
    run.span("annotation", "## backward ##", 300, 1800)
    run.span("op", "aten::ones_like", 300, 350)
    run.span("op", "MulBackward0", 500, 900, tid=101)
    run.span("op", "AddBackward0", 1000, 1700, tid=101)
    run.span("op", "torch::autograd::AccumulateGrad", 1300, 1310)
    run.span("op", "aten::add", 1850, 1950)
    db = write(tmp_path / "t.duckdb", [run])
    result = run_analysis(open_session(db, AnalysisOptions(what_if=("op:AddBackward0*0",))), "what_if")
    (row,) = result.rows
    record = dict(zip(result.columns, row, strict=True))
    assert (record["latency_ns"], record["predicted_ns"]) == (2000, 1310)


def _autograd_backward_ns(trace) -> dict[int, int]:
    """iteration -> the summed duration (ns) of the autograd thread's events named *Backward* inside
    that ProfilerStep, from the raw JSON (ts/dur in us; nested ones counted twice: an upper bound of
    their own time)."""
    import gzip

    events = [e for e in json.loads(gzip.open(trace).read())["traceEvents"] if e.get("ph") == "X"]
    steps = {
        int(e["name"].split("#")[1]): (float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in events if str(e["name"]).startswith("ProfilerStep#")
    }
    return {
        it: round(
            1000 * sum(float(e["dur"]) for e in events if e.get("tid") == 3126441 and "Backward" in str(e["name"]) and lo <= float(e["ts"]) < hi)
        )
        for it, (lo, hi) in steps.items()
    }


def test_faster_backward_ops_on_the_autograd_thread_shorten_the_steps(converted):
    """On the rank-3 trace the step's thread waits 28-30 ms of each of steps 1010-1013 in
    "## backward ##" while the autograd engine's thread (3126441) runs the backward, CPU-bound: its
    *Backward* ops twice as fast make each of these steps shorter (a thread-by-thread replay predicted
    exactly the measured 76.94, 76.21, 76.73 and 78.47 ms), by no more than half their time."""
    trace = DATA / "kineto_2022_integer_us_rank3" / "hta_a100_rank3_of_8_2022.json.gz"
    con = converted(trace)
    from xsp_trace.analyze.session import prepare

    prepare(con, AnalysisOptions())
    run = load_run(con, 1)
    bound = _autograd_backward_ns(trace)
    for _, iteration, step, start, end, pid, tid in units(con):
        if step is None or iteration not in (1010, 1011, 1012, 1013):
            continue
        predicted, path = predict(run, start, end, (pid, tid), [parse_rule("op:Backward*0.5")])
        gain = end - start - predicted
        assert 0 < gain <= bound[iteration] / 2, (iteration, gain, bound[iteration])
        assert sum(s.end_ns - s.start_ns for s in path) == predicted


@pytest.mark.slow
def test_analyze_what_if_prints_the_prediction():
    result = runner.invoke(
        app, ["analyze", str(DATA / "critical_path_hta" / "cuda_event_sync.json.gz"), "--what-if", "op:aten::empty*0", "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.stdout)["what_if"]
    # aten::empty held 2,187 us of the 3,154 us step on the CPU, nothing waited for it elsewhere.
    assert row["latency_ns"] == 3154000 and row["predicted_ns"] == 3154000 - 2187000
    # every time with its unit: the path's spans in ms, the latencies under *_ms headers in a table
    items = row["new_top_on_path"].split("; ")
    assert items and all(re.fullmatch(r".+ \[\w+\] \d+\.\d{3} ms", item) for item in items), items
    shown = sum(float(item.rsplit(" ", 2)[1]) for item in items)
    assert 0 < shown <= row["predicted_ns"] / 1e6 + 0.001 * len(items)
    table = runner.invoke(app, ["analyze", str(DATA / "critical_path_hta" / "cuda_event_sync.json.gz"), "--what-if", "op:aten::empty*0"])
    assert table.exit_code == 0 and "latency_ms" in table.stdout and "predicted_ms" in table.stdout and " ms" in table.stdout


def test_a_wait_finding_states_the_replays_gain(tmp_path):
    """The hand-made pageable step (1000 ns): cudaMemcpyAsync returns 50 ns after its copy ended --
    the only part of its 500 ns that is the wait's (5 %: kernel K and the copy run before that).
    Without the wait the call takes 0 ns and the thread is done at 200 + 50 + 40 + 10 + 10 + 190 =
    500 ns, but the GPU still runs K until 700 and the copy after it until 750: 250 ns saved."""
    from xsp_trace.analyze.findings.find import find

    db = write(tmp_path / "t.duckdb", [pageable_step()])
    (finding,) = [f for f in find(open_session(db, AnalysisOptions())) if f.kind == "sync_gpu_idle"]
    assert finding.severity == pytest.approx(50 / 1000)
    assert finding.facts["expected_gain_ns"] == 250
    assert "(--what-if 'sync:^(cudaMemcpyAsync)$=0') predicts 750 ns instead of 1 µs: 25.0 % less." in finding.text


def _unrecorded_wait_step(first: str) -> Run:
    """event_step without the recorded event wait (as CUDA graphs' nodes and pre-2023 Kineto traces
    show it): `first` on stream 7 [100,500) (launched [10,20)); B on stream 8, launched [50,60),
    starts only when `first` ends (500) and runs to 600; cudaDeviceSynchronize [70,650)."""
    run = Run(1, source_kind="kineto")
    run.span("annotation", "ProfilerStep#1", 0, 1000, iteration=1)
    run.gpu("kernel", first, (10, 20), (100, 500), stream=7)
    run.gpu("kernel", "B", (50, 60), (500, 600), stream=8)
    run.span("api", "cudaDeviceSynchronize", 70, 650, category="cuda_runtime")
    return run


@pytest.mark.parametrize(
    "first,rule,expected",
    [
        # A twice as fast [100,300): B, which waited for it without a record, runs [300,400); the sync
        # returns 50 ns later (450) and the step ends 200 ns early (a replay keeping B's 440 ns queue
        # after its launch kept 1000).
        ("A", "kernel:^A$*0.5", 800),
        # The collective gone: B runs at its launch's pace behind it [100,200); sync 250; end 600.
        ("ncclDevKernel_AllReduce_Sum_f32_RING_LL", "communication:.*=0", 600),
    ],
    ids=["kernel", "communication"],
)
def test_work_that_waited_for_another_stream_unrecorded_follows_it(first, rule, expected, tmp_path):
    assert _predicted(tmp_path, _unrecorded_wait_step(first), rule) == expected


def _data_loader_step() -> Run:
    """DataLoader [100,400) holds aten::copy_ [150,250), which launches K ([200,210) -> [300,700),
    90 ns queued); aten::mm [450,550); cudaDeviceSynchronize [600,900) returns 200 ns after K; the
    step [0,1000) on one thread."""
    run = Run(1)
    run.span("annotation", "ProfilerStep#1", 0, 1000, iteration=1)
    run.span("user_annotation", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 100, 400)
    run.span("op", "aten::copy_", 150, 250)
    run.gpu("kernel", "K", (200, 210), (300, 700))
    run.span("op", "aten::mm", 450, 550)
    run.span("api", "cudaDeviceSynchronize", 600, 900, category="cuda_runtime")
    return run


@pytest.mark.parametrize(
    "rule,expected",
    [
        # The region and all in it gone (300 ns): the launch at 100, K [190,590); aten::mm [150,250);
        # the sync from 300 returns 200 ns after K (790); 100 ns more: 890.
        ("region:DataLoader=0", 890),
        # Every piece of it at half its time: the launch ends at 155, K [245,645), the sync from 450
        # returns at 845: 945.
        ("region:DataLoader*0.5", 945),
        # 100 ns for the whole region, spread over its pieces (50, 50, 10, 40, 150 ns -> 17, 17, 3, 13,
        # 50): the launch ends at 137, K [227,627), the sync from 400 returns at 827: 927.
        ("region:DataLoader=100ns", 927),
        # An op rule takes the DataLoader's own time only (200 of its 300 ns): aten::copy_ keeps its
        # 100 ns [100,200), the launch ends at 160 (K [250,650)); aten::mm [250,350); the sync from 400
        # returns at 850: 950.
        ("op:DataLoader=0", 950),
    ],
    ids=["region_gone", "region_halved", "region_set", "own_time_only"],
)
def test_a_region_rule_changes_the_region_and_all_nested_in_it(rule, expected, tmp_path):
    assert _predicted(tmp_path, _data_loader_step(), rule) == expected


def test_removing_communication_shortens_the_v100_steps_it_delays(converted):
    """The V100 CUDA-graphs trace (rank 1 of 2) runs 36-63 ms of NCCL kernels on stream 15 in steps
    1009-1011, 1013 and 1014 (xsp_gpu_work), and its compute stream waits for them with no recorded
    event (a 2022 trace): without the collectives those steps are shorter (the replay predicted 0.0 %
    change before it tied such work to what it waited for), yet never shorter than their busiest
    stream's remaining work; step 1012 (16 ms of NCCL) may keep its time."""
    from xsp_trace.analyze.critical_path.what_if import replay_gain
    from xsp_trace.analyze.session import prepare

    con = converted(DATA / "kineto_cuda_graphs_v100_2022" / "hta_v100_cuda_graphs_rank1_2022.json.gz")
    prepare(con, AnalysisOptions())
    gains = {
        it: (measured, predicted) for it, measured, predicted in replay_gain(con, 1, list(range(1009, 1015)), [parse_rule("communication:.*=0")])
    }
    assert sorted(gains) == list(range(1009, 1015))
    for iteration in (1009, 1010, 1011, 1013, 1014):
        measured, predicted = gains[iteration]
        assert predicted < measured, iteration
    assert gains[1012][1] <= gains[1012][0]
