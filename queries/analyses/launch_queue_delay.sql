-- analyses/launch_queue_delay: how long launched kernels wait before running -- kernel start
-- minus the end of the CUDA launch call that queued it, per run and GPU (a long delay means the
-- GPU was busy with earlier work: the CPU runs ahead; a short one means the GPU starves).
--
-- From: launches (API call -> kernel) and spans. Negative values (the kernel started before the
-- launch call returned) are kept: they happen and are counted.
--
-- title: Launch queue delay (kernel start - launch end)
-- group: gpu
-- include:
-- columns: run_id INTEGER, device_id INTEGER, launches BIGINT, mean_ns DOUBLE, median_ns DOUBLE,
--     p90_ns DOUBLE, max_ns BIGINT, started_before_return BIGINT
WITH delays AS (
    SELECT k.run_id, k.device_id, k.start_ns - api.end_ns AS delay_ns
    FROM launches AS l
    JOIN spans AS k ON k.run_id = l.run_id AND k.span_id = l.gpu_span_id AND k.kind = 'kernel'
    JOIN spans AS api ON api.run_id = l.run_id AND api.span_id = l.api_span_id
)
SELECT
    -- Run and GPU.
    run_id,
    -- GPU (CUDA device ordinal).
    device_id,
    -- Kernel launches.
    count(*) AS launches,
    -- Queue delay statistics, ns: mean, median, 90th percentile, maximum.
    round(avg(delay_ns), 1) AS mean_ns,
    -- Median queue delay, ns.
    median(delay_ns) AS median_ns,
    -- 90th percentile of the queue delay, ns.
    quantile_cont(delay_ns, 0.9) AS p90_ns,
    -- Longest queue delay, ns.
    max(delay_ns) AS max_ns,
    -- Launches whose kernel started before the launch call returned.
    count(*) FILTER (WHERE delay_ns < 0) AS started_before_return
FROM delays
GROUP BY run_id, device_id
ORDER BY run_id, device_id;
