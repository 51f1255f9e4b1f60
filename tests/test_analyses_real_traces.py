"""The analyses on converted real GPU traces, against NVIDIA's own `nsys stats` reports.

Plain traces (no leveled runs) must still analyse: one experiment per run, every level served
by the trace itself and flagged uncorrected, per-kernel totals equal to gpukernsum.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest

from conftest import NSYS_EXPORTS, nsys_stats
from xsp_trace.analyze.catalog import ANALYSES
from xsp_trace.analyze.session import AnalysisOptions, prepare, run_analysis
from xsp_trace.analyze.sql_library import include

pytestmark = pytest.mark.slow  # real traces

CASES = ["nsys_2026_pytorch_2xh100", "nsys_2022_saxpy_mpi_a100"]


@pytest.fixture(scope="module")
def sessions(converted):
    cache = {}

    def _session(case):
        if case not in cache:
            con = converted(NSYS_EXPORTS[case])
            prepare(con, AnalysisOptions())
            cache[case] = con
        return cache[case]

    return _session


@pytest.mark.parametrize("case", CASES)
def test_kernel_info_totals_equal_gpukernsum(case, sessions, tmp_path):
    con = sessions(case)
    ref = defaultdict(lambda: [0, 0])
    for r in nsys_stats(NSYS_EXPORTS[case], "gpukernsum", tmp_path):
        ref[r["Name"]][0] += int(r["Instances"])
        ref[r["Name"]][1] += int(r["Total Time (ns)"])
    rows = run_analysis(con, "kernel_info").records()
    assert {r["name"]: [r["instances"], r["total_ns"]] for r in rows} == dict(ref)
    # A trace without model ranges is one inference: per-inference latency = the trace's kernel time.
    assert sum(r["latency_ms"] for r in rows) == pytest.approx(sum(v[1] for v in ref.values()) / 1e6, rel=1e-9)
    top = run_analysis(con, "top_kernels").records()
    assert {r["name"]: [r["instances"], r["total_ns"]] for r in top} == dict(ref)


@pytest.mark.parametrize("case", CASES)
def test_every_analysis_runs_and_levels_are_flagged_uncorrected(case, sessions):
    con = sessions(case)
    for analysis in ANALYSES:
        run_analysis(con, analysis.name)  # none may fail on a plain trace
    sources = {r["measured"]: (r["source_level"], r["corrected"]) for r in run_analysis(con, "level_sources").records()}
    assert sources == {"model": (None, False), "layer": (None, False), "kernel": (None, True)}


@pytest.mark.parametrize("case", CASES)
def test_gpu_busy_by_kind_sums_to_gpusum(case, sessions, tmp_path):
    con = sessions(case)
    ref = nsys_stats(NSYS_EXPORTS[case], "gpusum", tmp_path)
    rows = run_analysis(con, "gpu_busy_idle").records()
    ours = sum(r["kernel_ns"] + r["memcpy_ns"] + r["memset_ns"] for r in rows)
    assert ours == sum(int(r["Total Time (ns)"]) for r in ref)
    for r in rows:  # the union never exceeds the window nor the summed durations
        assert r["busy_ns"] + r["idle_ns"] == r["window_ns"]
        assert r["busy_ns"] <= r["kernel_ns"] + r["memcpy_ns"] + r["memset_ns"]


# Not the 2022 saxpy export: it records each launch twice (a backtrace duplicate API row), which
# kernexectrace lists twice and the converter keeps once.
@pytest.mark.parametrize("case", ["nsys_2026_pytorch_2xh100"])
def test_launch_queue_delay_equals_kernexectrace(case, sessions, tmp_path):
    """nsys's kernel launch/exec trace: queue = kernel start - (API start + API duration)."""
    con = sessions(case)
    ref = nsys_stats(NSYS_EXPORTS[case], "kernexectrace", tmp_path)
    assert ref
    delays = defaultdict(list)
    for r in ref:
        delays[int(r["DevId"])].append(int(r["Kernel Start (ns)"]) - int(r["API Start (ns)"]) - int(r["API Dur (ns)"]))
    rows = {r["device_id"]: r for r in run_analysis(con, "launch_queue_delay").records()}
    assert set(rows) == set(delays)
    for device, values in delays.items():
        values = np.array(values)
        row = rows[device]
        assert row["launches"] == len(values)
        assert row["max_ns"] == values.max() and row["median_ns"] == np.median(values)
        assert row["mean_ns"] == round(values.mean(), 1)
        # nsys leaves Queue Dur empty exactly when the kernel started before the call returned.
        assert row["started_before_return"] == sum(1 for r in ref if int(r["DevId"]) == device and r["Queue Dur (ns)"] == "None")


def test_device_peaks_from_the_built_in_table(sessions):
    con = sessions("nsys_2022_saxpy_mpi_a100")
    include(con, "lib/roofline")
    (roof,) = con.execute("SELECT device_name, peak_flops, peak_dram_bytes_per_s FROM xsp_experiment_roof").fetchall()
    assert roof == ("NVIDIA A100-SXM4-40GB", 19.5e12, 1.555e12)
