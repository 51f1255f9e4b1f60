-- analyses/cuda_api_sum: time spent in each CUDA (or HIP) API function per run -- what
-- `nsys stats --report cuda_api_sum` (nsys 2022.4: cudaapisum) prints, to the nanosecond.
--
-- From: spans of kind 'api' (runtime and driver calls; nsys's CUPTI_ACTIVITY_KIND_RUNTIME rows,
-- Kineto's cuda_runtime / cuda_driver events). Statistics from lib/nsys_stats's xsp_nsys_summary, as nsys computes them
-- (xsp_trace/formats/nsys_stats.py): median of an even count = mean of the two middle values,
-- sample standard deviation, averages rounded to 0.1 ns as nsys rounds (xsp_nsys_round: .x5 up).
--
-- title: CUDA API summary (nsys stats cuda_api_sum)
-- group: summary
-- include: lib/nsys_stats
-- columns: run_id INTEGER, time_pct DOUBLE, total_ns HUGEINT, calls BIGINT, avg_ns DOUBLE, med_ns DOUBLE,
--     min_ns BIGINT, max_ns BIGINT, stddev_ns DOUBLE, name VARCHAR
SELECT
    -- Run of the calls.
    run_id,
    -- Share of the run's summed API time, percent (of the functions listed, not of wall time).
    time_pct,
    -- Summed duration of every call of the function, ns.
    total_ns,
    -- Number of calls.
    count AS calls,
    -- Mean duration per call, ns (rounded to 0.1 as nsys: xsp_nsys_round).
    avg_ns,
    -- Median duration, ns (an even count: mean of the two middle values).
    med_ns,
    -- Shortest call, ns.
    min_ns,
    -- Longest call, ns.
    max_ns,
    -- Sample standard deviation of the durations, ns (0 for a single call).
    stddev_ns,
    -- API function name (versioned entry-point suffix such as _v7000 stripped).
    name
FROM xsp_nsys_summary('cuda_api_sum')
ORDER BY run_id, total_ns DESC, name;
