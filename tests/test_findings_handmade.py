"""Findings on hand-made traces: the steps' causes (tests/test_step_causes.py works the paths out by hand), the leveled kinds, the expected numbers worked out by hand below;
the CLI option; the HTML report in headless chromium with its findings first (screenshot kept in
tests/artifacts/).

Plain trace, run 1 (thread 100, GPU 0; ns on a µs scale so the default thresholds apply):
  ProfilerStep#1 [0, 1 ms): 10 launches, launch i over [i*100 µs, +60 µs) -> kernel k over [+70 µs, +75 µs).
    GPU busy 10 x 5 = 50 µs, launch calls 600 µs > 50: launch-bound. Gaps between the kernels: 95 µs (not long).
  ProfilerStep#2 [1 ms, 2 ms):
    cudaLaunchKernel [1000, 1010) µs -> gemm [1020, 1320) µs, stream 7
    cudaDeviceSynchronize [1010, 1450) µs
    cudaLaunchKernel [1450, 1455) -> ncclKernel_AllReduce [1600, 1900) µs, stream 8
    cudaLaunchKernel [1455, 1460) -> add [1700, 1800) µs, stream 7 (under the collective: 100 µs overlap)
    cudaMemcpy [1500, 1600) µs -> HtoD copy Pageable -> Device [1510, 1590) µs, 8 MB
    GPU busy 300 + 80 + 300 = 680 µs (68 %), launch calls 10 + 5 + 5 + 100 = 120 µs < 680, synchronising
    calls 440 + 100 = 540 µs > 500: sync-bound.
  GPU window [70 µs, 1900 µs) = 1830 µs. One long gap: [1320, 1510) µs = 190 µs, ended by the copy whose
  cudaMemcpy started at 1500 > 1320 (late); at its middle (1415) the thread is in cudaDeviceSynchronize.
Plain trace, run 2 (no steps): 3 launches of 50 µs at 0, 200, 400 µs -> 5 µs kernels 60 µs later.
  Window [60, 465) µs = 405 µs, busy 15 µs, launch calls 150 µs > 15: launch-bound; two gaps of 195 µs.
Leveled capture: tests/support/leveled.py ("tiny bs=2"), with capture_runs saying the ML run's hooks
  changed the program.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from support.handmade import Run, write
from support.leveled import BIAS_NS, CONV_NS, METRICS, build
from test_analyze_cli_report_metrics import _count_color, _png_pixels
from xsp_trace.analyze.findings.find import evidence, find
from xsp_trace.analyze.report import svg
from xsp_trace.analyze.session import open_session
from xsp_trace.cli import app

US = 1000
ARTIFACTS = Path(os.environ.get("XSP_TEST_ARTIFACTS", Path(__file__).parent / "artifacts"))
FINDINGS_BACKGROUND = "#fff4e5"  # the findings section's background in the report's style
runner = CliRunner()


def _plain_trace(path: Path) -> Path:
    one = Run(1)
    one.device()
    one.span("annotation", "ProfilerStep#1", 0, 1000 * US, iteration=1)
    for i in range(10):
        one.gpu("kernel", "k", (i * 100 * US, (i * 100 + 60) * US), ((i * 100 + 70) * US, (i * 100 + 75) * US))
    one.span("annotation", "ProfilerStep#2", 1000 * US, 2000 * US, iteration=2)
    one.gpu("kernel", "gemm", (1000 * US, 1010 * US), (1020 * US, 1320 * US))
    one.span("api", "cudaDeviceSynchronize", 1010 * US, 1450 * US, category="cuda_runtime")
    one.gpu("kernel", "ncclKernel_AllReduce_RING_LL_Sum_float", (1450 * US, 1455 * US), (1600 * US, 1900 * US), stream=8)
    one.gpu("kernel", "add", (1455 * US, 1460 * US), (1700 * US, 1800 * US))
    one.memop("memcpy", (1500 * US, 1600 * US), (1510 * US, 1590 * US), "HtoD", 8_000_000, src="Pageable", dst="Device", api="cudaMemcpy")
    two = Run(2)
    two.device()
    for i in range(3):
        two.gpu("kernel", "tiny", (i * 200 * US, (i * 200 + 50) * US), ((i * 200 + 60) * US, (i * 200 + 65) * US))
    return write(path, [one, two])


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    return _plain_trace(tmp_path_factory.mktemp("findings") / "plain.duckdb")


@pytest.fixture(scope="module")
def plain_findings(plain):
    con = open_session(plain)
    found = find(con)
    assert all(evidence(con, f).rows for f in found)
    return {(f.kind, f.facts.get("run_id")): f for f in found}


@pytest.fixture(scope="module")
def leveled(tmp_path_factory):
    path = build(tmp_path_factory.mktemp("findings") / "leveled.duckdb")
    con = duckdb.connect(str(path))
    con.execute(
        "INSERT INTO capture_runs (run_id, tool, level, batch_size, program_changed, program_change_note) "
        "VALUES (2, 'nsys', 'ML', 2, TRUE, 'nn.TransformerEncoderLayer fused fast path left')"
    )
    con.close()
    return path


def test_findings_are_the_steps_causes_by_share_of_the_path(plain_findings):
    """Run 1's two steps (2 ms; tests/test_step_causes.py works their paths out by hand): cpu_ops 840 µs,
    launch 640 µs, gpu_compute 300 µs, sync_wait 140 µs, gpu_copy 80 µs (4 %: under CAUSE_MIN_SHARE).
    Run 2 (no steps, 450 µs): no span 300 µs, launch 150 µs. The collective never binds a step's end,
    so no communication finding, whatever its overlap."""
    severities = {key: f.severity for key, f in plain_findings.items()}
    assert severities == pytest.approx(
        {
            ("cpu_bound", 1): 840 / 2000,
            ("launch_overhead", 1): 640 / 2000,
            ("gpu_bound", 1): 300 / 2000,
            ("sync_gpu_idle", 1): 140 / 2000,
            ("unrecorded_cpu_time", 2): 300 / 450,
            ("launch_overhead", 2): 150 / 450,
        }
    )


def test_a_wait_counts_only_while_the_gpu_had_nothing_to_run(plain_findings):
    """cudaDeviceSynchronize held the CPU 440 µs, but gemm ran for the first 310 µs of it: only the 130 µs
    after gemm ended (and cudaMemcpy's 10 µs after its copy) are the wait's; the finding says what to
    do about such waits, and its gain is the replay's."""
    f = plain_findings[("sync_gpu_idle", 1)]
    assert f.text.startswith(
        "Waiting on the GPU after its work had ended: 7.0 % of the 2 ms that the 2 steps of run 1 spent on the critical path "
        "(14.0 % of each step, in 1 of them); mostly cudaDeviceSynchronize, cudaMemcpy."
    )
    assert "out of the loop" in f.text and "CUDA graphs" not in f.text
    assert f.facts["what_if"] == "sync:^(cudaDeviceSynchronize|cudaMemcpy)$=0"
    assert f.facts["measured_ns"] == 2000 * US and 0 < f.facts["expected_gain_ns"] <= 540 * US
    assert f.text.endswith(
        f"(--what-if '{f.facts['what_if']}') predicts {f.facts['predicted_ns'] / 1e6:.3g} ms instead of 2 ms: {100 * f.facts['expected_gain_ns'] / 2e6:.1f} % less."
    )


def test_launch_overhead_run_without_steps(plain_findings):
    """Run 2: removing the three launch calls' 150 µs leaves the 300 µs of no span: 300 µs predicted."""
    f = plain_findings[("launch_overhead", 2)]
    assert f.analysis == "step_causes" and f.evidence == "xsp-trace analyze DB -a step_causes (rows where run_id = 2 AND cause = 'launch')"
    assert "(a run without steps, taken whole); mostly cudaLaunchKernel. Fewer, larger kernels" in f.text
    assert (f.facts["measured_ns"], f.facts["predicted_ns"]) == (450 * US, 300 * US)


def test_gpu_bound_names_its_kernels_and_no_cpu_advice(plain_findings):
    f = plain_findings[("gpu_bound", 1)]
    assert "mostly gemm. The GPU's own work sets the step" in f.text and "what_if" not in f.facts


def test_leveled_findings_use_the_corrected_figures(leveled):
    all_found = find(open_session(leveled))
    found = {f.kind: f for f in all_found if f.facts.get("experiment") == "tiny bs=2" and f.kind != "profiling_overhead"}
    found_overhead = [f for f in all_found if f.kind == "profiling_overhead"]
    # Memory-bound kernels: intensity = FLOPs / (read + write bytes) below the A100's 19.5e12 / 1.555e12 = 12.54 FLOP/B.
    ridge = 19.5e12 / 1.555e12
    intensity = {k: f / (r + w) for k, (f, r, w, _) in METRICS.items()}
    assert sorted(found["memory_bound_kernels"].facts["memory_bound"]) == sorted(k for k, i in intensity.items() if i < ridge)
    latency = {"conv_kernel": sorted(CONV_NS)[1], "bias_kernel": sorted(BIAS_NS)[1], "relu_kernel": 3 + 4}  # per inference, ns
    flops_per_s = {"relu_kernel": 2 * METRICS["relu_kernel"][0] / 7e-9, "bias_kernel": METRICS["bias_kernel"][0] / 2e-9}
    roof = {k: flops_per_s[k] / (intensity[k] * 1.555e12) for k in flops_per_s}
    stake = sum(latency[k] * (1 - round(100 * roof[k], 2) / 100) for k in roof) / sum(latency.values())
    assert found["memory_bound_kernels"].severity == pytest.approx(stake)
    assert "2 of 3 kernels with metrics are memory-bound" in found["memory_bound_kernels"].text
    # Non-GPU layers: conv 41 - (11 + 2) = 28 ns, relu 22 - (3 + 4) = 15 ns, against the model latency
    # of the run that measured the layers: the ML run's model ranges, trimmed mean of 150, 150, 150,
    # 150, 200 = 150 ns (not the M run's 105 ns: its inferences carry no layer ranges).
    assert found["non_gpu_layers"].severity == pytest.approx(43 / 150)
    assert "28.7 % of the 150 ns model latency of the run that measured the layers" in found["non_gpu_layers"].text
    assert "(corrected: layer latency from the ML run, kernel latency from the MLG run)" in found["non_gpu_layers"].text
    # ML's instrumented inferences take 160 ns against its own un-instrumented 121 ns (trimmed means of
    # the capture_latencies rows: +39 ns, 31.9 %), and its hooks changed the program: 39 of 160 ns at stake.
    # ... but its seeded bootstrap interval holds 0 (6 inferences a side): the overhead is not
    # measurable, so the change is reported at the floor severity with no overhead figure.
    assert found["program_changed"].severity == pytest.approx(0.01)
    assert "nn.TransformerEncoderLayer fused fast path left" in found["program_changed"].text
    assert "has no measurable overhead (95 % interval -48.0 to 60.1 % holds 0)" in found["program_changed"].text
    assert "adds 39 ns" not in found["program_changed"].text
    # M adds 8 ns (8.4 %, under the 25 % threshold); MLG has no un-instrumented inferences of its own,
    # and the cross-process figure is never a finding.
    assert found_overhead == []


@pytest.mark.slow
def test_cli_findings_json_and_table(plain):
    result = runner.invoke(app, ["analyze", str(plain), "--findings", "--format", "json", "-a", "step_bound"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    assert [r["kind"] for r in payload["findings"]][:2] == ["unrecorded_cpu_time", "cpu_bound"]  # 66.7 %, 42 %
    assert [r["rank"] for r in payload["findings"]] == list(range(1, 7)) and len(payload["step_bound"]) == 2
    assert any(r["evidence"].startswith("xsp-trace analyze DB -a step_causes (rows where run_id = 2") for r in payload["findings"])
    table = runner.invoke(app, ["analyze", str(plain), "--findings"])
    assert table.exit_code == 0 and "Findings, most severe first" in table.output
    assert "[step_bound]" not in table.output  # without -a, no analysis table follows the findings
    missing = runner.invoke(app, ["analyze", str(plain.with_name("none.duckdb")), "--findings"])
    assert missing.exit_code == 2 and "Traceback" not in missing.output


def test_report_shows_the_findings_first_in_headless_chromium(converted_path, tmp_path):
    from raw_traces import GPU_FIXTURES

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.fail("chromium is not installed: .ci/install-report.sh installs it")
    path = converted_path(*GPU_FIXTURES["kineto_nccl_collectives"])
    report = tmp_path / "report.html"
    result = runner.invoke(app, ["analyze", str(path), "-a", "model_info", "--report", str(report)])
    assert result.exit_code == 0, result.output
    html = report.read_text()
    assert html.index('id="findings"') < html.index("<h2>Plots</h2>") < html.index('id="level_sources"')
    assert "cpu_bound" in html and "step_causes" in html
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "report_findings.png"
    subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--window-size=1400,1600",
            f"--screenshot={shot}",
            report.as_uri(),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    width, bpp, rows = _png_pixels(shot)
    assert width == 1400
    top = rows[:400]  # the findings box is painted right under the title
    assert _count_color(top, bpp, FINDINGS_BACKGROUND) > 100_000
    assert _count_color(rows, bpp, svg.UTIL_COLOR) > 300  # the utilisation strip
    assert _count_color(rows, bpp, svg.GPU_COLOR) > 300  # GPU busy per step


@pytest.mark.slow
def test_a_capture_with_an_extreme_spread_is_flagged_unusable(tmp_path, plain_findings, leveled):
    """Five steps of 10 µs and one of 1 ms: the p90 (quantile_cont over 10, 10, 10, 10, 10, 1000 µs =
    505 µs) is 50x the 10 µs median, over the 10x rule: one finding says so, nothing else about it."""
    run = Run(1)
    run.device()
    for i in range(6):
        start = i * 2000 * US
        run.span("annotation", f"ProfilerStep#{i}", start, start + (1000 if i == 5 else 10) * US, iteration=i)
        run.gpu("kernel", "k", (start, start + US), (start + 2 * US, start + 9 * US))
    found = find(open_session(write(tmp_path / "spread.duckdb", [run])))
    (f,) = [f for f in found if f.kind == "unusable_capture"]
    assert f.text.startswith("run 1: the capture is unusable: its model latency's p90 505 µs is 50x its median 10 µs (over 10x)")
    assert f.severity == 1.0 and found[0] is f
    # Silent where the spread is ordinary: the leveled capture (M run: p90 224 ns, 2.1x its 105 ns median)
    # and the plain trace.
    assert not [f for f in find(open_session(leveled)) if f.kind == "unusable_capture"]
    assert not [k for k in plain_findings if k[0] == "unusable_capture"]
