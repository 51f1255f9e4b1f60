-- analyses/cuda_gpu_kern_gb_sum: GPU time per kernel name and launch configuration (grid, block)
-- and run -- what `nsys stats --report cuda_gpu_kern_gb_sum` (nsys 2022.4: gpukernsum) prints.
--
-- From: spans of kind 'kernel' with kernels (grid_*, block_*); grid and block printed as nsys does
-- ('%4d %4d %4d'). Statistics as nsys computes them (xsp_trace/formats/nsys_stats.py): median of
-- an even count = mean of the two middle values, sample standard deviation, averages to 0.1 ns.
--
-- title: GPU kernel summary by grid and block (nsys stats cuda_gpu_kern_gb_sum)
-- group: summary
-- include: lib/nsys_stats
-- columns: run_id INTEGER, time_pct DOUBLE, total_ns HUGEINT, instances BIGINT, avg_ns DOUBLE, med_ns DOUBLE,
--     min_ns BIGINT, max_ns BIGINT, stddev_ns DOUBLE, grid VARCHAR, block VARCHAR, name VARCHAR
WITH launches AS (
    SELECT s.run_id, s.name, s.end_ns - s.start_ns AS duration_ns,
           printf('%4d %4d %4d', k.grid_x, k.grid_y, k.grid_z) AS grid,
           printf('%4d %4d %4d', k.block_x, k.block_y, k.block_z) AS block
    FROM spans AS s
    LEFT JOIN kernels AS k ON k.run_id = s.run_id AND k.span_id = s.span_id
    WHERE s.kind = 'kernel'
), summary AS MATERIALIZED (
    SELECT run_id, name, grid, block, sum(duration_ns) AS total_ns, count(*) AS instances,
           avg(duration_ns) AS avg_ns, median(duration_ns) AS med_ns, min(duration_ns) AS min_ns,
           max(duration_ns) AS max_ns, coalesce(stddev_samp(duration_ns), 0) AS stddev_ns
    FROM launches GROUP BY run_id, name, grid, block
)
SELECT
    -- Run of the kernels.
    run_id,
    -- Share of the run's summed kernel time, percent.
    xsp_nsys_pct(total_ns, sum(total_ns) OVER (PARTITION BY run_id)) AS time_pct,
    -- Summed GPU time, ns.
    total_ns,
    -- Number of executions.
    instances,
    -- Mean duration per execution, ns (rounded to 0.1 as nsys: xsp_nsys_round).
    xsp_nsys_round(avg_ns) AS avg_ns,
    -- Median duration, ns (an even count: mean of the two middle values).
    xsp_nsys_round(med_ns) AS med_ns,
    -- Shortest execution, ns.
    min_ns,
    -- Longest execution, ns.
    max_ns,
    -- Sample standard deviation of the durations, ns (0 for a single execution).
    xsp_nsys_round(stddev_ns) AS stddev_ns,
    -- Grid dimensions 'x y z', as nsys prints them (NULL where the trace has none).
    grid,
    -- Block (thread-block) dimensions 'x y z', as nsys prints them (NULL where the trace has none).
    block,
    -- Demangled kernel name.
    name
FROM summary
ORDER BY run_id, total_ns DESC, name, grid, block;
