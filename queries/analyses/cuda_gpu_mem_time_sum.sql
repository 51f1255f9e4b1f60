-- analyses/cuda_gpu_mem_time_sum: GPU time of memory copies and sets per operation and run --
-- what `nsys stats --report cuda_gpu_mem_time_sum` (nsys 2022.4: gpumemtimesum) prints, to the
-- nanosecond.
--
-- From: memops alone (one row per memcpy / memset span, with the span's kind, GPU duration and
-- copy_kind); operation names as nsys 2022.4 writes them (the prelude's xsp_memop_operation), one
-- per (kind, copy_kind), so the statistics are taken per (kind, copy_kind) and named after.
-- No join to spans: memops carries copies of the span's kind and duration, and an analysis
-- session narrowed to a window or iterations narrows memops with its spans. Statistics as nsys
-- computes them: median of an even count = mean of the two middle values, sample standard
-- deviation, averages rounded to 0.1 ns as nsys rounds (xsp_nsys_round: .x5 up).
--
-- title: GPU memory operations by time (nsys stats cuda_gpu_mem_time_sum)
-- group: summary
-- include: lib/nsys_stats
-- columns: run_id INTEGER, time_pct DOUBLE, total_ns HUGEINT, count BIGINT, avg_ns DOUBLE, med_ns DOUBLE,
--     min_ns BIGINT, max_ns BIGINT, stddev_ns DOUBLE, operation VARCHAR
WITH per_kind AS (
    SELECT run_id, kind, copy_kind, sum(duration_ns) AS total_ns, count(*) AS count,
           avg(duration_ns) AS avg_ns, median(duration_ns) AS med_ns,
           min(duration_ns) AS min_ns, max(duration_ns) AS max_ns,
           coalesce(stddev_samp(duration_ns), 0) AS stddev_ns
    FROM memops
    GROUP BY run_id, kind, copy_kind
), summary AS MATERIALIZED (
    SELECT *, xsp_memop_operation(kind, copy_kind) AS operation FROM per_kind
)
SELECT
    -- Run of the operations.
    run_id,
    -- Share of the run's summed memory-operation GPU time, percent.
    xsp_nsys_pct(total_ns, sum(total_ns) OVER (PARTITION BY run_id)) AS time_pct,
    -- Summed GPU duration, ns.
    total_ns,
    -- Number of operations.
    count,
    -- Mean duration per operation, ns (rounded to 0.1 as nsys: xsp_nsys_round).
    xsp_nsys_round(avg_ns) AS avg_ns,
    -- Median duration, ns (an even count: mean of the two middle values).
    xsp_nsys_round(med_ns) AS med_ns,
    -- Shortest operation, ns.
    min_ns,
    -- Longest operation, ns.
    max_ns,
    -- Sample standard deviation of the durations, ns (0 for a single operation).
    xsp_nsys_round(stddev_ns) AS stddev_ns,
    -- "[CUDA memcpy HtoD]", "[CUDA memset]", ...
    operation
FROM summary
ORDER BY run_id, total_ns DESC, operation;
