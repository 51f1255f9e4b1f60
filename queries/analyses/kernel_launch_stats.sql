-- analyses/kernel_launch_stats: CPU launch time against GPU kernel time per launching thread, API
-- and kernel -- what `nsys stats --report cuda_kern_exec_sum` (nsys 2022.4: kernexecsum) prints
-- (API, queue and kernel durations), plus how many kernels ran shorter than their own launch call
-- (launch-bound: the CPU cannot keep the GPU fed with them), HTA's get_cuda_kernel_launch_stats idea.
--
-- From: launches (API call -> kernel), spans. Queue = kernel start - API end, counted only when
-- >= 0 (as nsys). Statistics as nsys computes them: median of an even count = mean of the two
-- middle values, sample standard deviation, rounded to 0.1 ns as nsys rounds (xsp_nsys_round: .x5 up).
--
-- title: Kernel launch: CPU launch time vs GPU kernel time
-- group: gpu
-- include: lib/nsys_stats
-- columns: run_id INTEGER, pid BIGINT, tid BIGINT, device_id INTEGER, api_name VARCHAR, kernel_name VARCHAR,
--     launches BIGINT, queued BIGINT, api_avg_ns DOUBLE, api_med_ns DOUBLE, api_min_ns BIGINT,
--     api_max_ns BIGINT, api_stddev_ns DOUBLE, queue_avg_ns DOUBLE, queue_med_ns DOUBLE, queue_min_ns BIGINT,
--     queue_max_ns BIGINT, queue_stddev_ns DOUBLE, kernel_avg_ns DOUBLE, kernel_med_ns DOUBLE,
--     kernel_min_ns BIGINT, kernel_max_ns BIGINT, kernel_stddev_ns DOUBLE, shorter_than_launch BIGINT
WITH pairs AS (
    SELECT api.run_id, api.pid, api.tid, k.device_id, api.name AS api_name, k.name AS kernel_name,
           api.end_ns - api.start_ns AS api_ns,
           CASE WHEN k.start_ns - api.end_ns >= 0 THEN k.start_ns - api.end_ns END AS queue_ns,
           k.end_ns - k.start_ns AS kernel_ns
    FROM launches AS l
    JOIN spans AS api ON api.run_id = l.run_id AND api.span_id = l.api_span_id
    JOIN spans AS k ON k.run_id = l.run_id AND k.span_id = l.gpu_span_id
    WHERE k.kind = 'kernel'
)
SELECT
    -- Run.
    run_id,
    -- Launching process.
    pid,
    -- Launching thread.
    tid,
    -- GPU the kernels ran on.
    device_id,
    -- Launch API function (cudaLaunchKernel, cuLaunchKernel ...).
    api_name,
    -- Kernel name.
    kernel_name,
    -- Number of launches.
    count(*) AS launches,
    -- Launches with a queue time (kernel started at or after the call returned).
    count(queue_ns) AS queued,
    -- Mean launch call duration on the CPU, ns.
    xsp_nsys_round(avg(api_ns)) AS api_avg_ns,
    -- Median launch call duration, ns.
    xsp_nsys_round(median(api_ns)) AS api_med_ns,
    -- Shortest launch call, ns.
    min(api_ns) AS api_min_ns,
    -- Longest launch call, ns.
    max(api_ns) AS api_max_ns,
    -- Sample standard deviation of the launch call durations, ns.
    xsp_nsys_round(coalesce(stddev_samp(api_ns), 0)) AS api_stddev_ns,
    -- Mean queue time (kernel start - call end, queued launches only), ns.
    xsp_nsys_round(avg(queue_ns)) AS queue_avg_ns,
    -- Median queue time, ns.
    xsp_nsys_round(median(queue_ns)) AS queue_med_ns,
    -- Shortest queue time, ns.
    min(queue_ns) AS queue_min_ns,
    -- Longest queue time, ns.
    max(queue_ns) AS queue_max_ns,
    -- Sample standard deviation of the queue times, ns.
    xsp_nsys_round(coalesce(stddev_samp(queue_ns), 0)) AS queue_stddev_ns,
    -- Mean kernel duration on the GPU, ns.
    xsp_nsys_round(avg(kernel_ns)) AS kernel_avg_ns,
    -- Median kernel duration, ns.
    xsp_nsys_round(median(kernel_ns)) AS kernel_med_ns,
    -- Shortest kernel, ns.
    min(kernel_ns) AS kernel_min_ns,
    -- Longest kernel, ns.
    max(kernel_ns) AS kernel_max_ns,
    -- Sample standard deviation of the kernel durations, ns.
    xsp_nsys_round(coalesce(stddev_samp(kernel_ns), 0)) AS kernel_stddev_ns,
    -- Kernels that ran shorter than the call that launched them.
    count(*) FILTER (WHERE kernel_ns < api_ns) AS shorter_than_launch
FROM pairs
GROUP BY run_id, pid, tid, device_id, api_name, kernel_name
ORDER BY run_id, api_avg_ns DESC, kernel_name;
