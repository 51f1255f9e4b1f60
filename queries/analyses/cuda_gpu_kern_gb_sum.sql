-- analyses/cuda_gpu_kern_gb_sum: GPU time per kernel name and launch configuration (grid, block)
-- and run -- what `nsys stats --report cuda_gpu_kern_gb_sum` (nsys 2022.4: gpukernsum) prints.
--
-- From: xsp_nsys_summary('cuda_gpu_kern_gb_sum') (lib/nsys_stats) over spans of kind 'kernel' with kernels (grid_*, block_*); grid and block printed as nsys does
-- ('%4d %4d %4d'). Statistics as nsys computes them (xsp_trace/formats/nsys_stats.py): median of
-- an even count = mean of the two middle values, sample standard deviation, averages to 0.1 ns.
--
-- title: GPU kernel summary by grid and block (nsys stats cuda_gpu_kern_gb_sum)
-- group: summary
-- include: lib/nsys_stats
-- columns: run_id INTEGER, time_pct DOUBLE, total_ns HUGEINT, instances BIGINT, avg_ns DOUBLE, med_ns DOUBLE,
--     min_ns BIGINT, max_ns BIGINT, stddev_ns DOUBLE, grid VARCHAR, block VARCHAR, name VARCHAR
SELECT
    -- Run of the kernels.
    run_id,
    -- Share of the run's summed kernel time, percent.
    time_pct,
    -- Summed GPU time, ns.
    total_ns,
    -- Number of executions.
    count AS instances,
    -- Mean duration per execution, ns (rounded to 0.1 as nsys: xsp_nsys_round).
    avg_ns,
    -- Median duration, ns (an even count: mean of the two middle values).
    med_ns,
    -- Shortest execution, ns.
    min_ns,
    -- Longest execution, ns.
    max_ns,
    -- Sample standard deviation of the durations, ns (0 for a single execution).
    stddev_ns,
    -- Grid dimensions 'x y z', as nsys prints them (NULL where the trace has none).
    grid,
    -- Block (thread-block) dimensions 'x y z', as nsys prints them (NULL where the trace has none).
    block,
    -- Demangled kernel name.
    name
FROM xsp_nsys_summary('cuda_gpu_kern_gb_sum')
ORDER BY run_id, total_ns DESC, name, grid, block;
