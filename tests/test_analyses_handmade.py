"""Each analysis on a hand-made leveled capture (tests/support/leveled.py): the query, and the
expected table computed by hand from the numbers written there (the Perfetto diff-test style).

Hand computations used below (trimmed mean as the XSP authors: sort, n < 3 mean, n = 3 middle,
else drop floor(0.2 n) from each end):
  M model [100,110,105,300,90] -> sorted [90,100,105,110,300], drop 1 each end -> 105;
     median 105; p90 = 110 + 0.6 * (300 - 110) = 224.
  un-instrumented [95,100,98,102,99] -> [98,99,100] -> 99.   ML model [150 x4, 200] -> 150.
  MLG model [200,210,205] -> middle 205.
  ML layer 0 [40,42,41,80,39] -> [40,41,42] -> 41.  layer 1 per inference 22,22,22,22,60 -> 22.
  MLG conv [10,12,11] -> 11; bias [2,2,5] -> 2; relu call 0 [3,3,3] -> 3, call 1 [4,4,10] -> 4.
  A100 40GB: 19.5e12 FLOP/s / 1.555e12 B/s -> ideal intensity 12.54 FLOP/B.
"""

from __future__ import annotations

import pytest

from support.leveled import build
from xsp_trace.analyze.session import AnalysisOptions, open_session, run_analysis
from xsp_trace.analyze.sql_library import include


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    return build(tmp_path_factory.mktemp("hand") / "hand.duckdb")


@pytest.fixture(scope="module")
def con(db):
    return open_session(db)


def table(con, name, columns, where=None):
    result = run_analysis(con, name)
    rows = [tuple(r[c] for c in columns) for r in result.records() if where is None or where(r)]
    return rows


def test_trimmed_mean_matches_the_authors_definition(con):
    include(con, "lib/stats")
    got = con.execute("""SELECT xsp_trimmed_mean([100, 110, 105, 300, 90]), xsp_trimmed_mean([1, 2, 3, 100]),
                                xsp_trimmed_mean([5, 1, 3]), xsp_trimmed_mean([1, 2]),
                                xsp_trimmed_mean([1, 2, 3, 4, 5, 6, 7, 8, 9, 1000]),
                                xsp_trimmed_mean(CAST([] AS BIGINT[]))""").fetchone()
    # n=4: floor(0.8) = 0 from the bottom, but the authors' end index min(n-1, n-0) drops the largest.
    # n=10: drop 2 each end -> mean(3..8) = 5.5.
    assert got == (105.0, 2.0, 3.0, 1.5, 5.5, None)


def test_level_sources_say_which_levels_are_corrected(con):
    assert table(con, "level_sources", ["experiment", "measured", "source_level", "corrected", "run_ids"]) == [
        ("run 4", "model", None, False, [4]),
        ("run 4", "layer", None, False, [4]),
        ("run 4", "kernel", None, True, [4]),
        ("tiny bs=2", "model", "M", True, [1]),
        ("tiny bs=2", "layer", "ML", True, [2]),
        ("tiny bs=2", "kernel", "MLG", True, [3]),
    ]


def test_model_info_from_the_m_run(con):
    (row,) = run_analysis(con, "model_info").records()
    assert (row["model"], row["batch_size"], row["source_level"], row["inferences"]) == ("tiny", 2, "M", 5)
    assert row["latency_ms"] == 105e-6 and row["median_ms"] == 105e-6 and row["p90_ms"] == 224e-6
    assert row["throughput_per_s"] == pytest.approx(2 / 105e-9, rel=1e-9)


def test_model_batch_scaling(con):
    assert table(con, "model_batch_scaling", ["model", "batch_size", "latency_ms", "latency_per_input_ms", "throughput_speedup"]) == [
        ("tiny", 2, 105e-6, pytest.approx(52.5e-6, abs=1e-6), 1.0)
    ]


def test_level_overhead_per_run_against_its_own_uninstrumented_loop(con):
    rows = table(
        con,
        "level_overhead",
        [
            "level",
            "run_id",
            "interleaved",
            "uninstrumented_ms",
            "instrumented_ms",
            "overhead_pct",
            "model_latency_ms",
            "model_overhead_pct",
            "cross_process_previous_level",
            "cross_process_overhead_pct",
        ],
    )
    m_plain, m_timed = (98 + 99 + 100) / 3, (104 + 106 + 112) / 3  # middle 3 of 5 (trim 0.2)
    ml_plain, ml_timed = (119 + 120 + 125) / 3, (159 + 160 + 161) / 3  # ms columns are rounded to 1 ns
    assert rows == [
        (
            "M",
            1,
            True,
            pytest.approx(m_plain / 1e6, abs=1e-6),
            pytest.approx(m_timed / 1e6, abs=1e-6),
            round(100 * (m_timed - m_plain) / m_plain, 2),
            105e-6,
            round(100 * (105 - m_plain) / m_plain, 2),
            None,
            None,
        ),
        # the ML process's own (slower) baseline, not the M process's: a pooled one would give +51 %
        (
            "ML",
            2,
            False,
            pytest.approx(ml_plain / 1e6, abs=1e-6),
            pytest.approx(ml_timed / 1e6, abs=1e-6),
            round(100 * (ml_timed - ml_plain) / ml_plain, 2),
            150e-6,
            round(100 * (150 - ml_plain) / ml_plain, 2),
            "M",
            round(100 * 45 / 105, 2),
        ),
        # no capture_latencies for run 3: no in-process figure, only the labelled cross-process one
        ("MLG", 3, None, None, None, None, 205e-6, None, "ML", round(100 * 55 / 150, 2)),
    ]


def test_level_overhead_bootstrap_interval_is_seeded_and_brackets_the_figure(con):
    columns = [
        "run_id",
        "overhead_pct",
        "overhead_pct_low",
        "overhead_pct_high",
        "model_overhead_pct",
        "model_overhead_pct_low",
        "model_overhead_pct_high",
    ]
    first = table(con, "level_overhead", columns)
    assert first == table(con, "level_overhead", columns)  # the same draws every time
    for run_id, point, low, high, model_point, model_low, model_high in first[:2]:
        assert low < point < high and model_low <= model_point <= model_high, run_id
    # the M run's pairs: every resampled trimmed mean lies within the extremes of its loop, so the
    # interval lies within (min instrumented - max plain) .. (max instrumented - min plain)
    assert first[0][2] >= 100 * (95 - 102) / 102 and first[0][3] <= 100 * (290 - 95) / 95
    assert first[2][2:4] == (None, None)
    con.execute("SET VARIABLE xsp_bootstrap_seed = 7")
    assert table(con, "level_overhead", columns)[:2] != first[:2]


def test_layer_latency_from_the_ml_run_not_the_inflated_mlg_run(con):
    assert table(
        con,
        "layer_latency",
        ["layer_index", "layer_name", "layer_type", "source_level", "samples", "calls_per_inference", "latency_ms", "median_ms", "latency_pct"],
    ) == [
        (0, "conv", "Conv2d", "ML", 5, 1, 41e-6, 41e-6, round(100 * 41 / 63, 2)),
        (1, "relu", "ReLU", "ML", 5, 2, 22e-6, 22e-6, round(100 * 22 / 63, 2)),
    ]


def test_layer_info_type_distribution_and_type_share(con):
    assert table(con, "layer_info", ["layer_index", "layer_name", "layer_type", "calls_per_inference", "latency_ms"]) == [
        (0, "conv", "Conv2d", 1, 41e-6),
        (1, "relu", "ReLU", 2, 22e-6),
    ]
    assert table(con, "layer_type_distribution", ["layer_type", "layers", "layers_pct", "calls_per_inference"]) == [
        ("Conv2d", 1, 50.0, 1),
        ("ReLU", 1, 50.0, 2),
    ]
    assert table(con, "layer_type_latency_share", ["layer_type", "latency_ms", "latency_pct"]) == [
        ("Conv2d", 41e-6, round(100 * 41 / 63, 2)),
        ("ReLU", 22e-6, round(100 * 22 / 63, 2)),
    ]


def test_kernel_info_with_metrics_and_memory_bound_flag(con):
    rows = table(
        con,
        "kernel_info",
        [
            "name",
            "calls_per_inference",
            "instances",
            "total_ns",
            "latency_ms",
            "flops",
            "dram_read_bytes",
            "dram_write_bytes",
            "achieved_occupancy",
            "arithmetic_intensity",
            "memory_bound",
        ],
        where=lambda r: r["experiment"] == "tiny bs=2",
    )
    assert rows == [
        # 4000 FLOP / 200 B = 20 > 12.54: compute-bound.
        ("conv_kernel", 1, 3, 33, 11e-6, 4000.0, 100.0, 100.0, 0.5, 20.0, False),
        # two launches per inference: 3 + 4 ns; 16 FLOP / 256 B = 0.0625.
        ("relu_kernel", 2, 6, 27, 7e-6, 16.0, 128.0, 128.0, 0.75, 0.0625, True),
        ("bias_kernel", 1, 3, 9, 2e-6, 10.0, 40.0, 40.0, 0.25, 0.125, True),
    ]
    conv = run_analysis(con, "kernel_info").records()[2]
    assert conv["arithmetic_throughput_gflops"] == round(4000 / 11e-9 / 1e9, 3)


def test_kernel_roofline_has_the_devices_roof(con):
    rows = run_analysis(con, "kernel_roofline").records()
    assert [r["name"] for r in rows] == ["conv_kernel", "relu_kernel", "bias_kernel"]
    conv, relu = rows[0], rows[1]
    assert conv["peak_flops"] == 19.5e12 and conv["peak_dram_bytes_per_s"] == 1.555e12
    assert conv["ideal_intensity"] == pytest.approx(19.5 / 1.555)
    assert conv["attainable_flops_per_s"] == 19.5e12  # right of the ridge: the compute roof
    assert relu["attainable_flops_per_s"] == pytest.approx(0.0625 * 1.555e12)  # on the memory slope
    assert relu["flops_per_s"] == pytest.approx(16 / 7e-9)


def test_layer_gpu_aggregates_vs_nongpu_and_roofline(con):
    assert table(
        con,
        "layer_gpu_aggregates",
        ["layer_index", "kernels_per_inference", "gpu_latency_ms", "flops", "achieved_occupancy", "memory_bound"],
        where=lambda r: r["experiment"] == "tiny bs=2",
    ) == [
        # occupancy duration-weighted: (0.5 * 11 + 0.25 * 2) / 13
        (0, 2, 13e-6, 4010.0, round(6 / 13, 4), False),
        (1, 2, 7e-6, 16.0, 0.75, True),
    ]
    assert table(con, "layer_gpu_vs_nongpu", ["layer_index", "layer_latency_ms", "gpu_latency_ms", "non_gpu_latency_ms", "gpu_pct", "corrected"]) == [
        (0, 41e-6, 13e-6, 28e-6, round(100 * 13 / 41, 2), True),
        (1, 22e-6, 7e-6, 15e-6, round(100 * 7 / 22, 2), True),
    ]
    assert table(con, "layer_roofline", ["layer_index", "arithmetic_intensity", "memory_bound"]) == [
        (0, pytest.approx(4010 / 280), False),
        (1, 0.0625, True),
    ]


def test_model_gpu_aggregates_and_roofline(con):
    assert table(
        con,
        "model_gpu_aggregates",
        ["kernels_per_inference", "gpu_latency_ms", "model_latency_ms", "gpu_pct", "flops", "achieved_occupancy", "memory_bound"],
        where=lambda r: r["experiment"] == "tiny bs=2",
    ) == [
        # 11 + 2 + 3 + 4 = 20 ns of 105; occupancy (0.5*11 + 0.25*2 + 0.75*7) / 20; 4026 / 536 = 7.51 < 12.54.
        (4, 20e-6, 105e-6, round(100 * 20 / 105, 2), 4026.0, round(11.25 / 20, 4), True)
    ]
    (row,) = run_analysis(con, "model_roofline").records()
    assert row["arithmetic_intensity"] == pytest.approx(4026 / 536) and row["flops_per_s"] == pytest.approx(4026 / 20e-9)


def test_top_kernels_gpu_busy_idle_and_launch_delay(con):
    assert table(con, "top_kernels", ["run_id", "name", "instances", "total_ns"]) == [
        (3, "conv_kernel", 3, 33),
        (3, "relu_kernel", 6, 27),
        (3, "bias_kernel", 3, 9),
        (4, "k_plain_b", 1, 9),
        (4, "k_plain_a", 1, 7),
    ]
    # run 4: kernels [500, 507) and [1500, 1509): window 1009, busy 16.
    assert table(con, "gpu_busy_idle", ["run_id", "window_ns", "busy_ns", "idle_ns", "busy_intervals"], where=lambda r: r["run_id"] == 4) == [
        (4, 1009, 16, 993, 2)
    ]
    # run 4: launch calls end at 1 and 1001, kernels start at 500 and 1500: 499 ns each.
    assert table(
        con, "launch_queue_delay", ["run_id", "launches", "mean_ns", "max_ns", "started_before_return"], where=lambda r: r["run_id"] == 4
    ) == [(4, 2, 499.0, 499, 0)]


def test_gpu_busy_counts_overlaps_once(tmp_path):
    import duckdb

    from xsp_trace.store.database import create_schema, insert_run

    con = duckdb.connect(str(tmp_path / "o.duckdb"))
    create_schema(con)
    insert_run(con, 1, source_kind="nsys")
    for span_id, (kind, start, end, stream) in enumerate([("kernel", 0, 10, 1), ("kernel", 5, 20, 2), ("memcpy", 30, 40, 3), ("kernel", 35, 38, 1)]):
        con.execute(
            "INSERT INTO spans (run_id, span_id, kind, name, start_ns, end_ns, device_id, stream_id) VALUES (1, ?, ?, 'x', ?, ?, 0, ?)",
            [span_id, kind, start, end, stream],
        )
    con.close()
    session = open_session(tmp_path / "o.duckdb")
    # union [0, 20) + [30, 40) = 30 busy of a 40 window.
    assert table(session, "gpu_busy_idle", ["window_ns", "busy_ns", "idle_ns", "kernel_ns", "memcpy_ns", "busy_intervals"]) == [
        (40, 30, 10, 28, 10, 2)
    ]


def test_compare_runs_per_layer_and_kernel(db):
    session = open_session(db, AnalysisOptions(compare=(2, 3)))
    rows = table(session, "compare_runs", ["item_kind", "item", "base_ms", "other_ms", "delta_ms"])
    # layers: ML vs MLG run (MLG layer 0 [60,61,62] -> 61; layer 1 50 per inference); kernels only in run 3.
    assert rows[:2] == [("layer", "0:conv", 41e-6, 61e-6, 20e-6), ("layer", "1:relu", 22e-6, 50e-6, 28e-6)]
    assert sorted(rows[2:]) == [
        ("kernel", "bias_kernel", None, 2e-6, None),
        ("kernel", "conv_kernel", None, 11e-6, None),
        ("kernel", "relu_kernel", None, 7e-6, None),
    ]


def test_run_selection_makes_a_single_mlg_run_serve_every_level(db):
    session = open_session(db, AnalysisOptions(runs=[3]))
    assert table(session, "level_sources", ["measured", "source_level", "corrected"]) == [
        ("model", "MLG", False),
        ("layer", "MLG", False),
        ("kernel", "MLG", True),
    ]
    # the naive numbers: model 205 and layer 0 61 from the MLG run.
    assert table(session, "model_info", ["latency_ms", "corrected"]) == [(205e-6, False)]
    assert table(session, "layer_latency", ["layer_index", "latency_ms"]) == [(0, 61e-6), (1, 50e-6)]


def test_peak_overrides_change_the_classification(db):
    # ideal intensity 1e12 / 1e12 = 1: relu (0.0625) stays memory-bound, the model (7.5) becomes compute-bound.
    session = open_session(db, AnalysisOptions(peak_flops=1e12, peak_dram_bytes_per_s=1e12))
    assert table(session, "model_roofline", ["ideal_intensity", "memory_bound"]) == [(1.0, False)]
