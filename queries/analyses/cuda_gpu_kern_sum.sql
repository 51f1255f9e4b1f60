-- analyses/cuda_gpu_kern_sum: GPU time per kernel name and run with median and spread -- what
-- `nsys stats --report cuda_gpu_kern_sum` prints (nsys 2022.4: the CUDA_KERNEL rows of gpusum).
--
-- From: xsp_nsys_summary('cuda_gpu_kern_sum') (lib/nsys_stats) over spans of kind 'kernel' (demangled name). Statistics as nsys computes them
-- (xsp_trace/formats/nsys_stats.py): median of an even count = mean of the two middle values,
-- sample standard deviation, averages rounded to 0.1 ns as nsys rounds (xsp_nsys_round: .x5 up).
--
-- title: GPU kernel summary (nsys stats cuda_gpu_kern_sum)
-- group: summary
-- include: lib/nsys_stats
-- columns: run_id INTEGER, time_pct DOUBLE, total_ns HUGEINT, instances BIGINT, avg_ns DOUBLE, med_ns DOUBLE,
--     min_ns BIGINT, max_ns BIGINT, stddev_ns DOUBLE, name VARCHAR
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
    -- Demangled kernel name.
    name
FROM xsp_nsys_summary('cuda_gpu_kern_sum')
ORDER BY run_id, total_ns DESC, name;
