-- analyses/cuda_gpu_mem_time_sum: GPU time of memory copies and sets per operation and run --
-- what `nsys stats --report cuda_gpu_mem_time_sum` (nsys 2022.4: gpumemtimesum) prints, to the
-- nanosecond.
--
-- From: xsp_nsys_summary('cuda_gpu_mem_time_sum') (lib/nsys_stats) over memops alone (one row per memcpy / memset span, with the span's kind, GPU duration and
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
SELECT
    -- Run of the operations.
    run_id,
    -- Share of the run's summed memory-operation GPU time, percent.
    time_pct,
    -- Summed GPU duration, ns.
    total_ns,
    -- Number of operations.
    count,
    -- Mean duration per operation, ns (rounded to 0.1 as nsys: xsp_nsys_round).
    avg_ns,
    -- Median duration, ns (an even count: mean of the two middle values).
    med_ns,
    -- Shortest operation, ns.
    min_ns,
    -- Longest operation, ns.
    max_ns,
    -- Sample standard deviation of the durations, ns (0 for a single operation).
    stddev_ns,
    -- "[CUDA memcpy HtoD]", "[CUDA memset]", ...
    name AS operation
FROM xsp_nsys_summary('cuda_gpu_mem_time_sum')
ORDER BY run_id, total_ns DESC, operation;
