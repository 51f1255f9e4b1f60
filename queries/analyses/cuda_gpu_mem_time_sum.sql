-- analyses/cuda_gpu_mem_time_sum: GPU time of memory copies and sets per operation and run --
-- what `nsys stats --report cuda_gpu_mem_time_sum` (nsys 2022.4: gpumemtimesum) prints, to the
-- nanosecond.
--
-- From: spans of kind memcpy / memset with memops.copy_kind; operation names as nsys 2022.4
-- writes them (_xsp_memop_operations, from xsp_trace/formats/nsys_stats.py). Statistics as nsys
-- computes them: median of an even count = mean of the two middle values, sample standard
-- deviation, averages rounded to 0.1 ns.
WITH ops AS (
    SELECT s.run_id, coalesce(o.operation, '[' || s.kind || ' ' || coalesce(m.copy_kind, '?') || ']') AS operation,
           s.end_ns - s.start_ns AS duration_ns
    FROM spans AS s
    LEFT JOIN memops AS m ON m.run_id = s.run_id AND m.span_id = s.span_id
    LEFT JOIN _xsp_memop_operations AS o ON o.kind = s.kind AND o.copy_kind IS NOT DISTINCT FROM m.copy_kind
    WHERE s.kind IN ('memcpy', 'memset')
), summary AS (
    SELECT run_id, operation, sum(duration_ns) AS total_ns, count(*) AS count, avg(duration_ns) AS avg_ns,
           median(duration_ns) AS med_ns, min(duration_ns) AS min_ns, max(duration_ns) AS max_ns,
           coalesce(stddev_samp(duration_ns), 0) AS stddev_ns
    FROM ops GROUP BY run_id, operation
)
SELECT
    -- Run of the operations.
    run_id,
    -- Share of the run's summed memory-operation GPU time, percent.
    round(100.0 * total_ns / sum(total_ns) OVER (PARTITION BY run_id), 1) AS time_pct,
    -- Summed GPU duration, ns.
    total_ns,
    -- Number of operations.
    count,
    -- Mean duration per operation, ns (rounded to 0.1 as nsys).
    round(avg_ns, 1) AS avg_ns,
    -- Median duration, ns (an even count: mean of the two middle values).
    round(med_ns, 1) AS med_ns,
    -- Shortest operation, ns.
    min_ns,
    -- Longest operation, ns.
    max_ns,
    -- Sample standard deviation of the durations, ns (0 for a single operation).
    round(stddev_ns, 1) AS stddev_ns,
    -- "[CUDA memcpy HtoD]", "[CUDA memset]", ...
    operation
FROM summary
ORDER BY run_id, total_ns DESC, operation;
