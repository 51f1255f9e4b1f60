"""analyses/step_causes on a hand-made trace (the plain trace of tests/test_findings_handmade.py),
each step's critical path worked out by hand and grouped by cause, and on the real fixtures: a
step's causes add up to its latency in the raw trace, and a wait is a cause only while the GPU had
nothing to run.

Run 1, step 1 [0, 1 ms): ten cudaLaunchKernel calls of 60 µs, 40 µs of the step range's own time
after each; the 5 µs kernels never bind (each ends before the next launch): launch 600 µs, cpu_ops 400 µs.
Run 1, step 2 [1 ms, 2 ms), walked back from its end: the step range's own time [1600, 2000) and
[1460, 1500) = 440 µs cpu_ops; cudaMemcpy [1500, 1600) returned 10 µs after its copy ended (sync_wait
10 µs), the copy [1510, 1590) 80 µs gpu_copy, its queue delay from the call [1500, 1510) 10 µs launch;
cudaLaunchKernel x2 [1450, 1460) 10 µs launch; cudaDeviceSynchronize [1010, 1450) waited for gemm
(ended 1320): sync_wait 130 µs, gemm [1020, 1320) 300 µs gpu_compute (the wait's first 310 µs are
the GPU's time, not the wait's), its queue delay [1010, 1020) and launch [1000, 1010) 20 µs launch.
The collective on stream 8 never binds the step's end.
Run 2 (no steps, one unit [0, 450 µs)): three launches of 50 µs, 150 µs of no span between them.
"""

from __future__ import annotations

import pytest

from raw_traces import GPU_FIXTURES, merge, raw_runs
from test_findings_handmade import _plain_trace
from xsp_trace.analyze.session import AnalysisOptions, open_session, run_analysis

US = 1000


@pytest.fixture(scope="module")
def plain_causes(tmp_path_factory):
    path = _plain_trace(tmp_path_factory.mktemp("causes") / "plain.duckdb")
    return run_analysis(open_session(path), "step_causes").records()


def test_plain_trace_causes_by_hand(plain_causes):
    got = [(r["run_id"], r["iteration"], r["cause"], r["on_path_ns"], r["top_names"]) for r in plain_causes]
    own = "(the step range's own time)"
    assert got == [
        (1, 1, "launch", 600 * US, ["cudaLaunchKernel"]),
        (1, 1, "cpu_ops", 400 * US, [own]),
        (1, 2, "cpu_ops", 440 * US, [own]),
        (1, 2, "gpu_compute", 300 * US, ["gemm"]),
        (1, 2, "sync_wait", 140 * US, ["cudaDeviceSynchronize", "cudaMemcpy"]),
        (1, 2, "gpu_copy", 80 * US, ["Memcpy HtoD"]),
        (1, 2, "launch", 40 * US, ["cudaLaunchKernel", "cudaMemcpy"]),
        (2, None, "cpu_idle", 300 * US, ["(no span)"]),
        (2, None, "launch", 150 * US, ["cudaLaunchKernel"]),
    ]
    assert [r["share_pct"] for r in plain_causes] == [60.0, 40.0, 44.0, 30.0, 14.0, 8.0, 4.0, 66.67, 33.33]


def test_the_queue_stall_setting_moves_long_queue_delays_to_stream_wait(tmp_path):
    """With --set stall=5000 (5 µs) the 10 µs queue delays of step 2 are stalls, not launch latency."""
    con = open_session(_plain_trace(tmp_path / "plain.duckdb"), AnalysisOptions(settings={"stall": 5000}))
    rows = {(r["iteration"], r["cause"]): r["on_path_ns"] for r in run_analysis(con, "step_causes").records() if r["run_id"] == 1}
    assert rows[(2, "stream_wait")] == 20 * US and rows[(2, "launch")] == 20 * US


@pytest.mark.slow
@pytest.mark.parametrize("case", list(GPU_FIXTURES))
def test_causes_add_up_to_each_raw_step(case, converted_path):
    """Every step's causes add up to the step's latency in the raw trace, and the time a wait holds
    on the path (sync_wait) fits in the GPU's idle time inside that step (raw intervals, merged)."""
    rows = run_analysis(open_session(converted_path(*GPU_FIXTURES[case])), "step_causes").records()
    checked = 0
    for run_id, run in raw_runs(case).items():
        busy = merge((g.start, g.end) for g in run.gpu)
        for _pid, iteration, lo, hi in run.steps:
            mine = [r for r in rows if (r["run_id"], r["iteration"]) == (run_id, iteration)]
            if not mine:
                continue
            assert sum(r["on_path_ns"] for r in mine) == pytest.approx(hi - lo, abs=4), (case, iteration)
            idle = (hi - lo) - sum(max(0, min(e, hi) - max(s, lo)) for s, e in busy)
            sync = sum(r["on_path_ns"] for r in mine if r["cause"] == "sync_wait")
            assert sync <= idle + 4, (case, iteration, sync, idle)
            checked += 1
    if any(run.steps for run in raw_runs(case).values()):
        assert checked
